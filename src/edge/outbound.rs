//! Sending a connected tool's request to the third-party API, and recording that it happened.
//!
//! The core has already resolved the tool, checked the arguments and built the request, and
//! the final URL check has passed. Here the credential is read (the member's own account, the
//! shared one, or the Worker secret the connection names: `edge::accounts::credential_for`),
//! added as the connector's header, and the request is sent with a timeout,
//! without following redirects (so it cannot be bounced to another origin), and never retried.

use worker::{Context, Env, Headers, Method, Request, RequestInit, RequestRedirect};

use super::connect_oauth::{access_token, mark_refused, Account};
use crate::credential::{after_upstream, AfterUpstream};
use crate::mcp::wire::RpcError;
use crate::mcp::CallToolResult;
use crate::outbound::{build_request, OutboundConfig, OutboundRequest};
use crate::resolver::ResolvedCall;
use crate::roster::{Command, Identity};
use crate::upstream::{self, BodyReader};

pub async fn execute(
    env: &Env,
    ctx: &Context,
    allow_loopback_http: bool,
    timeout_ms: u64,
    identity: &Identity,
    call: ResolvedCall,
    now: i64,
) -> Result<CallToolResult, RpcError> {
    let started = super::now_ms();
    let request = match build_request(
        &call,
        &OutboundConfig {
            allow_loopback_http,
        },
    ) {
        Ok(request) => request,
        Err(error) => return Err(RpcError::invalid_params(error.refusal())),
    };
    // The caller's own account for a personal connection, never anyone else's; the shared
    // account or the operator's secret for a shared one (`credential::choose`).
    let used = match super::accounts::credential_for(
        env,
        identity,
        &call,
        now,
        allow_loopback_http,
        timeout_ms,
    )
    .await
    {
        Ok(used) => used,
        Err(refusal) => return Ok(refusal),
    };
    let (mut result, mut upstream_status) =
        send_answer(&request, used.secret.as_deref(), timeout_ms).await;
    // A stored account the API refused (`credential::after_upstream`): an access token gets one
    // forced refresh and one retry, then the account is marked; a pasted key is marked at once.
    if let Some(stored) = &used.stored {
        let account = Account {
            tenant: &identity.tenant,
            connection: &call.connection.id,
            member: stored.member.as_deref(),
        };
        let mut sealed = stored.sealed.clone();
        let mut retried = false;
        loop {
            match after_upstream(upstream_status, used.sent(), retried) {
                AfterUpstream::Answer => break,
                AfterUpstream::MarkAccount { status } => {
                    let why = match stored.oauth {
                        Some(_) => "the upstream refused the access token (HTTP 401)",
                        None => "the upstream refused the stored key (HTTP 401)",
                    };
                    result = mark_refused(env, account, &sealed, status, why, now).await;
                    break;
                }
                AfterUpstream::RefreshAndRetry => {
                    // Only an access token is refreshed, so its client is there.
                    let Some(oauth) = &stored.oauth else { break };
                    let tokens = match account.open(env, &sealed) {
                        Ok(tokens) => tokens,
                        Err(refusal) => {
                            result = refusal;
                            break;
                        }
                    };
                    match access_token(
                        env,
                        allow_loopback_http,
                        timeout_ms,
                        account,
                        &oauth.client,
                        sealed.clone(),
                        tokens,
                        now,
                        true,
                    )
                    .await
                    {
                        Ok(access) => {
                            sealed = access.sealed;
                            retried = true;
                            (result, upstream_status) =
                                send_answer(&request, Some(&access.token), timeout_ms).await;
                        }
                        // A refused refresh has marked the row; its error says how to reconnect.
                        Err(refusal) => {
                            result = refusal;
                            break;
                        }
                    }
                }
            }
        }
    }
    let latency_ms = super::now_ms() - started;
    let outcome = if result.is_error { "tool_error" } else { "ok" };
    let line = serde_json::json!({
        "event": "execution", "tenant": identity.tenant, "member": identity.member, "tool": call.tool,
        "connection": call.connection.id, "upstream_status": upstream_status, "outcome": outcome,
        "latency_ms": latency_ms,
    });
    worker::console_log!("{line}");
    let record = Command::RecordExecution {
        at: started,
        member: identity.member.clone(),
        tool: call.tool.clone(),
        connection: Some(call.connection.id.clone()),
        outcome: outcome.to_owned(),
        upstream_status: upstream_status.map(i64::from),
        latency_ms,
    };
    keep_record(env, ctx, identity, record);
    Ok(result)
}

