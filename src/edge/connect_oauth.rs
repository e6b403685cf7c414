//! Members' own accounts at an OAuth provider (issue 19), served: the redirect to the
//! provider's authorization endpoint, the callback that redeems the code, the refresh of an
//! expired access token at call time (one at a time per account: the roster's lease), and the
//! RFC 7009 revocation on `disconnect_account`. Every decision is `provider_oauth`'s; this
//! reads the tenant's client secret, cookies and the clock, fetches, seals and asks the roster.
//! No token or client secret is ever logged, answered, rendered or audited.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use worker::{
    Delay, Env, Headers, Method, Request, RequestInit, RequestRedirect, Response, Result,
};

use super::oauth::{binding_of, member_view, page};
use super::{roster, Config};
use crate::account_link::{self, link_hash, Link, LINK_TTL_MS};
use crate::accounts::{STATUS_CONNECTED, STATUS_EXPIRED, STATUS_NEEDS_RECONNECT};
use crate::catalog::oauth_client::{Endpoint, OAuthClient};
use crate::credential::Missing;
use crate::gateway::control::may_connect_account;
use crate::mcp::CallToolResult;
use crate::oauth::pages;
use crate::oauth::params::Params;
use crate::provider_oauth::{
    self, authorization_url, code_exchange, freshness, parse_token_response, pkce_verifier,
    read_callback, refresh_request, revocation_request, revocation_succeeded, CallbackAnswer,
    ClientCredentials, FormPost, Freshness, State, StateKey, TokenError, Tokens,
};
use crate::roster::{Actor, Command, Identity, LeaseReply, SpentLink, StoredAccount};
use crate::upstream::BodyReader;
use crate::vault::{Owner, NONCE_BYTES};

/// The most of a token endpoint's answer that is read.
const MAX_TOKEN_ANSWER_BYTES: usize = 64 * 1024;
/// How long a call waits between looks at an account another call is refreshing.
const WAIT_STEP_MS: u64 = 100;
/// How many looks before the call gives up (a little past the lease).
const MAX_WAITS: usize = 170;

/// Whether this request is for a tenant's callback.
pub fn handles(path: &str) -> bool {
    path.starts_with(provider_oauth::CALLBACK_PREFIX)
}

fn state_key(env: &Env) -> std::result::Result<StateKey, String> {
    super::grant_key(env).map(|key| StateKey::derive(&key))
}

fn refused(status: u16, message: &str) -> Result<Response> {
    page(status, account_link::refused_page(message), None)
}

fn log(event: &str, tenant: &str, member: &str, connection: &str, detail: &str) {
    let line = json!({"event": event, "tenant": tenant, "member": member, "connection": connection, "detail": detail});
    worker::console_log!("{line}");
}

/// The gateway's client at the provider for `tenant`: the secret `T_<TENANT>__<client>`.
/// The error names the secret, never its value.
fn client_credentials(
    env: &Env,
    tenant: &str,
    client: &OAuthClient,
) -> std::result::Result<ClientCredentials, String> {
    let name = format!(
        "{}{}",
        crate::catalog::credential_prefix(tenant),
        client.client
    );
    if let Some(problem) = crate::catalog::credential_problem(tenant, &name) {
        return Err(problem);
    }
    let value = env
        .secret(&name)
        .map(|s| s.to_string())
        .map_err(|_| format!("the gateway's OAuth client for this provider is not configured for this organization (secret {name}); ask the operator"))?;
    ClientCredentials::parse(&value).map_err(|why| format!("secret {name}: {why}"))
}

/// The deployment's loopback rule, applied to a provider endpoint before anything is sent.
fn endpoint_allowed(endpoint: &Endpoint, allow_loopback: bool) -> std::result::Result<(), String> {
    match crate::catalog::host::host_problem(&endpoint.origin.host, allow_loopback) {
        Some(problem) => Err(format!(
            "the provider's endpoint cannot be reached: {problem}"
        )),
        None => Ok(()),
    }
}

