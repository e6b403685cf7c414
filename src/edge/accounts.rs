//! The accounts members connect (issue 19), served: the vault from the deployment's master
//! secrets, the one-time link `connect_account` answers with, the paste page at
//! `account_link::CONNECT_PATH`, `list_connections` with the roster's accounts, and the
//! credential a connected call uses. Every decision is the core's (`account_link`,
//! `credential`, `gateway::control`); this reads secrets, forms and cookies, draws randomness,
//! seals and asks the tenant's roster object. No credential is ever logged or answered.

use std::sync::Arc;

use serde_json::{json, Value};
use worker::{Env, Method, Request, Response, Result};

use super::connect_oauth::Account;
use super::oauth::{binding_of, error_page, member_view, page, read_form};
use super::{roster, Config};
use crate::account_link::{
    self, check_key, link_hash, Link, LinkError, LinkKey, PastePage, FIELD_KEY, FIELD_LINK,
};
use crate::binding;
use crate::catalog::oauth_client::OAuthClient;
use crate::credential::{self, Sent, Source};
use crate::gateway::control::{may_connect_account, with_accounts};
use crate::mcp::CallToolResult;
use crate::oauth::pages::{self, Form};
use crate::oauth::params::Params;
use crate::provider_oauth::Tokens;
use crate::resolver::ResolvedCall;
use crate::roster::{AccountInfo, Actor, Command, Identity, SpentLink, StoredAccount};
use crate::vault::{Owner, Vault, NONCE_BYTES};

/// What a member is told when the deployment has no usable vault key.
const NO_VAULT: &str = "accounts cannot be connected on this gateway: its vault key (VAULT_MASTER_KEY) is not configured; ask the operator";

/// The vault over every `VAULT_MASTER_KEY[_V<n>]` the deployment holds; why there is none.
pub fn vault(env: &Env) -> std::result::Result<Vault, String> {
    let read = |name: &str| {
        env.secret(name)
            .map(|s| s.to_string())
            .or_else(|_| env.var(name).map(|v| v.to_string()))
            .ok()
    };
    let mut masters = Vec::new();
    if let Some(master) = read(binding::VAULT_MASTER_KEY) {
        masters.push((1, master.into_bytes()));
    }
    for version in 2..=binding::MAX_VAULT_VERSION {
        if let Some(master) = read(&format!("{}_V{version}", binding::VAULT_MASTER_KEY)) {
            masters.push((version, master.into_bytes()));
        }
    }
    Vault::new(masters).map_err(|e| e.to_string())
}

fn link_key(env: &Env) -> std::result::Result<LinkKey, String> {
    super::grant_key(env).map(|key| LinkKey::derive(&key))
}

/// `connect_account`'s answer: a signed one-time link to the paste page.
pub fn issue_link(
    env: &Env,
    req_site: &crate::oauth::Site,
    identity: &Identity,
    connection: &str,
    oauth: bool,
    now: i64,
) -> CallToolResult {
    if let Err(problem) = vault(env) {
        worker::console_error!("vault unavailable: {problem}");
        return CallToolResult::error(NO_VAULT);
    }
    let key = match link_key(env) {
        Ok(key) => key,
        Err(_) => return CallToolResult::error("links cannot be signed on this gateway just now"),
    };
    let mut nonce = [0u8; account_link::NONCE_BYTES];
    if getrandom::getrandom(&mut nonce).is_err() {
        return CallToolResult::error("the gateway has no randomness just now; try again");
    }
    let link = Link::new(&identity.tenant, &identity.member, connection, now);
    let Some(token) = link.sign(&key, &nonce) else {
        return CallToolResult::error("this connection's id cannot be carried in a link");
    };
    let url = format!(
        "{}?{FIELD_LINK}={token}",
        req_site.url(account_link::CONNECT_PATH)
    );
    let instructions = if oauth {
        "Give this link to the user: they open it in their browser and sign in at the provider, which sends them back here. Never ask for a password or token in the chat. The link works once, for 15 minutes."
    } else {
        "Give this link to the user: they open it in their browser and paste their API key there. Never ask for the key in the chat. The link works once, for 15 minutes."
    };
    CallToolResult::json(json!({
        "connection": connection,
        "url": url,
        "expires_at": link.expires_at,
        "instructions": instructions,
    }))
}

