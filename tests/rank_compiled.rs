//! The compiled search index (issue 18): read back, it answers every request exactly as the
//! index built from the tools does, over any visible part; damaged, stale or foreign bytes are
//! refused with a reason, never a panic.

use floorgate::rank::v2::compiled::{CompiledError, FORMAT};
use floorgate::rank::v2::{self, Index, Request, Visible};
use floorgate::rank::{Limit, ToolDoc};
use proptest::prelude::*;
use std::sync::OnceLock;

fn catalog() -> &'static Vec<ToolDoc> {
    static CATALOG: OnceLock<Vec<ToolDoc>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/eval/catalog.jsonl");
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    })
}

fn directory() -> &'static v2::Directory {
    static DIR: OnceLock<v2::Directory> = OnceLock::new();
    DIR.get_or_init(|| v2::Directory::build(catalog().clone()))
}

/// The whole catalog built from its text, and the same read back from its compiled bytes.
fn built_and_read() -> &'static (Index, Index, usize) {
    static BOTH: OnceLock<(Index, Index, usize)> = OnceLock::new();
    BOTH.get_or_init(|| {
        let built = Index::build(catalog().clone());
        let bytes = built.compile();
        let read = Index::from_compiled(&bytes, catalog().clone()).expect("reads back");
        (built, read, bytes.len())
    })
}

fn requests() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/eval/vendor_evals.jsonl"
    );
    let mut out: Vec<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["query"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    out.extend(
        [
            "list github issues",
            "drop the database named zorblax",
            "list_all_cal_com_schedules",
        ]
        .map(String::from),
    );
    out
}

/// Everything an answer says: results with scores and coverage, and the explanation.
fn key(a: &v2::Answer) -> String {
    serde_json::to_string(&(
        a.results
            .iter()
            .map(|r| (&r.name, &r.connector, r.score, r.coverage, &r.explain))
            .collect::<Vec<_>>(),
        &a.explanation,
    ))
    .unwrap()
}

fn ask(index: &Index, visible: &Visible, query: &str) -> String {
    let req = Request {
        explain: true,
        limit: Limit::MAX,
        directory: Some(directory()),
        ..Request::new(query)
    };
    key(&v2::search(index, visible, &req))
}

#[test]
fn read_back_it_answers_every_request_as_the_built_index() {
    let (built, read, _) = built_and_read();
    let (all_b, all_r) = (Visible::all(built), Visible::all(read));
    for q in requests() {
        assert_eq!(ask(built, &all_b, &q), ask(read, &all_r, &q), "{q}");
    }
}

#[test]
fn it_is_smaller_than_the_tools_text() {
    let (_, _, bytes) = built_and_read();
    let text: usize = catalog()
        .iter()
        .map(|t| t.description.len() + t.input_schema.to_string().len())
        .sum();
    assert!(
        *bytes < text / 2,
        "{bytes} bytes compiled for {text} bytes of text"
    );
}

#[test]
fn stale_foreign_or_damaged_bytes_are_refused_with_a_reason() {
    let small: Vec<ToolDoc> = catalog().iter().take(40).cloned().collect();
    let bytes = Index::build(small.clone()).compile();
    assert!(Index::from_compiled(&bytes, small.clone()).is_ok());

    let mut other_tools = small.clone();
    other_tools[3].name = format!("{}_renamed", other_tools[3].name).into();
    assert_eq!(
        Index::from_compiled(&bytes, other_tools).err(),
        Some(CompiledError::ToolsDiffer)
    );
    assert_eq!(
        Index::from_compiled(&bytes, small[..39].to_vec()).err(),
        Some(CompiledError::ToolsDiffer)
    );
    assert_eq!(
        Index::from_compiled(b"{\"schema\": 1}", small.clone()).err(),
        Some(CompiledError::NotAnIndex)
    );
    let mut newer = bytes.clone();
    newer[4..8].copy_from_slice(&(FORMAT + 1).to_le_bytes());
    assert_eq!(
        Index::from_compiled(&newer, small.clone()).err(),
        Some(CompiledError::OtherFormat { found: FORMAT + 1 })
    );
    let err = Index::from_compiled(&newer, small.clone()).err().unwrap();
    assert!(err.to_string().contains("recompile"), "{err}");

    // Every truncation is an error, and so is anything appended.
    for len in 0..bytes.len() {
        assert!(
            Index::from_compiled(&bytes[..len], small.clone()).is_err(),
            "cut at {len}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        Index::from_compiled(&longer, small).err(),
        Some(CompiledError::Corrupt("bytes past the last term"))
    );
}

fn small() -> &'static (Vec<ToolDoc>, Vec<u8>) {
    static SMALL: OnceLock<(Vec<ToolDoc>, Vec<u8>)> = OnceLock::new();
    SMALL.get_or_init(|| {
        let tools: Vec<ToolDoc> = catalog().iter().step_by(25).cloned().collect();
        let bytes = Index::build(tools.clone()).compile();
        (tools, bytes)
    })
}

const WORDS: &[&str] = &[
    "list", "get", "create", "delete", "issue", "issues", "incident", "page", "user", "team",
    "github", "notion", "schedule", "alert", "file", "zorblax", "in", "the", "named", "'x'",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Over any visible part, the read-back index answers as the built one.
    #[test]
    fn any_visible_part_answers_alike(
        words in prop::collection::vec(prop::sample::select(WORDS), 1..6),
        keep in prop::collection::vec(any::<bool>(), 97),
    ) {
        let (built, read, _) = built_and_read();
        let ids: Vec<u32> = (0..built.len() as u32).filter(|&i| keep[i as usize % keep.len()]).collect();
        let q = words.join(" ");
        prop_assert_eq!(
            ask(built, &Visible::from_ids(built, ids.iter().copied()), &q),
            ask(read, &Visible::from_ids(read, ids.iter().copied()), &q)
        );
    }

    /// Changed bytes are read or refused, never a panic; a change that still reads is a
    /// well-formed index over the same tools.
    #[test]
    fn changed_bytes_never_panic(changes in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let (tools, bytes) = small();
        let mut bytes = bytes.clone();
        for (at, b) in changes {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        if let Ok(ix) = Index::from_compiled(&bytes, tools.clone()) {
            prop_assert_eq!(ix.len(), tools.len());
            let _ = ask(&ix, &Visible::all(&ix), "list issues in github");
        }
    }
}
