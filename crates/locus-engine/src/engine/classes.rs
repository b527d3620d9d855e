//! pRedis's per-key penalty classes inside one tenant (pRedis(auto), SoCC'19 section 3.2).
//!
//! A tenant with classes ([`Engine::set_penalty_classes`]) keeps one keyspace over several
//! pools: its own pool (the *leader*, which holds the keys whose penalty was never measured: the
//! default class) and up to `cap` class pools, each an engine pool of its own (pages, size
//! classes, eviction, profiler feed, measured penalty, controller target) whose only owner is the
//! leader. Keyspaces never mix: a member pool is never handed out as a [`TenantId`], and every
//! key operation of the leader probes its pools in turn (the number is small), then works on the
//! pool that holds the key:
//!
//! ```text
//!   tenant t (leader) ── pool t   : keys never measured (default class)
//!                     ├─ pool m1  : penalty classes [lo1, hi1]
//!                     └─ pool m2  : penalty classes [lo2, hi2]      (created on first use)
//! ```
//!
//! Placement (on SET): the gap between the key's last GET miss and this SET is its measured
//! penalty; its automatic class ([`penalty_class`]) picks the pool whose range covers it, a new
//! pool while fewer than `cap` exist, or else the pool with the nearest range, whose range grows
//! to cover it (adjacent ranges merge; ranges never overlap). A SET that follows no measured miss
//! leaves the key in its pool, or puts a new key in the default class. A key whose class changes
//! moves to its new pool on that SET.
//!
//! A GET miss of a classed tenant is counted on the leader at once (the tenant's totals stay
//! exact); when the fill SET names the key's class, the miss moves to that pool's counters and
//! reaches the controller as that pool's miss, just before the SET (pRedis counts the SET-back
//! as the GET). Misses never filled stay in the default class's counters and never reach a
//! profiler.

use std::collections::HashMap;

use super::*;
use crate::control::penalty_class;

/// Pending misses a classed tenant follows (every key, not a sample: the gap is the key's class);
/// about 1 MiB of map at most, reported in the tenant's `metadata_bytes`.
const MAX_PENDING: usize = 65_536;
/// A miss not followed by a SET within this time is forgotten (µs).
const STALE_US: u64 = 10_000_000;
/// The most class pools a tenant may have (pRedis's 16 automatic ranges).
pub const MAX_CLASS_POOLS: u8 = crate::control::PENALTY_CLASSES;

/// The class pools of a tenant (kept by the leader).
#[derive(Debug, Default)]
pub(super) struct ClassGroup {
    /// The pools holding the tenant's keys: `[0]` is the leader itself (default class), then one
    /// per class range, in creation order.
    pub(super) members: Vec<u32>,
    /// The inclusive range of automatic penalty classes of `members[i + 1]`.
    pub(super) ranges: Vec<(u8, u8)>,
    /// The most class pools (besides the default one).
    pub(super) cap: u8,
    /// Key hash → time of its last GET miss (µs).
    pending: HashMap<u64, u64>,
}

/// One class pool of a tenant, as introspection shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassPoolStats {
    /// The engine pool.
    pub pool: PoolId,
    /// The automatic penalty classes it covers (`None`: the default class, keys never measured).
    pub range: Option<(u8, u8)>,
    /// The pool's counters and sizes (its name is `tenant/class<k>`).
    pub stats: TenantStats,
    /// (mean measured miss penalty µs, samples) of the pool.
    pub penalty: (f64, u64),
}

impl ClassGroup {
    /// Bytes of the pending-miss map (a hashbrown table: key, time and a control byte a bucket).
    pub(super) fn bytes(&self) -> u64 {
        self.pending.capacity() as u64 * 17 + self.members.capacity() as u64 * 4
    }

    /// The member index for automatic class `c`, `None` when a new pool is needed.
    fn member_for(&mut self, c: u8) -> Option<usize> {
        if let Some(i) = self.ranges.iter().position(|&(lo, hi)| lo <= c && c <= hi) {
            return Some(i + 1);
        }
        if self.ranges.len() < usize::from(self.cap) {
            return None;
        }
        // Full: the nearest range grows to cover `c` (nothing lies between them, so ranges stay
        // disjoint).
        let (i, _) = self
            .ranges
            .iter()
            .enumerate()
            .map(|(i, &(lo, hi))| (i, if c < lo { lo - c } else { c - hi }))
            .min_by_key(|&(_, d)| d)?;
        let r = &mut self.ranges[i];
        r.0 = r.0.min(c);
        r.1 = r.1.max(c);
        Some(i + 1)
    }
}

