//! The operator API, sans I/O: who may call it, its routes, and what each request turns into.
//!
//! Every path is under `/admin/v1/`. The shell reads the admin secret and the bearer token and
//! asks [`authorize`]; it maps the path with [`route`], reads the bounded body and hands both to
//! [`decide`], which parses and checks the body (roles, labels, UTF-8, documents) and returns a
//! [`Plan`]: the roster command to send and to which object, the KV document to read, or a
//! checked document to store. The shell performs it and renders what the plan's methods answer
//! ([`Answer`]); every refusal is an [`AdminError`] with its status and message. Ids are checked
//! here so storage never sees a malformed one.

use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt;

use crate::catalog::{Directory, DocumentErrors, OriginRules};
use crate::grant::{valid_id, GrantKey, SECRET_BYTES};
use crate::oauth::command::OAuthReply;
use crate::roster::{
    Actor, AuditEntry, Command, MemberStatus, RosterError, DEPLOYMENT_AUDIT_OBJECT,
};
use crate::tenant::{Invalidated, Summary};

/// Shortest admin secret the API accepts: 32 bytes is 256 bits when the secret is random
/// bytes, and still far beyond guessing when it is hex or base64 of 24 random bytes.
pub const MIN_ADMIN_SECRET_BYTES: usize = 32;

/// Why the admin API is off; it answers 503 with this message and logs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminDisabled {
    Missing,
    TooShort { bytes: usize },
}

impl fmt::Display for AdminDisabled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = crate::binding::ADMIN_SECRET;
        match self {
            AdminDisabled::Missing => write!(f, "the admin API is disabled: set the {name} secret"),
            AdminDisabled::TooShort { bytes } => write!(
                f,
                "the admin API is disabled: {name} is {bytes} bytes long and must be at least {MIN_ADMIN_SECRET_BYTES} (for example 24 random bytes as 48 hex digits)"
            ),
        }
    }
}

/// The admin secret if it may be used: present and at least [`MIN_ADMIN_SECRET_BYTES`] long.
pub fn usable_admin_secret(secret: Option<&str>) -> Result<&str, AdminDisabled> {
    match secret {
        None | Some("") => Err(AdminDisabled::Missing),
        Some(s) if s.len() < MIN_ADMIN_SECRET_BYTES => {
            Err(AdminDisabled::TooShort { bytes: s.len() })
        }
        Some(s) => Ok(s),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    ListMembers {
        tenant: String,
    },
    PutMember {
        tenant: String,
        member: String,
    },
    SetStatus {
        tenant: String,
        member: String,
        status: MemberStatus,
    },
    IssueGrant {
        tenant: String,
        member: String,
    },
    /// A one-time code a member signs in with on the OAuth sign-in page.
    IssueSignIn {
        tenant: String,
        member: String,
    },
    ListGrants {
        tenant: String,
        member: Option<String>,
    },
    RevokeGrant {
        tenant: String,
        grant: String,
    },
    GetDocument {
        tenant: String,
        document: Document,
    },
    PutDocument {
        tenant: String,
        document: Document,
    },
    GetDirectory,
    PutDirectory,
    /// Writes the version keys of the directory and of one page of tenants from their stored
    /// documents: after an upgrade from a gateway that wrote none, or to repair one.
    RebuildVersions,
    ListExecutions {
        tenant: String,
    },
    /// A tenant's audit of changes, or (`None`) the deployment's own (directory writes).
    ListAudit {
        tenant: Option<String>,
    },
    /// Every account members and admins connected in a tenant, never a credential.
    ListAccounts {
        tenant: String,
    },
    /// Re-seals every stored account sealed under an older vault key version.
    ResealAccounts {
        tenant: String,
    },
    /// Sets (`PUT`) or deletes (`DELETE`) a shared connection's account.
    PutSharedAccount {
        tenant: String,
        connection: String,
    },
    /// `POST …/connections/{c}/account/connect`: a one-time link to connect the shared account
    /// at the connector's OAuth provider.
    ConnectSharedAccount {
        tenant: String,
        connection: String,
    },
    DeleteSharedAccount {
        tenant: String,
        connection: String,
    },
}

/// The per-tenant documents kept in KV.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Document {
    Catalog,
    Policy,
}

impl Document {
    pub fn name(self) -> &'static str {
        match self {
            Document::Catalog => "catalog",
            Document::Policy => "policy",
        }
    }

    /// The KV key the document lives under.
    /// The tenant of a stored document's KV key (`tenant/acme/catalog` → `acme`).
    pub fn tenant_of_key(self, key: &str) -> Option<&str> {
        key.strip_prefix(TENANT_KEY_PREFIX)?
            .strip_suffix(self.name())?
            .strip_suffix('/')
            .filter(|t| !t.is_empty() && !t.contains('/'))
    }

    pub fn kv_key(self, tenant: &str) -> String {
        format!("{TENANT_KEY_PREFIX}{tenant}/{}", self.name())
    }
}

/// The KV key of the deployment's connector directory.
pub const DIRECTORY_KEY: &str = "directory";
/// The KV key of the directory's version: [`crate::cache::documents_fingerprint`] of its text,
/// written after it, so an isolate learns of a change from a few bytes.
pub const DIRECTORY_VERSION_KEY: &str = "version/directory";

/// The KV key of a tenant's documents' version: the fingerprint of its catalog and policy as
/// stored, written after each of them.
pub fn tenant_version_key(tenant: &str) -> String {
    format!("version/tenant/{tenant}")
}

/// The KV key of a tenant's snapshot (`tenant::compile_snapshot`): written with each document,
/// before the version key, and recompiled for every tenant by `POST /admin/v1/versions/rebuild`.
pub fn tenant_snapshot_key(tenant: &str) -> String {
    format!("snapshot/tenant/{tenant}")
}

