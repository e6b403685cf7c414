//! A member's MCP surface: what `tools/list` shows them and what their calls turn into.
//!
//! Built per request from the member's validated identity and their tenant's prepared copy,
//! then handed to the dispatcher as its [`ToolHost`]. `tools/call` and `execute_tool` both go
//! through [`MemberView::dispatch`](crate::resolver::MemberView::dispatch), one path with one
//! set of checks. Calls that need storage or the network come back as [`Effect`]s.

use std::rc::Rc;

use serde_json::{json, Map, Value};

pub mod control;

use crate::call_error::CallError;
use crate::control::{ControlOp, SearchRequest};
use crate::mcp::wire::RpcError;
use crate::mcp::{CallToolResult, HostCall, Tool, ToolHost};
use crate::names::ControlOpKind;
use crate::policy::UnknownRole;
use crate::rank;
use crate::resolver::{Dispatch, ResolvedCall};
use crate::roster::{Command, Identity};
use crate::tenant::{PreparedTenant, PreparedView};
use control::Answer;

/// I/O a call needs before it can answer.
#[derive(Debug, Clone)]
pub enum Effect {
    /// A command to the tenant's roster object; its reply is the tool's JSON result.
    Roster(Command),
    /// A connected tool's resolved call, to be built into a request and sent.
    Outbound(Box<ResolvedCall>),
    /// A one-time sign-in code for a member of the caller's tenant (an admin operation).
    SignInCode { member: String },
    /// A one-time link for the caller's own account of `connection`: to the paste page, or
    /// (`oauth`) through the provider's sign-in.
    AccountLink { connection: String, oauth: bool },
    /// `disconnect_account`: revoke at the provider (`oauth` with a revocation endpoint), then
    /// run `command` (`control::Answer::Disconnect`).
    Disconnect {
        command: Command,
        oauth: Option<std::sync::Arc<crate::catalog::oauth_client::OAuthClient>>,
    },
    /// `list_connections` completed with the caller's accounts (`control::with_accounts`).
    ListConnections { listing: Value },
}

/// One member's surface for one request.
pub struct Surface<'a> {
    identity: &'a Identity,
    tenant: &'a PreparedTenant,
    view: Result<Rc<PreparedView>, UnknownRole>,
    fallback: Vec<Tool>,
    now_ms: i64,
}

impl<'a> Surface<'a> {
    pub fn new(identity: &'a Identity, tenant: &'a PreparedTenant, now_ms: i64) -> Surface<'a> {
        let view = tenant.view(&identity.member, &identity.role);
        let fallback = match &view {
            Ok(_) => Vec::new(),
            Err(_) => vec![crate::control::definition(ControlOpKind::Whoami)],
        };
        Surface {
            identity,
            tenant,
            view,
            fallback,
            now_ms,
        }
    }

    fn whoami(&self, view: Option<&PreparedView>) -> Value {
        let mut answer = match view {
            Some(v) => control::whoami(&v.view, &self.identity.member),
            None => {
                json!({"tenant": self.identity.tenant, "member": self.identity.member, "role": self.identity.role})
            }
        };
        answer["grant"] = json!(self.identity.grant_id);
        if let Err(unknown) = &self.view {
            answer["problem"] = json!(unknown.to_string());
        }
        answer
    }

    fn control(&self, view: &PreparedView, op: ControlOp) -> HostCall<Effect> {
        if op == ControlOp::Whoami {
            // The surface adds what only it knows: the grant in use, an unknown role.
            return done_json(self.whoami(Some(view)));
        }
        let member = &self.identity.member;
        match control::answer(&view.view, &self.tenant.policy, op, member, self.now_ms) {
            Answer::Done(Ok(value)) => done_json(value),
            Answer::Done(Err(error)) => HostCall::Done(call_error(error)),
            Answer::Roster(command) => HostCall::Pending(Effect::Roster(command)),
            Answer::SignInCode { member } => HostCall::Pending(Effect::SignInCode { member }),
            Answer::AccountLink { connection, oauth } => {
                HostCall::Pending(Effect::AccountLink { connection, oauth })
            }
            Answer::Disconnect { command, oauth } => {
                HostCall::Pending(Effect::Disconnect { command, oauth })
            }
            Answer::Connections { listing } => {
                HostCall::Pending(Effect::ListConnections { listing })
            }
            Answer::Refused(message) => HostCall::Done(Ok(CallToolResult::error(message))),
        }
    }

    fn search(&self, view: &PreparedView, request: SearchRequest) -> HostCall<Effect> {
        let limit = request.limit;
        let (index, visible) = self.tenant.search_pool(view);
        let query = rank::v2::Request {
            limit,
            explain: request.explain,
            directory: Some(&self.tenant.deployment.search_directory),
            ..rank::v2::Request::new(&request.query)
        };
        let response = rank::v2::search(index, visible, &query);
        done_json(serde_json::to_value(response).unwrap_or(Value::Null))
    }
}