impl Engine {
    /// Turns pRedis's automatic per-key penalty classes on for tenant `t` with at most `cap`
    /// class pools besides the default one (see the module documentation); 0 turns them off,
    /// which is only possible while the tenant has no class pool yet. Call it before traffic.
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] when `cap` is above 16, when the tenant has a static floor,
    /// cap or item cap (they would bound its default pool only), or when classes are turned off
    /// after class pools were made.
    pub fn set_penalty_classes(&mut self, t: TenantId, cap: u8) -> Result<(), EngineError> {
        let ti = t.0 as usize;
        let tn = &self.tenants[ti];
        let mut problems = Vec::new();
        if cap > MAX_CLASS_POOLS {
            problems.push(format!(
                "penalty_classes: {cap} is outside 0..={MAX_CLASS_POOLS}"
            ));
        }
        if cap > 0
            && (tn.cfg.min_bytes > 0 || tn.cfg.max_bytes.is_some() || tn.cfg.max_items.is_some())
        {
            problems.push(format!(
                "penalty_classes: tenant {} has min_bytes, max_bytes or max_items, which would bound only its default class pool",
                tn.cfg.name
            ));
        }
        if tn.leader.is_some() {
            problems.push("penalty_classes: not a tenant".to_string());
        }
        if cap == 0 && tn.group.as_ref().is_some_and(|g| g.members.len() > 1) {
            problems.push(format!(
                "penalty_classes: tenant {} already has class pools",
                tn.cfg.name
            ));
        }
        if !problems.is_empty() {
            return Err(invalid(problems));
        }
        let tn = &mut self.tenants[ti];
        if cap == 0 {
            tn.group = None;
        } else {
            let g = tn.group.get_or_insert_with(|| {
                Box::new(ClassGroup {
                    members: vec![ti as u32],
                    ..ClassGroup::default()
                })
            });
            g.cap = cap;
        }
        self.classes_on = self.tenants.iter().any(|t| t.group.is_some());
        Ok(())
    }

    /// The most class pools of tenant `t` (0: no per-key classes).
    pub fn penalty_classes(&self, t: TenantId) -> u8 {
        self.tenants[t.0 as usize]
            .group
            .as_ref()
            .map_or(0, |g| g.cap)
    }

    /// The pools of tenant `t`: its own, then its class pools.
    pub fn pools_of(&self, t: TenantId) -> Vec<PoolId> {
        self.members(t.0 as usize)
            .map(|p| PoolId(p as u32))
            .collect()
    }

    /// Every pool: tenants' own pools and class pools (`PoolId` order).
    pub fn pool_count(&self) -> usize {
        self.tenants.len()
    }

    /// A pool's name: its tenant's, or `tenant/class<k>` for a class pool.
    pub fn pool_name(&self, p: PoolId) -> &str {
        &self.tenants[p.0 as usize].cfg.name
    }

    /// One pool's own counters and sizes (a tenant's own pool, or a class pool).
    pub fn pool_stats_of(&self, p: PoolId) -> TenantStats {
        self.pool_stats(p.0 as usize)
    }

    /// The tenant a pool belongs to (a class pool's leader, else the pool's own tenant).
    pub fn tenant_of_pool(&self, p: PoolId) -> TenantId {
        let tn = &self.tenants[p.0 as usize];
        TenantId(tn.leader.unwrap_or(p.0))
    }

    /// Tenant `t`'s class pools with their stats (empty without per-key classes).
    pub fn class_pools(&self, t: TenantId) -> Vec<ClassPoolStats> {
        let Some(g) = self.tenants[t.0 as usize].group.as_ref() else {
            return Vec::new();
        };
        g.members
            .iter()
            .enumerate()
            .map(|(i, &m)| ClassPoolStats {
                pool: PoolId(m),
                range: i.checked_sub(1).map(|j| g.ranges[j]),
                stats: self.pool_stats(m as usize),
                penalty: self.penalty.penalty(m as usize),
            })
            .collect()
    }

    /// The pools of tenant `ti` (itself alone without classes).
    #[inline]
    pub(super) fn members(&self, ti: usize) -> impl Iterator<Item = usize> + use<> {
        let v: Vec<usize> = match &self.tenants[ti].group {
            None => vec![ti],
            Some(g) => g.members.iter().map(|&m| m as usize).collect(),
        };
        v.into_iter()
    }

    /// Finds a key of tenant `t` in whichever of its pools holds it: (pool, handle).
    #[inline]
    pub(super) fn find_key(&self, t: usize, key: &[u8], hash: u64) -> Option<(usize, u32)> {
        if !self.classes_on {
            return self.find(t, key, hash).map(|h| (t, h));
        }
        match &self.tenants[t].group {
            None => self.find(t, key, hash).map(|h| (t, h)),
            Some(g) => g
                .members
                .iter()
                .find_map(|&m| self.find(m as usize, key, hash).map(|h| (m as usize, h))),
        }
    }

    /// [`Engine::find_key`] with lazy expiry.
    #[inline]
    pub(super) fn lookup_key(&mut self, t: usize, key: &[u8], hash: u64) -> Option<(usize, u32)> {
        if !self.classes_on || self.tenants[t].group.is_none() {
            return self.lookup(t, key, hash).map(|h| (t, h));
        }
        let (p, _) = self.find_key(t, key, hash)?;
        self.lookup(p, key, hash).map(|h| (p, h))
    }

    /// A GET miss of classed tenant `t`: remembered until the fill SET.
    pub(super) fn class_note_miss(&mut self, t: usize, hash: u64) {
        let now_us = self.clock.now_us();
        let Some(g) = self.tenants[t].group.as_mut() else {
            return;
        };
        if g.pending.len() >= MAX_PENDING {
            g.pending
                .retain(|_, at| now_us.saturating_sub(*at) < STALE_US);
            if g.pending.len() >= MAX_PENDING {
                return;
            }
        }
        g.pending.insert(hash, now_us);
    }

    /// The pool a SET of `key` to tenant `t` stores into: its measured class's pool after a
    /// measured miss (the miss moves there, and the gap is that pool's penalty sample), else the
    /// pool holding it, else the default class (`t`). `t` itself without classes.
    pub(super) fn class_place(&mut self, t: usize, key: &[u8], hash: u64) -> usize {
        let Some(g) = self.tenants[t].group.as_mut() else {
            return t;
        };
        let Some(at) = g.pending.remove(&hash) else {
            return self.find_key(t, key, hash).map_or(t, |(p, _)| p);
        };
        let now_us = self.clock.now_us();
        let gap = now_us.saturating_sub(at) as f64;
        let c = penalty_class(gap);
        let p = match g.member_for(c) {
            Some(i) => g.members[i] as usize,
            None => self.add_class_pool(t, c),
        };
        self.penalty.record(p, gap);
        if p != t {
            self.tenants[t].counters.misses = self.tenants[t].counters.misses.saturating_sub(1);
            self.tenants[p].counters.misses += 1;
        }
        if self.control.is_some() {
            self.feed(p, AccessKind::GetMiss, hash, 0, None);
        }
        p
    }

    /// Makes a class pool of tenant `t` for automatic class `c`; returns its index.
    fn add_class_pool(&mut self, t: usize, c: u8) -> usize {
        let p = self.tenants.len();
        let lead = &self.tenants[t];
        let mut cfg = lead.cfg.clone();
        let k = lead.group.as_ref().map_or(0, |g| g.ranges.len()) + 1;
        cfg.name = format!("{}/class{k}", lead.cfg.name);
        let class_mode = lead.class_mode;
        let first_page = lead.first_page;
        let tiers = self.cfg.tier.as_ref();
        let mut pool = Tenant::new(cfg, self.classes.len(), tiers);
        pool.leader = Some(t as u32);
        pool.class_mode = class_mode;
        pool.first_page = first_page;
        self.tenants.push(pool);
        let g = self.tenants[t]
            .group
            .as_mut()
            .expect("only a classed tenant makes class pools");
        g.members.push(p as u32);
        g.ranges.push((c, c));
        p
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use locus_common::VirtualClock;

    use super::*;
    use crate::control::{ControlView, Decision};

    const CHEAP_US: u64 = 200;
    const DEAR_US: u64 = 4_000;

    fn engine(maxmemory: u64, cap: u8) -> (Engine, TenantId, Arc<VirtualClock>) {
        let clock = Arc::new(VirtualClock::new(1_000_000));
        let cfg = EngineConfig {
            maxmemory,
            page_size: 64 * 1024,
            ..EngineConfig::default()
        };
        let mut e = Engine::new(cfg, clock.clone()).unwrap();
        let t = e.add_tenant(TenantConfig::new("t")).unwrap();
        e.set_penalty_classes(t, cap).unwrap();
        (e, t, clock)
    }

    /// A look-aside fill: GET misses, the backend takes `us`, SET.
    fn fill(e: &mut Engine, clock: &VirtualClock, t: TenantId, key: &[u8], us: u64) {
        assert!(e.get(t, key).is_none());
        clock.advance_us(us);
        e.set(t, key, &[7u8; 100], SetOptions::default()).unwrap();
    }

    fn pool_of_key(e: &Engine, t: TenantId, key: &[u8]) -> Option<usize> {
        e.find_key(t.0 as usize, key, hash_key(key)).map(|(p, _)| p)
    }

    fn key(i: u32) -> Vec<u8> {
        format!("key:{i}").into_bytes()
    }

    #[test]
    fn keys_go_to_the_pool_of_their_measured_class_and_every_command_sees_them_all() {
        let (mut e, t, clock) = engine(64 << 20, 4);
        for i in 0..200 {
            let us = if i % 2 == 0 { CHEAP_US } else { DEAR_US };
            fill(&mut e, &clock, t, &key(i), us);
        }
        let pools = e.class_pools(t);
        assert_eq!(pools.len(), 3, "default + one per cost");
        assert_eq!(pools[0].range, None);
        assert_eq!(pools[0].stats.items, 0);
        let (cheap, dear) = (&pools[1], &pools[2]);
        assert_eq!(
            cheap.range,
            Some((penalty_class(200.0), penalty_class(200.0)))
        );
        assert_eq!(
            dear.range,
            Some((penalty_class(4000.0), penalty_class(4000.0)))
        );
        assert_eq!((cheap.stats.items, dear.stats.items), (100, 100));
        // Misses moved to the class that filled them; the tenant's total is unchanged.
        assert_eq!((cheap.stats.misses, dear.stats.misses), (100, 100));
        assert_eq!(e.tenant_stats(t).misses, 200);
        assert_eq!(dear.penalty.1, 100);
        assert!((dear.penalty.0 - 4000.0).abs() < 1e-6);
        // One keyspace: DBSIZE, GET, EXISTS, SCAN, KEYS-like walks, RANDOMKEY, TTL, RENAME.
        assert_eq!(e.len(t), 200);
        assert_eq!(e.tenant_stats(t).items, 200);
        for i in 0..200 {
            assert!(e.exists(t, &key(i)));
            assert_eq!(e.get(t, &key(i)), Some(&[7u8; 100][..]));
        }
        let mut seen = Vec::new();
        let mut cursor = 0;
        loop {
            cursor = e.scan(t, cursor, 10, &mut seen);
            if cursor == 0 {
                break;
            }
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 200);
        let mut walked = 0;
        e.for_each_item(t, |_, _, _| walked += 1);
        assert_eq!(walked, 200);
        assert!(e.random_key(t).is_some());
        assert!(e.set_expire(t, &key(1), Some(e.now_ms() + 10_000)));
        assert_eq!(e.expire_at(t, &key(1)), Some(Some(e.now_ms() + 10_000)));
        assert!(e.rename(t, &key(1), b"renamed", false).unwrap());
        assert_eq!(pool_of_key(&e, t, b"renamed"), Some(dear.pool.0 as usize));
        assert!(e.object_info(t, b"renamed").is_some());
        assert!(e.delete(t, &key(0)));
        assert_eq!(e.len(t), 199);
        e.check_invariants();
        e.flush(t);
        assert_eq!(e.len(t), 0);
        assert_eq!(e.stats().pages_used, 0);
        e.check_invariants();
    }

    #[test]
    fn a_key_moves_with_its_measured_class_and_keeps_it_otherwise() {
        let (mut e, t, clock) = engine(64 << 20, 4);
        fill(&mut e, &clock, t, b"k", CHEAP_US);
        let cheap = pool_of_key(&e, t, b"k").unwrap();
        // A SET without a measured miss keeps the key in its pool, TTL and all.
        let at = e.now_ms() + 60_000;
        e.set(
            t,
            b"k",
            b"v2",
            SetOptions {
                expire: Expire::AtMs(at),
                ..SetOptions::default()
            },
        )
        .unwrap();
        assert_eq!(pool_of_key(&e, t, b"k"), Some(cheap));
        // Measured dear now: it moves, KEEPTTL keeps its TTL, nothing is lost or doubled.
        assert!(e.get(t, b"absent").is_none());
        e.delete(t, b"k");
        assert!(e.get(t, b"k").is_none());
        clock.advance_us(DEAR_US);
        e.set(
            t,
            b"k",
            b"v3",
            SetOptions {
                expire: Expire::AtMs(at),
                ..SetOptions::default()
            },
        )
        .unwrap();
        let dear = pool_of_key(&e, t, b"k").unwrap();
        assert_ne!(dear, cheap);
        assert_eq!(e.tenants[cheap].all.len(), 0);
        // Measured cheap again while present (a miss and a fill racing another writer).
        e.tenants[t.0 as usize]
            .group
            .as_mut()
            .unwrap()
            .pending
            .insert(hash_key(b"k"), e.clock.now_us());
        clock.advance_us(CHEAP_US);
        e.set(
            t,
            b"k",
            b"v4",
            SetOptions {
                expire: Expire::Keep,
                ..SetOptions::default()
            },
        )
        .unwrap();
        assert_eq!(pool_of_key(&e, t, b"k"), Some(cheap));
        assert_eq!(e.get(t, b"k"), Some(&b"v4"[..]));
        assert_eq!(e.expire_at(t, b"k"), Some(Some(at)));
        assert_eq!(e.len(t), 1);
        // A key never measured goes to the default class.
        e.set(t, b"plain", b"v", SetOptions::default()).unwrap();
        assert_eq!(pool_of_key(&e, t, b"plain"), Some(t.0 as usize));
        e.check_invariants();
    }

    #[test]
    fn the_class_pools_are_capped_and_adjacent_ranges_merge() {
        let (mut e, t, clock) = engine(64 << 20, 2);
        for (i, us) in [20u64, 5_000, 100, 50_000, 300].into_iter().enumerate() {
            fill(&mut e, &clock, t, &key(i as u32), us);
        }
        let pools = e.class_pools(t);
        assert_eq!(pools.len(), 3, "default + at most 2 class pools");
        let ranges: Vec<(u8, u8)> = pools[1..].iter().map(|p| p.range.unwrap()).collect();
        assert!(
            ranges[0].1 < ranges[1].0 || ranges[1].1 < ranges[0].0,
            "disjoint: {ranges:?}"
        );
        for (i, us) in [20.0, 5_000.0, 100.0, 50_000.0, 300.0]
            .into_iter()
            .enumerate()
        {
            let c = penalty_class(us);
            let p = pool_of_key(&e, t, &key(i as u32)).unwrap();
            let m = pools.iter().find(|x| x.pool.0 as usize == p).unwrap();
            let (lo, hi) = m.range.unwrap();
            assert!(
                lo <= c && c <= hi,
                "key {i} (class {c}) in range {lo}..={hi}"
            );
        }
        assert_eq!(e.tenant_ids(), vec![t], "class pools are not tenants");
        assert!(e.set_penalty_classes(t, 0).is_err(), "pools exist");
        assert!(e.set_penalty_classes(t, 17).is_err());
        assert!(e.set_budget(t, 0, Some(1 << 20)).is_err());
        e.check_invariants();
    }

    /// Fixed targets, as a controller would set them.
    #[derive(Debug)]
    struct Fixed(Vec<u64>);

    impl Controller for Fixed {
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn on_access(&mut self, _a: &Access) {}
        fn decide(&mut self, view: &ControlView<'_>) -> Decision {
            let mut v = self.0.clone();
            v.resize(view.pools.len(), 0);
            Decision {
                pool_pages: Some(v),
                ..Decision::default()
            }
        }
    }

    #[test]
    fn a_class_pool_over_its_target_evicts_only_its_own_items_and_memory_holds() {
        // 32 pages of 64 KiB; the dear class gets 20, the cheap one 10.
        let (mut e, t, clock) = engine(2 << 20, 4);
        for i in 0..200 {
            fill(
                &mut e,
                &clock,
                t,
                &key(i),
                if i % 2 == 0 { CHEAP_US } else { DEAR_US },
            );
        }
        let pools = e.class_pools(t);
        let (cheap, dear) = (pools[1].pool.0 as usize, pools[2].pool.0 as usize);
        let mut targets = vec![0u64; e.tenants.len()];
        targets[cheap] = 10;
        targets[dear] = 20;
        e.set_controller(
            Box::new(Fixed(targets)),
            ControlConfig {
                interval: Interval::Requests(1),
                ..ControlConfig::default()
            },
        );
        e.run_controller();
        let dear_before = e.tenants[dear].all.len();
        // Many more cheap keys than fit: the cheap pool evicts, the dear one keeps every item.
        for i in 1000..20_000 {
            fill(&mut e, &clock, t, &key(i), CHEAP_US);
        }
        e.check_invariants();
        let dear_stats = e.pool_stats(dear);
        assert_eq!(dear_stats.evictions, 0, "the dear pool lost items");
        assert_eq!(e.tenants[dear].all.len(), dear_before);
        assert!(e.pool_stats(cheap).evictions > 0);
        assert!(
            e.tenants[cheap].pages.len() <= 11,
            "cheap pool near its target"
        );
        assert!(e.stats().pages_used <= e.pages_total());
        for i in (1..200).step_by(2) {
            assert!(e.exists(t, &key(i)), "dear key {i} kept");
        }
    }
}