/// `list_connections`: the view's listing with the caller's accounts and the shared ones.
pub async fn list_connections(env: &Env, identity: &Identity, listing: Value) -> CallToolResult {
    let command = Command::ListAccounts {
        member: Some(identity.member.clone()),
    };
    match roster(env, &identity.tenant, &command).await {
        Ok(Ok(rows)) => {
            let rows: Vec<AccountInfo> = serde_json::from_value(rows).unwrap_or_default();
            CallToolResult::json(with_accounts(listing, &identity.member, &rows))
        }
        Ok(Err(error)) => CallToolResult::error(error.to_string()),
        Err(error) => {
            worker::console_error!("roster command failed: {error}");
            CallToolResult::error("the gateway could not reach the tenant's roster; try again")
        }
    }
}

/// The credential a connected call sends, and the stored account it came from (what an
/// upstream 401 refreshes or marks); `stored: None` for a Worker secret or no credential.
pub struct Used {
    /// `None` for a connector without one.
    pub secret: Option<String>,
    pub stored: Option<StoredUsed>,
}

/// The stored account a call's credential came from: its member column and the sealed value
/// read, and for an OAuth access token the client that can refresh it.
pub struct StoredUsed {
    pub member: Option<String>,
    pub sealed: String,
    pub oauth: Option<OAuthUsed>,
}

/// An access token's refresh: whether a refresh token is held, and through which client.
pub struct OAuthUsed {
    pub refreshable: bool,
    pub client: Arc<OAuthClient>,
}

impl Used {
    /// What was sent, as `credential::after_upstream` weighs it.
    pub fn sent(&self) -> Sent {
        match &self.stored {
            Some(StoredUsed {
                oauth: Some(oauth), ..
            }) => Sent::AccessToken {
                refreshable: oauth.refreshable,
            },
            Some(_) => Sent::StoredKey,
            None => Sent::Other,
        }
    }
}

