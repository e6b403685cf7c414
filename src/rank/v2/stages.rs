//! Stages 2–5 of a search, each a function over a small struct: products named → the scorer's
//! record → mass → candidate scores → gates and order. `search` in `mod.rs` strings them
//! together; explanations are read from the same record the scores were summed from.

use super::index::{field, DocId, Index, Label};
use super::query::{Kind, QueryToken};
use super::{Action, Directory, Rule, Rules, Visible, FLOOR, LACKING_SHARE, TAIL_SHARE};
use serde::Serialize;

/// Field weights: what one matched term adds to a tool's score, before its mass scales it.
/// A name token with the query word's stem; one spelled exactly as the word adds
/// [`NAME_SURFACE_BONUS`] (so `settings` prefers `list_settings` to `get_setting`).
pub const NAME_STEM_WEIGHT: u32 = 4;
pub const NAME_SURFACE_BONUS: u32 = 1;
pub const NAME_PREFIX_WEIGHT: u32 = 3;
pub const LABEL_WEIGHT: u32 = 2;
pub const PARAM_WEIGHT: u32 = 2;
pub const PROSE_WEIGHT: u32 = 1;

/// w(t, d) for the fields a term matched in (a name counts once: exact, else prefix). With rule
/// `StrongestField` the strongest field alone, else (SPEC §7) the fields summed.
pub fn field_weight(bits: u8, rules: Rules) -> u32 {
    let part = |f: u8, w: u32| if bits & f != 0 { w } else { 0 };
    let name = if bits & field::NAME_EXACT != 0 {
        NAME_STEM_WEIGHT + part(field::NAME_SURFACE, NAME_SURFACE_BONUS)
    } else if bits & field::NAME_PREFIX != 0 {
        NAME_PREFIX_WEIGHT
    } else {
        0
    };
    if rules.has(Rule::StrongestField) {
        return name
            .max(part(field::LABEL, LABEL_WEIGHT))
            .max(part(field::PARAM, PARAM_WEIGHT))
            .max(part(field::PROSE, PROSE_WEIGHT));
    }
    name + part(field::LABEL, LABEL_WEIGHT)
        + part(field::PARAM, PARAM_WEIGHT)
        + part(field::PROSE, PROSE_WEIGHT)
}

/// The products a query names: connectors of the caller's pool, and connectors of the public
/// directory that the caller cannot see.
#[derive(Clone, Debug, Default)]
pub struct Products {
    /// Connector ids (of the index) the caller sees and the query names.
    pub visible: Vec<u32>,
    /// Directory labels the query names that no visible connector has.
    pub hidden: Vec<String>,
    /// Terms of tokens that may name a product, visible or in the directory, as written here
    /// ([`may_name`]): the mass stage gives them the `product_name` role.
    pub name_terms: Vec<String>,
}

/// What a search sees: the index, the caller's visible part of it, and the public directory.
#[derive(Clone, Copy)]
pub struct Pool<'a> {
    pub index: &'a Index,
    pub visible: &'a Visible,
    pub directory: Option<&'a Directory>,
}

/// Whether the query's token `at` may name `label`'s product: it spells a word of the label,
/// and where the label is made of ordinary words, it is written as a name or stands in the
/// label's phrase (`database server`). The directory decides what is ordinary when it knows
/// the label: it has more products' tools to tell by.
pub fn may_name(
    tokens: &[QueryToken],
    texts: &[&str],
    at: usize,
    label: &Label,
    directory: Option<&Directory>,
) -> bool {
    let ordinary = || {
        directory
            .and_then(|d| d.index.label_id(&label.text).map(|c| (d, c)))
            .map_or(label.ordinary, |(d, c)| {
                d.index.labels()[c as usize].ordinary
            })
    };
    !tokens[at].argument
        && label.spelled_by(texts[at])
        && (tokens[at].as_name || !ordinary() || label.in_phrase(texts, at))
}

