//! Connector definitions: who a connector talks to and which tools it offers.
//!
//! The same shape serves the deployment's directory and a tenant's private connectors, so one
//! parser checks both. Everything the outbound path later relies on (the exact origin, a base
//! path with no dot segments, path placeholders that name required arguments) is established
//! here, once, when the document is read.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::lazy_json::LazyJson;

use super::doc::{expect_array, expect_str, kind_of, quote, read_id, Fields, JsonPath, Problems};
use super::oauth_client::{parse_oauth_client, OAuthClient};
use super::origin::{
    is_valid_base_path, parse_path_template, Method, Origin, OriginRules, PathPart,
};

/// How a connection's credential is sent upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthScheme {
    /// `Authorization: Bearer <secret>`.
    Bearer,
    /// `Authorization: Basic base64(<secret>)`, the secret being `user:password`.
    Basic,
    /// `<name>: <secret>` for APIs with their own key header.
    Header(String),
    /// No credential: a public API.
    None,
}

impl AuthScheme {
    /// Whether calls send a credential: an account (a member's, the shared one set by a tenant
    /// admin) or an operator-named Worker secret.
    pub fn takes_credential(&self) -> bool {
        *self != AuthScheme::None
    }
}

/// Where arguments that no list names are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgPlace {
    Query,
    Body,
}

/// A tool's [`Operation`]: as parsed from a document, or as a compiled snapshot stored it (its
/// bytes checked when the snapshot was read, decoded when a call needs it: a cold copy reads
/// thousands of tools and calls a few). Clones share it.
#[derive(Debug, Clone)]
pub struct ToolOperation(pub(crate) OperationForm);

#[derive(Debug, Clone)]
pub(crate) enum OperationForm {
    Decoded(Arc<Operation>),
    Compiled(Arc<[u8]>),
}

impl ToolOperation {
    pub fn new(operation: Operation) -> ToolOperation {
        ToolOperation(OperationForm::Decoded(Arc::new(operation)))
    }

    /// Whether it is held decoded (parsed from a document) rather than as a snapshot's bytes.
    pub fn is_decoded(&self) -> bool {
        matches!(self.0, OperationForm::Decoded(_))
    }
}

/// The HTTP request a tool makes, relative to its connector's origin and base path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub method: Method,
    /// The template as written, e.g. `/repos/{owner}/{repo}/issues`.
    pub path: String,
    pub path_parts: Vec<PathPart>,
    pub query: Vec<String>,
    pub body: Vec<String>,
    pub headers: Vec<String>,
    /// Where the remaining declared arguments go.
    pub rest: ArgPlace,
    /// Path placeholders whose value may span several segments (`a/b/c`, like a file path).
    /// Every other placeholder fills exactly one segment: a `/` or `\` in its value, raw or
    /// percent-encoded, is refused.
    pub multi_segment: Vec<String>,
}

impl Operation {
    /// Names of the path placeholders, in template order.
    pub fn path_params(&self) -> impl Iterator<Item = &str> {
        self.path_parts.iter().filter_map(|part| match part {
            PathPart::Param(name) => Some(name.as_str()),
            PathPart::Literal(_) => None,
        })
    }
}

/// A tool as declared by a connector.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// Name and description are shared by every view, listing and index built from the tool.
    pub name: Arc<str>,
    pub description: Arc<str>,
    /// A JSON Schema object with `"type": "object"`, shared (not copied) by the member views,
    /// listings and search indexes built from it.
    pub input_schema: LazyJson,
    /// MCP annotations (`readOnlyHint`, `title`, …), passed through as written: an object.
    pub annotations: LazyJson,
    /// Its annotations say it destroys data (`destructiveHint: true`), known without reading
    /// them (the ranker's floor for such tools is stricter).
    pub destructive: bool,
    /// Its annotations' `readOnlyHint`, when they have one (known without reading them).
    pub read_only: Option<bool>,
    /// `None` for directory tools that are listed but cannot run.
    pub operation: Option<ToolOperation>,
}

/// Where a connector was defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectorSource {
    Directory,
    Private,
}

