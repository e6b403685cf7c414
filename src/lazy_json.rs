//! A JSON value kept as its text until something reads it.
//!
//! A 10,000-tool catalog is mostly input schemas, and a request touches a handful of them (the
//! listed, the returned, the called). A tenant read back from its compiled snapshot keeps each
//! schema as the bytes of the text the admin write produced and parses them on first use (their
//! UTF-8 checked then, not on reading the snapshot); a document parsed from JSON keeps each
//! schema as its compact text too, several times smaller than its parsed tree, so neither the
//! admin write that compiles a large catalog nor a copy prepared from its documents holds every
//! schema parsed. Either way one copy is shared by every member view, listing and search index
//! of the tenant: cloning a `LazyJson` clones a pointer.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// A JSON value, parsed or not yet; clones share it. Equality compares the values.
#[derive(Debug, Clone)]
pub struct LazyJson(Arc<Cell>);

#[derive(Debug)]
struct Cell {
    /// Compact text (a compiled snapshot's, or written when a document was parsed), its UTF-8
    /// not checked yet: parsed from these bytes (which checks them), or checked and copied into
    /// `text` when the text is asked for. A cold copy of a large tenant reads thousands of
    /// schemas and uses a handful.
    stored: Option<Box<[u8]>>,
    text: OnceLock<Box<str>>,
    value: OnceLock<Arc<Value>>,
}

impl LazyJson {
    /// A value already parsed (its text is written only if asked for).
    pub fn from_value(value: impl Into<Arc<Value>>) -> LazyJson {
        LazyJson(Arc::new(Cell {
            stored: None,
            text: OnceLock::new(),
            value: OnceLock::from(value.into()),
        }))
    }

    /// A value kept as its compact text (what a parsed document keeps of a schema), parsed
    /// again when used; the text is the one [`LazyJson::text`] gives and a snapshot stores.
    pub fn compact(value: &Value) -> LazyJson {
        // Writing a `Value` cannot fail (its keys are strings); `null` would be refused by
        // every schema check if it could.
        LazyJson::from_stored(serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec()))
    }

    /// Bytes a compiled snapshot stored as [`LazyJson::text`] wrote them, not checked as UTF-8
    /// until used: bytes that are not UTF-8 JSON read as `null`, like damaged text.
    pub fn from_stored(bytes: impl Into<Box<[u8]>>) -> LazyJson {
        LazyJson(Arc::new(Cell {
            stored: Some(bytes.into()),
            text: OnceLock::new(),
            value: OnceLock::new(),
        }))
    }

    /// Whether it holds exactly these stored bytes, not parsed yet: a reader that meets the same
    /// bytes again (most tools' absent annotations) shares this one instead of another copy.
    pub fn is_stored(&self, bytes: &[u8]) -> bool {
        self.0.value.get().is_none() && self.0.stored.as_deref() == Some(bytes)
    }

    /// Whether both are clones of one value (what "shared, not copied" means in a test).
    pub fn ptr_eq(&self, other: &LazyJson) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The value, parsed now if it was not yet. Text that is not JSON (a snapshot damaged
    /// inside a string, which no bounds check can see) reads as `null`, which every schema
    /// check refuses and no listing mistakes for a schema.
    pub fn value(&self) -> &Arc<Value> {
        self.0.value.get_or_init(|| Arc::new(self.parse_stored()))
    }

    /// The stored bytes parsed (`null` when there are none, or they are not JSON).
    fn parse_stored(&self) -> Value {
        let parsed = self.0.stored.as_deref().map(serde_json::from_slice);
        parsed.and_then(Result::ok).unwrap_or(Value::Null)
    }

    /// Reads the value without keeping it: the parsed value if there is one, else a copy parsed
    /// for `read` alone and dropped after. What a pass over every schema of a catalog (building
    /// its search index) uses, so the pass does not leave every schema parsed behind it.
    pub fn read<R>(&self, read: impl FnOnce(&Value) -> R) -> R {
        match self.0.value.get() {
            Some(value) => read(value),
            None => read(&self.parse_stored()),
        }
    }

    /// The value as compact JSON text.
    pub fn text(&self) -> &str {
        self.0.text.get_or_init(|| match &self.0.stored {
            // Checked here, once; text that is not UTF-8 reads as the value it parses to.
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => text.into(),
                Err(_) => "null".into(),
            },
            None => {
                let value = self.0.value.get().map_or(&Value::Null, |v| v);
                value.to_string().into_boxed_str()
            }
        })
    }

    /// Whether the value was parsed (or given) already: what a test of laziness asks.
    pub fn is_parsed(&self) -> bool {
        self.0.value.get().is_some()
    }
}