/// Stage 2: which products the query names (`tokens`: every token of the query, values too —
/// `cal.com` is a product even when it looks like a dotted name — but never the name a naming
/// verb gives: `a page titled "Slack migration"` names no Slack). A label is named when every
/// word of it is spelled by a token (`closed` names no `Close`); an ordinary word's label only
/// by a token written as a name (`Label::ordinary`), which the directory decides when it knows
/// the label (it has more products' tools to tell an ordinary word by).
pub fn products(
    index: &Index,
    visible: &Visible,
    directory: Option<&Directory>,
    tokens: &[QueryToken],
) -> Products {
    let mut out = Products::default();
    let texts: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
    let may_name = |at: usize, label: &Label| may_name(tokens, &texts, at, label, directory);
    let named_in = |ix: &Index| -> Vec<u32> {
        let mut cands: Vec<u32> = tokens
            .iter()
            .flat_map(|t| ix.labels_with_part(&t.term).iter().copied())
            .collect();
        cands.sort_unstable();
        cands.dedup();
        let mut spelled: Vec<&str> = Vec::new();
        cands.retain(|&c| {
            let label = &ix.labels()[c as usize];
            spelled.clear();
            spelled.extend(
                tokens
                    .iter()
                    .enumerate()
                    .filter(|&(at, _)| may_name(at, label))
                    .map(|(_, t)| t.term.as_str()),
            );
            label.named_by(&spelled)
        });
        cands
    };
    let named_pool = named_in(index);
    let named_directory = directory.map_or(Vec::new(), |d| named_in(&d.index));
    // A token is a product's name where it may name a label and spells a whole word of it
    // (`google`, `teams`), or a piece of one (`monday` of `monday.com`) whose label the query
    // names in full: alone, `monday` is a weekday.
    // A camel-case part (`pager` of `PagerDuty`) counts only where the query names the label
    // whole (`PagerDuty` written as is).
    let names = |ix: &Index, named: &[u32], c: u32, at: usize| {
        let label = &ix.labels()[c as usize];
        may_name(at, label) && (label.word_spelled_whole(texts[at]) || named.contains(&c))
    };
    let names_whole = |ix: &Index, named: &[u32], c: u32, at: usize| {
        named.contains(&c) && may_name(at, &ix.labels()[c as usize])
    };
    let spells = |ix: &Index, named: &[u32], term: &str, at: usize, keep: &dyn Fn(u32) -> bool| {
        ix.labels_with_piece(term)
            .iter()
            .any(|&c| keep(c) && names(ix, named, c, at))
            || ix
                .labels_with_part(term)
                .iter()
                .any(|&c| keep(c) && names_whole(ix, named, c, at))
    };
    for (at, t) in tokens.iter().enumerate() {
        let of_pool = spells(index, &named_pool, &t.term, at, &|c| {
            visible.has_connector(c)
        });
        let of_directory = || {
            directory.is_some_and(|d| spells(&d.index, &named_directory, &t.term, at, &|_| true))
        };
        if (of_pool || of_directory()) && !out.name_terms.contains(&t.term) {
            out.name_terms.push(t.term.clone());
        }
    }
    out.visible = named_pool
        .into_iter()
        .filter(|&c| visible.has_connector(c))
        .collect();
    if let Some(dir) = directory {
        for c in named_directory {
            let label = &dir.index.labels()[c as usize];
            // A visible connector whose label holds the product's whole name (its own label, or
            // a tenant's `Slack internal bot`) is the caller's connection of it, named with it.
            let mut connected = false;
            for v in 0..index.labels().len() as u32 {
                if visible.has_connector(v) && index.labels()[v as usize].contains_words_of(label) {
                    connected = true;
                    if !out.visible.contains(&v) {
                        out.visible.push(v);
                    }
                }
            }
            if !connected {
                out.hidden.push(label.text.clone());
            }
        }
    }
    out
}

/// Stage 3: the scorer's record — per visible candidate and query term, the fields matched.
/// Scores, coverage, anchors and explanations are all read from it.
pub struct Record {
    pub terms: usize,
    pub cands: Vec<DocId>,
    /// `cands.len() × terms` field bits.
    pub bits: Vec<u8>,
    /// Per term: tools of the pool that cover it.
    pub df: Vec<u32>,
    /// Per term: the fields it matched in anywhere in the pool.
    pub pool_fields: Vec<u8>,
}

impl Record {
    pub fn bits_of(&self, cand: usize) -> &[u8] {
        &self.bits[cand * self.terms..(cand + 1) * self.terms]
    }
}

pub fn gather(index: &Index, visible: &Visible, terms: &[&str], surfaces: &[&str]) -> Record {
    SLOTS.with(|slots| {
        let mut slot = slots.take();
        // A tool's row in the record, u32::MAX while it has none; every entry is MAX between
        // calls, so only the rows set are reset, not the whole pool.
        if slot.len() < index.len() {
            slot.resize(index.len(), u32::MAX);
        }
        let rec = gather_into(&mut slot, index, visible, terms, surfaces);
        for &d in &rec.cands {
            slot[d as usize] = u32::MAX;
        }
        slots.set(slot);
        rec
    })
}

/// Notes that tool `d` has term `i` in field `f` (a new candidate gets its row).
#[inline(always)]
fn record_hit(rec: &mut Record, slot: &mut [u32], d: DocId, i: usize, f: u8) {
    let s = &mut slot[d as usize];
    if *s == u32::MAX {
        *s = rec.cands.len() as u32;
        rec.cands.push(d);
        rec.bits.resize(rec.bits.len() + rec.terms, 0);
    }
    let b = &mut rec.bits[*s as usize * rec.terms + i];
    if *b == 0 {
        rec.df[i] += 1;
    }
    *b |= f;
    rec.pool_fields[i] |= f;
}

/// Candidates a record has room for before it grows.
const CANDIDATES_RESERVED: usize = 512;

thread_local! {
    /// [`gather`]'s row table, kept between calls: filling one per query cost a pass over the
    /// whole pool (7% of a query at 1,000 tools).
    static SLOTS: std::cell::Cell<Vec<u32>> = const { std::cell::Cell::new(Vec::new()) };
}

