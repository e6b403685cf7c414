//! A member's MCP surface: what `tools/list` shows them and what their calls turn into.
//!
//! Built per request from the member's identity and their tenant's prepared documents, then
//! handed to the dispatcher as its [`ToolHost`]. Calls that need storage or the network come
//! back as [`Effect`]s for the Worker shell to perform.

use serde_json::{json, Map, Value};

use crate::mcp::wire::RpcError;
use crate::mcp::{CallToolResult, HostCall, Tool, ToolHost};
use crate::roster::Identity;

/// I/O a call needs before it can answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A command to the tenant's roster object; the reply becomes the tool's JSON result.
    Roster(crate::roster::Command),
}

/// The name of the control operation every member has.
pub const WHOAMI: &str = "whoami";

/// The `whoami` control operation's definition.
pub fn whoami_tool() -> Tool {
    Tool {
        name: WHOAMI.into(),
        title: Some("Who am I".into()),
        description: "Returns the tenant, member id and role this grant speaks for. Call it to check which account and permissions the gateway is using.".into(),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        annotations: Some(json!({"readOnlyHint": true, "openWorldHint": false})),
    }
}

/// One member's view for one request.
pub struct Surface<'a> {
    pub identity: &'a Identity,
    pub listing: Vec<Tool>,
}

/// The one message for a tool that does not exist *or* is hidden from the caller.
pub fn unknown_tool(name: &str) -> RpcError {
    let shown: String = name.chars().take(64).collect();
    RpcError::invalid_params(format!("Unknown tool: {shown}"))
}

impl ToolHost for Surface<'_> {
    type Effect = Effect;

    fn listing(&self) -> &[Tool] {
        &self.listing
    }

    fn call(&self, name: &str, _arguments: Map<String, Value>) -> HostCall<Effect> {
        if name == WHOAMI {
            let id = self.identity;
            return HostCall::Done(Ok(CallToolResult::json(json!({
                "tenant": id.tenant, "member": id.member, "role": id.role, "grant": id.grant_id,
            }))));
        }
        if self.listing.iter().any(|t| t.name == name) {
            return HostCall::Done(Err(RpcError::new(
                crate::mcp::code::INTERNAL_ERROR,
                format!("Tool {name} is listed but execution of connected tools is not configured on this gateway yet"),
            )));
        }
        HostCall::Done(Err(unknown_tool(name)))
    }
}