/// A product the gateway can talk to, with its tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Connector {
    pub id: String,
    /// Shared by the search index and every member view built from the connector.
    pub label: Arc<str>,
    pub origin: Origin,
    /// `""` or a path like `/v1` with no trailing slash; every outbound path starts with it.
    pub base_path: String,
    pub auth: AuthScheme,
    /// The OAuth client members connect their own account through (`auth.oauth`, bearer
    /// only); `None`: a personal account is an API key pasted on the worker's page.
    pub oauth: Option<Arc<OAuthClient>>,
    pub tools: Vec<ToolDef>,
    pub source: ConnectorSource,
}

impl Connector {
    pub fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.tools.iter().find(|t| &*t.name == name)
    }
}

/// Whether MCP annotations say a tool destroys data.
pub fn destroys(annotations: &Map<String, Value>) -> bool {
    annotations.get("destructiveHint").and_then(Value::as_bool) == Some(true)
}

/// Advertised tool names: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

const ANNOTATION_HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// The names the gateway uses for its own tools; no connector may define them.
pub use crate::names::is_reserved_tool_name;

/// Reads one connector definition. `require_operations` is set for private connectors.
pub(crate) fn parse_connector(
    value: &Value,
    path: &JsonPath,
    source: ConnectorSource,
    rules: OriginRules,
    problems: &mut Problems,
) -> Option<Connector> {
    const FIELDS: &[&str] = &["id", "label", "origin", "base_path", "auth", "tools"];
    let fields = Fields::of(value, path, FIELDS, problems)?;
    let id = read_id(&fields, "id", problems);
    let label = fields.required_str("label", problems).and_then(|label| {
        if label.trim().is_empty() {
            problems.push(&fields.path("label"), "must not be empty");
            None
        } else {
            Some(label)
        }
    });
    let origin = fields
        .required_str("origin", problems)
        .and_then(|text| match Origin::parse_with(text, rules) {
            Ok(origin) => Some(origin),
            Err(message) => {
                problems.push(&fields.path("origin"), message);
                None
            }
        });
    let base_path = match fields.optional_str("base_path", problems) {
        None => Some(String::new()),
        Some(p) if is_valid_base_path(p) => Some(p.to_owned()),
        Some(p) => {
            problems.push(
                &fields.path("base_path"),
                format!(
                    "invalid base path {}: use \"\" or \"/segment/...\" with no trailing \"/\", no \".\" or \"..\" segments, no query or %",
                    quote(p)
                ),
            );
            None
        }
    };
    let auth = fields
        .required("auth", problems)
        .and_then(|v| parse_auth(v, &fields.path("auth"), rules, problems));
    let tools = fields
        .required("tools", problems)
        .and_then(|v| expect_array(v, &fields.path("tools"), problems))
        .map(|items| parse_tools(items, &fields.path("tools"), source, problems))
        .unwrap_or_default();
    Some(Connector {
        id: id?.to_owned(),
        label: label?.into(),
        origin: origin?,
        base_path: base_path?,
        oauth: auth.as_ref().and_then(|(_, oauth)| oauth.clone()),
        auth: auth?.0,
        tools,
        source,
    })
}

fn parse_auth(
    value: &Value,
    path: &JsonPath,
    rules: OriginRules,
    problems: &mut Problems,
) -> Option<(AuthScheme, Option<Arc<OAuthClient>>)> {
    let fields = Fields::of(value, path, &["scheme", "header", "oauth"], problems)?;
    let scheme = parse_scheme(&fields, problems)?;
    let Some(oauth) = fields.optional("oauth") else {
        return Some((scheme, None));
    };
    if scheme != AuthScheme::Bearer {
        problems.push(
            &fields.path("oauth"),
            "only allowed when scheme is \"bearer\" (OAuth access tokens are sent as bearer tokens)",
        );
        return None;
    }
    let client = parse_oauth_client(oauth, &fields.path("oauth"), rules, problems)?;
    Some((scheme, Some(Arc::new(client))))
}

