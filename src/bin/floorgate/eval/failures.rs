//! `--failures`: every miss, wrong tool and opposite-action hit of one rule set, explained, to
//! see why a query fails.

use super::loading::{family, Catalog, EvalQuery};
use super::rankers::Ours;
use floorgate::rank::{name_destroys, Explanation, Limit, SearchRequest, Subset};

/// Prints every miss (present) and every wrong answer (absent) of `ours`, explained.
pub fn show_failures(
    ours: &Ours,
    cat: &Catalog,
    queries: &[EvalQuery],
    pools: &[(Option<Vec<String>>, Vec<String>)],
    answers: bool,
) {
    for (q, (present, absent)) in queries.iter().zip(pools) {
        let ask = |pool: &[String]| {
            let ids = cat.ids(pool);
            let sub = Subset::from_ids(&ours.index, ids);
            let req = SearchRequest {
                query: &q.query,
                limit: Limit::DEFAULT,
                explain: true,
                directory: ours.directory.as_ref(),
            };
            ours.index.search(&req, &sub)
        };
        let fam = family(&q.connector);
        let gold = |name: &str, conn: &str| q.is_gold(&fam, name, conn);
        if let (Some(p), false) = (present, q.unanswerable) {
            let r = ask(p);
            let hit = r.results.iter().find(|x| gold(&x.name, &x.connector));
            if let (Some(h), Some(e)) = (hit, q.expected_destroys) {
                if name_destroys(&h.name) != e {
                    println!(
                        "OPPOSITE [{}] {:?} gold={} -> {}/{}",
                        q.set, q.query, q.connector, h.connector, h.name
                    );
                }
            }
            if let (Some(_), true) = (hit, answers) {
                let top: Vec<String> = r
                    .results
                    .iter()
                    .map(|x| format!("{}/{}", x.connector, x.name))
                    .collect();
                println!(
                    "HIT [{}] {:?} gold={} -> {}",
                    q.set,
                    q.query,
                    q.connector,
                    top.join("; ")
                );
            }
            if hit.is_none() {
                println!(
                    "MISS [{}] {:?} gold={}/{:?}",
                    q.set, q.query, q.connector, q.tools
                );
                let top: Vec<String> = r
                    .results
                    .iter()
                    .take(3)
                    .map(|x| format!("{}/{} {:.2}", x.connector, x.name, x.coverage))
                    .collect();
                println!("  results: {}", top.join("; "));
                if let Some(e) = &r.explanation {
                    println!("  tokens: {}", token_line(e));
                    if let Some(b) = &e.best_rejected {
                        println!(
                            "  best rejected: {} {:.2} missed {:?}",
                            b.name, b.coverage, b.missed
                        );
                    }
                    if let Some(reason) = &e.reason {
                        println!("  reason: {reason}");
                    }
                }
            }
        }
        let r = ask(absent);
        if !r.results.is_empty() {
            println!(
                "WRONG [{}] {:?} gold={} np={} -> {}/{} cov {:.2}",
                q.set,
                q.query,
                q.connector,
                q.no_platform,
                r.results[0].connector,
                r.results[0].name,
                r.results[0].coverage
            );
            if let Some(e) = &r.explanation {
                println!("  tokens: {}", token_line(e));
            }
        }
    }
}

/// Each query token with its role, document frequency and share of the mass.
fn token_line(explanation: &Explanation) -> String {
    let tokens: Vec<String> = explanation
        .tokens
        .iter()
        .map(|t| format!("{}:{:?}:df{}:{:.2}", t.token, t.role, t.df, t.mass_share))
        .collect();
    tokens.join(" ")
}
