//! The search index compiled once, when an operator writes a catalog, and read back by an
//! isolate without stemming or tokenizing any tool text.
//!
//! Building an index reads every description and schema of the pool; at 10,000 tools that is
//! most of a cold search. The compiled form stores exactly what that reading produces — the
//! terms and their postings, and each name's term count. Everything else follows cheaply from
//! the tools' names and labels ([`Index::finish`]), so the tools themselves are handed back in,
//! in the order they were compiled.
//!
//! Layout (integers little-endian, counts and ids as LEB128 varints): magic `FGIX`, format
//! `u32`, tool count `u32`, tools digest `u64`, one name-length byte per tool, then two blocks of
//! terms (the stemmed terms with four posting lists each: name, label, parameter, prose; then
//! the name tokens as spelled, with one). A block is its term count, the length of all its
//! terms' text and that text (UTF-8, terms in order), each term's length, each list's length
//! (term by term), then every list's strictly ascending tool ids as gaps. Each part is read in
//! bulk into the arrays [`Terms`] keeps (format 2 interleaved them term by term, which cost a
//! UTF-8 check and a growing copy per term: half of reading the index back). Reading checks
//! every length and id against the bytes and the tools: damaged input is an error, never a
//! panic.

use super::index::{DocId, Fnv, Index, Terms};
use crate::packed::{Corrupt, Reader, Writer};
use crate::rank::ToolDoc;

/// The first bytes of a compiled index.
pub const MAGIC: [u8; 4] = *b"FGIX";
/// The layout's version. A compiled index of another version is never read: the gateway builds
/// the index from the tools instead (and an operator's rebuild call recompiles every tenant).
pub const FORMAT: u32 = 3;

/// Why compiled bytes cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompiledError {
    /// The bytes do not start with [`MAGIC`].
    NotAnIndex,
    /// Compiled by a gateway with another layout.
    OtherFormat { found: u32 },
    /// Compiled for other tools (another count, names, connectors or notes).
    ToolsDiffer,
    /// The bytes end early, run on, or hold an impossible value.
    Corrupt(&'static str),
}

impl std::fmt::Display for CompiledError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompiledError::NotAnIndex => write!(f, "not a compiled search index"),
            CompiledError::OtherFormat { found } => write!(
                f,
                "compiled search index of format {found}, this gateway reads format {FORMAT}: recompile it"
            ),
            CompiledError::ToolsDiffer => {
                write!(f, "the compiled search index was built for other tools")
            }
            CompiledError::Corrupt(what) => write!(f, "compiled search index damaged: {what}"),
        }
    }
}

impl std::error::Error for CompiledError {}

/// FNV-1a over each tool's name, connector and notes: what the compiled postings are aligned to.
/// Cheap enough to check on every read; the document version guards the rest of the text.
pub fn tools_digest(docs: &[ToolDoc]) -> u64 {
    let mut h = Fnv::new();
    // Each text ends with 0xff (never in UTF-8), each tool with one more.
    let mut eat = |bytes: &[u8]| {
        h.eat_all(bytes);
        h.eat(0xff);
    };
    for d in docs {
        eat(d.name.as_bytes());
        eat(d.connector.as_bytes());
        for n in &d.notes {
            eat(n.as_bytes());
        }
        eat(&[]);
    }
    h.0
}

impl Index {
    /// The compiled form of this index (see the module's layout).
    pub fn compile(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(self.len() * 160 + 64);
        w.out.extend_from_slice(&MAGIC);
        w.u32(FORMAT);
        w.u32(self.len() as u32);
        w.u64(tools_digest(self.docs()));
        w.out.extend_from_slice(&self.name_len);
        write_terms(&mut w, &self.terms);
        write_terms(&mut w, &self.surface);
        w.out
    }

