//! Spatial (hash) sampling shared by SHARDS, KRR and footprint (MODELS.md 0.5), and the small
//! fast hasher used by the profilers' key tables.
//!
//! A key is sampled iff `hash_u64(key, seed) mod 2^24 < T`, with `R = T / 2^24`: every request of a
//! key is sampled or none is, and the unsampled path is one hash and one compare.

use crate::MrcError;
use locus_common::hash::hash_u64;
use std::hash::{BuildHasherDefault, Hasher};

/// The modulus `P` of spatial sampling.
pub const SAMPLE_MODULUS: u64 = 1 << 24;

/// A hash filter `hash(key) mod P < T`.
#[derive(Debug, Clone, Copy)]
pub struct SpatialFilter {
    threshold: u64,
    seed: u64,
}

impl SpatialFilter {
    /// A filter sampling at `rate` (`T = ⌊rate·P⌋`).
    ///
    /// # Errors
    /// [`MrcError::InvalidRate`] unless `rate ∈ (0, 1]` and `T ≥ 1`.
    pub fn new(rate: f64, seed: u64) -> Result<Self, MrcError> {
        let t = (rate * SAMPLE_MODULUS as f64).floor();
        if !(rate > 0.0 && rate <= 1.0) || t < 1.0 {
            return Err(MrcError::InvalidRate { rate });
        }
        Ok(Self {
            threshold: t as u64,
            seed,
        })
    }

    /// The effective rate `T/P`.
    pub fn rate(&self) -> f64 {
        self.threshold as f64 / SAMPLE_MODULUS as f64
    }

    /// The sampling hash of `key`, reduced mod `P`.
    #[inline]
    pub fn hash(&self, key: u64) -> u64 {
        hash_u64(key, self.seed) & (SAMPLE_MODULUS - 1)
    }

    /// Whether `key` is sampled.
    #[inline]
    pub fn sampled(&self, key: u64) -> bool {
        self.threshold == SAMPLE_MODULUS || self.hash(key) < self.threshold
    }

    /// The threshold `T`.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }
}

/// A multiplicative hasher for `u64` keys (the keys are ids or already hashes; this only spreads
/// them over the table). Not for untrusted byte strings.
#[derive(Debug, Default, Clone, Copy)]
pub struct U64Hasher(u64);

impl Hasher for U64Hasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        // murmur3's fmix64 of the key without its low 4 bits, and the low 4 bits kept: ids that
        // differ only there (runs of block numbers, the common case in block traces) land in
        // neighbouring buckets of the same cache lines, while everything else is fully mixed. The
        // low bits are also folded into the top 7 (the table's tag byte) so a run's tags differ.
        let mut x = v >> 4;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^= x >> 33;
        let low = v & 15;
        self.0 = ((x << 4) | low) ^ (low << 57);
    }
}

/// A `HashMap` keyed by `u64` with [`U64Hasher`].
pub type U64Map<V> = std::collections::HashMap<u64, V, BuildHasherDefault<U64Hasher>>;

/// Reference sampling (AET, EAET): each access is chosen independently with probability `r`,
/// implemented as geometric skips so an unchosen access costs one decrement.
#[derive(Debug, Clone)]
pub(crate) struct RefSampler {
    rate: f64,
    ln_q: f64,
    skip: u64,
    rng: locus_common::Rng,
}

impl RefSampler {
    pub fn new(rate: f64, seed: u64) -> Result<Self, MrcError> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(MrcError::InvalidRate { rate });
        }
        let mut s = Self {
            rate,
            ln_q: (1.0 - rate).ln(),
            skip: 0,
            rng: locus_common::Rng::new(seed ^ 0xA37E_5EED),
        };
        s.skip = s.draw();
        Ok(s)
    }

    /// Number of accesses until (and including) the next chosen one: Geometric(r) on 1, 2, ….
    fn draw(&mut self) -> u64 {
        if self.rate >= 1.0 {
            return 1;
        }
        let u = self.rng.next_f64_nonzero();
        (u.ln() / self.ln_q).floor() as u64 + 1
    }

    /// Whether the current access is chosen.
    #[inline]
    pub fn choose(&mut self) -> bool {
        self.skip -= 1;
        if self.skip == 0 {
            self.skip = self.draw();
            true
        } else {
            false
        }
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }
}

/// A filter over the key hashes of the pending samples (AET, EAET), to skip the table lookup for
/// keys that cannot be in it: one bit per slot, no false negatives.
///
/// A bit array is read once per access, so it is kept small enough to stay in cache: at least 32
/// slots per pending key (at most about 1/16 of the bits set, counting the stale ones), doubled
/// as the pending set grows. Removing a key leaves its bit set (stale); once the stale bits
/// outnumber the live keys (and 1/64 of the slots), the array is rebuilt from the pending keys.
/// Both costs are amortised over the removals and insertions that caused them. A false positive
/// costs one table lookup that finds nothing, so the filter never changes what a profiler records.
#[derive(Debug, Clone)]
pub(crate) struct PendingFilter {
    words: Vec<u64>,
    /// `64 - log2(slots)`: a slot is the top bits of the hash.
    shift: u32,
    stale: usize,
}

