//! The gateway as OAuth 2.1 authorization server and protected resource, served: discovery
//! documents, client registration, the sign-in and consent pages, the token and revocation
//! endpoints, and the access-token check of `/mcp`. Every decision is `crate::oauth`'s; this
//! reads forms and cookies, fetches client metadata documents, draws randomness and asks the
//! tenant's roster object, which keeps the codes and tokens.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::Value;
use worker::{Env, Headers, Method, Request, RequestInit, RequestRedirect, Response, Result};

use super::http::{bounded_body, header, json_response};
use super::{roster, store, Config};
use crate::gateway;
use crate::oauth::authorize::{self, AuthorizeError, PageError};
use crate::oauth::client::{self, CimdUrl, Client, ClientError, ClientId, Fetched, CIMD_FETCH};
use crate::oauth::command::{OAuthCommand, OAuthReply, Randomness, SECRETS_PER_COMMAND};
use crate::oauth::limit::WindowCounter;
use crate::oauth::metadata::{self, BearerChallenge};
use crate::oauth::pages::{self, Form, Ticket};
use crate::oauth::params::Params;
use crate::oauth::token::{self, Approval, SignInError, TokenKind, TokenRequest, SECRET_BYTES};
use crate::oauth::OAuthKeys;
use crate::oauth::{
    ErrorCode, OAuthError, Site, AUTHORIZE_PATH, NO_STORE_HEADERS, REGISTER_PATH, REVOKE_PATH,
    TOKEN_PATH,
};
use crate::roster::{Actor, AuditEntry, Command, Identity};
use crate::upstream::BodyReader;

/// Largest form `/authorize`, `/token` and `/revoke` read (the parameter parser's own cap).
const MAX_FORM_BYTES: usize = crate::oauth::params::MAX_PARAMS_BYTES;
/// Client metadata documents an isolate keeps; past it the cache starts over.
const MAX_CACHED_CLIENTS: usize = 256;

/// The site this request reached: the configured public origin, else the request's own.
pub fn site(req: &Request, config: &Config) -> std::result::Result<Site, String> {
    match &config.public_origin {
        Some(origin) => Site::new(origin),
        None => {
            let url = req.url().map_err(|e| e.to_string())?;
            Site::new(&url.origin().ascii_serialization())
        }
    }
}

/// The OAuth keys, derived from the grant key; why there are none when it is unusable.
pub fn oauth_keys(env: &Env) -> std::result::Result<OAuthKeys, String> {
    super::grant_key(env).map(|key| OAuthKeys::derive(&key))
}

pub fn randomness() -> Option<Randomness> {
    let mut secrets = Vec::with_capacity(SECRETS_PER_COMMAND);
    for _ in 0..SECRETS_PER_COMMAND {
        let mut secret = [0u8; SECRET_BYTES];
        getrandom::getrandom(&mut secret).ok()?;
        secrets.push(secret);
    }
    Some(secrets)
}

/// Sends one OAuth command to a tenant's roster object.
pub async fn roster_oauth(env: &Env, tenant: &str, command: &OAuthCommand) -> Result<OAuthReply> {
    let mut response =
        super::to_roster_object(env, tenant, serde_json::to_string(command)?).await?;
    response.json().await
}

/// Issues a one-time sign-in code for `member` and, when the roster issued one, audits it as
/// `by`'s change. `None` when there is no randomness.
pub async fn issue_sign_in_code(
    env: &Env,
    tenant: &str,
    member: &str,
    by: &Actor,
    now: i64,
) -> Result<Option<OAuthReply>> {
    let Some(random) = randomness() else {
        return Ok(None);
    };
    let command = OAuthCommand::IssueSignIn {
        tenant: tenant.to_owned(),
        member: member.to_owned(),
        random,
        now,
    };
    let reply = roster_oauth(env, tenant, &command).await?;
    if matches!(reply, OAuthReply::SignInIssued { .. }) {
        let entry = AuditEntry::new(now, by, "sign_in_code.issue", member, None);
        super::audit(env, tenant, entry).await;
    }
    Ok(Some(reply))
}

