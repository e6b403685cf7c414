//! Reading the deployment's and tenants' documents from KV through the isolate cache.
//!
//! Past its TTL a cached copy is checked against a small version key first (the fingerprint the
//! admin write published): an unchanged tenant costs one read of a few bytes. Without a version
//! key (documents written before there were any) the documents are read and fingerprinted.
//! KV is read with `cacheTtl`, and only changed documents are parsed and prepared again. A read that fails or a document that fails validation leaves the
//! last good prepared copy serving (and is logged); with no such copy the caller gets a clear
//! message instead of another tenant's data or a half-applied document.

use std::cell::RefCell;
use std::rc::Rc;

use worker::{kv::KvStore, Env};

use crate::admin::{
    directory_version, tenant_snapshot_key, tenant_version, tenant_version_key, Document,
    DIRECTORY_KEY, DIRECTORY_SNAPSHOT_KEY, DIRECTORY_VERSION_KEY,
};
use crate::cache::{
    directory_prepared_bytes, documents_fingerprint, snapshot_prepared_bytes, tenant_budget_bytes,
    Lookup, Offer, TenantCache, DEFAULT_TTL_MS, KV_CACHE_TTL_SECONDS,
};
use crate::tenant::{documents_peak_bytes, Deployment, PreparedTenant};

pub const KV_BINDING: &str = crate::binding::KV;

thread_local! {
    static DEPLOYMENT: RefCell<TenantCache<Deployment>> = RefCell::new(TenantCache::new(DEFAULT_TTL_MS));
    static TENANTS: RefCell<TenantCache<PreparedTenant>> = RefCell::new(TenantCache::new(DEFAULT_TTL_MS));
}

pub fn kv(env: &Env) -> worker::Result<KvStore> {
    env.kv(KV_BINDING)
}

/// Reads a key as text, through KV's edge cache.
pub async fn read(kv: &KvStore, key: &str) -> Result<Option<String>, String> {
    kv.get(key)
        .cache_ttl(KV_CACHE_TTL_SECONDS)
        .text()
        .await
        .map_err(|e| format!("KV read of {key} failed: {e}"))
}

/// Reads a key as bytes, through KV's edge cache.
async fn read_bytes(kv: &KvStore, key: &str) -> Result<Option<Vec<u8>>, String> {
    kv.get(key)
        .cache_ttl(KV_CACHE_TTL_SECONDS)
        .bytes()
        .await
        .map_err(|e| format!("KV read of {key} failed: {e}"))
}

fn log_problem(tenant: &str, what: &str, detail: &str) {
    let line = serde_json::json!({"event": "document_problem", "tenant": tenant, "what": what, "detail": detail});
    worker::console_warn!("{line}");
}

async fn deployment(kv: &KvStore, now: i64) -> Result<Rc<Deployment>, String> {
    if let Lookup::Fresh(d) = DEPLOYMENT.with(|c| c.borrow_mut().lookup(DIRECTORY_KEY, now)) {
        return Ok(d);
    }
    if let Ok(Some(version)) = read(kv, DIRECTORY_VERSION_KEY).await {
        let renewed = DEPLOYMENT.with(|c| {
            c.borrow_mut()
                .renew_if_unchanged(DIRECTORY_KEY, &version, now)
        });
        if let Some(d) = renewed {
            return Ok(d);
        }
    }
    let (text, snapshot) = futures_util::join!(
        read(kv, DIRECTORY_KEY),
        read_bytes(kv, DIRECTORY_SNAPSHOT_KEY)
    );
    let offer = match text {
        Ok(text) => {
            let print = directory_version(text.as_deref());
            DEPLOYMENT.with(|c| {
                let weight = directory_prepared_bytes(text.as_deref().map_or(0, str::len));
                c.borrow_mut()
                    .offer(DIRECTORY_KEY, &print, now, weight, || {
                        let snapshot = snapshot.as_ref().ok().and_then(Option::as_deref);
                        let (deployment, problem) =
                            Deployment::prepare_with(text.as_deref(), snapshot)
                                .map_err(|e| e.to_string())?;
                        if let Some(problem) = problem {
                            log_problem("*", "directory snapshot", &problem);
                        }
                        Ok(deployment)
                    })
            })
        }
        Err(e) => DEPLOYMENT.with(|c| c.borrow_mut().read_failed(DIRECTORY_KEY, now, e)),
    };
    settle("*", "directory", offer)
}

fn settle<T>(tenant: &str, what: &str, offer: Offer<T, String>) -> Result<Rc<T>, String> {
    match offer {
        Offer::Unchanged(v) | Offer::Replaced(v) => Ok(v),
        Offer::KeptLastGood(v, problem) => {
            log_problem(
                tenant,
                what,
                &format!("{problem} (serving the last good copy)"),
            );
            Ok(v)
        }
        Offer::Failed(problem) => {
            log_problem(tenant, what, &problem);
            Err(problem)
        }
    }
}

