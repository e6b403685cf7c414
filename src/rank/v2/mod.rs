//! Tool search v2: the ranker as a pipeline of named stages over a general mass model.
//!
//! The first ranker grew rule by rule from one evaluation set's misses and did not carry over to
//! requests it had not seen. This one decides what carries a query's mass from general sources
//! only — a published stop-word list, the Snowball stemmer, and the tools' own text (the caller's
//! pool and the public connector directory) — and keeps the seed's floor as a separate gate.
//!
//! Stages (each a function with its own tests):
//! 1. [`query::analyze`]: tokens, values, stop words, the request's head and tail;
//! 2. [`stages::products`]: products the query names, visible or not;
//! 3. [`stages::gather`]: the scorer's record (fields matched per candidate and term);
//! 4. [`stages::mass`]: each word's role and mass (IDF over the visible pool only);
//! 5. [`stages::score`]: score, coverage, anchor per candidate;
//! 6. [`stages::gate`]: the floor and the anchor, after ranking, removing only;
//! 7. [`stages::order`], the limit, and the explanation read from the same record.
//!
//! Withheld tools are never in the record, so they change no df, IDF, score, count or reason.

pub mod compiled;
pub mod index;
pub mod query;
pub mod stages;
pub mod text;

use std::sync::Arc;

use serde::Serialize;

pub use index::{DocId, Index};
pub use query::{analyze, Analysis, Kind, QueryToken};
pub use stages::{Gate, Role};

use super::Limit;

/// A tool is returned only if it covers at least this share of the query's mass (SPEC §7).
pub const FLOOR: f64 = 0.5;
/// Rule `DestructiveFloor`: the coverage a tool whose annotations say it destroys data must
/// reach (a wrong read costs little, a wrong delete a lot).
pub const DESTRUCTIVE_FLOOR: f64 = 0.75;
/// Rule `HeadMass`: the share of its IDF a word in the request's tail carries.
pub const TAIL_SHARE: f64 = 0.5;
/// Rule `LackingCapability`: the share of its IDF a capability word carries when no visible
/// tool covers it and no connected product offers it under that name.
pub const LACKING_SHARE: f64 = 0.5;
/// Rule `ReadGetsNoWrite`: an action (a tool name's first term past its product's label words)
/// is classed from the directory's tools named for it that carry `readOnlyHint`: at least this
/// many of them, and all reading or all writing.
pub const MIN_ACTION_ANNOTATED: u32 = 3;
/// Distinct query terms looked at; the rest of a longer query is ignored (and explained).
pub const MAX_QUERY_TERMS: usize = 48;
// Rule `OutOfReach` keeps the words a tool meets as bits of a `u64`.
const _: () = assert!(MAX_QUERY_TERMS <= 64);
/// Rules 18 and 19 ask at most this many steps of a task (the rest are ignored): a request
/// of many short sentences costs at most this many searches more.
pub const MAX_STEPS: usize = 8;

/// The rule registry: every refinement of the literal SPEC §7 rules, with its number and reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    ValuesNoMass = 0,
    StopWords,
    ProseNoMass,
    UnknownNoMass,
    UnknownHeadKeepsMass,
    PhrasingNoMass,
    HeadMass,
    ProductDetection,
    NameAnchor,
    DestructiveFloor,
    NamedFirst,
    StrongestField,
    CoverageFirst,
    NameFocus,
    ProductSlot,
    RequestFrame,
    LackingCapability,
    ReadGetsNoWrite,
    SentenceSteps,
    ClauseSteps,
    OutOfReach,
    ParameterWords,
    StepsAfterWhole,
    FullCoverageAnchors,
    ProductNamesKeepMass,
    QuestionsRead,
    ParticiplesDescribe,
}