/// POSTs a form to the provider under the deployment's upstream deadline, no redirects.
/// `Ok(None)`: no answer in time.
async fn post_form(form: &FormPost, timeout_ms: u64) -> Result<Option<(u16, Vec<u8>)>> {
    let headers = Headers::new();
    headers.set("Content-Type", "application/x-www-form-urlencoded")?;
    headers.set("Accept", "application/json")?;
    headers.set(
        "User-Agent",
        concat!("floorgate/", env!("CARGO_PKG_VERSION")),
    )?;
    if let Some(value) = &form.authorization {
        headers.set("Authorization", value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual)
        .with_body(Some(form.body.as_str().into()));
    let request = Request::new_with_init(&form.url, &init)?;
    let answer = super::http::fetch_within(
        request,
        BodyReader::with_limit(MAX_TOKEN_ANSWER_BYTES),
        timeout_ms,
    )
    .await?;
    Ok(answer.map(|(status, _, body)| (status, body.bytes().to_vec())))
}

// --- connecting: the redirect and the callback -------------------------------------------

/// A connection's shared account as the admin link connects it: its OAuth client and labels.
pub(super) struct SharedTarget {
    pub client: Arc<OAuthClient>,
    pub label: String,
    pub connector_label: String,
}

/// Checks, against the tenant's catalog as served now, that `connection` is a shared one whose
/// connector connects through OAuth (`admin::shared_oauth_target`); the refusal's status and words.
pub(super) async fn shared_target(
    env: &Env,
    config: &Config,
    tenant: &str,
    connection: &str,
    now: i64,
) -> std::result::Result<SharedTarget, (u16, String)> {
    let prepared = super::store::tenant(env, tenant, now, config.collapse_threshold)
        .await
        .map_err(|_| {
            (
                503,
                "The organization's catalog cannot be loaded just now. Try again.".to_owned(),
            )
        })?;
    let client = crate::admin::shared_oauth_target(&prepared.catalog, connection)
        .map_err(|refusal| (409, refusal.to_string()))?;
    let found = prepared.catalog.connection(connection);
    let label = found.map_or_else(|| connection.to_owned(), |c| c.label.clone());
    let connector_label = found
        .and_then(|c| prepared.catalog.connector(&c.connector))
        .map_or_else(String::new, |c| c.label.to_string());
    Ok(SharedTarget {
        client,
        label,
        connector_label,
    })
}

/// `POST /admin/v1/tenants/{t}/connections/{c}/account/connect`: a one-time link that connects
/// the connection's shared account at its provider, for whoever opens it in a browser. Its
/// member part is the reserved `account_link::SHARED_MEMBER`, so the state it leads to can only
/// store the shared account.
pub async fn shared_link(
    env: &Env,
    config: &Config,
    site: &crate::oauth::Site,
    request: crate::admin::SharedConnect,
) -> Result<Response> {
    let crate::admin::SharedConnect {
        tenant,
        connection,
        now,
    } = request;
    let target = match shared_target(env, config, &tenant, &connection, now).await {
        Ok(target) => target,
        Err((status, message)) => return super::http::error_response(status, &message),
    };
    if let Err(problem) = super::accounts::vault(env) {
        worker::console_error!("vault unavailable: {problem}");
        return super::http::error_response(503, "accounts cannot be connected on this gateway: its vault key (VAULT_MASTER_KEY) is not configured");
    }
    if let Err(problem) = client_credentials(env, &tenant, &target.client) {
        return super::http::error_response(503, &problem);
    }
    let Ok(key) = super::grant_key(env).map(|key| account_link::LinkKey::derive(&key)) else {
        return super::http::error_response(
            503,
            "links cannot be signed on this gateway: its GRANT_MAC_KEY is not configured",
        );
    };
    let mut nonce = [0u8; account_link::NONCE_BYTES];
    if getrandom::getrandom(&mut nonce).is_err() {
        return super::http::error_response(
            500,
            "the gateway has no randomness just now; try again",
        );
    }
    let link = Link::new(&tenant, account_link::SHARED_MEMBER, &connection, now);
    let Some(token) = link.sign(&key, &nonce) else {
        return super::http::error_response(
            409,
            "this connection's id cannot be carried in a link",
        );
    };
    log(
        "shared_connect_link",
        &tenant,
        "(shared)",
        &connection,
        "link issued",
    );
    super::http::json_response(
        200,
        &json!({
            "connection": connection,
            "member": null,
            "url": format!("{}?{}={token}", site.url(account_link::CONNECT_PATH), account_link::FIELD_LINK),
            "expires_at": link.expires_at,
            "instructions": format!("Open this link in a browser and sign in at the provider ({}) with the account every member of the organization will use through this connection. It works once, for 15 minutes.", target.connector_label),
        }),
    )
}

/// `GET /connect` for a connection whose connector connects through OAuth: sends the browser
/// to the provider with a state bound to this browser and the link it came from.
pub async fn start(
    env: &Env,
    config: &Config,
    req: &Request,
    link: &Link,
    link_token: &str,
    client: &OAuthClient,
    now: i64,
) -> Result<Response> {
    let Ok(key) = state_key(env) else {
        return refused(503, "Accounts cannot be connected on this gateway just now (its signing key is not configured); ask the operator.");
    };
    let credentials = match client_credentials(env, &link.tenant, client) {
        Ok(credentials) => credentials,
        Err(problem) => return refused(503, &problem),
    };
    if let Err(problem) = endpoint_allowed(&client.token_endpoint, config.allow_loopback_http) {
        return refused(503, &problem);
    }
    let binding = match binding_of(req) {
        Some(binding) => binding,
        None => {
            let mut random = [0u8; pages::BINDING_BYTES];
            if getrandom::getrandom(&mut random).is_err() {
                return refused(500, "The gateway has no randomness just now. Try again.");
            }
            pages::new_binding(&random)
        }
    };
    let state = State::new(
        &link.tenant,
        &link.member,
        &link.connection,
        &link_hash(link_token),
        now,
    );
    let Some(state) = state.sign(&key, &binding) else {
        return refused(400, "This connection cannot be connected through a link.");
    };
    let site = match super::oauth::site(req, config) {
        Ok(site) => site,
        Err(problem) => return refused(500, &problem),
    };
    let redirect_uri = site.url(&provider_oauth::callback_path(&link.tenant));
    let location = authorization_url(client, &credentials.id, &redirect_uri, &state, &key);
    log(
        "provider_redirect",
        &link.tenant,
        &link.member,
        &link.connection,
        "sent to the provider's sign-in",
    );
    let response = Response::empty()?.with_status(302);
    let headers = response.headers();
    headers.set("Location", &location)?;
    headers.set("Cache-Control", "no-store")?;
    headers.set("Referrer-Policy", "no-referrer")?;
    headers.set("Set-Cookie", &pages::binding_cookie(&binding))?;
    Ok(response)
}

/// `GET /connect/callback/<tenant>`: checks the state (this browser, this tenant, in time, its
/// link unspent), redeems the code with the verifier, seals the tokens and stores them with the
/// link spent, in one roster step. Anything refused stores nothing.
pub async fn callback(req: Request, env: &Env, config: &Config, path: &str) -> Result<Response> {
    if req.method() != Method::Get {
        return refused(405, "Open the link from your assistant in a browser.");
    }
    let now = super::clock(&req, config);
    let tenant = path
        .strip_prefix(provider_oauth::CALLBACK_PREFIX)
        .unwrap_or_default();
    let url = req.url()?;
    let Ok(params) = Params::parse(url.query().unwrap_or("")) else {
        return refused(400, &provider_oauth::BadCallback.to_string());
    };
    let (code, state_token) = match read_callback(|name| params.get(name)) {
        Ok(CallbackAnswer::Code { code, state }) => (code, state),
        Ok(CallbackAnswer::Denied { error, .. }) => {
            return refused(
                400,
                &format!("The provider did not grant access ({error}). Nothing was stored. Ask your assistant for a new link: it calls connect_account."),
            )
        }
        Err(bad) => return refused(400, &bad.to_string()),
    };
    let Ok(key) = state_key(env) else {
        return refused(503, "Accounts cannot be connected on this gateway just now (its signing key is not configured); ask the operator.");
    };
    let binding = binding_of(&req);
    let state = match State::verify(&key, &state_token, binding.as_deref(), tenant, now) {
        Ok(state) => state,
        Err(error) => {
            let line = json!({"event": "provider_callback_refused", "tenant": tenant, "reason": format!("{error:?}")});
            worker::console_log!("{line}");
            let status = if error == provider_oauth::StateError::Expired {
                410
            } else {
                400
            };
            return refused(status, &error.to_string());
        }
    };
    let spent = Command::LinkSpent {
        hash: state.link_hash.clone(),
    };
    match roster(env, &state.tenant, &spent).await? {
        Ok(Value::Bool(false)) => {}
        Ok(_) => {
            log(
                "provider_callback_refused",
                &state.tenant,
                &state.member,
                &state.connection,
                "link already used",
            );
            return refused(410, &crate::roster::RosterError::LinkUsed.to_string());
        }
        Err(error) => return refused(500, &error.to_string()),
    }
    // The shared account (an admin's link) or the member's own, checked again now.
    let shared = state.member == account_link::SHARED_MEMBER;
    let (client, label) = if shared {
        match shared_target(env, config, &state.tenant, &state.connection, now).await {
            Ok(target) => (target.client, target.label),
            Err((status, message)) => return refused(status, &message),
        }
    } else {
        let Some(view) = member_view(env, config, &state.tenant, &state.member).await else {
            return refused(
                403,
                "Your membership is not active, so no account can be connected.",
            );
        };
        let label = match may_connect_account(&view.view, &state.connection) {
            Ok(found) => found.label.clone(),
            Err(refusal) => return refused(403, &refusal),
        };
        let Some(client) = view.view.oauth_client_of(&state.connection) else {
            return refused(409, "This connection no longer connects through the provider's sign-in. Ask your assistant for a new link: it calls connect_account.");
        };
        (client, label)
    };
    let member = (!shared).then(|| state.member.clone());
    let credentials = match client_credentials(env, &state.tenant, &client) {
        Ok(credentials) => credentials,
        Err(problem) => return refused(503, &problem),
    };
    if let Err(problem) = endpoint_allowed(&client.token_endpoint, config.allow_loopback_http) {
        return refused(503, &problem);
    }
    let site = match super::oauth::site(&req, config) {
        Ok(site) => site,
        Err(problem) => return refused(500, &problem),
    };
    let redirect_uri = site.url(&provider_oauth::callback_path(&state.tenant));
    let verifier = pkce_verifier(&key, &state_token);
    let form = code_exchange(&client, &credentials, &code, &redirect_uri, &verifier);
    let tokens = match post_form(&form, config.upstream_timeout_ms).await {
        Ok(Some((status, body))) => parse_token_response(status, &body, now, None),
        Ok(None) => Err(TokenError::Status(504)),
        Err(_) => Err(TokenError::Status(502)),
    };
    let tokens = match tokens {
        Ok(tokens) => tokens,
        Err(error) => {
            log(
                "provider_code_refused",
                &state.tenant,
                &state.member,
                &state.connection,
                &error.to_string(),
            );
            return refused(
                502,
                &format!("The provider did not give the gateway a token: {error}. Nothing was stored. Ask your assistant for a new link: it calls connect_account."),
            );
        }
    };
    let sealed = match seal(
        env,
        &state.tenant,
        &state.connection,
        member.as_deref(),
        &tokens,
    ) {
        Ok(sealed) => sealed,
        Err(problem) => return refused(503, &problem),
    };
    let command = Command::StoreAccount {
        connection: state.connection.clone(),
        member: member.clone(),
        sealed,
        // Spent rows are kept until the link would have expired; the link was issued before
        // this state, so its expiry is within one link lifetime of the state's.
        link: Some(SpentLink {
            hash: state.link_hash.clone(),
            expires_at: state.expires_at + LINK_TTL_MS,
        }),
        now,
        by: match &member {
            Some(member) => Actor::Member(member.clone()),
            None => Actor::Operator,
        },
    };
    match roster(env, &state.tenant, &command).await? {
        Ok(_) => {
            log(
                "account_connected",
                &state.tenant,
                &state.member,
                &state.connection,
                "oauth",
            );
            page(200, account_link::connected_page(&label), None)
        }
        Err(error) => refused(error.status(), &error.to_string()),
    }
}

fn seal(
    env: &Env,
    tenant: &str,
    connection: &str,
    member: Option<&str>,
    tokens: &Tokens,
) -> std::result::Result<String, String> {
    let vault = super::accounts::vault(env).map_err(|problem| {
        worker::console_error!("vault unavailable: {problem}");
        "accounts cannot be connected on this gateway: its vault key (VAULT_MASTER_KEY) is not configured; ask the operator".to_owned()
    })?;
    let mut nonce = [0u8; NONCE_BYTES];
    getrandom::getrandom(&mut nonce)
        .map_err(|_| "the gateway has no randomness just now; try again")?;
    let owner = Owner {
        tenant,
        connection,
        member,
    };
    Ok(vault.seal(owner, &tokens.to_sealable(), nonce))
}

fn open(
    env: &Env,
    tenant: &str,
    connection: &str,
    member: Option<&str>,
    sealed: &str,
) -> std::result::Result<Option<Tokens>, String> {
    let vault = super::accounts::vault(env).map_err(|e| e.to_string())?;
    let owner = Owner {
        tenant,
        connection,
        member,
    };
    let plain = vault.open(owner, sealed).map_err(|e| e.to_string())?;
    Tokens::from_opened(&plain).map_err(|e| e.to_string())
}

// --- at call time: the refresh -----------------------------------------------------------

/// One stored account holding OAuth tokens: a member's own (`member: Some`) or the shared one.
#[derive(Debug, Clone, Copy)]
pub struct Account<'a> {
    pub tenant: &'a str,
    pub connection: &'a str,
    pub member: Option<&'a str>,
}

