//! The prepared pool: per term, which tools have it in which field.
//!
//! Built once per catalog version. A query touches only its own terms' postings and filters them
//! through the caller's visible set, so df, N and IDF are the caller's alone. The connector
//! directory is an index of the same shape, used only as public knowledge (which words name a
//! capability somewhere, which words name a product).

use std::collections::HashMap;
use std::sync::Arc;

use super::query::is_value_word;
use super::text::{
    is_stop_word, schema_text, stem, stem_remembered, terms, terms_cached, StemCache,
};
use crate::rank::ToolDoc;

pub type DocId = u32;
pub type TermId = u32;

/// The fields a term can match in, as bits of one byte (the scorer's record).
pub mod field {
    /// A name token equal to the term.
    pub const NAME_EXACT: u8 = 1;
    /// A name token and the term, one a prefix of the other (see `MIN_PREFIX_LEN`).
    pub const NAME_PREFIX: u8 = 2;
    /// A connector-label token.
    pub const LABEL: u8 = 4;
    /// A parameter name at any depth of the `inputSchema`.
    pub const PARAM: u8 = 8;
    /// The description, or the prose of the schema (descriptions, titles, enum values).
    pub const PROSE: u8 = 16;
    /// A name token spelled exactly as the query word (`settings`, not only its stem).
    pub const NAME_SURFACE: u8 = 32;
    /// The fields that say what a tool *is* rather than describe it.
    pub const STRUCTURAL: u8 = NAME_EXACT | NAME_PREFIX | LABEL | PARAM | NAME_SURFACE;
}

/// Terms sorted by text, each with `K` posting lists, in flat arrays: a compiled index is read
/// into them with no allocation per term; a term is found through a hash table of its id, and
/// the sorted order serves prefix scans.
#[derive(Default)]
pub(super) struct Terms<const K: usize> {
    text: String,
    /// Per term, where its text ends in `text` (it starts where the previous one ends).
    text_ends: Vec<u32>,
    /// Per term and list, where the list ends in `ids`.
    list_ends: Vec<u32>,
    ids: Vec<DocId>,
    /// An open-addressing table of term ids by a hash of their text (`EMPTY_SLOT` where none),
    /// a power of two at least twice the terms: a lookup is one hash and about one compare,
    /// where the binary search took a dozen. Built once by [`Terms::index_slots`].
    slots: Vec<u32>,
}

const EMPTY_SLOT: u32 = u32::MAX;

/// FNV-1a, 64 bits: the index's hash of term and name texts and of the tools a compiled index
/// was built for. Not for anything an attacker can aim collisions at to cost more than a probe.
pub(super) struct Fnv(pub(super) u64);

impl Fnv {
    pub(super) fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub(super) fn eat(&mut self, b: u8) {
        self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }

    pub(super) fn eat_all(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.eat(b));
    }
}

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv::new()
    }
}

impl std::hash::Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        self.eat_all(bytes);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The index's maps of label texts and pieces: keys come from catalogs and the directory
/// (never from a request, which only looks up), so SipHash's flooding guard buys nothing, and
/// FNV hashes a short word several times faster (label lookups are a query's products stage).
type FnvMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// The slot table's hash of a term.
fn term_hash(text: &str) -> u64 {
    let mut h = Fnv::new();
    h.eat_all(text.as_bytes());
    h.0
}

/// The lists of a term of the pool, in this order.
pub(super) const NAME_LIST: usize = 0;
pub(super) const LABEL_LIST: usize = 1;
pub(super) const PARAM_LIST: usize = 2;
pub(super) const PROSE_LIST: usize = 3;

impl<const K: usize> Terms<K> {
    pub(super) fn len(&self) -> usize {
        self.text_ends.len()
    }

    pub(super) fn text(&self, t: TermId) -> &str {
        let t = t as usize;
        let start = if t == 0 { 0 } else { self.text_ends[t - 1] };
        &self.text[start as usize..self.text_ends[t] as usize]
    }

