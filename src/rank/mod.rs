//! Tool search: a lexical ranker with a relevance floor (SPEC §7).
//!
//! When a member sees too many tools, this module alone decides which third-party tools the
//! model gets to see, so it must be exact (fixed rules, named constants), explainable (every
//! result and every empty answer can say why) and safe: IDF and the floor are computed over the
//! caller's visible pool only, so a withheld tool cannot change any result, score, count or
//! explanation. The [`Index`] is built once per catalog version; a [`Subset`] selects the
//! caller's pool; [`Index::search`] answers one query.
//!
//! The literal SPEC rules are [`Rules::LITERAL`]; what ships is [`Rules::SHIPPED`], and each
//! difference is measured in `docs/ranking-log.md`.

mod analyze;
#[cfg(feature = "bm25-baseline")]
pub mod bm25;
mod directory;
mod explain;
mod index;
mod synonyms;
pub mod v2;

pub use analyze::{
    name_destroys, stem, Role, DESTRUCTIVE_VERBS, FUNCTION_WORDS, PHRASE_PREPOSITIONS, READ_VERBS,
    WRITE_VERBS,
};
pub use directory::Directory;
pub use explain::{Explanation, FieldMatch, OrderExplain, ProductHint, Rejected, TokenExplain};
pub use index::{Index, Subset, ToolDoc};
pub use synonyms::SYNONYMS;

use std::sync::Arc;

use serde::Serialize;

/// An exact match of a query token with a token of the tool's name.
pub const EXACT_NAME_TOKEN: u32 = 5;
/// A name token and a query token where one is a prefix of the other.
pub const NAME_PREFIX: u32 = 3;
/// A query token found in the connector label.
pub const CONNECTOR_LABEL: u32 = 2;
/// A query token found in the description (scaffolding stop-words excluded).
pub const DESCRIPTION_TOKEN: u32 = 1;
/// A query token found in a top-level `inputSchema` property name (shipped rules only).
pub const PARAMETER_NAME: u32 = 1;
/// The shorter side of a prefix match must have at least this many characters: `repo` meets
/// `repository`, but `cal` does not meet `calendar`.
pub const MIN_PREFIX_LEN: usize = 4;
/// Shipped rules: a name token shorter than the query word meets it by prefix only when at most
/// this many characters of the query word remain (`configs` → `config`), so a compound word
/// (`sharepoint`, `databricks`, `timezone`) does not meet its first part (`share`, `data`,
/// `time`). The other direction (`repo` → `repository`) is unchanged.
pub const MAX_PREFIX_TAIL: usize = 3;
/// A name token equal to a synonym of the query token (`find` → `search`, shipped rules only).
pub const SYNONYM_NAME: u32 = 3;
/// A tool is returned only if it covers at least this share of the query's IDF mass.
pub const FLOOR: f64 = 0.5;