impl Account<'_> {
    /// The roster's member column.
    fn column(&self) -> &str {
        self.member.unwrap_or(crate::accounts::SHARED)
    }

    /// Who it is in a log line.
    fn who(&self) -> &str {
        self.member.unwrap_or("(shared)")
    }

    fn log(&self, event: &str, detail: &str) {
        log(event, self.tenant, self.who(), self.connection, detail);
    }

    /// The tool error for an account that exists but cannot be used (expired, refused): it
    /// says how to connect again.
    fn unusable(&self, status: &str) -> CallToolResult {
        CallToolResult::error(
            crate::credential::unusable(self.connection, status, self.member.is_some()).to_string(),
        )
    }

    /// The OAuth tokens `sealed` holds for this account; the error is the call's tool result.
    pub fn open(&self, env: &Env, sealed: &str) -> std::result::Result<Tokens, CallToolResult> {
        match open(env, self.tenant, self.connection, self.member, sealed) {
            Ok(Some(tokens)) => Ok(tokens),
            Ok(None) | Err(_) => Err(CallToolResult::error(format!(
                "the stored account of connection {:?} cannot be opened; connect it again{}",
                self.connection,
                if self.member.is_some() {
                    " (connect_account)"
                } else {
                    ""
                }
            ))),
        }
    }

    fn not_connected(&self) -> CallToolResult {
        match self.member {
            Some(_) => CallToolResult::error(
                Missing::NotConnected {
                    connection: self.connection.to_owned(),
                }
                .to_string(),
            ),
            None => CallToolResult::error(format!(
                "the shared account of connection {:?} was removed meanwhile; call the tool again",
                self.connection
            )),
        }
    }
}

