//! Request parameters as OAuth reads them: `application/x-www-form-urlencoded` query strings and
//! bodies, decoded once into a map, and the encoder for the query of a redirect.
//!
//! RFC 6749 §3.1: a parameter sent twice is an error (not "first one wins", which lets a
//! proxy and the server disagree about which value counts), and a parameter with an empty value
//! counts as absent. Sizes are capped so a hostile query costs nothing.

use std::collections::BTreeMap;
use std::fmt;

/// The most bytes of a query string or form body read as parameters.
pub const MAX_PARAMS_BYTES: usize = 16 * 1024;
/// The longest single value (a self-contained client id is the longest expected, about 1.5 KiB).
/// Room for the pages' sealed ticket (a client id, a redirect URI and a `state`, each capped).
pub const MAX_VALUE_BYTES: usize = 12 * 1024;
/// The most distinct parameters.
pub const MAX_PARAMS: usize = 32;

/// Why a parameter list could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamsError {
    TooLarge,
    TooMany,
    Duplicate(String),
    BadEncoding(String),
    ValueTooLong(String),
}

impl fmt::Display for ParamsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamsError::TooLarge => {
                write!(f, "the parameters are longer than {MAX_PARAMS_BYTES} bytes")
            }
            ParamsError::TooMany => write!(f, "more than {MAX_PARAMS} parameters"),
            ParamsError::Duplicate(name) => {
                write!(f, "the parameter \"{name}\" is given more than once")
            }
            ParamsError::BadEncoding(name) => write!(
                f,
                "the parameter \"{name}\" is not valid percent-encoded UTF-8"
            ),
            ParamsError::ValueTooLong(name) => write!(
                f,
                "the parameter \"{name}\" is longer than {MAX_VALUE_BYTES} bytes"
            ),
        }
    }
}

/// Decoded parameters: each name at most once, empty values dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    values: BTreeMap<String, String>,
}

impl Params {
    /// Parses `a=1&b=x+y` (a query string without its `?`, or a form body).
    pub fn parse(text: &str) -> Result<Params, ParamsError> {
        if text.len() > MAX_PARAMS_BYTES {
            return Err(ParamsError::TooLarge);
        }
        let mut values = BTreeMap::new();
        let mut seen = std::collections::BTreeSet::new();
        for pair in text.split('&').filter(|p| !p.is_empty()) {
            let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = decode(raw_name).ok_or_else(|| ParamsError::BadEncoding(lossy(raw_name)))?;
            let value = decode(raw_value).ok_or_else(|| ParamsError::BadEncoding(name.clone()))?;
            if value.len() > MAX_VALUE_BYTES {
                return Err(ParamsError::ValueTooLong(name));
            }
            if !seen.insert(name.clone()) {
                return Err(ParamsError::Duplicate(name));
            }
            if seen.len() > MAX_PARAMS {
                return Err(ParamsError::TooMany);
            }
            if !value.is_empty() {
                values.insert(name, value);
            }
        }
        Ok(Params { values })
    }

    /// Builds parameters from pairs (tests, and a shell that already split them).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Params {
        Params {
            values: pairs
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

fn lossy(raw: &str) -> String {
    raw.chars().take(40).collect()
}

fn decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hi = (*bytes.get(i + 1)? as char).to_digit(16)?;
                let lo = (*bytes.get(i + 2)? as char).to_digit(16)?;
                out.push((hi * 16 + lo) as u8);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Percent-encodes a value for a query string: everything but RFC 3986 unreserved characters.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Appends parameters to a URL's query (`?` or `&`, whichever the URL needs). The URL is one
/// the server checked (a registered redirect URI, which never holds a fragment).
pub fn append_query(url: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = url.to_owned();
    let mut separator = if url.contains('?') { '&' } else { '?' };
    if url.ends_with('?') || url.ends_with('&') {
        separator = '\0';
    }
    for (name, value) in pairs {
        if separator != '\0' {
            out.push(separator);
        }
        separator = '&';
        out.push_str(&encode(name));
        out.push('=');
        out.push_str(&encode(value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_form_encoding_and_drops_empty_values() {
        let p = Params::parse("a=1&b=x+y%2Bz&c=&d&e=%C3%A9").unwrap();
        assert_eq!(p.get("a"), Some("1"));
        assert_eq!(p.get("b"), Some("x y+z"));
        assert_eq!(p.get("c"), None);
        assert_eq!(p.get("d"), None);
        assert_eq!(p.get("e"), Some("é"));
        assert_eq!(Params::parse("").unwrap(), Params::default());
    }

    #[test]
    fn refuses_duplicates_bad_encoding_and_size() {
        assert_eq!(
            Params::parse("state=a&state=b"),
            Err(ParamsError::Duplicate("state".into()))
        );
        // An empty duplicate is still a duplicate: it could shadow the value for another reader.
        assert_eq!(
            Params::parse("state=a&state="),
            Err(ParamsError::Duplicate("state".into()))
        );
        assert_eq!(
            Params::parse("a=%zz"),
            Err(ParamsError::BadEncoding("a".into()))
        );
        assert_eq!(
            Params::parse("a=%ff"),
            Err(ParamsError::BadEncoding("a".into()))
        );
        assert_eq!(
            Params::parse("a=%4"),
            Err(ParamsError::BadEncoding("a".into()))
        );
        assert_eq!(
            Params::parse(&"a".repeat(MAX_PARAMS_BYTES + 1)),
            Err(ParamsError::TooLarge)
        );
        assert_eq!(
            Params::parse(&format!("v={}", "x".repeat(MAX_VALUE_BYTES + 1))),
            Err(ParamsError::ValueTooLong("v".into()))
        );
        let many: Vec<String> = (0..=MAX_PARAMS).map(|i| format!("p{i}=1")).collect();
        assert_eq!(Params::parse(&many.join("&")), Err(ParamsError::TooMany));
    }

    #[test]
    fn appends_encoded_query_parameters() {
        assert_eq!(
            append_query(
                "https://c.example/cb",
                &[("code", "a b"), ("state", "x&y=z")]
            ),
            "https://c.example/cb?code=a%20b&state=x%26y%3Dz"
        );
        assert_eq!(
            append_query("https://c.example/cb?t=1", &[("code", "c")]),
            "https://c.example/cb?t=1&code=c"
        );
        assert_eq!(
            append_query(
                "https://c.example/cb?",
                &[("code", "c"), ("iss", "https://g.example")]
            ),
            "https://c.example/cb?code=c&iss=https%3A%2F%2Fg.example"
        );
    }
}
