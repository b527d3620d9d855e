//! Redis's HyperLogLog string layout, byte for byte, and the estimator Redis 7 computes from it.
//!
//! ```text
//!  0      4     5        8                16
//!  +------+-----+--------+----------------+---------------------------------------------+
//!  | HYLL | enc | 3 x 00 | cached card LE | registers: dense 12,288 bytes or sparse ops |
//!  +------+-----+--------+----------------+---------------------------------------------+
//!  enc 0 = dense, 1 = sparse; bit 7 of byte 15 set = the cached cardinality is stale
//! ```
//!
//! Dense: 16,384 registers of 6 bits, register `i` at bit `6 i` of the register bytes, least
//! significant bits first. Sparse: a run-length list of opcodes that covers the 16,384 registers
//! in order:
//!
//! | opcode  | bits                  | meaning                                   |
//! |---------|-----------------------|-------------------------------------------|
//! | ZERO    | `00llllll`            | `l + 1` registers (1..64) are 0           |
//! | XZERO   | `01llllll llllllll`   | `l + 1` registers (1..16384) are 0        |
//! | VAL     | `1vvvvvll`            | `l + 1` registers (1..4) hold `v + 1`     |
//!
//! A sparse value is promoted to dense when a register must exceed 32 (the largest VAL) or when
//! an edit would make it longer than `hll-sparse-max-bytes`. An XZERO cut in half by the end of
//! a corrupted value reads its second byte past the end, as Redis does (see [`Edit`]).

/// Header bytes before the registers.
pub const HDR_SIZE: usize = 16;
/// Bits of the hash that pick the register.
const P: u32 = 14;
/// Bits of the hash left for the run of zeros.
const Q: usize = 64 - P as usize;
/// Number of registers.
pub const REGISTERS: usize = 1 << P;
/// Largest value a 6-bit register holds.
const REGISTER_MAX: u8 = 63;
/// Length of a dense value.
pub const DENSE_SIZE: usize = HDR_SIZE + REGISTERS * 6 / 8;
/// Encoding byte of a dense value.
pub const DENSE: u8 = 0;
/// Encoding byte of a sparse value.
pub const SPARSE: u8 = 1;
/// Largest register value a sparse VAL opcode holds.
const SPARSE_VAL_MAX: u8 = 32;
/// Longest run of a VAL opcode.
const SPARSE_VAL_MAX_LEN: usize = 4;
/// Longest run of a ZERO opcode.
const SPARSE_ZERO_MAX_LEN: usize = 64;
/// Longest run of an XZERO opcode.
const SPARSE_XZERO_MAX_LEN: usize = 16384;
/// The seed Redis hashes elements with.
const SEED: u32 = 0xadc8_3b19;
/// The estimator's constant `0.5 / ln 2`.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// The value's registers cannot be decoded (a sparse run list that does not cover exactly the
/// 16,384 registers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// MurmurHash2, 64-bit variant A, reading 8-byte blocks little-endian (as Redis does on every
/// architecture).
pub fn murmur64a(key: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = u64::from(seed) ^ (key.len() as u64).wrapping_mul(M);
    let mut blocks = key.chunks_exact(8);
    for b in &mut blocks {
        let mut k = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element lands in and the register value it proposes: the position of the
/// first 1 bit (1-based) in the hash bits above the index, at most `Q + 1`.
pub fn register_for(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// A fresh, empty value: sparse, one XZERO covering every register, cardinality 0 cached.
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR_SIZE + 2);
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(SPARSE_XZERO_MAX_LEN);
        v.extend_from_slice(&xzero(run));
        left -= run;
    }
    v
}

/// Whether a string passes Redis's check for an HLL value: the magic, a known encoding, and the
/// exact length when dense. (The registers are checked only when they are decoded.)
pub fn is_hll(v: &[u8]) -> bool {
    v.len() >= HDR_SIZE
        && &v[..4] == b"HYLL"
        && v[4] <= SPARSE
        && (v[4] != DENSE || v.len() == DENSE_SIZE)
}

/// Whether a (checked) value is dense.
pub fn is_dense(v: &[u8]) -> bool {
    v[4] == DENSE
}

/// The cached cardinality, if it is not marked stale.
pub fn cached(v: &[u8]) -> Option<u64> {
    if v[15] & 0x80 != 0 {
        return None;
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&v[8..16]);
    Some(u64::from_le_bytes(b))
}