    pub(super) fn find(&self, term: &str) -> Option<TermId> {
        // Every constructor ends with `index_slots`; only an empty `Terms` has no table.
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = term_hash(term) as usize & mask;
        loop {
            match self.slots[i] {
                EMPTY_SLOT => return None,
                t if self.text(t) == term => return Some(t),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Builds the lookup table once every term is in.
    pub(super) fn index_slots(&mut self) {
        let size = (self.len() * 2).next_power_of_two().max(2);
        let mut slots = vec![EMPTY_SLOT; size];
        let mask = size - 1;
        for t in 0..self.len() as TermId {
            let mut i = term_hash(self.text(t)) as usize & mask;
            while slots[i] != EMPTY_SLOT {
                i = (i + 1) & mask;
            }
            slots[i] = t;
        }
        self.slots = slots;
    }

    pub(super) fn list(&self, t: TermId, k: usize) -> &[DocId] {
        let i = t as usize * K + k;
        let start = if i == 0 { 0 } else { self.list_ends[i - 1] };
        &self.ids[start as usize..self.list_ends[i] as usize]
    }

    /// Terms from their parts as a compiled index stores them, already checked: `text` the
    /// terms' text in order, `text_ends` where each ends in it (char boundaries, ascending
    /// terms), `list_ends` where each of the `K` lists of each term ends in `ids`.
    pub(super) fn from_parts(
        text: String,
        text_ends: Vec<u32>,
        list_ends: Vec<u32>,
        ids: Vec<DocId>,
    ) -> Terms<K> {
        debug_assert_eq!(list_ends.len(), text_ends.len() * K);
        let mut terms = Terms {
            text,
            text_ends,
            list_ends,
            ids,
            slots: Vec::new(),
        };
        terms.index_slots();
        terms
    }

    /// Appends a term after every term so far; false (and nothing appended) when it does not
    /// sort after the last one. Its lists follow with [`Terms::push_list`], `K` of them.
    pub(super) fn push_term(&mut self, text: &str) -> bool {
        if let Some(last) = self.len().checked_sub(1) {
            if self.text(last as TermId) >= text {
                return false;
            }
        }
        self.text.push_str(text);
        self.text_ends.push(self.text.len() as u32);
        true
    }

    pub(super) fn push_list(&mut self, ids: impl IntoIterator<Item = DocId>) {
        self.ids.extend(ids);
        self.end_list();
    }

    pub(super) fn end_list(&mut self) {
        self.list_ends.push(self.ids.len() as u32);
    }

    pub(super) fn reserve(&mut self, terms: usize) {
        self.text_ends.reserve_exact(terms);
        self.list_ends.reserve_exact(terms * K);
    }

    fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.text_ends.shrink_to_fit();
        self.list_ends.shrink_to_fit();
        self.ids.shrink_to_fit();
    }

    fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + (self.text_ends.capacity() + self.list_ends.capacity()) * 4
            + (self.ids.capacity() + self.slots.capacity()) * 4
    }
}

/// Terms and their lists as a build finds them (any order), then sorted into [`Terms`].
struct TermsBuilder<const K: usize> {
    dict: HashMap<Box<str>, usize>,
    lists: Vec<[Vec<DocId>; K]>,
}

impl<const K: usize> TermsBuilder<K> {
    fn new() -> TermsBuilder<K> {
        TermsBuilder {
            dict: HashMap::new(),
            lists: Vec::new(),
        }
    }

    fn list(&mut self, term: &str, k: usize) -> &mut Vec<DocId> {
        let next = self.lists.len();
        let t = match self.dict.get(term) {
            Some(&t) => t,
            None => {
                self.dict.insert(term.into(), next);
                self.lists.push(std::array::from_fn(|_| Vec::new()));
                next
            }
        };
        &mut self.lists[t][k]
    }

