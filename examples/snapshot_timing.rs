//! Host timing of a cold tenant copy prepared from its compiled snapshot, phase by phase, beside
//! preparing it from the JSON documents (issue 18). Not a test: figures for the load bench's
//! notes.
//!
//! `cargo run --release --example snapshot_timing -- <dir with catalog.json and policy.json>
//! <tenant> [member role]` (the load bench's generated tenants: member `loader`, role `all`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use floorgate::admin::{compile_stored, tenant_version};
use floorgate::rank::v2::{self, Request};
use floorgate::tenant::{Deployment, PreparedTenant};

/// Counts live heap bytes and their peak, for the memory figures.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Allocations made (a wasm isolate's allocator is slower per call than the host's).
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Starts a new peak at what is live now, and returns it.
fn count_peak_from_here() -> usize {
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    live
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, tenant, rest @ ..] = args.as_slice() else {
        eprintln!("usage: snapshot_timing <tenant dir> <tenant> [member role]");
        std::process::exit(2);
    };
    let (member, role) = match rest {
        [member, role] => (member.as_str(), role.as_str()),
        _ => ("loader", "all"),
    };
    let read = |path: String| {
        std::fs::read_to_string(&path).unwrap_or_else(|e| {
            eprintln!("{path}: {e}");
            std::process::exit(1)
        })
    };
    let directory = read("fixtures/demo/directory.json".into());
    let catalog = read(format!("{dir}/catalog.json"));
    let policy = read(format!("{dir}/policy.json"));
    // The deployment as an isolate prepares it: the directory's text and its compiled snapshot
    // read from KV, the text parsed and the index read back (the documents are dropped after).
    let directory_snapshot =
        floorgate::admin::compile_directory(Some(&directory)).expect("the demo directory compiles");
    let before = count_peak_from_here();
    let (deployment, problem) =
        Deployment::prepare_with(Some(&directory), Some(&directory_snapshot))
            .expect("the demo directory");
    assert!(problem.is_none(), "{problem:?}");
    println!(
        "the deployment's directory ({} bytes of text, a {} byte snapshot): held {} (peak {}, {:.1} bytes per text byte held)",
        directory.len(),
        directory_snapshot.len(),
        mib(LIVE.load(Ordering::Relaxed) - before),
        mib(PEAK.load(Ordering::Relaxed) - before),
        (LIVE.load(Ordering::Relaxed) - before) as f64 / directory.len() as f64,
    );
    let deployment = Rc::new(deployment);
    let before = count_peak_from_here();
    let started = Instant::now();
    let snapshot = compile_stored(tenant, Some(&directory), Some(&catalog), Some(&policy))
        .unwrap_or_else(|problems| {
            eprintln!("{}", problems.join("\n"));
            std::process::exit(1)
        });
    println!(
        "compile at write: {:?}, snapshot {} bytes, peak memory {} (the documents aside)",
        started.elapsed(),
        snapshot.len(),
        mib(PEAK.load(Ordering::Relaxed) - before),
    );
    let version = tenant_version(Some(&catalog), Some(&policy));
    // Memory, in the worker's order: the snapshot's bytes (as read from KV) are held while the
    // copy is prepared from them and dropped when the tenant lookup returns; then ten members'
    // views and search pools. The load tenants give every member the same role, so the ten
    // share one view; then again with an override of their own for each (one connection
    // denied), so each has its own.
    memory(
        tenant,
        &deployment,
        &snapshot,
        &version,
        member,
        role,
        "one role",
    );
    let mut with_overrides: serde_json::Value = serde_json::from_str(&policy).expect("JSON");
    let catalog_json: serde_json::Value = serde_json::from_str(&catalog).expect("JSON");
    let denied = catalog_json["connections"][0]["id"].clone();
    for i in 0..10 {
        with_overrides["members"][format!("{member}{i}")] =
            serde_json::json!({"connections": {"deny": [denied]}});
    }
    let policy_overrides = with_overrides.to_string();
    let snapshot_overrides = compile_stored(
        tenant,
        Some(&directory),
        Some(&catalog),
        Some(&policy_overrides),
    )
    .expect("the overrides are valid");
    let version_overrides = tenant_version(Some(&catalog), Some(&policy_overrides));
    memory(
        tenant,
        &deployment,
        &snapshot_overrides,
        &version_overrides,
        member,
        role,
        "an override each",
    );
    json_memory(tenant, &deployment, (&catalog, &policy), (member, role));
    for _ in 0..3 {
        let from_json = {
            let started = Instant::now();
            drop(from_documents(tenant, &deployment, &catalog, &policy));
            started.elapsed()
        };
        // Each phase of a cold search (the copy dropped last, as a renewed copy replaces it),
        // timed and its allocations counted.
        let mut phases: Vec<(&str, std::time::Duration, usize)> = Vec::new();
        let mut started = (Instant::now(), ALLOCATIONS.load(Ordering::Relaxed));
        let mut lap = |phase: &'static str| {
            let allocations = ALLOCATIONS.load(Ordering::Relaxed);
            phases.push((phase, started.0.elapsed(), allocations - started.1));
            started = (Instant::now(), ALLOCATIONS.load(Ordering::Relaxed));
        };
        let prepared =
            PreparedTenant::from_snapshot(tenant, deployment.clone(), &snapshot, &version, 30)
                .expect("a fresh snapshot");
        lap("from snapshot");
        let view = prepared.view(member, role).expect("the member's role");
        lap("view");
        let (index, visible) = prepared.search_pool(&view);
        lap("search pool");
        let request = Request {
            directory: Some(&prepared.deployment.search_directory),
            ..Request::new("create a github issue")
        };
        let results = v2::search(index, visible, &request).results.len();
        lap("first search");
        drop(view);
        drop(prepared);
        lap("drop");
        let total: std::time::Duration = phases.iter().map(|p| p.1).sum();
        let allocations: usize = phases.iter().map(|p| p.2).sum();
        let phases: Vec<String> = phases
            .iter()
            .map(|(phase, time, n)| format!("{phase} {time:?} ({n} allocations)"))
            .collect();
        println!(
            "{} | cold total {total:?}, {allocations} allocations; {results} results | prepare from JSON {from_json:?}",
            phases.join(", ")
        );
    }
}