/// An access token to send, with the sealed value it came from (what a refused call marks).
pub struct Access {
    pub token: String,
    pub sealed: String,
    /// A refresh token is held: an upstream 401 may be answered with one forced refresh.
    pub refreshable: bool,
}

impl Access {
    fn of(sealed: String, tokens: Tokens) -> Access {
        Access {
            refreshable: tokens.refresh_token.is_some(),
            token: tokens.access_token,
            sealed,
        }
    }
}

/// The access token of an account, refreshed first when it is (nearly) expired, or in any case
/// when `force` (the upstream refused the token `sealed` holds). One refresh at a time per
/// account: the call holding the roster's lease refreshes; the others wait for the row to change
/// and use what it stored. The error is the call's tool result.
#[allow(clippy::too_many_arguments)]
pub async fn access_token(
    env: &Env,
    config_loopback: bool,
    timeout_ms: u64,
    account: Account<'_>,
    client: &Arc<OAuthClient>,
    mut sealed: String,
    mut tokens: Tokens,
    now: i64,
    mut force: bool,
) -> std::result::Result<Access, CallToolResult> {
    let tenant = account.tenant;
    let unreachable =
        || CallToolResult::error("the gateway could not reach the tenant's roster; try again");
    let mut random = [0u8; 16];
    if getrandom::getrandom(&mut random).is_err() {
        return Err(CallToolResult::error(
            "the gateway has no randomness just now; try again",
        ));
    }
    let holder = crate::oauth::encoding::hex(&random);
    // A row that changed under us: use it if it is still connected.
    let take = |row: StoredAccount| -> std::result::Result<(String, Tokens), CallToolResult> {
        if row.status != STATUS_CONNECTED {
            return Err(account.unusable(&row.status));
        }
        let tokens = account.open(env, &row.sealed)?;
        Ok((row.sealed, tokens))
    };
    for _ in 0..MAX_WAITS {
        if !force && freshness(&tokens, now) == Freshness::Fresh {
            return Ok(Access::of(sealed, tokens));
        }
        let lease = Command::LeaseRefresh {
            connection: account.connection.to_owned(),
            member: account.column().to_owned(),
            sealed: sealed.clone(),
            holder: holder.clone(),
            now,
        };
        let reply = match roster(env, tenant, &lease).await {
            Ok(Ok(value)) => {
                serde_json::from_value::<LeaseReply>(value).map_err(|_| unreachable())?
            }
            _ => return Err(unreachable()),
        };
        match reply {
            LeaseReply::Granted => {
                return refresh_holding(
                    env,
                    config_loopback,
                    timeout_ms,
                    account,
                    client,
                    &holder,
                    &tokens,
                    now,
                )
                .await;
            }
            // Another call refreshed (or reconnected) meanwhile: what it stored is new, so a
            // forced refresh is done.
            LeaseReply::Changed { account: row } => {
                (sealed, tokens) = take(row)?;
                force = false;
            }
            LeaseReply::Gone => return Err(account.not_connected()),
            LeaseReply::Busy => {
                Delay::from(Duration::from_millis(WAIT_STEP_MS)).await;
                let read = Command::ReadAccount {
                    connection: account.connection.to_owned(),
                    member: account.member.map(str::to_owned),
                };
                match roster(env, tenant, &read).await {
                    Ok(Ok(Value::Null)) => return Err(account.not_connected()),
                    Ok(Ok(row)) => {
                        let row: StoredAccount =
                            serde_json::from_value(row).map_err(|_| unreachable())?;
                        if row.sealed != sealed || row.status != STATUS_CONNECTED {
                            (sealed, tokens) = take(row)?;
                            force = false;
                        }
                    }
                    _ => return Err(unreachable()),
                }
            }
        }
    }
    Err(CallToolResult::error(
        "another call is still refreshing this account's access at the provider; try again in a moment",
    ))
}