/// Whether an access token still speaks for its member: the first check of an MCP request
/// and the re-check before each later effect of a batch.
pub async fn authenticate_access(
    env: &Env,
    site: &Site,
    bearer: &str,
    now: i64,
) -> Result<std::result::Result<Identity, BearerChallenge>> {
    let keys = match oauth_keys(env) {
        Ok(keys) => keys,
        Err(_) => {
            return Ok(Err(BearerChallenge::InvalidToken(
                "access tokens cannot be checked on this gateway just now".into(),
            )))
        }
    };
    // A forged token ends here: no Durable Object is touched for it.
    let claim = match token::verify(bearer, TokenKind::Access, &keys.tokens) {
        Ok(claim) => claim,
        Err(e) => return Ok(Err(BearerChallenge::InvalidToken(e.to_string()))),
    };
    let command = OAuthCommand::Authenticate {
        bearer: bearer.to_owned(),
        resource: site.resource(),
        now,
    };
    Ok(match roster_oauth(env, &claim.tenant, &command).await? {
        OAuthReply::Authenticated { identity } => Ok(Identity {
            tenant: identity.tenant,
            member: identity.member,
            role: identity.role,
            grant_id: identity.family_id,
        }),
        OAuthReply::Challenge { challenge } => Err(challenge),
        _ => Err(BearerChallenge::InvalidToken(
            "the token could not be checked".into(),
        )),
    })
}

/// The 401 (or 403) of `/mcp`: the challenge that starts a client's discovery.
pub fn challenge_response(site: &Site, challenge: &BearerChallenge) -> Result<Response> {
    let message = match challenge {
        BearerChallenge::Missing => "unauthorized: missing bearer grant or access token".to_owned(),
        BearerChallenge::InvalidToken(why) => format!("unauthorized: {why}"),
        BearerChallenge::InsufficientScope(_) => "forbidden: the token lacks a needed scope".into(),
    };
    let response = super::http::error_response(challenge.http_status(), &message)?;
    response.headers().set(
        "WWW-Authenticate",
        &metadata::www_authenticate(site, challenge),
    )?;
    Ok(response)
}

/// Whether `path` is one of the OAuth paths [`serve`] answers.
pub fn handles(path: &str) -> bool {
    metadata::document_for_path(path).is_some()
        || [AUTHORIZE_PATH, TOKEN_PATH, REGISTER_PATH, REVOKE_PATH].contains(&path)
}

/// Serves an OAuth path (see [`handles`]).
pub async fn serve(req: Request, env: &Env, config: &Config, path: &str) -> Result<Response> {
    let method = req.method();
    let site = match site(&req, config) {
        Ok(site) => site,
        Err(problem) => {
            return super::http::error_response(
                500,
                &format!("the gateway's public origin is unusable: {problem}"),
            )
        }
    };
    if let Some(which) = metadata::document_for_path(path) {
        return match method {
            Method::Get => json_response(200, &metadata::document(&site, which)),
            _ => super::http::error_response(405, "method not allowed: GET this document"),
        };
    }
    let keys = match oauth_keys(env) {
        Ok(keys) => keys,
        Err(problem) => {
            worker::console_error!("oauth unavailable: {problem}");
            return oauth_error(&OAuthError::new(
                ErrorCode::TemporarilyUnavailable,
                "authorization is not configured on this gateway",
            ));
        }
    };
    let now = super::clock(&req, config);
    let secret = keys.pages;
    match (path, method) {
        (p, Method::Post) if p == REGISTER_PATH => register(req, config, &secret, now).await,
        (p, Method::Get) if p == AUTHORIZE_PATH => {
            authorize_get(req, config, &site, &secret, now).await
        }
        (p, Method::Post) if p == AUTHORIZE_PATH => {
            authorize_post(req, env, config, &site, &keys, now).await
        }
        (p, Method::Post) if p == TOKEN_PATH => token_post(req, env, &site, &keys, now).await,
        (p, Method::Post) if p == REVOKE_PATH => revoke_post(req, env, &keys.tokens, now).await,
        _ => super::http::error_response(405, "method not allowed"),
    }
}

fn oauth_error(error: &OAuthError) -> Result<Response> {
    no_store(json_response(error.http_status(), &error.body())?)
}

fn no_store(response: Response) -> Result<Response> {
    for (name, value) in NO_STORE_HEADERS {
        response.headers().set(name, value)?;
    }
    Ok(response)
}

pub(super) async fn read_form(req: &mut Request) -> std::result::Result<Params, OAuthError> {
    let body = bounded_body(req, MAX_FORM_BYTES)
        .await
        .map_err(|_| invalid_request("the form is too large or unreadable"))?;
    let text = String::from_utf8(body).map_err(|_| invalid_request("the form is not UTF-8"))?;
    Params::parse(&text).map_err(|e| invalid_request(&e.to_string()))
}