    fn finish(self) -> Terms<K> {
        let mut sorted: Vec<(Box<str>, usize)> = self.dict.into_iter().collect();
        sorted.sort_unstable();
        let mut terms = Terms::default();
        terms.reserve(sorted.len());
        for (text, t) in sorted {
            terms.push_term(&text);
            for k in 0..K {
                terms.push_list(self.lists[t][k].iter().copied());
            }
        }
        terms.shrink_to_fit();
        terms.index_slots();
        terms
    }
}

/// Whether `text` is one of `forms`, or one with a plural `s` added or dropped.
fn spelled_as(forms: &[String], text: &str) -> bool {
    let plural_of = |one: &str, many: &str| {
        many.len() == one.len() + 1 && many.starts_with(one) && many.ends_with('s')
    };
    forms
        .iter()
        .any(|w| w == text || plural_of(w, text) || plural_of(text, w))
}

/// A connector label and the words a query must hold to name it: its words (shared by every
/// index of the isolate that has the label, [`LabelWords::remembered`]) and what this index's
/// tools say of them.
#[derive(Clone, Debug)]
pub struct Label {
    shared: Arc<LabelWords>,
    /// Every word of the label is also an ordinary word of other products' tool names or
    /// parameters (`Close`: `close_issue`; `Database server`: `list_databases`, `server_info`):
    /// a request names it only where it writes it as a name (`QueryToken::as_name`) or, for a
    /// label of several words, as the phrase. Set by [`Index::finish`] from the index's own text.
    pub ordinary: bool,
}

impl std::ops::Deref for Label {
    type Target = LabelWords;
    fn deref(&self) -> &LabelWords {
        &self.shared
    }
}

/// What a label's text alone gives: the same for every catalog and the directory, so worked out
/// once per isolate and label rather than once per index.
#[derive(Debug)]
pub struct LabelWords {
    pub text: String,
    /// Per word of the label (a word of stop words alone dropped): its whole stemmed form and
    /// its parts, stop words among them (`what`, `app` of `WhatsApp`).
    pub words: Vec<(String, Vec<String>)>,
    /// The label's words and their punctuation-separated pieces (`cal`, `com` of `Cal.com`), as
    /// terms; not the camel-case parts of a compound (`open` of `OpenRouter` names nothing).
    pieces: Vec<String>,
    /// Per word of `words`, how a query token may spell it: the word run together
    /// (`pagerduty`) and its lowercase tokens (`pager`, `duty`). A product's name does not
    /// inflect, so `closed` names no `Close` though both stem to `close`.
    spelled: Vec<Vec<String>>,
}

/// How many labels [`LabelWords::remembered`] keeps per thread (then forgets at once): the
/// directory's and its tenants' products, with room to spare; no catalog can grow it further.
pub const LABELS_KEPT: usize = 1024;

thread_local! {
    static REMEMBERED_LABELS: std::cell::RefCell<FnvMap<Box<str>, Arc<LabelWords>>> =
        std::cell::RefCell::new(FnvMap::default());
}

impl Label {
    fn new(text: &str) -> Label {
        Label {
            shared: LabelWords::remembered(text),
            ordinary: false,
        }
    }
}

impl LabelWords {
    /// [`LabelWords::new`], remembered per thread: tenants connect the same products, and
    /// reading a label's words (tokens, stems, pieces) cost more than the rest of reading a
    /// compiled index's connectors.
    fn remembered(text: &str) -> Arc<LabelWords> {
        REMEMBERED_LABELS.with_borrow_mut(|kept| {
            if let Some(words) = kept.get(text) {
                return words.clone();
            }
            if kept.len() >= LABELS_KEPT {
                kept.clear();
            }
            let words = Arc::new(LabelWords::new(text));
            kept.insert(text.into(), words.clone());
            words
        })
    }

    fn new(text: &str) -> LabelWords {
        let mut words = Vec::new();
        let mut pieces = Vec::new();
        let mut spelled = Vec::new();
        for word in text.split(|c: char| c.is_whitespace() || c == '/' || c == '(' || c == ')') {
            let mut parts = Vec::new();
            terms(word, false, &mut parts);
            // A word of stop words alone is no name; one that has other parts keeps them all,
            // so `app` alone does not spell `WhatsApp` (`whats|app`), nor `cook` `HowToCook`.
            if parts.iter().all(|p| is_stop_word(p)) {
                continue;
            }
            let whole: String = {
                let mut t = Vec::new();
                crate::tokenize::for_each_token(word, |tok, _, _| t.push(tok.to_owned()));
                let run_together = t.concat();
                let whole = stem_remembered(&run_together);
                t.insert(0, run_together);
                spelled.push(t);
                whole
            };
            for piece in word.split(|c: char| !c.is_alphanumeric()) {
                let mut t = Vec::new();
                crate::tokenize::for_each_token(piece, |tok, _, _| t.push(tok.to_owned()));
                let piece = stem_remembered(&t.concat());
                if !piece.is_empty() && !is_stop_word(&piece) {
                    pieces.push(piece);
                }
            }
            pieces.push(whole.clone());
            words.push((whole, parts));
        }
        LabelWords {
            text: text.to_owned(),
            words,
            pieces,
            spelled,
        }
    }

    /// Whether a query token written `text` (lowercase) spells a word of the label: as written,
    /// or with a plural `s` added or dropped (`google calendars`, `google doc` for `Google
    /// Docs`); no other inflection (`closed`, `generate` for `Report generation`).
    pub fn spelled_by(&self, text: &str) -> bool {
        (0..self.spelled.len()).any(|k| self.word_spelled_by(k, text))
    }

    /// Whether `text` spells a whole word of the label (`monday.com`, `google`), not only a
    /// piece of one (`monday`).
    pub fn word_spelled_whole(&self, text: &str) -> bool {
        self.spelled
            .iter()
            .any(|forms| spelled_as(&forms[..1], text))
    }

    fn word_spelled_by(&self, k: usize, text: &str) -> bool {
        spelled_as(&self.spelled[k], text)
    }

    /// Whether the query token at `at` (of the query's tokens as written, `texts`) is part of
    /// the label's words in a row, in the label's order, one token each (`database server`,
    /// `microsoft teams`). Only a label of several words has such a phrase.
    pub fn in_phrase(&self, texts: &[&str], at: usize) -> bool {
        let n = self.spelled.len();
        n > 1
            && (at.saturating_sub(n - 1)..=at)
                .filter(|&start| start + n <= texts.len())
                .any(|start| (0..n).all(|k| self.word_spelled_by(k, texts[start + k])))
    }