/// Stores `card` as the cached cardinality (a value with bit 63 set stays marked stale, as in
/// Redis).
pub fn set_cached(v: &mut [u8], card: u64) {
    v[8..16].copy_from_slice(&card.to_le_bytes());
}

/// Marks the cached cardinality stale.
pub fn invalidate(v: &mut [u8]) {
    v[15] |= 0x80;
}

/// Register `i` of dense register bytes.
pub fn dense_get(regs: &[u8], i: usize) -> u8 {
    let bit = i * 6;
    let (byte, shift) = (bit / 8, bit % 8);
    let b0 = u16::from(regs[byte]);
    let b1 = u16::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> shift) | (b1 << (8 - shift))) & u16::from(REGISTER_MAX)) as u8
}

/// Sets register `i` of dense register bytes to `val` (at most 63).
pub fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let bit = i * 6;
    let (byte, shift) = (bit / 8, bit % 8);
    let v = u16::from(val);
    let mask = u16::from(REGISTER_MAX);
    regs[byte] = ((u16::from(regs[byte]) & !(mask << shift)) | (v << shift)) as u8;
    if shift > 2
        && let Some(b1) = regs.get_mut(byte + 1)
    {
        let keep = !(mask >> (8 - shift));
        *b1 = ((u16::from(*b1) & keep) | (v >> (8 - shift))) as u8;
    }
}

/// Raises dense register `i` to `count`; true when it was lower.
fn dense_raise(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

/// One decoded sparse opcode.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    /// A run of `len` zero registers, in one byte (ZERO) or two (XZERO, `wide`).
    Zero { len: usize, wide: bool },
    /// A run of `len` registers holding `val`.
    Val { val: u8, len: usize },
}

impl Op {
    /// The opcode at `p`; `past_end` is read for the second byte of an XZERO cut by the end.
    fn at(v: &[u8], p: usize, past_end: u8) -> Op {
        let b = v[p];
        if b & 0x80 != 0 {
            Op::Val {
                val: ((b >> 2) & 0x1f) + 1,
                len: usize::from(b & 0x03) + 1,
            }
        } else if b & 0x40 != 0 {
            let lo = v.get(p + 1).copied().unwrap_or(past_end);
            Op::Zero {
                len: ((usize::from(b & 0x3f) << 8) | usize::from(lo)) + 1,
                wide: true,
            }
        } else {
            Op::Zero {
                len: usize::from(b & 0x3f) + 1,
                wide: false,
            }
        }
    }

    /// Registers covered.
    fn span(self) -> usize {
        match self {
            Op::Zero { len, .. } | Op::Val { len, .. } => len,
        }
    }

    /// Bytes taken.
    fn size(self) -> usize {
        match self {
            Op::Zero { wide: true, .. } => 2,
            _ => 1,
        }
    }
}

/// A VAL opcode byte (`val` 1..=32, `len` 1..=4).
fn val_op(val: u8, len: usize) -> u8 {
    0x80 | ((val - 1) << 2) | (len - 1) as u8
}

/// An XZERO opcode (`len` 1..=16384).
fn xzero(len: usize) -> [u8; 2] {
    let l = len - 1;
    [0x40 | (l >> 8) as u8, (l & 0xff) as u8]
}

/// Appends a zero run of `len` (1..=16384): ZERO up to 64, XZERO beyond.
fn push_zeros(seq: &mut Vec<u8>, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        seq.extend_from_slice(&xzero(len));
    } else {
        seq.push((len - 1) as u8);
    }
}

/// Walks the sparse opcodes of `v`, calling `run(first_register, op)` for each.
///
/// # Errors
/// [`Corrupt`] unless the runs add up to exactly the 16,384 registers: an opcode running past
/// the last register is refused before `run` sees it (as Redis does since the fix for
/// CVE-2025-32023, which the Redis 7.0 this is checked against carries), and so is a list that
/// ends short.
fn walk_sparse(v: &[u8], past_end: u8, mut run: impl FnMut(usize, Op)) -> Result<(), Corrupt> {
    let mut p = HDR_SIZE;
    let mut idx = 0usize;
    while p < v.len() {
        let op = Op::at(v, p, past_end);
        if idx + op.span() > REGISTERS {
            return Err(Corrupt);
        }
        run(idx, op);
        idx += op.span();
        p += op.size();
    }
    if idx == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// A value being edited by one command, with the byte just past its end.
///
/// Redis reads that byte as the second byte of an XZERO cut by the end of a corrupted value. It
/// is the string's NUL terminator, except after such an XZERO was split: Redis writes the new
/// opcodes over the terminator, and the last one's final byte stays there, past the end, until
/// the length changes again. Redis keeps it between commands too; a stored string has no such
/// byte, so an edit starts with the NUL (the one way Locus can differ from Redis: a second PF
/// command on a value left ending in a cut XZERO).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    bytes: Vec<u8>,
    past_end: u8,
}

