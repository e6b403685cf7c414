//! The house is built one way up: every module imports only from floors below its own.
//!
//! Reads the crate's own sources, finds each top-level module's `crate::` references (doc
//! comments excluded: a link is not an import), and checks them against [`FLOORS`]. It also
//! keeps `docs/modules.dot`, the picture of those imports, equal to what the code says; run
//! with `UPDATE_MODULE_GRAPH=1` to rewrite it after a deliberate change.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Ground floor first. A module may import from any lower floor, never from its own or a
/// higher one, so the graph has no circle by construction.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "vocabulary and primitives",
        &[
            "accounts",
            "binding",
            "cache",
            "lazy_json",
            "mcp",
            "names",
            "packed",
            "roster",
            "scaffold",
            "tokenize",
        ],
    ),
    (
        "validated documents, grants, the ranker",
        &["catalog", "grant", "rank", "upstream"],
    ),
    ("checks over documents", &["oauth", "schema"]),
    (
        "refusals, restrictions, sealing",
        &[
            "account_link",
            "call_error",
            "credential",
            "policy",
            "provider_oauth",
            "vault",
        ],
    ),
    ("the gateway's own operations", &["control", "reseal"]),
    ("the resolver", &["resolver"]),
    (
        "what the resolver's answers become",
        &["outbound", "tenant"],
    ),
    (
        "the surfaces: a member's, an operator's",
        &["admin", "gateway"],
    ),
    ("the edge shell (wasm32)", &["edge"]),
];

fn floor_of(module: &str) -> Option<usize> {
    FLOORS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`src/rank/v2/index.rs` → `rank`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "bin").then(|| name.to_owned())
}

/// Identifier characters: what may follow `crate::` as a module name.
fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The top-level modules a file names through `crate::`, in paths and in grouped imports
/// (`use crate::{a::X, b}`).
fn references(source: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let code: String = source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            // Top-level names of the group: after `{` or a `,` at depth 0.
            let mut depth = 0;
            let mut expecting = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => expecting = true,
                    c if expecting && (c.is_ascii_alphanumeric() || c == '_') => {
                        found.insert(ident(&group[i..]).to_owned());
                        expecting = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(after).to_owned());
        }
        rest = after;
    }
    found
}

/// Module → the other top-level modules it references.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut modules: BTreeSet<String> = BTreeSet::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut sources = Vec::new();
    for file in files {
        if let Some(module) = module_of(&src, &file) {
            modules.insert(module.clone());
            sources.push((module, std::fs::read_to_string(&file).unwrap()));
        }
    }
    for (module, source) in sources {
        let targets = graph.entry(module.clone()).or_default();
        for name in references(&source) {
            if name != module && modules.contains(&name) {
                targets.insert(name);
            }
        }
    }
    graph
}

#[test]
fn every_import_goes_down() {
    let graph = import_graph();
    let mut problems = Vec::new();
    for (module, targets) in &graph {
        let Some(floor) = floor_of(module) else {
            problems.push(format!(
                "module `{module}` is on no floor: add it to FLOORS in tests/layering.rs"
            ));
            continue;
        };
        for target in targets {
            match floor_of(target) {
                Some(below) if below < floor => {}
                Some(below) => problems.push(format!(
                    "`{module}` (floor {floor}: {}) imports `{target}` (floor {below}: {})",
                    FLOORS[floor].0, FLOORS[below].0
                )),
                None => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reference_scanner_sees_paths_and_groups() {
    let found = references(
        "use crate::{alpha::A, beta, gamma::{x, y::Z}};\nlet x = crate::delta::f();\n/// [`crate::epsilon`]\n",
    );
    let names: Vec<&str> = found.iter().map(String::as_str).collect();
    assert_eq!(names, ["alpha", "beta", "delta", "gamma"]);
}

/// Graphviz source: one cluster per floor, ground floor at the bottom.
fn dot(graph: &BTreeMap<String, BTreeSet<String>>) -> String {
    let mut out = String::from(
        "// The crate's module imports, one floor per box, ground floor at the bottom.\n\
         // Generated by tests/layering.rs from the sources; render with `dot -Tsvg`.\n\
         digraph modules {\n  rankdir=BT;\n  node [shape=box, fontname=\"Helvetica\"];\n",
    );
    for (i, (name, modules)) in FLOORS.iter().enumerate() {
        out.push_str(&format!(
            "  subgraph cluster_{i} {{\n    label=\"{i}: {name}\";\n"
        ));
        for module in modules.iter().filter(|m| graph.contains_key(**m)) {
            out.push_str(&format!("    \"{module}\";\n"));
        }
        out.push_str("  }\n");
    }
    for (module, targets) in graph {
        for target in targets {
            out.push_str(&format!("  \"{module}\" -> \"{target}\";\n"));
        }
    }
    out.push_str("}\n");
    out
}

#[test]
fn the_picture_matches_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/modules.dot");
    let expected = dot(&import_graph());
    if std::env::var_os("UPDATE_MODULE_GRAPH").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == expected,
        "docs/modules.dot is stale: run `UPDATE_MODULE_GRAPH=1 cargo test --test layering`"
    );
}