/// Smallest filter: 4096 slots (512 bytes).
const PENDING_MIN_BITS: u32 = 12;

impl PendingFilter {
    pub fn new() -> Self {
        Self::with_bits(PENDING_MIN_BITS)
    }

    fn with_bits(bits: u32) -> Self {
        Self {
            words: vec![0; 1 << (bits - 6)],
            shift: 64 - bits,
            stale: 0,
        }
    }

    #[inline]
    fn slot(&self, h: u64) -> (usize, u64) {
        let s = h >> self.shift;
        ((s >> 6) as usize, 1u64 << (s & 63))
    }

    /// Whether `h` may be pending.
    #[inline]
    pub fn maybe(&self, h: u64) -> bool {
        let (w, b) = self.slot(h);
        self.words[w] & b != 0
    }

    /// `h` became pending; `live` keys are pending now (including it). Returns whether the
    /// caller must [`rebuild`](Self::rebuild) (the array is too small for `live`).
    #[inline]
    pub fn insert(&mut self, h: u64, live: usize) -> bool {
        let (w, b) = self.slot(h);
        self.words[w] |= b;
        live * 32 > self.slots()
    }

    /// A pending key was removed; `live` keys remain. Returns whether the caller must
    /// [`rebuild`](Self::rebuild) (too many stale bits).
    #[inline]
    pub fn remove(&mut self, live: usize) -> bool {
        self.stale += 1;
        self.stale > live.max(self.slots() / 64)
    }

    fn slots(&self) -> usize {
        self.words.len() * 64
    }

    /// Clears the array (resized for `live` pending keys) and sets the bits of `hashes`, the
    /// hashes of every pending key.
    #[cold]
    pub fn rebuild(&mut self, live: usize, hashes: impl Iterator<Item = u64>) {
        let want = (live.max(1) * 32).next_power_of_two();
        let bits = (want.trailing_zeros()).clamp(PENDING_MIN_BITS, 40);
        if bits != 64 - self.shift {
            *self = Self::with_bits(bits);
        } else {
            self.words.fill(0);
            self.stale = 0;
        }
        for h in hashes {
            let (w, b) = self.slot(h);
            self.words[w] |= b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spatial_rate_is_respected() {
        let f = SpatialFilter::new(0.1, 7).unwrap();
        let n = (0..100_000u64).filter(|&k| f.sampled(k)).count();
        assert!((9_000..11_000).contains(&n), "{n}");
        assert!(SpatialFilter::new(0.0, 1).is_err());
        assert!(SpatialFilter::new(1.5, 1).is_err());
        assert!(SpatialFilter::new(1e-9, 1).is_err());
        assert!((0..1000u64).all(|k| SpatialFilter::new(1.0, 3).unwrap().sampled(k)));
    }

    #[test]
    fn pending_filter_has_no_false_negatives() {
        // Keys come and go; every pending key must always pass, and the array stays small.
        let mut f = PendingFilter::new();
        let mut pending = std::collections::HashSet::new();
        let mut rng = locus_common::Rng::new(9);
        for i in 0..200_000u64 {
            let k = crate::aet::mix64(rng.below(20_000));
            if pending.contains(&k) {
                pending.remove(&k);
                if f.remove(pending.len()) {
                    f.rebuild(pending.len(), pending.iter().copied());
                }
            } else if i % 3 == 0 {
                pending.insert(k);
                if f.insert(k, pending.len()) {
                    f.rebuild(pending.len(), pending.iter().copied());
                }
            }
            if i % 1000 == 0 {
                assert!(pending.iter().all(|&h| f.maybe(h)));
            }
        }
        assert!(
            f.slots() <= 64 * 32 * pending.len().max(128),
            "{}",
            f.slots()
        );
        let fp = (0..100_000u64)
            .map(|x| crate::aet::mix64(x + 1_000_000))
            .filter(|&h| f.maybe(h))
            .count();
        assert!(fp < 10_000, "{fp}");
    }

    #[test]
    fn reference_sampling_rate_is_respected() {
        let mut s = RefSampler::new(0.01, 3).unwrap();
        let n = (0..1_000_000).filter(|_| s.choose()).count();
        assert!((9_000..11_000).contains(&n), "{n}");
        let mut all = RefSampler::new(1.0, 3).unwrap();
        assert!((0..100).all(|_| all.choose()));
    }
}
