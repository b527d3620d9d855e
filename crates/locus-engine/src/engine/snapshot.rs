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
        let ti = t.0 as usize;
        let tn = &self.tenants[ti];
        let mut visit = |h: u32| {
            let meta = ItemMeta {
                expire_at_ms: self.expiry(ti, h),
                stamp: self.store.lru(h),
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
                self.set_inner(t, key, v, opts)?;
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

    /// Gives `key` the recency stamp `stamp` when it reads the same way in this tenant.
    fn restamp(&mut self, t: TenantId, key: &[u8], stamp: u32, kind: RecencyKind) {
        if kind != self.recency_kind(t) || kind == RecencyKind::Logical {
            return;
        }
        if let Some(h) = self.find(t.0 as usize, key, hash_key(key)) {
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