/// Prints the memory of a copy prepared from `snapshot` and ten members' views (`member0`…).
fn memory(
    tenant: &str,
    deployment: &Rc<Deployment>,
    snapshot: &[u8],
    version: &str,
    member: &str,
    role: &str,
    members: &str,
) {
    let before = count_peak_from_here();
    let bytes = snapshot.to_vec();
    let prepared = PreparedTenant::from_snapshot(tenant, deployment.clone(), &bytes, version, 30)
        .expect("a fresh snapshot");
    let snapshot_len = bytes.len();
    let after_copy = LIVE.load(Ordering::Relaxed) - before - snapshot_len;
    let peak_preparing = PEAK.load(Ordering::Relaxed) - before;
    drop(bytes);
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let mut after_first = 0;
    for i in 0..10 {
        let view = prepared
            .view(&format!("{member}{i}"), role)
            .expect("the member's role");
        let _ = prepared.search_pool(&view);
        if i == 0 {
            after_first = LIVE.load(Ordering::Relaxed) - before - after_copy;
        }
    }
    let all = LIVE.load(Ordering::Relaxed) - before - after_copy;
    let peak_serving = PEAK.load(Ordering::Relaxed) - before;
    println!(
        "memory, ten members of {members} ({} views): snapshot bytes {}, prepared copy {} (peak {} while both are held); + the first view and search pool (the shared index) {}, + 9 more members {}; held {} (peak {})",
        prepared.views_held(),
        mib(snapshot_len),
        mib(after_copy),
        mib(peak_preparing),
        mib(after_first),
        mib(all - after_first),
        mib(after_copy + all),
        mib(peak_serving.max(peak_preparing)),
    );
}

/// Prints the peak memory of the fallback: a copy prepared from the JSON documents (no snapshot),
/// its first member view and the search index built from it.
fn json_memory(
    tenant: &str,
    deployment: &Rc<Deployment>,
    (catalog, policy): (&str, &str),
    (member, role): (&str, &str),
) {
    let before = count_peak_from_here();
    // The documents as read from KV are held while the copy is prepared.
    let (catalog, policy) = (catalog.to_owned(), policy.to_owned());
    let prepared = from_documents(tenant, deployment, &catalog, &policy);
    let view = prepared.view(member, role).expect("the member's role");
    let _ = prepared.search_pool(&view);
    let documents = catalog.len() + policy.len();
    drop((catalog, policy));
    let held = LIVE.load(Ordering::Relaxed) - before;
    let peak = PEAK.load(Ordering::Relaxed) - before;
    println!(
        "memory, from the JSON documents ({}): one member's view and the index built; held {} (peak {}, {:.1} bytes per document byte)",
        mib(documents),
        mib(held),
        mib(peak),
        peak as f64 / documents as f64,
    );
}

/// A copy prepared from the JSON documents, as an isolate without a usable snapshot does.
fn from_documents(
    tenant: &str,
    deployment: &Rc<Deployment>,
    catalog: &str,
    policy: &str,
) -> PreparedTenant {
    PreparedTenant::prepare(tenant, deployment.clone(), Some(catalog), Some(policy), 30)
        .expect("valid documents")
}