fn gather_into(
    slot: &mut [u32],
    index: &Index,
    visible: &Visible,
    terms: &[&str],
    surfaces: &[&str],
) -> Record {
    // Room for the usual number of candidates, so the record rarely grows while gathering.
    let room = visible.len().min(CANDIDATES_RESERVED);
    let mut rec = Record {
        terms: terms.len(),
        cands: Vec::with_capacity(room),
        bits: Vec::with_capacity(room * terms.len()),
        df: vec![0; terms.len()],
        pool_fields: vec![0; terms.len()],
    };
    for (i, term) in terms.iter().enumerate() {
        let mut on_list = |list: &[DocId], f: u8| {
            for &d in list {
                if visible.contains(d) {
                    record_hit(&mut rec, slot, d, i, f);
                }
            }
        };
        index.for_each_list_in(term, u8::MAX, &mut on_list);
        if let Some(surface) = surfaces.get(i) {
            on_list(index.surface_list(surface), field::NAME_SURFACE);
        }
    }
    rec
}

/// Why a query word does or does not carry mass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A tool name, parameter name or label of the pool or the directory has it.
    Capability,
    /// A word of a connector label (of the pool or the directory): it keeps its mass even
    /// when nothing in the pool covers it, so a request for an absent product stays empty.
    ProductName,
    /// Known only from descriptions: prose, not a capability (`tell`).
    Prose,
    /// A common English word no tool name, parameter name or label of the pool has (`show`,
    /// `tell`): how the request is phrased, even where a description happens to use it.
    Phrasing,
    /// Nothing in the pool or the directory knows it: a value or a name (`zorblax`).
    Unknown,
    StopWord,
    Value,
    Marker,
}

impl Role {
    /// The role the text alone gives a token (`None`: a word, for the mass stage to decide).
    pub(super) fn from_kind(kind: Kind) -> Option<Role> {
        match kind {
            Kind::StopWord => Some(Role::StopWord),
            Kind::Value => Some(Role::Value),
            Kind::Marker => Some(Role::Marker),
            Kind::Frame => Some(Role::Phrasing),
            Kind::Word => None,
        }
    }
}

pub fn idf(n: usize, df: usize) -> f64 {
    let (n, df) = (n as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// Stage 4's answer for one term.
#[derive(Clone, Copy, Debug)]
pub struct TermMass {
    pub role: Role,
    pub idf: f64,
    pub mass: f64,
}

/// Whether a tool of the public directory whose product the caller has connected has `term` in
/// its name or parameter names: the capability exists for that product but no visible tool has it (withheld, or
/// not in the catalog), so the request asks for something out of the caller's reach. Only the
/// directory (public) and the caller's visible connectors are read, so a withheld tool changes
/// nothing.
fn offered_by_connected_product(term: &str, pool: &Pool) -> bool {
    let Some(directory) = pool.directory else {
        return false;
    };
    let mut offered = false;
    let fields = field::NAME_EXACT | field::NAME_PREFIX | field::PARAM;
    directory.index.for_each_hit_in(term, fields, |d, _| {
        if offered {
            return;
        }
        let label = &directory.index.labels()[directory.index.connector_of(d) as usize];
        offered = pool
            .visible
            .connector_labelled(pool.index, &label.text)
            .is_some();
    });
    offered
}

/// The fields that name a tool or its product (a parameter name only says how to call it).
const NAMING_FIELDS: u8 =
    field::NAME_EXACT | field::NAME_PREFIX | field::NAME_SURFACE | field::LABEL;

/// Stage 4, mass: which words say what the tool must do, and how much each weighs.
pub fn mass(
    tokens: &[&QueryToken],
    rec: &Record,
    pool: &Pool,
    products: &Products,
    rules: Rules,
) -> Vec<TermMass> {
    tokens
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let idf = idf(pool.visible.len(), rec.df[i] as usize);
            let directory = pool.directory;
            let mut named_anywhere = true;
            let role = Role::from_kind(t.kind).unwrap_or_else(|| {
                let term = t.term.as_str();
                let product = products.name_terms.iter().any(|n| n == term);
                // The directory's labels are names: a token that does not name one here
                // (`monday` alone) is not made a capability by them.
                let anywhere = rec.pool_fields[i]
                    | directory.map_or(0, |d| d.index.fields_anywhere(term) & !field::LABEL);
                if product {
                    Role::ProductName
                } else if rec.pool_fields[i] & field::STRUCTURAL == 0
                    && rules.has(Rule::PhrasingNoMass)
                    && super::text::is_common_word(&t.text)
                {
                    Role::Phrasing
                } else if anywhere & field::STRUCTURAL != 0 {
                    named_anywhere = anywhere & NAMING_FIELDS != 0;
                    Role::Capability
                } else if anywhere != 0 {
                    Role::Prose
                } else {
                    Role::Unknown
                }
            });
            let carries = match role {
                Role::Capability | Role::ProductName => true,
                // Without the directory too little is known to call a word prose or a value.
                Role::Prose => !rules.has(Rule::ProseNoMass) || directory.is_none(),
                // In the head, an unknown word may name a product no directory row has
                // (`servicenow`); in the tail it is a value (`… for zorblax`).
                Role::Unknown => {
                    !rules.has(Rule::UnknownNoMass)
                        || directory.is_none()
                        || rules.has(Rule::UnknownHeadKeepsMass) && !t.tail
                }
                Role::Phrasing | Role::StopWord | Role::Value | Role::Marker => false,
            };
            // Rule `ProductNamesKeepMass`: the tail says how to call a tool; a product named
            // there (`… from snowflake`) says which tools, as it would in the head.
            let product_keeps = role == Role::ProductName && rules.has(Rule::ProductNamesKeepMass);
            let in_tail = t.tail && rules.has(Rule::HeadMass);
            // Rule `ParticiplesDescribe`: `created`, `assigned` say which data, not what to do.
            let describes = rules.has(Rule::ParticiplesDescribe) && t.is_participle();
            let mut share = if (in_tail || describes) && !product_keeps {
                TAIL_SHARE
            } else {
                1.0
            };
            if !named_anywhere && rules.has(Rule::ParameterWords) {
                share *= TAIL_SHARE;
            }
            if role == Role::Capability
                && rec.df[i] == 0
                && rules.has(Rule::LackingCapability)
                && !offered_by_connected_product(&t.term, pool)
            {
                share *= LACKING_SHARE;
            }
            TermMass {
                role,
                idf,
                mass: if carries { idf * share } else { 0.0 },
            }
        })
        .collect()
}