    /// Whether every word of `other` is a word of this label, or a punctuation-separated piece
    /// of one (`Slack internal bot` and `slack-bridge` have all of `Slack`'s): a connector so
    /// labelled is that product, as its owner named it.
    pub fn contains_words_of(&self, other: &LabelWords) -> bool {
        !other.words.is_empty()
            && other
                .words
                .iter()
                .all(|(word, _)| self.pieces.contains(word))
    }

    /// Whether a query with these terms names this label: every word, whole or all its parts.
    pub fn named_by(&self, query: &[&str]) -> bool {
        !self.words.is_empty()
            && self.words.iter().all(|(whole, parts)| {
                query.contains(&whole.as_str()) || parts.iter().all(|p| query.contains(&p.as_str()))
            })
    }
}

/// The prepared index over every tool of a catalog version.
pub struct Index {
    docs: Vec<ToolDoc>,
    /// Every stemmed term with its name, label, parameter and prose lists.
    pub(super) terms: Terms<4>,
    /// Terms that occur in some name, in text order, for prefix matching.
    name_terms: Vec<TermId>,
    /// (hash of the lowercased whole name, tool), sorted: the exact-name lookup without a key
    /// allocated per tool.
    by_name: Vec<(u64, DocId)>,
    /// Name tokens as spelled (unstemmed), for the surface-form bonus.
    pub(super) surface: Terms<1>,
    labels: Vec<Label>,
    /// Per label text, its connector id.
    label_ids: FnvMap<Box<str>, u32>,
    /// Per label piece (`cal`, `com`, `calcom` of `Cal.com`), the connectors whose label has it.
    piece_labels: FnvMap<Box<str>, Vec<u32>>,
    /// Per label part (camel parts too: `pager`, `duti`), the connectors a query can name
    /// through it.
    part_labels: FnvMap<Box<str>, Vec<u32>>,
    doc_connector: Vec<u32>,
    /// Per tool: distinct terms of its name.
    pub(super) name_len: Vec<u8>,
    /// Per tool: its name's action term (rule 17), each found the first time a read request
    /// meets the tool; the table is made by the first such request.
    actions: std::sync::OnceLock<Box<[ActionTerm]>>,
}

/// A tool name's action term, once found ([`Index::action_of`]).
type ActionTerm = std::sync::OnceLock<Option<Box<str>>>;

/// The shorter side of a prefix match has at least this many characters (`repo` meets
/// `repository`, `cal` does not meet `calendar`).
pub const MIN_PREFIX_LEN: usize = 4;
/// A name token shorter than the query term meets it only when at most this many characters of
/// the term remain, so a compound (`sharepoint`) does not meet its first part (`share`).
pub const MAX_PREFIX_TAIL: usize = 3;

impl Index {
    pub(super) fn empty(tools: usize) -> Index {
        Index {
            docs: Vec::new(),
            terms: Terms::default(),
            name_terms: Vec::new(),
            by_name: Vec::new(),
            surface: Terms::default(),
            labels: Vec::new(),
            label_ids: FnvMap::default(),
            piece_labels: FnvMap::default(),
            part_labels: FnvMap::default(),
            doc_connector: Vec::with_capacity(tools),
            name_len: Vec::with_capacity(tools),
            actions: std::sync::OnceLock::new(),
        }
    }

    /// The action term of a tool's name ([`super::stages::action_term`]), remembered.
    pub fn action_of(&self, id: DocId) -> Option<&str> {
        let table = self
            .actions
            .get_or_init(|| (0..self.docs.len()).map(|_| Default::default()).collect());
        table
            .get(id as usize)?
            .get_or_init(|| super::stages::action_term(self, id).map(Into::into))
            .as_deref()
    }

