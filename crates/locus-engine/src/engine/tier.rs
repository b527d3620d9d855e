//! Memory tiers (sdTMM, dissertation section 5.1): per-tenant LRU lists per tier with insertion
//! points, tier-aware allocation, and the demotion, eviction and promotion workers as bounded
//! steps. Only active when `EngineConfig::tier` is set; every hook elsewhere is a no-op without
//! it.
//!
//! ```text
//!  per tenant:  fast list  head ... [ip: 1/4 from tail] ... tail   (new items enter at ip)
//!               slow list  head ... [ip: midpoint]      ... tail   (demoted items enter at ip)
//!  nodes are indexed by the item's dense position (`Tenant::all`); both lists thread through
//!  one `Links` (evict.rs, the links `LruList` uses too), with their own ends; an item is
//!  in exactly one list, the one of its page's tier.
//! ```
//!
//! Time for reuse is the engine's logical access counter (GETs and SETs), so a simulation is
//! deterministic whatever its clock. The emulated slow tier's delay is never slept here: a GET
//! reports the tier it hit ([`Engine::last_hit_tier`]) and the caller charges the delay.

use super::*;
use crate::evict::{Ends, Links};
use crate::region::Region;
use crate::tier::{PromotionMode, SlowBackend, TenantTierStats, Tier, TierConfig, TierStats};

/// One item's tier state.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Logical time of its last access.
    last: u64,
    /// Its last reuse time in the slow tier (`u64::MAX` until it is re-accessed there).
    reuse: u64,
    tier: u8,
    /// In the tail segment (between the insertion point and the tail).
    tail: bool,
}

/// One tier's list, threaded through the tenant's [`Links`] (the same links as `LruList`'s),
/// with an insertion point kept at `frac` of the list's length from the tail (CacheLib's MMLru
/// insertion point: a marker and the length of the tail segment it opens, rebalanced by a step
/// or two after each change).
#[derive(Clone, Copy, Debug)]
struct IpList {
    ends: Ends,
    /// The first (most recent) node of the tail segment, `NIL` when the segment is empty.
    ip: u32,
    len: u32,
    tail_len: u32,
    frac: f64,
}

impl IpList {
    fn new(frac: f64) -> Self {
        Self {
            ends: Ends::EMPTY,
            ip: NIL,
            len: 0,
            tail_len: 0,
            frac,
        }
    }

    fn target_tail(&self) -> u32 {
        ((f64::from(self.len) * self.frac).floor() as u32).min(self.len)
    }
}

/// A tenant's tier lists and counters.
#[derive(Debug)]
pub(super) struct TenantTier {
    links: Links,
    node: Vec<Node>,
    lists: [IpList; 2],
    stats: TenantTierStats,
}

