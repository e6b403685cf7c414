//! Stage 1, query analysis: what each word of a request *is* before anything is scored.
//!
//! A request mixes three things: the capability it asks for (`create an incident`), the data it
//! acts on (`"db down"`, `SVC123`, `shop.orders`, `the database named zorblax`) and grammar.
//! Only the first can tell tools apart. This stage marks the data (values) and the grammar (stop
//! words), and splits a prose request into its head (the action and its object) and its tail
//! (what follows the first preposition or clause word: mostly how to call the tool).
//! It needs nothing but the text: what the pool and the directory know is the mass stage's job.

use super::text::{is_common_word, is_stop_word, stem_remembered};
use crate::tokenize::for_each_token;
use serde::Serialize;

/// Words after which the next word is a name the caller chose (`a project named zorblax`).
/// Closed-class English: verbs of naming.
/// Only participles: `name` or `title` alone is as often the field a request asks about.
pub const NAMING_MARKERS: &[&str] = &["called", "labeled", "labelled", "named", "titled"];

/// The object pronouns of the one asking (closed class): a common verb right before one of them
/// frames a request (`show me`, `give us`, `tell me`) rather than naming what a tool does.
pub const REQUESTER_PRONOUNS: &[&str] = &["me", "us"];

/// English interrogatives (closed class): a request opening with one asks a question, which
/// reads (`who is on schedule SCHED123?`). `how` asks one only as `how many` or `how much`:
/// `how do I make a page` asks how to act.
pub const INTERROGATIVES: &[&str] = &[
    "what", "when", "where", "which", "who", "whom", "whose", "why",
];
/// The words after `how` that make it ask for a quantity (`how many incidents are open?`).
pub const HOW_QUANTITY: &[&str] = &["many", "much"];

/// English prepositions and subordinating words: a closed word class (any grammar lists it),
/// where a request's head ends.
pub const HEAD_ENDS: &[&str] = &[
    "about", "above", "across", "after", "against", "along", "among", "around", "as", "at",
    "because", "before", "behind", "below", "beneath", "beside", "between", "beyond", "by",
    "during", "except", "for", "from", "if", "in", "inside", "into", "like", "near", "of", "off",
    "on", "onto", "over", "per", "since", "so", "than", "that", "through", "to", "toward",
    "towards", "under", "unless", "until", "upon", "via", "whether", "which", "while", "who",
    "whom", "whose", "with", "within", "without",
];

/// What a query token is, as far as the text alone tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A word that may name a capability (the mass stage decides).
    Word,
    /// An English stop word or a lone letter.
    StopWord,
    /// Data the request acts on: quoted text, numbers, ids, dotted names, URLs, e-mails, paths,
    /// the word after a naming verb.
    Value,
    /// A naming verb (`named`, `titled`): it introduces a value.
    Marker,
    /// A common English verb framing a request to the one asking (`show` of `show me`).
    Frame,
}

/// One token of the query.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryToken {
    /// The lowercase token as written.
    pub text: String,
    /// The Snowball stem (what fields are matched on).
    pub term: String,
    pub kind: Kind,
    /// In the tail of a prose request (after its first preposition or clause word).
    pub tail: bool,
    /// Written as a name: with a capital where no sentence starts (`resolve it in Close`, not
    /// `Close the incident`), or part of a one-identifier query. A product whose name is an
    /// ordinary word is named only so.
    pub as_name: bool,
    /// A naming verb's value, quoted or not: the name the caller gives a thing (`a page titled
    /// "Slack migration"`, `named slack-notes`), which never names the product to use. Other
    /// quoted text may (`the org 'sentry-mcp-evals'` is the caller's Sentry organisation).
    pub argument: bool,
}

impl QueryToken {
    /// A past participle or past tense by its form: five letters or more ending in `-ed`, which
    /// the stemmer strips (`created`, `saved`; not `need`, `speed`). A few words the stemmer
    /// strips too are taken for one (`embed`), which only halves their mass.
    pub fn is_participle(&self) -> bool {
        self.text.len() > 4 && self.text.ends_with("ed") && self.term.len() < self.text.len()
    }
}

