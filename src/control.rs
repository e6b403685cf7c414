//! The gateway's own control-plane operations, as tools.
//!
//! Members manage their own access through the same MCP endpoint they use for tools: who am I,
//! what can I reach, what does this tool take, which grants do I hold. Administrators also manage
//! members and read the policy. Each operation is an ordinary tool definition filtered by role
//! like any other, always listed individually (never behind search), and parsed here into a
//! typed [`ControlOp`] with validated arguments. The answers live with the member's surface
//! (`gateway::control`): from the member's view, or as a command to the roster object.

use serde_json::{json, Map, Value};

use crate::call_error::CallError;
use crate::catalog::JsonPath;
use crate::mcp::Tool;
use crate::names::{ControlOpKind, EXECUTE_TOOL, SEARCH_TOOLS};
use crate::schema::{check_arguments, ArgumentError};

/// A control operation with its validated arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlOp {
    Whoami,
    ListConnectors,
    ListConnections { connector: Option<String> },
    ConnectAccount { connection: String },
    DisconnectAccount { connection: String },
    DescribeTool { name: String },
    ListMyGrants,
    RevokeMyGrant { grant_id: String },
    ListMembers,
    SuspendMember { member_id: String },
    ReinstateMember { member_id: String },
    RemoveMember { member_id: String },
    ViewPolicy,
    IssueSignInCode { member_id: String },
}

impl ControlOp {
    pub fn kind(&self) -> ControlOpKind {
        match self {
            ControlOp::Whoami => ControlOpKind::Whoami,
            ControlOp::ListConnectors => ControlOpKind::ListConnectors,
            ControlOp::ListConnections { .. } => ControlOpKind::ListConnections,
            ControlOp::ConnectAccount { .. } => ControlOpKind::ConnectAccount,
            ControlOp::DisconnectAccount { .. } => ControlOpKind::DisconnectAccount,
            ControlOp::DescribeTool { .. } => ControlOpKind::DescribeTool,
            ControlOp::ListMyGrants => ControlOpKind::ListMyGrants,
            ControlOp::RevokeMyGrant { .. } => ControlOpKind::RevokeMyGrant,
            ControlOp::ListMembers => ControlOpKind::ListMembers,
            ControlOp::SuspendMember { .. } => ControlOpKind::SuspendMember,
            ControlOp::ReinstateMember { .. } => ControlOpKind::ReinstateMember,
            ControlOp::RemoveMember { .. } => ControlOpKind::RemoveMember,
            ControlOp::ViewPolicy => ControlOpKind::ViewPolicy,
            ControlOp::IssueSignInCode { .. } => ControlOpKind::IssueSignInCode,
        }
    }

    /// Validates `arguments` against the operation's schema and extracts them.
    pub fn parse(kind: ControlOpKind, arguments: &Value) -> Result<ControlOp, CallError> {
        check_arguments(&definition(kind).input_schema, arguments)?;
        let text = |key: &str| -> Option<String> {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let required = |key: &str| -> Result<String, CallError> {
            let value = text(key).unwrap_or_default();
            if value.trim().is_empty() {
                Err(CallError::InvalidArguments(ArgumentError {
                    path: JsonPath::root()
                        .field("arguments")
                        .field(key)
                        .as_str()
                        .to_owned(),
                    message: "must not be empty".into(),
                }))
            } else {
                Ok(value)
            }
        };
        Ok(match kind {
            ControlOpKind::Whoami => ControlOp::Whoami,
            ControlOpKind::ListConnectors => ControlOp::ListConnectors,
            ControlOpKind::ListConnections => ControlOp::ListConnections {
                connector: text("connector"),
            },
            ControlOpKind::ConnectAccount => ControlOp::ConnectAccount {
                connection: required("connection")?,
            },
            ControlOpKind::DisconnectAccount => ControlOp::DisconnectAccount {
                connection: required("connection")?,
            },
            ControlOpKind::DescribeTool => ControlOp::DescribeTool {
                name: required("name")?,
            },
            ControlOpKind::ListMyGrants => ControlOp::ListMyGrants,
            ControlOpKind::RevokeMyGrant => ControlOp::RevokeMyGrant {
                grant_id: required("grant_id")?,
            },
            ControlOpKind::ListMembers => ControlOp::ListMembers,
            ControlOpKind::SuspendMember => ControlOp::SuspendMember {
                member_id: required("member_id")?,
            },
            ControlOpKind::ReinstateMember => ControlOp::ReinstateMember {
                member_id: required("member_id")?,
            },
            ControlOpKind::RemoveMember => ControlOp::RemoveMember {
                member_id: required("member_id")?,
            },
            ControlOpKind::ViewPolicy => ControlOp::ViewPolicy,
            ControlOpKind::IssueSignInCode => ControlOp::IssueSignInCode {
                member_id: required("member_id")?,
            },
        })
    }
}

fn annotations(
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    title: &str,
) -> Map<String, Value> {
    let value = json!({
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": false,
    });
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

fn one_string(name: &str, description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {name: {"type": "string", "minLength": 1, "description": description}},
        "required": [name],
        "additionalProperties": false
    })
}

