//! `floorgate eval`: the evaluation protocol of the public data's README, in one run.
//!
//! Pools: the query's gold connector plus `--others` connectors drawn with a recorded seed
//! (present), and the same pool without the gold connector (absent: any result is a wrong
//! tool). Every ranker sees the same pools and queries, so its rows are comparable.

mod ablations;
mod failures;
mod live;
mod loading;
mod measures;
mod pools;
mod rankers;
mod report;
mod vendor;

use super::args::Args;
use ablations::{ablations, v2_variants};
use failures::{ask_v1, ask_v2, show_failures};
use loading::{load_labels, load_queries, Catalog, EvalQuery};
use measures::measure;
use pools::{draw_pools, guessed_names, Rng};
use rankers::{systems, Ours, Ranker, V2};

const HELP: &str = "\
usage: floorgate eval --data DIR [--seed N] [--others N] [--guessed N] [--ablation] [--json]
       floorgate eval --catalog real_tools.jsonl --queries dust_connector_queries.jsonl [...]

  --data DIR        a folder with real_tools.jsonl, dust_connector_queries.jsonl and (optional)
                    vendor_evals.jsonl
  --livemcp         also measure LiveMCPBench (DIR/livemcptool_tools.jsonl and
                    livemcpbench_tasks.jsonl): long tasks over its own pool, every system
  --sets LIST       the sets to measure, of dust, guessed, vendor (default all; the pools of
                    each stay those of a full run)
  --vendor FILE     JSONL {\"query\", \"connector\", \"relevant_tools\"}: tool-level requests
                    (default DIR/vendor_evals.jsonl, skipped with a note when absent)
  --catalog FILE    tool rows (JSONL); rows with \"preferred\": true are the catalog and the directory
  --queries FILE    JSONL {\"query\", \"connector\", \"cross_server_no_platform_named\"?}
  --seed N          seed of the pool draws and guessed names (default 7)
  --seeds LIST      run several seeds (`4,5,6` or `4-12`, mixed) and print each seed's shipped
                    rows (every ablation's too with --ablation) and their mean; for held-out checks
  --others N        connectors added to the gold one in each pool (default 8)
  --guessed N       guessed-name queries per connector (default 3; 0 to skip)
  --ablation        also report the shipped rules with each refinement turned off
  --rules LIST      with --ablation: only these v2 rules (their registry names, comma-separated),
                    and not the first ranker's ablations: a quick A/B of one rule
  --json            print the figures as one JSON object instead of a table
  --failures        list every miss, wrong tool and opposite-action hit of the shipped ranker (v2)
                    (every set, vendor requests too), with its tokens and reason, and each
                    miss marked with whether BM25 found it (when built with bm25-baseline)
  --failures-of L   the same for the ablation labelled L (as --ablation prints it): a v1
                    ablation, or a v2 rule variant (`v2 - head_mass`, `v2 + product_slot`)
  --answers         with --failures or --failures-of: also print every hit with its results
  --labels FILE     tool-level labels of the queries (JSONL {\"query\", \"connector\", \"tools\"});
                    adds t_hit5 (a correct tool in the top 5, of the queries some tool serves)
                    and t_wr1 (a non-empty answer led by a tool that does not do what was asked),
                    and the labelled tools are the ones removed for the missing-tool figure

Every run ends with a summary: per set and system (mean of the seeds) hit@1, hit@5, MRR@5,
wr_nam (product absent, request names it: answered, so wrong), an_unn (product absent, request
names none: answered), an_mis (product present, its gold tools removed: answered) and h5/bm25.
";

/// The sets `--sets` can pick, in the order they are drawn and reported.
const SETS: [&str; 3] = ["dust", "guessed", "vendor"];

/// `name_anchor,head_mass`: v2 rules by their registry names, each known.
fn parse_rules(list: &str) -> Result<Vec<&'static str>, String> {
    list.split(',')
        .map(str::trim)
        .map(|name| {
            floorgate::rank::v2::REGISTRY
                .iter()
                .map(|(_, known, _)| *known)
                .find(|known| *known == name)
                .ok_or_else(|| format!("--rules: no v2 rule is named `{name}`"))
        })
        .collect()
}

/// `dust,vendor`: the named sets, each known.
fn parse_sets(list: &str) -> Result<Vec<&'static str>, String> {
    list.split(',')
        .map(str::trim)
        .map(|s| {
            SETS.iter()
                .find(|k| **k == s)
                .copied()
                .ok_or_else(|| format!("--sets: `{s}` is not a set (one of {})", SETS.join(", ")))
        })
        .collect()
}

/// `4,5,6`, `4-12`, or both mixed: the seeds in the order given.
fn parse_seeds(list: &str) -> Result<Vec<u64>, String> {
    let bad = |p: &str| format!("--seeds: `{p}` is not a seed or a range like 4-12");
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u64, u64) = (
                    a.trim().parse().map_err(|_| bad(part))?,
                    b.trim().parse().map_err(|_| bad(part))?,
                );
                if a > b {
                    return Err(bad(part));
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad(part))?),
        }
    }
    Ok(out)
}