/// Refreshes while holding the lease, and ends it with what came of it.
#[allow(clippy::too_many_arguments)]
async fn refresh_holding(
    env: &Env,
    allow_loopback: bool,
    timeout_ms: u64,
    account: Account<'_>,
    client: &OAuthClient,
    holder: &str,
    tokens: &Tokens,
    now: i64,
) -> std::result::Result<Access, CallToolResult> {
    let tenant = account.tenant;
    let finish = |sealed: Option<String>, status: Option<&str>| Command::FinishRefresh {
        connection: account.connection.to_owned(),
        member: account.column().to_owned(),
        holder: holder.to_owned(),
        sealed,
        status: status.map(str::to_owned),
        now,
    };
    let Some(refresh_token) = tokens.refresh_token.as_deref() else {
        // Expired (or refused) with nothing to refresh it with.
        let _ = roster(env, tenant, &finish(None, Some(STATUS_EXPIRED))).await;
        account.log("account_expired", "no refresh token");
        return Err(account.unusable(STATUS_EXPIRED));
    };
    let release = || finish(None, None);
    let prepared = client_credentials(env, tenant, client).and_then(|credentials| {
        endpoint_allowed(&client.token_endpoint, allow_loopback)
            .map(|()| refresh_request(client, &credentials, refresh_token))
    });
    let form = match prepared {
        Ok(form) => form,
        Err(problem) => {
            let _ = roster(env, tenant, &release()).await;
            return Err(CallToolResult::error(problem));
        }
    };
    let answer = match post_form(&form, timeout_ms).await {
        Ok(Some((status, body))) => parse_token_response(status, &body, now, Some(refresh_token)),
        Ok(None) => Err(TokenError::Status(504)),
        Err(_) => Err(TokenError::Status(502)),
    };
    match answer {
        Ok(fresh) => {
            let sealed = match seal(env, tenant, account.connection, account.member, &fresh) {
                Ok(sealed) => sealed,
                Err(problem) => {
                    let _ = roster(env, tenant, &release()).await;
                    return Err(CallToolResult::error(problem));
                }
            };
            match roster(env, tenant, &finish(Some(sealed.clone()), None)).await {
                Ok(Ok(reply)) if reply["stored"] == Value::Bool(true) => {
                    account.log("account_refreshed", "access token refreshed");
                    Ok(Access::of(sealed, fresh))
                }
                // Disconnected (or taken over) meanwhile: what was refreshed is not ours to use.
                _ => Err(CallToolResult::error(
                    "this account changed while its access was being refreshed; call the tool again",
                )),
            }
        }
        Err(TokenError::InvalidGrant) => {
            let _ = roster(env, tenant, &finish(None, Some(STATUS_NEEDS_RECONNECT))).await;
            account.log(
                "account_needs_reconnect",
                "the provider refused the refresh (invalid_grant)",
            );
            Err(account.unusable(STATUS_NEEDS_RECONNECT))
        }
        Err(error) => {
            let _ = roster(env, tenant, &release()).await;
            account.log("account_refresh_failed", &error.to_string());
            Err(CallToolResult::error(format!(
                "the gateway could not refresh your access at the provider ({error}); try again in a moment"
            )))
        }
    }
}

