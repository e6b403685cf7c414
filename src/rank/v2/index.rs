//! The prepared pool: per term, which tools have it in which field.
//!
//! Built once per catalog version. A query touches only its own terms' postings and filters them
//! through the caller's visible set, so df, N and IDF are the caller's alone. The connector
//! directory is an index of the same shape, used only as public knowledge (which words name a
//! capability somewhere, which words name a product).

use std::collections::HashMap;

use super::query::is_value_word;
use super::text::{is_stop_word, schema_text, stem, terms, terms_cached, StemCache};
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

#[derive(Default)]
pub(super) struct Postings {
    pub(super) name: Vec<DocId>,
    pub(super) label: Vec<DocId>,
    pub(super) param: Vec<DocId>,
    pub(super) prose: Vec<DocId>,
}

/// A connector label and the words a query must hold to name it.
#[derive(Clone, Debug)]
pub struct Label {
    pub text: String,
    /// Per word of the label (stop words dropped): its whole stemmed form and its parts.
    pub words: Vec<(String, Vec<String>)>,
    /// The label's words and their punctuation-separated pieces (`cal`, `com` of `Cal.com`), as
    /// terms; not the camel-case parts of a compound (`open` of `OpenRouter` names nothing).
    pieces: Vec<String>,
}

impl Label {
    fn new(text: &str) -> Label {
        let mut words = Vec::new();
        let mut pieces = Vec::new();
        for word in text.split(|c: char| c.is_whitespace() || c == '/' || c == '(' || c == ')') {
            let mut parts = Vec::new();
            terms(word, false, &mut parts);
            parts.retain(|p| !is_stop_word(p));
            if parts.is_empty() {
                continue;
            }
            let whole: String = {
                let mut t = Vec::new();
                crate::tokenize::for_each_token(word, |tok, _, _| t.push(tok.to_owned()));
                stem(&t.concat()).into_owned()
            };
            for piece in word.split(|c: char| !c.is_alphanumeric()) {
                let mut t = Vec::new();
                crate::tokenize::for_each_token(piece, |tok, _, _| t.push(tok.to_owned()));
                let piece = stem(&t.concat()).into_owned();
                if !piece.is_empty() && !is_stop_word(&piece) {
                    pieces.push(piece);
                }
            }
            pieces.push(whole.clone());
            words.push((whole, parts));
        }
        Label {
            text: text.to_owned(),
            words,
            pieces,
        }
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
    dict: HashMap<Box<str>, TermId>,
    pub(super) text: Vec<Box<str>>,
    pub(super) postings: Vec<Postings>,
    /// Terms that occur in some name, sorted by text, for prefix matching.
    name_terms: Vec<TermId>,
    by_name: HashMap<Box<str>, Vec<DocId>>,
    /// Name tokens as spelled (unstemmed), for the surface-form bonus.
    surface: HashMap<Box<str>, Vec<DocId>>,
    labels: Vec<Label>,
    /// Per label text, its connector id.
    label_ids: HashMap<Box<str>, u32>,
    /// Per label piece (`cal`, `com`, `calcom` of `Cal.com`), the connectors whose label has it.
    piece_labels: HashMap<Box<str>, Vec<u32>>,
    /// Per label part (camel parts too: `pager`, `duti`), the connectors a query can name
    /// through it.
    part_labels: HashMap<Box<str>, Vec<u32>>,
    doc_connector: Vec<u32>,
    /// Per tool: distinct terms of its name.
    pub(super) name_len: Vec<u8>,
}

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
            dict: HashMap::new(),
            text: Vec::new(),
            postings: Vec::new(),
            name_terms: Vec::new(),
            by_name: HashMap::new(),
            surface: HashMap::new(),
            labels: Vec::new(),
            label_ids: HashMap::new(),
            piece_labels: HashMap::new(),
            part_labels: HashMap::new(),
            doc_connector: Vec::with_capacity(tools),
            name_len: Vec::with_capacity(tools),
        }
    }

    pub fn build(docs: Vec<ToolDoc>) -> Index {
        let mut ix = Index::empty(docs.len());
        let mut stems = StemCache::default();
        let scaffold_stop: Vec<String> = crate::scaffold::stop_words()
            .iter()
            .map(|w| stem(w).into_owned())
            .collect();
        let mut scratch = Vec::new();
        for (i, doc) in docs.iter().enumerate() {
            let id = i as DocId;
            let schema = schema_text(doc.input_schema.value());
            let mut add = |ix: &mut Index, texts: &[&str], compounds: bool, which: u8| {
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
                for t in scratch.iter() {
                    let term = ix.intern(t);
                    let p = &mut ix.postings[term as usize];
                    let list = match which {
                        field::NAME_EXACT => &mut p.name,
                        field::LABEL => &mut p.label,
                        field::PARAM => &mut p.param,
                        _ => &mut p.prose,
                    };
                    list.push(id);
                }
                scratch.len()
            };
            let name_terms = add(&mut ix, &[&doc.name], false, field::NAME_EXACT);
            ix.name_len.push(name_terms.min(u8::MAX as usize) as u8);
            // The gateway's own notes (account labels, frozen values) label a tool like its
            // connector does.
            let mut labels: Vec<&str> = doc.notes.iter().map(String::as_str).collect();
            labels.push(&doc.connector);
            add(&mut ix, &labels, true, field::LABEL);
            add(&mut ix, &schema.names, false, field::PARAM);
            let mut prose = schema.prose.clone();
            prose.push(&doc.description);
            add(&mut ix, &prose, true, field::PROSE);
        }
        for p in &mut ix.postings {
            p.name.shrink_to_fit();
            p.label.shrink_to_fit();
            p.param.shrink_to_fit();
            p.prose.shrink_to_fit();
        }
        ix.finish(docs);
        ix
    }

    /// What follows from the tools themselves without stemming their text: names as spelled,
    /// connector labels, the name-term list for prefix matching. Shared by [`Index::build`] and
    /// the compiled form, which stores only the terms and their postings.
    pub(super) fn finish(&mut self, docs: Vec<ToolDoc>) {
        let mut label_ids: HashMap<&str, u32> = HashMap::new();
        // A cold copy runs this for every tool: one buffer holds a name's tokens (no allocation
        // per token), and a key is allocated only for a token not seen before.
        let mut tokens = String::new();
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for (i, doc) in docs.iter().enumerate() {
            let id = i as DocId;
            tokens.clear();
            spans.clear();
            crate::tokenize::for_each_token(&doc.name, |t, _, _| {
                spans.push((tokens.len(), tokens.len() + t.len()));
                tokens.push_str(t);
            });
            let text = |&(a, b): &(usize, usize)| &tokens[a..b];
            spans.sort_unstable_by(|x, y| text(x).cmp(text(y)));
            spans.dedup_by(|x, y| text(x) == text(y));
            for span in &spans {
                let t = text(span);
                match self.surface.get_mut(t) {
                    Some(ids) => ids.push(id),
                    None => {
                        self.surface.insert(t.into(), vec![id]);
                    }
                }
            }
            let next = label_ids.len() as u32;
            let c = *label_ids.entry(&*doc.connector).or_insert(next);
            if c == next {
                self.labels.push(Label::new(&doc.connector));
            }
            self.doc_connector.push(c);
            // Most names are lowercase already: no second copy to lowercase them.
            let lowercase = doc
                .name
                .bytes()
                .all(|b| b.is_ascii() && !b.is_ascii_uppercase());
            let key: Box<str> = if lowercase {
                Box::from(&*doc.name)
            } else {
                doc.name.to_lowercase().into()
            };
            self.by_name.entry(key).or_default().push(id);
        }
        let mut names: Vec<TermId> = (0..self.text.len() as TermId)
            .filter(|&t| !self.postings[t as usize].name.is_empty())
            .collect();
        names.sort_unstable_by(|&a, &b| self.text[a as usize].cmp(&self.text[b as usize]));
        self.name_terms = names;
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

    pub(super) fn intern(&mut self, t: &str) -> TermId {
        if let Some(&id) = self.dict.get(t) {
            return id;
        }
        let id = self.text.len() as TermId;
        self.dict.insert(t.into(), id);
        self.text.push(t.into());
        self.postings.push(Postings::default());
        id
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
    pub fn by_name(&self, name: &str) -> &[DocId] {
        self.by_name
            .get(name.trim().to_lowercase().as_str())
            .map_or(&[], Vec::as_slice)
    }

    /// Calls `hit(doc, field bit)` for every tool that has the term in some field; a name
    /// matched by prefix reports [`field::NAME_PREFIX`]. A tool may be reported more than once.
    pub fn for_each_hit(&self, term: &str, mut hit: impl FnMut(DocId, u8)) {
        if let Some(&t) = self.dict.get(term) {
            let p = &self.postings[t as usize];
            p.name.iter().for_each(|&d| hit(d, field::NAME_EXACT));
            p.label.iter().for_each(|&d| hit(d, field::LABEL));
            p.param.iter().for_each(|&d| hit(d, field::PARAM));
            p.prose.iter().for_each(|&d| hit(d, field::PROSE));
        }
        if term.len() < MIN_PREFIX_LEN || !term.bytes().all(|b| b.is_ascii_lowercase()) {
            return;
        }
        // Name tokens the term is a prefix of (`repo` → `repository`).
        let start = self
            .name_terms
            .partition_point(|&n| &*self.text[n as usize] < term);
        for &n in &self.name_terms[start..] {
            let text = &*self.text[n as usize];
            if !text.starts_with(term) {
                break;
            }
            if text != term {
                self.postings[n as usize]
                    .name
                    .iter()
                    .for_each(|&d| hit(d, field::NAME_PREFIX));
            }
        }
        // Name tokens that are a prefix of the term, with a short tail (`config` ← `configs`).
        for len in MIN_PREFIX_LEN.max(term.len().saturating_sub(MAX_PREFIX_TAIL))..term.len() {
            if let Some(&n) = self.dict.get(&term[..len]) {
                self.postings[n as usize]
                    .name
                    .iter()
                    .for_each(|&d| hit(d, field::NAME_PREFIX));
            }
        }
    }

    /// Calls `hit(doc)` for every tool whose name has this token exactly as spelled.
    pub fn for_each_surface_hit(&self, token: &str, mut hit: impl FnMut(DocId)) {
        if let Some(docs) = self.surface.get(token) {
            docs.iter().for_each(|&d| hit(d));
        }
    }

    /// Which fields of any tool of the whole index hold the term exactly (public knowledge for
    /// the directory; never call it on a tenant's pool, whose withheld tools it would count).
    pub fn fields_anywhere(&self, term: &str) -> u8 {
        let Some(&t) = self.dict.get(term) else {
            return 0;
        };
        let p = &self.postings[t as usize];
        let bit = |v: &Vec<DocId>, b: u8| if v.is_empty() { 0 } else { b };
        bit(&p.name, field::NAME_EXACT)
            | bit(&p.label, field::LABEL)
            | bit(&p.param, field::PARAM)
            | bit(&p.prose, field::PROSE)
    }

    /// Heap bytes held by the index, roughly (postings, dictionary, names).
    pub fn index_bytes(&self) -> usize {
        let ids = |v: &Vec<DocId>| v.capacity() * 4;
        let postings: usize = self
            .postings
            .iter()
            .map(|p| ids(&p.name) + ids(&p.label) + ids(&p.param) + ids(&p.prose) + 96)
            .sum();
        let dict: usize = self.text.iter().map(|t| t.len() * 2 + 32).sum();
        postings + dict + self.name_terms.len() * 4 + self.docs.len() * 8
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
            .field("terms", &self.text.len())
            .finish()
    }
}
