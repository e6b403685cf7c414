//! The prepared pool (term dictionary + postings) and the per-query scoring over a subset.
//!
//! Built once per catalog version; each query touches only the postings of its own tokens and
//! filters them through the caller's [`Subset`], so df, N and IDF are the pool's alone.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use super::analyze::{
    analyze, is_function_word, stem, Role, DESTRUCTIVE_VERBS, READ_VERBS, WRITE_VERBS,
};
use super::explain::{Explanation, FieldMatch, OrderExplain, ProductHint, Rejected, TokenExplain};
use super::synonyms::alternatives;
use super::{
    Directory, Rules, SearchRequest, SearchResponse, SearchResult, CONNECTOR_LABEL,
    DESCRIPTION_TOKEN, EXACT_NAME_TOKEN, FLOOR, MAX_PREFIX_TAIL, MIN_PREFIX_LEN, NAME_PREFIX,
    PARAMETER_NAME, SYNONYM_NAME,
};
use crate::tokenize::for_each_token;

/// Marks a name or connector-label match in the per-term weight scratch (weights stay far
/// below it).
const ANCHOR_HIT: u8 = 0x80;
/// Per tool and query: some term with mass met its name or label (`ANY_ANCHOR`); one that is
/// not an action verb did (`OBJECT_ANCHOR`).
const ANY_ANCHOR: u8 = 1;
const OBJECT_ANCHOR: u8 = 2;

/// A tool as the ranker sees it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolDoc {
    /// Name, label and description are shared with the catalog (a reference count, not a copy).
    pub name: Arc<str>,
    /// The connector label (`Cal.com`, `Google Drive`).
    pub connector: Arc<str>,
    pub description: Arc<str>,
    /// Shared with the catalog and the listing: one copy per tool however many hold it.
    #[serde(rename = "inputSchema", default = "empty_schema")]
    pub input_schema: crate::lazy_json::LazyJson,
    /// Its annotations say it destroys data (`destructiveHint: true`): v2 holds it to
    /// `v2::DESTRUCTIVE_FLOOR`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub destructive: bool,
    /// Its annotations' `readOnlyHint`, when they have one: the directory's tools tell the
    /// ranker which actions read and which write (v2 rule `read_gets_no_write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The values of the gateway's notes on this tool (a merged tool's account labels, frozen
    /// values): the tenant's own words for its set-up, which label the tool as its connector's
    /// label does. Passed as data; the notes' text in `description` is never parsed back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn empty_schema() -> crate::lazy_json::LazyJson {
    serde_json::json!({"type": "object"}).into()
}

type DocId = u32;
type TermId = u32;

#[derive(Default)]
struct Postings {
    name: Vec<DocId>,
    label: Vec<DocId>,
    desc: Vec<DocId>,
    param: Vec<DocId>,
    /// Some label or description spells the term as one word of several tokens (`SharePoint`).
    compound: bool,
}

/// Per tool, the sorted distinct terms of each field (for explanations).
struct DocTerms {
    name: Box<[TermId]>,
    label: Box<[TermId]>,
    desc: Box<[TermId]>,
    param: Box<[TermId]>,
}

/// The prepared, immutable search index over every tool of a catalog version.
pub struct Index {
    rules: Rules,
    docs: Vec<ToolDoc>,
    dict: HashMap<Box<str>, TermId>,
    text: Vec<Box<str>>,
    postings: Vec<Postings>,
    /// Terms that occur in some name, sorted by text, for prefix matching.
    name_terms: Vec<TermId>,
    by_name: HashMap<Box<str>, Vec<DocId>>,
    doc_terms: Vec<DocTerms>,
    /// Distinct connector labels and their terms; `doc_connector` points into it.
    connectors: Vec<(String, Vec<LabelWord>)>,
    /// Per word a label can start with (its first word whole, or that word's first token),
    /// the connectors whose label does: a query can name only those through that word.
    label_keys: HashMap<Box<str>, Vec<u32>>,
    doc_connector: Vec<u32>,
    /// Per term, the tools whose scaffolding notes interpolate it (an account label, a frozen
    /// value): description words that still anchor a result, like a connector label.
    note_terms: HashMap<TermId, Vec<DocId>>,
    /// The verb lists as this index spells terms (stemmed or not), with their class, sorted by
    /// term for a binary search.
    verbs: Vec<(Box<str>, u8)>,
    /// Per tool: the verb classes its name holds (`READS | WRITES | DESTROYS`).
    name_verbs: Vec<u8>,
}

/// Verb classes, as bits.
const READS: u8 = 1;
const WRITES: u8 = 2;
const DESTROYS: u8 = 4;

/// The caller's visible part of an [`Index`]. Build it from the same index it is used with.
#[derive(Clone, Debug)]
pub struct Subset {
    bits: Vec<u64>,
    count: usize,
    connectors: Vec<bool>,
}

impl Subset {
    /// Every tool of the index.
    pub fn all(index: &Index) -> Subset {
        Subset::from_ids(index, 0..index.len() as u32)
    }

    /// The tools with these ids (ids out of range are ignored).
    pub fn from_ids(index: &Index, ids: impl IntoIterator<Item = u32>) -> Subset {
        let n = index.len();
        let mut s = Subset {
            bits: vec![0; n.div_ceil(64)],
            count: 0,
            connectors: vec![false; index.connectors.len()],
        };
        for id in ids {
            let i = id as usize;
            if i < n && s.bits[i / 64] & (1 << (i % 64)) == 0 {
                s.bits[i / 64] |= 1 << (i % 64);
                s.count += 1;
                s.connectors[index.doc_connector[i] as usize] = true;
            }
        }
        s
    }

