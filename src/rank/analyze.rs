//! What a query token *is* before it is scored: a term, a function word or an argument value.
//!
//! Query mass must come only from words that can tell tools apart. Function words ("the", "my")
//! never can; argument values (`SVC123`, `"Q3 report"`, `2024-05-01`, a URL) name the data a
//! tool will act on, not the tool, and no tool definition covers them, so counting them would
//! push the right tool under the floor. The light stemmer lets `schedules` meet `schedule`.

use crate::tokenize::for_each_token;

/// English function words: they carry no query mass (SPEC §7). `all` is deliberately absent:
/// the seed article scores it as a name token.
pub const FUNCTION_WORDS: &[&str] = &[
    "a",
    "about",
    "am",
    "an",
    "and",
    "another",
    "any",
    "anybody",
    "anyone",
    "anything",
    "are",
    "as",
    "at",
    "be",
    "been",
    "being",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "each",
    "either",
    "every",
    "everybody",
    "everyone",
    "everything",
    "for",
    "from",
    "had",
    "has",
    "have",
    "he",
    "her",
    "him",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "just",
    "me",
    "mine",
    "my",
    "neither",
    "nobody",
    "nothing",
    "of",
    "on",
    "or",
    "our",
    "ours",
    "please",
    "she",
    "should",
    "so",
    "some",
    "somebody",
    "someone",
    "something",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "up",
    "us",
    "via",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
];

pub fn is_function_word(token: &str) -> bool {
    FUNCTION_WORDS.binary_search(&token).is_ok()
}

/// `s` of `candidate's`, `t` of `don't`: a single letter names nothing.
fn is_lone_letter(token: &str) -> bool {
    let mut c = token.chars();
    matches!((c.next(), c.next()), (Some(l), None) if l.is_alphabetic())
}

/// Why a query token does or does not carry mass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Scored and part of the query mass.
    Term,
    /// A function word: no mass.
    FunctionWord,
    /// Part of an argument value (quoted text, a number, a date, an id like `SVC123`, a URL,
    /// an e-mail address, a path): no mass.
    ArgumentValue,
    /// Covered by nothing in the pool, and known to the connector directory only from
    /// descriptions, never from a tool name or a connector label: an incidental word of prose
    /// ("broken", "regression"), not a capability the pool lacks. No mass.
    ProseWord,
    /// Covered by nothing in the pool nor in the directory, in a query that names a product of
    /// the pool: an incidental word ("tomorrow", "colleague"). No mass. (Without a named
    /// product, an unknown word may name a product the gateway does not offer: it keeps mass.)
    UnknownWord,
    /// Covered by nothing in the pool, though some tool name of the directory has it, in a
    /// query that names a product of the pool and keeps an object word of its own (`change
    /// the priority on jira issue …`): a detail of the request, not the capability. No mass;
    /// the query's action verb must then be covered (rule `details_no_mass`).
    DetailWord,
    /// Inside an argument phrase (`for this regression`, `about pricing`) of a query that names
    /// a product of the pool: it still adds to a tool's score, but carries no mass, so it can
    /// neither lift a tool over the floor nor hold the right one under it.
    ArgumentPhrase,
}

/// One token of the query, in query order.
#[derive(Clone, Debug)]
pub struct RawToken {
    pub text: String,
    pub role: Role,
    /// A PascalCase word kept whole (`ServiceNow` → `servicenow`): matched as one word, never
    /// by prefix.
    pub whole: bool,
    /// In a prose query, the argument phrase this token is in (numbered from 1; 0 = none): a
    /// phrase opened by an argument preposition (`for this regression`, `about pricing`, `to
    /// csv`) names what the call acts on, not the tool.
    pub phrase: u32,
}

/// Prepositions that open an argument phrase in a prose query: what follows says what the call
/// is for or acts on (`… for this regression`, `… about pricing`, `… to csv`), not which
/// capability is wanted. `in`, `on`, `of` and `at` are not here: they mostly name the product or
/// the resource (`in jira`, `details of an event`).
pub const PHRASE_PREPOSITIONS: &[&str] = &[
    "about", "as", "by", "for", "from", "into", "through", "to", "via", "with",
];