/// The analysed query: its tokens in order, and whether it is prose or one identifier
/// (a guessed tool name like `list_all_cal_com_schedules`).
#[derive(Clone, Debug)]
pub struct Analysis {
    pub tokens: Vec<QueryToken>,
    pub prose: bool,
}

impl Analysis {
    /// Whether the request opens with an interrogative: a question asks to be told.
    pub fn is_question(&self) -> bool {
        // Tokens are lowercase as analysed.
        let word = |i: usize| self.tokens.get(i).map(|t| t.text.as_str());
        match word(0) {
            Some("how") => word(1).is_some_and(|w| HOW_QUANTITY.contains(&w)),
            Some(first) => INTERROGATIVES.contains(&first),
            None => false,
        }
    }

    /// The distinct terms of the query that are words, each once (first occurrence wins, but a
    /// head occurrence beats a tail one).
    pub fn distinct(&self) -> Vec<&QueryToken> {
        self.distinct_at()
            .into_iter()
            .map(|i| &self.tokens[i])
            .collect()
    }

    /// [`Analysis::distinct`] as positions in `tokens`.
    pub fn distinct_at(&self) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for (i, t) in self.tokens.iter().enumerate() {
            match out.iter_mut().find(|o| self.tokens[**o].term == t.term) {
                Some(o) => {
                    let kept = &self.tokens[*o];
                    if kept.kind != Kind::Word && t.kind == Kind::Word || kept.tail && !t.tail {
                        *o = i;
                    }
                }
                None => out.push(i),
            }
        }
        out
    }
}

/// Stage 1: analyse a query.
pub fn analyze(query: &str) -> Analysis {
    let words = words(query);
    let prose = words.len() > 1;
    let mut tokens = Vec::new();
    let mut tail = false;
    let mut seen_word = false;
    let mut after_marker = false;
    let mut sentence_starts = true;
    for (word, quoted) in words {
        let capital = word
            .chars()
            .find(|c| c.is_alphanumeric())
            .is_some_and(char::is_uppercase);
        let as_name = !prose || capital && !sentence_starts;
        sentence_starts = without_closers(word).ends_with(['.', '!', '?', ':', ';']);
        let bare = bare(word);
        let marker = prose && !quoted && NAMING_MARKERS.contains(&bare.as_str());
        // A naming verb's value is the next word that is not a stop word (`named the zorblax`).
        let named_value = after_marker && !is_stop_word(&bare);
        if prose && !quoted && seen_word && HEAD_ENDS.contains(&bare.as_str()) {
            tail = true;
        }
        let value = quoted || named_value || is_value_word(word, prose);
        for_each_token(word, |t, _, _| {
            let number = t.chars().all(char::is_numeric);
            let kind = if value || number {
                Kind::Value
            } else if marker {
                Kind::Marker
            } else if is_stop_word(t) {
                Kind::StopWord
            } else {
                Kind::Word
            };
            seen_word |= kind == Kind::Word;
            tokens.push(QueryToken {
                text: t.to_owned(),
                term: stem_remembered(t),
                kind,
                tail: tail && prose,
                as_name,
                argument: named_value,
            });
        });
        if named_value || quoted {
            after_marker = false;
        }
        after_marker |= marker;
    }
    mark_frames(&mut tokens);
    Analysis { tokens, prose }
}

/// A common word right before a requester pronoun frames the request (`show me my teams`): it
/// says the asker wants something back, not which tool gives it. Only common words (Stopwords
/// ISO): `email me the report` still asks for e-mail.
fn mark_frames(tokens: &mut [QueryToken]) {
    for i in 1..tokens.len() {
        let (before, after) = tokens.split_at_mut(i);
        let verb = &mut before[i - 1];
        if verb.kind == Kind::Word
            && REQUESTER_PRONOUNS.contains(&after[0].text.as_str())
            && is_common_word(&verb.text)
        {
            verb.kind = Kind::Frame;
        }
    }
}

/// Words that join the steps of a task (`find the repos and summarize them`, `…, then save
/// it`): the English coordinators of addition and sequence, a closed class.
pub const STEP_JOINS: &[&str] = &["and", "then"];

