//! Building the request that leaves the gateway from a resolved call.
//!
//! This is the last place a call can be refused before a third party sees it. The arguments
//! were checked against the tool's advertised schema by the resolver ([`crate::schema`]); every value
//! substituted into the URL is percent-encoded so it cannot change the URL's shape, and the
//! finished URL is checked again on its own — scheme, exact origin, allowed path prefix, no
//! userinfo, no fragment — so a bug in building cannot become a request to the wrong place.

use std::fmt;

use serde_json::{Map, Value};

use crate::catalog::{
    is_loopback_host, parse_port, path_has_prefix, quote, split_host_port, ArgPlace, AuthScheme,
    JsonPath, Method, Origin, PathPart, Scheme,
};
use crate::oauth::encoding::b64_encode_standard;
use crate::resolver::ResolvedCall;

/// Longest value (before encoding) placed in a URL path segment or query parameter.
pub const MAX_URL_VALUE_BYTES: usize = 2048;
/// Longest finished URL the gateway will send; longer ones are refused, not truncated.
pub const MAX_URL_BYTES: usize = 8192;
/// Longest value sent as a header argument.
pub const MAX_HEADER_VALUE_BYTES: usize = 4096;

fn too_long(name: &str, len: usize, limit: usize, place: &str) -> OutboundError {
    bad_value(
        name,
        format!("is {len} bytes long; values {place} may be at most {limit} bytes"),
    )
}

/// Deployment settings for outbound requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutboundConfig {
    /// Allow plain `http` to loopback origins (local tests against a stand-in API only).
    pub allow_loopback_http: bool,
}

/// A request ready to send, minus its credential. The shell reads the secret named by
/// `credential_ref`, adds [`OutboundRequest::credential_header`], and sends it with a timeout and
/// no cross-origin redirects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundRequest {
    pub method: Method,
    pub url: String,
    /// Headers to send, never including the credential.
    pub headers: Vec<(String, String)>,
    /// A JSON body for POST, PUT and PATCH.
    pub body: Option<String>,
    /// The Worker secret holding the connection's credential (`None` for `auth: none`).
    pub credential_ref: Option<String>,
    pub auth: AuthScheme,
}

/// Why a request was refused before sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutboundError {
    /// An argument cannot be placed in the URL or a header as given.
    BadValue { path: String, message: String },
    /// The finished URL failed the final check.
    UrlRejected { reason: String },
    /// The stored credential cannot be sent as a header (its value is never shown).
    BadCredential,
    /// The connection names a secret its tenant may not use (checked again at call time, so a
    /// document that bypassed validation still cannot borrow another tenant's or the gateway's).
    ForeignCredential { reason: String },
}

impl OutboundError {
    /// What the caller is told (JSON-RPC −32602): nothing was sent, and why.
    pub fn refusal(&self) -> String {
        format!("request refused before sending: {self}")
    }
}

impl fmt::Display for OutboundError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutboundError::BadValue { path, message } => write!(f, "{path}: {message}"),
            OutboundError::UrlRejected { reason } => write!(f, "the outbound URL {reason}"),
            OutboundError::BadCredential => f.write_str(
                "the connection's credential contains characters that cannot be sent in a header; ask an administrator to fix the secret",
            ),
            OutboundError::ForeignCredential { reason } => write!(
                f,
                "the connection's credential cannot be used: {reason}; ask an administrator"
            ),
        }
    }
}

impl std::error::Error for OutboundError {}

/// `name`, when `tenant` may read that Worker secret (`catalog::credential_problem`).
pub fn checked_credential_name<'a>(tenant: &str, name: &'a str) -> Result<&'a str, OutboundError> {
    match crate::catalog::credential_problem(tenant, name) {
        None => Ok(name),
        Some(reason) => Err(OutboundError::ForeignCredential { reason }),
    }
}

impl OutboundRequest {
    /// The secret to read for `tenant`'s call, refused unless the tenant's naming scheme
    /// allows it (`catalog::credential_problem`). `None` for `auth: none`.
    pub fn credential_name(&self, tenant: &str) -> Result<Option<&str>, OutboundError> {
        match &self.credential_ref {
            None => Ok(None),
            Some(name) => checked_credential_name(tenant, name).map(Some),
        }
    }