/// A tenant's snapshot compiled from its stored documents (the rebuild call's work), or the
/// problems that keep them from compiling (documents a later directory made invalid: they are
/// served from the last good copy and reported by the directory write).
pub fn compile_stored(
    tenant: &str,
    directory: Option<&str>,
    catalog: Option<&str>,
    policy: Option<&str>,
) -> Result<Vec<u8>, Vec<String>> {
    let text = directory.unwrap_or(r#"{"schema": 1, "connectors": []}"#);
    let parsed = Directory::parse(text).map_err(|e| e.lines())?;
    compile_against(
        tenant,
        &parsed,
        &directory_version(directory),
        catalog,
        policy,
    )
}

/// [`compile_stored`] against a directory already parsed, of version `directory_version` (a
/// call that compiles many tenants parses it once).
pub fn compile_against(
    tenant: &str,
    directory: &Directory,
    directory_version: &str,
    catalog: Option<&str>,
    policy: Option<&str>,
) -> Result<Vec<u8>, Vec<String>> {
    let rules = OriginRules::STORED;
    let (_, parsed) =
        crate::tenant::check_against(tenant, directory, catalog, policy, rules, "catalog")
            .map_err(|e| e.lines())?;
    crate::tenant::compile_snapshot(
        &parsed,
        policy,
        &tenant_version(catalog, policy),
        directory_version,
    )
    .map_err(|e| e.lines())
}

/// The KV key of the directory's snapshot (`tenant::compile_directory_snapshot`): written with
/// the directory, before its version key, and by `POST /admin/v1/versions/rebuild`.
pub const DIRECTORY_SNAPSHOT_KEY: &str = "snapshot/directory";

/// The directory's snapshot compiled from its text as stored (`None`: the empty directory);
/// `None` when the text does not parse or its snapshot would pass one KV value (both were
/// checked when it was written): isolates then build its index from the text.
pub fn compile_directory(text: Option<&str>) -> Option<Vec<u8>> {
    let parsed = Directory::parse(text.unwrap_or(r#"{"schema": 1, "connectors": []}"#)).ok()?;
    crate::tenant::compile_directory_snapshot(&parsed, &directory_version(text)).ok()
}

/// The directory's version: the fingerprint of its text as stored (`None`: nothing stored), as
/// `tenant::Deployment` computes it.
pub fn directory_version(text: Option<&str>) -> String {
    crate::cache::documents_fingerprint(&[text.map(str::as_bytes)])
}

/// A tenant's documents' version: the fingerprint of the catalog and the policy, in that order.
pub fn tenant_version(catalog: Option<&str>, policy: Option<&str>) -> String {
    crate::tenant::documents_version(catalog, policy)
}
/// Every tenant document's KV key starts with this.
pub const TENANT_KEY_PREFIX: &str = "tenant/";
/// A directory update checks at most this many tenants' stored documents against itself (two KV
/// reads each) and says whether it left any unchecked.
pub const MAX_TENANTS_CHECKED: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    NotFound,
    MethodNotAllowed(&'static str),
    BadId(&'static str, String),
}

impl RouteError {
    pub fn status(&self) -> u16 {
        match self {
            RouteError::NotFound => 404,
            RouteError::MethodNotAllowed(_) => 405,
            RouteError::BadId(..) => 400,
        }
    }
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::NotFound => write!(f, "no such admin route"),
            RouteError::MethodNotAllowed(allowed) => {
                write!(f, "method not allowed here; use {allowed}")
            }
            RouteError::BadId(which, id) => write!(
                f,
                "{which} id \"{id}\" is invalid: use 1-64 lowercase letters, digits or '-'"
            ),
        }
    }
}

fn id(which: &'static str, raw: &str) -> Result<String, RouteError> {
    if valid_id(raw) {
        Ok(raw.to_owned())
    } else {
        Err(RouteError::BadId(which, raw.chars().take(80).collect()))
    }
}

/// Maps a method and a path (without query) to a route.
pub fn route(method: &str, path: &str) -> Result<Route, RouteError> {
    let rest = path
        .strip_prefix("/admin/v1/")
        .ok_or(RouteError::NotFound)?;
    let segments: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let only = |allowed: &'static str, route: Route| {
        if method == allowed {
            Ok(route)
        } else {
            Err(RouteError::MethodNotAllowed(allowed))
        }
    };
    match segments.as_slice() {
        ["versions", "rebuild"] => only("POST", Route::RebuildVersions),
        ["directory"] => match method {
            "GET" => Ok(Route::GetDirectory),
            "PUT" => Ok(Route::PutDirectory),
            _ => Err(RouteError::MethodNotAllowed("GET or PUT")),
        },
        ["tenants", t, "members"] => only(
            "GET",
            Route::ListMembers {
                tenant: id("tenant", t)?,
            },
        ),
        ["tenants", t, "members", m] => only(
            "PUT",
            Route::PutMember {
                tenant: id("tenant", t)?,
                member: id("member", m)?,
            },
        ),
        ["tenants", t, "members", m, action @ ("suspend" | "reinstate" | "remove")] => {
            let status = match *action {
                "suspend" => MemberStatus::Suspended,
                "reinstate" => MemberStatus::Active,
                _ => MemberStatus::Removed,
            };
            only(
                "POST",
                Route::SetStatus {
                    tenant: id("tenant", t)?,
                    member: id("member", m)?,
                    status,
                },
            )
        }
        ["tenants", t, "members", m, "grants"] => {
            let (tenant, member) = (id("tenant", t)?, id("member", m)?);
            match method {
                "POST" => Ok(Route::IssueGrant { tenant, member }),
                "GET" => Ok(Route::ListGrants {
                    tenant,
                    member: Some(member),
                }),
                _ => Err(RouteError::MethodNotAllowed("GET or POST")),
            }
        }
        ["tenants", t, "members", m, "sign-in-codes"] => only(
            "POST",
            Route::IssueSignIn {
                tenant: id("tenant", t)?,
                member: id("member", m)?,
            },
        ),
        ["tenants", t, "grants"] => only(
            "GET",
            Route::ListGrants {
                tenant: id("tenant", t)?,
                member: None,
            },
        ),
        ["tenants", t, "grants", g] => only(
            "DELETE",
            Route::RevokeGrant {
                tenant: id("tenant", t)?,
                grant: (*g).to_owned(),
            },
        ),
        ["audit"] => only("GET", Route::ListAudit { tenant: None }),
        ["tenants", t, "audit"] => only(
            "GET",
            Route::ListAudit {
                tenant: Some(id("tenant", t)?),
            },
        ),
        ["tenants", t, "accounts"] => only(
            "GET",
            Route::ListAccounts {
                tenant: id("tenant", t)?,
            },
        ),
        ["tenants", t, "accounts", "reseal"] => only(
            "POST",
            Route::ResealAccounts {
                tenant: id("tenant", t)?,
            },
        ),
        ["tenants", t, "connections", c, "account"] => {
            let tenant = id("tenant", t)?;
            if !crate::catalog::is_valid_id(c) {
                return Err(RouteError::BadId(
                    "connection",
                    c.chars().take(80).collect(),
                ));
            }
            let connection = (*c).to_owned();
            match method {
                "PUT" => Ok(Route::PutSharedAccount { tenant, connection }),
                "DELETE" => Ok(Route::DeleteSharedAccount { tenant, connection }),
                _ => Err(RouteError::MethodNotAllowed("PUT or DELETE")),
            }
        }
        ["tenants", t, "connections", c, "account", "connect"] => {
            let tenant = id("tenant", t)?;
            if !crate::catalog::is_valid_id(c) {
                return Err(RouteError::BadId(
                    "connection",
                    c.chars().take(80).collect(),
                ));
            }
            only(
                "POST",
                Route::ConnectSharedAccount {
                    tenant,
                    connection: (*c).to_owned(),
                },
            )
        }
        ["tenants", t, "executions"] => only(
            "GET",
            Route::ListExecutions {
                tenant: id("tenant", t)?,
            },
        ),
        ["tenants", t, doc @ ("catalog" | "policy")] => {
            let tenant = id("tenant", t)?;
            let document = if *doc == "catalog" {
                Document::Catalog
            } else {
                Document::Policy
            };
            match method {
                "GET" => Ok(Route::GetDocument { tenant, document }),
                "PUT" => Ok(Route::PutDocument { tenant, document }),
                _ => Err(RouteError::MethodNotAllowed("GET or PUT")),
            }
        }
        _ => Err(RouteError::NotFound),
    }
}

/// Body of `PUT …/members/{m}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutMemberBody {
    pub role: String,
}