/// The tool definition of a control operation.
pub fn definition(kind: ControlOpKind) -> Tool {
    let (description, input_schema, annotations) = match kind {
        ControlOpKind::Whoami => (
            "Show who you are on this gateway: your member id, your role, your tenant, and how many connectors and tools you can use. Call this first when unsure what you have access to.",
            no_arguments(),
            annotations(true, false, true, "Who am I"),
        ),
        ControlOpKind::ListConnectors => (
            "List the connectors (products such as Notion or GitHub) you can see, whether each has an account connected for you, whether you may connect one, and how many of its tools you can use.",
            no_arguments(),
            annotations(true, false, true, "List connectors"),
        ),
        ControlOpKind::ListConnections => (
            "List the connections you can see, with their connector, label and status; `account` says whether it uses one shared account or your own (personal), and `account_status` whether that account is connected, not_connected, expired or needs_reconnect. Credentials are never shown. The label is the value to pass as `connection` to tools that work with several accounts. Optionally filter by connector id.",
            json!({
                "type": "object",
                "properties": {"connector": {"type": "string", "description": "Only accounts of this connector id (from list_connectors)."}},
                "additionalProperties": false
            }),
            annotations(true, false, true, "List connected accounts"),
        ),
        ControlOpKind::ConnectAccount => (
            "Connect your own account to a personal connection (see list_connections): returns a one-time link for the user to open in a browser, where they paste their API key. Never ask the user for the key in the chat, and never pass it as an argument. The link works once, for 15 minutes.",
            one_string("connection", "The connection id from list_connections."),
            annotations(false, false, false, "Connect my account"),
        ),
        ControlOpKind::DisconnectAccount => (
            "Disconnect your own account from a personal connection: the stored key is deleted and its tools stop working for you until you connect again. The key itself stays valid at the provider; revoke it there if it should stop working everywhere.",
            one_string("connection", "The connection id from list_connections."),
            annotations(false, true, true, "Disconnect my account"),
        ),
        ControlOpKind::DescribeTool => (
            "Show the full definition of one tool you can use: its description, its complete input schema and its annotations. Use it before calling a tool found with search_tools when you need the exact arguments.",
            one_string("name", "The exact tool name."),
            annotations(true, false, true, "Describe a tool"),
        ),
        ControlOpKind::ListMyGrants => (
            "List your own access grants (bearer tokens) for this gateway: id, creation time and last use. Token values are never shown.",
            no_arguments(),
            annotations(true, false, true, "List my grants"),
        ),
        ControlOpKind::RevokeMyGrant => (
            "Revoke one of your own grants by id (from list_my_grants). Requests using it are refused immediately. Revoking the grant this session uses ends the session.",
            one_string("grant_id", "The grant id from list_my_grants."),
            annotations(false, true, true, "Revoke one of my grants"),
        ),
        ControlOpKind::ListMembers => (
            "Admin: list the tenant's members with their role and status (active, suspended, removed).",
            no_arguments(),
            annotations(true, false, true, "List members"),
        ),
        ControlOpKind::SuspendMember => (
            "Admin: suspend a member. All of their grants are revoked in the same transaction; their next request is refused. Reversible with reinstate_member.",
            one_string("member_id", "The member id from list_members."),
            annotations(false, true, true, "Suspend a member"),
        ),
        ControlOpKind::ReinstateMember => (
            "Admin: reinstate a suspended member. Their old grants stay revoked; they need a new grant to connect again.",
            one_string("member_id", "The member id from list_members."),
            annotations(false, false, true, "Reinstate a member"),
        ),
        ControlOpKind::RemoveMember => (
            "Admin: remove a member from the tenant for good. All of their grants are revoked in the same transaction. This cannot be undone.",
            one_string("member_id", "The member id from list_members."),
            annotations(false, true, true, "Remove a member"),
        ),
        ControlOpKind::ViewPolicy => (
            "Admin: show the tenant's policy document: roles, their restrictions, and per-member overrides.",
            no_arguments(),
            annotations(true, false, true, "View the policy"),
        ),
        ControlOpKind::IssueSignInCode => (
            "Admin: issue a one-time sign-in code for an active member, so they can connect an OAuth client (Claude.ai, ChatGPT, …) to this gateway: they paste it on the sign-in page the client opens. Shown once; works once, for 15 minutes.",
            one_string("member_id", "The member id from list_members."),
            annotations(false, false, false, "Issue a sign-in code"),
        ),
    };
    Tool {
        name: kind.name().to_owned(),
        title: None,
        description: description.to_owned(),
        input_schema: input_schema.into(),
        annotations: Some(Value::Object(annotations)),
    }
}