fn invalid_request(why: &str) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidRequest, why)
}

/// RFC 7591 registration: the record becomes the client id itself, sealed; nothing stored.
/// Each client address gets `registrations_per_minute` per isolate.
async fn register(mut req: Request, config: &Config, secret: &[u8], now: i64) -> Result<Response> {
    let address = header(&req, "CF-Connecting-IP").unwrap_or_default();
    let admitted = REGISTRATIONS.with(|r| {
        r.borrow_mut()
            .get_or_insert_with(|| {
                WindowCounter::new(config.registrations_per_minute, MAX_COUNTED_ADDRESSES)
            })
            .admit(&address, super::now_ms())
    });
    if let Err(retry_after) = admitted {
        let response = no_store(json_response(
            429,
            &serde_json::json!({
                "error": "too_many_requests",
                "error_description": format!(
                    "more than {} registrations from this address in a minute; retry after {retry_after} s",
                    config.registrations_per_minute
                ),
            }),
        )?)?;
        response
            .headers()
            .set("Retry-After", &retry_after.to_string())?;
        return Ok(response);
    }
    let body = match bounded_body(&mut req, client::MAX_REGISTRATION_BYTES).await {
        Ok(body) => body,
        Err(_) => {
            return oauth_error(&OAuthError::new(
                ErrorCode::InvalidClientMetadata,
                format!(
                    "the registration request is larger than {} bytes",
                    client::MAX_REGISTRATION_BYTES
                ),
            ))
        }
    };
    match client::register(&body, secret, now / 1000) {
        Ok(client) => no_store(json_response(
            201,
            &client::registration_response(&client, secret),
        )?),
        Err(error) => oauth_error(&error.to_oauth()),
    }
}

// --- the pages ---------------------------------------------------------------------------

pub(super) fn page(status: u16, html: String, form_target: Option<&str>) -> Result<Response> {
    let response = Response::from_html(html)?.with_status(status);
    for (name, value) in pages::headers(form_target) {
        response.headers().set(name, &value)?;
    }
    Ok(response)
}

pub(super) fn error_page(status: u16, message: &str) -> Result<Response> {
    page(status, pages::error(message), None)
}

fn redirect(location: &str) -> Result<Response> {
    let response = Response::empty()?.with_status(302);
    response.headers().set("Location", location)?;
    response.headers().set("Cache-Control", "no-store")?;
    Ok(response)
}

/// The browser's binding cookie, if it sent one.
pub(super) fn binding_of(req: &Request) -> Option<String> {
    let cookies = header(req, "Cookie")?;
    cookies.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        (name == pages::CSRF_COOKIE && !value.is_empty()).then(|| value.to_owned())
    })
}

thread_local! {
    static CLIENTS: RefCell<HashMap<String, (Client, i64)>> = RefCell::new(HashMap::new());
    static REGISTRATIONS: RefCell<Option<WindowCounter>> = const { RefCell::new(None) };
}

/// Addresses one isolate counts registrations for in one window.
const MAX_COUNTED_ADDRESSES: usize = 10_000;

/// The client a `client_id` names: a sealed registration opened, or a metadata document
/// fetched (or taken from this isolate's cache until its time is up).
async fn find_client(
    id: ClientId,
    secret: &[u8],
    now: i64,
) -> std::result::Result<Client, ClientError> {
    let url = match id {
        ClientId::Registered(text) => return client::open_registered(&text, secret),
        ClientId::Document(url) => url,
    };
    let cached = CLIENTS.with(|c| {
        c.borrow()
            .get(url.as_str())
            .filter(|(_, until)| now < *until)
            .map(|(client, _)| client.clone())
    });
    if let Some(client) = cached {
        return Ok(client);
    }
    let (client, seconds) = fetch_document(&url).await?;
    CLIENTS.with(|c| {
        let mut clients = c.borrow_mut();
        if clients.len() >= MAX_CACHED_CLIENTS {
            clients.clear();
        }
        clients.insert(
            url.as_str().to_owned(),
            (client.clone(), now + i64::from(seconds) * 1000),
        );
    });
    Ok(client)
}