impl TenantTier {
    pub(super) fn new(cfg: &TierConfig) -> Self {
        Self {
            links: Links::default(),
            node: Vec::new(),
            lists: [
                IpList::new(cfg.fast_insertion),
                IpList::new(cfg.slow_insertion),
            ],
            stats: TenantTierStats::default(),
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        self.links.bytes() + (self.node.capacity() * std::mem::size_of::<Node>()) as u64
    }

    fn rebalance(&mut self, tier: usize) {
        let target = self.lists[tier].target_tail();
        while self.lists[tier].tail_len > target {
            let n = self.lists[tier].ip;
            self.node[n as usize].tail = false;
            self.lists[tier].ip = self.links.next(n);
            self.lists[tier].tail_len -= 1;
        }
        while self.lists[tier].tail_len < target {
            let l = self.lists[tier];
            let n = if l.ip == NIL {
                l.ends.tail
            } else {
                self.links.prev(l.ip)
            };
            self.node[n as usize].tail = true;
            self.lists[tier].ip = n;
            self.lists[tier].tail_len += 1;
        }
    }

    fn unlink(&mut self, pos: u32) {
        let p = pos as usize;
        let tier = self.node[p].tier as usize;
        let l = &mut self.lists[tier];
        if self.node[p].tail {
            if l.ip == pos {
                l.ip = self.links.next(pos);
            }
            l.tail_len -= 1;
            self.node[p].tail = false;
        }
        l.len -= 1;
        self.links.unlink(&mut l.ends, pos);
        self.rebalance(tier);
    }

    /// Links `pos` into `tier`'s list: at its head, or at its insertion point (at the tail when
    /// the tail segment is empty).
    fn link(&mut self, pos: u32, tier: usize, at_ip: bool) {
        let p = pos as usize;
        self.node[p].tier = tier as u8;
        let l = &mut self.lists[tier];
        if at_ip {
            self.links.link_before(&mut l.ends, pos, l.ip);
            self.node[p].tail = true;
            l.ip = pos;
            l.tail_len += 1;
        } else {
            self.links.link_front(&mut l.ends, pos);
            self.node[p].tail = false;
        }
        l.len += 1;
        self.rebalance(tier);
    }

    /// A new item at `pos` (== number of nodes), entering `tier` at its insertion point.
    fn push(&mut self, pos: u32, tier: usize, now: u64) {
        debug_assert_eq!(pos as usize, self.node.len());
        self.links.push();
        self.node.push(Node {
            last: now,
            reuse: u64::MAX,
            tier: tier as u8,
            tail: false,
        });
        self.link(pos, tier, true);
    }

    /// Removes `pos`; the last node moves into `pos` (as the dense array does).
    fn swap_remove(&mut self, pos: u32) {
        self.unlink(pos);
        let last = (self.node.len() - 1) as u32;
        let tier = self.node[last as usize].tier as usize;
        let list = &mut self.lists[tier];
        self.links.swap_remove(pos, &mut list.ends);
        if last != pos {
            if list.ip == last {
                list.ip = pos;
            }
            self.node[pos as usize] = self.node[last as usize];
        }
        self.node.pop();
    }

    fn tail_of(&self, tier: usize) -> Option<u32> {
        let t = self.lists[tier].ends.tail;
        (t != NIL).then_some(t)
    }
}

/// The engine's tier state.
#[derive(Debug)]
pub(super) struct TierState {
    cfg: TierConfig,
    budget: [u64; 2],
    used: [u64; 2],
    charged: [u64; 2],
    /// Chunk bytes of the tier's pages (slots × chunk: a page's tail that fits no chunk is
    /// not free space).
    chunk_bytes: [u64; 2],
    window: Vec<u64>,
    wpos: usize,
    wsum: u64,
    demoting: bool,
    evicting: bool,
    next_run: u64,
    runs: u64,
    last_hit: Option<Tier>,
    /// Reads and in-place writes of slow-tier items so far (what the emulated delay charges).
    slow_accesses: u64,
    cursor: usize,
    /// The slow tier's mapping (`file:` and `numa:` backends; `None` for `emulated:`).
    region: Option<Region>,
    /// Page ids holding a window of `region`, not in use.
    free_mapped: Vec<u32>,
    /// Windows of `region` handed to page ids so far.
    windows: u64,
}

impl TierState {
    /// The tier state, with the slow tier's mapping made for a `file:` or `numa:` backend.
    fn new(cfg: TierConfig, pages_total: u64, page_size: u64) -> Result<Self, String> {
        let budget = cfg.split_pages(pages_total);
        let region = match &cfg.slow_backend {
            SlowBackend::Emulated { .. } => None,
            SlowBackend::File { path } => Some(Region::file(path, budget[1], page_size)?),
            SlowBackend::Numa { node } => Some(Region::numa(*node, budget[1], page_size)?),
        };
        Ok(Self {
            budget,
            used: [0; 2],
            charged: [0; 2],
            chunk_bytes: [0; 2],
            window: Vec::with_capacity(cfg.reuse_window as usize),
            wpos: 0,
            wsum: 0,
            demoting: false,
            evicting: false,
            next_run: cfg.worker_interval,
            runs: 0,
            last_hit: None,
            slow_accesses: 0,
            cursor: 0,
            region,
            free_mapped: Vec::new(),
            windows: 0,
            cfg,
        })
    }

    fn note_reuse(&mut self, rt: u64) {
        if self.window.len() < self.cfg.reuse_window as usize {
            self.window.push(rt);
        } else {
            self.wsum -= self.window[self.wpos];
            self.window[self.wpos] = rt;
            self.wpos = (self.wpos + 1) % self.window.len();
        }
        self.wsum += rt;
    }

    pub(super) fn clear_last_hit(&mut self) {
        self.last_hit = None;
    }

    fn mean_reuse(&self) -> Option<f64> {
        (!self.window.is_empty()).then(|| self.wsum as f64 / self.window.len() as f64)
    }
}

/// Items a call of [`Engine::run_tier_workers`] moved or evicted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierWork {
    /// Fast → slow.
    pub demoted: u64,
    /// Evicted from the slow tier by its eviction worker.
    pub evicted: u64,
    /// Slow → fast.
    pub promoted: u64,
}