fn parse_scheme(fields: &Fields<'_>, problems: &mut Problems) -> Option<AuthScheme> {
    let scheme = fields.required_str("scheme", problems)?;
    let header = fields.optional_str("header", problems);
    let scheme = match scheme {
        "bearer" => AuthScheme::Bearer,
        "basic" => AuthScheme::Basic,
        "none" => AuthScheme::None,
        "header" => {
            let Some(name) = header else {
                problems.push(
                    &fields.path("header"),
                    "required when scheme is \"header\" (the header that carries the key, e.g. \"X-Api-Key\")",
                );
                return None;
            };
            if !is_header_name(name) || is_forbidden_header(name) {
                problems.push(
                    &fields.path("header"),
                    format!("invalid credential header {}: use an HTTP header name other than Host, Content-Length, Content-Type, Cookie, Connection or Transfer-Encoding", quote(name)),
                );
                return None;
            }
            return Some(AuthScheme::Header(name.to_owned()));
        }
        other => {
            problems.push(
                &fields.path("scheme"),
                format!(
                    "unknown scheme {} (expected \"bearer\", \"basic\", \"header\" or \"none\")",
                    quote(other)
                ),
            );
            return None;
        }
    };
    if header.is_some() {
        problems.push(
            &fields.path("header"),
            "only allowed when scheme is \"header\"",
        );
        return None;
    }
    Some(scheme)
}

pub(crate) fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

pub(crate) fn is_forbidden_header(name: &str) -> bool {
    [
        "host",
        "content-length",
        "content-type",
        "cookie",
        "connection",
        "transfer-encoding",
        "authorization",
    ]
    .iter()
    .any(|f| name.eq_ignore_ascii_case(f))
}

fn parse_tools(
    items: &[Value],
    path: &JsonPath,
    source: ConnectorSource,
    problems: &mut Problems,
) -> Vec<ToolDef> {
    let mut first_seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut tools = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = path.index(i);
        let Some(tool) = parse_tool(item, &at, source, problems) else {
            continue;
        };
        if let Some(first) = first_seen.get(&*tool.name) {
            problems.push(
                &at.field("name"),
                format!(
                    "duplicate tool name {} (first defined at {})",
                    quote(&tool.name),
                    path.index(*first)
                ),
            );
            continue;
        }
        first_seen.insert(tool.name.to_string(), i);
        tools.push(tool);
    }
    tools
}

fn parse_tool(
    value: &Value,
    path: &JsonPath,
    source: ConnectorSource,
    problems: &mut Problems,
) -> Option<ToolDef> {
    const FIELDS: &[&str] = &[
        "name",
        "description",
        "inputSchema",
        "annotations",
        "operation",
    ];
    let fields = Fields::of(value, path, FIELDS, problems)?;
    let name = fields.required_str("name", problems).and_then(|name| {
        if !is_valid_tool_name(name) {
            problems.push(
                &fields.path("name"),
                format!(
                    "invalid tool name {}: use 1-64 characters of A-Z, a-z, 0-9, \"_\" and \"-\"",
                    quote(name)
                ),
            );
            None
        } else if is_reserved_tool_name(name) {
            problems.push(
                &fields.path("name"),
                format!("tool name {} is reserved by the gateway", quote(name)),
            );
            None
        } else {
            Some(name)
        }
    });
    let description = fields.required_str("description", problems).and_then(|d| {
        if d.trim().is_empty() {
            problems.push(&fields.path("description"), "must not be empty");
            None
        } else {
            Some(d)
        }
    });
    let schema_path = fields.path("inputSchema");
    let input_schema = fields
        .required("inputSchema", problems)
        .and_then(|v| check_input_schema(v, &schema_path, problems).then_some(v));
    let annotations = match fields.optional("annotations") {
        None => Some(Map::new()),
        Some(v) => parse_annotations(v, &fields.path("annotations"), problems),
    };
    let operation = match fields.optional("operation") {
        None => {
            if source == ConnectorSource::Private {
                problems.push(
                    &fields.path("operation"),
                    "required for a private connector's tool (only directory tools may omit it)",
                );
                return None;
            }
            None
        }
        Some(v) => Some(ToolOperation::new(parse_operation(
            v,
            &fields.path("operation"),
            input_schema,
            problems,
        )?)),
    };
    Some(ToolDef {
        name: name?.into(),
        description: description?.into(),
        input_schema: LazyJson::compact(input_schema?),
        destructive: destroys(annotations.as_ref()?),
        read_only: annotations
            .as_ref()?
            .get("readOnlyHint")
            .and_then(Value::as_bool),
        annotations: LazyJson::compact(&Value::Object(annotations?)),
        operation,
    })
}