/// Fetches a Client ID Metadata Document under `CIMD_FETCH`: no redirects, one deadline over
/// the whole fetch, at most one byte past the cap read.
async fn fetch_document(url: &CimdUrl) -> std::result::Result<(Client, u32), ClientError> {
    let fetch_failed = |e: worker::Error| ClientError::FetchFailed(e.to_string());
    let headers = Headers::new();
    headers
        .set("Accept", CIMD_FETCH.accept)
        .map_err(fetch_failed)?;
    let mut init = RequestInit::new();
    init.with_method(Method::Get)
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual);
    let request = Request::new_with_init(url.as_str(), &init).map_err(fetch_failed)?;
    // One byte past the cap is read, so an oversized document is refused, never cut and parsed.
    let body = BodyReader::with_limit(CIMD_FETCH.max_bytes + 1);
    let timeout = u64::from(CIMD_FETCH.timeout_ms);
    let Some((status, headers, body)) = super::http::fetch_within(request, body, timeout)
        .await
        .map_err(fetch_failed)?
    else {
        return client::read_document(url, Fetched::TimedOut).map(|c| (c, 0));
    };
    let client = client::read_document(
        url,
        Fetched::Answer {
            status,
            body: body.bytes(),
        },
    )?;
    let cache_control = headers.get("Cache-Control").ok().flatten();
    Ok((client, client::cache_seconds(cache_control.as_deref())))
}

async fn authorize_get(
    req: Request,
    config: &Config,
    site: &Site,
    secret: &[u8],
    now: i64,
) -> Result<Response> {
    let url = req.url()?;
    let params = match Params::parse(url.query().unwrap_or("")) {
        Ok(params) => params,
        Err(e) => return error_page(400, &PageError::BadParams(e.to_string()).to_string()),
    };
    let id = match authorize::client_id(&params, config.allow_loopback_http) {
        Ok(id) => id,
        Err(e) => return error_page(400, &e.to_string()),
    };
    let client = match find_client(id, secret, now).await {
        Ok(client) => client,
        Err(e) => return error_page(400, &PageError::Client(e).to_string()),
    };
    let request = match authorize::validate(&params, &client, site) {
        Ok(request) => request,
        Err(AuthorizeError::Page(e)) => return error_page(400, &e.to_string()),
        Err(AuthorizeError::Redirect(e)) => {
            let html = pages::error_with_return(&e.error.description, &e.location());
            return page(400, html, None);
        }
    };
    let binding = match binding_of(&req) {
        Some(binding) => binding,
        None => {
            let mut random = [0u8; pages::BINDING_BYTES];
            if getrandom::getrandom(&mut random).is_err() {
                return error_page(500, "The gateway has no randomness just now. Try again.");
            }
            pages::new_binding(&random)
        }
    };
    let ticket = Ticket::new(&request, now);
    let sealed = ticket.seal(secret, &binding);
    let response = sign_in_page(&sealed, &ticket, secret, &binding, now, None)?;
    // Set on every sign-in page, so the cookie lives as long as the ticket it binds.
    response
        .headers()
        .set("Set-Cookie", &pages::binding_cookie(&binding))?;
    Ok(response)
}

fn sign_in_page(
    sealed: &str,
    ticket: &Ticket,
    secret: &[u8],
    binding: &str,
    now: i64,
    error: Option<&str>,
) -> Result<Response> {
    let csrf = pages::csrf_token(secret, binding, Form::SignIn, now);
    let html = pages::sign_in(&pages::SignInPage {
        client_name: &ticket.client_name,
        client_id: &ticket.client_id,
        redirect_uri: &ticket.redirect_uri,
        ticket: sealed,
        csrf: &csrf,
        error,
    });
    page(if error.is_some() { 400 } else { 200 }, html, None)
}

