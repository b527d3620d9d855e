//! What snapshots need from the engine: a walk over a tenant's items with the metadata the
//! policies keep ([`Engine::for_each_item`]), and putting an item back with that metadata
//! ([`Engine::restore`]). The file format lives with the server,
//! which owns the object types; the engine only hands out and takes back keys, values, TTLs
//! and recency stamps.

use super::*;

/// How a tenant's per-item recency field reads (the stamp of [`ItemMeta`]); a stamp restored
/// into a tenant whose kind differs is meaningless and is not restored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecencyKind {
    /// Redis's LRU clock: seconds, 24 bits, from the wall clock (comparable across restarts).
    RedisLru,
    /// Redis's LFU field: `minutes << 8 | log counter`, minutes from the wall clock.
    Lfu,
    /// The logical LRU clock (accesses since the engine started): not comparable across restarts.
    Logical,
}

impl RecencyKind {
    /// A byte for files.
    pub fn code(self) -> u8 {
        match self {
            RecencyKind::RedisLru => 1,
            RecencyKind::Lfu => 2,
            RecencyKind::Logical => 3,
        }
    }

    /// The kind a [`RecencyKind::code`] byte names.
    pub fn from_code(c: u8) -> Option<RecencyKind> {
        match c {
            1 => Some(RecencyKind::RedisLru),
            2 => Some(RecencyKind::Lfu),
            3 => Some(RecencyKind::Logical),
            _ => None,
        }
    }
}

/// A value being restored ([`Engine::restore`]).
#[derive(Debug)]
pub enum RestoreValue<'a> {
    /// A string's bytes.
    Str(&'a [u8]),
    /// A hash, list, set or sorted set.
    Obj(Box<dyn Object>),
}

/// The per-item metadata a snapshot keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemMeta {
    /// Absolute expiry in clock ms (`None`: no TTL).
    pub expire_at_ms: Option<u64>,
    /// The policy's recency field (see [`RecencyKind`]): Redis's 24-bit `lru` field.
    pub stamp: u32,
    /// A string's metadata prefix ([`Engine::set_with_meta`]), if it was stored with one.
    pub prefix: Option<[u8; crate::store::META_PREFIX]>,
}

impl Engine {
    /// How tenant `t`'s recency stamps read under its current policy and clock.
    pub fn recency_kind(&self, t: TenantId) -> RecencyKind {
        if self.tenants[t.0 as usize].cfg.policy.is_lfu() {
            RecencyKind::Lfu
        } else if self.cfg.lru_clock == LruClockMode::Logical {
            RecencyKind::Logical
        } else {
            RecencyKind::RedisLru
        }
    }