/// Number, name and one-line reason of each rule, in order; `eval --ablation` iterates it.
pub const REGISTRY: &[(Rule, &str, &str)] = &[
    (Rule::ValuesNoMass, "values_no_mass", "quoted text, ids, numbers, dotted names, URLs, e-mails, paths and named values are data, not capabilities"),
    (Rule::StopWords, "stop_words", "words of the NLTK English stop-word list carry no mass"),
    (Rule::ProseNoMass, "prose_no_mass", "a word no tool name, parameter name or label of the pool or directory has is prose"),
    (Rule::UnknownNoMass, "unknown_no_mass", "a word nothing in the pool or directory knows is a value or a name, except label words"),
    (Rule::UnknownHeadKeepsMass, "unknown_head_keeps_mass", "(not shipped) an unknown word in the request's head may name a product no directory row has: it keeps its mass"),
    (Rule::PhrasingNoMass, "phrasing_no_mass", "a common English word (Stopwords ISO) no tool name, parameter name or label of the pool has is phrasing"),
    (Rule::HeadMass, "head_mass", "words after the first preposition or clause word carry TAIL_SHARE of their IDF"),
    (Rule::ProductDetection, "product_detection", "a query naming only products the caller has not connected is answered empty"),
    (Rule::NameAnchor, "name_anchor", "a result matches a word with mass in its name or label"),
    (Rule::DestructiveFloor, "destructive_floor", "(not shipped) a tool annotated destructiveHint must cover DESTRUCTIVE_FLOOR of the mass"),
    (Rule::NamedFirst, "named_first", "tools of a product the query names come first"),
    (Rule::StrongestField, "strongest_field", "a term weighs what its strongest field gives (name over parameter over description), not their sum: a long description does not outrank a name"),
    (Rule::CoverageFirst, "coverage_first", "then the share of the mass met in the name or label: the tool named for all of what was asked before one that mentions it at length"),
    (Rule::NameFocus, "name_focus", "then the tool whose name the query's words make up most: a name says what a tool does, a description only describes it"),
    (Rule::ProductSlot, "product_slot", "(not shipped) words nothing knows after a request-final in/on/from name a product no directory row has"),
    (Rule::RequestFrame, "request_frame", "a common verb right before `me` or `us` frames the request (`show me`) and carries no mass, whatever tool names the pool has"),
    (Rule::LackingCapability, "lacking_capability", "a capability word no visible tool covers carries LACKING_SHARE of its IDF, unless the directory shows a connected product offering it (that tool is out of reach: full mass)"),
    (Rule::ReadGetsNoWrite, "read_gets_no_write", "a request whose actions all read (by the directory's readOnlyHint annotations of tools named for them) gets no tool whose name's action writes, unless it asks for that action"),
    (Rule::SentenceSteps, "sentence_steps", "a request of several sentences that no tool answers whole is a task of several steps: each sentence is asked on its own, under the same floor, and their answers interleaved"),
    (Rule::ClauseSteps, "clause_steps", "with sentence_steps: a sentence's clauses are steps too, split at every comma and joining word (`and`, `then`), never inside quotes"),
    (Rule::OutOfReach, "out_of_reach", "a result is dropped when a directory tool of a connected product that the caller cannot use meets more of the query's mass by its name and label than the result's name and label do: the request asks for that tool"),
    (Rule::ParameterWords, "parameter_words", "a capability word that no tool name or label of the pool or directory has, only parameter names (`limit`, `status`), carries TAIL_SHARE of the mass it would carry otherwise: arguments say how to call a tool, not which"),
    (Rule::StepsAfterWhole, "steps_after_whole", "with sentence_steps: a request of several steps that the whole answers with fewer tools than the limit gets its steps' answers after the whole's"),
    (Rule::FullCoverageAnchors, "full_coverage_anchors", "with name_anchor: a result that covers every word with mass needs no match in its name or label (no word of it is a stray description match)"),
    (Rule::ProductNamesKeepMass, "product_names_keep_mass", "with head_mass: a product's name in the tail keeps its whole mass (`… from snowflake`): it says where the tool is, not how to call it"),
    (Rule::QuestionsRead, "questions_read", "with read_gets_no_write: a request opening with an interrogative (`who`, `what`, `which`, `how many`…) and naming no action asks to read"),
    (Rule::ParticiplesDescribe, "participles_describe", "a past participle (`issues created last week`, `assigned to me`) describes the data: it carries TAIL_SHARE of its mass, as a tail word does, and asks for no action (rule 17)"),
];

/// A set of rules (bit per [`Rule`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules(u32);

impl Rules {
    pub const ALL: Rules = Rules((1 << REGISTRY.len()) - 1);
    /// What the gateway runs: every rule but those measured and not shipped.
    pub const SHIPPED: Rules = Rules::ALL
        .without(Rule::UnknownHeadKeepsMass)
        .without(Rule::DestructiveFloor)
        .without(Rule::ProductSlot);
    /// SPEC §7 as written (no refinement).
    pub const NONE: Rules = Rules(0);

    pub fn has(self, r: Rule) -> bool {
        self.0 & (1 << r as u32) != 0
    }
    pub const fn without(self, r: Rule) -> Rules {
        Rules(self.0 & !(1 << r as u32))
    }
    pub fn with(self, r: Rule) -> Rules {
        Rules(self.0 | (1 << r as u32))
    }
}