/// Records a connected call that a batch did not send because the grant stopped being valid
/// (`gateway::NotSent`): the attempt is in the audit even though nothing left the gateway.
pub fn record_not_sent(env: &Env, ctx: &Context, identity: &Identity, call: &ResolvedCall) {
    let record = Command::RecordExecution {
        at: super::now_ms(),
        member: identity.member.clone(),
        tool: call.tool.clone(),
        connection: Some(call.connection.id.clone()),
        outcome: NOT_SENT.to_owned(),
        upstream_status: None,
        latency_ms: 0,
    };
    keep_record(env, ctx, identity, record);
}

/// The outcome of an execution row whose call was never sent.
const NOT_SENT: &str = "not_sent";

/// Writes an execution row after the answer has gone (`wait_until`).
fn keep_record(env: &Env, ctx: &Context, identity: &Identity, record: Command) {
    let (env, tenant) = (env.clone(), identity.tenant.clone());
    ctx.wait_until(async move {
        if let Err(e) = super::roster(&env, &tenant, &record).await {
            worker::console_error!("audit record failed: {e}");
        }
    });
}

/// [`send`], with what the platform refused while building or sending as this call's error,
/// never the whole request's: the other calls of a batch still get their answers.
async fn send_answer(
    request: &OutboundRequest,
    secret: Option<&str>,
    timeout_ms: u64,
) -> (CallToolResult, Option<u16>) {
    match send(request, secret, timeout_ms).await {
        Ok(outcome) => outcome,
        Err(error) => (
            CallToolResult::error(format!(
                "the gateway could not send this request: {}",
                upstream::redact(
                    &error.to_string(),
                    &secret
                        .map(|s| request.credential_forms(s))
                        .unwrap_or_default()
                )
            )),
            None,
        ),
    }
}

/// Builds the platform request, sends it with the timeout and maps the answer, redacting the
/// credential from it.
async fn send(
    request: &OutboundRequest,
    secret: Option<&str>,
    timeout_ms: u64,
) -> worker::Result<(CallToolResult, Option<u16>)> {
    let headers = Headers::new();
    for (name, value) in &request.headers {
        headers.set(name, value)?;
    }
    headers.set("Accept", "application/json, text/plain;q=0.9, */*;q=0.5")?;
    headers.set(
        "User-Agent",
        concat!("floorgate/", env!("CARGO_PKG_VERSION")),
    )?;
    if request.body.is_some() {
        headers.set("Content-Type", "application/json")?;
    }
    let mut forms = Vec::new();
    if let Some(secret) = secret {
        match request.credential_header(secret) {
            Ok(Some((name, value))) => headers.set(&name, &value)?,
            Ok(None) => {}
            Err(error) => return Ok((CallToolResult::error(error.to_string()), None)),
        }
        forms = request.credential_forms(secret);
    }
    let mut init = RequestInit::new();
    init.with_method(Method::from(request.method.as_str().to_owned()))
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual);
    if let Some(body) = &request.body {
        init.with_body(Some(body.as_str().into()));
    }
    let outgoing = Request::new_with_init(&request.url, &init)?;
    Ok(
        match super::http::fetch_within(outgoing, BodyReader::default(), timeout_ms).await {
            Ok(Some((status, headers, body))) => {
                let content_type = headers.get("Content-Type").ok().flatten();
                (
                    upstream::map_response(status, content_type.as_deref(), &body, &forms),
                    Some(status),
                )
            }
            Ok(None) => (
                upstream::unreachable(&format!("no complete answer within {timeout_ms} ms")),
                None,
            ),
            Err(error) => (
                upstream::unreachable(&upstream::redact(&error.to_string(), &forms)),
                None,
            ),
        },
    )
}
