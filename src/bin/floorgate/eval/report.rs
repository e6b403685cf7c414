//! What `floorgate eval` prints: per-seed rows, the one-seed detail, and the summary (one row
//! per set and system, mean of the seeds).

use super::measures::Figures;

/// One ranker's figures on one set's pools of one seed.
#[derive(serde::Serialize)]
pub struct Row {
    pub seed: u64,
    pub set: &'static str,
    #[serde(rename = "rules")]
    pub label: String,
    /// One of `systems()` (the summary's rows), not an ablation.
    #[serde(skip)]
    pub system: bool,
    #[serde(skip)]
    pub baseline: bool,
    pub figures: Figures,
}

/// A (set, system) over the seeds: each figure the mean of the seeds that have queries for
/// it; `None` when none has.
#[derive(serde::Serialize)]
pub struct Summary {
    pub set: &'static str,
    pub system: String,
    pub hit1: Option<f64>,
    pub hit5: Option<f64>,
    pub mrr5: Option<f64>,
    /// Absent pools of requests that name their product: any answer is wrong.
    pub wrong_named: Option<f64>,
    /// Absent pools of requests that name none: another product's tool may be fair.
    pub answered_unnamed: Option<f64>,
    /// Gold tools removed, the rest of their product kept.
    pub missing_answered: Option<f64>,
    /// hit@5 over the baseline's hit@5 on the same pools (BM25, when built in).
    pub hit5_vs_bm25: Option<f64>,
}

fn mean(xs: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = xs.flatten().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The rows kept, grouped by (set, label) in first-seen order.
fn groups(rows: &[Row], keep: impl Fn(&Row) -> bool) -> Vec<Vec<&Row>> {
    let mut out: Vec<Vec<&Row>> = Vec::new();
    for r in rows.iter().filter(|r| keep(r)) {
        match out
            .iter_mut()
            .find(|g| g[0].set == r.set && g[0].label == r.label)
        {
            Some(g) => g.push(r),
            None => out.push(vec![r]),
        }
    }
    out
}

pub fn summarize(rows: &[Row]) -> Vec<Summary> {
    let mut out: Vec<Summary> = groups(rows, |r| r.system)
        .into_iter()
        .map(|g| {
            let f = |n: fn(&Figures) -> usize, x: fn(&Figures) -> f64| {
                mean(g.iter().map(|r| (n(&r.figures) > 0).then(|| x(&r.figures))))
            };
            Summary {
                set: g[0].set,
                system: g[0].label.clone(),
                hit1: f(|f| f.present, |f| f.hit1),
                hit5: f(|f| f.present, |f| f.hit5),
                mrr5: f(|f| f.present, |f| f.mrr5),
                wrong_named: f(|f| f.absent, |f| f.wrong),
                answered_unnamed: f(|f| f.absent_no_platform, |f| f.wrong_no_platform),
                missing_answered: f(|f| f.missing, |f| f.missing_answered),
                hit5_vs_bm25: None,
            }
        })
        .collect();
    let base: Vec<(&'static str, String)> = rows
        .iter()
        .filter(|r| r.baseline)
        .map(|r| (r.set, r.label.clone()))
        .collect();
    for i in 0..out.len() {
        let b = out
            .iter()
            .find(|s| s.set == out[i].set && base.contains(&(s.set, s.system.clone())))
            .and_then(|s| s.hit5);
        let own = out[i].hit5;
        let is_base = base.contains(&(out[i].set, out[i].system.clone()));
        out[i].hit5_vs_bm25 = match (own, b) {
            (Some(h), Some(b)) if !is_base && b > 0.0 => Some(h / b),
            _ => None,
        };
    }
    out
}

fn cell(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.3}"))
}

pub fn print_summary(rows: &[Row], summary: &[Summary], seeds: &[u64]) {
    let list: Vec<String> = seeds.iter().map(u64::to_string).collect();
    println!("summary, mean of seeds {}:", list.join(","));
    println!(
        "{:<8} {:<24} {:>6} {:>6} {:>6} | {:>6} {:>6} | {:>6} | {:>7}",
        "set", "system", "hit@1", "hit@5", "MRR@5", "wr_nam", "an_unn", "an_mis", "h5/bm25"
    );
    for s in summary {
        println!(
            "{:<8} {:<24} {:>6} {:>6} {:>6} | {:>6} {:>6} | {:>6} | {:>7}",
            s.set,
            s.system,
            cell(s.hit1),
            cell(s.hit5),
            cell(s.mrr5),
            cell(s.wrong_named),
            cell(s.answered_unnamed),
            cell(s.missing_answered),
            cell(s.hit5_vs_bm25)
        );
    }
    println!("wr_nam: absent product, request names it: share answered (all wrong). an_unn: absent product, request names none: share answered. an_mis: product present, its gold tools removed: share answered. h5/bm25: hit@5 over BM25's on the same pools.");
    let mut seen: Vec<&str> = Vec::new();
    for r in rows {
        if seen.contains(&r.set) {
            continue;
        }
        seen.push(r.set);
        let f = &r.figures;
        println!(
            "  {}: seed {}, {} present ({} unanswerable: no gold tool in the catalog; {} gold names not in the catalog); absent {} naming the product, {} naming none; {} with gold tools removed",
            r.set, r.seed, f.present, f.unanswerable, f.unknown_names, f.absent, f.absent_no_platform, f.missing
        );
    }
}

/// The shipped rules (and ablations) per seed and their mean, for held-out checks.
pub fn print_per_seed(rows: &[Row]) {
    let shown = |f: &Figures| {
        [
            f.hit1,
            f.hit5,
            f.mrr5,
            f.opposite,
            f.wrong,
            f.tool_hit5,
            f.tool_wrong,
            f.missing_answered,
        ]
    };
    let row = |first: &str, set: &str, label: &str, f: [f64; 8]| {
        println!(
            "{first:>4} {set:<8} {label:<32} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3}",
            f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]
        )
    };
    println!(
        "{:>4} {:<8} {:<32} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
        "seed",
        "set",
        "rules",
        "hit@1",
        "hit@5",
        "MRR@5",
        "opp",
        "wrong",
        "t_hit5",
        "t_wr1",
        "an_mis"
    );
    // The shipped rules (with `--ablation`, each refinement turned off too), not the baselines.
    let ours = |r: &Row| {
        (r.label.starts_with("shipped") || r.label.starts_with("v2"))
            && r.label != "shipped, no directory"
    };
    for r in rows.iter().filter(|r| ours(r)) {
        row(&r.seed.to_string(), r.set, &r.label, shown(&r.figures));
    }
    for g in groups(rows, ours) {
        let mut m = [0.0; 8];
        for r in &g {
            for (m, x) in m.iter_mut().zip(shown(&r.figures)) {
                *m += x / g.len() as f64;
            }
        }
        row("mean", g[0].set, &g[0].label, m);
    }
}