/// The deployment's connector directory, as public knowledge: which words some tool or label of
/// the gateway has, and which products a query names. Never a source of results.
pub struct Directory {
    pub(crate) index: Index,
    /// The actions its annotations class (see [`Directory::action`]); found on first use.
    actions: std::sync::OnceLock<std::collections::HashMap<String, Action>>,
    /// Tells directories apart for what a [`Visible`] keeps of one (rule `OutOfReach`).
    id: u64,
}

/// Ids of directories built in this process (never reused, unlike addresses).
static NEXT_DIRECTORY_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn next_directory_id() -> u64 {
    NEXT_DIRECTORY_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// What an action does, by the directory's annotations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Reads,
    Writes,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Reads => "reads",
            Action::Writes => "writes",
        }
    }
}

/// The actions the public connector directory's annotations class (`fixtures/demo/directory.json`,
/// the `preferred` rows of the public tool collection), as [`Directory::action_classes_text`]
/// writes them; `tests/rank_v2.rs::the_built_in_action_classes_are_the_public_directorys` keeps
/// the two equal.
pub const BUILT_IN_ACTIONS: &str = include_str!("action_classes.txt");

fn built_in_action_classes() -> std::collections::HashMap<String, Action> {
    BUILT_IN_ACTIONS
        .lines()
        .filter_map(|line| {
            let (term, class) = line.split_once(' ')?;
            let class = match class {
                "reads" => Action::Reads,
                "writes" => Action::Writes,
                _ => return None,
            };
            Some((term.to_string(), class))
        })
        .collect()
}

/// The actions the directory's annotations class, from each annotated tool's name's action
/// term ([`stages::action_term`]): at least [`MIN_ACTION_ANNOTATED`] tools, all agreeing.
fn action_classes(index: &Index) -> std::collections::HashMap<String, Action> {
    // Per action: annotated tools named for it, and of them the read-only ones.
    let mut counts: std::collections::HashMap<String, (u32, u32)> = Default::default();
    for (id, doc) in index.docs().iter().enumerate() {
        let Some(read_only) = doc.read_only else {
            continue;
        };
        let Some(action) = stages::action_term(index, id as DocId) else {
            continue;
        };
        let e = counts.entry(action).or_default();
        e.0 += 1;
        e.1 += u32::from(read_only);
    }
    counts
        .into_iter()
        .filter_map(|(action, (n, read))| {
            let class = match read {
                _ if n < MIN_ACTION_ANNOTATED => return None,
                0 => Action::Writes,
                r if r == n => Action::Reads,
                _ => return None,
            };
            Some((action, class))
        })
        .collect()
}

impl Directory {
    pub fn build(tools: Vec<crate::rank::ToolDoc>) -> Directory {
        Directory {
            index: Index::build(tools),
            actions: std::sync::OnceLock::new(),
            id: next_directory_id(),
        }
    }

    /// Whether the directory's annotated tools named for this action term all read or all
    /// write (at least [`MIN_ACTION_ANNOTATED`] of them); `None` when they do not say. A
    /// directory none of whose tools carries `readOnlyHint` (a tools file of names,
    /// descriptions and schemas only) says nothing: the public directory's classes
    /// ([`built_in_action_classes`]) are used instead.
    pub fn action(&self, term: &str) -> Option<Action> {
        self.actions
            .get_or_init(|| {
                let annotated = self.index.docs().iter().any(|d| d.read_only.is_some());
                if annotated {
                    action_classes(&self.index)
                } else {
                    built_in_action_classes()
                }
            })
            .get(term)
            .copied()
    }

    /// What its own annotations class, one `term reads|writes` line each, sorted: the text of
    /// [`BUILT_IN_ACTIONS`] when this is the public directory.
    pub fn action_classes_text(&self) -> String {
        let mut lines: Vec<String> = action_classes(&self.index)
            .into_iter()
            .map(|(term, class)| format!("{term} {}\n", class.as_str()))
            .collect();
        lines.sort();
        lines.concat()
    }

    /// Its index compiled (see [`compiled`]).
    pub fn compile(&self) -> Vec<u8> {
        self.index.compile()
    }

    /// Reads a compiled directory back over the same tools, in the same order.
    pub fn from_compiled(
        bytes: &[u8],
        tools: Vec<crate::rank::ToolDoc>,
    ) -> Result<Directory, compiled::CompiledError> {
        Ok(Directory {
            index: Index::from_compiled(bytes, tools)?,
            actions: std::sync::OnceLock::new(),
            id: next_directory_id(),
        })
    }
}

