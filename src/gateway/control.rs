//! Answering the control operations, each in one place.
//!
//! Their definitions and argument parsing are in [`crate::control`]; here each operation gets
//! its answer: computed from the member's view (and the policy), or as a command for the
//! tenant's roster object, which the shell runs and whose reply is the tool's result.

use serde_json::{json, Value};

use crate::accounts::{AccountKind, STATUS_CONNECTED, STATUS_NOT_CONNECTED};
use crate::call_error::CallError;
use crate::catalog::ConnectionStatus;
use crate::control::ControlOp;
use crate::names::ControlOpKind;
use crate::policy::Policy;
use crate::resolver::{MemberView, VisibleConnection};
use crate::roster::{AccountInfo, Actor, Command, MemberStatus};

/// What a control operation comes to.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Answered from the member's view.
    Done(Result<Value, CallError>),
    /// Needs the member store: the roster object runs this command.
    Roster(Command),
    /// A one-time sign-in code for `member`: the shell draws the secret and asks the roster
    /// object (`oauth::command::OAuthCommand::IssueSignIn`).
    SignInCode { member: String },
    /// A one-time link for the caller to connect their own account to `connection`: the shell
    /// signs it (grant key, randomness, the gateway's origin). `oauth`: the link leads to the
    /// provider's sign-in rather than the paste page.
    AccountLink { connection: String, oauth: bool },
    /// `disconnect_account`: the roster deletes the row (`command`) after the shell revoked
    /// the tokens at the provider, when the connector declares OAuth (`oauth`).
    Disconnect {
        command: Command,
        oauth: Option<std::sync::Arc<crate::catalog::oauth_client::OAuthClient>>,
    },
    /// `list_connections`: the view's part, completed by [`with_accounts`] with the accounts
    /// the roster holds for the caller.
    Connections { listing: Value },
    /// Refused, as the tool's error (`isError`), with what to do.
    Refused(String),
}

/// The answer to `op`, called by `member` at `now_ms`.
pub fn answer(
    view: &MemberView,
    policy: &Policy,
    op: ControlOp,
    member: &str,
    now_ms: i64,
) -> Answer {
    let me = member.to_owned();
    let now = now_ms;
    let by = Actor::Member(me.clone());
    let set_status = |member_id: String, status: MemberStatus| Command::SetStatus {
        member: member_id,
        status,
        now,
        by: by.clone(),
    };
    Answer::Roster(match op {
        ControlOp::Whoami => return Answer::Done(Ok(whoami(view, member))),
        ControlOp::ListConnectors => return Answer::Done(Ok(list_connectors(view))),
        ControlOp::ListConnections { connector } => {
            return Answer::Connections {
                listing: list_connections(view, connector.as_deref()),
            }
        }
        ControlOp::ConnectAccount { connection } => {
            return match may_connect_account(view, &connection) {
                Ok(_) => Answer::AccountLink {
                    oauth: view.oauth_client_of(&connection).is_some(),
                    connection,
                },
                Err(refusal) => Answer::Refused(refusal),
            }
        }
        ControlOp::DisconnectAccount { connection } => {
            if let Err(refusal) = own_account(view, &connection) {
                return Answer::Refused(refusal);
            }
            return Answer::Disconnect {
                oauth: view.oauth_client_of(&connection),
                command: Command::DeleteAccount {
                    connection,
                    member: Some(me),
                    now,
                    by: by.clone(),
                },
            };
        }
        ControlOp::DescribeTool { name } => return Answer::Done(describe_tool(view, &name)),
        ControlOp::ViewPolicy => return Answer::Done(view_policy(view, policy)),
        ControlOp::IssueSignInCode { member_id } => {
            return Answer::SignInCode { member: member_id }
        }
        ControlOp::ListMyGrants => Command::ListGrants { member: Some(me) },
        ControlOp::RevokeMyGrant { grant_id } => Command::RevokeGrant {
            id: grant_id,
            member: Some(me),
            now,
            by: by.clone(),
        },
        ControlOp::ListMembers => Command::ListMembers,
        ControlOp::SuspendMember { member_id } => set_status(member_id, MemberStatus::Suspended),
        ControlOp::ReinstateMember { member_id } => set_status(member_id, MemberStatus::Active),
        ControlOp::RemoveMember { member_id } => set_status(member_id, MemberStatus::Removed),
    })
}