/// The fields whose match anchors a result (rule `NameAnchor`).
const ANCHOR_FIELDS: u8 =
    field::NAME_EXACT | field::NAME_PREFIX | field::LABEL | field::NAME_SURFACE;

/// Stage 5's answer for one candidate.
#[derive(Clone, Copy, Debug)]
pub struct Scored {
    /// Position in the record.
    pub cand: usize,
    pub id: DocId,
    /// Σ over terms of mass × w(t, d).
    pub score: f64,
    /// Σ mass of the covered terms ÷ the query's mass.
    pub coverage: f64,
    /// Some term with mass matched a name or label.
    pub anchored: bool,
    /// The share of the query's mass met in the name or label (descriptions aside).
    pub name_coverage: f64,
    /// The tool's whole name is the query.
    pub exact: bool,
    /// A tool of a product the query names.
    pub named: bool,
    /// Its annotations say it destroys data.
    pub destructive: bool,
    /// The share of the name's terms that query words meet (`list_change_events` is all
    /// of `list all change events`; `get_change_event` two thirds).
    pub focus: f64,
}

/// Stage 5, scoring: every candidate's score, coverage and anchor, from the record.
pub fn score(
    rec: &Record,
    masses: &[TermMass],
    index: &Index,
    products: &Products,
    exact: &[DocId],
    rules: Rules,
) -> Vec<Scored> {
    let total: f64 = masses.iter().map(|m| m.mass).sum();
    (0..rec.cands.len())
        .map(|c| {
            let bits = rec.bits_of(c);
            let (mut score, mut covered, mut anchored) = (0.0, 0.0, false);
            let mut name_covered = 0.0;
            let mut named_terms = 0usize;
            for (b, m) in bits.iter().zip(masses) {
                if b & (field::NAME_EXACT | field::NAME_PREFIX) != 0 {
                    named_terms += 1;
                }
                if *b != 0 && m.mass > 0.0 {
                    score += m.mass * f64::from(field_weight(*b, rules));
                    covered += m.mass;
                    if b & ANCHOR_FIELDS != 0 {
                        anchored = true;
                        name_covered += m.mass;
                    }
                }
            }
            let id = rec.cands[c];
            Scored {
                cand: c,
                id,
                score,
                coverage: if total > 0.0 { covered / total } else { 0.0 },
                name_coverage: if total > 0.0 {
                    name_covered / total
                } else {
                    0.0
                },
                anchored,
                exact: exact.contains(&id),
                named: products.visible.contains(&index.connector_of(id)),
                destructive: index.doc(id).destructive,
                focus: (named_terms as f64 / index.name_len(id).max(1) as f64).min(1.0),
            }
        })
        .collect()
}

/// Why a candidate did not pass the gates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Coverage below [`FLOOR`].
    Floor,
    /// A tool annotated as destroying data, with coverage below `DESTRUCTIVE_FLOOR`.
    DestructiveFloor,
    /// Nothing with mass matched its name, label or parameters: a description alone never
    /// carries a tool.
    Anchor,
    /// The request's actions all read and the tool's name's action writes (rule
    /// `ReadGetsNoWrite`).
    WriteForRead,
    /// A tool of a connected product that the caller cannot use meets more of the query's
    /// mass by its name and label than this tool's name and label do (rule `OutOfReach`).
    OutOfReach,
}