impl Edit {
    /// Starts editing a checked value.
    pub fn new(bytes: Vec<u8>) -> Self {
        Edit { bytes, past_end: 0 }
    }

    /// The value's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The value's bytes, the edit done.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Whether the value is dense now.
    pub fn is_dense(&self) -> bool {
        is_dense(&self.bytes)
    }

    /// Marks the cached cardinality stale.
    pub fn invalidate(&mut self) {
        invalidate(&mut self.bytes);
    }

    /// Rewrites a sparse value as dense (a dense value is left alone). The header, cached
    /// cardinality included, is kept.
    ///
    /// # Errors
    /// [`Corrupt`] when the opcodes do not cover exactly the registers; the value is then
    /// unchanged.
    pub fn promote(&mut self) -> Result<(), Corrupt> {
        if self.is_dense() {
            return Ok(());
        }
        let v = &self.bytes;
        let mut dense = vec![0u8; DENSE_SIZE];
        dense[..HDR_SIZE].copy_from_slice(&v[..HDR_SIZE]);
        dense[4] = DENSE;
        let regs = &mut dense[HDR_SIZE..];
        walk_sparse(v, self.past_end, |first, op| {
            if let Op::Val { val, len } = op {
                for i in first..first + len {
                    dense_put(regs, i, val);
                }
            }
        })?;
        self.bytes = dense;
        self.past_end = 0;
        Ok(())
    }

    /// Raises register `index` to `count`. True when it changed.
    ///
    /// # Errors
    /// [`Corrupt`] when a sparse value cannot be edited or promoted.
    pub fn raise(&mut self, index: usize, count: u8, max_bytes: u64) -> Result<bool, Corrupt> {
        if self.is_dense() {
            Ok(dense_raise(&mut self.bytes[HDR_SIZE..], index, count))
        } else {
            self.sparse_raise(index, count, max_bytes)
        }
    }

    /// Adds an element. True when a register changed.
    ///
    /// # Errors
    /// [`Corrupt`] when a sparse value cannot be edited or promoted.
    pub fn add(&mut self, ele: &[u8], max_bytes: u64) -> Result<bool, Corrupt> {
        let (index, count) = register_for(ele);
        self.raise(index, count, max_bytes)
    }

    /// Promotes the value to dense and raises register `index` to `count` there.
    fn promote_and_raise(&mut self, index: usize, count: u8) -> Result<bool, Corrupt> {
        self.promote()?;
        dense_raise(&mut self.bytes[HDR_SIZE..], index, count);
        Ok(true)
    }

    /// Raises register `index` of a sparse value to `count`, editing the opcodes in place as
    /// Redis does (split the run that covers it, then merge equal neighbouring VALs), or
    /// promoting the value to dense.
    fn sparse_raise(&mut self, index: usize, count: u8, max_bytes: u64) -> Result<bool, Corrupt> {
        if count > SPARSE_VAL_MAX {
            return self.promote_and_raise(index, count);
        }
        // Find the opcode covering `index`, and the one before it.
        let end = self.bytes.len();
        let (mut p, mut first, mut prev) = (HDR_SIZE, 0usize, None);
        let mut found = None;
        while p < end {
            let o = Op::at(&self.bytes, p, self.past_end);
            if index < first + o.span() {
                found = Some(o);
                break;
            }
            prev = Some(p);
            p += o.size();
            first += o.span();
        }
        let Some(op) = found else {
            return Err(Corrupt);
        };
        let last = first + op.span() - 1;
        let single = op.span() == 1;
        match op {
            Op::Val { val, .. } if val >= count => return Ok(false),
            Op::Val { .. } | Op::Zero { wide: false, .. } if single => {
                self.bytes[p] = val_op(count, 1);
            }
            _ => {
                // Split the run into [before][count x 1][after].
                let mut seq = Vec::with_capacity(5);
                match op {
                    Op::Zero { .. } => {
                        if index != first {
                            push_zeros(&mut seq, index - first);
                        }
                        seq.push(val_op(count, 1));
                        if index != last {
                            push_zeros(&mut seq, last - index);
                        }
                    }
                    Op::Val { val, .. } => {
                        if index != first {
                            seq.push(val_op(val, index - first));
                        }
                        seq.push(val_op(count, 1));
                        if index != last {
                            seq.push(val_op(val, last - index));
                        }
                    }
                }
                let grown = seq.len() as i64 - op.size() as i64;
                let new_len = (end as i64 + grown) as usize;
                if grown > 0 && new_len as u64 > max_bytes {
                    return self.promote_and_raise(index, count);
                }
                // An XZERO cut by the end is replaced as if whole; the value grows by the
                // difference, so the new opcodes' last byte lands past the end.
                let cut = p + op.size() > end;
                self.past_end = if cut { seq[seq.len() - 1] } else { 0 };
                self.bytes.splice(p..(p + op.size()).min(end), seq);
                self.bytes.truncate(new_len);
            }
        }
        self.merge_vals(prev.unwrap_or(HDR_SIZE));
        self.invalidate();
        Ok(true)
    }

