//! The isolate's cache of prepared tenants, with the clock handed in.
//!
//! Preparing a tenant (parse, validate, build the search index) is the expensive part of a
//! request, so each isolate keeps the result for [`DEFAULT_TTL_MS`]. When that runs out the raw
//! documents are read again; if their fingerprint is unchanged the prepared copy is simply
//! renewed. A document that fails validation, or a KV read that fails, never replaces a good
//! copy: the last good one keeps serving. Entries are keyed by tenant, so a failure for one
//! tenant can only ever fall back to that same tenant's copy. Operator writes do not drop
//! entries: every isolate sees a change the same way, within the documented bound.
//!
//! An isolate has 128 MB for every tenant it serves, so the cache is bounded by an estimate of
//! the prepared copies' bytes: past [`ISOLATE_BUDGET_BYTES`] the least recently used tenants are
//! dropped (and prepared again on their next request), and a catalog whose preparation alone
//! would not fit ([`MAX_PREPARED_BYTES`], [`write_peak_bytes`]) is refused when it is written.

use std::collections::HashMap;
use std::rc::Rc;

/// How long a prepared tenant is served before KV is consulted again.
pub const DEFAULT_TTL_MS: i64 = 60_000;
/// The `cacheTtl` given to KV reads: KV's own edge cache may add up to this much staleness.
pub const KV_CACHE_TTL_SECONDS: u64 = 60;
/// Worst case from a KV write (as seen by KV's reader in this location) to a changed answer:
/// one isolate TTL plus one KV edge-cache TTL.
pub const CHANGE_BOUND_MS: i64 = DEFAULT_TTL_MS + KV_CACHE_TTL_SECONDS as i64 * 1000;

/// What the deployment's directory takes in an isolate once prepared (its text parsed, its
/// index read back from its snapshot), per byte of its text, with the text itself held while it
/// is prepared. Measured (`examples/snapshot_timing`, the demo directory's 2,808 tools in 1.8 MB):
/// 3.4 MiB held, 1.9 bytes per byte; plus the text, rounded up.
pub const DIRECTORY_BYTES_PER_TEXT_BYTE: usize = 3;

/// The admin write's memory model, per tool and per byte of the documents, of the heavier of
/// the two ways a tenant is prepared from its documents: the admin write parsing and compiling
/// its snapshot, and an isolate without a usable snapshot preparing a copy and building the
/// index at the first search. Measured (`examples/snapshot_timing`, 10,000 tools): compiling
/// took 38.3 MB at peak for 7.2 MB of documents and 20.3 MB for 2.8 MB (the same tools with
/// short schemas), ~0.9 KB per tool and 4.1 bytes per byte; a copy from the documents 29.3 and
/// 20.0 MB, ~1.4 KB per tool and 2.1 per byte. Rounded up, plus the documents themselves.
pub const WRITE_PEAK_BYTES_PER_TOOL: usize = 1536;
/// See [`WRITE_PEAK_BYTES_PER_TOOL`].
pub const WRITE_PEAK_BYTES_PER_DOCUMENT_BYTE: usize = 6;
/// What the prepared directory and tenants may hold in one isolate (of its 128 MB).
pub const ISOLATE_BUDGET_BYTES: usize = 120 * 1024 * 1024;
/// The largest prepared tenant accepted beside an empty directory: one that fits the budget
/// alone ([`tenant_budget_bytes`] takes the directory's share off it).
pub const MAX_PREPARED_BYTES: usize = ISOLATE_BUDGET_BYTES;

/// What prepared tenants may hold beside a directory of `directory_text_bytes` (its prepared
/// copy is held in every isolate, so it comes off the budget): the cache's budget and the
/// largest tenant the admin write accepts.
pub fn tenant_budget_bytes(directory_text_bytes: usize) -> usize {
    ISOLATE_BUDGET_BYTES.saturating_sub(directory_prepared_bytes(directory_text_bytes))
}

/// Bytes a copy prepared from a compiled snapshot takes per snapshot byte, its member views
/// aside (bounded apart, `tenant::VIEW_CACHE_BYTES`). Measured (bench/load, 10,000 tools): 11.3
/// MiB for a 7.1 MB snapshot, rounded up.
pub const SNAPSHOT_COPY_BYTES_PER_BYTE: usize = 2;