pub fn run(mut args: Args) -> Result<(), String> {
    if args.help() {
        print!("{HELP}");
        return Ok(());
    }
    let data = args.value("--data")?;
    let join = |f: &str| {
        data.as_ref()
            .map(|d| format!("{}/{f}", d.trim_end_matches('/')))
    };
    let catalog = args
        .value("--catalog")?
        .or_else(|| join(loading::CATALOG_FILE));
    let queries = args
        .value("--queries")?
        .or_else(|| join("dust_connector_queries.jsonl"));
    let seed: u64 = args.parsed("--seed")?.unwrap_or(7);
    let seeds = args
        .value("--seeds")?
        .map(|l| parse_seeds(&l))
        .transpose()?;
    let others: usize = args.parsed("--others")?.unwrap_or(8);
    let guessed: usize = args.parsed("--guessed")?.unwrap_or(3);
    let ablation = args.switch("--ablation");
    let only_rules = args
        .value("--rules")?
        .map(|l| parse_rules(&l))
        .transpose()?;
    let json = args.switch("--json");
    let failures = args.switch("--failures");
    let failures_of: Option<String> = args.value("--failures-of")?;
    let answers = args.switch("--answers");
    let labels: Option<String> = args.value("--labels")?;
    let vendor_file: Option<String> = args.value("--vendor")?;
    let livemcp = args.switch("--livemcp");
    let wanted = match args.value("--sets")? {
        Some(list) => parse_sets(&list)?,
        None => SETS.to_vec(),
    };
    let pos = args.positionals()?;
    if !pos.is_empty() {
        return Err(format!("unexpected argument `{}`", pos[0]));
    }
    let catalog = catalog.ok_or("--catalog FILE (or --data DIR) is required")?;
    let cat = Catalog::load(&catalog)?;

    // Every set is drawn in the same order whichever are measured, so `--sets` leaves the
    // pools (and figures) of the others as a full run draws them.
    let dust = match &queries {
        Some(path) if wanted.contains(&"dust") => Some(load_queries(path)?),
        Some(path) => load_queries(path).ok(),
        None => None,
    };
    let mut dust = dust;
    if let Some(path) = &labels {
        let qs = dust
            .as_mut()
            .ok_or("--labels needs --queries (or --data)")?;
        load_labels(path, qs, &cat)?;
    }
    let vendor_set = match (vendor_file, join("vendor_evals.jsonl")) {
        _ if !wanted.contains(&"vendor") => None,
        (Some(path), _) => Some(vendor::load(&path, &cat)?),
        (None, Some(path)) if std::path::Path::new(&path).exists() => {
            Some(vendor::load(&path, &cat)?)
        }
        (None, path) => {
            let why = path.map_or("no --vendor FILE or --data DIR".into(), |p| {
                format!("{p} not found")
            });
            eprintln!("floorgate eval: vendor set skipped: {why}");
            None
        }
    };
    // The query sets of one seed and their pools (the guessed names depend on the seed).
    let draw = |seed: u64| {
        let mut rng = Rng::new(seed);
        let mut sets: Vec<(&'static str, Vec<EvalQuery>)> = Vec::new();
        if let Some(d) = &dust {
            sets.push(("dust", d.clone()));
        }
        if guessed > 0 {
            sets.push(("guessed", guessed_names(&cat, guessed, &mut rng)));
        }
        if let Some(v) = &vendor_set {
            sets.push(("vendor", v.clone()));
        }
        let pools: Vec<_> = sets
            .iter()
            .map(|(_, qs)| draw_pools(&cat, qs, others, &mut rng))
            .collect();
        sets.into_iter()
            .zip(pools)
            .filter(|((set, _), _)| wanted.contains(set))
            .collect::<Vec<_>>()
    };

    if failures || failures_of.is_some() {
        // `--failures` shows the engine the gateway ships (v2); `--failures-of` an ablation.
        #[cfg(feature = "bm25-baseline")]
        let bm25 = rankers::Bm25 { cat: &cat };
        #[cfg(feature = "bm25-baseline")]
        let baseline: Option<&dyn Ranker> = Some(&bm25);
        #[cfg(not(feature = "bm25-baseline"))]
        let baseline: Option<&dyn Ranker> = None;
        match &failures_of {
            None => {
                let v2 = V2::new("v2", &cat, floorgate::rank::v2::Rules::SHIPPED, true);
                for ((_, qs), pools) in draw(seed) {
                    show_failures(|q| ask_v2(&v2, q), &cat, &qs, &pools, answers, baseline);
                }
            }
            Some(label) if label.starts_with("v2 ") => {
                let rules = v2_variants()
                    .find(|(_, variant, _)| variant == label)
                    .map(|(_, _, rules)| rules)
                    .ok_or_else(|| {
                        format!(
                            "--failures-of: no v2 rule variant is labelled `{label}` (`v2 - NAME` \
                             for a shipped rule, `v2 + NAME` for one not shipped)"
                        )
                    })?;
                let v2 = V2::new(label, &cat, rules, true);
                for ((_, qs), pools) in draw(seed) {
                    show_failures(|q| ask_v2(&v2, q), &cat, &qs, &pools, answers, baseline);
                }
            }
            Some(label) => {
                let rules = ablations()
                    .into_iter()
                    .find(|(l, _)| l == label)
                    .map(|(_, r)| r)
                    .ok_or_else(|| format!("--failures-of: no ablation is labelled `{label}`"))?;
                let ours = Ours::new(label, &cat, rules, true);
                for ((_, qs), pools) in draw(seed) {
                    show_failures(|q| ask_v1(&ours, q), &cat, &qs, &pools, answers, baseline);
                }
            }
        }
        return Ok(());
    }

    let systems = systems(&cat);
    let variants: Vec<Box<dyn Ranker>> = if ablation {
        let v1 = ablations()
            .into_iter()
            .filter(|_| only_rules.is_none())
            .map(|(label, rules)| Box::new(Ours::new(label, &cat, rules, true)) as Box<dyn Ranker>);
        let base = V2::new("v2", &cat, floorgate::rank::v2::Rules::SHIPPED, true);
        let v2 = v2_variants()
            .filter(|(name, _, _)| only_rules.as_ref().is_none_or(|only| only.contains(name)))
            .map(move |(_, label, rules)| Box::new(base.variant(&label, rules)) as Box<dyn Ranker>);
        v1.chain(v2).collect()
    } else {
        Vec::new()
    };
    let rankers: Vec<(&dyn Ranker, bool)> = systems
        .iter()
        .map(|r| (r.as_ref(), true))
        .chain(variants.iter().map(|r| (r.as_ref(), false)))
        .collect();
    let seed_list = seeds.clone().unwrap_or_else(|| vec![seed]);
    let mut rows = Vec::new();
    for &sd in &seed_list {
        for ((set, qs), pools) in draw(sd) {
            for &(r, system) in &rankers {
                rows.push(report::Row {
                    seed: sd,
                    set,
                    label: r.label(),
                    system,
                    baseline: r.baseline(),
                    figures: measure(r, &cat, &qs, &pools),
                });
            }
        }
    }
    let summary = report::summarize(&rows);
    if json {
        let mut out = serde_json::json!({
            "seeds": seed_list,
            "others": others,
            "guessed_per_connector": guessed,
            "rows": rows,
            "summary": summary,
        });
        if seeds.is_none() {
            out["seed"] = seed.into();
        }
        println!("{out}");
        return Ok(());
    }
    if seeds.is_some() {
        report::print_per_seed(&rows);
    } else {
        println!(
            "floorgate eval: seed {seed}, pool = gold connector + {others} others, catalog {} tools / {} connectors",
            cat.docs.len(),
            cat.connectors.len()
        );
        report::print_detail(&rows);
    }
    println!();
    report::print_summary(&rows, &summary, &seed_list);
    if livemcp {
        let dir = data.as_deref().ok_or("--livemcp needs --data DIR")?;
        live::print(&live::measure(dir)?);
    }
    #[cfg(not(feature = "bm25-baseline"))]
    println!("BM25 baseline: not built; run with `--features bm25-baseline`.");
    Ok(())
}