/// The tenant's prepared copy, or why there is none to serve.
pub async fn tenant(
    env: &Env,
    tenant: &str,
    now: i64,
    threshold: usize,
) -> Result<Rc<PreparedTenant>, String> {
    if let Lookup::Fresh(t) = TENANTS.with(|c| c.borrow_mut().lookup(tenant, now)) {
        return Ok(t);
    }
    let kv = kv(env).map_err(|e| e.to_string())?;
    let deployment = match deployment(&kv, now).await {
        Ok(d) => d,
        Err(problem) => {
            let offer = TENANTS.with(|c| c.borrow_mut().read_failed(tenant, now, problem));
            return settle(tenant, "directory", offer);
        }
    };
    // The directory's prepared copy is held beside the tenants': their budget is what is left.
    let budget = tenant_budget_bytes(deployment.directory.text_bytes());
    TENANTS.with(|c| c.borrow_mut().set_budget(budget));
    // The copy's fingerprint joins the directory's and the documents' own, so a version key
    // names it without the documents being read.
    let print_of = |documents: &str| {
        documents_fingerprint(&[
            Some(deployment.fingerprint.as_bytes()),
            Some(documents.as_bytes()),
        ])
    };
    let snapshot_key = tenant_snapshot_key(tenant);
    // What the snapshot-only path read, handed on when it could not be used.
    let mut snapshot_read = None;
    if let Ok(Some(version)) = read(&kv, &tenant_version_key(tenant)).await {
        let print = print_of(&version);
        let renewed = TENANTS.with(|c| c.borrow_mut().renew_if_unchanged(tenant, &print, now));
        if let Some(t) = renewed {
            return Ok(t);
        }
        // A new version: the snapshot compiled for it is all a copy needs.
        let snapshot = read_bytes(&kv, &snapshot_key).await;
        if let Ok(Some(bytes)) = &snapshot {
            match PreparedTenant::from_snapshot(
                tenant,
                deployment.clone(),
                bytes,
                &version,
                threshold,
            ) {
                Ok(prepared) => {
                    let weight =
                        snapshot_prepared_bytes(bytes.len(), prepared.views_budget_bytes());
                    let offer = TENANTS.with(|c| {
                        c.borrow_mut()
                            .offer(tenant, &print, now, weight, || Ok::<_, String>(prepared))
                    });
                    return settle(tenant, "snapshot", offer);
                }
                // Usually KV's keys propagating apart (a newer or older snapshot than the
                // version key): the documents decide.
                Err(problem) => log_problem(tenant, "snapshot", &problem.to_string()),
            }
        }
        snapshot_read = Some(snapshot);
    }
    let (catalog_key, policy_key) = (
        Document::Catalog.kv_key(tenant),
        Document::Policy.kv_key(tenant),
    );
    let read_snapshot = async {
        match snapshot_read {
            Some(read) => read,
            None => read_bytes(&kv, &snapshot_key).await,
        }
    };
    let (catalog, policy, snapshot) = futures_util::join!(
        read(&kv, &catalog_key),
        read(&kv, &policy_key),
        read_snapshot
    );
    let offer = match (catalog, policy) {
        (Ok(catalog), Ok(policy)) => {
            let version = tenant_version(catalog.as_deref(), policy.as_deref());
            let print = print_of(&version);
            let document_bytes =
                catalog.as_deref().map_or(0, str::len) + policy.as_deref().map_or(0, str::len);
            // Weighed as the admin write estimated it, from the tools it holds.
            let weigh = |t: &PreparedTenant| documents_peak_bytes(t.tool_count(), document_bytes);
            TENANTS.with(|c| {
                c.borrow_mut()
                    .offer_weighed(tenant, &print, now, weigh, || {
                        let prepared = PreparedTenant::prepare(
                            tenant,
                            deployment.clone(),
                            catalog.as_deref(),
                            policy.as_deref(),
                            threshold,
                        )
                        .map_err(|e| e.to_string())?;
                        // Without a usable snapshot the first search builds the index here.
                        match &snapshot {
                            Ok(Some(bytes)) => {
                                if let Err(problem) = prepared.offer_snapshot(bytes, &version) {
                                    log_problem(tenant, "snapshot", &problem.to_string());
                                }
                            }
                            Ok(None) if catalog.is_some() => {
                                log_problem(tenant, "snapshot", "none stored")
                            }
                            Ok(None) => {}
                            Err(e) => log_problem(tenant, "snapshot", e),
                        }
                        Ok(prepared)
                    })
            })
        }
        (Err(e), _) | (_, Err(e)) => TENANTS.with(|c| c.borrow_mut().read_failed(tenant, now, e)),
    };
    settle(tenant, "documents", offer)
}
