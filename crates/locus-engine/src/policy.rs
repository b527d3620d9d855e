//! Eviction policies, with Redis's `maxmemory-policy` names and semantics.

use std::fmt;
use std::str::FromStr;

/// Which key a pool gives up when it must free memory (Redis's `maxmemory-policy`), plus
/// `allkeys-exact-lru`.
///
/// The sampled policies follow Redis 7's `evict.c` (docs/models.md §8): K samples per round, an
/// eviction pool ordered by the idle score computed at sampling time, ghosts skipped.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Never evict: writes that need memory fail with OOM.
    NoEviction,
    /// Approximated LRU over all keys (sampled, eviction pool).
    AllkeysLru,
    /// Approximated LFU (log counter with decay) over all keys.
    AllkeysLfu,
    /// A uniformly random key.
    AllkeysRandom,
    /// Approximated LRU over keys with a TTL.
    VolatileLru,
    /// Approximated LFU over keys with a TTL.
    VolatileLfu,
    /// A uniformly random key among keys with a TTL.
    VolatileRandom,
    /// The sampled key with the nearest expiry, among keys with a TTL.
    VolatileTtl,
    /// Exact LRU over all keys (recency order kept in an intrusive list).
    AllkeysExactLru,
    /// Hyperbolic caching (Blankstein et al., ATC'17), cost-aware: among K sampled keys, evict
    /// the one with the lowest `cost × uses / age` (uses since insertion, age since insertion,
    /// cost = the tenant's miss penalty). Not a Redis policy; the baseline pRedis is compared
    /// with.
    AllkeysHyperbolic,
}

impl Policy {
    /// Every policy, for loops and conformance suites.
    pub const ALL: [Policy; 10] = [
        Policy::NoEviction,
        Policy::AllkeysLru,
        Policy::AllkeysLfu,
        Policy::AllkeysRandom,
        Policy::VolatileLru,
        Policy::VolatileLfu,
        Policy::VolatileRandom,
        Policy::VolatileTtl,
        Policy::AllkeysExactLru,
        Policy::AllkeysHyperbolic,
    ];

    /// The Redis name (`allkeys-lru`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Policy::NoEviction => "noeviction",
            Policy::AllkeysLru => "allkeys-lru",
            Policy::AllkeysLfu => "allkeys-lfu",
            Policy::AllkeysRandom => "allkeys-random",
            Policy::VolatileLru => "volatile-lru",
            Policy::VolatileLfu => "volatile-lfu",
            Policy::VolatileRandom => "volatile-random",
            Policy::VolatileTtl => "volatile-ttl",
            Policy::AllkeysExactLru => "allkeys-exact-lru",
            Policy::AllkeysHyperbolic => "allkeys-hyperbolic",
        }
    }

    /// True for the LFU policies (the per-item field holds an LFU counter, not an LRU time).
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllkeysLfu | Policy::VolatileLfu)
    }

    /// True for the policies that only evict keys with a TTL.
    pub fn is_volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    /// True for the policies that may evict any key (`allkeys-*`).
    pub fn is_allkeys(self) -> bool {
        self != Policy::NoEviction && !self.is_volatile()
    }

    /// True for the policies that pick a random key (no eviction pool).
    pub fn is_random(self) -> bool {
        matches!(self, Policy::AllkeysRandom | Policy::VolatileRandom)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown policy name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown maxmemory-policy {0:?} (expected one of noeviction, allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-exact-lru, allkeys-hyperbolic)"
)]
pub struct ParsePolicyError(pub String);

impl FromStr for Policy {
    type Err = ParsePolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Policy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| ParsePolicyError(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_case_insensitively() {
        for p in Policy::ALL {
            assert_eq!(p.name().parse::<Policy>().unwrap(), p);
            assert_eq!(p.name().to_uppercase().parse::<Policy>().unwrap(), p);
            assert_eq!(p.to_string(), p.name());
        }
        assert!("lru".parse::<Policy>().is_err());
    }
}