/// Body of `POST /admin/v1/versions/rebuild` (optional): where the last call stopped.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RebuildVersionsBody {
    #[serde(default)]
    pub cursor: Option<String>,
}

/// KV keys listed per `versions/rebuild` call (two per tenant), so one call stays well inside
/// a request's subrequest limit; the answer's `next_cursor` continues.
pub const REBUILD_KEYS_PER_CALL: u64 = 200;

/// Body of `POST …/members/{m}/grants` (optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssueGrantBody {
    #[serde(default)]
    pub label: Option<String>,
}

/// Parses a small JSON admin body with a message that names what is wrong.
pub fn parse_body<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, AdminError> {
    serde_json::from_slice(bytes).map_err(|e| AdminError::InvalidBody(e.to_string()))
}

/// A role name: what policies key their restrictions by.
pub fn valid_role(role: &str) -> bool {
    valid_id(role)
}

/// A grant's label is cut to this many characters.
pub const MAX_GRANT_LABEL_CHARS: usize = 100;
/// The label of a grant issued without one.
pub const DEFAULT_GRANT_LABEL: &str = "grant";
/// `GET …/audit` shows the newest this many rows of each audit class.
pub const AUDIT_ROWS_SHOWN: i64 = 200;
/// `GET …/executions` shows the newest this many rows.
pub const EXECUTION_ROWS_SHOWN: i64 = 100;
/// The challenge a refused admin credential (401) carries in `WWW-Authenticate`.
pub const CHALLENGE: &str = "Bearer realm=\"floorgate-admin\"";

/// Everything the admin API refuses with: a status and a message the operator can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminError {
    /// 503: no usable admin secret (the shell also logs it).
    Disabled(AdminDisabled),
    /// 401: no bearer token.
    MissingSecret,
    /// 401: a bearer token that is not the admin secret.
    WrongSecret,
    Route(RouteError),
    /// 413: the body passed the admin limit of `limit` bytes.
    BodyTooLarge {
        limit: usize,
    },
    /// 400: the body stream failed.
    BodyUnreadable,
    /// 400: a JSON body that does not parse into its shape; the parser's message.
    InvalidBody(String),
    /// 400: a member's role that is not a valid id.
    BadRole,
    /// 400: a shared account's body without a usable `credential` (never echoed).
    BadCredential(String),
    /// 409: the tenant's catalog has no shared connection of that id that takes a credential.
    NotSharedConnection(String),
    /// 400: a document that is not UTF-8.
    NotUtf8,
    /// 503: a catalog was not stored because the accounts of the connections it removes or
    /// adds could not be deleted first.
    AccountsNotForgotten(String),
    /// 422: a document with problems, every one of them listed; nothing was stored.
    InvalidDocument(DocumentErrors),
    /// 404: no document under this KV key.
    NothingStored(String),
    /// 503: the grant key is unusable; the problem as the shell logged it.
    GrantKeyUnusable(String),
    /// 500: the platform gave no randomness for a grant's secret.
    NoRandomness,
    /// The roster refused the command (404, 409 or 500).
    Roster(RosterError),
}

impl AdminError {
    pub fn status(&self) -> u16 {
        match self {
            AdminError::Disabled(_)
            | AdminError::GrantKeyUnusable(_)
            | AdminError::AccountsNotForgotten(_) => 503,
            AdminError::MissingSecret | AdminError::WrongSecret => 401,
            AdminError::Route(e) => e.status(),
            AdminError::BodyTooLarge { .. } => 413,
            AdminError::BodyUnreadable
            | AdminError::InvalidBody(_)
            | AdminError::BadRole
            | AdminError::BadCredential(_)
            | AdminError::NotUtf8 => 400,
            AdminError::NotSharedConnection(_) => 409,
            AdminError::InvalidDocument(_) => 422,
            AdminError::NothingStored(_) => 404,
            AdminError::NoRandomness => 500,
            AdminError::Roster(e) => e.status(),
        }
    }

