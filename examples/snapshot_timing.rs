//! Host timing of a cold tenant copy prepared from its compiled snapshot, phase by phase, beside
//! preparing it from the JSON documents (issue 18). Not a test: figures for the load bench's
//! notes.
//!
//! `cargo run --release --example snapshot_timing -- <dir with catalog.json and policy.json>
//! <tenant> [member role]` (the load bench's generated tenants: member `loader`, role `all`).

use std::rc::Rc;
use std::time::Instant;

use floorgate::admin::{compile_stored, tenant_version};
use floorgate::rank::v2::{self, Request};
use floorgate::tenant::{Deployment, PreparedTenant};

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
    let deployment = Rc::new(Deployment::prepare(Some(&directory)).expect("the demo directory"));
    let started = Instant::now();
    let snapshot = compile_stored(tenant, Some(&directory), Some(&catalog), Some(&policy))
        .unwrap_or_else(|problems| {
            eprintln!("{}", problems.join("\n"));
            std::process::exit(1)
        });
    println!(
        "compile at write: {:?}, snapshot {} bytes",
        started.elapsed(),
        snapshot.len()
    );
    let version = tenant_version(Some(&catalog), Some(&policy));
    for _ in 0..3 {
        let started = Instant::now();
        let prepared =
            PreparedTenant::from_snapshot(tenant, deployment.clone(), &snapshot, &version, 30)
                .expect("a fresh snapshot");
        let from_snapshot = started.elapsed();
        let started = Instant::now();
        let view = prepared.view(member, role).expect("the member's role");
        let view_time = started.elapsed();
        let started = Instant::now();
        let (index, visible) = prepared.search_pool(&view);
        let pool = started.elapsed();
        let started = Instant::now();
        let request = Request {
            directory: Some(&prepared.deployment.search_directory),
            ..Request::new("create a github issue")
        };
        let answer = v2::search(index, visible, &request);
        let search = started.elapsed();
        let started = Instant::now();
        let from_json = PreparedTenant::prepare(
            tenant,
            deployment.clone(),
            Some(&catalog),
            Some(&policy),
            30,
        )
        .expect("valid documents");
        let json = started.elapsed();
        drop(from_json);
        println!(
            "from snapshot {from_snapshot:?}, view {view_time:?}, search pool {pool:?}, search {search:?} ({} results) | prepare from JSON {json:?}",
            answer.results.len()
        );
    }
}