    /// The credential header for `secret`, the value of the secret named by `credential_ref`.
    pub fn credential_header(
        &self,
        secret: &str,
    ) -> Result<Option<(String, String)>, OutboundError> {
        if secret.bytes().any(|b| b.is_ascii_control()) || secret.is_empty() {
            return Err(OutboundError::BadCredential);
        }
        Ok(match &self.auth {
            AuthScheme::Bearer => Some(("Authorization".into(), format!("Bearer {secret}"))),
            AuthScheme::Basic => Some((
                "Authorization".into(),
                format!("Basic {}", b64_encode_standard(secret.as_bytes())),
            )),
            AuthScheme::Header(name) => Some((name.clone(), secret.to_owned())),
            AuthScheme::None => None,
        })
    }
}

impl OutboundRequest {
    /// Every form in which `secret` leaves the gateway (as is, and base64 for `basic`), for
    /// redacting it from what the upstream answers.
    pub fn credential_forms(&self, secret: &str) -> Vec<String> {
        let mut forms = vec![secret.to_owned()];
        if self.auth == AuthScheme::Basic {
            forms.push(b64_encode_standard(secret.as_bytes()));
        }
        forms
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters, so a value is one opaque
/// segment or query component: `/`, `?`, `#`, `@`, `%`, spaces and CR/LF are all escaped.
pub fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn bad_value(name: &str, message: impl Into<String>) -> OutboundError {
    OutboundError::BadValue {
        path: JsonPath::root()
            .field("arguments")
            .field(name)
            .as_str()
            .to_owned(),
        message: message.into(),
    }
}

/// Percent-decodes until nothing changes, so `%252F` is seen as the `/` an upstream that
/// decodes twice would see. Each round that changes anything is shorter, so this ends.
pub fn decode_fully(text: &str) -> String {
    let mut current = text.to_owned();
    loop {
        let bytes = current.as_bytes();
        let mut decoded = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            let hex = |b: Option<&u8>| b.and_then(|b| (*b as char).to_digit(16));
            match (bytes[i], hex(bytes.get(i + 1)), hex(bytes.get(i + 2))) {
                (b'%', Some(high), Some(low)) => {
                    decoded.push((high * 16 + low) as u8);
                    i += 3;
                }
                (b, _, _) => {
                    decoded.push(b);
                    i += 1;
                }
            }
        }
        let decoded = String::from_utf8_lossy(&decoded).into_owned();
        if decoded == current {
            return decoded;
        }
        current = decoded;
    }
}

/// One path segment of a placeholder's value: never empty, never `.` or `..`, never holding a
/// `/` or `\`, raw or encoded (with `multi` the value was split on its raw slashes already):
/// an upstream or proxy that decodes and normalises would otherwise climb out of a path prefix.
fn check_segment(name: &str, segment: &str, multi: bool) -> Result<(), OutboundError> {
    let decoded = decode_fully(segment);
    if segment.is_empty() {
        return Err(bad_value(
            name,
            "fills URL path segments and must not have an empty one (\"//\", or \"/\" at either end)",
        ));
    }
    if decoded == "." || decoded == ".." {
        return Err(bad_value(
            name,
            "fills a URL path segment and cannot be \".\" or \"..\"",
        ));
    }
    // With `multi`, raw slashes were split on already: any left came from an encoding.
    if decoded.contains(['/', '\\']) {
        let message = if multi {
            "fills URL path segments and must not contain \"\\\" or an encoded \"/\""
        } else {
            "fills one URL path segment and must not contain \"/\" or \"\\\", raw or percent-encoded (the operation does not declare it multi_segment)"
        };
        return Err(bad_value(name, message));
    }
    Ok(())
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Builds the request of a resolved call and runs the final URL check on it.
pub fn build_request(
    call: &ResolvedCall,
    config: &OutboundConfig,
) -> Result<OutboundRequest, OutboundError> {
    let operation = &call.operation;
    let connector = &call.connector;
    let mut path = connector.base_path.clone();
    for part in &operation.path_parts {
        match part {
            PathPart::Literal(text) => path.push_str(text),
            PathPart::Param(name) => {
                let value = call
                    .arguments
                    .get(name)
                    .ok_or_else(|| bad_value(name, "required argument is missing"))?;
                let text = scalar_text(value).ok_or_else(|| {
                    bad_value(
                        name,
                        "fills a URL path segment: use a string, number or boolean",
                    )
                })?;
                if text.is_empty() {
                    return Err(bad_value(
                        name,
                        "fills a URL path segment and must not be empty",
                    ));
                }
                if text.len() > MAX_URL_VALUE_BYTES {
                    return Err(too_long(
                        name,
                        text.len(),
                        MAX_URL_VALUE_BYTES,
                        "placed in the URL",
                    ));
                }
                if operation.multi_segment.iter().any(|m| m == name) {
                    let mut segments = Vec::new();
                    for segment in text.split('/') {
                        check_segment(name, segment, true)?;
                        segments.push(encode_component(segment));
                    }
                    path.push_str(&segments.join("/"));
                } else {
                    check_segment(name, &text, false)?;
                    path.push_str(&encode_component(&text));
                }
            }
        }
    }
    if path.is_empty() {
        path.push('/');
    }

    let placed = |name: &str| {
        operation.path_params().any(|p| p == name)
            || operation.query.iter().any(|q| q == name)
            || operation.body.iter().any(|b| b == name)
            || operation.headers.iter().any(|h| h == name)
    };
    // Declared lists first, in their order; the rest in key order (the map is sorted).
    let rest: Vec<&String> = call.arguments.keys().filter(|k| !placed(k)).collect();
    let (rest_query, rest_body): (Vec<&String>, Vec<&String>) = match operation.rest {
        ArgPlace::Query => (rest, Vec::new()),
        ArgPlace::Body => (Vec::new(), rest),
    };

    let mut query: Vec<String> = Vec::new();
    for name in operation.query.iter().chain(rest_query) {
        let Some(value) = call.arguments.get(name) else {
            continue;
        };
        let key = encode_component(name);
        let text_len = match value {
            Value::String(text) => text.len(),
            Value::Null => 0,
            other => other.to_string().len(),
        };
        if text_len > MAX_URL_VALUE_BYTES {
            return Err(too_long(
                name,
                text_len,
                MAX_URL_VALUE_BYTES,
                "placed in the URL",
            ));
        }
        match value {
            Value::Null => {}
            Value::Array(items) if items.iter().all(|i| scalar_text(i).is_some()) => {
                for item in items {
                    let text = scalar_text(item).unwrap_or_default();
                    query.push(format!("{key}={}", encode_component(&text)));
                }
            }
            Value::Array(_) | Value::Object(_) => {
                query.push(format!("{key}={}", encode_component(&value.to_string())));
            }
            scalar => {
                let text = scalar_text(scalar).unwrap_or_default();
                query.push(format!("{key}={}", encode_component(&text)));
            }
        }
    }

    let mut headers = vec![("Accept".to_owned(), "application/json".to_owned())];
    for name in &operation.headers {
        let Some(value) = call.arguments.get(name) else {
            continue;
        };
        let text = scalar_text(value).ok_or_else(|| {
            bad_value(name, "is sent as a header: use a string, number or boolean")
        })?;
        if text.len() > MAX_HEADER_VALUE_BYTES {
            return Err(too_long(
                name,
                text.len(),
                MAX_HEADER_VALUE_BYTES,
                "sent as headers",
            ));
        }
        if text.bytes().any(|b| b.is_ascii_control()) {
            return Err(bad_value(
                name,
                "is sent as a header and must not contain control characters or line breaks",
            ));
        }
        headers.push((name.clone(), text));
    }

    let body = if operation.method.has_body() {
        let mut object = Map::new();
        for name in operation.body.iter().chain(rest_body) {
            if let Some(value) = call.arguments.get(name) {
                object.insert(name.clone(), value.clone());
            }
        }
        headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
        Some(Value::Object(object).to_string())
    } else {
        None
    };

    let mut url = format!("{}{}", connector.origin, path);
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query.join("&"));
    }
    let prefixes: Vec<&[String]> = call.path_prefixes.iter().map(Vec::as_slice).collect();
    check_url(
        &url,
        &connector.origin,
        &connector.base_path,
        &prefixes,
        config,
    )?;
    Ok(OutboundRequest {
        method: operation.method,
        url,
        headers,
        body,
        credential_ref: call.connection.credential.clone(),
        auth: connector.auth.clone(),
    })
}