    /// The `WWW-Authenticate` value of a refused credential; none for every other refusal.
    pub fn challenge(&self) -> Option<&'static str> {
        match self {
            AdminError::MissingSecret | AdminError::WrongSecret => Some(CHALLENGE),
            _ => None,
        }
    }

    /// The answer: `{"error": message}`, and for an invalid document its name and problems.
    pub fn answer(&self) -> Answer {
        let body = match self {
            AdminError::InvalidDocument(errors) => json!({
                "error": self.to_string(), "document": errors.document, "problems": errors.lines()
            }),
            _ => json!({ "error": self.to_string() }),
        };
        Answer {
            status: self.status(),
            body,
        }
    }
}

impl fmt::Display for AdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdminError::Disabled(disabled) => fmt::Display::fmt(disabled, f),
            AdminError::MissingSecret => {
                write!(f, "unauthorized: send Authorization: Bearer <admin secret>")
            }
            AdminError::WrongSecret => write!(f, "unauthorized: wrong admin secret"),
            AdminError::Route(e) => fmt::Display::fmt(e, f),
            AdminError::BodyTooLarge { limit } => {
                write!(f, "payload too large: the admin limit is {limit} bytes")
            }
            AdminError::BodyUnreadable => write!(f, "the request body could not be read"),
            AdminError::InvalidBody(e) => write!(f, "invalid request body: {e}"),
            AdminError::BadCredential(why) => write!(f, "invalid account: {why}"),
            AdminError::NotSharedConnection(why) => write!(f, "no account set: {why}"),
            AdminError::BadRole => {
                write!(f, "role must be 1-64 lowercase letters, digits or '-'")
            }
            AdminError::NotUtf8 => write!(f, "the document is not valid UTF-8"),
            AdminError::AccountsNotForgotten(why) => write!(
                f,
                "the catalog was not stored: the accounts of the connections it removes or adds could not be deleted first ({why}); send it again"
            ),
            AdminError::InvalidDocument(errors) => write!(
                f,
                "invalid {} document; nothing was stored",
                errors.document
            ),
            AdminError::NothingStored(key) => write!(f, "nothing is stored at {key}"),
            AdminError::GrantKeyUnusable(problem) => f.write_str(problem),
            AdminError::NoRandomness => write!(f, "no randomness available to issue a grant"),
            AdminError::Roster(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl From<RouteError> for AdminError {
    fn from(e: RouteError) -> AdminError {
        AdminError::Route(e)
    }
}

impl From<AdminDisabled> for AdminError {
    fn from(e: AdminDisabled) -> AdminError {
        AdminError::Disabled(e)
    }
}

/// What the shell sends back as JSON (`Cache-Control: no-store`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

/// Whether a request may use the admin API: `stored` is the deployment's admin secret,
/// `bearer` the request's bearer token. Compared in constant time.
pub fn authorize(stored: Option<&str>, bearer: Option<&str>) -> Result<(), AdminError> {
    let secret = usable_admin_secret(stored)?;
    match bearer {
        Some(token) if crate::grant::constant_time_eq(token.as_bytes(), secret.as_bytes()) => {
            Ok(())
        }
        Some(_) => Err(AdminError::WrongSecret),
        None => Err(AdminError::MissingSecret),
    }
}

/// What an admin request needs done, decided from its route and body alone.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Send `command` to the roster object named `object` (a tenant, or the deployment's
    /// audit object); its reply is the answer ([`roster_answer`]).
    Roster { object: String, command: Command },
    /// Issue a grant: the shell supplies the grant key and fresh randomness
    /// ([`GrantRequest::issue`]).
    IssueGrant(GrantRequest),
    /// Issue a sign-in code for an active member: the shell supplies the randomness and sends
    /// [`crate::oauth::command::OAuthCommand::IssueSignIn`]; [`sign_in_answer`] reads the reply.
    IssueSignIn {
        tenant: String,
        member: String,
        now: i64,
    },
    /// Write the version keys of the directory (on the first page) and of the tenants on one
    /// page of the KV listing, from where `cursor` says.
    RebuildVersions { cursor: Option<String> },
    /// Answer with the document stored in KV under `key`, as stored, or
    /// [`AdminError::NothingStored`].
    Read { key: String },
    /// Store a parsed directory under [`DIRECTORY_KEY`], audit it, and report the tenants it
    /// makes invalid.
    PutDirectory(DirectoryWrite),
    /// Check a tenant document against the stored documents it must agree with, then store
    /// it ([`DocumentWrite::check`]).
    PutDocument(DocumentWrite),
    /// Seal `credential` for the tenant's shared connection (the shell checks the catalog
    /// declares it shared, holds the vault and stores the sealed form).
    PutSharedAccount {
        tenant: String,
        connection: String,
        credential: Credential,
        now: i64,
    },
    /// Answer a one-time link that connects the shared account at the provider.
    ConnectSharedAccount(SharedConnect),
    /// Delete the shared account of `connection` with `command`; the shell first revokes its
    /// tokens at the provider when the connection's connector connects through OAuth and the
    /// provider has a revocation endpoint (RFC 7009), as `disconnect_account` does.
    DeleteSharedAccount {
        tenant: String,
        connection: String,
        command: Command,
    },
}

/// A one-time link for whoever holds the admin API to connect a shared connection's account at
/// its OAuth provider (the shell checks the catalog with [`shared_oauth_target`] and signs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedConnect {
    pub tenant: String,
    pub connection: String,
    pub now: i64,
}

/// A credential on its way to the vault: its `Debug` never shows it.
#[derive(Clone, PartialEq)]
pub struct Credential(pub String);

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential(<redacted>)")
    }
}