/// Every ranker's figures on one seed, with the counts behind them.
pub fn print_detail(rows: &[Row]) {
    println!(
        "{:<8} {:<32} {:>5} {:>6} {:>6} {:>6} {:>6} {:>6} | {:>5} {:>6} | {:>5} {:>6} | {:>5} {:>6} | {:>5} {:>6} {:>6} | {:>5} {:>6} | {:>5}",
        "set",
        "rules",
        "n",
        "hit@1",
        "hit@5",
        "MRR@5",
        "nonemp",
        "opp",
        "n_abs",
        "wrong",
        "n_off",
        "wr_off",
        "n_np",
        "wr_np",
        "n_lab",
        "t_hit5",
        "t_wr1",
        "n_mis",
        "an_mis",
        "n_una"
    );
    for r in rows {
        let f = &r.figures;
        println!(
            "{:<8} {:<32} {:>5} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} | {:>5} {:>6.3} | {:>5} {:>6.3} | {:>5} {:>6.3} | {:>5} {:>6.3} {:>6.3} | {:>5} {:>6.3} | {:>5}",
            r.set,
            r.label,
            f.present,
            f.hit1,
            f.hit5,
            f.mrr5,
            f.nonempty,
            f.opposite,
            f.absent,
            f.wrong,
            f.absent_offered,
            f.wrong_offered,
            f.absent_no_platform,
            f.wrong_no_platform,
            f.labelled,
            f.tool_hit5,
            f.tool_wrong,
            f.missing,
            f.missing_answered,
            f.unanswerable
        );
    }
    println!("Query labels mapped to catalog connectors: Google Drive = Drive + Docs + Sheets + Slides; OneDrive/SharePoint = OneDrive; Slack (bot) = Slack; Outlook Calendar = Outlook.");
    println!("opp: present queries whose hit does the opposite of the set's expected tool (one destroys data, the other not); counted in hit@5 as the protocol says.");
    println!("n_lab/t_hit5/t_wr1 (with --labels): present queries with a tool-level label; a correct tool in the top 5 (of those some tool serves); a non-empty answer led by a tool that does not do what was asked.");
    println!("n_off/wr_off: the part of n_abs whose product the catalog offers (the rest name products no directory row has).");
    println!("n_abs/wrong: absent pools of queries that name a product; n_np/wr_np: queries that name none (cross_server_no_platform_named, a guessed name without the product, a vendor request without its product's name), reported apart.");
    println!("n_mis/an_mis: present pools with the gold tools removed (guessed, vendor, dust with --labels); share answered. n_una: tool-level queries none of whose gold tools the catalog has, left out of n.");
}
