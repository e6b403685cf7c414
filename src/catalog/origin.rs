//! Where a request may go: origins, methods and path templates.
//!
//! The catalog parses these when a document is read and the outbound builder reads them when a
//! request is finished, so both sides share one definition of an exact origin, a safe base path
//! and a path prefix (`/v1/ab` is not under `/v1/a`).

use std::fmt;

use super::doc::quote;

/// `http` or `https`. Plain http is accepted only for loopback hosts (local testing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// A declared origin: scheme, lowercase host and effective port, compared exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub scheme: Scheme,
    /// Lowercase DNS name, IPv4 address, or IPv6 address in brackets (`[::1]`).
    pub host: String,
    /// The effective port (the scheme's default when the origin names none).
    pub port: u16,
}

/// What origins a document may name beyond public hosts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OriginRules {
    /// Loopback hosts (local tests against a stand-in API): the deployment's
    /// `ALLOW_LOOPBACK_HTTP`.
    pub allow_loopback: bool,
}

impl OriginRules {
    /// For documents read back from storage: they were checked on write with the deployment's
    /// rules, and the final URL check applies the deployment's loopback rule to every request,
    /// so a flag turned off later stops the calls without making the documents unreadable.
    pub const STORED: OriginRules = OriginRules {
        allow_loopback: true,
    };
}

impl Origin {
    /// Parses `scheme://host[:port]` with nothing after it, as a stored document may name it
    /// ([`OriginRules::STORED`]).
    pub fn parse(text: &str) -> Result<Origin, String> {
        Origin::parse_with(text, OriginRules::STORED)
    }

    /// Parses an origin under `rules`: a public host (see [`super::host`]), or loopback when
    /// the rules allow it; plain http only for loopback.
    pub fn parse_with(text: &str, rules: OriginRules) -> Result<Origin, String> {
        let (scheme, rest) = if let Some(rest) = text.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else if let Some(rest) = text.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else {
            return Err(format!(
                "invalid origin {}: must start with \"https://\"",
                quote(text)
            ));
        };
        let shape_error = || {
            format!(
                "invalid origin {}: use scheme://host[:port] in lowercase, with no path, query, user or trailing \"/\"",
                quote(text)
            )
        };
        if rest.is_empty() || rest.contains(['/', '?', '#', '@', '\\']) {
            return Err(shape_error());
        }
        let (host, port_text) = split_host_port(rest).ok_or_else(shape_error)?;
        if !is_valid_host(host) {
            return Err(shape_error());
        }
        let port = match port_text {
            None => scheme.default_port(),
            Some(p) => parse_port(p).ok_or_else(shape_error)?,
        };
        if scheme == Scheme::Http && !is_loopback_host(host) {
            return Err(format!(
                "invalid origin {}: plain http is only allowed for loopback hosts (127.0.0.1, [::1], localhost)",
                quote(text)
            ));
        }
        if let Some(problem) = super::host::host_problem(host, rules.allow_loopback) {
            return Err(format!("invalid origin {}: {problem}", quote(text)));
        }
        Ok(Origin {
            scheme,
            host: host.to_owned(),
            port,
        })
    }

    pub fn is_loopback(&self) -> bool {
        is_loopback_host(&self.host)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.host)?;
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

/// Splits `host[:port]`, keeping IPv6 brackets on the host.
pub(crate) fn split_host_port(authority: &str) -> Option<(&str, Option<&str>)> {
    if authority.starts_with('[') {
        let end = authority.find(']')?;
        let host = &authority[..=end];
        match &authority[end + 1..] {
            "" => Some((host, None)),
            rest => rest.strip_prefix(':').map(|p| (host, Some(p))),
        }
    } else {
        match authority.split_once(':') {
            None => Some((authority, None)),
            Some((host, port)) => Some((host, Some(port))),
        }
    }
}

pub(crate) fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || text.starts_with('0') {
        return None;
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u16>().ok().filter(|&p| p != 0)
}

pub(crate) fn is_valid_host(host: &str) -> bool {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return !inner.is_empty()
            && inner.bytes().all(|b| {
                b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b':' || b == b'.'
            });
    }
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

pub(crate) fn is_loopback_host(host: &str) -> bool {
    super::host::classify(host) == super::host::HostClass::Loopback
}

/// An HTTP method a tool operation may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    pub fn parse(text: &str) -> Option<Method> {
        Some(match text {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }

    /// Whether requests of this method carry a JSON body.
    pub fn has_body(self) -> bool {
        matches!(self, Method::Post | Method::Put | Method::Patch)
    }
}

/// One piece of a path template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathPart {
    /// Literal text, already URL-safe.
    Literal(String),
    /// A `{name}` placeholder, replaced by the percent-encoded argument value.
    Param(String),
}

/// Literal characters allowed in a base path or a path template (RFC 3986 `pchar` without `%`).
fn is_path_literal_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b)
}

pub(crate) fn is_valid_base_path(path: &str) -> bool {
    if path.is_empty() {
        return true;
    }
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    rest.split('/').all(|segment| {
        !segment.is_empty()
            && segment != "."
            && segment != ".."
            && segment.bytes().all(is_path_literal_byte)
    })
}

pub(crate) fn parse_path_template(template: &str) -> Result<Vec<PathPart>, String> {
    let invalid = |why: &str| format!("invalid path template {}: {why}", quote(template));
    if !template.starts_with('/') {
        return Err(invalid("must start with \"/\""));
    }
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = template.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        match c {
            '{' => {
                let mut name = String::new();
                let mut closed = false;
                for (_, c) in chars.by_ref() {
                    if c == '}' {
                        closed = true;
                        break;
                    }
                    name.push(c);
                }
                if !closed {
                    return Err(invalid("a \"{\" is never closed"));
                }
                if name.is_empty()
                    || !name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
                {
                    return Err(invalid("placeholder names use letters, digits, \"_\", \"-\" and \".\""));
                }
                if !literal.is_empty() {
                    parts.push(PathPart::Literal(std::mem::take(&mut literal)));
                }
                parts.push(PathPart::Param(name));
            }
            '}' => return Err(invalid("a \"}\" has no matching \"{\"")),
            '/' => literal.push('/'),
            c if c.is_ascii() && is_path_literal_byte(c as u8) => literal.push(c),
            _ => {
                return Err(invalid(
                    "only letters, digits, \"/\", \"{param}\" and -._~!$&'()*+,;=:@ are allowed (no query, fragment or %)",
                ))
            }
        }
    }
    if !literal.is_empty() {
        parts.push(PathPart::Literal(literal));
    }
    // Dot segments and empty segments in the literal skeleton would let the template escape
    // the base path once normalised.
    let skeleton: String = parts
        .iter()
        .map(|p| match p {
            PathPart::Literal(l) => l.as_str(),
            PathPart::Param(_) => "x",
        })
        .collect();
    if skeleton != "/"
        && skeleton[1..]
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(invalid("no empty, \".\" or \"..\" segments"));
    }
    Ok(parts)
}

/// Whether `path` is `prefix` or lies below it, segment by segment (`/v1/ab` is not under `/v1/a`).
pub fn path_has_prefix(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        return path.is_empty() || path.starts_with('/');
    }
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}
