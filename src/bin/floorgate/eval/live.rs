//! LiveMCPBench: long task prompts over its own pool of 527 tools of 70 non-SaaS servers, each
//! task with the tools an annotator used. A task needs several tools, so a hit is any of them;
//! the whole pool is visible and is also the directory. One pool, so no seeds. A last row runs
//! v2 with the SaaS directory instead (the data folder's `real_tools.jsonl`, as every other
//! set and the gateway have it), where the pool's own servers meet the directory's products.

use super::loading::{read_jsonl, Catalog, CATALOG_FILE};
use super::rankers::{systems, Ranker, V2};
use crate::tools_file;

/// The pool's and the tasks' file names in the data folder.
pub const TOOLS_FILE: &str = "livemcptool_tools.jsonl";
pub const TASKS_FILE: &str = "livemcpbench_tasks.jsonl";

/// One system's figures on the tasks.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LiveFigures {
    pub system: String,
    pub tasks: usize,
    pub hit1: f64,
    pub hit5: f64,
    pub mrr5: f64,
    /// Tasks with any answer.
    pub answered: f64,
}

struct Task {
    query: String,
    tools: Vec<String>,
}

fn load_tasks(path: &str) -> Result<Vec<Task>, String> {
    read_jsonl(path)?
        .into_iter()
        .map(|(line, v)| {
            let at = |e: &str| format!("{path}: line {line}: {e}");
            let query = v["query"]
                .as_str()
                .ok_or_else(|| at("missing string field `query`"))?;
            let tools = v["relevant_tools"]
                .as_array()
                .ok_or_else(|| at("missing array field `relevant_tools`"))?
                .iter()
                .map(|t| t["tool"].as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| at("each relevant tool needs a string `tool`"))?;
            Ok(Task {
                query: query.to_owned(),
                tools,
            })
        })
        .collect()
}

/// Measures every system of `systems()` on the tasks of `dir`.
pub fn measure(dir: &str) -> Result<Vec<LiveFigures>, String> {
    let join = |f: &str| format!("{}/{f}", dir.trim_end_matches('/'));
    let tools_path = join(TOOLS_FILE);
    let docs = read_jsonl(&tools_path)?
        .into_iter()
        .map(|(line, v)| {
            tools_file::tool(&v).map_err(|e| format!("{tools_path}: line {line}: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let cat = Catalog::new(docs);
    let tasks = load_tasks(&join(TASKS_FILE))?;
    let pool: Vec<u32> = (0..cat.docs.len() as u32).collect();
    let systems = systems(&cat);
    let mut rows: Vec<LiveFigures> = systems
        .iter()
        .map(|r| figures(r.as_ref(), &tasks, &pool))
        .collect();
    let saas_path = join(CATALOG_FILE);
    if std::path::Path::new(&saas_path).exists() {
        use floorgate::rank::v2;
        let saas = Catalog::load(&saas_path)?;
        let with_saas = V2 {
            directory: Some(v2::Directory::build(saas.docs).into()),
            ..V2::new("v2, SaaS directory", &cat, v2::Rules::SHIPPED, false)
        };
        rows.push(figures(&with_saas, &tasks, &pool));
    }
    Ok(rows)
}

fn figures(r: &dyn Ranker, tasks: &[Task], pool: &[u32]) -> LiveFigures {
    let (mut hit1, mut hit5, mut mrr, mut answered) = (0.0, 0.0, 0.0, 0.0);
    for t in tasks {
        let names: Vec<String> = r.rank(&t.query, pool).into_iter().map(|(n, _)| n).collect();
        if !names.is_empty() {
            answered += 1.0;
        }
        if let Some(k) = names.iter().take(5).position(|n| t.tools.contains(n)) {
            hit5 += 1.0;
            mrr += 1.0 / (k + 1) as f64;
            if k == 0 {
                hit1 += 1.0;
            }
        }
    }
    let n = tasks.len().max(1) as f64;
    LiveFigures {
        system: r.label(),
        tasks: tasks.len(),
        hit1: hit1 / n,
        hit5: hit5 / n,
        mrr5: mrr / n,
        answered: answered / n,
    }
}

pub fn print(rows: &[LiveFigures]) {
    println!();
    println!("LiveMCPBench: {} tasks, the whole pool of its tools visible (and the directory); a hit is any tool the annotator used", rows.first().map_or(0, |r| r.tasks));
    println!(
        "{:<26} {:>6} {:>6} {:>6} {:>8}",
        "system", "hit@1", "hit@5", "MRR@5", "answered"
    );
    for r in rows {
        println!(
            "{:<26} {:>6.3} {:>6.3} {:>6.3} {:>8.3}",
            r.system, r.hit1, r.hit5, r.mrr5, r.answered
        );
    }
}