/// Result limit of `search_tools` when the caller gives none: the ranker's own.
pub const DEFAULT_SEARCH_LIMIT: usize = crate::rank::Limit::DEFAULT.get();
/// The most results `search_tools` returns: the ranker's own.
pub const MAX_SEARCH_LIMIT: usize = crate::rank::Limit::MAX.get();

/// The `search_tools` meta-tool, listed when connected tools are collapsed.
pub fn search_tools_definition() -> Tool {
    Tool {
        name: SEARCH_TOOLS.to_owned(),
        title: None,
        description: "Find tools of your connected accounts (Notion, GitHub, …) by keywords or by a guessed tool name, e.g. \"create github issue\" or \"list_notion_users\". Returns the matching tools with their full input schema; run one with execute_tool. An empty result means none of your connected tools matches: say so instead of guessing, or rephrase with the product's own words. Set explain to true to see why tools matched or not. Gateway operations (whoami, list_connectors, …) are listed separately and never returned here.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Keywords or a guessed tool name."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "default": DEFAULT_SEARCH_LIMIT, "description": "Maximum number of tools to return."},
                "explain": {"type": "boolean", "default": false, "description": "Add per-word weights and matched fields, and say why a result is empty."}
            },
            "required": ["query"],
            "additionalProperties": false
        })
        .into(),
        annotations: Some(Value::Object(annotations(true, false, true, "Search your tools"))),
    }
}

/// The `execute_tool` meta-tool: runs a tool by name through the same checks as a direct call.
pub fn execute_tool_definition() -> Tool {
    Tool {
        name: EXECUTE_TOOL.to_owned(),
        title: None,
        description: "Run one of your connected tools by its exact name, usually one just returned by search_tools. Pass the tool's arguments as an object matching its input schema (including `connection` when the tool lists several accounts). The result is the tool's own result.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "The exact tool name from search_tools."},
                "arguments": {"type": "object", "description": "The tool's arguments, matching its input schema.", "default": {}}
            },
            "required": ["name"],
            "additionalProperties": false
        })
        .into(),
        annotations: Some(json!({"title": "Run a tool", "openWorldHint": true})),
    }
}

/// Validated `search_tools` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    pub query: String,
    /// Parsed once, here, into the ranker's type.
    pub limit: crate::rank::Limit,
    pub explain: bool,
}

pub fn parse_search_tools(arguments: &Value) -> Result<SearchRequest, CallError> {
    check_arguments(&search_tools_definition().input_schema, arguments)?;
    let query = arguments
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if query.trim().is_empty() {
        return Err(CallError::InvalidArguments(ArgumentError {
            path: "arguments.query".into(),
            message: "must contain at least one word".into(),
        }));
    }
    // The schema check above has held the limit to an integer in 1..=MAX.
    let limit = match arguments.get("limit").and_then(Value::as_u64) {
        None => crate::rank::Limit::DEFAULT,
        Some(n) => {
            crate::rank::Limit::new(usize::try_from(n).unwrap_or(usize::MAX)).map_err(|e| {
                CallError::InvalidArguments(ArgumentError {
                    path: "arguments.limit".into(),
                    message: e.to_string(),
                })
            })?
        }
    };
    Ok(SearchRequest {
        query: query.to_owned(),
        limit,
        explain: arguments
            .get("explain")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// `execute_tool` arguments: the inner tool's name and arguments (`{}` when absent).
pub fn parse_execute_tool(arguments: &Value) -> Result<(String, Value), CallError> {
    check_arguments(&execute_tool_definition().input_schema, arguments)?;
    let name = arguments
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let inner = arguments
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    Ok((name, inner))
}