/// Days named relative to now: argument values, like a date (`… due tomorrow`).
const RELATIVE_DAYS: &[&str] = &["today", "tomorrow", "tonight", "yesterday"];
/// `last week`, `next quarter`, `past month`: a period relative to now is an argument value.
const RELATIVE_LEADS: &[&str] = &["last", "next", "past"];
const PERIODS: &[&str] = &[
    "day",
    "days",
    "friday",
    "hour",
    "hours",
    "monday",
    "month",
    "months",
    "quarter",
    "saturday",
    "sunday",
    "thursday",
    "tuesday",
    "wednesday",
    "week",
    "weekend",
    "weeks",
    "year",
    "years",
];

/// Degree and focus modifiers (`the exact api name`, `a specific page`): in prose they narrow
/// the data a call acts on, never the capability, so they count as function words there. In an
/// identifier (`get_affinity_specific`) they are part of a tool's name and keep their mass.
pub const PROSE_MODIFIERS: &[&str] = &[
    "actually",
    "also",
    "certain",
    "different",
    "exact",
    "exactly",
    "particular",
    "quite",
    "really",
    "same",
    "specific",
    "specifically",
    "various",
    "very",
];

/// Verbs that destroy data. A query that asks for one must get a tool that covers one
/// (`remove my reaction` never answers `add_reaction`); a tool named with one answers only a
/// query that asks for one, when the query asks for another action ([`READ_VERBS`],
/// [`WRITE_VERBS`]; rule `destructive_intent`).
pub const DESTRUCTIVE_VERBS: &[&str] = &[
    "delete",
    "destroy",
    "drop",
    "erase",
    "purge",
    "remove",
    "revoke",
    "trash",
    "uninstall",
    "unlink",
    "wipe",
];

/// A tool name holds one of [`DESTRUCTIVE_VERBS`] as a token (`slack.remove_reaction`,
/// `delete_event`), whoever's catalog it comes from.
pub fn name_destroys(name: &str) -> bool {
    crate::tokenize::tokenize(name)
        .iter()
        .any(|t| DESTRUCTIVE_VERBS.contains(&t.as_str()))
}

/// Verbs that ask to read: a query with one of them and no other action verb is not answered
/// with a tool named only for writing (rule `read_intent`).
pub const READ_VERBS: &[&str] = &[
    "browse", "check", "describe", "display", "download", "export", "fetch", "find", "get", "list",
    "look", "lookup", "open", "read", "retrieve", "search", "show", "view",
];

/// Verbs that ask to create or change data without destroying it.
pub const WRITE_VERBS: &[&str] = &[
    "add",
    "assign",
    "copy",
    "create",
    "draft",
    "duplicate",
    "edit",
    "import",
    "insert",
    "invite",
    "make",
    "modify",
    "move",
    "patch",
    "post",
    "rename",
    "reply",
    "schedule",
    "send",
    "set",
    "share",
    "update",
    "upload",
    "write",
];

/// Words that close an argument phrase: a new clause may name a new capability (`… as read and
/// move it`).
const PHRASE_ENDS: &[&str] = &["and", "but", "or", "then"];