/// The top level of a tool's `inputSchema`: what the resolver and the argument checks rely on.
fn check_input_schema(value: &Value, path: &JsonPath, problems: &mut Problems) -> bool {
    let Value::Object(schema) = value else {
        problems.push(path, format!("expected an object, got {}", kind_of(value)));
        return false;
    };
    let before = problems.len();
    if schema.get("type") != Some(&Value::String("object".into())) {
        problems.push(&path.field("type"), "must be \"object\"");
    }
    let properties = match schema.get("properties") {
        None => None,
        Some(Value::Object(props)) => {
            for (key, prop) in props {
                if !matches!(prop, Value::Object(_) | Value::Bool(_)) {
                    problems.push(
                        &path.field("properties").field(key),
                        format!("expected a schema object, got {}", kind_of(prop)),
                    );
                }
            }
            if props.contains_key(crate::names::CONNECTION_ARGUMENT) {
                problems.push(
                    &path.field("properties").field(crate::names::CONNECTION_ARGUMENT),
                    "the argument name \"connection\" is reserved by the gateway (it picks the account of a merged tool)",
                );
            }
            Some(props)
        }
        Some(other) => {
            problems.push(
                &path.field("properties"),
                format!("expected an object, got {}", kind_of(other)),
            );
            None
        }
    };
    if let Some(required) = schema.get("required") {
        let required_path = path.field("required");
        if let Some(items) = expect_array(required, &required_path, problems) {
            for (i, item) in items.iter().enumerate() {
                let at = required_path.index(i);
                if let Some(name) = expect_str(item, &at, problems) {
                    if !properties.is_some_and(|p| p.contains_key(name)) {
                        problems.push(
                            &at,
                            format!("{} is not in inputSchema.properties", quote(name)),
                        );
                    }
                }
            }
        }
    }
    problems.len() == before
}

fn parse_annotations(
    value: &Value,
    path: &JsonPath,
    problems: &mut Problems,
) -> Option<Map<String, Value>> {
    let Value::Object(map) = value else {
        problems.push(path, format!("expected an object, got {}", kind_of(value)));
        return None;
    };
    let mut ok = true;
    for hint in ANNOTATION_HINTS {
        if let Some(v) = map.get(hint) {
            if !v.is_boolean() {
                problems.push(
                    &path.field(hint),
                    format!("expected a boolean, got {}", kind_of(v)),
                );
                ok = false;
            }
        }
    }
    if let Some(v) = map.get("title") {
        if !v.is_string() {
            problems.push(
                &path.field("title"),
                format!("expected a string, got {}", kind_of(v)),
            );
            ok = false;
        }
    }
    ok.then(|| map.clone())
}