/// Rule `OutOfReach` (stage 6): the largest share of the query's mass that the name or label
/// of one directory tool meets, among tools of products the caller has connected that the
/// caller cannot reach (the pool has no visible tool of that name for that product). Public
/// knowledge alone is read — the directory and the caller's own visible connectors — so a
/// withheld tool weighs exactly as an absent one.
pub fn out_of_reach_coverage(words: &[&QueryToken], masses: &[TermMass], pool: &Pool) -> f64 {
    let Some(directory) = pool.directory else {
        return 0.0;
    };
    let total: f64 = masses.iter().map(|m| m.mass).sum();
    if total <= 0.0 {
        return 0.0;
    }
    let out = pool.visible.out_of_reach(pool.index, directory);
    if !out.any() {
        return 0.0;
    }
    let dir = &directory.index;
    // Per tool out of reach, the query words its name or label meets.
    let mut met = vec![0u64; dir.len()];
    let mut touched: Vec<DocId> = Vec::new();
    let mut mark = |d: DocId, bit: u64| {
        if !out.contains(d) {
            return;
        }
        let m = &mut met[d as usize];
        if *m == 0 {
            touched.push(d);
        }
        *m |= bit;
    };
    // At most MAX_QUERY_TERMS (≤ 64) words reach here; more would share no bit.
    for (i, (t, m)) in words.iter().zip(masses).enumerate().take(64) {
        if m.mass <= 0.0 {
            continue;
        }
        let bit = 1u64 << i;
        dir.for_each_hit_in(&t.term, ANCHOR_FIELDS, |d, _| mark(d, bit));
        dir.for_each_surface_hit(&t.text, |d| mark(d, bit));
    }
    let mut best = 0.0f64;
    for d in touched {
        let bits = met[d as usize];
        let share = masses
            .iter()
            .enumerate()
            .take(64)
            .filter(|(i, _)| bits & (1 << i) != 0)
            .map(|(_, m)| m.mass)
            .sum::<f64>()
            / total;
        best = best.max(share);
    }
    best
}

/// Coverage is a quotient of float sums: a tool covering exactly half of the mass may compute
/// as 0.49999999. The floor is "at least half", so rounding below it by this much still passes.
pub const COVERAGE_ROUNDING: f64 = 1e-9;

/// Stage 6, gates: the floor (coverage ≥ [`FLOOR`]) and the anchor. They only remove; an exact
/// whole-name match always passes.
pub fn gate(s: &Scored, rules: Rules) -> Result<(), Gate> {
    if s.exact {
        return Ok(());
    }
    if s.coverage < FLOOR - COVERAGE_ROUNDING {
        return Err(Gate::Floor);
    }
    if rules.has(Rule::DestructiveFloor) && s.destructive && s.coverage < super::DESTRUCTIVE_FLOOR {
        return Err(Gate::DestructiveFloor);
    }
    // Rule `FullCoverageAnchors`: the anchor stops a stray description word from answering;
    // a tool whose text covers every word with mass has none stray.
    let covers_all = rules.has(Rule::FullCoverageAnchors) && s.coverage >= 1.0 - COVERAGE_ROUNDING;
    if rules.has(Rule::NameAnchor) && !s.anchored && !covers_all {
        return Err(Gate::Anchor);
    }
    Ok(())
}

/// A tool's action: the stemmed first token of its name that is not a word of its connector's
/// label (`list` of `intercom_list_admins`, `creat` of `create_alert_grouping_setting`).
pub fn action_term(index: &Index, id: DocId) -> Option<String> {
    let connector = index.connector_of(id);
    let mut action = None;
    crate::tokenize::for_each_token(&index.doc(id).name, |t, _, _| {
        if action.is_none() {
            let term = super::text::stem(t);
            if !index.labels_with_piece(&term).contains(&connector) {
                action = Some(term.into_owned());
            }
        }
    });
    action
}

/// Rule `ReadGetsNoWrite` (stage 6): whether the request names some action the directory's
/// annotations class, and every such action reads; or (rule `QuestionsRead`) names none of
/// them and is a question.
pub fn asks_only_to_read(tokens: &[&QueryToken], directory: &Directory, question: bool) -> bool {
    let mut actions = tokens
        .iter()
        .filter(|t| matches!(t.kind, Kind::Word | Kind::Frame))
        .filter_map(|t| directory.action(&t.term))
        .peekable();
    match actions.peek() {
        Some(_) => actions.all(|a| a == Action::Reads),
        None => question,
    }
}

/// Rule `ReadGetsNoWrite` (stage 6), for a read request: the tool's name's action writes and
/// the request does not name it (a tool annotated `readOnlyHint: true` never does).
pub fn writes_unasked(index: &Index, id: DocId, directory: &Directory, query: &[&str]) -> bool {
    index.doc(id).read_only != Some(true)
        && index
            .action_of(id)
            .is_some_and(|a| directory.action(a) == Some(Action::Writes) && !query.contains(&a))
}