    /// Visits every item of tenant `t` with its value and metadata, without touching or
    /// counting anything. Under `allkeys-exact-lru` the least recently used item comes first,
    /// so restoring the items in this order rebuilds the same list; otherwise the order is the
    /// engine's storage order. Items whose TTL has passed but that no access or sweep removed
    /// yet are visited too (the caller drops them).
    pub fn for_each_item(&self, t: TenantId, mut f: impl FnMut(&[u8], ValueRef<'_>, ItemMeta)) {
        for ti in self.members(t.0 as usize) {
            self.for_each_pool_item(ti, &mut f);
        }
    }

    fn for_each_pool_item(&self, ti: usize, f: &mut impl FnMut(&[u8], ValueRef<'_>, ItemMeta)) {
        let tn = &self.tenants[ti];
        let mut visit = |h: u32| {
            let meta = ItemMeta {
                expire_at_ms: self.expiry(ti, h),
                stamp: self.store.lru(h),
                prefix: self.meta_prefix(h),
            };
            f(self.store.key(h), self.value_ref(h), meta);
        };
        match &tn.lru {
            Some(list) => {
                let mut pos = list.tail();
                while let Some(p) = pos {
                    visit(tn.all[p as usize]);
                    pos = list.more_recent(p);
                }
            }
            None => tn.all.iter().for_each(|&h| visit(h)),
        }
    }

    /// Puts an item back with its metadata (a snapshot being loaded): stored as SET (or
    /// [`Engine::obj_store`]) stores it, evicting by policy when the budget is full, unseen by
    /// the controller; then given `meta`'s TTL and, when `stamp_kind` is the tenant's
    /// [`Engine::recency_kind`] and not logical, its recency stamp. An item whose TTL has
    /// passed is not stored (`Ok(false)`).
    ///
    /// # Errors
    /// As [`Engine::set`] and [`Engine::obj_store`].
    pub fn restore(
        &mut self,
        t: TenantId,
        key: &[u8],
        value: RestoreValue<'_>,
        meta: ItemMeta,
        stamp_kind: RecencyKind,
    ) -> Result<bool, EngineError> {
        if meta
            .expire_at_ms
            .is_some_and(|at| at <= self.clock.now_ms())
        {
            return Ok(false);
        }
        match value {
            RestoreValue::Str(v) => {
                let opts = SetOptions {
                    expire: meta.expire_at_ms.map_or(Expire::Persist, Expire::AtMs),
                    cond: SetCond::Always,
                };
                // Into the pool holding the key, else the tenant's own (the default class).
                let p = self
                    .find_key(t.0 as usize, key, hash_key(key))
                    .map_or(t.0 as usize, |(p, _)| p);
                match meta.prefix {
                    Some(m) => {
                        let raw = [&m[..], v].concat();
                        self.set_inner(t, p, key, &raw, opts, true)?;
                    }
                    None => {
                        self.set_inner(t, p, key, v, opts, false)?;
                    }
                }
            }
            RestoreValue::Obj(obj) => {
                self.obj_store(t, key, obj, false)?;
                if meta.expire_at_ms.is_some() {
                    self.set_expire(t, key, meta.expire_at_ms);
                }
            }
        }
        self.restamp(t, key, meta.stamp, stamp_kind);
        Ok(true)
    }

    /// Item `h`'s metadata prefix, if it was stored with one.
    fn meta_prefix(&self, h: u32) -> Option<[u8; crate::store::META_PREFIX]> {
        if self.store.is_obj(h) || !self.store.has_meta(h) {
            return None;
        }
        self.store.raw_value(h)[..crate::store::META_PREFIX]
            .try_into()
            .ok()
    }

    /// Gives `key` the recency stamp `stamp` when it reads the same way in this tenant.
    fn restamp(&mut self, t: TenantId, key: &[u8], stamp: u32, kind: RecencyKind) {
        if kind != self.recency_kind(t) || kind == RecencyKind::Logical {
            return;
        }
        if let Some((_, h)) = self.find_key(t.0 as usize, key, hash_key(key)) {
            self.store.set_lru(h, stamp & crate::evict::LRU_CLOCK_MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use locus_common::VirtualClock;

    use super::*;

    fn engine(policy: Policy) -> (Engine, TenantId) {
        let clock = Arc::new(VirtualClock::new(1_000_000));
        let mut e = Engine::new(EngineConfig::default(), clock).unwrap();
        let t = e
            .add_tenant(TenantConfig {
                policy,
                ..TenantConfig::new("t")
            })
            .unwrap();
        (e, t)
    }

    fn keys(e: &Engine, t: TenantId) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        e.for_each_item(t, |k, _, _| v.push(k.to_vec()));
        v
    }

    #[test]
    fn an_exact_lru_tenant_is_walked_least_recent_first_and_restored_in_that_order() {
        let (mut a, t) = engine(Policy::AllkeysExactLru);
        for k in [b"a", b"b", b"c", b"d"] {
            a.set(t, k, b"v", SetOptions::default()).unwrap();
        }
        a.get(t, b"b");
        a.get(t, b"a");
        let order = keys(&a, t);
        assert_eq!(order, [&b"c"[..], b"d", b"b", b"a"]);
        let (mut b, tb) = engine(Policy::AllkeysExactLru);
        let kind = a.recency_kind(t);
        a.for_each_item(t, |k, v, m| {
            let ValueRef::Str(v) = v else { unreachable!() };
            assert!(b.restore(tb, k, RestoreValue::Str(v), m, kind).unwrap());
        });
        assert_eq!(keys(&b, tb), order);
    }

    #[test]
    fn stamps_and_ttls_come_back_and_passed_ttls_are_dropped() {
        let (mut a, t) = engine(Policy::AllkeysLfu);
        a.set(t, b"k", b"v", SetOptions::default()).unwrap();
        for _ in 0..50 {
            a.get(t, b"k");
        }
        let mut meta = None;
        a.for_each_item(t, |_, _, m| meta = Some(m));
        let mut meta = meta.unwrap();
        meta.expire_at_ms = Some(a.now_ms() + 5000);
        let (mut b, tb) = engine(Policy::AllkeysLfu);
        let kind = RecencyKind::Lfu;
        assert!(
            b.restore(tb, b"k", RestoreValue::Str(b"v"), meta, kind)
                .unwrap()
        );
        let mut got = None;
        b.for_each_item(tb, |_, _, m| got = Some(m));
        assert_eq!(got, Some(meta));
        // A stamp of another kind is not restored; a passed TTL is not stored.
        let (mut c, tc) = engine(Policy::AllkeysLru);
        assert!(
            c.restore(tc, b"k", RestoreValue::Str(b"v"), meta, kind)
                .unwrap()
        );
        let mut other = None;
        c.for_each_item(tc, |_, _, m| other = Some(m));
        assert_ne!(other.unwrap().stamp, meta.stamp);
        meta.expire_at_ms = Some(c.now_ms());
        assert!(
            !c.restore(tc, b"x", RestoreValue::Str(b"v"), meta, kind)
                .unwrap()
        );
        assert!(!c.exists(tc, b"x"));
    }
}

impl Engine {
    /// One bounded step of a walk over tenant `t`'s items in storage order (a dump made in
    /// slices, so no step stalls the other tenants for long): calls `f(key, value, meta,
    /// coldness)` on about `count` live, unexpired items from `cursor` (0 to start) and returns
    /// the cursor to resume from, 0 at the end. Nothing is touched or counted. Items never move
    /// while they live, so an item present for the whole walk is visited exactly once; one
    /// written or deleted between steps may be visited or not. `coldness` is
    /// [`Engine::coldness`] of the item.
    pub fn walk_items(
        &mut self,
        t: TenantId,
        cursor: u64,
        count: usize,
        mut f: impl FnMut(&[u8], ValueRef<'_>, ItemMeta, u64),
    ) -> u64 {
        let clock = self.lru_clock();
        self.walk(t, cursor, count, |eng, ti, h, expired| {
            if expired {
                return false;
            }
            let meta = ItemMeta {
                expire_at_ms: eng.expiry(ti, h),
                stamp: eng.store.lru(h),
                prefix: eng.meta_prefix(h),
            };
            let cold = eng.coldness_at(ti, clock, meta.stamp);
            f(eng.store.key(h), eng.value_ref(h), meta, cold);
            true
        })
    }

    /// How cold an item of tenant `t` with recency `stamp` is now, as its policy ranks items
    /// (larger: evicted sooner): the idle time under LRU policies, 255 minus the log counter
    /// under LFU ones. A dump that keeps a tenant's hottest share dumps the coldest first.
    pub fn coldness(&self, t: TenantId, stamp: u32) -> u64 {
        self.coldness_at(t.0 as usize, self.lru_clock(), stamp)
    }

    fn coldness_at(&self, t: usize, clock: u32, stamp: u32) -> u64 {
        if self.tenants[t].cfg.policy.is_lfu() {
            255 - u64::from(stamp & 0xff)
        } else {
            self.idle_of(clock, stamp)
        }
    }

    /// Marks tenant `t` dormant (pRedis's dump: its items were written out, and it is idle until
    /// its load) or active again. Under a controller a dormant pool is capped at the pages its
    /// resident items need (plus one per class they use, plus one for the writes it still gets)
    /// in the [`crate::control::ControlView`] (`max_pages`, `min_pages`, `dormant`) and in every
    /// target the engine carries out, and the pages its target loses go to the other pools at
    /// once, in proportion to their targets (then the target arbiter lets them take its pages);
    /// a decision is made due, so the controller plans with the cap. Waking restores the target
    /// it had (taken back from the others in proportion to theirs). Without targets only the
    /// flag changes: the shared and static arbiters already let other pools take a pool's free
    /// chunks.
    pub fn set_dormant(&mut self, t: TenantId, dormant: bool) {
        if t.0 as usize >= self.tenants.len() {
            return;
        }
        // A tenant with per-key classes sleeps and wakes with all its pools.
        for p in self.members(t.0 as usize) {
            self.set_pool_dormant(p, dormant);
        }
    }

    fn set_pool_dormant(&mut self, ti: usize, dormant: bool) {
        if ti >= self.tenants.len() || self.tenants[ti].dormant.is_some() == dormant {
            return;
        }
        let n = self.tenants.len();
        let total = self.pages_total;
        let mut targets = self.control.as_ref().map(|c| {
            let mut v = c.targets.clone();
            v.resize(n, None);
            v
        });
        if dormant {
            let tn = &self.tenants[ti];
            let ps = self.cfg.page_size;
            let classes = tn.class_counters.iter().filter(|c| c.items > 0).count() as u64;
            // One page more: the valley's own writes need somewhere to go.
            let cap = tn.charged_bytes.div_ceil(ps) + tn.large_bytes.div_ceil(ps) + classes + 1;
            let saved = targets.as_ref().and_then(|v| v[ti]);
            self.tenants[ti].dormant = Some(Dormant {
                cap_pages: cap,
                saved_target: saved,
            });
            if let (Some(v), Some(old)) = (targets.as_mut(), saved)
                && old > cap
            {
                v[ti] = Some(cap);
                share_out(v, ti, old - cap, total, |i| {
                    self.tenants[i].dormant.is_some()
                });
            }
            self.control_due = self.control.is_some();
        } else {
            let saved = self.tenants[ti].dormant.take().and_then(|d| d.saved_target);
            if let (Some(v), Some(want)) = (targets.as_mut(), saved) {
                v[ti] = Some(want);
                let sum: u64 = v.iter().flatten().sum();
                if sum > total {
                    take_back(v, ti, sum - total);
                }
            }
        }
        if let (Some(v), Some(cs)) = (targets, self.control.as_mut()) {
            cs.targets = v;
            self.arbiter.set_targets(&cs.targets);
        }
    }

    /// Whether tenant `t` is dormant ([`Engine::set_dormant`]).
    pub fn dormant(&self, t: TenantId) -> bool {
        self.tenants
            .get(t.0 as usize)
            .is_some_and(|tn| tn.dormant.is_some())
    }

    /// Tenant `ti`'s page bounds as its configuration and dormancy set them: (floor, cap).
    pub(super) fn page_bounds(&self, ti: usize) -> (u64, Option<u64>) {
        bounds_of(&self.tenants[ti], self.cfg.page_size)
    }
}

/// A tenant's page bounds as its configuration and dormancy set them: (floor, cap).
#[inline]
fn bounds_of(tn: &Tenant, ps: u64) -> (u64, Option<u64>) {
    let (lo, hi) = (tn.cfg.min_bytes / ps, tn.cfg.max_bytes.map(|m| m / ps));
    match &tn.dormant {
        Some(d) => (
            lo.min(d.cap_pages),
            Some(hi.map_or(d.cap_pages, |h| h.min(d.cap_pages))),
        ),
        None => (lo, hi),
    }
}

/// Gives `pages` to the pools other than `skip` that have a target and are not `dormant`, in proportion to their
/// targets (evenly when they are all 0), the rounding left-over to the first; never past `total`.
pub(super) fn share_out(
    v: &mut [Option<u64>],
    skip: usize,
    pages: u64,
    total: u64,
    dormant: impl Fn(usize) -> bool,
) {
    let room = total.saturating_sub(v.iter().flatten().sum());
    let pages = pages.min(room);
    let others: Vec<usize> = (0..v.len())
        .filter(|&i| i != skip && v[i].is_some() && !dormant(i))
        .collect();
    if others.is_empty() || pages == 0 {
        return;
    }
    let weight: u64 = others.iter().map(|&i| v[i].unwrap_or(0)).sum();
    let mut given = 0;
    for &i in &others {
        let w = v[i].unwrap_or(0);
        let add = if weight == 0 {
            pages / others.len() as u64
        } else {
            (pages as u128 * w as u128 / weight as u128) as u64
        };
        v[i] = Some(w + add);
        given += add;
    }
    if let Some(x) = v[others[0]].as_mut() {
        *x += pages - given;
    }
}

/// Takes `pages` from the pools other than `keep`, in proportion to their targets.
fn take_back(v: &mut [Option<u64>], keep: usize, pages: u64) {
    let weight: u64 = (0..v.len())
        .filter(|&i| i != keep)
        .filter_map(|i| v[i])
        .sum();
    if weight == 0 {
        return;
    }
    let mut left = pages.min(weight);
    let mut taken = 0;
    for i in (0..v.len()).filter(|&i| i != keep) {
        if let Some(x) = v[i].as_mut() {
            let cut = ((pages.min(weight) as u128 * *x as u128 / weight as u128) as u64).min(*x);
            *x -= cut;
            taken += cut;
        }
    }
    left -= taken.min(left);
    // Rounding: the rest from the largest.
    while left > 0 {
        let Some(i) = (0..v.len())
            .filter(|&i| i != keep && v[i].is_some_and(|x| x > 0))
            .max_by_key(|&i| v[i])
        else {
            break;
        };
        let x = v[i].as_mut().expect("filtered on Some");
        let cut = left.min(*x);
        *x -= cut;
        left -= cut;
    }
}

/// A dormant tenant's cap and the target it had before ([`Engine::set_dormant`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Dormant {
    /// Pages its resident items need.
    pub(super) cap_pages: u64,
    /// The controller's target for it when it went dormant.
    pub(super) saved_target: Option<u64>,
}