/// After the upstream refused a stored account's token (and the retry did not help) or its
/// pasted key: the row is marked (only while it still holds what was sent) and the caller gets the reconnect error.
pub async fn mark_refused(
    env: &Env,
    account: Account<'_>,
    sealed: &str,
    status: &str,
    why: &str,
    now: i64,
) -> CallToolResult {
    let mark = Command::MarkAccount {
        connection: account.connection.to_owned(),
        member: account.member.map(str::to_owned),
        sealed: sealed.to_owned(),
        status: status.to_owned(),
        now,
    };
    if let Err(error) = roster(env, account.tenant, &mark).await {
        worker::console_error!("roster command failed: {error}");
    }
    account.log("account_needs_reconnect", why);
    account.unusable(status)
}

// --- disconnecting -----------------------------------------------------------------------

/// What revoking a stored account at its provider came to, for the answer that deletes it.
#[derive(Debug, Default)]
pub struct Revocation {
    /// `true` revoked, `false` the provider did not confirm, null nothing was sent (no stored
    /// tokens, or the provider has no revocation endpoint).
    pub revoked: Value,
    /// Why it was not confirmed, and what the owner of the account can do.
    pub note: Option<String>,
}

impl Revocation {
    /// Adds `revoked_at_provider` (and the note) to the answer of the deletion.
    pub fn annotate(self, answer: &mut Value) {
        let Value::Object(fields) = answer else {
            return;
        };
        fields.insert("revoked_at_provider".into(), self.revoked);
        if let Some(note) = self.note {
            fields.insert("note".into(), Value::String(note));
        }
    }
}

