//! What a seed draws: the guessed-name queries and each query's pools (gold connector plus
//! others, and the same without it), from one small seedable generator.

use super::loading::{family, Catalog, EvalQuery};

/// splitmix64: small, seedable, identical everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn render(tokens: &[String], style: usize) -> String {
    match style {
        0 => tokens.join("_"),
        1 => tokens.join("-"),
        _ => {
            let mut s = String::new();
            for (i, t) in tokens.iter().enumerate() {
                let mut c = t.chars();
                if let Some(f) = c.next() {
                    if i == 0 {
                        s.push(f);
                    } else {
                        s.extend(f.to_uppercase());
                    }
                    s.push_str(c.as_str());
                }
            }
            s
        }
    }
}

/// Guessed tool names built from real ones: reorder or drop a token, switch the naming style,
/// insert the product name (`cal_get_all_schedules` → `list_all_cal_com_schedules`).
pub fn guessed_names(cat: &Catalog, per_connector: usize, rng: &mut Rng) -> Vec<EvalQuery> {
    use floorgate::tokenize::tokenize;
    let mut out = Vec::new();
    for (connector, ids) in &cat.by_connector {
        let label = tokenize(connector);
        for _ in 0..per_connector.min(ids.len()) {
            let doc = &cat.docs[ids[rng.below(ids.len())] as usize];
            let mut toks: Vec<String> = tokenize(&doc.name)
                .into_iter()
                .filter(|t| !label.contains(t))
                .collect();
            if toks.is_empty() {
                continue;
            }
            match rng.below(4) {
                0 if toks.len() >= 3 => {
                    let i = 1 + rng.below(toks.len() - 1);
                    toks.remove(i);
                }
                1 if toks.len() >= 2 => {
                    let i = rng.below(toks.len() - 1);
                    toks.swap(i, i + 1);
                }
                _ => {}
            }
            // Most guesses carry the product name; some do not.
            if rng.below(4) != 0 {
                let at = 1.min(toks.len());
                for (k, t) in label.iter().enumerate() {
                    toks.insert(at + k, t.clone());
                }
            }
            let query = render(&toks, rng.below(3));
            let names_product = label.iter().all(|t| toks.contains(t));
            out.push(EvalQuery {
                set: "guessed",
                query,
                connector: connector.clone(),
                tools: Some(vec![doc.name.to_string()]),
                unanswerable: false,
                unknown_names: 0,
                no_platform: !names_product,
                expected_destroys: None,
                correct: None,
            });
        }
    }
    out
}

/// Pools per query: gold connector (when in the catalog) + `others`, and the same without it.
pub fn draw_pools(
    cat: &Catalog,
    queries: &[EvalQuery],
    others: usize,
    rng: &mut Rng,
) -> Vec<(Option<Vec<String>>, Vec<String>)> {
    queries
        .iter()
        .map(|q| {
            let mut pick: Vec<String> = Vec::new();
            let fam = family(&q.connector);
            let candidates: Vec<&String> =
                cat.connectors.iter().filter(|c| !fam.contains(c)).collect();
            let want = others.min(candidates.len());
            while pick.len() < want {
                let c = candidates[rng.below(candidates.len())];
                if !pick.contains(c) {
                    pick.push(c.clone());
                }
            }
            let mut p: Vec<String> = fam
                .into_iter()
                .filter(|c| cat.by_connector.contains_key(c))
                .collect();
            let present = (!p.is_empty()).then(|| {
                p.extend(pick.iter().cloned());
                p
            });
            (present, pick)
        })
        .collect()
}