/// Whether `catalog` (the tenant's, as served) has a shared connection `connection` whose
/// connector takes a credential: only such an account can be set by the admin API.
pub fn shared_account_target(
    catalog: &crate::catalog::Catalog,
    connection: &str,
) -> Result<(), AdminError> {
    use crate::catalog::{AccountKind, AuthScheme};
    let found = catalog.connection(connection).ok_or_else(|| {
        AdminError::NotSharedConnection(format!(
            "the tenant's catalog has no connection \"{connection}\""
        ))
    })?;
    if found.account == AccountKind::Personal {
        return Err(AdminError::NotSharedConnection(format!(
            "connection \"{connection}\" is personal: each member connects their own account (connect_account)"
        )));
    }
    let takes_credential = catalog
        .connector(&found.connector)
        .is_some_and(|c| c.auth != AuthScheme::None);
    if !takes_credential {
        return Err(AdminError::NotSharedConnection(format!(
            "connection \"{connection}\"'s connector uses no credential"
        )));
    }
    Ok(())
}

/// The OAuth client the shared account of `connection` is connected through: the connection
/// must be a shared one of `catalog` (as [`shared_account_target`]) whose connector declares
/// `auth.oauth`; else the refusal says what to do instead.
pub fn shared_oauth_target(
    catalog: &crate::catalog::Catalog,
    connection: &str,
) -> Result<std::sync::Arc<crate::catalog::oauth_client::OAuthClient>, AdminError> {
    shared_account_target(catalog, connection)?;
    catalog
        .connection(connection)
        .and_then(|found| catalog.connector(&found.connector))
        .and_then(|connector| connector.oauth.clone())
        .ok_or_else(|| {
            AdminError::NotSharedConnection(format!(
                "connection \"{connection}\"'s connector does not connect through an OAuth provider; set its key with PUT …/connections/{connection}/account"
            ))
        })
}

/// The body of `PUT …/connections/{c}/account`: `{"credential": "…"}`, checked like a key
/// pasted on the member's page. A refusal never repeats what was sent.
pub fn shared_account_body(body: &[u8]) -> Result<Credential, AdminError> {
    let shape = "send {\"credential\": \"<the API key or token>\"}";
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| AdminError::BadCredential(format!("the body is not JSON; {shape}")))?;
    let Some(fields) = value.as_object().filter(|o| o.len() == 1) else {
        return Err(AdminError::BadCredential(format!(
            "the body must be an object with one field; {shape}"
        )));
    };
    let Some(Value::String(text)) = fields.get("credential") else {
        return Err(AdminError::BadCredential(format!(
            "\"credential\" must be a string; {shape}"
        )));
    };
    crate::account_link::check_key(text)
        .map(|key| Credential(key.to_owned()))
        .map_err(|problem| AdminError::BadCredential(problem.to_string()))
}

/// Decides what an authorized admin request does: parses and checks its body and builds the
/// roster command or the write. `now_ms` stamps changes; `rules` are the deployment's origin
/// rules for documents written now.
pub fn decide(
    route: Route,
    body: &[u8],
    now_ms: i64,
    rules: OriginRules,
) -> Result<Plan, AdminError> {
    let now = now_ms;
    let roster = |object: String, command: Command| Ok(Plan::Roster { object, command });
    match route {
        Route::ListMembers { tenant } => roster(tenant, Command::ListMembers),
        Route::PutMember { tenant, member } => {
            let parsed: PutMemberBody = parse_body(body)?;
            if !valid_role(&parsed.role) {
                return Err(AdminError::BadRole);
            }
            roster(
                tenant,
                Command::UpsertMember {
                    member,
                    role: parsed.role,
                    now,
                    by: Actor::Operator,
                },
            )
        }
        Route::SetStatus {
            tenant,
            member,
            status,
        } => roster(
            tenant,
            Command::SetStatus {
                member,
                status,
                now,
                by: Actor::Operator,
            },
        ),
        Route::IssueGrant { tenant, member } => {
            let parsed: IssueGrantBody = if body.is_empty() {
                IssueGrantBody::default()
            } else {
                parse_body(body)?
            };
            let label = parsed
                .label
                .unwrap_or_else(|| DEFAULT_GRANT_LABEL.into())
                .chars()
                .take(MAX_GRANT_LABEL_CHARS)
                .collect();
            Ok(Plan::IssueGrant(GrantRequest {
                tenant,
                member,
                label,
                now,
            }))
        }
        Route::IssueSignIn { tenant, member } => Ok(Plan::IssueSignIn {
            tenant,
            member,
            now,
        }),
        Route::ListGrants { tenant, member } => roster(tenant, Command::ListGrants { member }),
        Route::RevokeGrant { tenant, grant } => roster(
            tenant,
            Command::RevokeGrant {
                id: grant,
                member: None,
                now,
                by: Actor::Operator,
            },
        ),
        Route::ListAudit { tenant } => roster(
            tenant.unwrap_or_else(|| DEPLOYMENT_AUDIT_OBJECT.to_owned()),
            Command::ListAudit {
                limit: AUDIT_ROWS_SHOWN,
            },
        ),
        Route::ListAccounts { tenant } => roster(tenant, Command::ListAccounts { member: None }),
        Route::ResealAccounts { tenant } => roster(
            tenant.clone(),
            Command::ResealAccounts {
                tenant,
                now,
                by: Actor::Operator,
            },
        ),
        Route::PutSharedAccount { tenant, connection } => Ok(Plan::PutSharedAccount {
            tenant,
            connection,
            credential: shared_account_body(body)?,
            now,
        }),
        Route::ConnectSharedAccount { tenant, connection } => {
            Ok(Plan::ConnectSharedAccount(SharedConnect {
                tenant,
                connection,
                now,
            }))
        }
        Route::DeleteSharedAccount { tenant, connection } => Ok(Plan::DeleteSharedAccount {
            tenant,
            command: Command::DeleteAccount {
                connection: connection.clone(),
                member: None,
                now,
                by: Actor::Operator,
            },
            connection,
        }),
        Route::ListExecutions { tenant } => roster(
            tenant,
            Command::ListExecutions {
                limit: EXECUTION_ROWS_SHOWN,
            },
        ),
        Route::RebuildVersions => {
            let parsed: RebuildVersionsBody = if body.is_empty() {
                RebuildVersionsBody::default()
            } else {
                parse_body(body)?
            };
            Ok(Plan::RebuildVersions {
                cursor: parsed.cursor,
            })
        }
        Route::GetDirectory => Ok(Plan::Read {
            key: DIRECTORY_KEY.to_owned(),
        }),
        Route::GetDocument { tenant, document } => Ok(Plan::Read {
            key: document.kv_key(&tenant),
        }),
        Route::PutDirectory => {
            let text = utf8(body)?;
            let directory =
                Directory::parse_with(&text, rules).map_err(AdminError::InvalidDocument)?;
            // Compiled before anything is stored, so one that would not fit is refused whole.
            let snapshot = crate::tenant::compile_directory_snapshot(
                &directory,
                &directory_version(Some(&text)),
            )
            .map_err(AdminError::InvalidDocument)?;
            Ok(Plan::PutDirectory(DirectoryWrite {
                connectors: directory.connectors().len(),
                tools: directory.connectors().iter().map(|c| c.tools.len()).sum(),
                snapshot,
                text,
                now,
                rules,
            }))
        }
        Route::PutDocument { tenant, document } => Ok(Plan::PutDocument(DocumentWrite {
            text: utf8(body)?,
            tenant,
            document,
            now,
            rules,
        })),
    }
}

