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

use super::index::{DocId, Index};
use crate::rank::ToolDoc;

/// The first bytes of a compiled index.
pub const MAGIC: [u8; 4] = *b"FGIX";
/// The layout's version. A compiled index of another version is never read: the gateway builds
/// the index from the tools instead (and an operator's rebuild call recompiles every tenant).
pub const FORMAT: u32 = 1;

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
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes.iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
    };
    for d in docs {
        eat(d.name.as_bytes());
        eat(d.connector.as_bytes());
        for n in &d.notes {
            eat(n.as_bytes());
        }
        eat(&[]);
    }
    h
}

impl Index {
    /// The compiled form of this index (see the module's layout).
    pub fn compile(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * 160 + 64);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT.to_le_bytes());
        out.extend_from_slice(&(self.len() as u32).to_le_bytes());
        out.extend_from_slice(&tools_digest(self.docs()).to_le_bytes());
        out.extend_from_slice(&self.name_len);
        put_varint(&mut out, self.text.len() as u32);
        for (text, p) in self.text.iter().zip(&self.postings) {
            put_varint(&mut out, text.len() as u32);
            out.extend_from_slice(text.as_bytes());
            for list in [&p.name, &p.label, &p.param, &p.prose] {
                put_varint(&mut out, list.len() as u32);
                let mut last = None;
                for &id in list {
                    put_varint(&mut out, last.map_or(id, |l: DocId| id - l));
                    last = Some(id);
                }
            }
        }
        out
    }

    /// Reads a compiled index back over the same tools, in the order they were compiled.
    pub fn from_compiled(bytes: &[u8], docs: Vec<ToolDoc>) -> Result<Index, CompiledError> {
        let mut r = Reader { bytes, at: 0 };
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
        let terms = r.count()?;
        for _ in 0..terms {
            let len = r.count()?;
            let text = std::str::from_utf8(r.take(len)?)
                .map_err(|_| CompiledError::Corrupt("a term is not UTF-8"))?;
            let before = ix.text.len();
            let term = ix.intern(text) as usize;
            if ix.text.len() == before {
                return Err(CompiledError::Corrupt("a term appears twice"));
            }
            let p = &mut ix.postings[term];
            for list in [&mut p.name, &mut p.label, &mut p.param, &mut p.prose] {
                let n = r.count()?;
                list.reserve_exact(n);
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
                    list.push(id);
                    last = Some(id);
                }
            }
        }
        if r.at != bytes.len() {
            return Err(CompiledError::Corrupt("bytes past the last term"));
        }
        ix.finish(docs);
        Ok(ix)
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CompiledError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(CompiledError::Corrupt("the bytes end early"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, CompiledError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, CompiledError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn varint(&mut self) -> Result<u32, CompiledError> {
        let mut v: u32 = 0;
        for shift in [0, 7, 14, 21, 28] {
            let b = self.take(1)?[0];
            let bits = u32::from(b & 0x7f);
            if shift == 28 && bits > 0x0f {
                return Err(CompiledError::Corrupt("a number overflows 32 bits"));
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(CompiledError::Corrupt("a number overflows 32 bits"))
    }

    /// A count of things each at least one byte long: never more than the bytes left, so a
    /// damaged count cannot reserve memory the input does not hold.
    fn count(&mut self) -> Result<usize, CompiledError> {
        let n = self.varint()? as usize;
        if n > self.bytes.len() - self.at {
            return Err(CompiledError::Corrupt("a count exceeds the bytes left"));
        }
        Ok(n)
    }
}
