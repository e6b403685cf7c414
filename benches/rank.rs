//! Index build and query cost at 100, 1,000 and 10,000 tools, beside tantivy's BM25 on the same
//! pools and queries (with `--features bm25-baseline`).
//!
//! Tools are the real catalog rows of `fixtures/eval`, repeated with renamed copies past the
//! catalog's size; queries are the real short queries of the same folder, asked in turn, with
//! and without the connector directory the gateway passes.

use floorgate::rank::{Directory, Index, Limit, SearchRequest, Subset, ToolDoc};
use std::sync::OnceLock;

const SIZES: &[usize] = &[100, 1_000, 10_000];

fn catalog() -> &'static Vec<ToolDoc> {
    static C: OnceLock<Vec<ToolDoc>> = OnceLock::new();
    C.get_or_init(|| {
        include_str!("../fixtures/eval/catalog.jsonl")
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    })
}

fn queries() -> &'static Vec<String> {
    static Q: OnceLock<Vec<String>> = OnceLock::new();
    Q.get_or_init(|| {
        include_str!("../fixtures/eval/dust_connector_queries.jsonl")
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["query"].as_str().unwrap().to_owned()
            })
            .collect()
    })
}

/// `n` tools: the catalog in order, then renamed copies (`name_2`, connector `Label 2`).
fn tools(n: usize) -> Vec<ToolDoc> {
    let cat = catalog();
    (0..n)
        .map(|i| {
            let mut t = cat[i % cat.len()].clone();
            let copy = i / cat.len();
            if copy > 0 {
                t.name = format!("{}_{}", t.name, copy + 1).into();
                t.connector = format!("{} {}", t.connector, copy + 1).into();
            }
            t
        })
        .collect()
}

fn main() {
    for &n in SIZES {
        let ix = Index::build(tools(n));
        let v2 = floorgate::rank::v2::Index::build(tools(n));
        eprintln!(
            "floorgate index, {n} tools: v1 {} / v2 {} bytes per tool (index structures, tool text excluded); v2 compiled {} bytes per tool",
            ix.index_bytes() / n,
            v2.index_bytes() / n,
            v2.compile().len() / n
        );
    }
    divan::main();
}

#[divan::bench(args = SIZES, sample_count = 20)]
fn build(b: divan::Bencher, n: usize) {
    let docs = tools(n);
    b.with_inputs(|| docs.clone()).bench_values(Index::build);
}

/// Pool-only rules: the same work tantivy does, so the two compare.
#[divan::bench(args = SIZES, sample_count = 200, sample_size = 20)]
fn query(b: divan::Bencher, n: usize) {
    run_queries(b, n, None);
}

/// What the gateway runs: the deployment's directory (every catalog connector) beside the pool,
/// for product detection and prose words, and an explanation for every empty answer.
#[divan::bench(args = SIZES, sample_count = 200, sample_size = 20)]
fn query_with_directory(b: divan::Bencher, n: usize) {
    let directory = Directory::build(catalog().clone());
    run_queries(b, n, Some(&directory));
}

fn run_queries(b: divan::Bencher, n: usize, directory: Option<&Directory>) {
    let ix = Index::build(tools(n));
    let all = Subset::all(&ix);
    let qs = queries();
    let mut i = 0;
    b.bench_local(|| {
        i = (i + 1) % qs.len();
        let req = SearchRequest {
            query: &qs[i],
            limit: Limit::DEFAULT,
            explain: false,
            directory,
        };
        ix.search(&req, &all)
    });
}

/// The v2 pipeline (what the gateway runs).
mod v2 {
    use super::*;
    use floorgate::rank::v2;

    #[divan::bench(args = SIZES, sample_count = 20)]
    fn v2_build(b: divan::Bencher, n: usize) {
        let docs = tools(n);
        b.with_inputs(|| docs.clone())
            .bench_values(v2::Index::build);
    }

    /// Reading the compiled index back (what a cold isolate does with a tenant's snapshot).
    #[divan::bench(args = SIZES, sample_count = 20)]
    fn v2_read_compiled(b: divan::Bencher, n: usize) {
        let docs = tools(n);
        let bytes = v2::Index::build(docs.clone()).compile();
        b.with_inputs(|| docs.clone())
            .bench_values(|docs| v2::Index::from_compiled(&bytes, docs).unwrap());
    }

    /// With the deployment's directory, as the gateway searches.
    #[divan::bench(args = SIZES, sample_count = 200, sample_size = 20)]
    fn v2_query_with_directory(b: divan::Bencher, n: usize) {
        let directory = v2::Directory::build(catalog().clone());
        let ix = v2::Index::build(tools(n));
        let all = v2::Visible::all(&ix);
        let qs = queries();
        let mut i = 0;
        b.bench_local(|| {
            i = (i + 1) % qs.len();
            let req = v2::Request {
                directory: Some(&directory),
                ..v2::Request::new(&qs[i])
            };
            v2::search(&ix, &all, &req)
        });
    }
}

#[cfg(feature = "bm25-baseline")]
mod bm25 {
    use super::*;
    use floorgate::rank::bm25::Bm25Index;

    #[divan::bench(args = SIZES, sample_count = 10)]
    fn tantivy_build(b: divan::Bencher, n: usize) {
        let docs = tools(n);
        b.bench(|| Bm25Index::build(&docs).unwrap());
    }

    #[divan::bench(args = SIZES, sample_count = 200, sample_size = 20)]
    fn tantivy_query(b: divan::Bencher, n: usize) {
        let ix = Bm25Index::build(&tools(n)).unwrap();
        let qs = queries();
        let mut i = 0;
        b.bench_local(|| {
            i = (i + 1) % qs.len();
            ix.search(&qs[i], 5)
        });
    }
}