/// The credential a connected call sends; `Err` is the call's tool error (nothing is sent).
/// A personal connection reads only the caller's row.
pub async fn credential_for(
    env: &Env,
    identity: &Identity,
    call: &ResolvedCall,
    now: i64,
    allow_loopback: bool,
    timeout_ms: u64,
) -> std::result::Result<Used, CallToolResult> {
    let plain = |secret: Option<String>| Used {
        secret,
        stored: None,
    };
    let stored: Option<StoredAccount> =
        match credential::account_to_read(&call.connection, &call.connector.auth, &identity.member)
        {
            None => None,
            Some(member) => {
                let command = Command::ReadAccount {
                    connection: call.connection.id.clone(),
                    member: member.map(str::to_owned),
                };
                match roster(env, &identity.tenant, &command).await {
                    Ok(Ok(Value::Null)) => None,
                    Ok(Ok(row)) => serde_json::from_value(row).ok(),
                    Ok(Err(error)) => return Err(CallToolResult::error(error.to_string())),
                    Err(error) => {
                        worker::console_error!("roster command failed: {error}");
                        return Err(CallToolResult::error(
                            "the gateway could not reach the tenant's roster; try again",
                        ));
                    }
                }
            }
        };
    let source = credential::choose(
        &call.connection,
        &call.connector.auth,
        &identity.member,
        stored.as_ref(),
    )
    .map_err(|missing| CallToolResult::error(missing.to_string()))?;
    match source {
        Source::Nothing => Ok(plain(None)),
        Source::WorkerSecret(name) => {
            let name = crate::outbound::checked_credential_name(&identity.tenant, name)
                .map_err(|e| CallToolResult::error(e.to_string()))?;
            env.secret(name)
                .map(|s| plain(Some(s.to_string())))
                .map_err(|_| {
                    CallToolResult::error(
                        "this connection's credential is not configured on the gateway; ask an administrator",
                    )
                })
        }
        Source::Stored { member, sealed } => {
            let vault = vault(env).map_err(|problem| {
                worker::console_error!("vault unavailable: {problem}");
                CallToolResult::error(NO_VAULT)
            })?;
            let owner = Owner {
                tenant: &identity.tenant,
                connection: &call.connection.id,
                member,
            };
            let opened = vault.open(owner, sealed).map_err(|error| {
                worker::console_error!(
                    "{}",
                    json!({"event": "account_unopenable", "tenant": identity.tenant, "connection": call.connection.id, "problem": error.to_string()})
                );
                CallToolResult::error(format!(
                    "the stored account of connection {:?} cannot be opened ({error}); connect it again",
                    call.connection.id
                ))
            })?;
            // A pasted key is sent as it is; OAuth tokens may need a refresh first.
            let tokens = Tokens::from_opened(&opened).map_err(|error| {
                CallToolResult::error(format!(
                    "the stored account of connection {:?} cannot be used ({error}); connect it again",
                    call.connection.id
                ))
            })?;
            // A pasted key, or a token nothing can refresh (the connector no longer declares
            // OAuth: used while it lasts), is sent as it is; a 401 marks it.
            let key = |secret: String| Used {
                secret: Some(secret),
                stored: Some(StoredUsed {
                    member: member.map(str::to_owned),
                    sealed: sealed.to_owned(),
                    oauth: None,
                }),
            };
            match (tokens, &call.connector.oauth) {
                (None, _) => Ok(key(opened)),
                (Some(tokens), Some(client)) => {
                    let account = Account {
                        tenant: &identity.tenant,
                        connection: &call.connection.id,
                        member,
                    };
                    let access = super::connect_oauth::access_token(
                        env,
                        allow_loopback,
                        timeout_ms,
                        account,
                        client,
                        sealed.to_owned(),
                        tokens,
                        now,
                        false,
                    )
                    .await?;
                    Ok(Used {
                        secret: Some(access.token),
                        stored: Some(StoredUsed {
                            member: member.map(str::to_owned),
                            sealed: access.sealed,
                            oauth: Some(OAuthUsed {
                                refreshable: access.refreshable,
                                client: client.clone(),
                            }),
                        }),
                    })
                }
                (Some(tokens), None) => Ok(key(tokens.access_token)),
            }
        }
    }
}

/// The command storing a shared account set through the admin API, sealed; why not when the
/// deployment has no vault key or randomness.
pub fn seal_shared(
    env: &Env,
    tenant: &str,
    connection: &str,
    credential: &str,
    now: i64,
) -> std::result::Result<Command, String> {
    let vault = vault(env).map_err(|problem| {
        worker::console_error!("vault unavailable: {problem}");
        NO_VAULT.to_owned()
    })?;
    let mut nonce = [0u8; NONCE_BYTES];
    getrandom::getrandom(&mut nonce).map_err(|_| "the gateway has no randomness just now")?;
    let owner = Owner {
        tenant,
        connection,
        member: None,
    };
    Ok(Command::StoreAccount {
        connection: connection.to_owned(),
        member: None,
        sealed: vault.seal(owner, credential, nonce),
        link: None,
        now,
        by: Actor::Operator,
    })
}

// --- the paste page ----------------------------------------------------------------------

/// A refusal page for this flow (the shared pages' wording speaks of sign-in).
fn refused(status: u16, message: &str) -> Result<Response> {
    page(status, account_link::refused_page(message), None)
}

fn form_problem(error: &pages::FormError) -> &'static str {
    match error {
        pages::FormError::Expired => "This page was open too long (more than 30 minutes). Open the link again, or ask your assistant for a new one.",
        _ => "This form could not be verified (it may have come from another site, or cookies are blocked). Open the link again from your assistant.",
    }
}