/// Which refinements of the literal SPEC §7 rules are on. Every flag is off in
/// [`Rules::LITERAL`]; `docs/ranking-log.md` gives the figures behind [`Rules::SHIPPED`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    /// Quoted text, numbers, dates, ids like `SVC123`, URLs, e-mails, paths carry no mass.
    pub argument_values_no_mass: bool,
    /// Terms are stemmed (indexed and queried alike).
    pub stem: bool,
    /// Top-level `inputSchema` property names are a fourth field, weight [`PARAMETER_NAME`].
    pub parameter_names: bool,
    /// With a directory: a query that names a connector of the directory that the caller
    /// cannot see, and no connector it can see, is answered empty.
    pub product_detection: bool,
    /// With a directory: a token that nothing in the pool covers, and that the directory knows
    /// only from descriptions (no tool name, no connector label has it), carries no mass.
    pub prose_words_no_mass: bool,
    /// When the query names a connector the caller can see, only that connector's tools are
    /// candidates.
    pub named_connector_only: bool,
    /// A word of several tokens in a label or description is also indexed whole (`HubSpot` →
    /// `hubspot`), and a query names a product by either spelling.
    pub compounds: bool,
    /// A query word of [`SYNONYMS`] is also covered by its alternatives: in a name with weight
    /// [`SYNONYM_NAME`], in a description or parameter name with weight 1 when nothing else of
    /// the tool covers it.
    pub synonyms: bool,
    /// With a directory: a query that names no product of the pool and has a word that
    /// nothing in the pool nor in the directory covers (`fathom`, `servicenow`) is answered
    /// empty: the word may name a product the gateway does not offer.
    pub unknown_word_abstains: bool,
    /// With a directory: a word that nothing in the pool covers and that the directory spells
    /// as a compound (`SharePoint`) keeps its mass, like a word of a tool name.
    pub compound_names_keep_mass: bool,
    /// A name token that is a prefix of the query word matches only when at most
    /// [`MAX_PREFIX_TAIL`] characters remain.
    pub short_prefix_tail: bool,
    /// When the query names a connector the caller can see, a tool of that connector also
    /// counts as covering a query token that another visible tool of the same connector
    /// covers (coverage only; the score is the tool's own). Measured and **not shipped**: it
    /// lifts every tool of the named product over the floor when the words are merely spread
    /// across its tools (`delete notion comment` → any comment tool at coverage 1.0), which is
    /// the wrong-tool failure the floor exists to stop; see docs/ranking-log.md.
    pub named_connector_vocabulary: bool,
    /// In a prose query that names a connector the caller can see, the words of an argument
    /// phrase ([`PHRASE_PREPOSITIONS`]: `… for this regression`, `… about pricing`) carry no
    /// mass, but still score, when words outside the phrases other than the product's name
    /// keep some. The product's own name keeps its mass wherever it stands.
    pub argument_phrases: bool,
    /// A result must match at least one query term that carries mass in its name or its
    /// connector label: a long description that happens to hold the query's words
    /// (`list available status pages` → a snapshot tool that says "List available snapshots")
    /// cannot carry a tool over the floor alone.
    pub name_anchor: bool,
    /// A name that matches a query word only through a synonym (`show` → `list_products`) also
    /// anchors a result. Measured and **not shipped**: a synonym says a tool might do what the
    /// word asks, not that the query named it, and with it a verb alone carried descriptions
    /// over the floor (`show active incidents on the status page` → `shopify_list_products`).
    pub synonym_anchors: bool,
    /// When the query has a word with mass that is not an action verb, the anchor of
    /// `name_anchor` must be such a word: `list` alone in a name does not make
    /// `freshdesk_list_tickets` an answer to `list available status pages`.
    pub object_anchor: bool,
    /// A query that asks to destroy ([`DESTRUCTIVE_VERBS`]: delete, remove, …) gets only tools
    /// that cover such a verb; a query that asks for another action ([`READ_VERBS`],
    /// [`WRITE_VERBS`]) and for no destruction gets no tool whose name destroys. An exact whole-name match is
    /// exempt. Without it, `remove my emoji reaction from a slack message` answered
    /// `slack_add_reaction` and `delete a draft email from gmail` answered `gmail_draft_email`.
    pub destructive_intent: bool,
    /// A query that only asks to read ([`READ_VERBS`], no write or destructive verb) gets no
    /// tool whose name has a write verb and no read verb: `show slack reactions` never answers
    /// `slack_add_reaction`. Measured and **not shipped**: it cost 5 dust hits on every seed, each
    /// a read request answered by a write tool that the protocol counts as a hit (`read the
    /// project custom field values on a github issue` → `set_issue_fields`), and no column
    /// measures the wrong tools it removes; see docs/ranking-log.md, rule 19.
    pub read_intent: bool,
    /// In a query that names a product of the pool, a word nothing in the pool covers but
    /// some directory tool name has (`priority` in `change the priority on jira issue …`) is a
    /// detail of the request, not the capability ([`Role::DetailWord`], no mass), when three
    /// things hold: it is not an action verb nor the query's first word; the query keeps an
    /// object word with mass besides the details and the product's name (`check outlook
    /// calendar availability` keeps nothing but `outlook`, so it stays empty); and it counts
    /// only for the named product's tools (another product's tool still needs it). A result
    /// must then cover one of the query's action verbs: `edit a message the slack bot posted`
    /// never answers `slack_post_message`. Rule 5 alone keeps the mass of such words.
    pub details_no_mass: bool,
    /// Order (never the floor): after an exact whole-name match, tools of a product the query
    /// names come first, then tools whose names are most made of the query's words (the share
    /// of a name's terms the query meets, exactly, by prefix or by synonym), then coverage,
    /// then score. Without it, the SPEC's order: score, then coverage. A long description
    /// no longer outranks a name that says exactly what was asked (`list orders in Shopify
    /// store`: `shopify_list_orders` before `shopify_list_draft_orders`).
    pub specific_first: bool,
}

