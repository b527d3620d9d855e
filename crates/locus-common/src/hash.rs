//! The key hash.
//!
//! One function for every use (index buckets, spatial sampling in the profilers, tenant sharding),
//! so that a key sampled by the live profiler is the same key the offline `locus mrc` samples.
//! xxh3 is well mixed in every bit, which spatial sampling (`hash mod P < T`) relies on.

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// The 64-bit hash of a key with the default seed (0).
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    xxh3_64(key)
}

/// The 64-bit hash of a key with an explicit seed (to vary the sample between runs).
#[inline]
pub fn hash_key_seeded(key: &[u8], seed: u64) -> u64 {
    xxh3_64_with_seed(key, seed)
}

/// The 64-bit hash of a numeric key (trace ids), hashing its little-endian bytes.
#[inline]
pub fn hash_u64(id: u64, seed: u64) -> u64 {
    xxh3_64_with_seed(&id.to_le_bytes(), seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_change_the_hash_and_default_is_seed_zero() {
        assert_eq!(hash_key(b"k"), hash_key_seeded(b"k", 0));
        assert_ne!(hash_key_seeded(b"k", 1), hash_key_seeded(b"k", 2));
        assert_eq!(hash_u64(7, 3), hash_key_seeded(&7u64.to_le_bytes(), 3));
    }
}