/// The caller's visible part of an [`Index`].
#[derive(Clone, Debug)]
pub struct Visible {
    bits: Vec<u64>,
    count: usize,
    connectors: Vec<bool>,
    /// Rule `OutOfReach`: for one directory (by id), which of its tools belong to a product
    /// the caller has connected but are out of the caller's reach; found on first use.
    out_of_reach: std::sync::OnceLock<(u64, OutOfReach)>,
}

/// A directory's tools out of a caller's reach (see [`Visible::out_of_reach`]).
#[derive(Clone, Debug, Default)]
pub struct OutOfReach {
    bits: Vec<u64>,
}

impl OutOfReach {
    /// Directory tools of products the caller has connected (same label as a visible
    /// connector) with no visible tool of that name for that product.
    fn of(index: &Index, visible: &Visible, directory: &Directory) -> OutOfReach {
        let dir = &directory.index;
        let mine: Vec<Option<u32>> = dir
            .labels()
            .iter()
            .map(|l| visible.connector_labelled(index, &l.text))
            .collect();
        let mut out = OutOfReach {
            bits: vec![0; dir.len().div_ceil(64)],
        };
        // Every tool of a connected product, then those the caller has by name under it taken
        // back out (a merge of the two name arrays: the cold first search at 1,000 tools spent
        // most of its time looking each directory name up).
        for d in 0..dir.len() as DocId {
            if mine[dir.connector_of(d) as usize].is_some() {
                out.bits[d as usize / 64] |= 1 << (d % 64);
            }
        }
        dir.for_each_same_name(index, |d, v| {
            if visible.contains(v)
                && mine[dir.connector_of(d) as usize] == Some(index.connector_of(v))
            {
                out.bits[d as usize / 64] &= !(1 << (d % 64));
            }
        });
        out
    }

    pub fn any(&self) -> bool {
        self.bits.iter().any(|&w| w != 0)
    }

    pub fn contains(&self, d: DocId) -> bool {
        self.bits
            .get(d as usize / 64)
            .is_some_and(|w| w & (1 << (d % 64)) != 0)
    }
}

impl Visible {
    pub fn all(index: &Index) -> Visible {
        Visible::from_ids(index, 0..index.len() as u32)
    }
    pub fn from_ids(index: &Index, ids: impl IntoIterator<Item = u32>) -> Visible {
        let n = index.len();
        let mut v = Visible {
            bits: vec![0; n.div_ceil(64)],
            count: 0,
            connectors: vec![false; index.labels().len()],
            out_of_reach: std::sync::OnceLock::new(),
        };
        for id in ids {
            let i = id as usize;
            if i < n && v.bits[i / 64] & (1 << (i % 64)) == 0 {
                v.bits[i / 64] |= 1 << (i % 64);
                v.count += 1;
                v.connectors[index.connector_of(id) as usize] = true;
            }
        }
        v
    }
    pub fn len(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    pub fn contains(&self, id: u32) -> bool {
        let i = id as usize;
        self.bits
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    pub fn has_connector(&self, c: u32) -> bool {
        self.connectors.get(c as usize).copied().unwrap_or(false)
    }

    /// The caller's visible connector labelled `label` in `index` (the one this was made
    /// for): how a directory's product is matched to the caller's.
    pub fn connector_labelled(&self, index: &Index, label: &str) -> Option<u32> {
        index.label_id(label).filter(|&c| self.has_connector(c))
    }

    /// The directory's tools out of this caller's reach (`index` is the one this was made
    /// for), kept for the first directory asked about: a member's searches share it.
    pub fn out_of_reach(
        &self,
        index: &Index,
        directory: &Directory,
    ) -> std::borrow::Cow<'_, OutOfReach> {
        let (id, kept) = self
            .out_of_reach
            .get_or_init(|| (directory.id, OutOfReach::of(index, self, directory)));
        if *id == directory.id {
            std::borrow::Cow::Borrowed(kept)
        } else {
            std::borrow::Cow::Owned(OutOfReach::of(index, self, directory))
        }
    }
}

/// One query.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub query: &'a str,
    pub limit: Limit,
    pub explain: bool,
    pub directory: Option<&'a Directory>,
    pub rules: Rules,
}

impl<'a> Request<'a> {
    pub fn new(query: &'a str) -> Self {
        Request {
            query,
            limit: Limit::DEFAULT,
            explain: false,
            directory: None,
            rules: Rules::SHIPPED,
        }
    }
}

