//! The one tokenizer every field and every query goes through.
//!
//! Tool names arrive as `snake_case`, `kebab-case`, `camelCase` or prose, and a model guesses
//! names in whichever style it likes, so all styles must give the same tokens: otherwise a guess
//! in the "wrong" case would silently score nothing. Rules (SPEC §7): lowercase; split on every
//! non-alphanumeric character, on a lower→upper camel-case boundary and on a letter↔digit
//! boundary. One addition: an acronym ends before its last capital when a lowercase letter
//! follows (`HTTPServer` → `http`, `server`), so an acronym inside a camel-case name splits the
//! same way its snake-case spelling does.
//!
//! It is total: any `&str` (any Unicode) gives tokens, never a panic.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Lower,
    Upper,
    /// Alphabetic without case (CJK, Arabic, …).
    Caseless,
    Digit,
    Separator,
}

fn class(c: char) -> Class {
    if c.is_lowercase() {
        Class::Lower
    } else if c.is_uppercase() {
        Class::Upper
    } else if c.is_alphabetic() {
        Class::Caseless
    } else if c.is_numeric() {
        Class::Digit
    } else {
        Class::Separator
    }
}

fn is_letter(c: Class) -> bool {
    matches!(c, Class::Lower | Class::Upper | Class::Caseless)
}

/// Calls `emit` with each token of `text`, in order (duplicates included).
///
/// `emit` receives the lowercased token; `start..end` is its byte range in `text`.
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str, usize, usize)) {
    let mut token = String::new();
    let mut start = 0;
    let mut prev = Class::Separator;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let cls = class(c);
        let next = chars.peek().map(|&(_, n)| class(n));
        let boundary = match (prev, cls) {
            (_, Class::Separator) => true,
            (Class::Lower, Class::Upper) => true,
            (Class::Upper, Class::Upper) => next == Some(Class::Lower),
            (Class::Digit, c) if is_letter(c) => true,
            (p, Class::Digit) if is_letter(p) => true,
            _ => false,
        };
        if boundary && !token.is_empty() {
            emit(&token, start, at);
            token.clear();
        }
        if cls != Class::Separator {
            if token.is_empty() {
                start = at;
            }
            // Most tool text is ASCII: its lowercase is one char, without the iterator.
            if c.is_ascii() {
                token.push(c.to_ascii_lowercase());
            } else {
                token.extend(c.to_lowercase());
            }
        }
        prev = cls;
    }
    if !token.is_empty() {
        emit(&token, start, text.len());
    }
}

/// The tokens of `text`, in order, duplicates included.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t, _, _| out.push(t.to_owned()));
    out
}

#[cfg(test)]
mod tests {
    use super::tokenize;

    #[test]
    fn naming_styles_agree() {
        let want = ["list", "all", "cal", "com", "schedules"];
        assert_eq!(tokenize("listAllCalComSchedules"), want);
        assert_eq!(tokenize("list_all_cal_com_schedules"), want);
        assert_eq!(tokenize("list-all-cal-com-schedules"), want);
        assert_eq!(tokenize("ListAllCalComSchedules"), want);
    }

    #[test]
    fn digits_and_acronyms_split() {
        assert_eq!(tokenize("get2FAStatus"), ["get", "2", "fa", "status"]);
        assert_eq!(tokenize("HTTPServer"), ["http", "server"]);
        assert_eq!(
            tokenize("oauth2Token v12"),
            ["oauth", "2", "token", "v", "12"]
        );
        assert_eq!(tokenize("SVC123"), ["svc", "123"]);
    }

    #[test]
    fn unicode_is_total() {
        assert_eq!(tokenize("Ünïcödé façade"), ["ünïcödé", "façade"]);
        assert_eq!(tokenize("使用必应搜索"), ["使用必应搜索"]);
        assert!(tokenize("").is_empty());
        assert!(tokenize(" _-./ ").is_empty());
        // İ lowercases to two chars; ẞ to ß.
        assert_eq!(tokenize("İSTANBUL"), ["i\u{307}stanbul"]);
    }
}