/// The steps of a task: its sentences (words ending in `.`, `!`, `?` or `;`, so
/// `www.baidu.com` and `3.5` end none) and, with `clauses`, each sentence's clauses: a comma
/// or a joining word (dropped) ends one (`find the repos and summarize them`). Quoted text is
/// one word and never split. Each step is a slice of the query, the empty ones dropped.
pub fn steps(query: &str, clauses: bool) -> Vec<&str> {
    struct Word {
        start: usize,
        end: usize,
        quoted: bool,
        bare: String,
    }
    let words: Vec<Word> = words(query)
        .into_iter()
        .map(|(word, quoted)| {
            let mut start = word.as_ptr() as usize - query.as_ptr() as usize;
            let mut end = start + word.len();
            if quoted {
                // The quotes belong to the step: they make the value a value.
                start -= query[..start].chars().next_back().map_or(0, char::len_utf8);
                end += query[end..].chars().next().map_or(0, char::len_utf8);
            }
            let bare = bare(word);
            Word {
                start,
                end,
                quoted,
                bare,
            }
        })
        .collect();
    let mut out = Vec::new();
    let mut span: Option<(usize, usize)> = None;
    let mut close = |span: &mut Option<(usize, usize)>| {
        if let Some((a, b)) = span.take() {
            let step = query[a..b].trim();
            if step.chars().any(char::is_alphanumeric) {
                out.push(step);
            }
        }
    };
    for w in &words {
        if clauses && !w.quoted && STEP_JOINS.contains(&w.bare.as_str()) {
            close(&mut span);
            continue;
        }
        span = Some((span.map_or(w.start, |(a, _)| a), w.end));
        let text = without_closers(&query[w.start..w.end]);
        let sentence_ends = text.ends_with(['.', '!', '?', ';']);
        if !w.quoted && (sentence_ends || clauses && text.ends_with(',')) {
            close(&mut span);
        }
    }
    close(&mut span);
    out
}

/// A word without what closes it (quotes, brackets): where its own punctuation shows.
fn without_closers(word: &str) -> &str {
    word.trim_end_matches(['"', '\'', ')', ']', '”', '’'])
}

