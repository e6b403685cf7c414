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
//! `u32`, tool count `u32`, tools digest `u64`, one name-length byte per tool, term count, then
//! per term its text (length, UTF-8) and four posting lists (name, label, parameter, prose),
//! each a count and strictly ascending tool ids stored as gaps. Reading checks every length and
//! id against the bytes and the tools: damaged input is an error, never a panic.

use super::index::{DocId, Fnv, Index, Terms};
use crate::packed::{Corrupt, Reader, Writer};
use crate::rank::ToolDoc;

/// The first bytes of a compiled index.
pub const MAGIC: [u8; 4] = *b"FGIX";
/// The layout's version. A compiled index of another version is never read: the gateway builds
/// the index from the tools instead (and an operator's rebuild call recompiles every tenant).
pub const FORMAT: u32 = 2;

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
    w.len(terms.len());
    for t in 0..terms.len() as u32 {
        w.str(terms.text(t));
        for k in 0..K {
            let list = terms.list(t, k);
            w.len(list.len());
            let mut last = None;
            for &id in list {
                w.varint(last.map_or(id, |l: DocId| id - l));
                last = Some(id);
            }
        }
    }
}

fn read_terms<const K: usize>(r: &mut Reader, tools: usize) -> Result<Terms<K>, CompiledError> {
    let count = r.count()?;
    let mut terms = Terms::default();
    terms.reserve(count);
    for _ in 0..count {
        if !terms.push_term(r.str()?) {
            return Err(CompiledError::Corrupt("terms out of order or repeated"));
        }
        for _ in 0..K {
            let n = r.count()?;
            terms.reserve_ids(n);
            let mut last: Option<DocId> = None;
            for _ in 0..n {
                let gap = r.varint()?;
                let id = match last {
                    None => gap,
                    Some(_) if gap == 0 => {
                        return Err(CompiledError::Corrupt("a posting list is not ascending"))
                    }
                    Some(l) => l
                        .checked_add(gap)
                        .ok_or(CompiledError::Corrupt("a tool id overflows"))?,
                };
                if id as usize >= tools {
                    return Err(CompiledError::Corrupt("a tool id past the last tool"));
                }
                terms.push_id(id);
                last = Some(id);
            }
            terms.end_list();
        }
    }
    terms.index_slots();
    Ok(terms)
}

impl From<Corrupt> for CompiledError {
    fn from(Corrupt(what): Corrupt) -> CompiledError {
        CompiledError::Corrupt(what)
    }
}
