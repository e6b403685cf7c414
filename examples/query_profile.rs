//! The ranker's query path in a loop, for profilers and quick A/B timings: the dust queries over
//! `N` tools (the committed catalog rows, renamed copies past its size, as `benches/rank.rs`
//! builds them) with the connector directory, as the gateway searches.
//!
//! `cargo run --release --example query_profile -- [TOOLS] [ROUNDS]` prints the median and
//! fastest round in µs per query; under `valgrind --tool=callgrind --collect-atstart=no
//! --toggle-collect=floorgate::rank::v2::search_request` it counts the query path's instructions
//! alone (the index builds excluded), which a noisy machine does not blur.

use floorgate::rank::{v2, ToolDoc};

fn main() {
    let catalog: Vec<ToolDoc> = include_str!("../fixtures/eval/catalog.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a catalog row"))
        .collect();
    let queries: Vec<String> = include_str!("../fixtures/eval/dust_connector_queries.jsonl")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a query row");
            v["query"].as_str().expect("a query").to_owned()
        })
        .collect();
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map_or(1000, |s| s.parse().expect("TOOLS: a number"));
    let rounds: usize = args
        .next()
        .map_or(20, |s| s.parse().expect("ROUNDS: a number"));
    let tools: Vec<ToolDoc> = (0..n)
        .map(|i| {
            let mut t = catalog[i % catalog.len()].clone();
            let copy = i / catalog.len();
            if copy > 0 {
                t.name = format!("{}_{}", t.name, copy + 1).into();
                t.connector = format!("{} {}", t.connector, copy + 1).into();
            }
            t
        })
        .collect();
    let directory = v2::Directory::build(catalog);
    let index = v2::Index::build(tools);
    let all = v2::Visible::all(&index);
    let mut per_query = Vec::with_capacity(rounds);
    let mut answered = 0usize;
    for _ in 0..rounds.max(1) {
        let start = std::time::Instant::now();
        for q in &queries {
            let req = v2::Request {
                directory: Some(&directory),
                ..v2::Request::new(q)
            };
            answered += v2::search(&index, &all, &req).results.len();
        }
        per_query.push(start.elapsed().as_secs_f64() * 1e6 / queries.len() as f64);
    }
    per_query.sort_by(f64::total_cmp);
    println!(
        "{n} tools, {} queries × {} rounds: median {:.1} µs per query, fastest round {:.1} ({answered} results)",
        queries.len(),
        per_query.len(),
        per_query[per_query.len() / 2],
        per_query[0]
    );
}
