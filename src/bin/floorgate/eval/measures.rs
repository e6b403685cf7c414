//! The figures of one ranker on one set's pools: hit@1/5, MRR@5, wrong and empty answers,
//! tool-level hits and the missing-tool pool.

use super::loading::{family, Catalog, EvalQuery};
use super::rankers::Ranker;
use floorgate::rank::name_destroys;

#[derive(Default, Clone, serde::Serialize)]
pub struct Figures {
    pub present: usize,
    pub hit1: f64,
    pub hit5: f64,
    pub mrr5: f64,
    pub nonempty: f64,
    pub absent: usize,
    pub wrong: f64,
    pub absent_no_platform: usize,
    pub wrong_no_platform: f64,
    /// Of `absent`: queries whose product the catalog (so the directory) offers.
    pub absent_offered: usize,
    pub wrong_offered: f64,
    /// Of `present`: connector-level hits whose first gold tool destroys where the set's
    /// expected tool does not, or the reverse (`remove my reaction` → `add_reaction`).
    pub opposite: f64,
    /// Of `present`: queries with a tool-level label (`--labels`).
    pub labelled: usize,
    /// Of those with some correct tool: a correct tool in the top 5.
    pub tool_hit5: f64,
    /// Of `labelled`: a non-empty answer whose first result is not a correct tool (the
    /// confidently wrong tool inside the right product, which `wrong` cannot see).
    pub tool_wrong: f64,
    /// Queries left out of `present` because the catalog has none of their gold tools.
    pub unanswerable: usize,
    /// Gold tool names the catalog lacks under their query's product.
    pub unknown_names: usize,
    /// Present pools with the gold tools removed (the rest of their product kept): queries
    /// with tool-level gold or labelled correct tools.
    pub missing: usize,
    /// Of `missing`: any answer, where no right tool is left.
    pub missing_answered: f64,
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

pub fn measure(
    r: &dyn Ranker,
    cat: &Catalog,
    queries: &[EvalQuery],
    pools: &[(Option<Vec<String>>, Vec<String>)],
) -> Figures {
    let (mut np, mut h1, mut h5, mut rr, mut ne) = (0, 0, 0, 0.0, 0);
    let (mut na, mut wa, mut nn, mut wn, mut no, mut wo) = (0, 0, 0, 0, 0, 0);
    let mut opposite = 0;
    let (mut nl, mut nt, mut th5, mut tw) = (0, 0, 0, 0);
    let (mut nu, mut nm, mut am) = (0, 0, 0);
    let unknown_names = queries.iter().map(|q| q.unknown_names).sum();
    for (q, (present, absent)) in queries.iter().zip(pools) {
        if let Some(ids) = present.as_ref().and_then(|p| cat.ids_without_gold(q, p)) {
            nm += 1;
            am += usize::from(!r.rank(&q.query, &ids).is_empty());
        }
        if q.unanswerable {
            nu += 1;
        } else if let Some(p) = present {
            let res = r.rank(&q.query, &cat.ids(p));
            let fam = family(&q.connector);
            if let Some(correct) = &q.correct {
                let ok =
                    |(name, conn): &(String, String)| correct.contains(name) && fam.contains(conn);
                nl += 1;
                tw += usize::from(res.first().is_some_and(|r| !ok(r)));
                if !correct.is_empty() {
                    nt += 1;
                    th5 += usize::from(res.iter().take(5).any(ok));
                }
            }
            np += 1;
            ne += usize::from(!res.is_empty());
            let gold = |(name, conn): &(String, String)| q.is_gold(&fam, name, conn);
            if let Some(pos) = res.iter().take(5).position(gold) {
                h1 += usize::from(pos == 0);
                h5 += 1;
                rr += 1.0 / (pos + 1) as f64;
                if let Some(e) = q.expected_destroys {
                    opposite += usize::from(name_destroys(&res[pos].0) != e);
                }
            }
        }
        let wrong = !r.rank(&q.query, &cat.ids(absent)).is_empty();
        if q.no_platform {
            nn += 1;
            wn += usize::from(wrong);
        } else {
            na += 1;
            wa += usize::from(wrong);
            if present.is_some() {
                no += 1;
                wo += usize::from(wrong);
            }
        }
    }
    Figures {
        present: np,
        hit1: ratio(h1, np),
        hit5: ratio(h5, np),
        mrr5: if np == 0 { 0.0 } else { rr / np as f64 },
        nonempty: ratio(ne, np),
        absent: na,
        wrong: ratio(wa, na),
        absent_no_platform: nn,
        wrong_no_platform: ratio(wn, nn),
        absent_offered: no,
        wrong_offered: ratio(wo, no),
        opposite: ratio(opposite, np),
        labelled: nl,
        tool_hit5: ratio(th5, nt),
        tool_wrong: ratio(tw, nl),
        unanswerable: nu,
        unknown_names,
        missing: nm,
        missing_answered: ratio(am, nm),
    }
}
