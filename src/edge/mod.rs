//! The Worker shell: the only code that touches the platform (requests, KV, Durable Objects,
//! the clock and randomness). It reads what the core needs, calls the core, and performs the
//! effects the core hands back. Compiled for wasm32 only.

mod accounts;
mod connect_oauth;
mod http;
mod oauth;
mod outbound;
mod roster_object;
mod store;
mod token_store;

use serde_json::{json, Value};
use worker::{event, Context, Date, Env, Method, Request, RequestInit, Response, Result};

use crate::admin::{self, AdminError, Document, Plan};
use crate::binding;
use crate::catalog::OriginRules;
use crate::gateway::{self, Effect, NotSent, Surface};
use crate::grant::GrantKey;
use crate::mcp::dispatch::ServerConfig;
use crate::mcp::wire::RpcError;
use crate::mcp::{self, CallToolResult, HttpIn};
use crate::oauth::command::OAuthReply;
use crate::oauth::metadata::BearerChallenge;
use crate::oauth::Site;
use crate::roster::{Actor, AuditEntry, Command, Identity, RosterError};
use http::{
    bearer, bounded_body, empty_response, error_response, header, json_response, with_cors,
};

const ROSTER_BINDING: &str = binding::ROSTER;

/// Deployment settings, read from `[vars]` and secrets.
struct Config {
    allowed_origins: Vec<String>,
    page_size: usize,
    collapse_threshold: usize,
    allow_loopback_http: bool,
    upstream_timeout_ms: u64,
    /// Test deployments only: honour `x-floorgate-test-clock-offset-ms` for cache ages.
    test_clock: bool,
    /// The origin clients reach the gateway at, when it differs from the request's own (behind
    /// a proxy): the OAuth issuer and the MCP resource derive from it.
    public_origin: Option<String>,
    /// Client registrations one address may make per minute in one isolate.
    registrations_per_minute: u32,
}

impl Config {
    fn from_env(env: &Env) -> Config {
        let var = |name: &str| env.var(name).ok().map(|v| v.to_string());
        Config {
            allowed_origins: var(binding::ALLOWED_ORIGINS)
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            page_size: var(binding::TOOLS_PAGE_SIZE)
                .and_then(|v| v.parse().ok())
                .unwrap_or(100),
            collapse_threshold: var(binding::COLLAPSE_THRESHOLD)
                .and_then(|v| v.parse().ok())
                .unwrap_or(crate::resolver::DEFAULT_COLLAPSE_THRESHOLD),
            allow_loopback_http: var(binding::ALLOW_LOOPBACK_HTTP).as_deref() == Some("true"),
            upstream_timeout_ms: var(binding::UPSTREAM_TIMEOUT_MS)
                .and_then(|v| v.parse().ok())
                .unwrap_or(crate::upstream::TIMEOUT_MS),
            test_clock: var(binding::TEST_CLOCK).as_deref() == Some("enabled"),
            public_origin: var(binding::PUBLIC_ORIGIN).filter(|v| !v.is_empty()),
            registrations_per_minute: var(binding::REGISTRATIONS_PER_MINUTE)
                .and_then(|v| v.parse().ok())
                .unwrap_or(crate::oauth::client::REGISTRATIONS_PER_MINUTE),
        }
    }
}

impl Config {
    /// The origins a document written now may name.
    fn origin_rules(&self) -> OriginRules {
        OriginRules {
            allow_loopback: self.allow_loopback_http,
        }
    }
}

fn now_ms() -> i64 {
    Date::now().as_millis() as i64
}

/// One structured line per request; never a grant, a secret or a tool's arguments.
struct LogLine {
    started: i64,
    route: &'static str,
    tenant: Option<String>,
    member: Option<String>,
    method: Option<String>,
    tool: Option<String>,
    outcome: String,
}

impl LogLine {
    fn new(route: &'static str) -> LogLine {
        LogLine {
            started: now_ms(),
            route,
            tenant: None,
            member: None,
            method: None,
            tool: None,
            outcome: String::new(),
        }
    }

    fn emit(&self, status: u16) {
        let line = json!({
            "ts": self.started, "route": self.route, "tenant": self.tenant, "member": self.member,
            "method": self.method, "tool": self.tool, "status": status, "outcome": self.outcome,
            "latency_ms": now_ms() - self.started,
        });
        worker::console_log!("{line}");
    }
}

