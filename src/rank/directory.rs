//! The deployment's connector directory, used as public knowledge about the gateway.
//!
//! Every connector the gateway offers, with its tools, is known to everyone: it lets the ranker
//! tell "this looks like Cal.com, which is not in your pool" from "no tool does that", and tell
//! a word of the gateway's vocabulary from an incidental word. It is never a source of results:
//! nothing from it is ranked or named except connector labels.

use super::index::{Index, LabelWord};
use super::{Rules, ToolDoc};

/// The prepared connector directory.
pub struct Directory {
    index: Index,
}

impl Directory {
    /// Builds the directory with the shipped rules; use the same rules as the pool's index.
    pub fn build(tools: Vec<ToolDoc>) -> Directory {
        Directory::with_rules(tools, Rules::SHIPPED)
    }

    pub fn with_rules(tools: Vec<ToolDoc>, rules: Rules) -> Directory {
        Directory {
            index: Index::with_rules(tools, rules),
        }
    }

    /// Connector labels and the words a query must contain to name each, in the order of
    /// the ids `Index::named_connectors` gives.
    pub(super) fn connectors(&self) -> &[(String, Vec<LabelWord>)] {
        self.index.connector_labels()
    }

    pub(super) fn index(&self) -> &Index {
        &self.index
    }

    /// Connector labels of the directory.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.connectors().iter().map(|(l, _)| l.as_str())
    }

    pub fn len(&self) -> usize {
        self.connectors().len()
    }

    pub fn is_empty(&self) -> bool {
        self.connectors().is_empty()
    }
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("connectors", &self.len())
            .field("tools", &self.index.len())
            .finish()
    }
}