    /// Merges adjacent VAL opcodes of the same value whose runs fit one opcode, looking at up to
    /// five opcodes from `p`.
    fn merge_vals(&mut self, mut p: usize) {
        let v = &mut self.bytes;
        let mut budget = 5;
        while p < v.len() && budget > 0 {
            budget -= 1;
            match Op::at(v, p, self.past_end) {
                Op::Zero { wide, .. } => {
                    p += if wide { 2 } else { 1 };
                    continue;
                }
                Op::Val { val, len } => {
                    if p + 1 < v.len()
                        && let Op::Val {
                            val: val2,
                            len: len2,
                        } = Op::at(v, p + 1, self.past_end)
                        && val == val2
                        && len + len2 <= SPARSE_VAL_MAX_LEN
                    {
                        v[p + 1] = val_op(val, len + len2);
                        v.remove(p);
                        self.past_end = 0;
                        continue;
                    }
                }
            }
            p += 1;
        }
    }
}

/// Raises each of `max` to the matching register of a checked value.
///
/// # Errors
/// [`Corrupt`] when a sparse value does not cover exactly the registers (`max` may then hold
/// part of it: the caller drops it).
pub fn merge_into(max: &mut [u8; REGISTERS], v: &[u8]) -> Result<(), Corrupt> {
    if is_dense(v) {
        let regs = &v[HDR_SIZE..];
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(dense_get(regs, i));
        }
        return Ok(());
    }
    walk_sparse(v, 0, |first, op| {
        if let Op::Val { val, len } = op {
            for m in &mut max[first..first + len] {
                *m = (*m).max(val);
            }
        }
    })
}

/// How many registers hold each value (0..=63).
type Histogram = [u64; 64];

/// The histogram of a checked value; `Err` for a sparse value that does not cover exactly the
/// registers.
fn histogram(v: &[u8]) -> Result<Histogram, Corrupt> {
    let mut h = [0u64; 64];
    if is_dense(v) {
        let regs = &v[HDR_SIZE..];
        for i in 0..REGISTERS {
            h[usize::from(dense_get(regs, i))] += 1;
        }
        return Ok(h);
    }
    walk_sparse(v, 0, |_, op| match op {
        Op::Zero { len, .. } => h[0] += len as u64,
        Op::Val { val, len } => h[usize::from(val)] += len as u64,
    })?;
    Ok(h)
}

/// The estimated cardinality of a checked value.
///
/// # Errors
/// [`Corrupt`] for a sparse value that does not cover exactly the registers.
pub fn count(v: &[u8]) -> Result<u64, Corrupt> {
    histogram(v).map(|h| estimate(&h))
}

/// The estimated cardinality of plain registers (one byte each, as merged by
/// [`merge_into`]).
pub fn count_registers(regs: &[u8; REGISTERS]) -> u64 {
    let mut h = [0u64; 64];
    for &r in regs {
        h[usize::from(r & REGISTER_MAX)] += 1;
    }
    estimate(&h)
}

/// Ertl's improved estimator ("New cardinality estimation algorithms for HyperLogLog
/// sketches", 2017), in Redis's order of floating-point operations, so that the same registers
/// give the same integer.
fn estimate(h: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - h[Q + 1] as f64) / m);
    for k in (1..=Q).rev() {
        z += h[k] as f64;
        z *= 0.5;
    }
    z += m * sigma(h[0] as f64 / m);
    round_to_u64(ALPHA_INF * m * m / z)
}