/// What the link names, checked again now: the member may still connect this connection.
struct Checked {
    link: Link,
    connection_label: String,
    connector_label: String,
    /// The connector's OAuth client: the link leads to the provider, not to the paste form.
    oauth: Option<std::sync::Arc<crate::catalog::oauth_client::OAuthClient>>,
}

/// Verifies the link (MAC and expiry: no roster asked for a forged one), that it was not spent,
/// and the connect stage against the member's current view.
async fn check_link(
    env: &Env,
    config: &Config,
    token: Option<&str>,
    now: i64,
) -> Result<std::result::Result<Checked, (u16, String)>> {
    let key = match link_key(env) {
        Ok(key) => key,
        Err(_) => return Ok(Err((503, NO_VAULT.to_owned()))),
    };
    let link = match token.map(|t| Link::verify(&key, t, now)) {
        Some(Ok(link)) => link,
        Some(Err(e @ LinkError::Expired)) => return Ok(Err((410, e.to_string()))),
        Some(Err(e)) => return Ok(Err((400, e.to_string()))),
        None => return Ok(Err((400, LinkError::Invalid.to_string()))),
    };
    let spent = Command::LinkSpent {
        hash: link_hash(token.unwrap_or_default()),
    };
    match roster(env, &link.tenant, &spent).await? {
        Ok(Value::Bool(false)) => {}
        Ok(_) => return Ok(Err((410, crate::roster::RosterError::LinkUsed.to_string()))),
        Err(error) => return Ok(Err((500, error.to_string()))),
    }
    // An admin's link for a shared account: checked against the catalog, not a member's view.
    if link.member == account_link::SHARED_MEMBER {
        let target =
            super::connect_oauth::shared_target(env, config, &link.tenant, &link.connection, now)
                .await;
        return Ok(target.map(|target| Checked {
            connection_label: target.label,
            connector_label: target.connector_label,
            oauth: Some(target.client),
            link,
        }));
    }
    let Some(view) = member_view(env, config, &link.tenant, &link.member).await else {
        return Ok(Err((
            403,
            "Your membership is not active, so no account can be connected.".to_owned(),
        )));
    };
    let found = match may_connect_account(&view.view, &link.connection) {
        Ok(found) => found,
        Err(refusal) => return Ok(Err((403, refusal))),
    };
    let connector_label = view
        .view
        .connectors()
        .iter()
        .find(|c| c.id == found.connector)
        .map(|c| c.label.clone())
        .unwrap_or_else(|| found.connector.clone());
    Ok(Ok(Checked {
        connection_label: found.label.clone(),
        connector_label,
        oauth: view.view.oauth_client_of(&link.connection),
        link,
    }))
}

fn paste_form(
    checked: &Checked,
    token: &str,
    secret: &[u8],
    binding: &str,
    now: i64,
    error: Option<&str>,
) -> Result<Response> {
    let csrf = pages::csrf_token(secret, binding, Form::ConnectAccount, now);
    let html = account_link::paste_page(&PastePage {
        tenant: &checked.link.tenant,
        member: &checked.link.member,
        connection_label: &checked.connection_label,
        connector_label: &checked.connector_label,
        link: token,
        csrf: &csrf,
        error,
    });
    page(if error.is_some() { 400 } else { 200 }, html, None)
}