fn utf8(body: &[u8]) -> Result<String, AdminError> {
    std::str::from_utf8(body)
        .map(str::to_owned)
        .map_err(|_| AdminError::NotUtf8)
}

/// The answer to a roster command: its reply with 200, or the roster's refusal.
pub fn roster_answer(reply: Result<Value, RosterError>) -> Answer {
    match reply {
        Ok(body) => Answer { status: 200, body },
        Err(error) => AdminError::Roster(error).answer(),
    }
}

/// The audit row of a document the operator stored.
fn document_audit(now: i64, name: &str, text: &str) -> AuditEntry {
    let detail = format!("{} bytes", text.len());
    AuditEntry::new(now, &Actor::Operator, "document.put", name, Some(detail))
}

/// A grant to issue for a member, its label already defaulted and cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRequest {
    pub tenant: String,
    pub member: String,
    pub label: String,
    pub now: i64,
}

impl GrantRequest {
    /// Builds the grant from the shell's randomness and the deployment's key: the roster
    /// command that stores its hash, and the token to show once.
    pub fn issue(self, secret: &[u8; SECRET_BYTES], key: &GrantKey) -> GrantIssue {
        let issued = crate::grant::issue(&self.tenant, &self.member, secret, key);
        GrantIssue {
            command: Command::IssueGrant {
                member: self.member,
                id: issued.id,
                hash: issued.hash,
                label: self.label,
                now: self.now,
                by: Actor::Operator,
            },
            tenant: self.tenant,
            token: issued.token,
        }
    }
}

/// An issued grant waiting for its roster to store it. Holds the token: never log it.
pub struct GrantIssue {
    /// The roster object to send `command` to.
    pub tenant: String,
    pub command: Command,
    pub token: String,
}

impl GrantIssue {
    /// 201 with the roster's row and the token (shown once: only the hash is stored), or the
    /// roster's refusal.
    pub fn answer(self, reply: Result<Value, RosterError>) -> Answer {
        match reply {
            Ok(mut body) => {
                body["grant"] = json!(self.token);
                Answer { status: 201, body }
            }
            Err(error) => AdminError::Roster(error).answer(),
        }
    }
}

/// The answer to an issued sign-in code: the code, shown once, and when it expires.
pub fn sign_in_answer(member: &str, reply: OAuthReply) -> Answer {
    match reply {
        OAuthReply::SignInIssued { code, expires_at } => Answer {
            status: 201,
            body: json!({
                "member": member,
                "code": code,
                "expires_at": expires_at,
                "note": "shown once: the member pastes it on the sign-in page their MCP client opens; it works once, for 15 minutes",
            }),
        },
        OAuthReply::MemberNotActive { member } => Answer {
            status: 409,
            body: json!({
                "error": format!("member {member:?} is unknown or not active: add or reinstate them before issuing a sign-in code"),
            }),
        },
        OAuthReply::Refused { error } => Answer {
            status: 500,
            body: json!({ "error": format!("the sign-in code was not issued: {}", error.description) }),
        },
        _ => Answer {
            status: 500,
            body: json!({ "error": "the sign-in code was not issued: the roster answered something else" }),
        },
    }
}

/// A directory that parsed under the deployment's rules, ready to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryWrite {
    pub text: String,
    /// Its search index, compiled for [`DIRECTORY_SNAPSHOT_KEY`].
    pub snapshot: Vec<u8>,
    pub connectors: usize,
    pub tools: usize,
    pub now: i64,
    pub rules: OriginRules,
}

impl DirectoryWrite {
    /// The directory's version, to store under [`DIRECTORY_VERSION_KEY`] after the text.
    pub fn version(&self) -> String {
        directory_version(Some(&self.text))
    }

    /// The audit object (the deployment's) and its row.
    pub fn audit(&self) -> (&'static str, AuditEntry) {
        (
            DEPLOYMENT_AUDIT_OBJECT,
            document_audit(self.now, "directory", &self.text),
        )
    }

    /// The tenants of `stored` (tenant, catalog, policy) whose documents this directory makes
    /// invalid.
    pub fn invalidated<'a>(
        &self,
        stored: impl IntoIterator<Item = (&'a str, Option<&'a str>, Option<&'a str>)>,
    ) -> Vec<Invalidated> {
        crate::tenant::tenants_invalidated(&self.text, stored, self.rules)
    }