/// `whoami` for `member`, from their view; the shell may add what the member store knows
/// (status). The member comes from the caller, not the view: members of a role with no override
/// of their own share one view.
pub fn whoami(view: &MemberView, member: &str) -> Value {
    json!({
        "member": member,
        "role": view.role,
        "tenant": view.tenant(),
        "connectors": view.connectors().len(),
        "connected_tools": view.tools().len(),
        "control_operations": view.control_ops().iter().map(|op| op.name()).collect::<Vec<_>>(),
    })
}

/// `list_connectors`: the browse stage.
pub fn list_connectors(view: &MemberView) -> Value {
    let connectors: Vec<Value> = view
        .connectors()
        .iter()
        .map(|c| {
            let connected = view
                .connections()
                .iter()
                .any(|k| k.connector == c.id && k.status == ConnectionStatus::Active);
            json!({
                "id": c.id,
                "label": c.label,
                "connected": connected,
                "can_connect": c.connectable,
                "tools": c.advertised_tools,
            })
        })
        .collect();
    json!({ "connectors": connectors })
}

/// Whether `caller` may issue a sign-in code for `target` over MCP. A code signs its holder
/// in as the target, so a tenant admin may issue one for themselves or for a member whose role
/// allows no admin operation; another admin's codes come from the operator (admin API).
/// `target_view` is the target's view (`None`: their role is not in the policy, so they reach
/// nothing).
pub fn may_issue_sign_in_code(
    caller: &str,
    target: &str,
    target_view: Option<&MemberView>,
) -> Result<(), String> {
    let target_is_admin =
        target_view.is_some_and(|view| view.control_ops().iter().any(|op| op.is_admin()));
    if caller != target && target_is_admin {
        return Err(format!(
            "member {target:?} has admin operations: only the operator issues their sign-in codes (admin API), so no admin can sign in as another"
        ));
    }
    Ok(())
}

/// A roster command's reply as a tool's structured result. MCP's `structuredContent` is an
/// object, so a list is named for what it lists.
pub fn roster_reply(command: &Command, reply: Value) -> Value {
    match (command, reply) {
        (_, reply @ Value::Object(_)) => reply,
        (Command::ListGrants { .. }, list) => json!({ "grants": list }),
        (Command::ListMembers, list) => json!({ "members": list }),
        (_, other) => json!({ "result": other }),
    }
}

/// What a member's access reaches, in words for the OAuth consent page: each usable
/// connection with its connector and how many tools it brings.
pub fn reaches(view: &MemberView) -> Vec<String> {
    view.connections()
        .iter()
        .filter(|c| c.status == ConnectionStatus::Active)
        .map(|c| {
            let connector = view.connectors().iter().find(|k| k.id == c.connector);
            match connector {
                Some(k) => format!("{} ({}, {} tools)", c.label, k.label, k.advertised_tools),
                None => c.label.clone(),
            }
        })
        .collect()
}

/// `list_connections`, optionally for one connector, before the roster's accounts are known:
/// [`with_accounts`] adds each one's `account_status`. An invisible connector id gives an empty
/// list, like a connector with no accounts.
pub fn list_connections(view: &MemberView, connector: Option<&str>) -> Value {
    let connections: Vec<Value> = view
        .connections()
        .iter()
        .filter(|c| connector.is_none_or(|id| c.connector == id))
        .map(|c| {
            json!({
                "id": c.id,
                "connector": c.connector,
                "label": c.label,
                "status": c.status.as_str(),
                "account": c.account.as_str(),
                "operator_secret": c.operator_secret,
                "takes_credential": c.takes_credential,
            })
        })
        .collect();
    json!({ "connections": connections })
}

/// `account_status` when a connector needs no credential at all (`auth: none`).
pub const STATUS_NOT_NEEDED: &str = "not_needed";