/// `GET` and `POST` of the paste page.
pub async fn serve(mut req: Request, env: &Env, config: &Config) -> Result<Response> {
    let now = super::clock(&req, config);
    let secret = match super::oauth::oauth_keys(env) {
        Ok(keys) => keys.pages,
        Err(_) => return refused(503, NO_VAULT),
    };
    if vault(env).is_err() {
        return refused(503, NO_VAULT);
    }
    match req.method() {
        Method::Get => {
            let url = req.url()?;
            let params = match Params::parse(url.query().unwrap_or("")) {
                Ok(params) => params,
                Err(_) => return refused(400, &LinkError::Invalid.to_string()),
            };
            let token = params.get(FIELD_LINK).map(str::to_owned);
            let checked = match check_link(env, config, token.as_deref(), now).await? {
                Ok(checked) => checked,
                Err((status, message)) => return refused(status, &message),
            };
            if let Some(client) = &checked.oauth {
                let token = token.unwrap_or_default();
                return super::connect_oauth::start(
                    env,
                    config,
                    &req,
                    &checked.link,
                    &token,
                    client,
                    now,
                )
                .await;
            }
            let binding = match binding_of(&req) {
                Some(binding) => binding,
                None => {
                    let mut random = [0u8; pages::BINDING_BYTES];
                    if getrandom::getrandom(&mut random).is_err() {
                        return error_page(
                            500,
                            "The gateway has no randomness just now. Try again.",
                        );
                    }
                    pages::new_binding(&random)
                }
            };
            let response = paste_form(
                &checked,
                token.as_deref().unwrap_or_default(),
                &secret,
                &binding,
                now,
                None,
            )?;
            response
                .headers()
                .set("Set-Cookie", &pages::binding_cookie(&binding))?;
            Ok(response)
        }
        Method::Post => paste_post(&mut req, env, config, &secret, now).await,
        _ => refused(405, "Open the link from your assistant in a browser."),
    }
}

async fn paste_post(
    req: &mut Request,
    env: &Env,
    config: &Config,
    secret: &[u8],
    now: i64,
) -> Result<Response> {
    let binding = binding_of(req);
    let form = match read_form(req).await {
        Ok(form) => form,
        Err(_) => return refused(400, "The form could not be read. Open the link again."),
    };
    if let Err(e) = pages::verify_csrf(
        secret,
        binding.as_deref(),
        form.get(pages::FIELD_CSRF),
        Form::ConnectAccount,
        now,
    ) {
        return refused(403, form_problem(&e));
    }
    let binding = binding.unwrap_or_default();
    let token = form.get(FIELD_LINK).unwrap_or_default().to_owned();
    let checked = match check_link(env, config, Some(&token), now).await? {
        Ok(checked) => checked,
        Err((status, message)) => return refused(status, &message),
    };
    if checked.oauth.is_some() {
        return refused(
            400,
            "This connection connects through the provider's sign-in, not a pasted key. Open the link again.",
        );
    }
    let key = match check_key(form.get(FIELD_KEY).unwrap_or_default()) {
        Ok(key) => key,
        Err(problem) => {
            return paste_form(
                &checked,
                &token,
                secret,
                &binding,
                now,
                Some(&problem.to_string()),
            )
        }
    };
    let vault = match vault(env) {
        Ok(vault) => vault,
        Err(_) => return refused(503, NO_VAULT),
    };
    let mut nonce = [0u8; NONCE_BYTES];
    if getrandom::getrandom(&mut nonce).is_err() {
        return error_page(500, "The gateway has no randomness just now. Try again.");
    }
    let link = &checked.link;
    let sealed = vault.seal(
        Owner {
            tenant: &link.tenant,
            connection: &link.connection,
            member: Some(&link.member),
        },
        key,
        nonce,
    );
    let command = Command::StoreAccount {
        connection: link.connection.clone(),
        member: Some(link.member.clone()),
        sealed,
        link: Some(SpentLink {
            hash: link_hash(&token),
            expires_at: link.expires_at,
        }),
        now,
        by: Actor::Member(link.member.clone()),
    };
    match roster(env, &link.tenant, &command).await? {
        Ok(_) => {
            let line = json!({"event": "account_connected", "tenant": link.tenant, "member": link.member, "connection": link.connection});
            worker::console_log!("{line}");
            page(
                200,
                account_link::connected_page(&checked.connection_label),
                None,
            )
        }
        Err(error) => refused(error.status(), &error.to_string()),
    }
}

/// Whether this request is for the paste page.
pub fn handles(path: &str) -> bool {
    path == account_link::CONNECT_PATH
}