fn rejected(reason: impl Into<String>) -> OutboundError {
    OutboundError::UrlRejected {
        reason: reason.into(),
    }
}

/// The final check on a fully substituted URL, independent of how it was built: scheme https
/// (plain http only to loopback when `config` allows it), exactly the declared origin, no
/// userinfo, no fragment, no dot segments or stray characters, a path under the base path and
/// under one prefix of every restriction set.
pub fn check_url(
    url: &str,
    origin: &Origin,
    base_path: &str,
    prefix_sets: &[&[String]],
    config: &OutboundConfig,
) -> Result<(), OutboundError> {
    if url.len() > MAX_URL_BYTES {
        return Err(rejected(format!(
            "is {} bytes long; at most {MAX_URL_BYTES} are sent",
            url.len()
        )));
    }
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| rejected("has no scheme"))?;
    let scheme = match scheme {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        other => {
            return Err(rejected(format!(
                "uses scheme {}; only https is allowed",
                quote(other)
            )))
        }
    };
    if let Some(bad) = url
        .bytes()
        .find(|&b| !(0x21..0x7f).contains(&b) || b"\\\"<>^`{}|".contains(&b))
    {
        return Err(rejected(format!(
            "contains a character that must be percent-encoded (byte 0x{bad:02X})"
        )));
    }
    if url.contains('#') {
        return Err(rejected("has a fragment"));
    }
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path_and_query) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err(rejected("contains user information"));
    }
    let (host, port) = split_host_port(authority).ok_or_else(|| rejected("has an invalid host"))?;
    let port = match port {
        None => scheme.default_port(),
        Some(p) => parse_port(p).ok_or_else(|| rejected("has an invalid port"))?,
    };
    if scheme != origin.scheme || host != origin.host || port != origin.port {
        return Err(rejected(format!(
            "does not match the connector's origin {origin}"
        )));
    }
    if scheme == Scheme::Http && !(config.allow_loopback_http && is_loopback_host(host)) {
        return Err(rejected(
            "uses plain http, which this deployment allows only for loopback origins in local testing",
        ));
    }
    // Again here, whatever the stored document said: a numeric, private or (without the
    // deployment flag) loopback host is never sent to.
    if let Some(problem) = crate::catalog::host::host_problem(host, config.allow_loopback_http) {
        return Err(rejected(format!("is refused: {problem}")));
    }
    let path = path_and_query
        .split_once('?')
        .map_or(path_and_query, |(p, _)| p);
    let path = if path.is_empty() { "/" } else { path };
    check_escapes(path_and_query)?;
    for segment in path.split('/').skip(1) {
        let decoded = segment.replace("%2e", ".").replace("%2E", ".");
        if decoded == "." || decoded == ".." {
            return Err(rejected("contains a \".\" or \"..\" path segment"));
        }
    }
    if !path_has_prefix(path, base_path) {
        return Err(rejected(format!(
            "path is outside the connector's base path {}",
            quote(base_path)
        )));
    }
    for prefixes in prefix_sets {
        if !prefixes.iter().any(|p| path_has_prefix(path, p)) {
            let list: Vec<String> = prefixes.iter().map(|p| quote(p)).collect();
            return Err(rejected(format!(
                "path is outside the prefixes your policy allows ({})",
                list.join(", ")
            )));
        }
    }
    Ok(())
}

fn check_escapes(text: &str) -> Result<(), OutboundError> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let ok = bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
            if !ok {
                return Err(rejected("contains a malformed percent escape"));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_cannot_change_the_shape() {
        assert_eq!(encode_component("a/b?c#d@e%2e"), "a%2Fb%3Fc%23d%40e%252e");
        assert_eq!(encode_component("x\r\ny z"), "x%0D%0Ay%20z");
        assert_eq!(encode_component("ok-._~9"), "ok-._~9");
    }
}