async fn authorize_post(
    mut req: Request,
    env: &Env,
    config: &Config,
    site: &Site,
    keys: &OAuthKeys,
    now: i64,
) -> Result<Response> {
    let secret: &[u8] = &keys.pages;
    let binding = binding_of(&req);
    let params = match read_form(&mut req).await {
        Ok(params) => params,
        Err(e) => {
            return error_page(
                400,
                &format!("The form could not be read: {}.", e.description),
            )
        }
    };
    let form = if params.get(pages::FIELD_DECISION).is_some() {
        Form::Consent
    } else {
        Form::SignIn
    };
    if let Err(e) = pages::verify_csrf(
        secret,
        binding.as_deref(),
        params.get(pages::FIELD_CSRF),
        form,
        now,
    ) {
        return error_page(403, &e.to_string());
    }
    let binding = binding.unwrap_or_default();
    let mut ticket = match Ticket::open(secret, &binding, params.get(pages::FIELD_TICKET), now) {
        Ok(ticket) => ticket,
        Err(e) => return error_page(400, &e.to_string()),
    };
    match form {
        // Never chosen above; the paste page posts to its own path (`edge::accounts`).
        Form::ConnectAccount => error_page(400, &pages::FormError::Csrf.to_string()),
        Form::SignIn => {
            let code = params.get(pages::FIELD_CODE).unwrap_or("").trim();
            let sealed = params.get(pages::FIELD_TICKET).unwrap_or("");
            let (tenant, member) = match sign_in(env, code, &keys.tokens, now).await? {
                Ok(who) => who,
                Err(why) => {
                    return sign_in_page(sealed, &ticket, secret, &binding, now, Some(&why))
                }
            };
            let reaches = reaches(env, config, &tenant, &member).await;
            ticket.tenant = Some(tenant.clone());
            ticket.member = Some(member.clone());
            let sealed = ticket.seal(secret, &binding);
            let csrf = pages::csrf_token(secret, &binding, Form::Consent, now);
            let html = pages::consent(&pages::ConsentPage {
                client_name: &ticket.client_name,
                client_id: &ticket.client_id,
                redirect_uri: &ticket.redirect_uri,
                tenant: &tenant,
                member: &member,
                reaches: &reaches,
                ticket: &sealed,
                csrf: &csrf,
            });
            page(
                200,
                html,
                Some(&pages::redirect_source(&ticket.redirect_uri)),
            )
        }
        Form::Consent => {
            let (Some(tenant), Some(member)) = (ticket.tenant.clone(), ticket.member.clone())
            else {
                return error_page(400, &pages::FormError::BadTicket.to_string());
            };
            let request = ticket.request();
            if params.get(pages::FIELD_DECISION) != Some(pages::DECISION_ALLOW) {
                return redirect(&authorize::denied(&request, site).location());
            }
            let Some(random) = randomness() else {
                return error_page(500, "The gateway has no randomness just now. Try again.");
            };
            let command = OAuthCommand::IssueCode {
                approval: Approval {
                    tenant: tenant.clone(),
                    member,
                    client_id: request.client_id.clone(),
                    client_name: request.client_name.clone(),
                    redirect_uri: request.redirect_uri.clone(),
                    challenge: request.challenge.clone(),
                    scope: request.scope.clone(),
                    resource: request.resource.clone(),
                },
                random,
                now,
            };
            match roster_oauth(env, &tenant, &command).await? {
                OAuthReply::CodeIssued { code } => {
                    redirect(&authorize::success_location(&request, &code, site))
                }
                OAuthReply::MemberNotActive { .. } => error_page(
                    403,
                    "Your membership is no longer active, so no access was granted.",
                ),
                OAuthReply::Refused { error } => {
                    worker::console_error!("issuing a code failed: {}", error.description);
                    error_page(500, "The gateway could not finish the sign-in. Try again.")
                }
                _ => error_page(500, "The gateway could not finish the sign-in. Try again."),
            }
        }
    }
}

/// Who a sign-in code or an existing grant proves the person to be: `(tenant, member)`, or
/// what to tell them.
async fn sign_in(
    env: &Env,
    code: &str,
    token_key: &[u8],
    now: i64,
) -> Result<std::result::Result<(String, String), String>> {
    if crate::grant::looks_like_grant(code) {
        let key = match super::grant_key(env) {
            Ok(key) => key,
            Err(_) => {
                return Ok(Err(
                    "Grants cannot be checked on this gateway just now.".into()
                ))
            }
        };
        let claim = match crate::grant::parse(code, &key) {
            Ok(claim) => claim,
            Err(e) => return Ok(Err(format!("That grant is not valid: {e}."))),
        };
        return Ok(
            match super::still_valid(env, &claim.tenant, &claim.member, &claim.hash).await? {
                Some(_) => Ok((claim.tenant, claim.member)),
                None => Err("That grant is unknown, revoked, or its member is not active.".into()),
            },
        );
    }
    // A forged code (right shape, wrong MAC) is unknown, and costs no Durable Object call.
    let claim = match token::verify(code, TokenKind::SignIn, token_key) {
        Ok(claim) => claim,
        Err(token::TokenFormatError::Forged) => return Ok(Err(SignInError::Unknown.to_string())),
        Err(_) => return Ok(Err(SignInError::Malformed.to_string())),
    };
    let command = OAuthCommand::RedeemSignIn {
        code: code.to_owned(),
        now,
    };
    Ok(match roster_oauth(env, &claim.tenant, &command).await? {
        OAuthReply::SignedIn { member } => Ok((claim.tenant, member)),
        OAuthReply::SignInRefused { error } => Err(error.to_string()),
        _ => Err(SignInError::Storage(String::new()).to_string()),
    })
}

