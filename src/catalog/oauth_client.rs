//! The OAuth 2.0 client a connector declares for members who connect their own account at the
//! SaaS provider (issue 19): where the provider's endpoints are, which scopes to ask for, how the
//! gateway authenticates at the token endpoint, and which tenant-scoped secret holds the
//! gateway's client id and secret.
//!
//! Parsed once with the connector (`auth.oauth`), every problem with its JSON path, so the
//! connect flow and the refresh only ever see checked endpoints. The secret is named without
//! its tenant prefix: the directory is shared by every tenant, and each tenant's own
//! registration lives in `T_<TENANT>__<client>` (`catalog::credential_prefix`), so one tenant's
//! flow can never read another's client secret.

use serde_json::Value;

use super::doc::{expect_strings, quote, Fields, JsonPath, Problems};
use super::origin::{is_valid_base_path, Origin, OriginRules};

/// How the gateway authenticates itself at the provider's token and revocation endpoints
/// (RFC 6749 §2.3.1; the names are RFC 8414's `token_endpoint_auth_method` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// `Authorization: Basic base64(urlencode(id):urlencode(secret))`.
    #[default]
    SecretBasic,
    /// `client_id` and `client_secret` in the form body.
    SecretPost,
}

impl ClientAuth {
    pub const BASIC: &'static str = "client_secret_basic";
    pub const POST: &'static str = "client_secret_post";

    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::SecretBasic => Self::BASIC,
            ClientAuth::SecretPost => Self::POST,
        }
    }
}

/// An absolute endpoint: a checked origin and a path under it (no query, no fragment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub origin: Origin,
    pub path: String,
}

impl Endpoint {
    pub fn url(&self) -> String {
        format!("{}{}", self.origin, self.path)
    }

    /// Reads `https://host[:port]/path` under the deployment's origin rules.
    pub fn parse(text: &str, rules: OriginRules) -> Result<Endpoint, String> {
        let after_scheme = text.find("://").map(|i| i + 3).unwrap_or(0);
        let split = text[after_scheme..]
            .find('/')
            .map(|i| i + after_scheme)
            .ok_or_else(|| {
                format!(
                    "invalid endpoint {}: use an absolute URL with a path, like \"https://auth.example.com/oauth/token\"",
                    quote(text)
                )
            })?;
        let (origin, path) = text.split_at(split);
        let origin = Origin::parse_with(origin, rules)
            .map_err(|problem| problem.replace("origin", "endpoint origin"))?;
        if path.len() < 2 || !is_valid_base_path(path) {
            return Err(format!(
                "invalid endpoint path {}: use \"/segment/...\" with no query, fragment, %, trailing \"/\" or dot segments",
                quote(path)
            ));
        }
        Ok(Endpoint {
            origin,
            path: path.to_owned(),
        })
    }
}

/// A connector's OAuth client (`auth.oauth`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    pub authorization_endpoint: Endpoint,
    pub token_endpoint: Endpoint,
    /// RFC 7009; without it, disconnecting only forgets the tokens.
    pub revocation_endpoint: Option<Endpoint>,
    pub scopes: Vec<String>,
    /// The secret's name after the tenant's prefix: the secret read is `T_<TENANT>__<client>`,
    /// holding `<client_id>:<client_secret>`.
    pub client: String,
    pub client_auth: ClientAuth,
}

/// The longest secret name suffix (the whole name stays under the catalog's 128).
const MAX_CLIENT_NAME: usize = 64;
const MAX_SCOPES: usize = 32;

fn is_scope(text: &str) -> bool {
    // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
    !text.is_empty()
        && text.len() <= 128
        && text
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
}

fn is_client_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_CLIENT_NAME
        && text
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && !text.starts_with('_')
}

/// Reads `auth.oauth`; `None` (with problems pushed) when anything is wrong.
pub(crate) fn parse_oauth_client(
    value: &Value,
    path: &JsonPath,
    rules: OriginRules,
    problems: &mut Problems,
) -> Option<OAuthClient> {
    const FIELDS: &[&str] = &[
        "authorization_endpoint",
        "token_endpoint",
        "revocation_endpoint",
        "scopes",
        "client",
        "client_auth",
    ];
    let fields = Fields::of(value, path, FIELDS, problems)?;
    let before = problems.len();
    let mut endpoint = |key: &str, required: bool| -> Option<Endpoint> {
        let text = if required {
            fields.required_str(key, problems)?
        } else {
            fields.optional_str(key, problems)?
        };
        match Endpoint::parse(text, rules) {
            Ok(endpoint) => Some(endpoint),
            Err(problem) => {
                problems.push(&fields.path(key), problem);
                None
            }
        }
    };
    let authorization_endpoint = endpoint("authorization_endpoint", true);
    let token_endpoint = endpoint("token_endpoint", true);
    let revocation_endpoint = endpoint("revocation_endpoint", false);
    let mut scopes = Vec::new();
    if let Some(value) = fields.optional("scopes") {
        let items = expect_strings(value, &fields.path("scopes"), problems);
        if items.len() > MAX_SCOPES {
            problems.push(
                &fields.path("scopes"),
                format!("at most {MAX_SCOPES} scopes"),
            );
        }
        for (item_path, scope) in items {
            if !is_scope(scope) {
                problems.push(
                    &item_path,
                    format!(
                        "invalid scope {}: a scope is 1–128 printable ASCII characters without spaces, '\"' or '\\'",
                        quote(scope)
                    ),
                );
            } else if scopes.iter().any(|s| s == scope) {
                problems.push(
                    &item_path,
                    format!("scope {} is listed twice", quote(scope)),
                );
            } else {
                scopes.push(scope.to_owned());
            }
        }
    }
    let client = fields.required_str("client", problems).and_then(|name| {
        if is_client_name(name) {
            Some(name.to_owned())
        } else {
            problems.push(
                &fields.path("client"),
                format!(
                    "invalid client secret name {}: use 1–{MAX_CLIENT_NAME} of A-Z, 0-9 and _ (not first); each tenant stores its client as T_<TENANT>__{}",
                    quote(name),
                    if name.is_empty() { "<NAME>" } else { name }
                ),
            );
            None
        }
    });
    let client_auth = match fields.optional_str("client_auth", problems) {
        None => Some(ClientAuth::default()),
        Some(ClientAuth::BASIC) => Some(ClientAuth::SecretBasic),
        Some(ClientAuth::POST) => Some(ClientAuth::SecretPost),
        Some(other) => {
            problems.push(
                &fields.path("client_auth"),
                format!(
                    "unknown client authentication {} (expected \"{}\" or \"{}\")",
                    quote(other),
                    ClientAuth::BASIC,
                    ClientAuth::POST
                ),
            );
            None
        }
    };
    if problems.len() != before {
        return None;
    }
    Some(OAuthClient {
        authorization_endpoint: authorization_endpoint?,
        token_endpoint: token_endpoint?,
        revocation_endpoint,
        scopes,
        client: client?,
        client_auth: client_auth?,
    })
}