fn done_json(value: Value) -> HostCall<Effect> {
    HostCall::Done(Ok(CallToolResult::json(value)))
}

/// Maps a refusal to what the caller sees. Unknown and hidden tools share one message.
pub fn call_error(error: CallError) -> Result<CallToolResult, RpcError> {
    match error {
        CallError::NoOperation { .. } | CallError::OperationUnreadable { .. } => {
            Ok(CallToolResult::error(error.to_string()))
        }
        CallError::UnknownTool { .. }
        | CallError::InvalidArguments(_)
        | CallError::FrozenConflict { .. } => Err(RpcError::invalid_params(error.to_string())),
    }
}

impl ToolHost for Surface<'_> {
    type Effect = Effect;

    fn listing(&self) -> Result<&[Tool], RpcError> {
        Ok(match &self.view {
            Ok(view) => &view.listing,
            Err(_) => &self.fallback,
        })
    }

    fn call(&self, name: &str, arguments: Map<String, Value>) -> HostCall<Effect> {
        let Ok(view) = &self.view else {
            if name == ControlOpKind::Whoami.name() {
                return done_json(self.whoami(None));
            }
            return HostCall::Done(call_error(CallError::UnknownTool {
                name: name.to_owned(),
            }));
        };
        match view.view.dispatch(name, &Value::Object(arguments)) {
            Ok(Dispatch::Control(op)) => self.control(view, op),
            Ok(Dispatch::Search(request)) => self.search(view, request),
            Ok(Dispatch::Connected(call)) => HostCall::Pending(Effect::Outbound(call)),
            Err(error) => HostCall::Done(call_error(error)),
        }
    }
}

/// Why a call of a batch was not performed: the grant is asked for again before every call
/// after the first, so a revocation during a batch stops the calls that have not run yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotSent {
    /// The roster no longer accepts the grant.
    GrantRevoked,
    /// The roster could not be asked; nothing runs on a grant that was not re-checked.
    RecheckFailed,
}

impl std::fmt::Display for NotSent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotSent::GrantRevoked => write!(
                f,
                "not sent: this grant was revoked or its member suspended or removed while the request ran"
            ),
            NotSent::RecheckFailed => write!(
                f,
                "not sent: the gateway could not re-check this grant with the tenant's roster; try again"
            ),
        }
    }
}

/// The surface of a member whose tenant cannot be loaded (KV down or invalid documents, and no
/// earlier copy cached): the handshake and `ping` still work; listing and calls say why not.
pub struct Unavailable(pub RpcError);

impl Unavailable {
    pub fn tenant_catalog() -> Unavailable {
        Unavailable(RpcError::new(
            crate::mcp::code::INTERNAL_ERROR,
            "this tenant's tool catalog cannot be loaded (KV unavailable or its documents are invalid, and no earlier copy is cached); an operator has been told in the logs",
        ))
    }
}

impl ToolHost for Unavailable {
    type Effect = Effect;

    fn listing(&self) -> Result<&[Tool], RpcError> {
        Err(self.0.clone())
    }

    fn call(&self, _name: &str, _arguments: Map<String, Value>) -> HostCall<Effect> {
        HostCall::Done(Err(self.0.clone()))
    }
}