    /// The tenants it invalidates, and a snapshot compiled against it for each of the others.
    pub fn recheck<'a>(
        &self,
        stored: impl IntoIterator<Item = (&'a str, Option<&'a str>, Option<&'a str>)>,
    ) -> crate::tenant::Recheck {
        crate::tenant::recheck_tenants(&self.text, stored, self.rules)
    }

    /// 200 with what was stored, whether it was audited, and the tenants it invalidated of the
    /// `checked` ones (`more`: some were left unchecked).
    pub fn answer(
        &self,
        audited: bool,
        invalidated: &[Invalidated],
        checked: usize,
        more: bool,
    ) -> Answer {
        Answer {
            status: 200,
            body: json!({"stored": "directory", "connectors": self.connectors, "tools": self.tools, "audited": audited,
                         "tenants_checked": checked, "more_tenants_unchecked": more, "invalidated": invalidated}),
        }
    }
}

/// A tenant document (UTF-8, not yet checked) to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentWrite {
    pub tenant: String,
    pub document: Document,
    pub text: String,
    pub now: i64,
    pub rules: OriginRules,
}

impl DocumentWrite {
    /// The KV key of the tenant's other document, which this one must agree with.
    pub fn sibling_key(&self) -> String {
        let sibling = match self.document {
            Document::Catalog => Document::Policy,
            Document::Policy => Document::Catalog,
        };
        sibling.kv_key(&self.tenant)
    }

    /// Checks the document together with the stored `directory` and `sibling` (the other
    /// tenant document); only a checked document can be stored.
    pub fn check(
        self,
        directory: Option<&str>,
        sibling: Option<&str>,
    ) -> Result<CheckedDocument, AdminError> {
        let text = Some(self.text.as_str());
        let (catalog, policy) = match self.document {
            Document::Catalog => (text, sibling),
            Document::Policy => (sibling, text),
        };
        let version = tenant_version(catalog, policy);
        let written = self.document.name();
        match crate::tenant::check_and_parse(
            &self.tenant,
            directory,
            catalog,
            policy,
            self.rules,
            written,
        ) {
            Ok((summary, parsed)) => {
                let snapshot = crate::tenant::compile_snapshot(
                    &parsed,
                    policy,
                    &version,
                    &directory_version(directory),
                )
                // The snapshot holds both documents; the one being written is what made it
                // too large (its sibling was stored with a snapshot that fitted).
                .map_err(|mut too_large| {
                    too_large.document = written;
                    AdminError::InvalidDocument(too_large)
                })?;
                Ok(CheckedDocument {
                    write: self,
                    summary,
                    version,
                    snapshot,
                })
            }
            Err(errors) => Err(AdminError::InvalidDocument(errors)),
        }
    }
}

/// A tenant document that agrees with the stored documents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedDocument {
    pub write: DocumentWrite,
    pub summary: Summary,
    /// The tenant's documents' version once this one is stored, for
    /// [`tenant_version_key`].
    pub version: String,
    /// What serving needs, compiled for that version (stored under [`tenant_snapshot_key`]).
    pub snapshot: Vec<u8>,
}

/// The connection ids of a catalog's text (`connections[].id`); `None` when it has no such
/// list of strings (a stored catalog always has one: it was checked).
pub fn catalog_connection_ids(text: &str) -> Option<Vec<String>> {
    let value: Value = serde_json::from_str(text).ok()?;
    match value.get("connections") {
        None => Some(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|c| c.get("id").and_then(Value::as_str).map(str::to_owned))
            .collect(),
        Some(_) => None,
    }
}

impl CheckedDocument {
    /// For a catalog, the roster command to send before it is stored: forget the accounts of
    /// every connection it does not have and of every one `stored` (the catalog it replaces)
    /// did not have, so an id removed and added again never finds an old credential. Without
    /// a readable stored catalog every id counts as added. `None` for a policy.
    pub fn forget_accounts(&self, stored: Option<&str>) -> Option<Command> {
        if self.write.document != Document::Catalog {
            return None;
        }
        let keep = catalog_connection_ids(&self.write.text).unwrap_or_default();
        let before = stored.and_then(catalog_connection_ids).unwrap_or_default();
        let added = keep
            .iter()
            .filter(|id| !before.contains(id))
            .cloned()
            .collect();
        Some(Command::ForgetConnections {
            keep,
            added,
            now: self.write.now,
            by: Actor::Operator,
        })
    }

    /// The KV key to store it under.
    pub fn key(&self) -> String {
        self.write.document.kv_key(&self.write.tenant)
    }

    pub fn text(&self) -> &str {
        &self.write.text
    }

    /// The audit object (the tenant's) and its row.
    pub fn audit(&self) -> (&str, AuditEntry) {
        let w = &self.write;
        (&w.tenant, document_audit(w.now, w.document.name(), &w.text))
    }