    pub fn build(docs: Vec<ToolDoc>) -> Index {
        let mut ix = Index::empty(docs.len());
        let mut stems = StemCache::default();
        let scaffold_stop: Vec<String> = crate::scaffold::stop_words()
            .iter()
            .map(|w| stem(w).into_owned())
            .collect();
        let mut scratch = Vec::new();
        let mut terms = TermsBuilder::<4>::new();
        let mut surface = TermsBuilder::<1>::new();
        for (i, doc) in docs.iter().enumerate() {
            let id = i as DocId;
            let mut add = |texts: &[&str], compounds: bool, which: u8| {
                scratch.clear();
                for t in texts {
                    if which == field::PROSE {
                        // Values in tool text (URLs, ids, paths) are no more a capability
                        // there than in a query.
                        for word in t.split_whitespace() {
                            // Stop words in prose say nothing about a tool (and would make
                            // every explanation walk every tool).
                            if !is_value_word(word, true) {
                                terms_cached(word, compounds, true, &mut stems, &mut scratch);
                            }
                        }
                    } else {
                        terms_cached(t, compounds, false, &mut stems, &mut scratch);
                    }
                }
                if which == field::PROSE {
                    // The scaffolding's own words describe the gateway, not the tool.
                    scratch.retain(|t| !scaffold_stop.contains(t));
                }
                scratch.sort_unstable();
                scratch.dedup();
                let k = match which {
                    field::NAME_EXACT => NAME_LIST,
                    field::LABEL => LABEL_LIST,
                    field::PARAM => PARAM_LIST,
                    _ => PROSE_LIST,
                };
                for t in scratch.iter() {
                    terms.list(t, k).push(id);
                }
                scratch.len()
            };
            let name_terms = add(&[&doc.name], false, field::NAME_EXACT);
            for_each_name_token(&doc.name, |t| surface.list(t, 0).push(id));
            ix.name_len.push(name_terms.min(u8::MAX as usize) as u8);
            // The gateway's own notes (account labels, frozen values) label a tool like its
            // connector does.
            let mut labels: Vec<&str> = doc.notes.iter().map(String::as_str).collect();
            labels.push(&doc.connector);
            add(&labels, true, field::LABEL);
            // Parsed for this pass alone: a catalog keeps its schemas as text.
            doc.input_schema.read(|value| {
                let schema = schema_text(value);
                add(&schema.names, false, field::PARAM);
                let mut prose = schema.prose;
                prose.push(&doc.description);
                add(&prose, true, field::PROSE);
            });
        }
        ix.terms = terms.finish();
        ix.surface = surface.finish();
        ix.finish(docs);
        ix
    }

    /// What follows from the tools themselves without stemming their text: names as spelled,
    /// connector labels, the name-term list for prefix matching. Shared by [`Index::build`] and
    /// the compiled form, which stores only the terms and their postings.
    pub(super) fn finish(&mut self, docs: Vec<ToolDoc>) {
        let mut label_ids: FnvMap<&str, u32> = FnvMap::default();
        self.by_name = Vec::with_capacity(docs.len());
        self.doc_connector.reserve_exact(docs.len());
        let mut previous: Option<(&str, u32)> = None;
        for (i, doc) in docs.iter().enumerate() {
            // A catalog lists a connector's tools together: most tools are the previous one's.
            let c = match previous {
                Some((label, c)) if label == &*doc.connector => c,
                _ => {
                    let next = label_ids.len() as u32;
                    let c = *label_ids.entry(&*doc.connector).or_insert(next);
                    if c == next {
                        self.labels.push(Label::new(&doc.connector));
                    }
                    c
                }
            };
            previous = Some((&*doc.connector, c));
            self.doc_connector.push(c);
            self.by_name.push((name_hash(&doc.name), i as DocId));
        }
        self.by_name.sort_unstable();
        self.name_terms = (0..self.terms.len() as TermId)
            .filter(|&t| !self.terms.list(t, NAME_LIST).is_empty())
            .collect();
        for (c, label) in self.labels.iter().enumerate() {
            let c = c as u32;
            self.label_ids.insert(label.text.as_str().into(), c);
            for piece in &label.pieces {
                push_unique(
                    self.piece_labels.entry(piece.as_str().into()).or_default(),
                    c,
                );
            }
            for (whole, parts) in &label.words {
                for p in std::iter::once(whole).chain(parts) {
                    push_unique(self.part_labels.entry(p.as_str().into()).or_default(), c);
                }
            }
        }
        self.docs = docs;
        self.mark_ordinary_labels();
    }

    /// A label each of whose words is in the name or parameters of a tool of a product whose
    /// label lacks that word is made of ordinary words of the tools' language, not only a name.
    fn mark_ordinary_labels(&mut self) {
        for c in 0..self.labels.len() {
            let label = &self.labels[c];
            let ordinary = !label.words.is_empty()
                && label.words.iter().all(|(whole, _)| {
                    self.terms.find(whole).is_some_and(|t| {
                        [NAME_LIST, PARAM_LIST].iter().any(|&k| {
                            self.terms.list(t, k).iter().any(|&d| {
                                let other = self.doc_connector[d as usize] as usize;
                                other != c && !self.labels[other].pieces.contains(whole)
                            })
                        })
                    })
                });
            self.labels[c].ordinary = ordinary;
        }
    }

    /// The connector id of a label text.
    pub fn label_id(&self, text: &str) -> Option<u32> {
        self.label_ids.get(text).copied()
    }

    /// The connectors whose label has this piece as a word (its `pieces`).
    pub fn labels_with_piece(&self, term: &str) -> &[u32] {
        self.piece_labels.get(term).map_or(&[], Vec::as_slice)
    }

