//! The bytes of what the admin write compiles: little-endian integers, LEB128 varints, and
//! length-prefixed UTF-8, written by one [`Writer`] and read back by one [`Reader`] that checks
//! every length against the input.
//!
//! Snapshots are read by isolates that did not write them, possibly from bytes damaged or
//! written behind the gateway's back, so reading never trusts a length: damaged input is a
//! [`Corrupt`] error naming what was wrong, never a panic or an allocation the input does not
//! pay for.

/// Damaged bytes: what was found wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt(pub &'static str);

impl std::fmt::Display for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Appends to a byte vector.
#[derive(Default)]
pub struct Writer {
    pub out: Vec<u8>,
}

impl Writer {
    pub fn with_capacity(bytes: usize) -> Writer {
        Writer {
            out: Vec::with_capacity(bytes),
        }
    }

    pub fn u8(&mut self, v: u8) {
        self.out.push(v);
    }

    pub fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    pub fn varint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    /// A count or length. Everything compiled is far below 4 GiB (a KV value is at most 25 MiB).
    pub fn len(&mut self, n: usize) {
        self.varint(u32::try_from(n).expect("compiled lengths fit 32 bits"));
    }

    /// Length-prefixed bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.out.extend_from_slice(b);
    }

    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
}

/// Reads what a [`Writer`] wrote, checking every length.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// Where the next read starts.
    pub fn position(&self) -> usize {
        self.at
    }

    /// The bytes read since `start` (a [`Reader::position`] of this reader).
    pub fn since(&self, start: usize) -> &'a [u8] {
        &self.bytes[start.min(self.at)..self.at]
    }

    pub fn at_end(&self) -> bool {
        self.at == self.bytes.len()
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(Corrupt("the bytes end early"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, Corrupt> {
        Ok(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> Result<u32, Corrupt> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, Corrupt> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    /// A LEB128 number of at most 32 bits. Most are one byte (ids stored as gaps, counts,
    /// lengths): that case is inlined where it is read.
    #[inline]
    pub fn varint(&mut self) -> Result<u32, Corrupt> {
        match self.bytes.get(self.at) {
            Some(&b) if b < 0x80 => {
                self.at += 1;
                Ok(u32::from(b))
            }
            _ => self.varint_long(),
        }
    }

    fn varint_long(&mut self) -> Result<u32, Corrupt> {
        let mut v: u32 = 0;
        for shift in [0, 7, 14, 21, 28] {
            let b = self.u8()?;
            let bits = u32::from(b & 0x7f);
            if shift == 28 && bits > 0x0f {
                break;
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Corrupt("a number overflows 32 bits"))
    }

    /// A count of things each at least one byte long: never more than the bytes left, so a
    /// damaged count cannot reserve memory the input does not hold.
    pub fn count(&mut self) -> Result<usize, Corrupt> {
        let n = self.varint()? as usize;
        self.count_of(n)
    }

    /// `n` checked as a count of things each at least one byte long, like [`Reader::count`].
    pub fn count_of(&self, n: usize) -> Result<usize, Corrupt> {
        if n > self.bytes.len() - self.at {
            return Err(Corrupt("a count exceeds the bytes left"));
        }
        Ok(n)
    }

    /// Length-prefixed bytes.
    pub fn bytes(&mut self) -> Result<&'a [u8], Corrupt> {
        let n = self.varint()? as usize;
        self.take(n)
    }

    pub fn str(&mut self) -> Result<&'a str, Corrupt> {
        std::str::from_utf8(self.bytes()?).map_err(|_| Corrupt("a text is not UTF-8"))
    }

    pub fn bool(&mut self) -> Result<bool, Corrupt> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Corrupt("a flag is neither 0 nor 1")),
        }
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.bytes[self.at..];
        self.at = self.bytes.len();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back() {
        let mut w = Writer::default();
        w.u8(7);
        w.u32(0xdead_beef);
        w.u64(u64::MAX - 1);
        for v in [0, 1, 127, 128, 16_383, 16_384, u32::MAX] {
            w.varint(v);
        }
        w.str("héllo");
        w.u8(1);
        let mut r = Reader::new(&w.out);
        assert_eq!(r.u8(), Ok(7));
        assert_eq!(r.u32(), Ok(0xdead_beef));
        assert_eq!(r.u64(), Ok(u64::MAX - 1));
        for v in [0, 1, 127, 128, 16_383, 16_384, u32::MAX] {
            assert_eq!(r.varint(), Ok(v));
        }
        assert_eq!(r.str(), Ok("héllo"));
        assert_eq!(r.bool(), Ok(true));
        assert!(r.at_end());
    }

    #[test]
    fn every_truncation_is_an_error() {
        let mut w = Writer::default();
        w.varint(300);
        w.str("some text");
        w.u64(9);
        for cut in 0..w.out.len() {
            let mut r = Reader::new(&w.out[..cut]);
            let read = r.varint().and_then(|_| r.str()).and_then(|_| r.u64());
            assert!(read.is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn damaged_numbers_and_texts_are_named() {
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x7f]).varint(),
            Err(Corrupt("a number overflows 32 bits"))
        );
        assert_eq!(
            Reader::new(&[5, 1]).count(),
            Err(Corrupt("a count exceeds the bytes left"))
        );
        assert_eq!(
            Reader::new(&[2, 0xc3, 0x28]).str(),
            Err(Corrupt("a text is not UTF-8"))
        );
        assert_eq!(
            Reader::new(&[2]).bool(),
            Err(Corrupt("a flag is neither 0 nor 1"))
        );
    }
}
