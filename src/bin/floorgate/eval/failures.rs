//! `--failures`: every miss, wrong tool and opposite-action hit of one ranker, explained, to
//! see why a query fails. Both engines answer through [`Asked`], so one printer serves both.

use super::loading::{family, Catalog, EvalQuery};
use super::rankers::{Ours, Ranker, V2};
use floorgate::rank::{name_destroys, Limit, SearchRequest, Subset};

/// One answer, reduced to what the printer shows.
pub struct Asked {
    /// (connector, name, coverage), best first.
    pub results: Vec<(String, String, f64)>,
    /// Each query token with its role, document frequency and share of the mass.
    pub tokens: String,
    pub best_rejected: Option<String>,
    pub reason: Option<String>,
}

/// The shipped v1 rules (or one ablation of them), explained.
pub fn ask_v1<'a>(ours: &'a Ours, query: &'a str) -> impl Fn(&[u32]) -> Asked + 'a {
    move |ids: &[u32]| {
        let sub = Subset::from_ids(&ours.index, ids.iter().copied());
        let req = SearchRequest {
            query,
            limit: Limit::DEFAULT,
            explain: true,
            directory: ours.directory.as_ref(),
        };
        let r = ours.index.search(&req, &sub);
        let e = r.explanation;
        Asked {
            results: r
                .results
                .into_iter()
                .map(|x| (x.connector.to_string(), x.name.to_string(), x.coverage))
                .collect(),
            tokens: e.as_ref().map_or_else(String::new, |e| {
                line(&e.tokens, |t| {
                    format!("{}:{:?}:df{}:{:.2}", t.token, t.role, t.df, t.mass_share)
                })
            }),
            best_rejected: e.as_ref().and_then(|e| {
                e.best_rejected
                    .as_ref()
                    .map(|b| format!("{} {:.2} missed {:?}", b.name, b.coverage, b.missed))
            }),
            reason: e.and_then(|e| e.reason),
        }
    }
}

/// The v2 pipeline under its rules, explained.
pub fn ask_v2<'a>(v2: &'a V2, query: &'a str) -> impl Fn(&[u32]) -> Asked + 'a {
    use floorgate::rank::v2;
    move |ids: &[u32]| {
        let visible = v2::Visible::from_ids(&v2.index, ids.iter().copied());
        let req = v2::Request {
            directory: v2.directory.as_deref(),
            rules: v2.rules,
            explain: true,
            ..v2::Request::new(query)
        };
        let r = v2::search(&v2.index, &visible, &req);
        let e = r.explanation;
        Asked {
            results: r
                .results
                .into_iter()
                .map(|x| (x.connector.to_string(), x.name.to_string(), x.coverage))
                .collect(),
            tokens: e.as_ref().map_or_else(String::new, |e| {
                line(&e.tokens, |t| {
                    let tail = if t.tail { "/tail" } else { "" };
                    format!(
                        "{}:{:?}{tail}:df{}:{:.2}",
                        t.term, t.role, t.df, t.mass_share
                    )
                })
            }),
            best_rejected: e.as_ref().and_then(|e| {
                e.best_rejected.as_ref().map(|b| {
                    format!(
                        "{} {:.2} {:?} missed {:?}",
                        b.name, b.coverage, b.gate, b.missed
                    )
                })
            }),
            reason: e.and_then(|e| e.reason),
        }
    }
}

/// Prints every miss (present), every answer with the right tools removed, and every wrong
/// answer (absent) of the ranker `ask_for` builds; each miss says whether `baseline` (BM25,
/// when built with it) has a right tool in its top 5 on the same pool.
pub fn show_failures<'a, F: Fn(&[u32]) -> Asked + 'a>(
    ask_for: impl Fn(&'a str) -> F,
    cat: &Catalog,
    queries: &'a [EvalQuery],
    pools: &[(Option<Vec<String>>, Vec<String>)],
    answers: bool,
    baseline: Option<&dyn Ranker>,
) {
    for (q, (present, absent)) in queries.iter().zip(pools) {
        let ask = ask_for(&q.query);
        let fam = family(&q.connector);
        let gold = |name: &str, conn: &str| q.is_gold(&fam, name, conn);
        if let (Some(p), false) = (present, q.unanswerable) {
            let r = ask(&cat.ids(p));
            let hit = r.results.iter().find(|(c, n, _)| gold(n, c));
            if let (Some((c, n, _)), Some(e)) = (hit, q.expected_destroys) {
                if name_destroys(n) != e {
                    println!(
                        "OPPOSITE [{}] {:?} gold={} -> {c}/{n}",
                        q.set, q.query, q.connector
                    );
                }
            }
            if let (Some(_), true) = (hit, answers) {
                let top: Vec<String> = r
                    .results
                    .iter()
                    .map(|(c, n, _)| format!("{c}/{n}"))
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
                let beside = baseline.map_or(String::new(), |b| {
                    let found = b.rank(&q.query, &cat.ids(p));
                    let hit = found.iter().take(5).any(|(n, c)| gold(n, c));
                    format!(" {}={}", b.label(), if hit { "hit" } else { "miss" })
                });
                println!(
                    "MISS [{}] {:?} gold={}/{:?}{beside}",
                    q.set, q.query, q.connector, q.tools
                );
                let top: Vec<String> = r
                    .results
                    .iter()
                    .take(3)
                    .map(|(c, n, cov)| format!("{c}/{n} {cov:.2}"))
                    .collect();
                println!("  results: {}", top.join("; "));
                println!("  tokens: {}", r.tokens);
                if let Some(b) = &r.best_rejected {
                    println!("  best rejected: {b}");
                }
                if let Some(reason) = &r.reason {
                    println!("  reason: {reason}");
                }
            }
        }
        // The right tools removed, the rest of their product kept: any answer is a wrong tool.
        if let Some(ids) = present.as_ref().and_then(|p| cat.ids_without_gold(q, p)) {
            let r = ask(&ids);
            if let Some((c, n, cov)) = r.results.first() {
                println!(
                    "NO-GOLD-ANSWERED [{}] {:?} gold={}/{:?} -> {c}/{n} cov {cov:.2}",
                    q.set, q.query, q.connector, q.tools
                );
                println!("  tokens: {}", r.tokens);
            }
        }
        let r = ask(&cat.ids(absent));
        if let Some((c, n, cov)) = r.results.first() {
            println!(
                "WRONG [{}] {:?} gold={} np={} -> {c}/{n} cov {cov:.2}",
                q.set, q.query, q.connector, q.no_platform
            );
            println!("  tokens: {}", r.tokens);
        }
    }
}

/// Each item shown, space-separated.
fn line<T>(items: &[T], show: impl Fn(&T) -> String) -> String {
    items.iter().map(show).collect::<Vec<_>>().join(" ")
}