impl Rules {
    /// SPEC §7 as written.
    pub const LITERAL: Rules = Rules {
        argument_values_no_mass: false,
        stem: false,
        parameter_names: false,
        product_detection: false,
        prose_words_no_mass: false,
        named_connector_only: false,
        compounds: false,
        synonyms: false,
        unknown_word_abstains: false,
        compound_names_keep_mass: false,
        short_prefix_tail: false,
        named_connector_vocabulary: false,
        argument_phrases: false,
        name_anchor: false,
        synonym_anchors: false,
        object_anchor: false,
        destructive_intent: false,
        read_intent: false,
        details_no_mass: false,
        specific_first: false,
    };
    /// What the gateway runs.
    pub const SHIPPED: Rules = Rules {
        argument_values_no_mass: true,
        stem: true,
        parameter_names: true,
        product_detection: true,
        prose_words_no_mass: true,
        named_connector_only: false,
        compounds: true,
        synonyms: true,
        unknown_word_abstains: true,
        compound_names_keep_mass: true,
        short_prefix_tail: true,
        named_connector_vocabulary: false,
        argument_phrases: true,
        name_anchor: true,
        synonym_anchors: false,
        object_anchor: true,
        destructive_intent: true,
        read_intent: false,
        details_no_mass: true,
        specific_first: true,
    };
}

impl Default for Rules {
    fn default() -> Self {
        Rules::SHIPPED
    }
}

/// Errors a caller of the ranker can get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RankError {
    /// A limit outside `1..=MAX`.
    BadLimit(usize),
}

impl std::fmt::Display for RankError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RankError::BadLimit(n) => write!(
                f,
                "limit must be between 1 and {} (got {n}); omit it for the default of {}",
                Limit::MAX.0,
                Limit::DEFAULT.0
            ),
        }
    }
}

impl std::error::Error for RankError {}

/// How many results a search may return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit(usize);

impl Limit {
    pub const DEFAULT: Limit = Limit(5);
    pub const MAX: Limit = Limit(25);

    pub fn new(n: usize) -> Result<Limit, RankError> {
        if n == 0 || n > Self::MAX.0 {
            Err(RankError::BadLimit(n))
        } else {
            Ok(Limit(n))
        }
    }

    pub const fn get(self) -> usize {
        self.0
    }
}

/// A limit compares with a plain count (`request.limit == 25`).
impl PartialEq<usize> for Limit {
    fn eq(&self, other: &usize) -> bool {
        self.0 == *other
    }
}

impl Default for Limit {
    fn default() -> Self {
        Limit::DEFAULT
    }
}

/// One query.
#[derive(Clone, Copy, Debug)]
pub struct SearchRequest<'a> {
    pub query: &'a str,
    pub limit: Limit,
    /// Adds per-token df/idf and matched fields to the response.
    pub explain: bool,
    /// The deployment's connector directory (public knowledge), for product detection.
    pub directory: Option<&'a Directory>,
}

impl<'a> SearchRequest<'a> {
    pub fn new(query: &'a str) -> Self {
        SearchRequest {
            query,
            limit: Limit::DEFAULT,
            explain: false,
            directory: None,
        }
    }
}

/// One returned tool: everything needed to call it in one hop.
#[derive(Clone, Debug, Serialize)]
pub struct SearchResult {
    pub name: Arc<str>,
    pub connector: Arc<str>,
    pub description: Arc<str>,
    #[serde(rename = "inputSchema")]
    pub input_schema: crate::lazy_json::LazyJson,
    pub score: u32,
    pub coverage: f64,
    /// Per query token: which fields matched (with `explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<FieldMatch>>,
    /// With `explain` and rule `specific_first`: the order keys before coverage and score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<OrderExplain>,
    /// The index id of the tool (not serialized).
    #[serde(skip)]
    pub id: u32,
}

/// The answer to one query.
#[derive(Clone, Debug, Serialize)]
pub struct SearchResponse {
    pub query: String,
    pub results: Vec<SearchResult>,
    /// With `explain`, or always when `results` is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}
