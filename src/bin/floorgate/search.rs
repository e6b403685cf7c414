//! `floorgate search`: run the ranker over a tools file, with explanations.

use super::args::Args;
use super::tools_file;
use floorgate::rank::{Directory, Index, Limit, SearchRequest, Subset};
use serde_json::Value;
use std::io::{BufRead, Write};

const HELP: &str = "\
usage: floorgate search --tools FILE [--limit N] [--explain] [--directory FILE] QUERY
       floorgate search --tools FILE --queries FILE.jsonl [--limit N] [--explain] [--directory FILE]

  --tools FILE      JSON array of {\"name\", \"description\"?, \"connector\", \"inputSchema\"?}: the pool
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
    let pool = tools_file::load(&tools)?;
    let directory = directory.map(|p| tools_file::load(&p)).transpose()?;
    let json = |v: Result<Value, serde_json::Error>| v.map_err(|e| e.to_string());
    match engine.as_str() {
        "v2" => {
            use floorgate::rank::v2;
            let index = v2::Index::build(pool);
            let directory = directory.map(v2::Directory::build);
            let all = v2::Visible::all(&index);
            answer(queries, &pos, |query| {
                let req = v2::Request {
                    limit,
                    explain,
                    directory: directory.as_ref(),
                    ..v2::Request::new(query)
                };
                json(serde_json::to_value(v2::search(&index, &all, &req)))
            })
        }
        "v1" => {
            let index = Index::build(pool);
            let directory = directory.map(Directory::build);
            let all = Subset::all(&index);
            answer(queries, &pos, |query| {
                let req = SearchRequest {
                    query,
                    limit,
                    explain,
                    directory: directory.as_ref(),
                };
                json(serde_json::to_value(index.search(&req, &all)))
            })
        }
        other => Err(format!("--engine: `{other}` is not v2 or v1")),
    }
}

/// One QUERY (pretty JSON), or every line of a queries file (one JSON line each, with its id).
fn answer(
    queries: Option<String>,
    pos: &[String],
    ask: impl Fn(&str) -> Result<Value, String>,
) -> Result<(), String> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match (queries, pos) {
        (None, [query]) => {
            let line = serde_json::to_string_pretty(&ask(query)?).map_err(|e| e.to_string())?;
            writeln!(out, "{line}").map_err(|e| e.to_string())
        }
        (None, []) => Err("give a QUERY or --queries FILE".into()),
        (None, _) => Err("give exactly one QUERY (quote it)".into()),
        (Some(_), [_, ..]) => Err("give either a QUERY or --queries FILE, not both".into()),
        (Some(path), []) => {
            let file =
                std::fs::File::open(&path).map_err(|e| format!("{path}: cannot read: {e}"))?;
            // Every line is read and checked before any is answered: a bad line is reported
            // with nothing printed, never after half the answers.
            let mut asked = Vec::new();
            for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
                let line = line.map_err(|e| format!("{path}: line {}: {e}", i + 1))?;
                if line.trim().is_empty() {
                    continue;
                }
                asked.push(query_line(&line).map_err(|e| format!("{path}: line {}: {e}", i + 1))?);
            }
            for (id, query) in asked {
                let mut v = ask(&query)?;
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