/// How one query term fared in one result.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TermMatch {
    pub token: String,
    /// The fields it matched: `name`, `name_prefix`, `connector`, `parameter`, `description`.
    pub fields: Vec<&'static str>,
    /// w(t, d): the field weights summed.
    pub weight: u32,
    /// The term's mass.
    pub mass: f64,
    /// mass × weight: this term's part of the score.
    pub contribution: f64,
}

/// One returned tool.
#[derive(Clone, Debug, Serialize)]
pub struct Hit {
    #[serde(skip)]
    pub id: DocId,
    /// Shared with the catalog, not copied.
    pub name: Arc<str>,
    pub connector: Arc<str>,
    pub description: Arc<str>,
    /// The full schema: one hop to call the tool.
    #[serde(rename = "inputSchema")]
    pub input_schema: crate::lazy_json::LazyJson,
    pub score: f64,
    pub coverage: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<TermMatch>>,
}

/// Per distinct query term: what it is and what it weighs.
#[derive(Clone, Debug, Serialize)]
pub struct TokenExplain {
    pub token: String,
    pub term: String,
    pub role: Role,
    pub tail: bool,
    pub df: u32,
    pub idf: f64,
    pub mass_share: f64,
}

/// Why an answer is empty.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EmptyReason {
    /// The caller has no tools to search.
    EmptyPool,
    /// No word of the query can name a capability (all values, stop words, prose or unknown).
    NoCapabilityWord,
    /// The query names products the caller has not connected, and none it has.
    ProductNotConnected { products: Vec<String> },
    /// No tool of the pool covers any word with mass.
    NothingCovers,
    /// The best candidate did not pass a gate.
    Rejected { gate: Gate },
}

impl std::fmt::Display for EmptyReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmptyReason::EmptyPool => write!(f, "you have no connected tools to search"),
            EmptyReason::NoCapabilityWord => write!(
                f,
                "no word of the query names a capability any tool has; values, names and stop words carry no mass"
            ),
            EmptyReason::ProductNotConnected { products } => write!(
                f,
                "the query names {}, which you have not connected",
                products.join(", ")
            ),
            EmptyReason::NothingCovers => write!(f, "no tool you can use covers the query's words"),
            EmptyReason::Rejected { gate: Gate::Floor } => write!(
                f,
                "no tool covers half of the query's weighted words (the relevance floor)"
            ),
            EmptyReason::Rejected {
                gate: Gate::DestructiveFloor,
            } => write!(
                f,
                "the closest tool destroys data and covers less than {} of the query's weighted words",
                DESTRUCTIVE_FLOOR
            ),
            EmptyReason::Rejected { gate: Gate::Anchor } => write!(
                f,
                "the tools that cover enough of the query meet its words only in their descriptions or parameters, never in their names"
            ),
            EmptyReason::Rejected {
                gate: Gate::WriteForRead,
            } => write!(
                f,
                "the query asks to read, and the closest tool writes"
            ),
            EmptyReason::Rejected {
                gate: Gate::OutOfReach,
            } => write!(
                f,
                "a product you have connected has a tool for this, and it is not among the tools you can use"
            ),
        }
    }
}

/// The best candidate a gate turned away.
#[derive(Clone, Debug, Serialize)]
pub struct Rejected {
    pub name: String,
    pub coverage: f64,
    pub gate: Gate,
    pub covered: Vec<String>,
    pub missed: Vec<String>,
}

/// Why the results are what they are.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    pub pool: usize,
    pub floor: f64,
    pub mass: f64,
    pub tokens: Vec<TokenExplain>,
    /// Words with mass nothing in the pool covers.
    pub uncovered: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub products_named: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub products_not_connected: Vec<String>,
    /// Why the answer is empty, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The same, as data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<EmptyReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_rejected: Option<Rejected>,
    /// Distinct query terms past [`MAX_QUERY_TERMS`], ignored.
    #[serde(skip_serializing_if = "is_zero")]
    pub ignored_terms: usize,
    /// Rules `sentence_steps`, `clause_steps`: nothing answered the whole request, these
    /// steps of it did; each result's own explanation comes from its step's record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answered_by_steps: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The answer to one query.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    pub query: String,
    pub results: Vec<Hit>,
    /// With `explain`, and always when `results` is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