/// Splits a query into tokens and tags function words and (optionally) argument values. With
/// `compounds`, a PascalCase word (`ServiceNow`, `HubSpot`) is one token, the way product
/// names are spelled.
pub fn analyze(query: &str, argument_values: bool, compounds: bool) -> Vec<RawToken> {
    let mut out = Vec::new();
    let mut phrase = 0;
    let mut phrases = 0;
    let mut push = |text: &str, value: bool, modifier: bool, whole: bool, phrase: u32| {
        let role = if value {
            Role::ArgumentValue
        } else if modifier || is_function_word(text) || is_lone_letter(text) {
            Role::FunctionWord
        } else {
            Role::Term
        };
        out.push(RawToken {
            text: text.to_owned(),
            role,
            whole,
            phrase,
        });
    };
    if !argument_values {
        for_each_token(query, |t, _, _| push(t, false, false, false, 0));
        return out;
    }
    let words = words(query);
    // A single word is an identifier (a guessed tool name): `add_user_to_group` has no phrases.
    let prose = words.len() > 1;
    for (i, &(word, quoted)) in words.iter().enumerate() {
        let bare = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if prose && !quoted && i > 0 && PHRASE_PREPOSITIONS.contains(&bare.as_str()) {
            phrases += 1;
            phrase = phrases;
        } else if !quoted && PHRASE_ENDS.contains(&bare.as_str()) {
            phrase = 0;
        }
        let lower = |w: Option<&(&str, bool)>| {
            w.map(|(w, _)| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
        };
        let relative = RELATIVE_DAYS.contains(&bare.as_str())
            || (RELATIVE_LEADS.contains(&bare.as_str())
                && lower(words.get(i + 1)).is_some_and(|n| PERIODS.contains(&n.as_str())))
            || (PERIODS.contains(&bare.as_str())
                && i > 0
                && lower(words.get(i - 1)).is_some_and(|p| RELATIVE_LEADS.contains(&p.as_str())));
        let value = quoted || is_value_word(word) || (prose && relative);
        let modifier = prose && !quoted && PROSE_MODIFIERS.contains(&bare.as_str());
        if compounds && !value {
            if let Some(w) = pascal_compound(word) {
                push(&w, false, false, true, phrase);
                continue;
            }
        }
        for_each_token(word, |t, _, _| {
            // Bare numbers inside an identifier (`get_v2_item`) are values too.
            let number = t.chars().all(|c| c.is_numeric());
            push(t, value || number, modifier, false, phrase)
        });
    }
    out
}

/// Whitespace-separated words; text between matching double quotes or backticks is one
/// quoted word (single quotes are apostrophes too often to trust).
fn words(query: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut rest = query;
    loop {
        rest = rest.trim_start();
        let Some(first) = rest.chars().next() else {
            break;
        };
        if matches!(first, '"' | '`' | '“') {
            let close = match first {
                '“' => '”',
                c => c,
            };
            let body = &rest[first.len_utf8()..];
            if let Some(end) = body.find(close) {
                out.push((&body[..end], true));
                rest = &body[end + close.len_utf8()..];
                continue;
            }
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push((&rest[..end], false));
        rest = &rest[end..];
    }
    out
}

/// `ServiceNow`, `LinkedIn`: ASCII letters only, a capital first, a lower→upper boundary
/// inside. Lowercased and joined. (`getUser`, a guessed camel-case name, starts lowercase.)
fn pascal_compound(word: &str) -> Option<String> {
    let w = word.trim_matches(|c: char| !c.is_alphanumeric());
    let w = w.strip_suffix("'s").unwrap_or(w);
    let b = w.as_bytes();
    let pascal = b.len() >= 4
        && b.iter().all(u8::is_ascii_alphabetic)
        && b[0].is_ascii_uppercase()
        && b.windows(2)
            .any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase());
    pascal.then(|| w.to_ascii_lowercase())
}

/// A whitespace word that names data rather than a tool (v2 adds dotted names, paths and slugs).
pub(crate) fn is_value_word(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '/' | '~' | '#'));
    if w.is_empty() {
        return false;
    }
    if w.contains("://") || w.starts_with("www.") || w.contains('@') {
        return true;
    }
    if w.starts_with('/') || w.starts_with("~/") || w.starts_with("./") || w.starts_with('#') {
        return true;
    }
    let letters = w.chars().any(char::is_alphabetic);
    let digits = w.chars().any(char::is_numeric);
    if digits && !letters {
        return true; // numbers, dates, times, versions
    }
    // `SVC123`, `Q3`, `PROJ-42`: letters and digits in one word. An identifier spelled with
    // its own case or separators (`get2FAStatus`, `list_v2_items`) is a guessed tool name,
    // not a value: only its bare numbers are.
    if digits && letters {
        let identifier = w.contains('_')
            || (w.chars().any(char::is_lowercase) && w.chars().any(char::is_uppercase));
        return !identifier;
    }
    false
}

