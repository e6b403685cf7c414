//! Why a tool call is refused, in words the caller can act on.
//!
//! One type for every path a call takes — a control operation's arguments, a meta-tool's, a
//! connected tool's — so an unknown tool and a withheld one read exactly alike wherever they
//! are refused.

use std::fmt;

use serde_json::Value;

use crate::catalog::{quote, JsonPath};
use crate::schema::ArgumentError;

/// Why a call cannot run. Display gives a message for the caller.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// Unknown or withheld — deliberately indistinguishable.
    UnknownTool { name: String },
    /// The arguments do not fit the advertised schema (JSON-RPC −32602).
    InvalidArguments(ArgumentError),
    /// A caller value conflicts with a frozen value.
    FrozenConflict { field: String, frozen: Value },
    /// The tool is listed but its connector declares no HTTP operation for it.
    NoOperation { name: String },
    /// Its operation, stored in the tenant's compiled snapshot, does not decode. The bytes were
    /// checked when the snapshot was read, so only a fault of the gateway's own gives this.
    OperationUnreadable { name: String },
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::UnknownTool { name } => write!(f, "unknown tool {}", quote_name(name)),
            CallError::InvalidArguments(error) => write!(f, "invalid arguments: {error}"),
            CallError::FrozenConflict { field, frozen } => write!(
                f,
                "invalid arguments: {}: this argument is frozen to {frozen} by your tenant's policy; omit it or pass exactly that value",
                JsonPath::root().field("arguments").field(field)
            ),
            CallError::NoOperation { name } => write!(
                f,
                "tool {} cannot run: its connector declares no HTTP operation for it",
                quote(name)
            ),
            CallError::OperationUnreadable { name } => write!(
                f,
                "tool {} cannot run: its operation in the tenant's compiled snapshot is damaged; an operator can rebuild it (POST /admin/v1/versions/rebuild)",
                quote(name)
            ),
        }
    }
}

impl std::error::Error for CallError {}

impl From<ArgumentError> for CallError {
    fn from(error: ArgumentError) -> Self {
        CallError::InvalidArguments(error)
    }
}

/// Echoes a caller-supplied name, cut short so a huge name cannot bloat the error.
pub(crate) fn quote_name(name: &str) -> String {
    if name.chars().count() <= 80 {
        quote(name)
    } else {
        let cut: String = name.chars().take(80).collect();
        format!("{}…", quote(&cut))
    }
}

pub(crate) fn invalid(path: &JsonPath, message: impl Into<String>) -> CallError {
    CallError::InvalidArguments(ArgumentError {
        path: path.as_str().to_owned(),
        message: message.into(),
    })
}
