//! Spatial (hash) sampling shared by SHARDS, KRR and footprint (docs/models.md §0.5), and the small
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

    /// The seed of its hash.
    pub fn seed(&self) -> u64 {
        self.seed
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

/// A spatial filter with a fixed budget of sampled keys (SHARDS's fixed-size variant, docs/models.md §2):
/// the rate starts at `max_rate` (1 = every key) and falls as the sampled key set outgrows
/// `budget`, so a tenant of ten keys is profiled whole and one of a hundred million keys through
/// about `budget` of them.
///
/// The filter remembers each sampled key (a set and a max-heap of `(hash, key)`: about 40 bytes
/// per key, so `budget` is its memory bound). When an admitted key makes the set exceed `budget`,
/// the largest hash becomes the new threshold `T` and every key with that hash is dropped; the
/// caller learns which keys were dropped and MUST forget them in its model (a dropped key is
/// never sampled again, since its hash is no longer below `T`).
///
/// The rate only falls: a key set that shrinks later keeps the lower rate (as in SHARDS).
#[derive(Debug, Clone)]
pub struct AdaptiveFilter {
    seed: u64,
    threshold: u64,
    budget: usize,
    tracked: std::collections::HashSet<u64, BuildHasherDefault<U64Hasher>>,
    heap: std::collections::BinaryHeap<(u64, u64)>,
}

/// Bytes of filter state per tracked key (set entry and heap entry, with the tables' slack).
pub const ADAPTIVE_BYTES_PER_KEY: usize = 40;

impl AdaptiveFilter {
    /// A filter sampling at most `budget` keys, at a rate never above `max_rate`.
    ///
    /// # Errors
    /// [`MrcError::InvalidRate`] unless `max_rate ∈ (0, 1]` (and `T ≥ 1`);
    /// [`MrcError::InvalidFixedSize`] for a zero budget.
    pub fn new(max_rate: f64, budget: usize, seed: u64) -> Result<Self, MrcError> {
        let upper = SpatialFilter::new(max_rate, seed)?;
        if budget == 0 {
            return Err(MrcError::InvalidFixedSize { size: budget });
        }
        Ok(Self {
            seed,
            threshold: upper.threshold(),
            budget,
            tracked: Default::default(),
            heap: std::collections::BinaryHeap::new(),
        })
    }

    /// The current rate `T/P`.
    pub fn rate(&self) -> f64 {
        self.threshold as f64 / SAMPLE_MODULUS as f64
    }

    /// The key budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Keys sampled and remembered now (at most the budget).
    pub fn tracked(&self) -> usize {
        self.tracked.len()
    }

    /// Whether `key` passes the current threshold, without admitting it.
    #[inline]
    pub fn passes(&self, key: u64) -> bool {
        self.threshold == SAMPLE_MODULUS
            || (hash_u64(key, self.seed) & (SAMPLE_MODULUS - 1)) < self.threshold
    }

    /// Offers an access of `key`: returns whether it is sampled. A key seen for the first time is
    /// admitted; if that overflows the budget, the threshold falls and the dropped keys (possibly
    /// `key` itself, then the answer is `false`) are appended to `dropped`.
    #[inline]
    pub fn offer(&mut self, key: u64, dropped: &mut Vec<u64>) -> bool {
        let h = hash_u64(key, self.seed) & (SAMPLE_MODULUS - 1);
        if h >= self.threshold {
            return false;
        }
        if self.tracked.contains(&key) {
            return true;
        }
        self.admit(key, h, dropped)
    }

    #[cold]
    fn admit(&mut self, key: u64, h: u64, dropped: &mut Vec<u64>) -> bool {
        self.tracked.insert(key);
        self.heap.push((h, key));
        if self.tracked.len() <= self.budget {
            return true;
        }
        let Some(&(t_new, _)) = self.heap.peek() else {
            return true;
        };
        while let Some(&(hh, k)) = self.heap.peek() {
            if hh != t_new {
                break;
            }
            self.heap.pop();
            self.tracked.remove(&k);
            dropped.push(k);
        }
        self.threshold = t_new;
        h < self.threshold
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
    fn adaptive_filter_samples_small_sets_whole_and_bounds_large_ones() {
        let mut dropped = Vec::new();
        // Ten keys: all sampled, rate stays 1.
        let mut f = AdaptiveFilter::new(1.0, 64, 5).unwrap();
        for t in 0..1000u64 {
            assert!(f.offer(t % 10, &mut dropped));
        }
        assert_eq!(f.tracked(), 10);
        assert_eq!(f.rate(), 1.0);
        assert!(dropped.is_empty());
        // 100,000 keys through a budget of 1,000: about 1% sampled, never more than the budget,
        // and every dropped key fails the filter from then on.
        let mut f = AdaptiveFilter::new(1.0, 1000, 5).unwrap();
        let mut sampled = std::collections::HashSet::new();
        for k in 0..100_000u64 {
            if f.offer(k, &mut dropped) {
                sampled.insert(k);
            }
            for d in dropped.drain(..) {
                sampled.remove(&d);
                assert!(!f.passes(d));
            }
            assert!(f.tracked() <= 1000);
        }
        assert_eq!(sampled.len(), f.tracked());
        assert!((0.008..0.012).contains(&f.rate()), "{}", f.rate());
        assert!(sampled.iter().all(|&k| f.passes(k)));
        // The upper rate caps a small set's rate.
        let mut f = AdaptiveFilter::new(0.5, 1000, 5).unwrap();
        let n = (0..1000u64).filter(|&k| f.offer(k, &mut dropped)).count();
        assert!((400..600).contains(&n), "{n}");
        assert!(AdaptiveFilter::new(1.0, 0, 1).is_err());
        assert!(AdaptiveFilter::new(0.0, 10, 1).is_err());
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