/// The estimated size of a copy prepared from a `snapshot_bytes` snapshot whose member views may
/// take `views_bytes`.
pub fn snapshot_prepared_bytes(snapshot_bytes: usize, views_bytes: usize) -> usize {
    snapshot_bytes
        .saturating_mul(SNAPSHOT_COPY_BYTES_PER_BYTE)
        .saturating_add(views_bytes)
}

/// The estimated peak memory of preparing a `tools`-tool tenant whose documents take
/// `document_bytes`, its member views aside (what the admin write refuses past
/// [`MAX_PREPARED_BYTES`] with them).
pub fn write_peak_bytes(tools: usize, document_bytes: usize) -> usize {
    tools
        .saturating_mul(WRITE_PEAK_BYTES_PER_TOOL)
        .saturating_add(document_bytes.saturating_mul(WRITE_PEAK_BYTES_PER_DOCUMENT_BYTE))
}

/// The estimated memory of the directory prepared from `text_bytes` of text.
pub fn directory_prepared_bytes(text_bytes: usize) -> usize {
    text_bytes.saturating_mul(DIRECTORY_BYTES_PER_TEXT_BYTE)
}

/// The fingerprint of a set of documents as stored (`None`: nothing stored). The admin write
/// publishes it as the documents' version key and the isolate computes it over what it read,
/// so both sides must use this one function.
pub fn documents_fingerprint(parts: &[Option<&[u8]>]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        match part {
            Some(bytes) => {
                hasher.update((bytes.len() as u64).to_le_bytes());
                hasher.update(bytes);
            }
            None => hasher.update(u64::MAX.to_le_bytes()),
        }
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

struct Entry<T> {
    value: Rc<T>,
    fingerprint: String,
    checked_at: i64,
    /// Estimated bytes of the prepared copy.
    weight: usize,
    /// The cache's use counter when this entry was last served.
    last_used: u64,
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
    budget_bytes: usize,
    entries: HashMap<String, Entry<T>>,
    /// Σ weight of the entries.
    held_bytes: usize,
    uses: u64,
}

impl<T> TenantCache<T> {
    pub fn new(ttl_ms: i64) -> TenantCache<T> {
        TenantCache::with_budget(ttl_ms, ISOLATE_BUDGET_BYTES)
    }

    pub fn with_budget(ttl_ms: i64, budget_bytes: usize) -> TenantCache<T> {
        TenantCache {
            ttl_ms,
            budget_bytes,
            entries: HashMap::new(),
            held_bytes: 0,
            uses: 0,
        }
    }

    /// Estimated bytes held, and the number of tenants.
    pub fn held(&self) -> (usize, usize) {
        (self.held_bytes, self.entries.len())
    }

    pub fn lookup(&mut self, tenant: &str, now_ms: i64) -> Lookup<T> {
        self.uses += 1;
        let uses = self.uses;
        match self.entries.get_mut(tenant) {
            Some(entry) if now_ms - entry.checked_at < self.ttl_ms => {
                entry.last_used = uses;
                Lookup::Fresh(entry.value.clone())
            }
            _ => Lookup::Stale,
        }
    }

    /// Sets what the cache may hold (the isolate's budget less the directory's share, which
    /// changes with the directory) and drops least recently used entries past it.
    pub fn set_budget(&mut self, budget_bytes: usize) {
        if budget_bytes != self.budget_bytes {
            self.budget_bytes = budget_bytes;
            self.evict("");
        }
    }

    /// Drops least recently used entries other than `keep` until the budget holds (a tenant
    /// id is never empty, so `""` keeps none).
    fn evict(&mut self, keep: &str) {
        while self.held_bytes > self.budget_bytes {
            let oldest = self
                .entries
                .iter()
                .filter(|(t, _)| t.as_str() != keep)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(t, _)| t.clone());
            let Some(tenant) = oldest else { break };
            if let Some(e) = self.entries.remove(&tenant) {
                self.held_bytes -= e.weight;
            }
        }
    }

    /// Offers documents read from KV with their fingerprint and estimated prepared `weight`
    /// ([`prepared_bytes`]); `prepare` runs only when they differ from the cached copy's.
    pub fn offer<E>(
        &mut self,
        tenant: &str,
        fingerprint: &str,
        now_ms: i64,
        weight: usize,
        prepare: impl FnOnce() -> Result<T, E>,
    ) -> Offer<T, E> {
        self.offer_weighed(tenant, fingerprint, now_ms, |_| weight, prepare)
    }

    /// [`TenantCache::offer`], the weight taken from the prepared copy (what it holds is known
    /// only once it is prepared, e.g. its tool count).
    pub fn offer_weighed<E>(
        &mut self,
        tenant: &str,
        fingerprint: &str,
        now_ms: i64,
        weigh: impl FnOnce(&T) -> usize,
        prepare: impl FnOnce() -> Result<T, E>,
    ) -> Offer<T, E> {
        self.uses += 1;
        let uses = self.uses;
        if let Some(entry) = self.entries.get_mut(tenant) {
            if entry.fingerprint == fingerprint {
                entry.checked_at = now_ms;
                entry.last_used = uses;
                return Offer::Unchanged(entry.value.clone());
            }
        }
        match prepare() {
            Ok(value) => {
                let weight = weigh(&value);
                let value = Rc::new(value);
                let entry = Entry {
                    value: value.clone(),
                    fingerprint: fingerprint.to_owned(),
                    checked_at: now_ms,
                    weight,
                    last_used: uses,
                };
                if let Some(old) = self.entries.insert(tenant.to_owned(), entry) {
                    self.held_bytes -= old.weight;
                }
                self.held_bytes += weight;
                self.evict(tenant);
                Offer::Replaced(value)
            }
            Err(error) => self.keep_last_good(tenant, now_ms, error),
        }
    }

    /// Renews the cached copy when it was prepared from documents with this fingerprint (read
    /// from a small version key), so an unchanged tenant costs no document read; `None` when
    /// there is no such copy and the documents must be read.
    pub fn renew_if_unchanged(
        &mut self,
        tenant: &str,
        fingerprint: &str,
        now_ms: i64,
    ) -> Option<Rc<T>> {
        self.uses += 1;
        let uses = self.uses;
        let entry = self.entries.get_mut(tenant)?;
        if entry.fingerprint != fingerprint {
            return None;
        }
        entry.checked_at = now_ms;
        entry.last_used = uses;
        Some(entry.value.clone())
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
    fn a_version_that_matches_renews_without_preparing() {
        let mut cache: TenantCache<&str> = TenantCache::new(DEFAULT_TTL_MS);
        assert!(
            cache.renew_if_unchanged("acme", "v1", 0).is_none(),
            "nothing cached"
        );
        let _ = cache.offer::<()>("acme", "v1", 0, 10, || Ok("first"));
        assert!(matches!(
            cache.lookup("acme", DEFAULT_TTL_MS),
            Lookup::Stale
        ));
        assert_eq!(
            cache
                .renew_if_unchanged("acme", "v1", DEFAULT_TTL_MS)
                .as_deref(),
            Some(&"first")
        );
        assert!(matches!(
            cache.lookup("acme", DEFAULT_TTL_MS + 1),
            Lookup::Fresh(_)
        ));
        assert!(cache
            .renew_if_unchanged("acme", "v2", DEFAULT_TTL_MS)
            .is_none());
        assert!(cache
            .renew_if_unchanged("other", "v1", DEFAULT_TTL_MS)
            .is_none());
    }

    #[test]
    fn fingerprints_tell_absent_from_empty_and_keep_parts_apart() {
        let f = documents_fingerprint;
        assert_ne!(f(&[None]), f(&[Some(b"")]));
        assert_ne!(f(&[Some(b"ab"), Some(b"c")]), f(&[Some(b"a"), Some(b"bc")]));
        assert_eq!(f(&[Some(b"x"), None]), f(&[Some(b"x"), None]));
    }

    #[test]
    fn a_change_is_seen_after_the_ttl_and_not_before() {
        let mut cache: TenantCache<&str> = TenantCache::new(DEFAULT_TTL_MS);
        assert!(matches!(cache.lookup("acme", 0), Lookup::Stale));
        assert_eq!(
            value(cache.offer::<()>("acme", "v1", 0, 1, || Ok("policy v1"))),
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
            value(cache.offer::<()>("acme", "v2", DEFAULT_TTL_MS, 1, || Ok("policy v2"))),
            "policy v2"
        );
    }

    #[test]
    fn unchanged_documents_are_not_prepared_again() {
        let mut cache: TenantCache<u32> = TenantCache::new(10);
        let _ = cache.offer::<()>("acme", "v1", 0, 1, || Ok(1));
        let offer = cache.offer::<()>("acme", "v1", 20, 1, || panic!("prepared twice"));
        assert!(matches!(offer, Offer::Unchanged(_)));
        assert!(matches!(cache.lookup("acme", 25), Lookup::Fresh(_)));
    }

    #[test]
    fn a_bad_document_keeps_the_last_good_copy_serving() {
        let mut cache: TenantCache<&str> = TenantCache::new(10);
        let _ = cache.offer::<String>("acme", "good", 0, 1, || Ok("good copy"));
        match cache.offer("acme", "corrupt", 20, 1, || {
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
        let _ = cache.offer::<&str>("acme", "good", 0, 1, || Ok("acme's tools"));
        assert!(matches!(
            cache.offer("globex", "corrupt", 5, 1, || Err("bad")),
            Offer::Failed("bad")
        ));
        assert!(matches!(
            cache.read_failed("globex", 6, "down"),
            Offer::Failed("down")
        ));
        assert!(matches!(cache.lookup("globex", 7), Lookup::Stale));
    }

    #[test]
    fn past_the_budget_the_least_recently_used_tenant_goes() {
        let mut cache: TenantCache<&str> = TenantCache::with_budget(1_000, 100);
        let _ = cache.offer::<()>("a", "v1", 0, 40, || Ok("a"));
        let _ = cache.offer::<()>("b", "v1", 1, 40, || Ok("b"));
        // `a` is used again, so `b` is now the least recently used.
        assert!(matches!(cache.lookup("a", 2), Lookup::Fresh(_)));
        let _ = cache.offer::<()>("c", "v1", 3, 40, || Ok("c"));
        assert_eq!(cache.held(), (80, 2));
        assert!(matches!(cache.lookup("b", 4), Lookup::Stale));
        assert!(matches!(cache.lookup("a", 4), Lookup::Fresh(_)));
        assert!(matches!(cache.lookup("c", 4), Lookup::Fresh(_)));
        // A replaced copy's old weight is given back, not counted twice.
        let _ = cache.offer::<()>("c", "v2", 5, 50, || Ok("c2"));
        assert_eq!(cache.held(), (90, 2));
        // One tenant over the whole budget stays (the admin API refuses such catalogs).
        let _ = cache.offer::<()>("big", "v1", 6, 500, || Ok("big"));
        assert_eq!(cache.held(), (500, 1));
        assert!(matches!(cache.lookup("big", 7), Lookup::Fresh(_)));
    }

    #[test]
    fn a_smaller_budget_drops_the_least_recently_used_at_once() {
        let mut cache: TenantCache<&str> = TenantCache::with_budget(1_000, 100);
        let _ = cache.offer::<()>("a", "v1", 0, 40, || Ok("a"));
        let _ = cache.offer::<()>("b", "v1", 1, 40, || Ok("b"));
        cache.set_budget(100);
        assert_eq!(cache.held(), (80, 2));
        // A larger directory takes its share: `a`, used least recently, goes.
        cache.set_budget(60);
        assert_eq!(cache.held(), (40, 1));
        assert!(matches!(cache.lookup("a", 2), Lookup::Stale));
        assert!(matches!(cache.lookup("b", 2), Lookup::Fresh(_)));
        // Past every copy, none is kept.
        cache.set_budget(10);
        assert_eq!(cache.held(), (0, 0));
    }

    #[test]
    fn a_copy_weighed_from_what_it_holds() {
        let mut cache: TenantCache<Vec<u8>> = TenantCache::with_budget(1_000, 100);
        let weigh = |v: &Vec<u8>| v.len();
        let _ = cache.offer_weighed::<()>("a", "v1", 0, weigh, || Ok(vec![0; 30]));
        let _ = cache.offer_weighed::<()>("b", "v1", 1, weigh, || Ok(vec![0; 60]));
        assert_eq!(cache.held(), (90, 2));
        // Unchanged: neither prepared nor weighed again.
        let offer = cache.offer_weighed::<()>("a", "v1", 2, |_| panic!("weighed"), || Ok(vec![]));
        assert!(matches!(offer, Offer::Unchanged(_)));
        // Heavier once prepared: the least recently used other copy goes.
        let _ = cache.offer_weighed::<()>("c", "v1", 3, weigh, || Ok(vec![0; 50]));
        assert_eq!(cache.held(), (80, 2));
        assert!(matches!(cache.lookup("b", 4), Lookup::Stale));
        // A copy that fails to prepare is not weighed and changes nothing held.
        let _ = cache.offer_weighed::<&str>("d", "v1", 5, |_| panic!("weighed"), || Err("bad"));
        assert_eq!(cache.held(), (80, 2));
    }
}