impl Engine {
    /// Sets up the tier state (from `Engine::new`), mapping the slow tier's memory for a
    /// `file:` or `numa:` backend.
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] naming `tier.slow_backend` when the mapping fails.
    pub(super) fn tier_state(
        cfg: &EngineConfig,
        pages_total: u64,
    ) -> Result<Option<Box<TierState>>, EngineError> {
        cfg.tier
            .clone()
            .map(|t| {
                TierState::new(t, pages_total, cfg.page_size)
                    .map(Box::new)
                    .map_err(|e| invalid(vec![format!("tier.slow_backend: {e}")]))
            })
            .transpose()
    }

    /// A page id for the slow tier whose buffer is a window of its mapping (`None` without a
    /// mapping: the page gets ordinary memory). The caller checked the slow tier's budget, so
    /// a window is free: every window handed out is on a page in use or in `free_mapped`.
    pub(super) fn tier_mapped_page(&mut self) -> Option<u32> {
        let ts = self.tiers.as_mut()?;
        let region = ts.region.as_ref()?;
        if let Some(pg) = ts.free_mapped.pop() {
            return Some(pg);
        }
        let id = self.store.pages.len() as u32;
        locus_common::strict_assert!(u64::from(id) < self.max_page_ids);
        let mut page = Page::empty();
        page.buf = region.window(ts.windows);
        ts.windows += 1;
        self.store.pages.push(page);
        Some(id)
    }

    /// A released page whose buffer is a window of the slow tier's mapping waits for the next
    /// slow page.
    pub(super) fn tier_release_mapped(&mut self, pg: u32) {
        self.tiers
            .as_mut()
            .expect("mapped pages exist only with tiers")
            .free_mapped
            .push(pg);
    }

    /// The NUMA node holding `key`'s bytes, as the kernel reports it (`get_mempolicy`), without
    /// touching the item's recency; `None` when absent or the kernel cannot tell.
    pub fn item_numa_node(&self, t: TenantId, key: &[u8]) -> Option<i32> {
        let h = self.find(t.0 as usize, key, hash_key(key))?;
        let (pg, slot) = self.store.split(h);
        let page = &self.store.pages[pg];
        crate::region::node_of(page.buf[slot * page.chunk as usize..].as_ptr())
    }

    /// The slow tier's backing file and its size in bytes (`file:` backend only).
    pub fn slow_tier_file(&self) -> Option<(std::path::PathBuf, u64)> {
        let r = self.tiers.as_ref()?.region.as_ref()?;
        Some((r.path()?.to_path_buf(), r.len() as u64))
    }

    #[inline]
    fn page_tier(&self, h: u32) -> usize {
        usize::from(self.store.pages[self.store.split(h).0].tier)
    }

    /// A new item `h` at dense position `pos` of tenant `t` (from `link_item`).
    pub(super) fn tier_on_link(&mut self, t: usize, h: u32, pos: u32) {
        self.tier_on_item(t, h, pos, true);
    }

    /// Item `h` at `pos` of tenant `t` leaves (from `unlink_item`, before the dense array's
    /// swap-remove).
    pub(super) fn tier_on_unlink(&mut self, t: usize, h: u32, pos: u32) {
        self.tier_on_item(t, h, pos, false);
    }

    /// An item joins (enters its tier's list at the insertion point) or leaves; the tier's
    /// counts follow.
    fn tier_on_item(&mut self, t: usize, h: u32, pos: u32, joined: bool) {
        let Some(ts) = self.tiers.as_mut() else {
            return;
        };
        let (pi, _) = self.store.split(h);
        let (tier, chunk) = {
            let p = &self.store.pages[pi];
            (usize::from(p.tier), u64::from(p.chunk))
        };
        let tt = self.tenants[t].tier.as_mut().expect("tiered tenant");
        let c = &mut tt.stats.tiers[tier];
        if joined {
            ts.charged[tier] += chunk;
            c.items += 1;
            c.charged_bytes += chunk;
            tt.push(pos, tier, self.logical);
        } else {
            ts.charged[tier] -= chunk;
            c.items -= 1;
            c.charged_bytes -= chunk;
            tt.swap_remove(pos);
        }
    }

    /// An access to item `h` of `t` (a GET hit when `hit`, else a SET rewriting it in place):
    /// the fast tier feeds its reuse time to the rolling window, the slow tier records it on
    /// the item (section 5.1.4.1); either way the item goes to its list's head.
    pub(super) fn tier_on_access(&mut self, t: usize, h: u32, hit: bool) {
        let Some(ts) = self.tiers.as_mut() else {
            return;
        };
        let tier = usize::from(self.store.pages[self.store.split(h).0].tier);
        let pos = self.store.pos(h);
        let now = self.logical;
        let tt = self.tenants[t].tier.as_mut().expect("tiered tenant");
        let node = &mut tt.node[pos as usize];
        let rt = now.saturating_sub(node.last);
        node.last = now;
        if tier == Tier::Fast.index() {
            ts.note_reuse(rt);
        } else {
            node.reuse = rt;
            ts.slow_accesses += 1;
        }
        if hit {
            tt.stats.tiers[tier].hits += 1;
            ts.last_hit = Some(Tier::from_index(tier as u8));
        }
        if tt.lists[tier].ends.head != pos {
            tt.unlink(pos);
            tt.link(pos, tier, false);
        }
    }

    /// Page `pg` joined (`joined`) or left its owner `t`: the tier's page count follows.
    pub(super) fn tier_on_page(&mut self, t: usize, pg: u32, joined: bool) {
        let Some(ts) = self.tiers.as_mut() else {
            return;
        };
        let p = &self.store.pages[pg as usize];
        let tier = usize::from(p.tier);
        let bytes = u64::from(p.slots) * u64::from(p.chunk);
        let tt = self.tenants[t].tier.as_mut().expect("tiered tenant");
        if joined {
            ts.used[tier] += 1;
            ts.chunk_bytes[tier] += bytes;
            tt.stats.tiers[tier].pages += 1;
        } else {
            ts.used[tier] -= 1;
            ts.chunk_bytes[tier] -= bytes;
            tt.stats.tiers[tier].pages -= 1;
        }
    }

    /// Whether the workers are due (the data path runs them before its request).
    #[inline]
    pub(super) fn tier_due(&self) -> bool {
        self.tiers
            .as_ref()
            .is_some_and(|ts| ts.cfg.worker_interval > 0 && self.logical >= ts.next_run)
    }

    /// The tier a GET served its hit from, for the GET just made (`None`: a miss, or no tiers).
    pub fn last_hit_tier(&self) -> Option<Tier> {
        self.tiers.as_ref().and_then(|ts| ts.last_hit)
    }

    /// Accesses to slow-tier items so far, all tenants: reads (any command's) and writes that
    /// rewrite an item in place, not the workers' migrations (0 without tiers). A caller charges
    /// the emulated delay for the difference across the commands it ran.
    pub fn slow_accesses(&self) -> u64 {
        self.tiers.as_ref().map_or(0, |ts| ts.slow_accesses)
    }

    /// The tier holding `key` of `t`, without touching it (`None`: absent, or no tiers).
    pub fn item_tier(&self, t: TenantId, key: &[u8]) -> Option<Tier> {
        self.tiers.as_ref()?;
        let (_, h) = self.find_key(t.0 as usize, key, hash_key(key))?;
        Some(Tier::from_index(self.page_tier(h) as u8))
    }

    /// The engine's tier figures (`None` without tiers).
    pub fn tier_stats(&self) -> Option<TierStats> {
        let ts = self.tiers.as_ref()?;
        let free = |i: usize| self.free_share(i);
        Some(TierStats {
            budget_pages: ts.budget,
            used_pages: ts.used,
            charged_bytes: ts.charged,
            free_share: [free(0), free(1)],
            mean_reuse: ts.mean_reuse(),
            worker_runs: ts.runs,
            slow_access_ns: match ts.cfg.slow_backend {
                crate::tier::SlowBackend::Emulated { ns } => ns,
                _ => 0,
            },
        })
    }

    /// One tenant's tier figures (`None` without tiers).
    pub fn tenant_tier_stats(&self, t: TenantId) -> Option<TenantTierStats> {
        self.tenants[t.0 as usize]
            .tier
            .as_ref()
            .map(|tt| tt.stats.clone())
    }

    /// Sets each tenant's fast-tier byte target (sdTMM's multi-tenant partitioning, section
    /// 5.1.5), in tenant order; `None` for a tenant competes freely. The demotion worker
    /// shrinks tenants over their target, and a full fast tier evicts from the tenant furthest
    /// over its target.
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] without tiers or with the wrong number of targets.
    pub fn set_fast_targets(&mut self, targets: &[Option<u64>]) -> Result<(), EngineError> {
        if self.tiers.is_none() {
            return Err(invalid(vec![
                "tier: fast-tier targets need a tiered engine".to_string(),
            ]));
        }
        if targets.len() != self.tenants.len() {
            return Err(invalid(vec![format!(
                "tier: {} fast-tier targets for {} tenants",
                targets.len(),
                self.tenants.len()
            )]));
        }
        for (tn, &tgt) in self.tenants.iter_mut().zip(targets) {
            if let Some(tt) = tn.tier.as_mut() {
                tt.stats.fast_target_bytes = tgt;
            }
        }
        Ok(())
    }

    /// The share of `tier`'s budget that can take items without evicting or moving any: free
    /// chunks of its pages and its pages not in use, over the budget in bytes.
    fn free_share(&self, tier: usize) -> f64 {
        let ts = self.tiers.as_ref().expect("tiered");
        let ps = self.cfg.page_size;
        let free = (ts.budget[tier] - ts.used[tier]) * ps + ts.chunk_bytes[tier] - ts.charged[tier];
        free as f64 / (ts.budget[tier] * ps) as f64
    }

    /// The tenant to take a `tier` item from on behalf of `req`: in the fast tier with targets,
    /// the tenant furthest over its target (the requester when nobody is over and it holds
    /// fast items); otherwise the tenant whose list tail was accessed longest ago (one LRU
    /// over all tenants: free competition).
    fn tier_victim(&self, req: Option<usize>, tier: usize) -> Option<usize> {
        let has = |r: usize| {
            self.tenants[r]
                .tier
                .as_ref()
                .is_some_and(|tt| tt.lists[tier].len > 0)
        };
        if tier == Tier::Fast.index() {
            let mut best: Option<(i128, usize)> = None;
            for (r, tn) in self.tenants.iter().enumerate() {
                let Some(tt) = tn.tier.as_ref() else { continue };
                let Some(target) = tt.stats.fast_target_bytes else {
                    continue;
                };
                if !has(r) {
                    continue;
                }
                let over = i128::from(tt.stats.tiers[tier].charged_bytes) - i128::from(target);
                if best.is_none_or(|(b, _)| over > b) {
                    best = Some((over, r));
                }
            }
            if let Some((over, r)) = best {
                if over > 0 {
                    return Some(r);
                }
                if let Some(q) = req.filter(|&q| has(q)) {
                    return Some(q);
                }
                return Some(r);
            }
        }
        let mut best: Option<(u64, usize)> = None;
        for (r, tn) in self.tenants.iter().enumerate() {
            let Some(tt) = tn.tier.as_ref() else { continue };
            if let Some(pos) = tt.tail_of(tier) {
                let last = tt.node[pos as usize].last;
                if best.is_none_or(|(b, _)| last < b) {
                    best = Some((last, r));
                }
            }
        }
        best.map(|b| b.1)
    }

    /// The item at the tail of `r`'s `tier` list.
    fn tier_tail_handle(&self, r: usize, tier: usize) -> Option<u32> {
        let tn = &self.tenants[r];
        let pos = tn.tier.as_ref()?.tail_of(tier)?;
        Some(tn.all[pos as usize])
    }

    /// Evicts the coldest item of `tier` (for `req`), counting `cause`. False when the tier
    /// holds nothing.
    fn tier_evict_one(&mut self, req: Option<usize>, tier: usize, proactive: bool) -> bool {
        let Some(r) = self.tier_victim(req, tier) else {
            return false;
        };
        let Some(h) = self.tier_tail_handle(r, tier) else {
            return false;
        };
        self.evict_handle(r, h, EvictionReason::Memory, true);
        let ev = &mut self.tenants[r]
            .tier
            .as_mut()
            .expect("tiered tenant")
            .stats
            .tiers[tier]
            .evictions;
        if proactive {
            ev.proactive += 1;
        } else {
            ev.reactive += 1;
        }
        true
    }

    /// Whether (t, c) can get a chunk in `tier` without evicting or moving anything.
    fn tier_has_room(&self, t: usize, c: u16, tier: usize) -> bool {
        let ts = self.tiers.as_ref().expect("tiered");
        let cp = &self.tenants[t].classes[c as usize];
        !cp.partial_of(tier as u8).is_empty()
            || (ts.used[tier] < ts.budget[tier] && self.pages_used < self.pages_total)
    }

    /// The emptiest page of `tier`, the requester's first, other than a full page of (t, c).
    fn sparsest_tier_page(&self, t: usize, c: u16, tier: usize) -> Option<u32> {
        super::pages::requester_first(t, self.tenants.len())
            .find_map(|r| self.sparsest_page_of(r, tier, (r == t).then_some(c)))
    }

    /// The emptiest page `r` owns in `tier`, other than one of class `exclude`.
    fn sparsest_page_of(&self, r: usize, tier: usize, exclude: Option<u16>) -> Option<u32> {
        let mut best: Option<(u32, u64, u64)> = None;
        for &pg in &self.tenants[r].pages {
            let p = &self.store.pages[pg as usize];
            if usize::from(p.tier) != tier || exclude == Some(p.class) {
                continue;
            }
            let (l, s) = (u64::from(p.live), u64::from(p.slots));
            if best.is_none_or(|(_, bl, bs)| l * bs < bl * s) {
                best = Some((pg, l, s));
            }
        }
        best.map(|b| b.0)
    }

    /// A chunk of class `c` for tenant `t` in `tier`: a free chunk, a page of the tier's budget,
    /// in the fast tier a demotion that makes room ([`Engine::demote_for_write`]), else
    /// reactive eviction in that tier (the fast tier's victims leave the cache, no cascade; the
    /// slow tier's make room for demotions), and after repeated evictions that freed other
    /// classes' chunks, the tier's emptiest page taken back.
    pub(super) fn alloc_tiered(
        &mut self,
        t: usize,
        c: u16,
        tier: usize,
    ) -> Result<u32, EngineError> {
        let mut fruitless = 0u32;
        loop {
            if let Some(h) = self.take_free_chunk_in(t, c, tier as u8) {
                return Ok(h);
            }
            let ts = self.tiers.as_ref().expect("tiered");
            if ts.used[tier] < ts.budget[tier] && self.pages_used < self.pages_total {
                self.grant_page_in(t, c, tier as u8);
                continue;
            }
            // The fast tier is at its budget and (t, c) has no free chunk: demote to make
            // room when the slow tier can take the items without evicting (no cascade); only
            // when it cannot does the write evict out of the cache.
            if tier == Tier::Fast.index() && self.demote_for_write(t, c) {
                continue;
            }
            if fruitless < FRUITLESS_EVICTIONS && self.tier_evict_one(Some(t), tier, false) {
                fruitless += 1;
                continue;
            }
            let Some(pg) = self.sparsest_tier_page(t, c, tier) else {
                return Err(EngineError::OutOfMemory);
            };
            let owner = self.store.pages[pg as usize].owner as usize;
            let n = self.reassign_page(pg, t, c, EvictionReason::PageReclaim);
            self.tenants[owner]
                .tier
                .as_mut()
                .expect("tiered tenant")
                .stats
                .tiers[tier]
                .evictions
                .page_reclaim += n;
            fruitless = 0;
        }
    }

    /// Makes room in the fast tier for a chunk of (t, c) by demotion, on the write path: the
    /// coldest fast item of (t, c) itself (its chunk is the one the write takes), or, when
    /// (t, c) holds none in the fast tier or a tenant other than `t` is over its fast-tier
    /// target while `t` is not, a whole fast page emptied into the slow tier (it returns to
    /// the tier's budget and (t, c) gets it). Each item moves only where the slow tier has a
    /// free chunk or page for it, so nothing is evicted from the slow tier for a write. False
    /// when nothing could be demoted (the caller then evicts).
    fn demote_for_write(&mut self, t: usize, c: u16) -> bool {
        let (fast, slow) = (Tier::Fast.index(), Tier::Slow.index());
        let over = |tt: &TenantTier| {
            tt.stats
                .fast_target_bytes
                .is_some_and(|tg| tt.stats.tiers[fast].charged_bytes > tg)
        };
        let giver = match self.tenants[t].tier.as_deref() {
            Some(tt) if !over(tt) => self
                .tenants
                .iter()
                .enumerate()
                .find(|(r, tn)| *r != t && tn.tier.as_deref().is_some_and(over))
                .map(|(r, _)| r),
            _ => None,
        };
        if giver.is_none()
            && let Some(h) = self.coldest_fast_of_class(t, c)
        {
            return self.tier_has_room(t, c, slow) && self.migrate(t, h, slow);
        }
        let pg = match giver {
            Some(r) => self.sparsest_page_of(r, fast, None),
            None => self.sparsest_tier_page(t, c, fast),
        };
        let Some(pg) = pg else {
            return false;
        };
        let (owner, class, bump) = {
            let p = &self.store.pages[pg as usize];
            (p.owner as usize, p.class, p.bump)
        };
        let mut moved = false;
        for slot in 0..bump {
            let h = self.store.handle(pg, slot);
            if !self.store.is_live(h) {
                continue;
            }
            if !self.tier_has_room(owner, class, slow) || !self.migrate(owner, h, slow) {
                break;
            }
            moved = true;
        }
        moved
    }

    /// The least recently used fast-tier item of (t, c): the tail of `t`'s fast list, or the
    /// first of class `c` within `promotion_scan` items of it.
    fn coldest_fast_of_class(&self, t: usize, c: u16) -> Option<u32> {
        let scan = self.tiers.as_ref()?.cfg.promotion_scan;
        let tn = &self.tenants[t];
        let tt = tn.tier.as_ref()?;
        let mut pos = tt.lists[Tier::Fast.index()].ends.tail;
        for _ in 0..scan {
            if pos == NIL {
                return None;
            }
            let h = tn.all[pos as usize];
            if self.store.pages[self.store.split(h).0].class == c {
                return Some(h);
            }
            pos = tt.links.prev(pos);
        }
        None
    }

    /// Moves item `h` of `r` to the other tier: a chunk of its class there (making room as
    /// [`Engine::alloc_tiered`] does), the bytes copied, index, dense position and TTL entry
    /// following, the old chunk freed. Demoted items enter the slow list at its insertion
    /// point, promoted items the fast list's head. False when no chunk could be had.
    fn migrate(&mut self, r: usize, h: u32, to: usize) -> bool {
        let (op, _) = self.store.split(h);
        let c = self.store.pages[op].class;
        let Ok(nh) = self.alloc_tiered(r, c, to) else {
            return false;
        };
        let pos = self.store.pos(h);
        let from = 1 - to;
        let chunk = u64::from(self.store.pages[op].chunk);
        self.relocate(r, h, nh);
        if self.store.pages[op].live == 0 {
            self.release_page(op as u32);
        }
        let ts = self.tiers.as_mut().expect("tiered");
        ts.charged[from] -= chunk;
        ts.charged[to] += chunk;
        let tt = self.tenants[r].tier.as_mut().expect("tiered tenant");
        tt.unlink(pos);
        tt.node[pos as usize].reuse = u64::MAX;
        tt.link(pos, to, to == Tier::Slow.index());
        let st = &mut tt.stats;
        st.tiers[from].items -= 1;
        st.tiers[from].charged_bytes -= chunk;
        st.tiers[to].items += 1;
        st.tiers[to].charged_bytes += chunk;
        st.tiers[to].moved_in += 1;
        if to == Tier::Fast.index() {
            st.promotions += 1;
        } else {
            st.demotions += 1;
        }
        true
    }

    /// Demotes the fast tier's coldest item (the victim tenant as [`Engine::tier_victim`]
    /// picks for `req`). False when nothing could be demoted.
    fn demote_one(&mut self, req: Option<usize>) -> bool {
        let Some(r) = self.tier_victim(req, Tier::Fast.index()) else {
            return false;
        };
        let Some(h) = self.tier_tail_handle(r, Tier::Fast.index()) else {
            return false;
        };
        self.migrate(r, h, Tier::Slow.index())
    }

    /// Runs one bounded step of each worker (section 5.1.3-5.1.4): one promotion batch, then
    /// demotion while the fast
    /// tier's free share is below the low watermark (until it reaches the high one) or a tenant
    /// is over its fast-tier target (the resizing worker), then slow-tier eviction likewise.
    /// Each moves at most its batch. Without tiers it does nothing.
    pub fn run_tier_workers(&mut self) -> TierWork {
        let mut work = TierWork::default();
        let Some(ts) = self.tiers.as_mut() else {
            return work;
        };
        ts.runs += 1;
        ts.next_run = self.logical + ts.cfg.worker_interval;
        let cfg = ts.cfg.clone();
        let (fast, slow) = (Tier::Fast.index(), Tier::Slow.index());
        // Promotion first, so that the demotion and eviction workers after it leave both tiers
        // above their low watermark (or have used their whole batch).
        work.promoted = self.promote_step(&cfg);
        // Resizing: tenants over their fast-tier target give items back first.
        let mut budget = u64::from(cfg.demotion_batch);
        for r in 0..self.tenants.len() {
            while budget > 0 {
                let Some(tt) = self.tenants[r].tier.as_ref() else {
                    break;
                };
                let over = tt
                    .stats
                    .fast_target_bytes
                    .is_some_and(|tg| tt.stats.tiers[fast].charged_bytes > tg);
                let Some(h) = over.then(|| self.tier_tail_handle(r, fast)).flatten() else {
                    break;
                };
                if !self.migrate(r, h, slow) {
                    break;
                }
                budget -= 1;
                work.demoted += 1;
            }
        }
        // Demotion worker.
        if self.free_share(fast) < cfg.low_watermark {
            self.tiers.as_mut().expect("tiered").demoting = true;
        }
        while budget > 0 && self.tiers.as_ref().expect("tiered").demoting {
            if self.free_share(fast) >= cfg.high_watermark || !self.demote_one(None) {
                self.tiers.as_mut().expect("tiered").demoting = false;
                break;
            }
            budget -= 1;
            work.demoted += 1;
        }
        // Eviction worker.
        if self.free_share(slow) < cfg.low_watermark {
            self.tiers.as_mut().expect("tiered").evicting = true;
        }
        let mut budget = cfg.eviction_batch;
        while budget > 0 && self.tiers.as_ref().expect("tiered").evicting {
            if self.free_share(slow) >= cfg.high_watermark || !self.tier_evict_one(None, slow, true)
            {
                self.tiers.as_mut().expect("tiered").evicting = false;
                break;
            }
            budget -= 1;
            work.evicted += 1;
        }
        work
    }

    /// One promotion batch: scans each tenant's slow list from its head (tenants in turn) for
    /// hot items and moves them to the fast tier, demoting first when the fast tier has no room
    /// for them (those demotions are counted as chained).
    fn promote_step(&mut self, cfg: &TierConfig) -> u64 {
        let (fast, slow) = (Tier::Fast.index(), Tier::Slow.index());
        let threshold = match cfg.promotion {
            PromotionMode::Off => return 0,
            PromotionMode::Reuse => match self.tiers.as_ref().expect("tiered").mean_reuse() {
                Some(m) => m,
                None => return 0,
            },
            PromotionMode::Naive => 0.0,
        };
        let n = self.tenants.len();
        let start = {
            let ts = self.tiers.as_mut().expect("tiered");
            ts.cursor = ts.cursor.wrapping_add(1);
            ts.cursor
        };
        let mut picked: Vec<(usize, Vec<u8>)> = Vec::new();
        for i in 0..n {
            if picked.len() >= cfg.promotion_batch as usize {
                break;
            }
            let r = (start + i) % n;
            // naiveTMM's bar: the last access of the fast item a promotion would displace.
            let bar = self
                .tier_victim(Some(r), fast)
                .and_then(|v| {
                    let tt = self.tenants[v].tier.as_ref()?;
                    Some(tt.node[tt.tail_of(fast)? as usize].last)
                })
                .unwrap_or(0);
            let tn = &self.tenants[r];
            let Some(tt) = tn.tier.as_ref() else { continue };
            let mut pos = tt.lists[slow].ends.head;
            let mut scanned = 0;
            while pos != NIL && scanned < cfg.promotion_scan {
                let node = &tt.node[pos as usize];
                let hot = match cfg.promotion {
                    PromotionMode::Reuse => (node.reuse as f64) < threshold,
                    _ => node.last > bar,
                };
                if hot {
                    picked.push((r, self.store.key(tn.all[pos as usize]).to_vec()));
                    if picked.len() >= cfg.promotion_batch as usize {
                        break;
                    }
                }
                pos = tt.links.next(pos);
                scanned += 1;
            }
        }
        let mut promoted = 0;
        for (r, key) in picked {
            let hash = hash_key(&key);
            let Some(h) = self.find(r, &key, hash) else {
                continue;
            };
            let c = self.store.pages[self.store.split(h).0].class;
            let mut tries = cfg.promotion_batch;
            while !self.tier_has_room(r, c, fast) && tries > 0 {
                if !self.demote_one(Some(r)) {
                    break;
                }
                self.tenants[r]
                    .tier
                    .as_mut()
                    .expect("tiered tenant")
                    .stats
                    .chained_demotions += 1;
                tries -= 1;
            }
            if !self.tier_has_room(r, c, fast) {
                continue;
            }
            // The demotions may have evicted it from the slow tier: look again.
            let Some(h) = self.find(r, &key, hash) else {
                continue;
            };
            if self.page_tier(h) == slow && self.migrate(r, h, fast) {
                promoted += 1;
            }
        }
        promoted
    }

    /// The tier invariants (from [`Engine::check_invariants`]).
    pub(super) fn check_tier_invariants(&self) {
        let Some(ts) = self.tiers.as_ref() else {
            return;
        };
        let mut used = [0u64; 2];
        let mut charged = [0u64; 2];
        for (ti, tn) in self.tenants.iter().enumerate() {
            let tt = tn
                .tier
                .as_ref()
                .expect("every tenant of a tiered engine has lists");
            assert_eq!(tt.node.len(), tn.all.len(), "a tier node per item");
            let mut seen = vec![false; tn.all.len()];
            let mut pages = [0u64; 2];
            for &pg in &tn.pages {
                pages[usize::from(self.store.pages[pg as usize].tier)] += 1;
            }
            for tier in 0..2 {
                let l = tt.lists[tier];
                let (mut n, mut tails, mut bytes) = (0u32, 0u32, 0u64);
                let (mut pos, mut prev) = (l.ends.head, NIL);
                let mut in_tail = false;
                while pos != NIL {
                    let p = pos as usize;
                    assert!(!seen[p], "tenant {ti}: item in two lists (or twice in one)");
                    seen[p] = true;
                    assert_eq!(tt.links.prev(pos), prev, "tier list links");
                    assert_eq!(usize::from(tt.node[p].tier), tier, "node tier");
                    let h = tn.all[p];
                    assert_eq!(
                        self.page_tier(h),
                        tier,
                        "item listed in a tier its page is not in"
                    );
                    bytes += u64::from(self.store.pages[self.store.split(h).0].chunk);
                    if pos == l.ip {
                        in_tail = true;
                    }
                    assert_eq!(tt.node[p].tail, in_tail, "tail segment is the list's end");
                    tails += u32::from(tt.node[p].tail);
                    n += 1;
                    prev = pos;
                    pos = tt.links.next(pos);
                }
                assert_eq!(l.ends.tail, prev, "tier list tail");
                assert_eq!(n, l.len, "tier list length");
                assert_eq!(tails, l.tail_len, "tail segment length");
                assert_eq!(l.tail_len, l.target_tail(), "insertion point position");
                let st = &tt.stats.tiers[tier];
                assert_eq!(u64::from(n), st.items, "tier item count");
                assert_eq!(bytes, st.charged_bytes, "tier charged bytes");
                assert_eq!(pages[tier], st.pages, "tier page count");
                used[tier] += pages[tier];
                charged[tier] += bytes;
            }
            assert!(seen.iter().all(|&s| s), "tenant {ti}: an item in no tier");
        }
        for tier in 0..2 {
            assert_eq!(used[tier], ts.used[tier], "tier pages in use");
            assert!(
                ts.used[tier] <= ts.budget[tier],
                "{} tier over its page budget",
                Tier::from_index(tier as u8).name()
            );
            assert_eq!(charged[tier], ts.charged[tier], "tier charged bytes");
        }
    }
}