const FIELD_NAMES: [(u8, &str); 6] = [
    (index::field::NAME_SURFACE, "name_spelled"),
    (index::field::NAME_EXACT, "name"),
    (index::field::NAME_PREFIX, "name_prefix"),
    (index::field::LABEL, "connector"),
    (index::field::PARAM, "parameter"),
    (index::field::PROSE, "description"),
];

/// The words after a request-final `in`, `on` or `from` (at most two, all words): where a
/// request names the product it means (`list the job openings in ashby`).
fn product_slot(tokens: &[QueryToken]) -> Option<Vec<&QueryToken>> {
    let at = tokens.iter().rposition(|t| {
        t.kind == Kind::StopWord && matches!(t.text.as_str(), "in" | "on" | "from")
    })?;
    let slot: Vec<&QueryToken> = tokens[at + 1..].iter().collect();
    (!slot.is_empty() && slot.len() <= 2 && slot.iter().all(|t| t.kind == Kind::Word))
        .then_some(slot)
}

/// Runs the stages for one query over the caller's visible tools.
pub fn search(index: &Index, visible: &Visible, req: &Request) -> Answer {
    let whole = search_request(index, visible, req);
    // Not for a request that names a product the caller has not connected: any of its
    // sentences may be about that product.
    let unanswered = |a: &Answer| {
        a.results.is_empty()
            && a.explanation.as_ref().is_some_and(|e| {
                e.products_not_connected.is_empty()
                    && matches!(
                        e.why,
                        Some(EmptyReason::Rejected { .. } | EmptyReason::NothingCovers)
                    )
            })
    };
    // Rule `StepsAfterWhole`: a whole answer that leaves room is followed by its steps' answers.
    let partial = req.rules.has(Rule::StepsAfterWhole)
        && !whole.results.is_empty()
        && whole.results.len() < req.limit.get();
    if !req.rules.has(Rule::SentenceSteps) || !(unanswered(&whole) || partial) {
        return whole;
    }
    let steps = query::steps(req.query, req.rules.has(Rule::ClauseSteps));
    if steps.len() < 2 {
        return whole;
    }
    // Each step is a request of its own: the same stages, the same floor.
    let answers: Vec<Answer> = steps
        .iter()
        .take(MAX_STEPS)
        .map(|s| search_request(index, visible, &Request { query: s, ..*req }))
        .collect();
    let mut results: Vec<Hit> = whole.results.clone();
    let mut answered_by = Vec::new();
    let longest = answers.iter().map(|a| a.results.len()).max().unwrap_or(0);
    for k in 0..longest {
        for (a, s) in answers.iter().zip(&steps) {
            let Some(hit) = a.results.get(k) else {
                continue;
            };
            if !results.iter().any(|r| r.id == hit.id) && results.len() < req.limit.get() {
                results.push(hit.clone());
                if !answered_by.contains(s) {
                    answered_by.push(*s);
                }
            }
        }
    }
    if results.is_empty() {
        return whole;
    }
    let explanation = whole
        .explanation
        .filter(|_| req.explain)
        .map(|e| Explanation {
            reason: None,
            why: None,
            best_rejected: None,
            answered_by_steps: answered_by.iter().map(|s| (*s).to_owned()).collect(),
            ..e
        });
    Answer {
        query: whole.query,
        results,
        explanation,
    }
}

/// Keeps the candidate a gate turned away if it is the best so far: the highest coverage,
/// ties by the result order.
fn offer_rejected(
    best: &mut Option<(stages::Scored, Gate)>,
    s: stages::Scored,
    gate: Gate,
    index: &Index,
    rules: Rules,
) {
    let better = best.as_ref().is_none_or(|(b, _)| {
        s.coverage > b.coverage
            || s.coverage == b.coverage && stages::order(&s, b, index, rules).is_lt()
    });
    if better {
        *best = Some((s, gate));
    }
}