fn parse_operation(
    value: &Value,
    path: &JsonPath,
    input_schema: Option<&Value>,
    problems: &mut Problems,
) -> Option<Operation> {
    const FIELDS: &[&str] = &[
        "method",
        "path",
        "query",
        "body",
        "headers",
        "rest",
        "multi_segment",
    ];
    let fields = Fields::of(value, path, FIELDS, problems)?;
    let method = fields
        .required_str("method", problems)
        .and_then(|m| match Method::parse(m) {
            Some(method) => Some(method),
            None => {
                problems.push(
                    &fields.path("method"),
                    format!(
                        "unknown method {} (expected GET, POST, PUT, PATCH or DELETE)",
                        quote(m)
                    ),
                );
                None
            }
        });
    let template = fields.required_str("path", problems);
    let path_parts = template.and_then(|t| match parse_path_template(t) {
        Ok(parts) => Some(parts),
        Err(message) => {
            problems.push(&fields.path("path"), message);
            None
        }
    });
    let rest = match fields.optional_str("rest", problems) {
        None => method.map(|m| {
            if m.has_body() {
                ArgPlace::Body
            } else {
                ArgPlace::Query
            }
        }),
        Some("query") => Some(ArgPlace::Query),
        Some("body") => Some(ArgPlace::Body),
        Some(other) => {
            problems.push(
                &fields.path("rest"),
                format!(
                    "unknown place {} (expected \"query\" or \"body\")",
                    quote(other)
                ),
            );
            None
        }
    };
    let (method, path_parts, rest, template) = (method?, path_parts?, rest?, template?);
    if rest == ArgPlace::Body && !method.has_body() {
        problems.push(
            &fields.path("rest"),
            format!("a {} request has no body", method.as_str()),
        );
    }
    // Without a usable schema the argument lists cannot be checked; its problems are reported.
    let schema = input_schema?;
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let declared = |name: &str| properties.is_some_and(|p| p.contains_key(name));

    let mut placed: BTreeMap<String, &'static str> = BTreeMap::new();
    let mut seen_params = Vec::new();
    for name in path_parts.iter().filter_map(|p| match p {
        PathPart::Param(n) => Some(n.as_str()),
        PathPart::Literal(_) => None,
    }) {
        if seen_params.contains(&name) {
            problems.push(
                &fields.path("path"),
                format!("placeholder {{{name}}} appears twice"),
            );
        } else if !declared(name) || !required.contains(&name) {
            problems.push(
                &fields.path("path"),
                format!("placeholder {{{name}}} must be a required argument in inputSchema"),
            );
        }
        seen_params.push(name);
        placed.insert(name.to_owned(), "path");
    }
    let mut lists = [Vec::new(), Vec::new(), Vec::new()];
    for (slot, (key, place)) in [("query", "query"), ("body", "body"), ("headers", "headers")]
        .into_iter()
        .enumerate()
    {
        let Some(names) = fields.optional_strings(key, problems) else {
            continue;
        };
        if key == "body" && !method.has_body() && !names.is_empty() {
            problems.push(
                &fields.path("body"),
                format!("a {} request has no body", method.as_str()),
            );
        }
        for (at, name) in names {
            if !declared(name) {
                problems.push(
                    &at,
                    format!(
                        "{} is not an argument of this tool (not in inputSchema.properties)",
                        quote(name)
                    ),
                );
            } else if let Some(other) = placed.get(name) {
                problems.push(
                    &at,
                    format!("argument {} is already sent in the {other}", quote(name)),
                );
            } else if key == "headers" && (!is_header_name(name) || is_forbidden_header(name)) {
                problems.push(
                    &at,
                    format!(
                        "argument {} cannot be sent as a header (not a permitted header name)",
                        quote(name)
                    ),
                );
            } else {
                placed.insert(name.to_owned(), place);
                lists[slot].push(name.to_owned());
            }
        }
    }
    let mut multi_segment = Vec::new();
    for (at, name) in fields
        .optional_strings("multi_segment", problems)
        .unwrap_or_default()
    {
        if !seen_params.contains(&name) {
            problems.push(
                &at,
                format!(
                    "{} is not a placeholder of this operation's path",
                    quote(name)
                ),
            );
        } else if !multi_segment.iter().any(|m| m == name) {
            multi_segment.push(name.to_owned());
        }
    }
    let [query, body, headers] = lists;
    Some(Operation {
        method,
        path: template.to_owned(),
        path_parts,
        query,
        body,
        headers,
        rest,
        multi_segment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_by_effective_port() {
        let a = Origin::parse("https://api.example.com").unwrap();
        let b = Origin::parse("https://api.example.com:443").unwrap();
        assert_eq!(a, b);
        assert_eq!(b.to_string(), "https://api.example.com");
        assert!(Origin::parse("https://API.example.com").is_err());
        assert!(Origin::parse("https://user@api.example.com").is_err());
        assert!(Origin::parse("http://api.example.com").is_err());
        assert!(Origin::parse("http://127.0.0.1:8080").is_ok());
        assert!(Origin::parse("https://api.example.com/").is_err());
    }

    #[test]
    fn templates_reject_escapes() {
        assert!(parse_path_template("/a/{b}/c").is_ok());
        assert!(parse_path_template("/a/../c").is_err());
        assert!(parse_path_template("/a?x=1").is_err());
        assert!(parse_path_template("/a/%2e").is_err());
        assert!(parse_path_template("/a//b").is_err());
        assert!(parse_path_template("/").is_ok());
    }
}