    /// 200 with what was stored, its summary, and whether it was audited.
    pub fn answer(&self, audited: bool) -> Answer {
        Answer {
            status: 200,
            body: json!({
                "stored": self.write.document.name(),
                "summary": self.summary,
                "audited": audited,
                "snapshot": {"bytes": self.snapshot.len(), "tools": self.summary.tools},
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_or_missing_admin_secret_disables_the_api() {
        assert_eq!(usable_admin_secret(None), Err(AdminDisabled::Missing));
        assert_eq!(usable_admin_secret(Some("")), Err(AdminDisabled::Missing));
        let short = "x".repeat(MIN_ADMIN_SECRET_BYTES - 1);
        assert_eq!(
            usable_admin_secret(Some(&short)),
            Err(AdminDisabled::TooShort { bytes: 31 })
        );
        assert_eq!(
            AdminDisabled::TooShort { bytes: 31 }.to_string(),
            "the admin API is disabled: ADMIN_SECRET is 31 bytes long and must be at least 32 (for example 24 random bytes as 48 hex digits)"
        );
        let ok = "x".repeat(MIN_ADMIN_SECRET_BYTES);
        assert_eq!(usable_admin_secret(Some(&ok)), Ok(ok.as_str()));
    }

    #[test]
    fn routes() {
        assert_eq!(
            route("POST", "/admin/v1/tenants/acme/members/ada/suspend"),
            Ok(Route::SetStatus {
                tenant: "acme".into(),
                member: "ada".into(),
                status: MemberStatus::Suspended
            })
        );
        assert_eq!(
            route("PUT", "/admin/v1/tenants/acme/policy"),
            Ok(Route::PutDocument {
                tenant: "acme".into(),
                document: Document::Policy
            })
        );
        assert_eq!(
            route("GET", "/admin/v1/tenants/acme/members/ada"),
            Err(RouteError::MethodNotAllowed("PUT"))
        );
        assert_eq!(route("GET", "/admin/v1/nothing"), Err(RouteError::NotFound));
        assert_eq!(
            route("GET", "/admin/v1/tenants/acme/audit"),
            Ok(Route::ListAudit {
                tenant: Some("acme".into())
            })
        );
        assert_eq!(
            route("GET", "/admin/v1/audit"),
            Ok(Route::ListAudit { tenant: None })
        );
        // The deployment's audit object is not reachable as a tenant.
        assert!(matches!(
            route("GET", "/admin/v1/tenants/_deployment/audit"),
            Err(RouteError::BadId("tenant", _))
        ));
        assert!(matches!(
            route("GET", "/admin/v1/tenants/Acme/members"),
            Err(RouteError::BadId("tenant", _))
        ));
        assert_eq!(Document::Catalog.kv_key("acme"), "tenant/acme/catalog");
        assert_eq!(
            Document::Catalog.tenant_of_key("tenant/acme/catalog"),
            Some("acme")
        );
        assert_eq!(Document::Catalog.tenant_of_key("tenant/acme/policy"), None);
        assert_eq!(Document::Policy.tenant_of_key("tenant/a/b/policy"), None);
        assert_eq!(Document::Catalog.tenant_of_key("tenant//catalog"), None);
    }

    #[test]
    fn reseal_is_an_operator_post_to_the_tenants_roster() {
        let reseal = route("POST", "/admin/v1/tenants/acme/accounts/reseal").unwrap();
        assert_eq!(
            route("GET", "/admin/v1/tenants/acme/accounts/reseal"),
            Err(RouteError::MethodNotAllowed("POST"))
        );
        let plan = decide(reseal, b"", 5, OriginRules::STORED).unwrap();
        let Plan::Roster { object, command } = plan else {
            panic!("{plan:?}")
        };
        assert_eq!(object, "acme");
        assert_eq!(
            command,
            Command::ResealAccounts {
                tenant: "acme".into(),
                now: 5,
                by: Actor::Operator
            }
        );
    }

    #[test]
    fn deleting_a_shared_account_is_the_operators_delete_of_the_row_without_a_member() {
        let delete = route("DELETE", "/admin/v1/tenants/acme/connections/team/account").unwrap();
        let plan = decide(delete, b"", 9, OriginRules::STORED).unwrap();
        let Plan::DeleteSharedAccount {
            tenant,
            connection,
            command,
        } = plan
        else {
            panic!("{plan:?}")
        };
        assert_eq!((tenant.as_str(), connection.as_str()), ("acme", "team"));
        assert_eq!(
            command,
            Command::DeleteAccount {
                connection: "team".into(),
                member: None,
                now: 9,
                by: Actor::Operator
            }
        );
        assert_eq!(
            route("POST", "/admin/v1/tenants/acme/connections/team/account"),
            Err(RouteError::MethodNotAllowed("PUT or DELETE"))
        );
    }

    #[test]
    fn a_catalog_write_forgets_the_accounts_of_removed_and_added_connections() {
        let catalog = |ids: &[&str]| {
            let connections: Vec<Value> = ids.iter().map(|id| json!({"id": id})).collect();
            json!({"schema": 1, "connections": connections}).to_string()
        };
        assert_eq!(
            catalog_connection_ids(&catalog(&["a", "b"])),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(catalog_connection_ids("{}"), Some(Vec::new()));
        assert_eq!(catalog_connection_ids("not json"), None);
        assert_eq!(
            catalog_connection_ids(r#"{"connections": [{"id": 1}]}"#),
            None
        );
        let checked = |document: Document, text: String| CheckedDocument {
            write: DocumentWrite {
                tenant: "acme".into(),
                document,
                text,
                now: 9,
                rules: OriginRules::STORED,
            },
            summary: Summary {
                tenant: "acme".into(),
                connectors: 0,
                connections: 0,
                tools: 0,
                roles: 0,
                memory_estimate_bytes: 0,
                memory_limit_bytes: 0,
            },
            version: String::new(),
            snapshot: Vec::new(),
        };
        // b was removed, c renamed to d: keep a and d, and d is new.
        let write = checked(Document::Catalog, catalog(&["a", "d"]));
        assert_eq!(
            write.forget_accounts(Some(&catalog(&["a", "b", "c"]))),
            Some(Command::ForgetConnections {
                keep: vec!["a".into(), "d".into()],
                added: vec!["d".into()],
                now: 9,
                by: Actor::Operator
            })
        );
        // No readable stored catalog: every id is new.
        for stored in [None, Some("garbage")] {
            let Some(Command::ForgetConnections { added, .. }) = write.forget_accounts(stored)
            else {
                panic!("a catalog write forgets")
            };
            assert_eq!(added, ["a", "d"]);
        }
        assert_eq!(
            checked(Document::Policy, "{}".into()).forget_accounts(None),
            None
        );
        let refusal = AdminError::AccountsNotForgotten("roster unreachable".into());
        assert_eq!(refusal.status(), 503);
        assert!(refusal.to_string().contains("was not stored"));
    }

    #[test]
    fn bodies_name_their_problem() {
        let err = parse_body::<PutMemberBody>(br#"{"rol":"admin"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `rol`"), "{err}");
        assert_eq!(
            parse_body::<PutMemberBody>(br#"{"role":"admin"}"#)
                .unwrap()
                .role,
            "admin"
        );
    }
}