/// Stage 7, order: an exact whole-name match; then (each a rule) tools of a product the query
/// names, coverage, the name's focus; then score, coverage, and the name by codepoint.
pub fn order(a: &Scored, b: &Scored, index: &Index, rules: Rules) -> std::cmp::Ordering {
    use std::cmp::Ordering::Equal;
    let when = |on: bool, o: std::cmp::Ordering| if on { o } else { Equal };
    b.exact
        .cmp(&a.exact)
        .then_with(|| when(rules.has(Rule::NamedFirst), b.named.cmp(&a.named)))
        .then_with(|| {
            when(
                rules.has(Rule::CoverageFirst),
                b.name_coverage.total_cmp(&a.name_coverage),
            )
        })
        .then_with(|| when(rules.has(Rule::NameFocus), b.focus.total_cmp(&a.focus)))
        .then_with(|| b.score.total_cmp(&a.score))
        .then_with(|| b.coverage.total_cmp(&a.coverage))
        .then_with(|| index.doc(a.id).name.cmp(&index.doc(b.id).name))
        .then_with(|| a.id.cmp(&b.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank::v2::query::analyze;
    use crate::rank::ToolDoc;

    fn tool(name: &str, connector: &str, description: &str) -> ToolDoc {
        ToolDoc {
            name: name.into(),
            connector: connector.into(),
            description: description.into(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {"incident": {"type": "object", "properties": {"urgency": {"type": "string"}}}}
            })
            .into(),
            destructive: false,
            read_only: None,
            notes: Vec::new(),
        }
    }

    fn pool() -> Index {
        Index::build(vec![
            tool("create_incident", "PagerDuty", "Create an incident."),
            tool(
                "list_incidents",
                "PagerDuty",
                "List incidents; tell the status.",
            ),
            tool("list_pages", "Notion", "List pages."),
        ])
    }

    #[test]
    fn field_weights_sum_with_a_name_counted_once() {
        use field::*;
        let sum = Rules::SHIPPED.without(Rule::StrongestField);
        assert_eq!(field_weight(NAME_EXACT | NAME_SURFACE, sum), 5);
        assert_eq!(field_weight(NAME_EXACT | NAME_PREFIX, sum), 4);
        assert_eq!(field_weight(NAME_PREFIX | PROSE, sum), 4);
        assert_eq!(field_weight(LABEL | PARAM | PROSE, sum), 5);
        assert_eq!(field_weight(0, sum), 0);
        // Shipped: the strongest field alone; a name mentioned again in the description
        // counts once.
        let strongest = Rules::SHIPPED;
        assert_eq!(
            field_weight(NAME_EXACT | NAME_SURFACE | PROSE, strongest),
            5
        );
        assert_eq!(field_weight(NAME_PREFIX | PARAM | PROSE, strongest), 3);
        assert_eq!(field_weight(LABEL | PARAM | PROSE, strongest), 2);
        assert_eq!(field_weight(PROSE, strongest), 1);
        assert_eq!(field_weight(0, strongest), 0);
    }

    #[test]
    fn products_split_into_visible_and_not_connected() {
        let index = pool();
        let dir = Directory::build(vec![tool("x", "PagerDuty", ""), tool("y", "MongoDB", "")]);
        let notion_only = Visible::from_ids(&index, [2]);
        let tokens = |q: &str| analyze(q).tokens;
        let p = products(
            &index,
            &notion_only,
            Some(&dir),
            &tokens("pagerduty incidents"),
        );
        assert!(p.visible.is_empty());
        assert_eq!(p.hidden, ["PagerDuty"]);
        let all = Visible::all(&index);
        let p = products(&index, &all, Some(&dir), &tokens("pagerduty and mongodb"));
        assert_eq!(p.visible.len(), 1);
        assert_eq!(p.hidden, ["MongoDB"]);
        for argument in [
            r#"create a page titled "PagerDuty rota""#,
            "create a page called 'PagerDuty rota'",
            "create a page named pagerduty-rota",
        ] {
            let p = products(&index, &notion_only, Some(&dir), &tokens(argument));
            assert!(p.hidden.is_empty() && p.name_terms.is_empty(), "{argument}");
        }
        // A connector the tenant labelled with the product's whole name is that product.
        let theirs = Index::build(vec![
            tool("post_message", "Slack internal bot", ""),
            tool("list_pages", "Notion", ""),
        ]);
        let slack = Directory::build(vec![tool("x", "Slack", ""), tool("y", "Notion", "")]);
        let named = |ix: &Index, vis: &Visible, dir: &Directory, q: &str| {
            products(ix, vis, Some(dir), &tokens(q))
        };
        let p = named(&theirs, &Visible::all(&theirs), &slack, "post to slack");
        assert!(p.hidden.is_empty(), "{:?}", p.hidden);
        assert_eq!(p.visible, [0]);
        let p = named(
            &theirs,
            &Visible::from_ids(&theirs, [1]),
            &slack,
            "post to slack",
        );
        assert_eq!(p.hidden, ["Slack"]);
        // Or as a punctuation-separated piece of one of its words; a camel-case part is not one.
        for (label, connected) in [("acme-slack-bridge", true), ("SlackLike", false)] {
            let theirs = Index::build(vec![tool("post_message", label, "")]);
            let p = named(&theirs, &Visible::all(&theirs), &slack, "post to slack");
            assert_eq!(p.hidden.is_empty(), connected, "{label}");
        }
        // Other quoted text may name one: an organisation's slug in that product.
        let q = "list the services of 'pagerduty-prod'";
        assert_eq!(named(&index, &notion_only, &dir, q).hidden, ["PagerDuty"]);
    }

    #[test]
    fn the_record_holds_only_visible_tools() {
        let index = pool();
        let visible = Visible::from_ids(&index, [1, 2]);
        let rec = gather(&index, &visible, &["list", "urgenc"], &["list", "urgency"]);
        assert_eq!(rec.cands.len(), 2);
        assert_eq!(rec.df, [2, 2]);
        assert!(!rec.cands.contains(&0));
        let i = rec.cands.iter().position(|&d| d == 1).unwrap();
        assert_eq!(rec.bits_of(i)[1], field::PARAM);
        // The row table kept between calls starts clean: the same gather again, then over
        // the whole pool, records exactly what a first call would.
        let again = gather(&index, &visible, &["list", "urgenc"], &["list", "urgency"]);
        assert_eq!(
            (again.cands, again.bits, again.df),
            (rec.cands, rec.bits, rec.df)
        );
        let all = gather(&index, &Visible::all(&index), &["list"], &["list"]);
        let mut cands = all.cands.clone();
        cands.sort_unstable();
        cands.dedup();
        assert_eq!(cands.len(), all.cands.len(), "a tool has one row");
        assert_eq!(all.df[0] as usize, all.cands.len());
    }

    #[test]
    fn mass_goes_to_capabilities_only() {
        let index = pool();
        let all = Visible::all(&index);
        let dir = Directory::build(vec![tool("create_incident", "PagerDuty", "")]);
        let a = analyze("tell about zorblax incidents");
        let words: Vec<&QueryToken> = a.tokens.iter().filter(|t| t.kind == Kind::Word).collect();
        let terms: Vec<&str> = words.iter().map(|t| t.term.as_str()).collect();
        let surfaces: Vec<&str> = words.iter().map(|t| t.text.as_str()).collect();
        let rec = gather(&index, &all, &terms, &surfaces);
        let p = Pool {
            index: &index,
            visible: &all,
            directory: Some(&dir),
        };
        let named = products(&index, &all, Some(&dir), &a.tokens);
        let m = mass(&words, &rec, &p, &named, Rules::SHIPPED);
        let roles: Vec<Role> = m.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::Phrasing, Role::Unknown, Role::Capability]);
        assert!(m[0].mass == 0.0 && m[1].mass == 0.0 && m[2].mass > 0.0);
        // Without the directory nothing is known well enough to drop a word's mass.
        let p = Pool {
            directory: None,
            ..p
        };
        let m = mass(&words, &rec, &p, &named, Rules::SHIPPED);
        assert!(m[1].mass > 0.0);
    }

    #[test]
    fn a_capability_the_pool_lacks_weighs_half_unless_a_connected_product_offers_it() {
        use super::super::LACKING_SHARE;
        let index = pool();
        let all = Visible::all(&index);
        let dir = Directory::build(vec![
            tool("acknowledge_incident", "PagerDuty", ""),
            tool("resolve_ticket", "Zendesk", ""),
        ]);
        let masses = |query: &str, visible: &Visible, rules: Rules| {
            masses_of(&index, visible, Some(&dir), query, rules)
                .into_iter()
                .map(|(_, _, m)| (m.role, m.mass, m.idf))
                .collect::<Vec<_>>()
        };
        // `resolve`: only another product's tool has it; no visible tool covers it: half.
        let m = masses("resolve incidents", &all, Rules::SHIPPED);
        assert_eq!(m[0].0, Role::Capability);
        assert!((m[0].1 - m[0].2 * LACKING_SHARE).abs() < 1e-12, "{m:?}");
        let without = masses(
            "resolve incidents",
            &all,
            Rules::SHIPPED.without(Rule::LackingCapability),
        );
        assert!((without[0].1 - without[0].2).abs() < 1e-12);
        // `acknowledge`: PagerDuty, which the caller has connected, offers it in the directory;
        // no visible tool has it, so the request is for a tool out of reach: full mass.
        let m = masses("acknowledge incidents", &all, Rules::SHIPPED);
        assert!((m[0].1 - m[0].2).abs() < 1e-12, "{m:?}");
        // With PagerDuty not visible at all, nothing connected offers it: half again.
        let notion_only = Visible::from_ids(&index, [2]);
        let m = masses("acknowledge pages", &notion_only, Rules::SHIPPED);
        assert!((m[0].1 - m[0].2 * LACKING_SHARE).abs() < 1e-12, "{m:?}");
    }

    /// Stages 1–4 over `query`: each word as written, whether it is in the tail, and its mass.
    fn masses_of(
        index: &Index,
        visible: &Visible,
        directory: Option<&Directory>,
        query: &str,
        rules: Rules,
    ) -> Vec<(String, bool, TermMass)> {
        let a = analyze(query);
        let words: Vec<&QueryToken> = a.tokens.iter().filter(|t| t.kind == Kind::Word).collect();
        let terms: Vec<&str> = words.iter().map(|t| t.term.as_str()).collect();
        let surfaces: Vec<&str> = words.iter().map(|t| t.text.as_str()).collect();
        let rec = gather(index, visible, &terms, &surfaces);
        let pool = Pool {
            index,
            visible,
            directory,
        };
        let named = products(index, visible, directory, &a.tokens);
        let masses = mass(&words, &rec, &pool, &named, rules);
        words
            .iter()
            .zip(masses)
            .map(|(w, m)| (w.text.clone(), w.tail, m))
            .collect()
    }

    #[test]
    fn a_product_named_in_the_tail_keeps_its_mass_and_a_capability_there_does_not() {
        use super::super::TAIL_SHARE;
        let index = pool();
        let all = Visible::all(&index);
        let query = "list the incidents from pagerduty";
        let m = masses_of(&index, &all, None, query, Rules::SHIPPED);
        let surfaces: Vec<&str> = m.iter().map(|(w, _, _)| w.as_str()).collect();
        assert_eq!(surfaces, ["list", "incidents", "pagerduty"]);
        let (_, tail, pagerduty) = m[2];
        assert!(tail);
        assert_eq!(pagerduty.role, Role::ProductName);
        assert!((pagerduty.mass - pagerduty.idf).abs() < 1e-12, "{m:?}");
        let without = Rules::SHIPPED.without(Rule::ProductNamesKeepMass);
        let (_, _, pagerduty) = masses_of(&index, &all, None, query, without)[2];
        assert!((pagerduty.mass - pagerduty.idf * TAIL_SHARE).abs() < 1e-12);
        // A capability word in the tail still carries the tail's share.
        let query = "list the pagerduty things with incidents";
        let m = masses_of(&index, &all, None, query, Rules::SHIPPED);
        let (_, tail, incidents) = m.iter().find(|(w, _, _)| w == "incidents").unwrap();
        assert!(*tail && incidents.role == Role::Capability);
        assert!((incidents.mass - incidents.idf * TAIL_SHARE).abs() < 1e-12);
    }

    #[test]
    fn a_product_written_in_camel_case_is_named_by_its_parts() {
        let index = pool();
        let all = Visible::all(&index);
        let roles = |query: &str| -> Vec<(String, Role, f64)> {
            masses_of(&index, &all, None, query, Rules::SHIPPED)
                .into_iter()
                .map(|(w, _, m)| (w, m.role, m.mass / m.idf))
                .collect()
        };
        // `PagerDuty` as written splits into `pager` and `duty`, and names the label whole:
        // both parts weigh as the one word `pagerduty` does (a product keeps its mass in
        // the tail).
        let camel = roles("list the incidents from PagerDuty");
        assert_eq!(camel.len(), 4, "{camel:?}");
        for (word, role, share) in &camel[2..] {
            assert_eq!(
                (*role, *share),
                (Role::ProductName, 1.0),
                "{word}: {camel:?}"
            );
        }
        let whole = roles("list the incidents from pagerduty");
        assert_eq!((whole[2].1, whole[2].2), (Role::ProductName, 1.0));
        // A part alone names nothing: `pager` is then what the tools' text makes it.
        let part = roles("list the incidents from the pager");
        assert_ne!(part[2].1, Role::ProductName, "{part:?}");
    }

    #[test]
    fn gates_remove_below_the_floor_and_unanchored_but_never_an_exact_name() {
        let s = Scored {
            cand: 0,
            id: 0,
            score: 1.0,
            coverage: 0.49,
            anchored: true,
            name_coverage: 0.49,
            exact: false,
            named: false,
            destructive: false,
            focus: 0.0,
        };
        assert_eq!(gate(&s, Rules::SHIPPED), Err(Gate::Floor));
        // Exactly half of the mass, as float sums compute it, is at the floor.
        let (covered, other) = (0.7_f64 + 0.1, 0.8_f64);
        let half = Scored {
            coverage: covered / (covered + other),
            ..s
        };
        assert!(half.coverage < 0.5, "the case needs a rounded-down half");
        assert_eq!(gate(&half, Rules::SHIPPED), Ok(()));
        let s = Scored {
            coverage: 0.5,
            anchored: false,
            ..s
        };
        assert_eq!(gate(&s, Rules::SHIPPED), Err(Gate::Anchor));
        assert_eq!(gate(&s, Rules::SHIPPED.without(Rule::NameAnchor)), Ok(()));
        // Unanchored but covering every word with mass: rule 23 lets it through.
        let whole = Scored { coverage: 1.0, ..s };
        assert_eq!(gate(&whole, Rules::SHIPPED), Ok(()));
        assert_eq!(
            gate(&whole, Rules::SHIPPED.without(Rule::FullCoverageAnchors)),
            Err(Gate::Anchor)
        );
        let s = Scored {
            coverage: 0.0,
            exact: true,
            ..s
        };
        assert_eq!(gate(&s, Rules::SHIPPED), Ok(()));
        let destroys = Scored {
            coverage: 0.6,
            exact: false,
            anchored: true,
            destructive: true,
            ..s
        };
        assert_eq!(gate(&destroys, Rules::SHIPPED), Ok(()));
        let strict = Rules::SHIPPED.with(Rule::DestructiveFloor);
        assert_eq!(gate(&destroys, strict), Err(Gate::DestructiveFloor));
        let covered = Scored {
            coverage: 0.8,
            ..destroys
        };
        assert_eq!(gate(&covered, strict), Ok(()));
    }

    #[test]
    fn order_puts_the_named_then_the_name_made_of_the_query_first() {
        let index = pool();
        let base = Scored {
            cand: 0,
            id: 0,
            score: 10.0,
            coverage: 1.0,
            anchored: true,
            name_coverage: 0.5,
            exact: false,
            named: false,
            destructive: false,
            focus: 0.5,
        };
        let named = Scored {
            id: 1,
            named: true,
            score: 1.0,
            ..base
        };
        let focused = Scored {
            id: 2,
            focus: 1.0,
            score: 1.0,
            ..base
        };
        let mut v = [base, focused, named];
        v.sort_by(|a, b| order(a, b, &index, Rules::SHIPPED));
        assert_eq!(v.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 2, 0]);
        v.sort_by(|a, b| order(a, b, &index, Rules::NONE));
        assert_eq!(v.iter().map(|s| s.id).collect::<Vec<_>>(), [0, 1, 2]);
    }
}
