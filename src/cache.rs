//! The isolate's cache of prepared tenants, with the clock handed in.
//!
//! Preparing a tenant (parse, validate, build the search index) is the expensive part of a
//! request, so each isolate keeps the result for [`DEFAULT_TTL_MS`]. When that runs out the raw
//! documents are read again; if their fingerprint is unchanged the prepared copy is simply
//! renewed. A document that fails validation, or a KV read that fails, never replaces a good
//! copy: the last good one keeps serving. Entries are keyed by tenant, so a failure for one
//! tenant can only ever fall back to that same tenant's copy. Operator writes do not drop
//! entries: every isolate sees a change the same way, within the documented bound.

use std::collections::HashMap;
use std::rc::Rc;

/// How long a prepared tenant is served before KV is consulted again.
pub const DEFAULT_TTL_MS: i64 = 60_000;
/// The `cacheTtl` given to KV reads: KV's own edge cache may add up to this much staleness.
pub const KV_CACHE_TTL_SECONDS: u64 = 60;
/// Worst case from a KV write (as seen by KV's reader in this location) to a changed answer:
/// one isolate TTL plus one KV edge-cache TTL.
pub const CHANGE_BOUND_MS: i64 = DEFAULT_TTL_MS + KV_CACHE_TTL_SECONDS as i64 * 1000;

struct Entry<T> {
    value: Rc<T>,
    fingerprint: String,
    checked_at: i64,
}

/// What the cache says about a tenant at a given time.
pub enum Lookup<T> {
    /// Within its TTL: serve it without touching KV.
    Fresh(Rc<T>),
    /// Past its TTL (or never loaded): read KV, then call [`TenantCache::offer`].
    Stale,
}

/// The outcome of offering freshly read documents.
pub enum Offer<T, E> {
    /// Same documents as the cached copy: the copy was renewed.
    Unchanged(Rc<T>),
    /// New documents, prepared and now cached.
    Replaced(Rc<T>),
    /// The new documents failed; the last good copy keeps serving.
    KeptLastGood(Rc<T>, E),
    /// They failed and there is no earlier copy to serve.
    Failed(E),
}

pub struct TenantCache<T> {
    ttl_ms: i64,
    entries: HashMap<String, Entry<T>>,
}

impl<T> TenantCache<T> {
    pub fn new(ttl_ms: i64) -> TenantCache<T> {
        TenantCache {
            ttl_ms,
            entries: HashMap::new(),
        }
    }

    pub fn lookup(&self, tenant: &str, now_ms: i64) -> Lookup<T> {
        match self.entries.get(tenant) {
            Some(entry) if now_ms - entry.checked_at < self.ttl_ms => {
                Lookup::Fresh(entry.value.clone())
            }
            _ => Lookup::Stale,
        }
    }

    /// Offers documents read from KV with their fingerprint; `prepare` runs only when they
    /// differ from the cached copy's.
    pub fn offer<E>(
        &mut self,
        tenant: &str,
        fingerprint: &str,
        now_ms: i64,
        prepare: impl FnOnce() -> Result<T, E>,
    ) -> Offer<T, E> {
        if let Some(entry) = self.entries.get_mut(tenant) {
            if entry.fingerprint == fingerprint {
                entry.checked_at = now_ms;
                return Offer::Unchanged(entry.value.clone());
            }
        }
        match prepare() {
            Ok(value) => {
                let value = Rc::new(value);
                let entry = Entry {
                    value: value.clone(),
                    fingerprint: fingerprint.to_owned(),
                    checked_at: now_ms,
                };
                self.entries.insert(tenant.to_owned(), entry);
                Offer::Replaced(value)
            }
            Err(error) => self.keep_last_good(tenant, now_ms, error),
        }
    }

    /// KV could not be read: serve the last good copy if there is one.
    pub fn read_failed<E>(&mut self, tenant: &str, now_ms: i64, error: E) -> Offer<T, E> {
        self.keep_last_good(tenant, now_ms, error)
    }

    fn keep_last_good<E>(&mut self, tenant: &str, now_ms: i64, error: E) -> Offer<T, E> {
        match self.entries.get_mut(tenant) {
            Some(entry) => {
                // Renew so a bad document is not re-read and re-parsed on every request.
                entry.checked_at = now_ms;
                Offer::KeptLastGood(entry.value.clone(), error)
            }
            None => Offer::Failed(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value<T: Clone, E>(offer: Offer<T, E>) -> T {
        match offer {
            Offer::Unchanged(v) | Offer::Replaced(v) | Offer::KeptLastGood(v, _) => (*v).clone(),
            Offer::Failed(_) => panic!("no value"),
        }
    }

    #[test]
    fn a_change_is_seen_after_the_ttl_and_not_before() {
        let mut cache: TenantCache<&str> = TenantCache::new(DEFAULT_TTL_MS);
        assert!(matches!(cache.lookup("acme", 0), Lookup::Stale));
        assert_eq!(
            value(cache.offer::<()>("acme", "v1", 0, || Ok("policy v1"))),
            "policy v1"
        );
        // The operator writes v2 at t=1s; the isolate keeps serving v1 until its TTL ends.
        for t in [1_000, 30_000, DEFAULT_TTL_MS - 1] {
            match cache.lookup("acme", t) {
                Lookup::Fresh(v) => assert_eq!(*v, "policy v1", "t={t}"),
                Lookup::Stale => panic!("stale too early at t={t}"),
            }
        }
        assert!(matches!(
            cache.lookup("acme", DEFAULT_TTL_MS),
            Lookup::Stale
        ));
        assert_eq!(
            value(cache.offer::<()>("acme", "v2", DEFAULT_TTL_MS, || Ok("policy v2"))),
            "policy v2"
        );
    }

    #[test]
    fn unchanged_documents_are_not_prepared_again() {
        let mut cache: TenantCache<u32> = TenantCache::new(10);
        let _ = cache.offer::<()>("acme", "v1", 0, || Ok(1));
        let offer = cache.offer::<()>("acme", "v1", 20, || panic!("prepared twice"));
        assert!(matches!(offer, Offer::Unchanged(_)));
        assert!(matches!(cache.lookup("acme", 25), Lookup::Fresh(_)));
    }

    #[test]
    fn a_bad_document_keeps_the_last_good_copy_serving() {
        let mut cache: TenantCache<&str> = TenantCache::new(10);
        let _ = cache.offer::<String>("acme", "good", 0, || Ok("good copy"));
        match cache.offer("acme", "corrupt", 20, || {
            Err("catalog: invalid JSON".to_string())
        }) {
            Offer::KeptLastGood(v, e) => {
                assert_eq!((*v, e.as_str()), ("good copy", "catalog: invalid JSON"))
            }
            _ => panic!("expected the last good copy"),
        }
        match cache.read_failed("acme", 40, "KV unavailable") {
            Offer::KeptLastGood(v, _) => assert_eq!(*v, "good copy"),
            _ => panic!("expected the last good copy"),
        }
    }

    #[test]
    fn another_tenants_copy_is_never_a_fallback() {
        let mut cache: TenantCache<&str> = TenantCache::new(10);
        let _ = cache.offer::<&str>("acme", "good", 0, || Ok("acme's tools"));
        assert!(matches!(
            cache.offer("globex", "corrupt", 5, || Err("bad")),
            Offer::Failed("bad")
        ));
        assert!(matches!(
            cache.read_failed("globex", 6, "down"),
            Offer::Failed("down")
        ));
        assert!(matches!(cache.lookup("globex", 7), Lookup::Stale));
    }
}
