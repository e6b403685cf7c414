//! The shapes an explanation takes: per query token, per result, and for an empty answer.
//!
//! Everything here is computed from the caller's pool (and, for a product hint, from the public
//! connector directory): an explanation can never name a tool the caller cannot see.

use super::Role;
use serde::Serialize;

/// Per distinct query token: how rare it is in the pool and whether it carries mass.
#[derive(Clone, Debug, Serialize)]
pub struct TokenExplain {
    pub token: String,
    /// The indexed form, when stemming changed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub term: Option<String>,
    pub role: Role,
    /// Tools of the pool that cover the token.
    pub df: usize,
    pub idf: f64,
    /// Share of the query mass this token carries (0 for tokens without mass).
    pub mass_share: f64,
}

/// What placed a result where it is, besides its score and coverage (rule `specific_first`).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct OrderExplain {
    /// A tool of a product the query names.
    pub named_product: bool,
    /// Its name destroys and the query does not ask to: it comes after the others.
    pub destroys_unasked: bool,
    /// The share of its name's terms the query meets.
    pub name_focus: f64,
}

/// Which fields of one result matched one query token.
#[derive(Clone, Debug, Serialize)]
pub struct FieldMatch {
    pub token: String,
    /// `exact`, `prefix` or `synonym` when a name token matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'static str>,
    /// The name token that matched (a prefix or a synonym of the query token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_token: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub connector: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub description: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub parameter: bool,
    /// The synonym of the token that the description or parameter name has (when only a
    /// synonym matched there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synonym: Option<String>,
    /// The token's contribution to the score.
    pub weight: u32,
}

/// The best candidate that the floor (or product detection) turned away.
#[derive(Clone, Debug, Serialize)]
pub struct Rejected {
    pub name: String,
    pub score: u32,
    pub coverage: f64,
    pub covered: Vec<String>,
    pub missed: Vec<String>,
}

/// What the connector directory says about the query's product.
#[derive(Clone, Debug, Serialize)]
pub struct ProductHint {
    /// The connector label the query names.
    pub label: String,
    /// Whether the caller's pool has that connector.
    pub visible: bool,
}

/// Why the results are what they are.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    /// Tools in the caller's pool (N of the IDF).
    pub pool: usize,
    pub floor: f64,
    /// Σ idf over the tokens that carry mass.
    pub mass: f64,
    pub tokens: Vec<TokenExplain>,
    /// Tokens with mass that nothing in the pool covers.
    pub uncovered: Vec<String>,
    /// Products the query names, visible or not (from the pool and the directory).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub products: Vec<ProductHint>,
    /// Set when there are no results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_rejected: Option<Rejected>,
}