    /// Reads a compiled index back over the same tools, in the order they were compiled.
    pub fn from_compiled(bytes: &[u8], docs: Vec<ToolDoc>) -> Result<Index, CompiledError> {
        let mut r = Reader::new(bytes);
        if r.take(4).ok() != Some(&MAGIC[..]) {
            return Err(CompiledError::NotAnIndex);
        }
        let format = r.u32()?;
        if format != FORMAT {
            return Err(CompiledError::OtherFormat { found: format });
        }
        let tools = r.u32()? as usize;
        let digest = r.u64()?;
        if tools != docs.len() || digest != tools_digest(&docs) {
            return Err(CompiledError::ToolsDiffer);
        }
        let mut ix = Index::empty(tools);
        ix.name_len.extend_from_slice(r.take(tools)?);
        ix.terms = read_terms(&mut r, tools)?;
        ix.surface = read_terms(&mut r, tools)?;
        if !r.at_end() {
            return Err(CompiledError::Corrupt("bytes past the last term"));
        }
        ix.finish(docs);
        Ok(ix)
    }
}

fn write_terms<const K: usize>(w: &mut Writer, terms: &Terms<K>) {
    let count = terms.len();
    w.len(count);
    let text_len: usize = (0..count as u32).map(|t| terms.text(t).len()).sum();
    w.len(text_len);
    for t in 0..count as u32 {
        w.out.extend_from_slice(terms.text(t).as_bytes());
    }
    for t in 0..count as u32 {
        w.len(terms.text(t).len());
    }
    for t in 0..count as u32 {
        for k in 0..K {
            w.len(terms.list(t, k).len());
        }
    }
    for t in 0..count as u32 {
        for k in 0..K {
            let mut last = None;
            for &id in terms.list(t, k) {
                w.varint(last.map_or(id, |l: DocId| id - l));
                last = Some(id);
            }
        }
    }
}

/// Reads one [`write_terms`] block. Its parts come in bulk, each checked in one pass: the terms'
/// text (one UTF-8 check), their lengths, every list's length, then the lists' ids.
fn read_terms<const K: usize>(r: &mut Reader, tools: usize) -> Result<Terms<K>, CompiledError> {
    let count = r.count()?;
    let text_len = r.count()?;
    let text = std::str::from_utf8(r.take(text_len)?)
        .map_err(|_| CompiledError::Corrupt("the terms' text is not UTF-8"))?;
    // Each length and list count takes at least one byte: `count` bounds them by the input.
    let mut text_ends = Vec::with_capacity(r.count_of(count)?);
    let mut end = 0usize;
    let mut previous = "";
    for _ in 0..count {
        let start = end;
        end = start
            .checked_add(r.varint()? as usize)
            .filter(|&e| e <= text.len() && text.is_char_boundary(e))
            .ok_or(CompiledError::Corrupt("a term runs past the terms' text"))?;
        let term = &text[start..end];
        if !text_ends.is_empty() && previous >= term {
            return Err(CompiledError::Corrupt("terms out of order or repeated"));
        }
        previous = term;
        text_ends.push(end as u32);
    }
    if end != text.len() {
        return Err(CompiledError::Corrupt(
            "the terms' text runs past its terms",
        ));
    }
    let lists = r.count_of(count.saturating_mul(K))?;
    let mut list_ends = Vec::with_capacity(lists);
    let mut ids_total = 0u32;
    for _ in 0..lists {
        ids_total = ids_total
            .checked_add(r.varint()?)
            .ok_or(CompiledError::Corrupt("the posting lists overflow"))?;
        list_ends.push(ids_total);
    }
    // Every id takes at least one byte.
    let mut ids: Vec<DocId> = Vec::with_capacity(r.count_of(ids_total as usize)?);
    let mut start = 0usize;
    for &end in &list_ends {
        let mut next: DocId = 0;
        for i in start..end as usize {
            let gap = r.varint()?;
            if i > start && gap == 0 {
                return Err(CompiledError::Corrupt("a posting list is not ascending"));
            }
            let id = next
                .checked_add(gap)
                .ok_or(CompiledError::Corrupt("a tool id overflows"))?;
            if id as usize >= tools {
                return Err(CompiledError::Corrupt("a tool id past the last tool"));
            }
            ids.push(id);
            next = id;
        }
        start = end as usize;
    }
    Ok(Terms::from_parts(
        text.to_owned(),
        text_ends,
        list_ends,
        ids,
    ))
}

impl From<Corrupt> for CompiledError {
    fn from(Corrupt(what): Corrupt) -> CompiledError {
        CompiledError::Corrupt(what)
    }
}
