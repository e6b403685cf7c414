//! `floorgate search`: run the ranker over a tools file, with explanations.

use super::args::Args;
use super::tools_file;
use floorgate::rank::{Directory, Index, Limit, SearchRequest, Subset};
use serde_json::Value;
use std::io::{BufRead, Write};

const HELP: &str = "\
usage: floorgate search --tools FILE [--limit N] [--explain] [--directory FILE] QUERY
       floorgate search --tools FILE --queries FILE.jsonl [--limit N] [--explain] [--directory FILE]

  --tools FILE      JSON array of {\"name\", \"description\", \"connector\", \"inputSchema\"?}: the pool
  --queries FILE    JSONL lines {\"id\": …, \"query\": …}; prints one JSON line per query, same id
  --limit N         results per query (default 5, at most 25)
  --explain         add per-token df/idf and matched fields
  --directory FILE  the gateway's connector directory (same format as --tools), for product detection
  --engine v2|v1    which ranker: v2 (the gateway's, default) or the first ranker, kept for comparison
";

pub fn run(mut args: Args) -> Result<(), String> {
    if args.help() {
        print!("{HELP}");
        return Ok(());
    }
    let tools = args.value("--tools")?.ok_or("--tools FILE is required")?;
    let queries = args.value("--queries")?;
    let directory = args.value("--directory")?;
    let limit = match args.parsed::<usize>("--limit")? {
        Some(n) => Limit::new(n).map_err(|e| format!("--limit: {e}"))?,
        None => Limit::DEFAULT,
    };
    let explain = args.switch("--explain");
    let engine = args.value("--engine")?.unwrap_or_else(|| "v2".into());
    let pos = args.positionals()?;
    if engine == "v2" {
        return run_v2(tools, queries, directory, limit, explain, pos);
    }
    if engine != "v1" {
        return Err(format!("--engine: `{engine}` is not v1 or v2"));
    }

    let index = Index::build(tools_file::load(&tools)?);
    let directory = match directory {
        Some(path) => Some(Directory::build(tools_file::load(&path)?)),
        None => None,
    };
    let all = Subset::all(&index);
    let ask = |query: &str| {
        let req = SearchRequest {
            query,
            limit,
            explain,
            directory: directory.as_ref(),
        };
        index.search(&req, &all)
    };

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match (queries, pos.as_slice()) {
        (None, [query]) => {
            let resp = ask(query);
            let line = serde_json::to_string_pretty(&resp).map_err(|e| e.to_string())?;
            writeln!(out, "{line}").map_err(|e| e.to_string())
        }
        (None, []) => Err("give a QUERY or --queries FILE".into()),
        (None, _) => Err("give exactly one QUERY (quote it)".into()),
        (Some(_), [_, ..]) => Err("give either a QUERY or --queries FILE, not both".into()),
        (Some(path), []) => {
            let file =
                std::fs::File::open(&path).map_err(|e| format!("{path}: cannot read: {e}"))?;
            for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
                let line = line.map_err(|e| format!("{path}: line {}: {e}", i + 1))?;
                if line.trim().is_empty() {
                    continue;
                }
                let (id, query) =
                    query_line(&line).map_err(|e| format!("{path}: line {}: {e}", i + 1))?;
                let resp = ask(&query);
                let mut v = serde_json::to_value(&resp).map_err(|e| e.to_string())?;
                if let Value::Object(m) = &mut v {
                    m.insert("id".into(), id);
                }
                writeln!(out, "{v}").map_err(|e| e.to_string())?;
            }
            Ok(())
        }
    }
}

fn run_v2(
    tools: String,
    queries: Option<String>,
    directory: Option<String>,
    limit: Limit,
    explain: bool,
    pos: Vec<String>,
) -> Result<(), String> {
    use floorgate::rank::v2;
    let index = v2::Index::build(tools_file::load(&tools)?);
    let directory = match directory {
        Some(path) => Some(v2::Directory::build(tools_file::load(&path)?)),
        None => None,
    };
    let all = v2::Visible::all(&index);
    let ask = |query: &str| {
        let req = v2::Request {
            limit,
            explain,
            directory: directory.as_ref(),
            ..v2::Request::new(query)
        };
        v2::search(&index, &all, &req)
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match (queries, pos.as_slice()) {
        (None, [query]) => {
            let line = serde_json::to_string_pretty(&ask(query)).map_err(|e| e.to_string())?;
            writeln!(out, "{line}").map_err(|e| e.to_string())
        }
        (None, []) => Err("give a QUERY or --queries FILE".into()),
        (None, _) => Err("give exactly one QUERY (quote it)".into()),
        (Some(_), [_, ..]) => Err("give either a QUERY or --queries FILE, not both".into()),
        (Some(path), []) => {
            let file =
                std::fs::File::open(&path).map_err(|e| format!("{path}: cannot read: {e}"))?;
            for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
                let line = line.map_err(|e| format!("{path}: line {}: {e}", i + 1))?;
                if line.trim().is_empty() {
                    continue;
                }
                let (id, query) =
                    query_line(&line).map_err(|e| format!("{path}: line {}: {e}", i + 1))?;
                let mut v = serde_json::to_value(ask(&query)).map_err(|e| e.to_string())?;
                if let Value::Object(m) = &mut v {
                    m.insert("id".into(), id);
                }
                writeln!(out, "{v}").map_err(|e| e.to_string())?;
            }
            Ok(())
        }
    }
}

fn query_line(line: &str) -> Result<(Value, String), String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not valid JSON: {e}"))?;
    let id = v.get("id").cloned().ok_or("missing field `id`")?;
    match v.get("query") {
        Some(Value::String(q)) => Ok((id, q.clone())),
        Some(other) => Err(format!(
            "field `query` must be a string, found {}",
            tools_file::kind(other)
        )),
        None => Err("missing field `query`".into()),
    }
}
