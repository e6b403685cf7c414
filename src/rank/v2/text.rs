//! Words as the ranker compares them: a published stop-word list and a real stemmer.
//!
//! Both come from general sources so that no word list is read off one evaluation set's misses:
//! the stop words are the NLTK English list (the Snowball project's list via PostgreSQL, with
//! contractions added; `stopwords_en.txt`, one word a line, unchanged), and stems are Snowball
//! English (`rust-stemmers`), applied alike to tool text and queries.

use std::borrow::Cow;

use crate::tokenize::for_each_token;
use rust_stemmers::{Algorithm, Stemmer};

/// The NLTK English stop-word list, verbatim.
const STOP_WORDS_EN: &str = include_str!("stopwords_en.txt");
/// The Stopwords ISO English list (1,298 words, a union of published lists), sorted: common
/// English words, many of them everyday verbs and nouns (`show`, `tell`, `need`, `top`).
const COMMON_WORDS_EN: &str = include_str!("stopwords_iso_en.txt");

/// Whether a lowercase token is an English stop word (or a lone letter: `s` of `user's`).
pub fn is_stop_word(token: &str) -> bool {
    token.chars().count() == 1 && token.chars().all(char::is_alphabetic)
        || stop_words().binary_search(&token).is_ok()
}

/// Whether a lowercase token is a common English word (Stopwords ISO): such a word can name a
/// capability when a tool uses it, but one that no tool of the pool uses is how the request is
/// phrased, not what it asks for.
pub fn is_common_word(token: &str) -> bool {
    static WORDS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    let words = WORDS.get_or_init(|| sorted_lines(COMMON_WORDS_EN));
    words.binary_search(&token).is_ok()
}

fn sorted_lines(text: &'static str) -> Vec<&'static str> {
    let mut w: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    w.sort_unstable();
    w.dedup();
    w
}

fn stop_words() -> &'static [&'static str] {
    static WORDS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    WORDS.get_or_init(|| sorted_lines(STOP_WORDS_EN))
}

/// The Snowball English stem of a lowercase token; tokens with digits or non-ASCII letters are
/// kept as they are (the algorithm is defined for English words).
pub fn stem(token: &str) -> Cow<'_, str> {
    if !stemmable(token) {
        return Cow::Borrowed(token);
    }
    match Stemmer::create(Algorithm::English).stem(token) {
        Cow::Owned(s) if s != token => Cow::Owned(s),
        _ => Cow::Borrowed(token),
    }
}

/// [`stem`], remembered: requests repeat their vocabulary (`list`, `create`, `issues`) and
/// tenants their products' labels, and one Snowball stem costs more than the rest of a word's
/// analysis. At most [`STEMS_KEPT`] are kept per thread (then forgotten at once), so no
/// request can grow it.
pub fn stem_remembered(token: &str) -> String {
    if !stemmable(token) {
        return token.to_owned();
    }
    REMEMBERED_STEMS.with_borrow_mut(|kept| {
        if let Some(s) = kept.get(token) {
            return s.clone();
        }
        if kept.len() >= STEMS_KEPT {
            kept.clear();
        }
        let s = stem(token).into_owned();
        kept.insert(token.to_owned(), s.clone());
        s
    })
}

/// Whether [`stem`] may change the token (the rest it keeps as they are).
fn stemmable(token: &str) -> bool {
    token.len() >= 3 && token.bytes().all(|b| b.is_ascii_lowercase())
}

/// How many stems [`stem_remembered`] keeps per thread (about 100 KB).
pub const STEMS_KEPT: usize = 2048;

thread_local! {
    static REMEMBERED_STEMS: std::cell::RefCell<std::collections::HashMap<String, String>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Stems already computed while building an index: tool text repeats its words, and the
/// stemmer allocates for each one.
#[derive(Default)]
pub struct StemCache(std::collections::HashMap<String, String>);

impl StemCache {
    pub fn stem(&mut self, token: &str) -> String {
        if let Some(s) = self.0.get(token) {
            return s.clone();
        }
        let s = stem(token).into_owned();
        self.0.insert(token.to_owned(), s.clone());
        s
    }
}

/// The stemmed tokens of a text, in order. With `compounds`, a word written as several tokens
/// (`PagerDuty`) also gives its whole form (`pagerduty`), the way a query may spell it.
/// Its stems are the thread's remembered ones ([`stem_remembered`]): it serves connector labels,
/// which every cold copy of every tenant reads again and which repeat across tenants.
pub fn terms(text: &str, compounds: bool, out: &mut Vec<String>) {
    terms_with(text, compounds, false, &mut |t| stem_remembered(t), out)
}

/// [`terms`] with a stem cache; with `skip_stop`, stop words give no term of their own (they
/// still join a compound: `OnCall` → `call`, `oncall`).
pub fn terms_cached(
    text: &str,
    compounds: bool,
    skip_stop: bool,
    cache: &mut StemCache,
    out: &mut Vec<String>,
) {
    terms_with(text, compounds, skip_stop, &mut |t| cache.stem(t), out)
}

fn terms_with(
    text: &str,
    compounds: bool,
    skip_stop: bool,
    stem: &mut impl FnMut(&str) -> String,
    out: &mut Vec<String>,
) {
    let mut word: Vec<String> = Vec::new();
    let mut last_end = usize::MAX;
    let flush =
        |word: &mut Vec<String>, out: &mut Vec<String>, stem: &mut dyn FnMut(&str) -> String| {
            if compounds && word.len() > 1 {
                out.push(stem(&word.concat()));
            }
            word.clear();
        };
    for_each_token(text, |t, start, end| {
        if start != last_end {
            flush(&mut word, out, stem);
        }
        if !(skip_stop && is_stop_word(t)) {
            out.push(stem(t));
        }
        word.push(t.to_owned());
        last_end = end;
    });
    flush(&mut word, out, stem);
}

/// What a tool's `inputSchema` says about its arguments, at any depth: property names, and the
/// prose (descriptions, titles, string enum values) that explains them.
#[derive(Default)]
pub struct SchemaText<'a> {
    pub names: Vec<&'a str>,
    pub prose: Vec<&'a str>,
}