#[event(start)]
fn start() {
    console_error_panic_hook::set_once();
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    let path = req.path();
    let config = Config::from_env(&env);
    let origin = header(&req, "Origin");
    let route = if path == "/mcp" {
        "mcp"
    } else if path.starts_with("/admin/") {
        "admin"
    } else if oauth::handles(&path) {
        "oauth"
    } else if accounts::handles(&path) || connect_oauth::handles(&path) {
        "connect"
    } else {
        "other"
    };
    let mut log = LogLine::new(route);
    // The OAuth paths serve any origin: their JSON endpoints take no ambient credential (a
    // browser-based client calls them cross-origin), and the page's form posts carry a CSRF
    // token bound to a SameSite cookie (Chrome sends `Origin: null` under no-referrer).
    let origin_ok = route == "oauth"
        || route == "connect"
        || http::origin_allowed(origin.as_deref(), &config.allowed_origins);
    let response = if !origin_ok {
        log.outcome = "origin_refused".into();
        error_response(
            403,
            "forbidden: this Origin is not allowed to call the gateway",
        )
    } else if req.method() == Method::Options {
        http::preflight(origin.as_deref())
    } else {
        match path.as_str() {
            "/healthz" => json_response(200, &json!({"status": "ok"})),
            "/mcp" => serve_mcp(req, &env, &ctx, &config, &mut log).await,
            p if oauth::handles(p) => oauth::serve(req, &env, &config, p).await,
            p if accounts::handles(p) => accounts::serve(req, &env, &config).await,
            p if connect_oauth::handles(p) => connect_oauth::callback(req, &env, &config, p).await,
            p if p.starts_with("/admin/") => serve_admin(req, &env, &config, &mut log).await,
            _ => error_response(404, "not found: the MCP endpoint is POST /mcp"),
        }
    };
    let response = match response {
        Ok(r) => r,
        Err(e) => {
            worker::console_error!("internal error: {e}");
            log.outcome = "internal_error".into();
            error_response(500, "internal error")?
        }
    };
    log.emit(response.status_code());
    // A refused origin gets no CORS grant, so a browser cannot even read the refusal; the
    // sign-in pages are for the member's own browser, never for another site's script.
    if origin_ok && path != crate::oauth::AUTHORIZE_PATH && route != "connect" {
        with_cors(response, origin.as_deref())
    } else {
        Ok(response)
    }
}

/// Posts a command's JSON to the roster object named `tenant`.
async fn to_roster_object(env: &Env, tenant: &str, body: String) -> Result<Response> {
    let stub = env
        .durable_object(ROSTER_BINDING)?
        .id_from_name(tenant)?
        .get_stub()?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(body.into()));
    let request = Request::new_with_init("https://roster/command", &init)?;
    stub.fetch_with_request(request).await
}

/// Sends one command to a tenant's roster object.
async fn roster(
    env: &Env,
    tenant: &str,
    command: &Command,
) -> Result<std::result::Result<Value, RosterError>> {
    let mut response = to_roster_object(env, tenant, serde_json::to_string(command)?).await?;
    let body: Value = response.json().await?;
    if let Some(ok) = body.get("ok") {
        return Ok(Ok(ok.clone()));
    }
    let error = body
        .get("err")
        .cloned()
        .and_then(|e| serde_json::from_value::<RosterError>(e).ok())
        .unwrap_or_else(|| RosterError::Storage("unreadable roster reply".into()));
    Ok(Err(error))
}

/// The deployment's grant key, or why there is none (logged; the caller gets 503).
fn grant_key(env: &Env) -> std::result::Result<GrantKey, String> {
    let stored = env
        .secret(binding::GRANT_MAC_KEY)
        .map(|s| s.to_string())
        .ok();
    GrantKey::new(stored.as_deref()).map_err(|problem| {
        worker::console_error!("{problem}");
        problem.to_string()
    })
}

/// Why a request was not authenticated.
enum AuthRefusal {
    /// 401 (or 403 for a missing scope) with this challenge.
    Challenge(BearerChallenge),
    /// 503: the deployment cannot check grants at all.
    Unavailable(String),
}