/// C's `(uint64_t) llroundl(x)` on x86-64: half away from zero; a value outside `i64` (or
/// infinite, for registers all past the estimator's range) gives `i64::MIN`, whose bits are
/// kept.
fn round_to_u64(x: f64) -> u64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let r = x.round();
    if r.is_finite() && r > -LIMIT && r < LIMIT {
        r as i64 as u64
    } else {
        i64::MIN as u64
    }
}

/// Ertl's sigma: `x + sum_k x^(2^k) 2^(k-1)`, iterated until the sum stops changing.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0f64, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

/// Ertl's tau: `(1 - x - sum_k (1 - x^(2^-k))^2 2^-k) / 3`, iterated until the sum stops
/// changing.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0f64, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if z == before {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regs_of(v: &[u8]) -> [u8; REGISTERS] {
        let mut m = [0u8; REGISTERS];
        merge_into(&mut m, v).unwrap();
        m
    }

    #[test]
    fn murmur_matches_known_values() {
        // The empty input hashes to the mixed seed alone.
        let m: u64 = 0xc6a4_a793_5bd1_e995;
        let mut h = u64::from(SEED);
        h ^= h >> 47;
        h = h.wrapping_mul(m);
        h ^= h >> 47;
        assert_eq!(murmur64a(b"", SEED), h);
        // Tails of every length and a full block all hash differently.
        let all: Vec<u64> = (0..=17)
            .map(|n| murmur64a(&b"abcdefghijklmnopq"[..n], SEED))
            .collect();
        for (i, a) in all.iter().enumerate() {
            assert!(all[i + 1..].iter().all(|b| b != a));
        }
    }

    #[test]
    fn new_value_is_one_xzero() {
        let v = new_sparse();
        assert_eq!(v.len(), 18);
        assert_eq!(&v[..5], b"HYLL\x01");
        assert_eq!(&v[16..], &[0x7f, 0xff]);
        assert!(is_hll(&v));
        assert_eq!(cached(&v), Some(0));
        assert_eq!(count(&v), Ok(0));
    }

    #[test]
    fn header_checks() {
        let mut v = new_sparse();
        assert!(!is_hll(&v[..15]));
        v[4] = 2;
        assert!(!is_hll(&v));
        v[4] = DENSE;
        assert!(!is_hll(&v));
        let mut d = Edit::new(new_sparse());
        d.promote().unwrap();
        let mut d = d.into_bytes();
        assert_eq!(d.len(), DENSE_SIZE);
        assert!(is_hll(&d));
        d[0] = b'h';
        assert!(!is_hll(&d));
    }

    #[test]
    fn dense_registers_do_not_disturb_neighbours() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR_SIZE];
        let mut want = vec![0u8; REGISTERS];
        let mut s = 0x1234_5678_9abc_def0u64;
        for round in 0..3 {
            for (i, w) in want.iter_mut().enumerate() {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                *w = if round == 2 { 63 } else { (s & 63) as u8 };
                dense_put(&mut regs, i, *w);
            }
            for (i, w) in want.iter().enumerate() {
                assert_eq!(dense_get(&regs, i), *w, "register {i}");
            }
        }
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut s = Edit::new(new_sparse());
        let mut d = Edit::new(new_sparse());
        d.promote().unwrap();
        for n in 0..3000u32 {
            let e = n.to_string();
            let a = s.add(e.as_bytes(), 3000).unwrap();
            let b = d.add(e.as_bytes(), 3000).unwrap();
            assert_eq!(a, b, "element {n}");
            if n % 97 == 0 {
                assert_eq!(regs_of(s.bytes()), regs_of(d.bytes()));
                assert_eq!(count(s.bytes()), count(d.bytes()));
            }
        }
        assert!(s.is_dense(), "3000 elements pass 3000 bytes");
    }

    #[test]
    fn sparse_stays_canonical_and_small() {
        let mut s = Edit::new(new_sparse());
        for n in 0..500u32 {
            s.add(format!("e{n}").as_bytes(), 3000).unwrap();
            assert!(!s.is_dense());
            // No two adjacent VALs that one opcode could hold.
            let s = s.bytes();
            let mut p = HDR_SIZE;
            let mut last: Option<Op> = None;
            while p < s.len() {
                let op = Op::at(s, p, 0);
                if let (Some(Op::Val { val: a, len: la }), Op::Val { val: b, len: lb }) = (last, op)
                {
                    assert!(a != b || la + lb > SPARSE_VAL_MAX_LEN);
                }
                last = Some(op);
                p += op.size();
            }
        }
    }

    #[test]
    fn promotion_past_max_bytes() {
        let mut s = Edit::new(new_sparse());
        let mut n = 0u32;
        while !s.is_dense() {
            s.add(format!("x{n}").as_bytes(), 100).unwrap();
            n += 1;
            assert!(s.is_dense() || s.bytes().len() <= 100);
        }
        assert_eq!(s.bytes().len(), DENSE_SIZE);
        assert!(n < 100);
    }

    #[test]
    fn big_register_promotes() {
        let mut s = Edit::new(new_sparse());
        assert_eq!(s.raise(5, 33, 3000), Ok(true));
        assert!(s.is_dense());
        assert_eq!(dense_get(&s.bytes()[HDR_SIZE..], 5), 33);
    }

    #[test]
    fn corrupted_sparse_is_detected() {
        let mut s = Edit::new(new_sparse());
        s.add(b"a", 3000).unwrap();
        let s = s.into_bytes();
        let mut longer = s.clone();
        longer.extend_from_slice(b"hello");
        assert_eq!(count(&longer), Err(Corrupt));
        let mut m = [0u8; REGISTERS];
        assert_eq!(merge_into(&mut m, &longer), Err(Corrupt));
        assert_eq!(Edit::new(longer).promote(), Err(Corrupt));
        // One VAL past the last register: refused by every decoder, though an edit of a
        // register it does not hide still goes through (as in Redis).
        let mut tail = new_sparse();
        tail.push(val_op(1, 1));
        assert_eq!(count(&tail), Err(Corrupt));
        assert_eq!(merge_into(&mut m, &tail), Err(Corrupt));
        let mut tail = Edit::new(tail);
        assert_eq!(tail.clone().promote(), Err(Corrupt));
        assert_eq!(tail.raise(7, 2, 3000), Ok(true));
        // Too short: the last registers are not covered, so adding there fails.
        let short = s[..s.len() - 1].to_vec();
        assert_eq!(count(&short), Err(Corrupt));
        let mut short = Edit::new(short);
        assert_eq!(short.raise(REGISTERS - 1, 1, 3000), Err(Corrupt));
    }

    #[test]
    fn estimate_of_empty_and_full() {
        let regs = [0u8; REGISTERS];
        assert_eq!(count_registers(&regs), 0);
        // Every register past the estimator's range: C's llround of infinity.
        assert_eq!(count_registers(&[60u8; REGISTERS]), i64::MIN as u64);
        // Every register at 1: what redis-server 7.0 answers for such a value.
        assert_eq!(count_registers(&[1u8; REGISTERS]), 23637);
    }

    #[test]
    fn estimates_are_within_a_few_standard_errors() {
        let mut d = Edit::new(new_sparse());
        d.promote().unwrap();
        let mut n = 0u64;
        for target in [1_000u64, 10_000, 100_000] {
            while n < target {
                d.add(&n.to_le_bytes(), 3000).unwrap();
                n += 1;
            }
            let est = count(d.bytes()).unwrap() as f64;
            let err = (est - n as f64).abs() / n as f64;
            assert!(err < 5.0 * 0.0081, "n={n} est={est}");
        }
    }

    #[test]
    fn an_xzero_cut_by_the_end_reads_what_redis_left_past_it() {
        // A sparse value whose last byte is the first half of an XZERO (it reads the NUL:
        // 16,129 zeros). Splitting it leaves the last new opcode's final byte past the end,
        // where the next element's lookup reads it; redis-server 7.0 gives these bytes.
        let mut v = new_sparse();
        v.pop();
        let elements = [
            "12", "57510", "2757", "40", "31750", "211", "18", "34", "17", "599", "852", "58510",
            "34", "502", "876", "49", "36", "209", "830", "1", "36", "1732", "38851", "99754",
            "85116", "4", "48985", "40796", "515", "46768", "42426", "7", "735", "358", "552",
        ];
        let mut e = Edit::new(v);
        let mut r = Ok(false);
        for x in elements {
            r = e.add(x.as_bytes(), 100);
            if r.is_err() {
                break;
            }
        }
        assert_eq!(r, Err(Corrupt));
        let want = "428a904cab804b1a80450f8044aa8c41108046a78841f78840a9804ca58843";
        let got: String = e.bytes()[HDR_SIZE..]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, want);
    }
}