    /// The connectors a query holding this term may name (a word or part of their label).
    pub fn labels_with_part(&self, term: &str) -> &[u32] {
        self.part_labels.get(term).map_or(&[], Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    pub fn doc(&self, id: DocId) -> &ToolDoc {
        &self.docs[id as usize]
    }

    pub fn docs(&self) -> &[ToolDoc] {
        &self.docs
    }

    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// Distinct terms of the tool's name.
    pub fn name_len(&self, id: DocId) -> usize {
        usize::from(self.name_len[id as usize])
    }

    pub fn connector_of(&self, id: DocId) -> u32 {
        self.doc_connector[id as usize]
    }

    /// Tools whose whole name is this text (case-insensitive).
    pub fn by_name(&self, name: &str) -> Vec<DocId> {
        self.named(name).collect()
    }

    /// [`Index::by_name`] without collecting.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = DocId> + 'a {
        let name = name.trim();
        let hash = name_hash(name);
        let start = self.by_name.partition_point(|&(h, _)| h < hash);
        self.by_name[start..]
            .iter()
            .take_while(move |&&(h, _)| h == hash)
            .map(|&(_, d)| d)
            .filter(move |&d| same_lowercase(&self.docs[d as usize].name, name))
    }

    /// Calls `pair(mine, theirs)` for every tool of this index and tool of `other` with the
    /// same name (lowercased, as [`Index::named`] compares): one merge of the two sorted name
    /// hash arrays, no name hashed or looked up.
    pub fn for_each_same_name(&self, other: &Index, mut pair: impl FnMut(DocId, DocId)) {
        let (mine, theirs) = (&self.by_name, &other.by_name);
        let (mut i, mut j) = (0, 0);
        while i < mine.len() && j < theirs.len() {
            let (h, k) = (mine[i].0, theirs[j].0);
            if h != k {
                if h < k {
                    i += 1;
                } else {
                    j += 1;
                }
                continue;
            }
            let run = |a: &[(u64, DocId)], from: usize| {
                from + a[from..].iter().take_while(|&&(x, _)| x == h).count()
            };
            let (i_end, j_end) = (run(mine, i), run(theirs, j));
            for &(_, a) in &mine[i..i_end] {
                for &(_, b) in &theirs[j..j_end] {
                    let (na, nb) = (&self.docs[a as usize].name, &other.docs[b as usize].name);
                    if na == nb || same_lowercase(na.trim(), nb.trim()) {
                        pair(a, b);
                    }
                }
            }
            (i, j) = (i_end, j_end);
        }
    }

    /// Calls `hit(doc, field bit)` for every tool that has the term in one of the given fields
    /// (a bit set of [`field`]; the lists of the others are not walked); a name matched by
    /// prefix reports [`field::NAME_PREFIX`]. A tool may be reported more than once.
    pub fn for_each_hit_in(&self, term: &str, fields: u8, mut hit: impl FnMut(DocId, u8)) {
        self.for_each_list_in(term, fields, |list, bit| {
            list.iter().for_each(|&d| hit(d, bit))
        });
    }

    /// [`Index::for_each_hit_in`] a posting list at a time: `list(tools, field bit)`, so a
    /// caller's per-tool loop is its own (and inlined: the query's hottest loop).
    pub fn for_each_list_in(&self, term: &str, fields: u8, mut list: impl FnMut(&[DocId], u8)) {
        if let Some(t) = self.terms.find(term) {
            for (k, bit) in [
                (NAME_LIST, field::NAME_EXACT),
                (LABEL_LIST, field::LABEL),
                (PARAM_LIST, field::PARAM),
                (PROSE_LIST, field::PROSE),
            ] {
                if fields & bit != 0 {
                    list(self.terms.list(t, k), bit);
                }
            }
        }
        if fields & field::NAME_PREFIX == 0
            || term.len() < MIN_PREFIX_LEN
            || !term.bytes().all(|b| b.is_ascii_lowercase())
        {
            return;
        }
        // Name tokens the term is a prefix of (`repo` → `repository`).
        let start = self
            .name_terms
            .partition_point(|&n| self.terms.text(n) < term);
        for &n in &self.name_terms[start..] {
            let text = self.terms.text(n);
            if !text.starts_with(term) {
                break;
            }
            if text != term {
                list(self.terms.list(n, NAME_LIST), field::NAME_PREFIX);
            }
        }
        // Name tokens that are a prefix of the term, with a short tail (`config` ← `configs`).
        for len in MIN_PREFIX_LEN.max(term.len().saturating_sub(MAX_PREFIX_TAIL))..term.len() {
            if let Some(n) = self.terms.find(&term[..len]) {
                list(self.terms.list(n, NAME_LIST), field::NAME_PREFIX);
            }
        }
    }

    /// Calls `hit(doc)` for every tool whose name has this token exactly as spelled.
    pub fn for_each_surface_hit(&self, token: &str, hit: impl FnMut(DocId)) {
        self.surface_list(token).iter().copied().for_each(hit);
    }

    /// The tools whose name has this token exactly as spelled.
    pub fn surface_list(&self, token: &str) -> &[DocId] {
        self.surface
            .find(token)
            .map_or(&[], |t| self.surface.list(t, 0))
    }

    /// Which fields of any tool of the whole index hold the term exactly (public knowledge for
    /// the directory; never call it on a tenant's pool, whose withheld tools it would count).
    pub fn fields_anywhere(&self, term: &str) -> u8 {
        let Some(t) = self.terms.find(term) else {
            return 0;
        };
        let bit = |k: usize, b: u8| {
            if self.terms.list(t, k).is_empty() {
                0
            } else {
                b
            }
        };
        bit(NAME_LIST, field::NAME_EXACT)
            | bit(LABEL_LIST, field::LABEL)
            | bit(PARAM_LIST, field::PARAM)
            | bit(PROSE_LIST, field::PROSE)
    }

    /// Heap bytes held by the index, roughly (postings, dictionary, names).
    pub fn index_bytes(&self) -> usize {
        self.terms.heap_bytes()
            + self.surface.heap_bytes()
            + self.name_terms.capacity() * 4
            + self.by_name.capacity() * 12
            + self.docs.len() * 8
            + self.actions.get().map_or(0, |table| {
                table.len() * std::mem::size_of::<ActionTerm>()
                    + table
                        .iter()
                        .filter_map(|a| a.get()?.as_deref())
                        .map(str::len)
                        .sum::<usize>()
            })
    }
}

/// Calls `f` once per distinct token of a tool name, as spelled.
fn for_each_name_token(name: &str, mut f: impl FnMut(&str)) {
    let mut tokens: Vec<String> = Vec::new();
    crate::tokenize::for_each_token(name, |t, _, _| tokens.push(t.to_owned()));
    tokens.sort_unstable();
    tokens.dedup();
    tokens.iter().for_each(|t| f(t));
}

/// The hash of a name lowercased, the key of the exact-name lookup.
fn name_hash(name: &str) -> u64 {
    let mut h = Fnv::new();
    if name.is_ascii() {
        name.bytes().for_each(|b| h.eat(b.to_ascii_lowercase()));
    } else {
        let mut buf = [0u8; 4];
        for c in name.chars().flat_map(char::to_lowercase) {
            h.eat_all(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    h.0
}

/// Whether two names are equal lowercased (the exact-name match is case-insensitive).
fn same_lowercase(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        a.chars()
            .flat_map(char::to_lowercase)
            .eq(b.chars().flat_map(char::to_lowercase))
    }
}

fn push_unique(v: &mut Vec<u32>, c: u32) {
    if !v.contains(&c) {
        v.push(c);
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("v2::Index")
            .field("tools", &self.docs.len())
            .field("terms", &self.terms.len())
            .finish()
    }
}

#[cfg(test)]
mod label_tests {
    use super::{Index, Label, LabelWords, LABELS_KEPT, REMEMBERED_LABELS};
    use crate::rank::ToolDoc;
    use std::sync::Arc;

    fn tool(name: &str, connector: &str) -> ToolDoc {
        ToolDoc {
            name: name.into(),
            connector: connector.into(),
            description: "".into(),
            input_schema: serde_json::json!({"type": "object"}).into(),
            destructive: false,
            read_only: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn same_names_across_two_indexes_are_what_a_lookup_of_each_finds() {
        let mine = Index::build(vec![
            tool("create_issue", "GitHub"),
            tool("Create_Issue", "Jira"),
            tool("search", "Slack"),
            tool("list_pages", "Notion"),
            tool("list_pages", "Confluence"),
        ]);
        let theirs = Index::build(vec![
            tool("search", "Brave Search"),
            tool("list_pages", "Notion"),
            tool("CREATE_ISSUE", "GitHub"),
            tool("delete_block", "Notion"),
            tool("search", "Exa"),
        ]);
        let mut merged = Vec::new();
        mine.for_each_same_name(&theirs, |a, b| merged.push((a, b)));
        merged.sort_unstable();
        let mut looked_up: Vec<(u32, u32)> = (0..mine.len() as u32)
            .flat_map(|a| theirs.named(&mine.doc(a).name).map(move |b| (a, b)))
            .collect();
        looked_up.sort_unstable();
        assert_eq!(merged, looked_up);
        assert_eq!(
            merged.len(),
            2 + 2 + 2,
            "two create_issue, two search, two list_pages"
        );
    }

    #[test]
    fn a_label_is_spelled_as_written_or_with_a_plural_s_only() {
        let l = Label::new("Google Docs");
        for yes in ["google", "docs", "doc"] {
            assert!(l.spelled_by(yes), "{yes}");
        }
        for no in ["googled", "documents", "doce"] {
            assert!(!l.spelled_by(no), "{no}");
        }
        let l = Label::new("PagerDuty");
        for yes in ["pagerduty", "pager", "duty"] {
            assert!(l.spelled_by(yes), "{yes}");
        }
        let l = Label::new("Close");
        assert!(l.spelled_by("close") && !l.spelled_by("closed") && !l.spelled_by("closing"));
    }

    #[test]
    fn a_compound_label_is_named_by_all_its_parts_stop_words_too() {
        let l = Label::new("WhatsApp");
        assert!(!l.named_by(&["list", "app"]), "`app` is half of whats|app");
        assert!(l.named_by(&["whatsapp"]) && l.named_by(&["what", "app"]));
        let l = Label::new("HowToCook");
        assert!(!l.named_by(&["cook", "pasta"]));
        assert!(l.named_by(&["howtocook"]));
        // A word of stop words alone is skipped: the label's other words name it.
        let l = Label::new("The Guardian");
        assert!(l.named_by(&["guardian"]));
    }

    #[test]
    fn a_one_word_label_in_other_products_tool_names_is_ordinary() {
        let ix = Index::build(vec![
            tool("list_leads", "Close"),
            tool("close_issue", "GitHub"),
            tool("list_files", "Box"),
            tool("fetch_url", "Fetch"),
            tool("list_fetch_jobs", "Fetch Jobs"),
            tool("list_calendars", "Google Calendar"),
            tool("calendar_events", "Outlook"),
            tool("server_info", "Database server"),
            tool("list_databases", "MongoDB"),
            tool("server_status", "MongoDB"),
        ]);
        let ordinary = |text: &str| ix.labels()[ix.label_id(text).unwrap() as usize].ordinary;
        assert!(ordinary("Close"), "`close_issue` is GitHub's");
        assert!(!ordinary("Box"), "no other product's tool says box");
        assert!(
            !ordinary("Fetch"),
            "only a product whose label has the word says it"
        );
        assert!(!ordinary("GitHub"));
        assert!(
            ordinary("Database server"),
            "MongoDB's tools say both words"
        );
        assert!(
            !ordinary("Google Calendar"),
            "no other product's tool says google"
        );
        let l = Label::new("Database server");
        let q = ["list", "databases", "on", "the", "database", "server"];
        let in_phrase: Vec<usize> = (0..q.len()).filter(|&at| l.in_phrase(&q, at)).collect();
        assert_eq!(in_phrase, [4, 5]);
    }

    #[test]
    fn a_labels_words_are_shared_but_what_its_pool_says_of_them_is_not() {
        let with_github = Index::build(vec![
            tool("list_leads", "Close"),
            tool("close_issue", "GitHub"),
        ]);
        let alone = Index::build(vec![tool("list_leads", "Close"), tool("list_files", "Box")]);
        let close = |ix: &Index| ix.labels()[ix.label_id("Close").unwrap() as usize].clone();
        let (a, b) = (close(&with_github), close(&alone));
        assert!(Arc::ptr_eq(&a.shared, &b.shared), "worked out once");
        assert!(
            a.ordinary,
            "GitHub's `close_issue` makes it an ordinary word here"
        );
        assert!(!b.ordinary, "and nothing does there");
    }

    #[test]
    fn remembered_labels_are_bounded() {
        for i in 0..=LABELS_KEPT {
            LabelWords::remembered(&format!("Product {i}"));
        }
        let kept = REMEMBERED_LABELS.with_borrow(|kept| kept.len());
        assert!(kept <= LABELS_KEPT, "{kept} kept");
        let again = LabelWords::remembered("Product 0");
        assert_eq!(again.text, "Product 0");
    }
}

#[cfg(test)]
mod terms_tests {
    use super::{Terms, TermsBuilder};

    #[test]
    fn the_slot_table_finds_every_term_and_no_other() {
        let mut b = TermsBuilder::<1>::new();
        let words: Vec<String> = (0..500).map(|i| format!("w{i}")).collect();
        for (i, w) in words.iter().enumerate() {
            b.list(w, 0).push(i as u32);
        }
        let terms: Terms<1> = b.finish();
        for w in &words {
            let t = terms.find(w).expect(w);
            assert_eq!(terms.text(t), w);
        }
        for missing in ["", "w", "w500", "x1", "w1 "] {
            assert_eq!(terms.find(missing), None, "{missing:?}");
        }
        assert_eq!(Terms::<4>::default().find("anything"), None);
    }
}