/// The stages over one request as a whole.
fn search_request(index: &Index, visible: &Visible, req: &Request) -> Answer {
    let rules = req.rules;
    let mut analysis = analyze(req.query);
    // Each term once, chosen by the kinds the text gives; a rule turned off then changes them.
    let distinct = analysis.distinct_at();
    for t in &mut analysis.tokens {
        if !rules.has(Rule::ValuesNoMass) && t.kind == Kind::Value
            || !rules.has(Rule::StopWords) && t.kind == Kind::StopWord
            || !rules.has(Rule::RequestFrame) && t.kind == Kind::Frame
        {
            t.kind = Kind::Word;
        }
    }
    let tokens: Vec<&QueryToken> = distinct.iter().map(|&i| &analysis.tokens[i]).collect();
    // Rule 17's actions as asked: a past participle describes the data (`issues created last
    // week`), it does not ask for the action (rule `ParticiplesDescribe`).
    let asking: Vec<&QueryToken> = tokens
        .iter()
        .copied()
        .filter(|t| !(rules.has(Rule::ParticiplesDescribe) && t.is_participle()))
        .collect();
    let asked_terms: Vec<&str> = asking.iter().map(|t| t.term.as_str()).collect();
    let products = stages::products(index, visible, req.directory, &analysis.tokens);
    let words: Vec<&QueryToken> = tokens
        .iter()
        .copied()
        .filter(|t| t.kind == Kind::Word)
        .collect();
    let ignored_terms = words.len().saturating_sub(MAX_QUERY_TERMS);
    let words = &words[..words.len().min(MAX_QUERY_TERMS)];
    let word_terms: Vec<&str> = words.iter().map(|t| t.term.as_str()).collect();
    let surfaces: Vec<&str> = words.iter().map(|t| t.text.as_str()).collect();
    let rec = stages::gather(index, visible, &word_terms, &surfaces);
    let pool = stages::Pool {
        index,
        visible,
        directory: req.directory,
    };
    let masses = stages::mass(words, &rec, &pool, &products, rules);
    // From +0.0: std's float `sum` starts at -0.0, which an empty query's explanation printed.
    let total: f64 = masses.iter().fold(0.0, |sum, m| sum + m.mass);
    let exact: Vec<DocId> = index
        .by_name(req.query)
        .iter()
        .copied()
        .filter(|&d| visible.contains(d))
        .collect();
    let mut products = products;
    if rules.has(Rule::ProductSlot) && products.visible.is_empty() {
        if let Some(slot) = product_slot(&analysis.tokens) {
            let unknown = slot.iter().all(|t| {
                words
                    .iter()
                    .position(|w| w.term == t.term)
                    .is_some_and(|i| masses[i].role == Role::Unknown)
            });
            if unknown {
                let name: Vec<&str> = slot.iter().map(|t| t.text.as_str()).collect();
                products.hidden.push(name.join(" "));
            }
        }
    }
    let detected = rules.has(Rule::ProductDetection)
        && products.visible.is_empty()
        && !products.hidden.is_empty()
        && exact.is_empty();
    let mut passing: Vec<stages::Scored> = Vec::new();
    let mut best_rejected: Option<(stages::Scored, Gate)> = None;
    // Nothing is scored for a request whose product is not connected, or that has no mass.
    if !detected && (total > 0.0 || !exact.is_empty()) {
        // Rule `ReadGetsNoWrite`: the directory, when the request only asks to read.
        let read_request = req.directory.filter(|d| {
            let question = rules.has(Rule::QuestionsRead) && analysis.is_question();
            rules.has(Rule::ReadGetsNoWrite) && stages::asks_only_to_read(&asking, d, question)
        });
        for s in stages::score(&rec, &masses, index, &products, &exact, rules) {
            let verdict = stages::gate(&s, rules).and_then(|()| match read_request {
                Some(d) if !s.exact && stages::writes_unasked(index, s.id, d, &asked_terms) => {
                    Err(Gate::WriteForRead)
                }
                _ => Ok(()),
            });
            match verdict {
                Ok(()) => passing.push(s),
                Err(g) => offer_rejected(&mut best_rejected, s, g, index, rules),
            }
        }
    }
    if rules.has(Rule::OutOfReach) && !passing.is_empty() {
        // Names against names: a description mentions other actions (`archived: true
        // deletes the block`), a name says what the tool does. A tool out of reach can only
        // beat a result whose name leaves some mass unmet.
        let unmet = passing
            .iter()
            .any(|s| !s.exact && s.name_coverage < 1.0 - stages::COVERAGE_ROUNDING);
        if unmet {
            let beyond = stages::out_of_reach_coverage(words, &masses, &pool);
            let (kept, dropped): (Vec<_>, Vec<_>) = passing
                .into_iter()
                .partition(|s| s.exact || s.name_coverage >= beyond - stages::COVERAGE_ROUNDING);
            passing = kept;
            for s in dropped {
                offer_rejected(&mut best_rejected, s, Gate::OutOfReach, index, rules);
            }
        }
    }
    passing.sort_by(|a, b| stages::order(a, b, index, rules));
    passing.truncate(req.limit.get());
    let term_match = |s: &stages::Scored| -> Vec<TermMatch> {
        rec.bits_of(s.cand)
            .iter()
            .zip(words.iter().zip(&masses))
            .filter(|(b, _)| **b != 0)
            .map(|(&b, (t, m))| {
                let weight = stages::field_weight(b, rules);
                let name_bits = if b & index::field::NAME_EXACT != 0 {
                    b & !index::field::NAME_PREFIX
                } else {
                    b
                };
                TermMatch {
                    token: t.text.clone(),
                    fields: FIELD_NAMES
                        .iter()
                        .filter(|(f, _)| name_bits & f != 0)
                        .map(|(_, n)| *n)
                        .collect(),
                    weight,
                    mass: m.mass,
                    contribution: if m.mass > 0.0 {
                        m.mass * f64::from(weight)
                    } else {
                        0.0
                    },
                }
            })
            .collect()
    };
    let results: Vec<Hit> = passing
        .iter()
        .map(|s| {
            let d = index.doc(s.id);
            Hit {
                id: s.id,
                name: d.name.clone(),
                connector: d.connector.clone(),
                description: d.description.clone(),
                input_schema: d.input_schema.clone(),
                score: s.score,
                coverage: s.coverage,
                explain: req.explain.then(|| term_match(s)),
            }
        })
        .collect();
    let explanation = (req.explain || results.is_empty()).then(|| {
        // Tokens without a part in the mass still show their df and idf, from the same gather.
        let others: Vec<&QueryToken> = tokens
            .iter()
            .copied()
            .filter(|t| t.kind != Kind::Word)
            .collect();
        let other_terms: Vec<&str> = others.iter().map(|t| t.term.as_str()).collect();
        let other_rec = stages::gather(index, visible, &other_terms, &[]);
        let reason = results.is_empty().then(|| {
            if visible.is_empty() {
                EmptyReason::EmptyPool
            } else if detected {
                EmptyReason::ProductNotConnected {
                    products: products.hidden.clone(),
                }
            } else if total == 0.0 {
                EmptyReason::NoCapabilityWord
            } else if let Some((_, gate)) = &best_rejected {
                EmptyReason::Rejected { gate: *gate }
            } else {
                EmptyReason::NothingCovers
            }
        });
        Explanation {
            pool: visible.len(),
            floor: FLOOR,
            mass: total,
            tokens: tokens
                .iter()
                .map(|&t| {
                    let at = words.iter().position(|w| std::ptr::eq(*w, t));
                    let (role, df, idf, m) = match at {
                        Some(i) => (masses[i].role, rec.df[i], masses[i].idf, masses[i].mass),
                        None => {
                            let j = others.iter().position(|o| std::ptr::eq(*o, t));
                            let df = j.map_or(0, |j| other_rec.df[j]);
                            // Not a word (or one past MAX_QUERY_TERMS): the text gives its role.
                            let role = Role::from_kind(t.kind).unwrap_or(Role::StopWord);
                            (role, df, stages::idf(visible.len(), df as usize), 0.0)
                        }
                    };
                    TokenExplain {
                        token: t.text.clone(),
                        term: t.term.clone(),
                        role,
                        tail: t.tail,
                        df,
                        idf,
                        mass_share: if total > 0.0 { m / total } else { 0.0 },
                    }
                })
                .collect(),
            uncovered: words
                .iter()
                .zip(&masses)
                .zip(&rec.df)
                .filter(|((_, m), df)| m.mass > 0.0 && **df == 0)
                .map(|((t, _), _)| t.text.clone())
                .collect(),
            products_named: products
                .visible
                .iter()
                .map(|&c| index.labels()[c as usize].text.clone())
                .collect(),
            products_not_connected: products.hidden.clone(),
            reason: reason.as_ref().map(ToString::to_string),
            why: reason,
            best_rejected: best_rejected
                .filter(|_| results.is_empty())
                .map(|(s, gate)| {
                    let (covered, missed) = words
                        .iter()
                        .zip(&masses)
                        .zip(rec.bits_of(s.cand))
                        .filter(|((_, m), _)| m.mass > 0.0)
                        .fold((vec![], vec![]), |(mut c, mut m), ((t, _), b)| {
                            if *b != 0 {
                                c.push(t.text.clone())
                            } else {
                                m.push(t.text.clone())
                            }
                            (c, m)
                        });
                    Rejected {
                        name: index.doc(s.id).name.to_string(),
                        coverage: s.coverage,
                        gate,
                        covered,
                        missed,
                    }
                }),
            ignored_terms,
            answered_by_steps: Vec::new(),
        }
    });
    Answer {
        query: req.query.to_owned(),
        results,
        explanation,
    }
}