/// A word lowercased, without the punctuation around it.
fn bare(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

/// Whitespace-separated words; text between matching quotes of either kind (`"`, `` ` ``,
/// curly quotes, and `'` when it opens a word and a later word closes it) is one quoted word.
fn words(query: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut rest = query;
    loop {
        rest = rest.trim_start();
        let Some(first) = rest.chars().next() else {
            break;
        };
        let close = match first {
            '"' | '`' => Some(first),
            '“' => Some('”'),
            '‘' => Some('’'),
            '\'' => Some('\''),
            _ => None,
        };
        if let Some(close) = close {
            let body = &rest[first.len_utf8()..];
            // A closing quote ends a word: followed by whitespace, punctuation or the end.
            let end = body.char_indices().find(|&(i, c)| {
                c == close
                    && body[i + c.len_utf8()..]
                        .chars()
                        .next()
                        .is_none_or(|n| !n.is_alphanumeric())
            });
            if let Some((end, _)) = end.filter(|&(e, _)| e > 0) {
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

/// A whitespace word that names data rather than a capability.
pub(crate) fn is_value_word(word: &str, prose: bool) -> bool {
    let w = word.trim_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '/' | '~' | '#'));
    // URLs, e-mails, paths, numbers and ids like `SVC123`: the first ranker's shapes. A query
    // of one kebab-case identifier is a guessed tool name (`get-neo4j-schema`), as one in snake
    // or camel case is: only its bare numbers are values.
    if crate::rank::analyze::is_value_word(word) {
        return prose || !is_kebab_identifier(w);
    }
    let between = |sep: u8| {
        w.as_bytes()
            .windows(3)
            .any(|p| p[1] == sep && p[0].is_ascii_alphanumeric() && p[2].is_ascii_alphanumeric())
    };
    // `shop.orders`, `report.pdf`, `api.example.com`: a dot between alphanumerics. In prose,
    // `org/project` (a slash between words) and `sentry-mcp-evals` (three or more hyphenated
    // parts) are paths and slugs; a query of one such word is a guessed tool name.
    between(b'.') || prose && (between(b'/') || w.split('-').filter(|p| !p.is_empty()).count() >= 3)
}

/// Words joined by hyphens, at least two of them all letters (`v-2-get-participants`), and
/// nothing else: not `PROJ-42` (one word and a number), a UUID or a path. `w` is trimmed of
/// the punctuation around it.
fn is_kebab_identifier(w: &str) -> bool {
    let parts = || w.split('-');
    w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && parts().all(|p| !p.is_empty())
        && parts()
            .filter(|p| p.bytes().all(|b| b.is_ascii_alphabetic()))
            .count()
            >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(q: &str) -> Vec<(String, Kind, bool)> {
        analyze(q)
            .tokens
            .into_iter()
            .map(|t| (t.text, t.kind, t.tail))
            .collect()
    }

    fn kind_of(q: &str, token: &str) -> Kind {
        kinds(q)
            .into_iter()
            .find(|(t, _, _)| t == token)
            .unwrap_or_else(|| panic!("{token} not in {q}"))
            .1
    }

    #[test]
    fn a_past_participle_is_known_by_its_form() {
        let participles = |q: &str| -> Vec<String> {
            analyze(q)
                .tokens
                .iter()
                .filter(|t| t.is_participle())
                .map(|t| t.text.clone())
                .collect()
        };
        assert_eq!(
            participles("list issues created or assigned to me"),
            ["created", "assigned"]
        );
        assert!(participles("we need the shed at speed").is_empty());
    }

    #[test]
    fn a_request_opening_with_an_interrogative_is_a_question() {
        for q in [
            "Who is on schedule SCHED123?",
            "what's open",
            "How many teams are there",
        ] {
            assert!(analyze(q).is_question(), "{q}");
        }
        for q in [
            "List the teams who are on call",
            "show me what changed",
            "",
            "delete it?",
            "how do I make a new page?",
        ] {
            assert!(!analyze(q).is_question(), "{q}");
        }
    }

    #[test]
    fn a_common_verb_before_me_or_us_frames_the_request() {
        assert_eq!(kind_of("Show me my teams", "show"), Kind::Frame);
        assert_eq!(
            kind_of("can you give us the open incidents", "give"),
            Kind::Frame
        );
        // Not before a requester pronoun, or not a common word: a capability may be asked for.
        assert_eq!(kind_of("show all open incidents", "show"), Kind::Word);
        assert_eq!(kind_of("email me the weekly report", "email"), Kind::Word);
        assert_eq!(kind_of("show them the dashboard", "show"), Kind::Word);
    }

    #[test]
    fn values_of_every_shape_are_marked() {
        let q = r#"find SVC123 "Q3 budget" 'API Alerts' shop.orders report.pdf 2024-05-01 a@b.co https://x.io/a acme/web my-org-slug"#;
        for t in [
            "svc", "123", "q", "budget", "api", "alerts", "shop", "orders", "report", "pdf",
            "2024", "b", "co", "x", "io", "acme", "web", "my", "org", "slug",
        ] {
            assert_eq!(kind_of(q, t), Kind::Value, "{t}");
        }
        assert_eq!(kind_of(q, "find"), Kind::Word);
        assert_eq!(kind_of("set up on-call escalation", "call"), Kind::Word);
    }

    #[test]
    fn the_word_after_a_naming_verb_is_a_value() {
        assert_eq!(
            kind_of("drop the database named zorblax", "zorblax"),
            Kind::Value
        );
        assert_eq!(
            kind_of("drop the database named zorblax", "named"),
            Kind::Marker
        );
        assert_eq!(
            kind_of("a project called the zorblax", "zorblax"),
            Kind::Value
        );
        assert_eq!(
            kind_of("create an issue titled \"db down\"", "db"),
            Kind::Value
        );
        assert_eq!(kind_of("list names", "names"), Kind::Word);
    }

    #[test]
    fn apostrophes_are_not_quotes() {
        assert_eq!(kind_of("show the user's open tickets", "open"), Kind::Word);
        assert_eq!(kind_of("don't delete 'prod' now", "prod"), Kind::Value);
        assert_eq!(kind_of("don't delete 'prod' now", "delete"), Kind::Word);
    }

    #[test]
    fn the_head_ends_at_the_first_preposition_after_a_word() {
        let k = kinds("create a firewall rule to block access from the office");
        let tail: Vec<&str> = k.iter().filter(|t| t.2).map(|t| t.0.as_str()).collect();
        assert_eq!(tail, ["to", "block", "access", "from", "the", "office"]);
        // A leading preposition does not end an empty head.
        let k = kinds("for my team list open incidents");
        assert!(k.iter().all(|t| !t.2));
    }

    #[test]
    fn an_identifier_has_no_tail_and_no_marker() {
        let a = analyze("list_all_cal_com_schedules");
        assert!(!a.prose);
        assert!(a.tokens.iter().all(|t| !t.tail));
        assert_eq!(kind_of("get_user_by_name", "name"), Kind::Word);
        assert_eq!(kind_of("list_v2_items", "items"), Kind::Word);
        // Kebab case too: a guessed name is not an id for the number in it.
        assert_eq!(kind_of("get-neo4j-schema", "schema"), Kind::Word);
        assert_eq!(kind_of("v-2-get-participants", "get"), Kind::Word);
        assert_eq!(kind_of("v-2-get-participants", "2"), Kind::Value);
        // Ids stay values alone and in prose.
        assert_eq!(kind_of("PROJ-42", "proj"), Kind::Value);
        assert_eq!(kind_of("123e4567-e89b-12d3", "e"), Kind::Value);
        assert_eq!(kind_of("explain CLOUDFLARE-MCP-41 now", "mcp"), Kind::Value);
        assert_eq!(
            kind_of("https://a.example/get-v2-items", "items"),
            Kind::Value
        );
    }

    #[test]
    fn a_capital_marks_a_name_only_where_no_sentence_starts() {
        let as_name = |q: &str| -> Vec<String> {
            let a = analyze(q);
            a.tokens
                .into_iter()
                .filter(|t| t.as_name)
                .map(|t| t.text)
                .collect()
        };
        assert_eq!(as_name("Close the lead in Close"), ["close"]);
        assert_eq!(
            as_name("List my leads. Close the first one"),
            Vec::<String>::new()
        );
        assert_eq!(as_name("send it with Fetch: now"), ["fetch"]);
        assert_eq!(as_name("ask PagerDuty"), ["pager", "duty"]);
        // One identifier is a guessed tool name: its words may be names, whatever their case.
        assert_eq!(as_name("close_list_leads"), ["close", "list", "leads"]);
    }

    #[test]
    fn steps_are_sentences_and_clauses_never_inside_quotes() {
        let q = "Find the trending repos. For the top one, read www.example.com/a.md! Then save v3.5; done?";
        assert_eq!(
            steps(q, false),
            [
                "Find the trending repos.",
                "For the top one, read www.example.com/a.md!",
                "Then save v3.5;",
                "done?"
            ]
        );
        assert_eq!(
            steps(q, true),
            [
                "Find the trending repos.",
                "For the top one,",
                "read www.example.com/a.md!",
                "save v3.5;",
                "done?"
            ]
        );
        let q = r#"create an incident titled "db down, and read it" and page the on-call"#;
        assert_eq!(
            steps(q, true),
            [
                r#"create an incident titled "db down, and read it""#,
                "page the on-call"
            ]
        );
        // A run of joining words and commas is one boundary.
        let q = "list the incidents and alerts, with their status, and then summarize them";
        assert_eq!(
            steps(q, true),
            [
                "list the incidents",
                "alerts,",
                "with their status,",
                "summarize them"
            ]
        );
        assert_eq!(steps("list incidents", true), ["list incidents"]);
        assert_eq!(steps(" . , ! and ", true), Vec::<&str>::new());
    }

    #[test]
    fn distinct_prefers_a_head_word_occurrence() {
        let a = analyze("list incidents for the incidents team");
        let d = a.distinct();
        let inc = d.iter().find(|t| t.text == "incidents").unwrap();
        assert!(!inc.tail);
    }
}