/// What a request's credential is re-checked by before each later effect of a batch.
enum Credential {
    /// A static grant: its stored hash.
    Grant { hash: String },
    /// An OAuth access token (asked of the roster again, as on the first check).
    AccessToken { bearer: String },
}

/// A validated credential: who it speaks for, and how to re-check it.
struct Authenticated {
    identity: Identity,
    credential: Credential,
}

/// The check every MCP request makes: a grant's MAC locally, then the roster (an access token
/// goes straight to its tenant's roster) — never a cache.
async fn authenticate(
    req: &Request,
    env: &Env,
    site: &Site,
    now: i64,
) -> Result<std::result::Result<Authenticated, AuthRefusal>> {
    let Some(token) = bearer(req) else {
        return Ok(Err(AuthRefusal::Challenge(BearerChallenge::Missing)));
    };
    if !crate::grant::looks_like_grant(&token) {
        return Ok(
            match oauth::authenticate_access(env, site, &token, now).await? {
                Ok(identity) => Ok(Authenticated {
                    identity,
                    credential: Credential::AccessToken { bearer: token },
                }),
                Err(challenge) => Err(AuthRefusal::Challenge(challenge)),
            },
        );
    }
    let key = match grant_key(env) {
        Ok(key) => key,
        Err(problem) => return Ok(Err(AuthRefusal::Unavailable(problem))),
    };
    // A forged or malformed token ends here: no Durable Object is touched for it.
    let claim = match crate::grant::parse(&token, &key) {
        Ok(claim) => claim,
        Err(error) => {
            return Ok(Err(AuthRefusal::Challenge(BearerChallenge::InvalidToken(
                error.to_string(),
            ))))
        }
    };
    match still_valid(env, &claim.tenant, &claim.member, &claim.hash).await? {
        Some(row) => Ok(Ok(Authenticated {
            identity: Identity {
                tenant: claim.tenant,
                member: claim.member,
                role: row
                    .get("role")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                grant_id: row
                    .get("grant_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            },
            credential: Credential::Grant { hash: claim.hash },
        })),
        None => Ok(Err(AuthRefusal::Challenge(BearerChallenge::InvalidToken(
            "grant is unknown, revoked, or its member is not active".into(),
        )))),
    }
}

/// Whether the request's credential still speaks for its member.
async fn still_authenticated(
    env: &Env,
    site: &Site,
    identity: &Identity,
    credential: &Credential,
    now: i64,
) -> Result<bool> {
    match credential {
        Credential::Grant { hash } => {
            Ok(still_valid(env, &identity.tenant, &identity.member, hash)
                .await?
                .is_some())
        }
        Credential::AccessToken { bearer } => {
            Ok(oauth::authenticate_access(env, site, bearer, now)
                .await?
                .is_ok())
        }
    }
}

/// Asks the tenant's roster whether a grant is live; its row when it is.
async fn still_valid(
    env: &Env,
    tenant: &str,
    member: &str,
    hash: &str,
) -> Result<Option<serde_json::Map<String, Value>>> {
    let command = Command::Validate {
        member: member.to_owned(),
        hash: hash.to_owned(),
    };
    match roster(env, tenant, &command).await? {
        Ok(Value::Object(row)) => Ok(Some(row)),
        Ok(_) => Ok(None),
        Err(e) => Err(worker::Error::RustError(e.to_string())),
    }
}

async fn serve_mcp(
    mut req: Request,
    env: &Env,
    ctx: &Context,
    config: &Config,
    log: &mut LogLine,
) -> Result<Response> {
    match req.method() {
        Method::Post => {}
        Method::Get | Method::Delete => {
            log.outcome = "method_not_allowed".into();
            let response = error_response(
                405,
                "method not allowed: this endpoint is stateless; POST JSON-RPC to /mcp",
            )?;
            response.headers().set("Allow", "POST, OPTIONS")?;
            return Ok(response);
        }
        _ => return error_response(405, "method not allowed: POST JSON-RPC to /mcp"),
    }
    let site = match oauth::site(&req, config) {
        Ok(site) => site,
        Err(problem) => {
            return error_response(
                500,
                &format!("the gateway's public origin is unusable: {problem}"),
            )
        }
    };
    let now = clock(&req, config);
    let Authenticated {
        identity,
        credential,
    } = match authenticate(&req, env, &site, now).await? {
        Ok(authenticated) => authenticated,
        Err(AuthRefusal::Challenge(challenge)) => {
            log.outcome = "unauthorized".into();
            return oauth::challenge_response(&site, &challenge);
        }
        Err(AuthRefusal::Unavailable(problem)) => {
            log.outcome = "grant_key_unusable".into();
            return error_response(503, &problem);
        }
    };
    log.tenant = Some(identity.tenant.clone());
    log.member = Some(identity.member.clone());
    if let Some(content_type) = header(&req, "Content-Type") {
        if !content_type
            .to_ascii_lowercase()
            .starts_with("application/json")
        {
            log.outcome = "unsupported_media_type".into();
            return error_response(415, "unsupported media type: send application/json");
        }
    }
    let body = match bounded_body(&mut req, http::MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(status) => {
            log.outcome = "body_refused".into();
            let message = if status == 413 {
                format!(
                    "payload too large: the limit is {} bytes",
                    http::MAX_BODY_BYTES
                )
            } else {
                "the request body could not be read".to_owned()
            };
            return error_response(status, &message);
        }
    };
    let (version, method_header, name_header) = (
        header(&req, mcp::header::PROTOCOL_VERSION),
        header(&req, mcp::header::METHOD),
        header(&req, mcp::header::NAME),
    );
    let http_in = HttpIn {
        protocol_version: version.as_deref(),
        mcp_method: method_header.as_deref(),
        mcp_name: name_header.as_deref(),
    };
    let server = ServerConfig {
        name: "floorgate".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        instructions: Some(INSTRUCTIONS.into()),
        page_size: config.page_size,
    };
    // The store logs a load failure for the operator; the member still gets the handshake.
    let tenant = store::tenant(env, &identity.tenant, now, config.collapse_threshold).await;
    let mut exchange = match &tenant {
        Ok(tenant) => mcp::handle(
            &server,
            http_in,
            &body,
            &Surface::new(&identity, tenant, now),
        ),
        Err(_) => {
            log.outcome = "tenant_unavailable".into();
            mcp::handle(
                &server,
                http_in,
                &body,
                &gateway::Unavailable::tenant_catalog(),
            )
        }
    };
    log.method = exchange.method.clone();
    log.tool = exchange.tool.clone();
    // One line per batch entry, so every call of a batch is attributable in the logs.
    for (index, (method, tool)) in exchange.entries.iter().enumerate() {
        let line = json!({
            "event": "batch_entry", "tenant": identity.tenant, "member": identity.member,
            "index": index, "method": method, "tool": tool,
        });
        worker::console_log!("{line}");
    }
    let mut results = Vec::new();
    let mut not_sent = None;
    for (position, effect) in exchange.take_effects().into_iter().enumerate() {
        // The grant was checked for the first effect; each later one asks again, so a member
        // suspended during a batch of slow calls sends nothing more.
        if position > 0 && not_sent.is_none() {
            not_sent = match still_authenticated(env, &site, &identity, &credential, now).await {
                Ok(true) => None,
                Ok(false) => Some(NotSent::GrantRevoked),
                Err(error) => {
                    worker::console_error!("grant re-check failed: {error}");
                    Some(NotSent::RecheckFailed)
                }
            };
        }
        results.push(match not_sent {
            None => perform(env, ctx, config, &site, &identity, effect, now).await,
            Some(reason) => {
                if let Effect::Outbound(call) = &effect {
                    outbound::record_not_sent(env, ctx, &identity, call);
                }
                Ok(CallToolResult::error(reason.to_string()))
            }
        });
    }
    let reply = exchange.finish(results);
    log.outcome = match &reply.json {
        _ if tenant.is_err() => "tenant_unavailable".into(),
        Some(v) if v.get("error").is_some() => "rpc_error".into(),
        Some(v) if v.pointer("/result/isError") == Some(&Value::Bool(true)) => "tool_error".into(),
        _ => "ok".into(),
    };
    match reply.json {
        None => empty_response(reply.status),
        Some(json) => json_response(reply.status, &json),
    }
}

const INSTRUCTIONS: &str = "floorgate gives you the tools of your organisation's connected accounts. \
When search_tools is listed, find a connected tool with it (an empty result means no connected tool matches: say so rather than guessing), \
then run it with execute_tool. Call whoami to see which member you act as.";

/// The time the core sees. Test deployments may move it forward (never back: nothing expired
/// may come back) to age caches, codes and tokens without sleeping.
fn clock(req: &Request, config: &Config) -> i64 {
    let offset = if config.test_clock {
        header(req, "x-floorgate-test-clock-offset-ms")
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0)
            .max(0)
    } else {
        0
    };
    now_ms() + offset
}

/// Performs one effect. Whatever fails is that call's answer, never the request's: a batch's
/// other calls keep theirs.
async fn perform(
    env: &Env,
    ctx: &Context,
    config: &Config,
    site: &Site,
    identity: &Identity,
    effect: Effect,
    now: i64,
) -> std::result::Result<CallToolResult, RpcError> {
    match effect {
        Effect::AccountLink { connection, oauth } => Ok(accounts::issue_link(
            env,
            site,
            identity,
            &connection,
            oauth,
            now,
        )),
        Effect::Disconnect { command, oauth } => {
            Ok(connect_oauth::disconnect(env, config, identity, command, oauth).await)
        }
        Effect::ListConnections { listing } => {
            Ok(accounts::list_connections(env, identity, listing).await)
        }
        Effect::Roster(command) => match roster(env, &identity.tenant, &command).await {
            Ok(Ok(value)) => Ok(CallToolResult::json(gateway::control::roster_reply(
                &command, value,
            ))),
            Ok(Err(error)) => Ok(CallToolResult::error(error.to_string())),
            Err(error) => {
                worker::console_error!("roster command failed: {error}");
                Ok(CallToolResult::error(
                    "the gateway could not reach the tenant's roster; try again",
                ))
            }
        },
        Effect::SignInCode { member } => {
            if member != identity.member {
                let target_view = oauth::member_view(env, config, &identity.tenant, &member).await;
                if let Err(refusal) = gateway::control::may_issue_sign_in_code(
                    &identity.member,
                    &member,
                    target_view.as_ref().map(|v| &v.view),
                ) {
                    return Ok(CallToolResult::error(refusal));
                }
            }
            let by = Actor::Member(identity.member.clone());
            let issued =
                oauth::issue_sign_in_code(env, &identity.tenant, &member, &by, now_ms()).await;
            match issued {
                Ok(Some(OAuthReply::SignInIssued { code, expires_at })) => {
                    Ok(CallToolResult::json(
                        json!({"member": member, "code": code, "expires_at": expires_at}),
                    ))
                }
                Ok(Some(OAuthReply::MemberNotActive { member })) => Ok(CallToolResult::error(
                    format!("member {member:?} is unknown or not active"),
                )),
                _ => Ok(CallToolResult::error(
                    "the sign-in code could not be issued; try again",
                )),
            }
        }
        Effect::Outbound(call) => {
            outbound::execute(
                env,
                ctx,
                config.allow_loopback_http,
                config.upstream_timeout_ms,
                identity,
                *call,
                now,
            )
            .await
        }
    }
}

/// The tenants whose stored documents a just-stored directory makes invalid (they keep serving
/// their last good copy where an isolate has one), how many were checked, and whether more
/// tenants were left unchecked past [`admin::MAX_TENANTS_CHECKED`] (listing stops there).
async fn tenants_invalidated(
    env: &Env,
    directory: &admin::DirectoryWrite,
) -> Result<(Vec<crate::tenant::Invalidated>, usize, bool)> {
    let kv = store::kv(env)?;
    let mut tenants: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut more = false;
    while tenants.len() <= admin::MAX_TENANTS_CHECKED {
        let mut list = kv.list().prefix(admin::TENANT_KEY_PREFIX.to_owned());
        if let Some(c) = cursor.take() {
            list = list.cursor(c);
        }
        let page = list.execute().await?;
        tenants.extend(
            page.keys
                .iter()
                .filter_map(|k| Document::Catalog.tenant_of_key(&k.name))
                .map(str::to_owned),
        );
        match page.cursor {
            Some(c) if !page.list_complete => {
                cursor = Some(c);
                more = true;
            }
            _ => {
                more = false;
                break;
            }
        }
    }
    more |= tenants.len() > admin::MAX_TENANTS_CHECKED;
    tenants.truncate(admin::MAX_TENANTS_CHECKED);
    let mut stored = Vec::with_capacity(tenants.len());
    for tenant in &tenants {
        let catalog = kv.get(&Document::Catalog.kv_key(tenant)).text().await?;
        let policy = kv.get(&Document::Policy.kv_key(tenant)).text().await?;
        stored.push((tenant.as_str(), catalog, policy));
    }
    // One pass: the tenants the new directory invalidates, and a snapshot compiled against it
    // for each of the others (theirs name the old directory and would be refused); tenants past
    // the check limit wait for versions/rebuild.
    let recheck = directory.recheck(
        stored
            .iter()
            .map(|(t, c, p)| (*t, c.as_deref(), p.as_deref())),
    );
    for (tenant, snapshot) in &recheck.compiled {
        kv.put_bytes(&admin::tenant_snapshot_key(tenant), snapshot)?
            .execute()
            .await?;
    }
    let invalidated = recheck.invalidated;
    Ok((invalidated, tenants.len(), more))
}

/// Records a change made outside the roster (a KV document) in `object`'s audit. A failure is
/// logged and reported to the operator (`"audited": false`); the stored document stays.
async fn audit(env: &Env, object: &str, entry: AuditEntry) -> bool {
    let failure = match roster(env, object, &Command::RecordAudit { entry }).await {
        Ok(Ok(_)) => return true,
        Ok(Err(error)) => error.to_string(),
        Err(error) => error.to_string(),
    };
    worker::console_error!("audit record failed: {failure}");
    false
}

/// `{"error": …}` with the refusal's status, and its challenge when it refuses the secret.
fn refuse(error: &AdminError) -> Result<Response> {
    let response = answer(error.answer())?;
    if let Some(challenge) = error.challenge() {
        response.headers().set("WWW-Authenticate", challenge)?;
    }
    Ok(response)
}

fn answer(answer: admin::Answer) -> Result<Response> {
    json_response(answer.status, &answer.body)
}

/// The operator API: the shell authenticates, reads the bounded body and performs what
/// `admin::decide` plans.
async fn serve_admin(
    mut req: Request,
    env: &Env,
    config: &Config,
    log: &mut LogLine,
) -> Result<Response> {
    let stored = env
        .secret(binding::ADMIN_SECRET)
        .map(|s| s.to_string())
        .ok();
    if let Err(refusal) = admin::authorize(stored.as_deref(), bearer(&req).as_deref()) {
        if let AdminError::Disabled(disabled) = &refusal {
            worker::console_error!("{disabled}");
        }
        log.outcome = "admin_unauthorized".into();
        return refuse(&refusal);
    }
    let route = match admin::route(req.method().as_ref(), &req.path()) {
        Ok(route) => route,
        Err(e) => return refuse(&e.into()),
    };
    let body = match bounded_body(&mut req, http::MAX_ADMIN_BODY_BYTES).await {
        Ok(body) => body,
        Err(413) => {
            let limit = http::MAX_ADMIN_BODY_BYTES;
            return refuse(&AdminError::BodyTooLarge { limit });
        }
        // `bounded_body` refuses with 413 or 400.
        Err(_) => return refuse(&AdminError::BodyUnreadable),
    };
    log.outcome = "ok".into();
    match admin::decide(route, &body, now_ms(), config.origin_rules()) {
        Ok(plan) => perform_admin(env, config, &req, plan).await,
        Err(refusal) => refuse(&refusal),
    }
}

/// Performs an admin plan: the roster command, the KV read or write and its audit row.
async fn perform_admin(env: &Env, config: &Config, req: &Request, plan: Plan) -> Result<Response> {
    match plan {
        Plan::ConnectSharedAccount(mut request) => {
            // The link is opened in a browser, so it carries the origin clients use, and its
            // expiry is on the clock the pages check it with.
            let site = match oauth::site(req, config) {
                Ok(site) => site,
                Err(problem) => return error_response(500, &problem),
            };
            request.now = clock(req, config);
            connect_oauth::shared_link(env, config, &site, request).await
        }
        Plan::PutSharedAccount {
            tenant,
            connection,
            credential,
            now,
        } => {
            let Ok(prepared) = store::tenant(env, &tenant, now, config.collapse_threshold).await
            else {
                return refuse(&AdminError::NotSharedConnection(
                    "the tenant's catalog cannot be loaded".into(),
                ));
            };
            if let Err(refusal) = admin::shared_account_target(&prepared.catalog, &connection) {
                return refuse(&refusal);
            }
            let command = match accounts::seal_shared(env, &tenant, &connection, &credential.0, now)
            {
                Ok(command) => command,
                Err(problem) => return error_response(503, &problem),
            };
            answer(admin::roster_answer(roster(env, &tenant, &command).await?))
        }
        Plan::DeleteSharedAccount {
            tenant,
            connection,
            command,
        } => {
            // Revoked at the provider first when the connector connects through OAuth; a
            // catalog that cannot be read, or a key-based connector, only deletes the row.
            let client = store::tenant(env, &tenant, now_ms(), config.collapse_threshold)
                .await
                .ok()
                .and_then(|prepared| {
                    admin::shared_oauth_target(&prepared.catalog, &connection).ok()
                });
            let revocation = match client.as_deref() {
                Some(client) => {
                    let account = connect_oauth::Account {
                        tenant: &tenant,
                        connection: &connection,
                        member: None,
                    };
                    Some(connect_oauth::revoke_at_provider(env, config, account, client).await)
                }
                None => None,
            };
            let mut reply = admin::roster_answer(roster(env, &tenant, &command).await?);
            if let (Some(revocation), 200) = (revocation, reply.status) {
                revocation.annotate(&mut reply.body);
            }
            answer(reply)
        }
        Plan::Roster { object, command } => {
            answer(admin::roster_answer(roster(env, &object, &command).await?))
        }
        Plan::IssueGrant(request) => {
            let key = match grant_key(env) {
                Ok(key) => key,
                Err(problem) => return refuse(&AdminError::GrantKeyUnusable(problem)),
            };
            let mut secret = [0u8; crate::grant::SECRET_BYTES];
            if getrandom::getrandom(&mut secret).is_err() {
                return refuse(&AdminError::NoRandomness);
            }
            let issue = request.issue(&secret, &key);
            let reply = roster(env, &issue.tenant, &issue.command).await?;
            answer(issue.answer(reply))
        }
        Plan::IssueSignIn {
            tenant,
            member,
            now,
        } => match oauth::issue_sign_in_code(env, &tenant, &member, &Actor::Operator, now).await? {
            Some(reply) => answer(admin::sign_in_answer(&member, reply)),
            None => refuse(&AdminError::NoRandomness),
        },
        Plan::RebuildVersions { cursor } => {
            let kv = store::kv(env)?;
            let first_page = cursor.is_none();
            let directory = kv.get(admin::DIRECTORY_KEY).text().await?;
            let directory_version = admin::directory_version(directory.as_deref());
            if first_page {
                if let Some(snapshot) = admin::compile_directory(directory.as_deref()) {
                    kv.put_bytes(admin::DIRECTORY_SNAPSHOT_KEY, &snapshot)?
                        .execute()
                        .await?;
                }
                kv.put(admin::DIRECTORY_VERSION_KEY, directory_version.as_str())?
                    .execute()
                    .await?;
            }
            let mut list = kv
                .list()
                .prefix(admin::TENANT_KEY_PREFIX.to_owned())
                .limit(admin::REBUILD_KEYS_PER_CALL);
            if let Some(c) = cursor {
                list = list.cursor(c);
            }
            let page = list.execute().await?;
            let mut tenants: Vec<String> = Vec::new();
            for key in &page.keys {
                let tenant = Document::Catalog
                    .tenant_of_key(&key.name)
                    .or_else(|| Document::Policy.tenant_of_key(&key.name));
                if let Some(t) = tenant {
                    if !tenants.iter().any(|seen| seen == t) {
                        tenants.push(t.to_owned());
                    }
                }
            }
            let parsed = crate::catalog::Directory::parse(
                directory
                    .as_deref()
                    .unwrap_or(r#"{"schema": 1, "connectors": []}"#),
            );
            let mut not_compiled: Vec<Value> = Vec::new();
            for tenant in &tenants {
                let catalog = kv.get(&Document::Catalog.kv_key(tenant)).text().await?;
                let policy = kv.get(&Document::Policy.kv_key(tenant)).text().await?;
                let version = admin::tenant_version(catalog.as_deref(), policy.as_deref());
                let compiled = parsed.as_ref().map_err(|e| e.lines()).and_then(|d| {
                    admin::compile_against(
                        tenant,
                        d,
                        &directory_version,
                        catalog.as_deref(),
                        policy.as_deref(),
                    )
                });
                match compiled {
                    Ok(snapshot) => {
                        kv.put_bytes(&admin::tenant_snapshot_key(tenant), &snapshot)?
                            .execute()
                            .await?
                    }
                    Err(problems) => {
                        not_compiled.push(json!({"tenant": tenant, "problems": problems}))
                    }
                }
                kv.put(&admin::tenant_version_key(tenant), version)?
                    .execute()
                    .await?;
            }
            let next = page.cursor.filter(|_| !page.list_complete);
            json_response(
                200,
                &json!({
                    "directory": first_page,
                    "tenants": tenants,
                    "not_compiled": not_compiled,
                    "next_cursor": next,
                }),
            )
        }
        Plan::Read { key } => match store::kv(env)?.get(&key).text().await? {
            Some(text) => {
                let response = Response::ok(text)?;
                response.headers().set("Content-Type", "application/json")?;
                Ok(response)
            }
            None => refuse(&AdminError::NothingStored(key)),
        },
        Plan::PutDirectory(write) => {
            let kv = store::kv(env)?;
            kv.put(admin::DIRECTORY_KEY, write.text.as_str())?
                .execute()
                .await?;
            kv.put_bytes(admin::DIRECTORY_SNAPSHOT_KEY, &write.snapshot)?
                .execute()
                .await?;
            // After the text: an isolate that sees the new version reads the new text (or, while
            // KV propagates, an older one whose fingerprint differs, and so reads again).
            kv.put(admin::DIRECTORY_VERSION_KEY, write.version())?
                .execute()
                .await?;
            let (object, entry) = write.audit();
            let audited = audit(env, object, entry).await;
            let (invalidated, checked, more) = tenants_invalidated(env, &write).await?;
            answer(write.answer(audited, &invalidated, checked, more))
        }
        Plan::PutDocument(write) => {
            let kv = store::kv(env)?;
            let directory = kv.get(admin::DIRECTORY_KEY).text().await?;
            let sibling = kv.get(&write.sibling_key()).text().await?;
            let checked = match write.check(directory.as_deref(), sibling.as_deref()) {
                Ok(checked) => checked,
                Err(refusal) => return refuse(&refusal),
            };
            // Before the catalog is stored: the accounts of the connections it removes or
            // adds are forgotten, or nothing is stored.
            let stored = kv.get(&checked.key()).text().await?;
            let mut forgotten = None;
            if let Some(command) = checked.forget_accounts(stored.as_deref()) {
                match roster(env, &checked.write.tenant, &command).await {
                    Ok(Ok(reply)) => forgotten = reply.get("forgotten").cloned(),
                    Ok(Err(error)) => {
                        return refuse(&AdminError::AccountsNotForgotten(error.to_string()))
                    }
                    Err(error) => {
                        return refuse(&AdminError::AccountsNotForgotten(error.to_string()))
                    }
                }
            }
            // The snapshot first: until the version key names the new documents no isolate
            // uses it (one that reads it early refuses it by its stamp), so a write that fails
            // here has changed nothing. Then the document, then the version key, so an isolate
            // that sees the new version finds both.
            kv.put_bytes(
                &admin::tenant_snapshot_key(&checked.write.tenant),
                &checked.snapshot,
            )?
            .execute()
            .await?;
            kv.put(&checked.key(), checked.text())?.execute().await?;
            kv.put(
                &admin::tenant_version_key(&checked.write.tenant),
                checked.version.as_str(),
            )?
            .execute()
            .await?;
            let (object, entry) = checked.audit();
            let audited = audit(env, object, entry).await;
            let mut done = checked.answer(audited);
            if let Some(forgotten) = forgotten {
                done.body["accounts_forgotten"] = forgotten;
            }
            answer(done)
        }
    }
}
