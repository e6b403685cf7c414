//! The gateway's own share of a cold search, in WebAssembly: the same core the Worker runs,
//! built for `wasm32-unknown-unknown` and driven by `bench/load/wasm-cold.mjs` in Node's V8
//! (the engine workerd embeds), with no runtime, KV or JavaScript glue around it. A local
//! workerd reports no isolate CPU, and its process figures hold the runtime's own work; this
//! isolates the part the gateway's code decides. Not a test: figures for the load bench's notes.
//!
//! The exports take and return plain numbers: the driver copies documents into memory from
//! [`buffer`], calls [`setup`] once, then times [`cold`] (a copy prepared from the snapshot,
//! the member's view, the search pool, a first search, the copy dropped) and [`warm`].

use std::cell::RefCell;
use std::rc::Rc;

use floorgate::admin::{compile_stored, tenant_version};
use floorgate::rank::v2::{self, Request};
use floorgate::tenant::{Deployment, PreparedTenant};

struct Bench {
    tenant: String,
    deployment: Rc<Deployment>,
    snapshot: Vec<u8>,
    version: String,
    warm: Option<PreparedTenant>,
}

thread_local! {
    static INPUTS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    static BENCH: RefCell<Option<Bench>> = const { RefCell::new(None) };
}

/// Room for the next input (directory, catalog, policy, tenant, in that order): the driver
/// writes `len` bytes at the returned address.
#[no_mangle]
pub extern "C" fn buffer(len: usize) -> *mut u8 {
    INPUTS.with_borrow_mut(|inputs| {
        inputs.push(vec![0; len]);
        inputs
            .last_mut()
            .map_or(std::ptr::null_mut(), |b| b.as_mut_ptr())
    })
}

/// Prepares the deployment and compiles the tenant's snapshot as the admin write does: the
/// snapshot's length, or 0 when the inputs are not four valid documents.
#[no_mangle]
pub extern "C" fn setup() -> usize {
    let inputs = INPUTS.with_borrow_mut(std::mem::take);
    let texts: Vec<String> = inputs
        .into_iter()
        .filter_map(|b| String::from_utf8(b).ok())
        .collect();
    let [directory, catalog, policy, tenant] = texts.as_slice() else {
        return 0;
    };
    let Ok(deployment) = Deployment::prepare(Some(directory)) else {
        return 0;
    };
    let Ok(snapshot) = compile_stored(tenant, Some(directory), Some(catalog), Some(policy)) else {
        return 0;
    };
    let len = snapshot.len();
    BENCH.with_borrow_mut(|b| {
        *b = Some(Bench {
            tenant: tenant.clone(),
            deployment: Rc::new(deployment),
            snapshot,
            version: tenant_version(Some(catalog), Some(policy)),
            warm: None,
        })
    });
    len
}

/// A copy prepared from the snapshot's bytes, as an isolate without one does.
fn prepare(b: &Bench) -> Option<PreparedTenant> {
    PreparedTenant::from_snapshot(
        &b.tenant,
        b.deployment.clone(),
        &b.snapshot,
        &b.version,
        floorgate::resolver::DEFAULT_COLLAPSE_THRESHOLD,
    )
    .ok()
}

fn search(prepared: &PreparedTenant) -> usize {
    let Ok(view) = prepared.view("loader", "all") else {
        return usize::MAX;
    };
    let (index, visible) = prepared.search_pool(&view);
    let request = Request {
        directory: Some(&prepared.deployment.search_directory),
        ..Request::new("list github issues")
    };
    v2::search(index, visible, &request).results.len()
}

/// One cold search: the copy prepared from the snapshot's bytes, the member's view and search
/// pool, the first search; then the copy dropped, as a renewed copy replaces it. The number of
/// results (`usize::MAX` when the snapshot or the member is refused).
#[no_mangle]
pub extern "C" fn cold() -> usize {
    BENCH.with_borrow(|b| {
        b.as_ref()
            .and_then(prepare)
            .map_or(usize::MAX, |p| search(&p))
    })
}

/// One warm search: the same, over a copy kept from the first call.
#[no_mangle]
pub extern "C" fn warm() -> usize {
    BENCH.with_borrow_mut(|b| {
        let Some(b) = b else { return usize::MAX };
        if b.warm.is_none() {
            b.warm = prepare(b);
        }
        b.warm.as_ref().map_or(usize::MAX, search)
    })
}