/// A light English suffix stripper, applied alike to indexed and query terms, so only
/// agreement matters: `schedules`, `scheduled`, `scheduling` → `schedul`.
pub fn stem(token: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    if token.len() < 4 || !token.bytes().all(|b| b.is_ascii_lowercase()) {
        return Cow::Borrowed(token);
    }
    let mut s: &str = token;
    if let Some(b) = s.strip_suffix("ies").filter(|b| b.len() >= 2) {
        return Cow::Owned(format!("{b}y"));
    }
    if let Some(b) = s.strip_suffix("sses") {
        s = &token[..b.len() + 2];
    } else if let Some(b) = s
        .strip_suffix("es")
        .filter(|b| b.ends_with('x') || b.ends_with('z') || b.ends_with("ch") || b.ends_with("sh"))
    {
        s = b;
    } else if s.ends_with('s') && !s.ends_with("ss") && !s.ends_with("us") && !s.ends_with("is") {
        s = &s[..s.len() - 1];
    }
    let mut verb = false;
    if let Some(b) = s.strip_suffix("ing").filter(|b| b.len() >= 3) {
        s = b;
        verb = true;
    } else if let Some(b) = s.strip_suffix("ed").filter(|b| b.len() >= 4) {
        s = b;
        verb = true;
    }
    if verb {
        let b = s.as_bytes();
        let n = b.len();
        if n >= 4 && b[n - 1] == b[n - 2] && !b"aeioulsz".contains(&b[n - 1]) {
            s = &s[..n - 1]; // mapped → map, running → run
        }
    }
    if let Some(b) = s.strip_suffix('e').filter(|b| b.len() >= 3) {
        s = b;
    }
    if s.len() == token.len() {
        Cow::Borrowed(token)
    } else {
        Cow::Owned(s.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verb_classes_are_disjoint() {
        let spell = |v: &&str| stem(v).into_owned();
        let all: Vec<String> = DESTRUCTIVE_VERBS
            .iter()
            .chain(READ_VERBS)
            .chain(WRITE_VERBS)
            .map(spell)
            .collect();
        let mut distinct = all.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            all.len(),
            "a verb (or its stem) is in two classes"
        );
    }

    #[test]
    fn function_words_are_sorted_for_binary_search() {
        let mut sorted = FUNCTION_WORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, FUNCTION_WORDS);
    }

    #[test]
    fn stems_agree() {
        for (a, b) in [
            ("schedules", "schedule"),
            ("created", "create"),
            ("creating", "creates"),
            ("entries", "entry"),
            ("branches", "branch"),
            ("processes", "process"),
            ("databases", "database"),
            ("mapped", "map"),
            ("listing", "list"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("analysis"), "analysis");
        assert_eq!(stem("get"), "get");
    }

    fn roles(q: &str) -> Vec<(String, Role)> {
        analyze(q, true, true)
            .into_iter()
            .map(|t| (t.text, t.role))
            .collect()
    }

    #[test]
    fn argument_values_are_tagged() {
        use Role::*;
        let r = roles(r#"find ticket SVC123 "Q3 budget" on 2024-05-01 for me"#);
        let want = [
            ("find", Term),
            ("ticket", Term),
            ("svc", ArgumentValue),
            ("123", ArgumentValue),
            ("q", ArgumentValue),
            ("3", ArgumentValue),
            ("budget", ArgumentValue),
            ("2024", ArgumentValue),
            ("05", ArgumentValue),
            ("01", ArgumentValue),
            ("on", FunctionWord),
            ("for", FunctionWord),
            ("me", FunctionWord),
        ];
        let got: Vec<_> = r.iter().map(|(t, r)| (t.as_str(), *r)).collect();
        for w in want {
            assert!(got.contains(&w), "{w:?} missing in {got:?}");
        }
        let r = roles("get2FAStatus list_v2_items https://x.io/a a@b.co");
        assert_eq!(r[0], ("get".into(), Term));
        assert_eq!(r[1], ("2".into(), ArgumentValue));
        assert_eq!(r[2], ("fa".into(), Term));
        assert!(r[4..].iter().any(|(t, r)| t == "items" && *r == Term));
        assert!(r[4..].iter().any(|(t, r)| t == "v" && *r == FunctionWord));
        assert!(r.iter().any(|(t, r)| t == "io" && *r == ArgumentValue));
        assert!(r.iter().any(|(t, r)| t == "co" && *r == ArgumentValue));
    }

    #[test]
    fn unterminated_quote_is_a_plain_word() {
        assert_eq!(roles("\"open")[0], ("open".into(), Role::Term));
    }
}