impl PartialEq for LazyJson {
    fn eq(&self, other: &LazyJson) -> bool {
        if self.ptr_eq(other) {
            return true;
        }
        match (self.0.text.get(), other.0.text.get()) {
            (Some(a), Some(b)) if a == b => true,
            _ if self.0.stored.is_some() && self.0.stored == other.0.stored => true,
            _ => self.value() == other.value(),
        }
    }
}

/// Reading through a `LazyJson` parses it (once).
impl std::ops::Deref for LazyJson {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.value()
    }
}

impl From<Value> for LazyJson {
    fn from(value: Value) -> LazyJson {
        LazyJson::from_value(value)
    }
}

impl serde::Serialize for LazyJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for LazyJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<LazyJson, D::Error> {
        Value::deserialize(deserializer).map(LazyJson::from_value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stored_bytes_are_recognised_until_parsed() {
        let lazy = LazyJson::from_stored(&b"{}"[..]);
        assert!(lazy.is_stored(b"{}"));
        assert!(!lazy.is_stored(b"{ }"), "the same value, other bytes");
        assert!(!LazyJson::compact(&json!({})).is_stored(b"[]"));
        lazy.value();
        assert!(!lazy.is_stored(b"{}"), "parsed, it is a value now");
    }

    #[test]
    fn text_is_parsed_on_first_read_only() {
        let lazy = LazyJson::from_stored(r#"{"type":"object"}"#.as_bytes());
        assert!(!lazy.is_parsed());
        assert_eq!(**lazy.value(), json!({"type": "object"}));
        assert!(lazy.is_parsed());
    }

    #[test]
    fn read_parses_a_copy_and_keeps_none() {
        let value = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        let lazy = LazyJson::compact(&value);
        assert_eq!(lazy.text(), value.to_string());
        assert_eq!(lazy.read(|v| v.clone()), value);
        assert!(!lazy.is_parsed(), "read keeps no parsed copy");
        assert_eq!(**lazy.value(), value);
        assert!(lazy.is_parsed());
        assert_eq!(lazy.read(|v| v["type"].clone()), json!("object"));
        assert_eq!(LazyJson::compact(&value), LazyJson::from_value(value));
    }

    #[test]
    fn a_value_writes_text_that_reads_back_equal() {
        let lazy = LazyJson::from_value(json!({"a": [1, "two", null]}));
        let again = LazyJson::from_stored(lazy.text().as_bytes());
        assert_eq!(lazy, again);
        assert_eq!(again.value().as_ref(), lazy.value().as_ref());
    }

    #[test]
    fn stored_bytes_parse_on_first_read_and_bad_utf8_reads_as_null() {
        let lazy = LazyJson::from_stored(br#"{"type":"object"}"#.to_vec());
        assert!(!lazy.is_parsed());
        assert_eq!(lazy.text(), r#"{"type":"object"}"#);
        assert!(!lazy.is_parsed(), "asking for the text parses nothing");
        assert_eq!(**lazy.value(), json!({"type": "object"}));
        assert_eq!(
            lazy,
            LazyJson::from_stored(r#"{ "type": "object" }"#.as_bytes())
        );
        // A string holding a byte that is not UTF-8: no panic, `null` both ways.
        let damaged = LazyJson::from_stored(b"{\"a\":\"\xff\"}".to_vec());
        assert_eq!(**damaged.value(), Value::Null);
        assert_eq!(damaged.text(), "null");
        let damaged = LazyJson::from_stored(b"{\"a\":\"\xff\"}".to_vec());
        assert_eq!(damaged.text(), "null");
        assert_eq!(**damaged.value(), Value::Null);
    }

    #[test]
    fn damaged_text_reads_as_null_not_a_panic() {
        assert_eq!(
            **LazyJson::from_stored(r#"{"type": "obj"#.as_bytes()).value(),
            Value::Null
        );
    }

    #[test]
    fn equality_is_of_values_not_of_text() {
        let spaced = LazyJson::from_stored(r#"{ "a" : 1 }"#.as_bytes());
        let compact = LazyJson::from_stored(r#"{"a":1}"#.as_bytes());
        assert_eq!(spaced, compact);
        assert_ne!(compact, LazyJson::from_stored(r#"{"a":2}"#.as_bytes()));
    }
}