/// Schema nesting beyond this is ignored (a hostile schema cannot make indexing recurse deeply).
const MAX_SCHEMA_DEPTH: usize = 12;

pub fn schema_text(schema: &serde_json::Value) -> SchemaText<'_> {
    let mut out = SchemaText::default();
    walk(schema, 0, &mut out);
    out
}

fn walk<'a>(v: &'a serde_json::Value, depth: usize, out: &mut SchemaText<'a>) {
    use serde_json::Value;
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("properties", Value::Object(props)) => {
                        for (name, sub) in props {
                            out.names.push(name);
                            walk(sub, depth + 1, out);
                        }
                    }
                    ("description" | "title", Value::String(s)) => out.prose.push(s),
                    ("enum", Value::Array(values)) => {
                        out.prose.extend(values.iter().filter_map(Value::as_str))
                    }
                    ("default" | "examples" | "const" | "required", _) => {}
                    (_, sub @ (Value::Object(_) | Value::Array(_))) => walk(sub, depth + 1, out),
                    _ => {}
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| walk(i, depth + 1, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_query_stems_are_the_stemmer_s_and_bounded() {
        for w in [
            "incidents",
            "listing",
            "urgency",
            "a",
            "PagerDuty",
            "v2",
            "created",
        ] {
            // The first call stems, the second reads what the first kept.
            assert_eq!(stem_remembered(w), stem(w), "{w}");
            assert_eq!(stem_remembered(w), stem(w), "{w}");
        }
        // Distinct lowercase words (a request's unknown names), past the bound.
        let letters = |mut i: usize| {
            let mut w = String::from("zz");
            while i > 0 {
                w.push(char::from(b'a' + (i % 26) as u8));
                i /= 26;
            }
            w
        };
        let mut most = 0;
        for i in 1..=2 * STEMS_KEPT {
            stem_remembered(&letters(i));
            most = most.max(REMEMBERED_STEMS.with_borrow(|kept| kept.len()));
        }
        assert_eq!(most, STEMS_KEPT);
        assert_eq!(stem_remembered("incidents"), "incid");
    }

    #[test]
    fn the_published_list_is_what_marks_stop_words() {
        for w in ["the", "me", "about", "all", "with", "you're", "s"] {
            assert!(is_stop_word(w), "{w}");
        }
        for w in ["tell", "incident", "list", "delete", "urgency"] {
            assert!(!is_stop_word(w), "{w}");
        }
    }

    #[test]
    fn snowball_stems_agree_on_inflections() {
        for (a, b) in [
            ("schedules", "schedule"),
            ("settings", "setting"),
            ("acknowledged", "acknowledge"),
            ("indexes", "index"),
            ("entries", "entry"),
            ("grouping", "group"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
        assert_eq!(stem("v2"), "v2");
        assert_eq!(stem("façade"), "façade");
    }

    #[test]
    fn compounds_give_the_whole_word_too() {
        let mut out = Vec::new();
        terms("PagerDuty on-call", true, &mut out);
        assert_eq!(out, ["pager", "duti", "pagerduti", "on", "call"]);
    }

    #[test]
    fn schema_text_reaches_nested_properties_and_enums() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "incident": {
                    "type": "object",
                    "description": "The incident to create",
                    "properties": {
                        "urgency": {"type": "string", "enum": ["high", "low"]},
                        "items": {"type": "array", "items": {"properties": {"deep": {}}}}
                    }
                }
            }
        });
        let t = schema_text(&schema);
        assert_eq!(t.names, ["incident", "items", "deep", "urgency"]);
        assert!(t.prose.contains(&"high"));
        assert!(t.prose.contains(&"The incident to create"));
    }
}