    /// The tools for which `keep` is true.
    pub fn filter(index: &Index, mut keep: impl FnMut(&ToolDoc) -> bool) -> Subset {
        let ids = (0..index.len() as u32).filter(|&i| keep(index.doc(i)));
        let ids: Vec<u32> = ids.collect();
        Subset::from_ids(index, ids)
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn contains(&self, id: u32) -> bool {
        let i = id as usize;
        self.bits
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// The tokens of `text` grouped by word: tokens with no separator between them (`HubSpot` →
/// `hub`, `spot`) form one word.
fn words_of(text: &str) -> Vec<Vec<String>> {
    let mut words: Vec<Vec<String>> = Vec::new();
    let mut last_end = usize::MAX;
    for_each_token(text, |t, start, end| {
        match words.last_mut() {
            Some(w) if start == last_end => w.push(t.to_owned()),
            _ => words.push(vec![t.to_owned()]),
        }
        last_end = end;
    });
    words
}

fn stemmed(t: &str, stem_on: bool) -> String {
    if stem_on {
        stem(t).into_owned()
    } else {
        t.to_owned()
    }
}

/// Analyzed terms of a text: lowercase tokens, optionally without `stop` words, optionally
/// stemmed; with `compounds`, a word made of several tokens also gives the whole word
/// (`HubSpot` → `hub`, `spot`, `hubspot`), so the query `hubspot` meets the label `HubSpot`.
fn field_terms(
    text: &str,
    rules: &Rules,
    compounds: bool,
    stop: &[String],
    out: &mut Vec<(String, bool)>,
) {
    for word in words_of(text) {
        for t in &word {
            if !stop.iter().any(|s| s == t) {
                out.push((stemmed(t, rules.stem), false));
            }
        }
        if compounds && rules.compounds && word.len() > 1 {
            out.push((stemmed(&word.concat(), rules.stem), true));
        }
    }
}

fn param_names(schema: &serde_json::Value) -> impl Iterator<Item = &str> {
    schema
        .get("properties")
        .and_then(|p| p.as_object())
        .into_iter()
        .flat_map(|m| m.keys().map(String::as_str))
}

/// One word of a connector label: the whole word and its tokens, as terms.
#[derive(Clone, Debug)]
pub(super) struct LabelWord {
    whole: String,
    parts: Vec<String>,
}

/// A label's words, function words dropped: what a query must contain to name the product.
/// A word is there when the query has the whole word (`hubspot`) or all of its tokens
/// (`HubSpot` → `hub`, `spot`).
pub(super) fn label_words(label: &str, rules: &Rules) -> Vec<LabelWord> {
    words_of(label)
        .into_iter()
        .map(|w| LabelWord {
            whole: stemmed(&w.concat(), rules.stem),
            parts: w.iter().map(|t| stemmed(t, rules.stem)).collect(),
        })
        .filter(|w| !(w.parts.len() == 1 && is_function_word(&w.parts[0])))
        .collect()
}

/// Whether a query with these terms names a label with these words.
pub(super) fn names_label(words: &[LabelWord], query: &[&str]) -> bool {
    !words.is_empty()
        && words.iter().all(|w| {
            query.contains(&w.whole.as_str())
                || (!w.parts.is_empty() && w.parts.iter().all(|p| query.contains(&p.as_str())))
        })
}

/// One distinct query token after analysis.
struct QueryTerm {
    token: String,
    term: String,
    role: Role,
    /// Matched as a whole word only, never by prefix (a PascalCase query word).
    whole: bool,
    /// The argument phrase of its first occurrence (0 = none; any occurrence outside a
    /// phrase makes it 0).
    phrase: u32,
}

/// Per-token matching state, gathered over the visible pool.
struct TokenHits {
    df: usize,
    idf: f64,
}

/// The verb lists spelled as the index spells terms, sorted by term.
fn verb_terms(rules: &Rules) -> Vec<(Box<str>, u8)> {
    let spell = |v: &str| -> Box<str> {
        if rules.stem {
            stem(v).into()
        } else {
            v.into()
        }
    };
    let class = |list: &'static [&str], c: u8| list.iter().map(move |v| (*v, c));
    let mut verbs: Vec<(Box<str>, u8)> = class(DESTRUCTIVE_VERBS, DESTROYS)
        .chain(class(WRITE_VERBS, WRITES))
        .chain(class(READ_VERBS, READS))
        .map(|(v, c)| (spell(v), c))
        .collect();
    verbs.sort();
    verbs
}

fn idf(n: usize, df: usize) -> f64 {
    let (n, df) = (n as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// A scored candidate.
#[derive(Clone, Copy)]
struct Cand {
    id: DocId,
    exact: bool,
    /// Rule `specific_first`: of a product the query names.
    named: bool,
    /// Rule `specific_first`: the share of its name's terms the query meets.
    focus: f64,
    /// Rule `specific_first`: its name destroys and the query does not ask to.
    unasked_destroy: bool,
    score: u32,
    coverage: f64,
}

impl Index {
    /// Builds the index with the shipped rules.
    pub fn build(docs: Vec<ToolDoc>) -> Index {
        Index::with_rules(docs, Rules::SHIPPED)
    }

    /// Builds the index with the given rules.
    pub fn with_rules(docs: Vec<ToolDoc>, rules: Rules) -> Index {
        let stop = crate::scaffold::stop_words();
        let mut ix = Index {
            rules,
            docs: Vec::new(),
            dict: HashMap::new(),
            text: Vec::new(),
            postings: Vec::new(),
            name_terms: Vec::new(),
            by_name: HashMap::new(),
            doc_terms: Vec::with_capacity(docs.len()),
            connectors: Vec::new(),
            label_keys: HashMap::new(),
            doc_connector: Vec::with_capacity(docs.len()),
            note_terms: HashMap::new(),
            verbs: verb_terms(&rules),
            name_verbs: Vec::with_capacity(docs.len()),
        };
        let mut connector_ids: HashMap<String, u32> = HashMap::new();
        let mut scratch = Vec::new();
        for (i, doc) in docs.iter().enumerate() {
            let id = i as DocId;
            let mut field = |ix: &mut Index,
                             texts: &mut dyn Iterator<Item = &str>,
                             stop: &[String],
                             compounds: bool| {
                scratch.clear();
                for t in texts {
                    field_terms(t, &rules, compounds, stop, &mut scratch);
                }
                let mut ids: Vec<TermId> = scratch
                    .iter()
                    .map(|(t, compound)| {
                        let id = ix.intern(t);
                        ix.postings[id as usize].compound |= *compound;
                        id
                    })
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                ids.into_boxed_slice()
            };
            // Compounds only where prose spells product names (label, description), so
            // they never feed name-prefix matches.
            let once = std::iter::once;
            let name = field(&mut ix, &mut once(doc.name.as_ref()), &[], false);
            let label = field(&mut ix, &mut once(doc.connector.as_ref()), &[], true);
            let desc = field(&mut ix, &mut once(doc.description.as_ref()), &stop, true);
            let param = if rules.parameter_names {
                doc.input_schema
                    .read(|schema| field(&mut ix, &mut param_names(schema), &[], false))
            } else {
                Box::default()
            };
            for &t in name.iter() {
                ix.postings[t as usize].name.push(id);
            }
            let verbs = name
                .iter()
                .fold(0, |m, &t| m | ix.verb(&ix.text[t as usize]));
            ix.name_verbs.push(verbs);
            for &t in label.iter() {
                ix.postings[t as usize].label.push(id);
            }
            for &t in desc.iter() {
                ix.postings[t as usize].desc.push(id);
            }
            for &t in param.iter() {
                ix.postings[t as usize].param.push(id);
            }
            if !doc.notes.is_empty() {
                let mut notes = doc.notes.iter().map(String::as_str);
                for &t in field(&mut ix, &mut notes, &[], true).iter() {
                    ix.note_terms.entry(t).or_default().push(id);
                }
            }
            ix.doc_terms.push(DocTerms {
                name,
                label,
                desc,
                param,
            });
            let next = connector_ids.len() as u32;
            let c = *connector_ids
                .entry(doc.connector.to_string())
                .or_insert(next);
            if c == next {
                ix.connectors.push((
                    doc.connector.to_string(),
                    label_words(&doc.connector, &rules),
                ));
            }
            ix.doc_connector.push(c);
            ix.by_name.entry((&*doc.name).into()).or_default().push(id);
        }
        let mut names: Vec<TermId> = (0..ix.text.len() as TermId)
            .filter(|&t| !ix.postings[t as usize].name.is_empty())
            .collect();
        names.sort_unstable_by(|&a, &b| ix.text[a as usize].cmp(&ix.text[b as usize]));
        ix.name_terms = names;
        for (c, (_, words)) in ix.connectors.iter().enumerate() {
            let Some(first) = words.first() else { continue };
            for key in std::iter::once(&first.whole).chain(first.parts.first()) {
                let ids = ix.label_keys.entry(key.as_str().into()).or_default();
                if ids.last() != Some(&(c as u32)) {
                    ids.push(c as u32);
                }
            }
        }
        ix.docs = docs;
        ix.shrink();
        ix
    }

    fn intern(&mut self, t: &str) -> TermId {
        if let Some(&id) = self.dict.get(t) {
            return id;
        }
        let id = self.text.len() as TermId;
        self.dict.insert(t.into(), id);
        self.text.push(t.into());
        self.postings.push(Postings::default());
        id
    }

    fn shrink(&mut self) {
        for p in &mut self.postings {
            p.name.shrink_to_fit();
            p.label.shrink_to_fit();
            p.desc.shrink_to_fit();
            p.param.shrink_to_fit();
        }
        self.dict.shrink_to_fit();
        self.by_name.shrink_to_fit();
        self.note_terms.shrink_to_fit();
        self.label_keys.shrink_to_fit();
    }

    /// The connectors whose label these query terms name, in index order.
    pub(super) fn named_connectors(&self, query: &[&str]) -> Vec<u32> {
        let mut named: Vec<u32> = query
            .iter()
            .filter_map(|t| self.label_keys.get(*t))
            .flatten()
            .copied()
            .filter(|&c| names_label(&self.connectors[c as usize].1, query))
            .collect();
        named.sort_unstable();
        named.dedup();
        named
    }

    pub fn rules(&self) -> Rules {
        self.rules
    }

    /// Number of tools in the index.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The tool with this id. Panics on an id that did not come from this index.
    pub fn doc(&self, id: u32) -> &ToolDoc {
        &self.docs[id as usize]
    }

    pub fn docs(&self) -> &[ToolDoc] {
        &self.docs
    }

    /// Approximate heap bytes of the index structures, the tool documents excluded.
    pub fn index_bytes(&self) -> usize {
        let p: usize = self
            .postings
            .iter()
            .map(|p| {
                4 * (p.name.capacity()
                    + p.label.capacity()
                    + p.desc.capacity()
                    + p.param.capacity())
                    + std::mem::size_of::<Postings>()
            })
            .sum();
        let t: usize = self.text.iter().map(|t| 2 * t.len() + 2 * 16 + 8).sum();
        let d: usize = self
            .doc_terms
            .iter()
            .map(|d| {
                4 * (d.name.len() + d.label.len() + d.desc.len() + d.param.len())
                    + std::mem::size_of::<DocTerms>()
            })
            .sum();
        let n: usize = self.by_name.keys().map(|k| k.len() + 16 + 24 + 8).sum();
        let notes: usize = self.note_terms.values().map(|v| 4 + 24 + 4 * v.len()).sum();
        let keys: usize = self
            .label_keys
            .iter()
            .map(|(k, v)| k.len() + 16 + 24 + 4 * v.len())
            .sum();
        p + t
            + d
            + n
            + notes
            + keys
            + 4 * self.name_terms.len()
            + 4 * self.doc_connector.len()
            + self.name_verbs.len()
    }

    /// The verb class of `term` (`READS`, `WRITES` or `DESTROYS`), 0 if it is no verb of the lists.
    fn verb(&self, term: &str) -> u8 {
        self.verbs
            .binary_search_by(|(v, _)| (**v).cmp(term))
            .map_or(0, |i| self.verbs[i].1)
    }

    fn term(&self, t: &str) -> Option<&Postings> {
        self.dict.get(t).map(|&id| &self.postings[id as usize])
    }

    /// Name terms where one of `t` and the term is a proper prefix of the other.
    fn prefix_terms(&self, t: &str, mut f: impl FnMut(TermId)) {
        let min = MIN_PREFIX_LEN;
        // Name terms that are prefixes of t.
        // Shipped: only a short ending may follow the name token (`configs` meets `config`;
        // `sharepoint`, `databricks` do not meet `share`, `data`).
        let tail = if self.rules.short_prefix_tail {
            MAX_PREFIX_TAIL
        } else {
            usize::MAX
        };
        let total = t.chars().count();
        for (k, (end, _)) in t.char_indices().enumerate().skip(min) {
            if total - k > tail {
                continue;
            }
            if let Some(&id) = self.dict.get(&t[..end]) {
                if !self.postings[id as usize].name.is_empty() {
                    f(id);
                }
            }
        }
        // Name terms that t is a prefix of.
        if t.chars().count() >= min {
            let start = self
                .name_terms
                .partition_point(|&id| &*self.text[id as usize] <= t);
            for &id in &self.name_terms[start..] {
                if !self.text[id as usize].starts_with(t) {
                    break;
                }
                f(id);
            }
        }
    }

    /// Whether some tool name or connector label of the whole index covers `term` (exactly or
    /// by prefix). Used on the directory's index.
    pub(super) fn names_term(&self, term: &str, whole: bool) -> bool {
        if self
            .term(term)
            .is_some_and(|p| !p.name.is_empty() || !p.label.is_empty())
        {
            return true;
        }
        let mut any = false;
        if !whole {
            self.prefix_terms(term, |_| any = true);
        }
        any
    }

    /// Whether some label or description of the whole index spells `term` as one word of
    /// several tokens (`SharePoint`, `GitHub`): a product's way of writing its name.
    pub(super) fn compound_term(&self, term: &str) -> bool {
        self.term(term).is_some_and(|p| p.compound)
    }

    /// Whether some description or parameter name of the whole index has `term`.
    pub(super) fn describes_term(&self, term: &str) -> bool {
        self.term(term)
            .is_some_and(|p| !p.desc.is_empty() || !p.param.is_empty())
    }

    fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
        let mut out: Vec<QueryTerm> = Vec::new();
        for raw in analyze(
            query,
            self.rules.argument_values_no_mass,
            self.rules.compounds,
        ) {
            let term = if self.rules.stem {
                stem(&raw.text).into_owned()
            } else {
                raw.text.clone()
            };
            match out.iter_mut().find(|q| q.term == term) {
                // A term used once as a term and once as a value keeps its mass.
                Some(q) => {
                    if raw.role == Role::Term {
                        q.role = Role::Term;
                    }
                    if raw.phrase == 0 {
                        q.phrase = 0;
                    }
                }
                None => out.push(QueryTerm {
                    token: raw.text,
                    term,
                    role: raw.role,
                    whole: raw.whole,
                    phrase: raw.phrase,
                }),
            }
        }
        out
    }

    /// Calls `hit(doc, weight)` once per visible tool covering `term`.
    fn gather(
        &self,
        term: &str,
        whole: bool,
        visible: &Subset,
        w: &mut [u8],
        touched: &mut Vec<DocId>,
        mut met: Option<&mut Vec<TermId>>,
    ) {
        // What a name match sets besides its weight; a synonym's only with `synonym_anchors`.
        let synonym_anchor = if self.rules.synonym_anchors {
            ANCHOR_HIT
        } else {
            0
        };
        let mut add = |d: DocId, weight: u8, name: Option<u8>, w: &mut [u8]| {
            if !visible.contains(d) {
                return;
            }
            let cur = w[d as usize];
            if cur == 0 {
                touched.push(d);
            }
            if let Some(anchor) = name {
                // Exact beats prefix; several prefix tokens count once.
                if cur == 0 {
                    w[d as usize] = weight | anchor;
                }
            } else {
                w[d as usize] = cur + weight;
            }
        };
        let id = self.dict.get(term).copied();
        let p = id.map(|i| &self.postings[i as usize]);
        // The name terms met (rule `specific_first`), whoever holds them.
        let mut meet = |t: TermId| {
            if let Some(m) = met.as_deref_mut() {
                if !self.postings[t as usize].name.is_empty() {
                    m.push(t);
                }
            }
        };
        if let (Some(id), Some(p)) = (id, p) {
            meet(id);
            for &d in &p.name {
                add(d, EXACT_NAME_TOKEN as u8, Some(ANCHOR_HIT), w);
            }
        }
        if !whole {
            self.prefix_terms(term, |id| {
                meet(id);
                for &d in &self.postings[id as usize].name {
                    add(d, NAME_PREFIX as u8, Some(ANCHOR_HIT), w);
                }
            });
        }
        let alts = self.alternatives(term);
        for a in alts {
            if let Some(&t) = self.dict.get(a.as_str()) {
                meet(t);
                for &d in &self.postings[t as usize].name {
                    add(d, SYNONYM_NAME as u8, Some(synonym_anchor), w);
                }
            }
        }
        if let Some(p) = p {
            for &d in &p.label {
                add(d, CONNECTOR_LABEL as u8, None, w);
                if visible.contains(d) {
                    w[d as usize] |= ANCHOR_HIT;
                }
            }
            for &d in &p.desc {
                add(d, DESCRIPTION_TOKEN as u8, None, w);
            }
            if let Some(noted) = id.and_then(|i| self.note_terms.get(&i)) {
                for &d in noted {
                    if visible.contains(d) {
                        w[d as usize] |= ANCHOR_HIT;
                    }
                }
            }
            for &d in &p.param {
                add(d, PARAMETER_NAME as u8, None, w);
            }
        }
        // A synonym in a description or parameter name counts only for a tool that covers the
        // token no other way.
        for a in alts {
            if let Some(p) = self.term(a) {
                for &d in p.desc.iter().chain(&p.param) {
                    if w[d as usize] == 0 {
                        add(d, DESCRIPTION_TOKEN as u8, None, w);
                    }
                }
            }
        }
    }

    /// The share of tool `d`'s name terms in `met` (sorted).
    fn name_focus(&self, d: DocId, met: &[TermId]) -> f64 {
        let name = &self.doc_terms[d as usize].name;
        if name.is_empty() {
            return 0.0;
        }
        let hit = name.iter().filter(|t| met.binary_search(t).is_ok()).count();
        hit as f64 / name.len() as f64
    }

    fn alternatives(&self, term: &str) -> &'static [String] {
        if self.rules.synonyms {
            alternatives(term, self.rules.stem)
        } else {
            &[]
        }
    }

    /// df of `term` over the pool, for tokens that are not scored; `w` and `touched` are the
    /// search's scratch, left as they were found (`w` all zero).
    fn df_only(
        &self,
        q: &QueryTerm,
        visible: &Subset,
        w: &mut [u8],
        touched: &mut Vec<DocId>,
    ) -> usize {
        touched.clear();
        self.gather(&q.term, q.whole, visible, w, touched, None);
        for &d in touched.iter() {
            w[d as usize] = 0;
        }
        touched.len()
    }

    /// Ranks the caller's visible tools for one query.
    pub fn search(&self, req: &SearchRequest, visible: &Subset) -> SearchResponse {
        let rules = self.rules;
        let n = visible.len();
        let mut qterms = self.query_terms(req.query);

        // Products the query names: the pool's own connectors, then the directory's.
        let query_set: Vec<&str> = qterms.iter().map(|q| q.term.as_str()).collect();
        let mut named_visible: Vec<u32> = self
            .named_connectors(&query_set)
            .into_iter()
            .filter(|&c| visible.connectors.get(c as usize).copied().unwrap_or(false))
            .collect();
        // By label, not by index order, so withheld tools cannot reorder them.
        named_visible.sort_by(|&a, &b| {
            self.connectors[a as usize]
                .0
                .cmp(&self.connectors[b as usize].0)
        });
        let mut products: Vec<ProductHint> = named_visible
            .iter()
            .map(|&c| ProductHint {
                label: self.connectors[c as usize].0.clone(),
                visible: true,
            })
            .collect();
        if let Some(dir) = req.directory {
            let labels = dir.connectors();
            for c in dir.index().named_connectors(&query_set) {
                let label = &labels[c as usize].0;
                if products.iter().any(|p| &p.label == label) {
                    continue;
                }
                let visible_here = (0..self.connectors.len()).any(|c| {
                    visible.connectors.get(c).copied().unwrap_or(false)
                        && &self.connectors[c].0 == label
                });
                if !visible_here {
                    products.push(ProductHint {
                        label: label.clone(),
                        visible: false,
                    });
                }
            }
        }
        // Without a visible product named, an unknown word may be the name of a product the
        // gateway does not know: it keeps its mass.
        let product_in_pool = !named_visible.is_empty();
        if rules.argument_phrases && product_in_pool {
            self.mark_argument_phrases(&mut qterms, &named_visible);
        }

        // Rules `destructive_intent`, `read_intent`: what the query asks to do, per term.
        // Rule `object_anchor` asks the verb class of every term, participles included.
        let raw_verb: Vec<u8> = qterms
            .iter()
            .map(|q| match q.role {
                Role::Term => self.verb(&q.term),
                _ => 0,
            })
            .collect();
        let verbs: Vec<u8> = qterms
            .iter()
            .zip(&raw_verb)
            .map(|(q, &class)| match class {
                // A past participle describes data (`deleted issues`), it does not ask to destroy.
                DESTROYS if q.token.ends_with("ed") => 0,
                class => class,
            })
            .collect();
        let asked = verbs.iter().fold(0, |m, v| m | v);
        // Rule `details_no_mass`: the action verbs the query asks for (a participle of
        // any class describes data: `the message the bot posted`).
        let asks_action: Vec<bool> = qterms
            .iter()
            .zip(&raw_verb)
            .map(|(q, &class)| class != 0 && !q.token.ends_with("ed"))
            .collect();
        // Its candidates: uncovered words some directory tool name has.
        let mut detail = vec![false; qterms.len()];
        // Rule `specific_first`: the name terms the query's words meet.
        let mut met_names: Vec<TermId> = Vec::new();
        let asks_destroy = rules.destructive_intent && asked & DESTROYS != 0;
        let asks_other_action = rules.destructive_intent && asked != 0 && !asks_destroy;
        let asks_only_read = rules.read_intent && asked == READS;
        // Per tool: it covers a destructive verb of the query.
        let mut covers_destroy = vec![false; if asks_destroy { self.len() } else { 0 }];

        let mut w = vec![0u8; self.len()];
        let mut touched: Vec<DocId> = Vec::new();
        let mut score = vec![0u32; self.len()];
        let mut cov = vec![0f64; self.len()];
        // Rule `name_anchor`: a term with mass matched the tool's name or connector label.
        // Rule `object_anchor`: `OBJECT_ANCHOR` when that term is not an action verb.
        let mut anchor = vec![0u8; self.len()];
        let mut has_object = false;
        let mut cands: Vec<DocId> = Vec::new();
        let mut hits: Vec<Option<TokenHits>> = Vec::with_capacity(qterms.len());
        // Words nobody knows, in a query naming no product of the pool.
        let mut unknown: Vec<String> = Vec::new();
        // A named visible product's vocabulary: per tool and per connector, the query terms
        // (first 64) they cover, and each term's idf.
        let vocab = rules.named_connector_vocabulary && !named_visible.is_empty();
        let mut doc_mask = vec![0u64; if vocab { self.len() } else { 0 }];
        let mut conn_mask = vec![0u64; if vocab { self.connectors.len() } else { 0 }];
        let mut term_idf = [0f64; 64];

        for (ti, q) in qterms.iter_mut().enumerate() {
            if q.role != Role::Term && q.role != Role::ArgumentPhrase {
                hits.push(None);
                continue;
            }
            touched.clear();
            let met = (rules.specific_first && matches!(q.role, Role::Term | Role::ArgumentPhrase))
                .then_some(&mut met_names);
            self.gather(&q.term, q.whole, visible, &mut w, &mut touched, met);
            let df = touched.len();
            if df == 0 && q.role == Role::Term && rules.prose_words_no_mass {
                if let Some(dir) = req.directory.map(Directory::index) {
                    if !dir.names_term(&q.term, q.whole) {
                        if rules.compound_names_keep_mass && dir.compound_term(&q.term) {
                            // A compound spelling is a product's name (`SharePoint`): a
                            // capability the pool lacks, not prose.
                        } else if dir.describes_term(&q.term) {
                            q.role = Role::ProseWord;
                        } else if product_in_pool {
                            q.role = Role::UnknownWord;
                        } else if rules.unknown_word_abstains {
                            unknown.push(q.token.clone());
                        }
                    } else if rules.details_no_mass
                        && product_in_pool
                        && raw_verb[ti] == 0
                        && ti > 0
                        && !dir.compound_term(&q.term)
                    {
                        // An action verb is the capability itself: it never becomes a detail,
                        // nor does the first word, where a request puts its verb (`archive a
                        // slack channel`) whether or not the verb lists know it.
                        detail[ti] = true;
                    }
                }
            }
            let h = TokenHits {
                df,
                idf: idf(n, df),
            };
            if q.role == Role::Term && h.idf > 0.0 && raw_verb[ti] == 0 && !detail[ti] {
                has_object = true;
            }
            if asks_destroy && verbs[ti] == DESTROYS {
                for &d in &touched {
                    covers_destroy[d as usize] = true;
                }
            }
            // An argument phrase's word scores; only a term also covers and carries mass.
            let term = q.role == Role::Term;
            if term || q.role == Role::ArgumentPhrase {
                for &d in &touched {
                    let i = d as usize;
                    if score[i] == 0 {
                        cands.push(d);
                    }
                    score[i] += (w[i] & !ANCHOR_HIT) as u32;
                    if !term {
                        continue;
                    }
                    cov[i] += h.idf;
                    if w[i] & ANCHOR_HIT != 0 && h.idf > 0.0 {
                        anchor[i] |= ANY_ANCHOR | if raw_verb[ti] == 0 { OBJECT_ANCHOR } else { 0 };
                    }
                    if vocab && ti < 64 {
                        doc_mask[i] |= 1 << ti;
                        conn_mask[self.doc_connector[i] as usize] |= 1 << ti;
                    }
                }
                if term && ti < 64 {
                    term_idf[ti] = h.idf;
                }
            }
            for &d in &touched {
                w[d as usize] = 0;
            }
            hits.push(Some(h));
        }
        // Rule `details_no_mass`: the uncovered words are details only when the query
        // keeps an object word with mass besides them and the product's name; otherwise the
        // query's whole object is what the pool lacks, and they keep their mass.
        let mut details_dropped = false;
        if detail.contains(&true) {
            let keeps_object = qterms.iter().zip(&hits).enumerate().any(|(ti, (q, h))| {
                q.role == Role::Term
                    && !detail[ti]
                    && raw_verb[ti] == 0
                    && h.as_ref().is_some_and(|h| h.idf > 0.0)
                    && !self.product_word(&named_visible, &q.term)
            });
            if keeps_object {
                for (q, _) in qterms.iter_mut().zip(&detail).filter(|(_, &d)| d) {
                    q.role = Role::DetailWord;
                }
                details_dropped = true;
            } else {
                has_object = true;
            }
        }
        // Without its details, a request must still get the action it asks for.
        let action_needed = details_dropped && asks_action.contains(&true);
        // Per tool, whether it covers an asked verb: gathered again only when it matters.
        let mut covers_action = vec![false; if action_needed { self.len() } else { 0 }];
        if action_needed {
            for q in qterms
                .iter()
                .zip(&asks_action)
                .filter(|(_, &a)| a)
                .map(|(q, _)| q)
            {
                touched.clear();
                self.gather(&q.term, q.whole, visible, &mut w, &mut touched, None);
                for &d in &touched {
                    covers_action[d as usize] = true;
                    w[d as usize] = 0;
                }
            }
        }
        met_names.sort_unstable();
        met_names.dedup();
        let mass_of = |role: Role| -> f64 {
            qterms
                .iter()
                .zip(&hits)
                .filter(|(q, _)| q.role == role)
                .map(|(_, h)| h.as_ref().map_or(0.0, |h| h.idf))
                .sum()
        };
        let (mass, detail_mass) = (mass_of(Role::Term), mass_of(Role::DetailWord));

        if vocab {
            // Coverage by the named product's own vocabulary (still the caller's pool only).
            for &d in &cands {
                let i = d as usize;
                let c = self.doc_connector[i];
                if !named_visible.contains(&c) {
                    continue;
                }
                let mut extra = conn_mask[c as usize] & !doc_mask[i];
                while extra != 0 {
                    cov[i] += term_idf[extra.trailing_zeros() as usize];
                    extra &= extra - 1;
                }
            }
        }
        let abstain_product = rules.product_detection
            && named_visible.is_empty()
            && products.iter().any(|p| !p.visible);
        let abstain_unknown = !abstain_product && !unknown.is_empty();

        // Exact whole-name matches rank first.
        let exact: &[DocId] = self
            .by_name
            .get(req.query.trim())
            .map_or(&[], |v| v.as_slice());
        for &d in exact {
            if visible.contains(d) && score[d as usize] == 0 {
                cands.push(d);
            }
        }
        let restrict = rules.named_connector_only && !named_visible.is_empty();
        let ranked: Vec<Cand> = cands
            .iter()
            .filter(|&&d| !restrict || named_visible.contains(&self.doc_connector[d as usize]))
            .map(|&d| Cand {
                id: d,
                exact: exact.contains(&d),
                named: false,
                unasked_destroy: false,
                focus: 0.0,
                score: score[d as usize],
                coverage: {
                    // Details are details of the named product's request: for any other
                    // product's tool they keep their mass.
                    let own =
                        !details_dropped || named_visible.contains(&self.doc_connector[d as usize]);
                    let m = if own { mass } else { mass + detail_mass };
                    if m > 0.0 {
                        cov[d as usize] / m
                    } else {
                        0.0
                    }
                },
            })
            .collect();

        // The floor is a gate after ranking: it never reorders, it only cuts.
        let anchored = |c: &Cand| {
            let i = c.id as usize;
            !rules.name_anchor
                || if rules.object_anchor && has_object {
                    anchor[i] & OBJECT_ANCHOR != 0
                } else {
                    anchor[i] != 0
                }
        };
        let intended = |c: &Cand| {
            let i = c.id as usize;
            let named = self.name_verbs[i];
            if action_needed && !covers_action[i] {
                false
            } else if asks_destroy {
                covers_destroy[i]
            } else if asks_other_action && named & DESTROYS != 0 {
                false
            } else {
                !(asks_only_read && named & WRITES != 0 && named & READS == 0)
            }
        };
        let passes = |c: &Cand| {
            !abstain_product
                && !abstain_unknown
                && (c.exact || (mass > 0.0 && c.coverage >= FLOOR && anchored(c) && intended(c)))
        };
        // Rule `specific_first`: its order keys, for the candidates being ordered only.
        let order_keys = |c: &mut Cand| {
            if rules.specific_first {
                let d = c.id as usize;
                c.named = named_visible.contains(&self.doc_connector[d]);
                c.unasked_destroy = asked & DESTROYS == 0 && self.name_verbs[d] & DESTROYS != 0;
                c.focus = self.name_focus(c.id, &met_names);
            }
        };
        let limit = req.limit.get();
        let mut passing: Vec<Cand> = ranked.iter().copied().filter(passes).collect();
        passing.iter_mut().for_each(order_keys);
        top_k(&mut passing, limit, |a, b| self.order(a, b));

        let results: Vec<SearchResult> = passing
            .iter()
            .map(|c| {
                let d = self.doc(c.id);
                SearchResult {
                    name: d.name.clone(),
                    connector: d.connector.clone(),
                    description: d.description.clone(),
                    input_schema: d.input_schema.clone(),
                    score: c.score,
                    coverage: c.coverage,
                    explain: req.explain.then(|| self.field_matches(c.id, &qterms)),
                    order: (req.explain && rules.specific_first).then_some(OrderExplain {
                        named_product: c.named,
                        destroys_unasked: c.unasked_destroy,
                        name_focus: c.focus,
                    }),
                    id: c.id,
                }
            })
            .collect();

        let explanation = (req.explain || results.is_empty()).then(|| {
            let tokens: Vec<TokenExplain> = qterms
                .iter()
                .zip(&hits)
                .map(|(q, h)| {
                    let (df, idf_v) = match h {
                        Some(h) => (h.df, h.idf),
                        None => {
                            let df = self.df_only(q, visible, &mut w, &mut touched);
                            (df, idf(n, df))
                        }
                    };
                    let share = if q.role == Role::Term && mass > 0.0 { idf_v / mass } else { 0.0 };
                    TokenExplain {
                        token: q.token.clone(),
                        term: (q.term != q.token).then(|| q.term.clone()),
                        role: q.role,
                        df,
                        idf: idf_v,
                        mass_share: share,
                    }
                })
                .collect();
            let uncovered: Vec<String> = tokens
                .iter()
                .filter(|t| t.role == Role::Term && t.df == 0)
                .map(|t| t.token.clone())
                .collect();
            let mut reason = None;
            let mut best_rejected = None;
            if results.is_empty() {
                // Tools over the floor that only the anchor rule held back.
                let unanchored = ranked.iter().any(|c| c.coverage >= FLOOR && !anchored(c));
                // Of those, some had only an action verb of the query in their name.
                let verb_anchored = ranked
                    .iter()
                    .any(|c| c.coverage >= FLOOR && !anchored(c) && anchor[c.id as usize] != 0);
                // Tools over the floor, anchored, that the query's intent held back.
                let unintended = ranked
                    .iter()
                    .any(|c| c.coverage >= FLOOR && anchored(c) && !intended(c));
                // With rule `specific_first` the best rejected is the nearest to the floor
                // (no order keys are spent on every candidate of an empty answer).
                let best = |a: &&Cand, b: &&Cand| {
                    if rules.specific_first {
                        b.coverage
                            .total_cmp(&a.coverage)
                            .then(b.score.cmp(&a.score))
                            .then_with(|| self.by_name(a, b))
                    } else {
                        self.order(a, b)
                    }
                };
                best_rejected = ranked.iter().min_by(best).map(|c| {
                    let fm = self.field_matches(c.id, &qterms);
                    let (covered, missed): (Vec<_>, Vec<_>) = qterms
                        .iter()
                        .filter(|q| q.role == Role::Term)
                        .map(|q| (q.token.clone(), fm.iter().any(|m| m.token == q.token)))
                        .partition(|(_, hit)| *hit);
                    Rejected {
                        name: self.doc(c.id).name.to_string(),
                        score: c.score,
                        coverage: c.coverage,
                        covered: covered.into_iter().map(|x| x.0).collect(),
                        missed: missed.into_iter().map(|x| x.0).collect(),
                    }
                });
                reason = Some(if n == 0 {
                    "the pool is empty".to_owned()
                } else if abstain_product {
                    let labels: Vec<&str> = products
                        .iter()
                        .filter(|p| !p.visible)
                        .map(|p| p.label.as_str())
                        .collect();
                    format!(
                        "the query names {}, which is not in your pool",
                        labels.join(", ")
                    )
                } else if abstain_unknown {
                    format!(
                        "no connector of the gateway knows {}: the query may name a product the gateway does not offer",
                        unknown.join(", ")
                    )
                } else if mass == 0.0 {
                    "no query token carries mass (only function words or argument values)"
                        .to_owned()
                } else if unintended && asks_destroy {
                    format!(
                        "the query asks to delete or remove, and no tool that covers {FLOOR} of its IDF mass does"
                    )
                } else if unintended && action_needed {
                    let asked: Vec<&str> = qterms
                        .iter()
                        .zip(&asks_action)
                        .filter(|(_, &a)| a)
                        .map(|(q, _)| q.token.as_str())
                        .collect();
                    format!(
                        "without the details nothing in the pool covers, no tool that covers {FLOOR} of the query's IDF mass also does what it asks ({})",
                        asked.join(", ")
                    )
                } else if unintended && asks_only_read {
                    format!(
                        "the query asks to read, and the only tools that cover {FLOOR} of its IDF mass change or delete data"
                    )
                } else if unintended {
                    format!(
                        "the only tools that cover {FLOOR} of the query's IDF mass delete or remove, which the query does not ask for"
                    )
                } else if let Some(b) = best_rejected.as_ref().filter(|_| verb_anchored) {
                    format!(
                        "no tool covers {FLOOR} of the query's IDF mass with a query word other than an action verb in its name or connector label (a verb like list or get alone does not count); the best candidate covers {:.3}",
                        b.coverage
                    )
                } else if let Some(b) = best_rejected.as_ref().filter(|_| unanchored) {
                    format!(
                        "no tool covers {FLOOR} of the query's IDF mass with a query word in its name or connector label (a description alone does not count); the best candidate covers {:.3}",
                        b.coverage
                    )
                } else if let Some(b) = &best_rejected {
                    format!(
                        "no tool covers {FLOOR} of the query's IDF mass; the best candidate covers {:.3}",
                        b.coverage
                    )
                } else {
                    "no tool in the pool covers any query token".to_owned()
                });
            }
            Explanation {
                pool: n,
                floor: FLOOR,
                mass,
                tokens,
                uncovered,
                products,
                reason,
                best_rejected,
            }
        });

        SearchResponse {
            query: req.query.to_owned(),
            results,
            explanation,
        }
    }

    /// Rule `argument_phrases`: the words of argument phrases lose their mass, only if a word
    /// outside the phrases other than a product's name keeps mass (`jira for bugs` stays as
    /// it is). A phrase that names the product (`into a Notion database`, `for a salesforce
    /// object`) says which of its resources is meant: it keeps its mass.
    fn mark_argument_phrases(&self, qterms: &mut [QueryTerm], named_visible: &[u32]) {
        let product_word = |t: &str| self.product_word(named_visible, t);
        let anchored = qterms
            .iter()
            .any(|q| q.role == Role::Term && q.phrase == 0 && !product_word(&q.term));
        if !anchored {
            return;
        }
        let naming: Vec<u32> = qterms
            .iter()
            .filter(|q| q.phrase != 0 && product_word(&q.term))
            .map(|q| q.phrase)
            .collect();
        for q in qterms.iter_mut() {
            if q.role == Role::Term && q.phrase != 0 && !naming.contains(&q.phrase) {
                q.role = Role::ArgumentPhrase;
            }
        }
    }

    /// Whether `t` is a word (or a token of a word) of a named product's label.
    fn product_word(&self, named: &[u32], t: &str) -> bool {
        named.iter().any(|&c| {
            self.connectors[c as usize]
                .1
                .iter()
                .any(|w| w.whole == t || w.parts.iter().any(|p| p == t))
        })
    }

    /// Exact whole-name first; then the SPEC's score desc, coverage desc, or with rule
    /// `specific_first` the named product, no unasked destruction, name focus, coverage,
    /// score; last the name by codepoint.
    fn order(&self, a: &Cand, b: &Cand) -> Ordering {
        let keys = || {
            if self.rules.specific_first {
                b.named
                    .cmp(&a.named)
                    .then(a.unasked_destroy.cmp(&b.unasked_destroy))
                    .then(b.focus.total_cmp(&a.focus))
                    .then(b.coverage.total_cmp(&a.coverage))
                    .then(b.score.cmp(&a.score))
            } else {
                b.score
                    .cmp(&a.score)
                    .then(b.coverage.total_cmp(&a.coverage))
            }
        };
        b.exact
            .cmp(&a.exact)
            .then_with(keys)
            .then_with(|| self.by_name(a, b))
    }

    /// The last tie-break: name by codepoint, then index id.
    fn by_name(&self, a: &Cand, b: &Cand) -> Ordering {
        // `str` orders by UTF-8 bytes, which is Unicode codepoint order.
        self.docs[a.id as usize]
            .name
            .cmp(&self.docs[b.id as usize].name)
            .then(a.id.cmp(&b.id))
    }

    fn field_matches(&self, id: DocId, qterms: &[QueryTerm]) -> Vec<FieldMatch> {
        let dt = &self.doc_terms[id as usize];
        let has = |field: &[TermId], t: &str| {
            self.dict
                .get(t)
                .is_some_and(|tid| field.binary_search(tid).is_ok())
        };
        let mut out = Vec::new();
        for q in qterms
            .iter()
            .filter(|q| matches!(q.role, Role::Term | Role::ArgumentPhrase))
        {
            let t = q.term.as_str();
            let (name, name_token) = if has(&dt.name, t) {
                (Some("exact"), None)
            } else if q.whole {
                (None, None)
            } else {
                let p = dt.name.iter().map(|&n| &*self.text[n as usize]).find(|n| {
                    let (short, long) = if n.len() < t.len() { (*n, t) } else { (t, *n) };
                    short != long
                        && short.chars().count() >= MIN_PREFIX_LEN
                        && long.starts_with(short)
                });
                (p.map(|_| "prefix"), p.map(str::to_owned))
            };
            let alts = self.alternatives(t);
            let (name, name_token) = match name {
                Some(_) => (name, name_token),
                None => match alts.iter().find(|a| has(&dt.name, a)) {
                    Some(a) => (Some("synonym"), Some(a.clone())),
                    None => (None, None),
                },
            };
            let connector = has(&dt.label, t);
            let mut description = has(&dt.desc, t);
            let mut parameter = has(&dt.param, t);
            let mut synonym = None;
            if name.is_none() && !connector && !description && !parameter {
                if let Some(a) = alts.iter().find(|a| has(&dt.desc, a) || has(&dt.param, a)) {
                    description = has(&dt.desc, a);
                    parameter = !description;
                    synonym = Some(a.clone());
                }
            }
            let weight = match name {
                Some("exact") => EXACT_NAME_TOKEN,
                Some("prefix") => NAME_PREFIX,
                Some(_) => SYNONYM_NAME,
                None => 0,
            } + if connector { CONNECTOR_LABEL } else { 0 }
                + if description { DESCRIPTION_TOKEN } else { 0 }
                + if parameter { PARAMETER_NAME } else { 0 };
            if weight > 0 {
                out.push(FieldMatch {
                    token: q.token.clone(),
                    name,
                    name_token,
                    connector,
                    description,
                    parameter,
                    synonym,
                    weight,
                });
            }
        }
        out
    }

    /// Label and terms of each distinct connector in the index.
    pub(super) fn connector_labels(&self) -> &[(String, Vec<LabelWord>)] {
        &self.connectors
    }
}

/// Keeps the first `k` of `v` under `cmp`, sorted.
fn top_k<T>(v: &mut Vec<T>, k: usize, mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if v.len() > k && k > 0 {
        v.select_nth_unstable_by(k - 1, &mut cmp);
        v.truncate(k);
    }
    v.truncate(k);
    v.sort_unstable_by(cmp);
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("tools", &self.docs.len())
            .field("terms", &self.text.len())
            .field("rules", &self.rules)
            .finish()
    }
}