/// Completes [`list_connections`] with `accounts`, the roster's rows for `member` and the
/// shared ones (never a credential: the rows hold none). A personal connection's status is
/// the caller's own account's; a shared one's is the admin-set account's, else the operator's
/// Worker secret counts as connected. Only the caller's rows are read, whatever is passed.
pub fn with_accounts(listing: Value, member: &str, accounts: &[AccountInfo]) -> Value {
    let Value::Object(mut out) = listing else {
        return listing;
    };
    if let Some(Value::Array(connections)) = out.get_mut("connections") {
        for entry in connections.iter_mut() {
            let id = entry["id"].as_str().unwrap_or_default().to_owned();
            let personal = entry["account"] == AccountKind::PERSONAL;
            let row = accounts.iter().find(|a| {
                a.connection == id
                    && match &a.member {
                        Some(m) => personal && m == member,
                        None => !personal,
                    }
            });
            let operator_secret = entry["operator_secret"] == Value::Bool(true);
            let takes_credential = entry["takes_credential"] == Value::Bool(true);
            let status = match row {
                Some(row) => row.status.as_str(),
                None if !takes_credential => STATUS_NOT_NEEDED,
                None if !personal && operator_secret => STATUS_CONNECTED,
                None => STATUS_NOT_CONNECTED,
            };
            entry["account_status"] = json!(status);
            if let Some(row) = row {
                entry["account_updated_at"] = json!(row.updated_at);
            }
            if let Value::Object(fields) = entry {
                fields.remove("operator_secret");
                fields.remove("takes_credential");
            }
        }
    }
    Value::Object(out)
}

/// The refusal for a connection the member cannot see: the same words whether it does not
/// exist or is withheld, as for tools.
fn unknown_connection(connection: &str) -> String {
    format!("unknown connection {connection:?}; list_connections shows the ones you can use")
}

/// The caller's personal connection `connection`, or why it is not one they may manage.
pub fn own_account<'v>(
    view: &'v MemberView,
    connection: &str,
) -> Result<&'v VisibleConnection, String> {
    let found = view
        .connections()
        .iter()
        .find(|c| c.id == connection)
        .ok_or_else(|| unknown_connection(connection))?;
    if found.account == AccountKind::Shared {
        return Err(format!(
            "connection {connection:?} is shared: its one account is set by a tenant administrator (admin API), not by each member"
        ));
    }
    Ok(found)
}

/// The connect stage for `connect_account`: a personal connection the caller may use (visible
/// and active) of a connector the policy lets them connect.
pub fn may_connect_account<'v>(
    view: &'v MemberView,
    connection: &str,
) -> Result<&'v VisibleConnection, String> {
    let found = own_account(view, connection)?;
    if found.status != ConnectionStatus::Active {
        return Err(format!(
            "connection {connection:?} is disabled; nothing can be connected to it"
        ));
    }
    if !view.may_connect(&found.connector) {
        return Err(format!(
            "your role may not connect accounts of connector {:?}; ask a tenant administrator",
            found.connector
        ));
    }
    Ok(found)
}

/// `describe_tool`: the full definition of a tool the member can call; anything else (unknown
/// or withheld) gets the same error as calling it.
pub fn describe_tool(view: &MemberView, name: &str) -> Result<Value, CallError> {
    let definition = view
        .definition_of(name)
        .ok_or_else(|| CallError::UnknownTool {
            name: name.to_owned(),
        })?;
    let mut out = serde_json::to_value(&definition).unwrap_or(Value::Null);
    if let Some(tool) = view.tool(name) {
        out["connector"] = Value::String(tool.connector_label.to_string());
        out["connections"] = json!(tool.connection_labels);
    }
    Ok(out)
}

/// `view_policy`, for members whose role allows it.
pub fn view_policy(view: &MemberView, policy: &Policy) -> Result<Value, CallError> {
    if !view.allows_control(ControlOpKind::ViewPolicy) {
        return Err(CallError::UnknownTool {
            name: ControlOpKind::ViewPolicy.name().to_owned(),
        });
    }
    Ok(policy.document().clone())
}