/// What the member's access reaches, for the consent page; empty when it cannot be read.
async fn reaches(env: &Env, config: &Config, tenant: &str, member: &str) -> Vec<String> {
    match member_view(env, config, tenant, member).await {
        Some(view) => gateway::control::reaches(&view.view),
        None => Vec::new(),
    }
}

/// A member's prepared view, from their role in the roster; `None` when it cannot be read.
pub async fn member_view(
    env: &Env,
    config: &Config,
    tenant: &str,
    member: &str,
) -> Option<std::rc::Rc<crate::tenant::PreparedView>> {
    let now = super::now_ms();
    let role = match roster(env, tenant, &Command::ListMembers).await {
        Ok(Ok(Value::Array(members))) => members
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(member))
            .and_then(|m| m.get("role").and_then(Value::as_str))
            .map(str::to_owned),
        _ => None,
    };
    let prepared = store::tenant(env, tenant, now, config.collapse_threshold)
        .await
        .ok()?;
    prepared.view(member, &role?).ok()
}

// --- the token endpoints -----------------------------------------------------------------

fn invalid_client(basic: bool) -> Result<Response> {
    let response = oauth_error(&OAuthError::new(
        ErrorCode::InvalidClient,
        "the client secret does not match this client_id: register again",
    ))?;
    if basic {
        response
            .headers()
            .set("WWW-Authenticate", "Basic realm=\"floorgate\"")?;
    }
    Ok(response)
}

async fn token_post(
    mut req: Request,
    env: &Env,
    site: &Site,
    keys: &OAuthKeys,
    now: i64,
) -> Result<Response> {
    let token_key: &[u8] = &keys.tokens;
    let authorization = header(&req, "Authorization");
    let form = match read_form(&mut req).await {
        Ok(params) => params,
        Err(error) => return oauth_error(&error),
    };
    let params = match client::authenticate_client(authorization.as_deref(), form, &keys.pages) {
        Ok(params) => params,
        Err(mismatch) => return invalid_client(mismatch.basic),
    };
    let request = match TokenRequest::parse(&params) {
        Ok(request) => request,
        Err(error) => return oauth_error(&error),
    };
    let tenant = match request.tenant(token_key) {
        Ok(tenant) => tenant,
        Err(error) => return oauth_error(&error),
    };
    let Some(random) = randomness() else {
        return oauth_error(&OAuthError::new(
            ErrorCode::TemporarilyUnavailable,
            "no randomness available; try again",
        ));
    };
    let command = OAuthCommand::Exchange {
        request,
        resource: site.resource(),
        random,
        now,
    };
    match roster_oauth(env, &tenant, &command).await? {
        OAuthReply::Tokens { tokens } => no_store(json_response(200, &tokens.body())?),
        OAuthReply::Refused { error } => oauth_error(&error),
        _ => oauth_error(&OAuthError::new(
            ErrorCode::ServerError,
            "the token request could not be completed",
        )),
    }
}

/// RFC 7009: an unknown or foreign token is answered 200 like a revoked one.
async fn revoke_post(mut req: Request, env: &Env, token_key: &[u8], now: i64) -> Result<Response> {
    let params = match read_form(&mut req).await {
        Ok(params) => params,
        Err(error) => return oauth_error(&error),
    };
    let Some(text) = params.get("token") else {
        return oauth_error(&invalid_request("token is required"));
    };
    // Only access and refresh tokens are revocable; a forged one is answered like an unknown
    // one, without a lookup.
    let claim = [TokenKind::Refresh, TokenKind::Access]
        .into_iter()
        .find_map(|kind| token::verify(text, kind, token_key).ok());
    let Some(claim) = claim else {
        return no_store(Response::empty()?.with_status(200));
    };
    let command = OAuthCommand::Revoke {
        token: text.to_owned(),
        client_id: params.get("client_id").map(str::to_owned),
        now,
    };
    match roster_oauth(env, &claim.tenant, &command).await? {
        OAuthReply::Revoked => no_store(Response::empty()?.with_status(200)),
        OAuthReply::Refused { error } => oauth_error(&error),
        _ => oauth_error(&OAuthError::new(
            ErrorCode::ServerError,
            "the revocation could not be completed",
        )),
    }
}