/// Revokes the tokens `account` stores at the provider of `client` when it has a revocation
/// endpoint (RFC 7009). The row is the caller's to delete, also when this fails.
pub async fn revoke_at_provider(
    env: &Env,
    config: &Config,
    account: Account<'_>,
    client: &OAuthClient,
) -> Revocation {
    let mut outcome = Revocation::default();
    let Some(endpoint) = client.revocation_endpoint.as_ref() else {
        return outcome;
    };
    let read = Command::ReadAccount {
        connection: account.connection.to_owned(),
        member: account.member.map(str::to_owned),
    };
    let tokens = match roster(env, account.tenant, &read).await {
        Ok(Ok(Value::Null)) => None,
        Ok(Ok(row)) => serde_json::from_value::<StoredAccount>(row)
            .ok()
            .and_then(|row| account.open(env, &row.sealed).ok()),
        _ => None,
    };
    let Some(tokens) = tokens else {
        return outcome;
    };
    match send_revocation(env, config, account.tenant, client, endpoint, &tokens).await {
        Ok(()) => {
            outcome.revoked = Value::Bool(true);
            account.log("account_revocation", "revoked at the provider");
        }
        Err(problem) => {
            outcome.revoked = Value::Bool(false);
            outcome.note = Some(format!("the provider did not confirm the revocation ({problem}); the tokens were deleted here all the same: revoke the gateway's access in the account's settings at the provider if it must stop everywhere"));
            account.log("account_revocation", "revocation failed");
        }
    }
    outcome
}

/// Posts the RFC 7009 request for `tokens` to `endpoint`; the error says why it is not
/// confirmed.
async fn send_revocation(
    env: &Env,
    config: &Config,
    tenant: &str,
    client: &OAuthClient,
    endpoint: &Endpoint,
    tokens: &Tokens,
) -> std::result::Result<(), String> {
    let credentials = client_credentials(env, tenant, client)?;
    let form = revocation_request(client, &credentials, tokens)
        .ok_or_else(|| "no revocation endpoint".to_owned())?;
    endpoint_allowed(endpoint, config.allow_loopback_http)?;
    match post_form(&form, config.upstream_timeout_ms).await {
        Ok(Some((status, _))) if revocation_succeeded(status) => Ok(()),
        Ok(Some((status, _))) => Err(format!("the provider answered HTTP {status}")),
        Ok(None) => Err("the provider did not answer in time".to_owned()),
        Err(_) => Err("the provider could not be reached".to_owned()),
    }
}

/// `disconnect_account` for a connection whose connector declares OAuth: the tokens are
/// revoked at the provider when it has a revocation endpoint, then the row is deleted — also
/// when the revocation failed, and the answer says so.
pub async fn disconnect(
    env: &Env,
    config: &Config,
    identity: &Identity,
    command: Command,
    client: Option<Arc<OAuthClient>>,
) -> CallToolResult {
    let Command::DeleteAccount { connection, .. } = &command else {
        return CallToolResult::error("nothing to disconnect");
    };
    let (tenant, member) = (identity.tenant.as_str(), identity.member.as_str());
    let account = Account {
        tenant,
        connection,
        member: Some(member),
    };
    let revocation = match client.as_deref() {
        Some(client) => revoke_at_provider(env, config, account, client).await,
        None => Revocation::default(),
    };
    match roster(env, tenant, &command).await {
        Ok(Ok(reply)) => {
            let mut answer = crate::gateway::control::roster_reply(&command, reply);
            if client.is_some() {
                revocation.annotate(&mut answer);
            }
            CallToolResult::json(answer)
        }
        Ok(Err(error)) => CallToolResult::error(error.to_string()),
        Err(error) => {
            worker::console_error!("roster command failed: {error}");
            CallToolResult::error("the gateway could not reach the tenant's roster; try again")
        }
    }
}
