//! `lru_crawler`: memcached's item crawler, over the connection's own tenant only.
//!
//! memcached runs its crawler on a background thread and streams `metadump` from it. Here a
//! crawl is a cursor the connection carries ([`Crawl`]): the connection path runs it in steps
//! of [`STEP_ITEMS`] items, taking the engine lock for one step at a time, so a dump of a large
//! tenant never holds the lock for long and other connections (and tenants) keep being
//! served between steps. The connection reads no further request until its crawl is done, as
//! memcached's connection waits for its dump.
//!
//! * `crawl <classes|all>`: answers `OK`, then removes the expired items of those classes
//!   (at most `tocrawl` items inspected when that is set);
//! * `metadump <classes|all|hash>`: one `key=... exp=... la=... cas=... fetch=... cls=...
//!   size=...` line per live item, then `END`;
//! * `mgdump <classes|all|hash>`: one `mg <key>` line per live item, then `EN` (memcached
//!   1.6's current releases; 1.6.18 answers `ERROR`);
//! * `enable`/`disable`, `tocrawl <n>`, `sleep <µs>`: the tenant's crawler settings
//!   (`stats settings`); `sleep` is kept but not applied (a step never sleeps).
//!
//! `size=` is the chunk the engine charges for the item; `la=` is its last access at the
//! engine's one-second resolution.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use locus_engine::{Engine, TenantId};
use locus_protocol::memcache::{LruCrawler, MetadumpItem, ReplyWriter};

use super::McState;
use super::exec::{McCtx, stored_class};
use super::item;

/// Items one step inspects under the engine lock.
pub const STEP_ITEMS: usize = 512;
/// memcached's `MAX_NUMBER_OF_SLAB_CLASSES`: class ids are `1..64`.
const MAX_CLASSES: u32 = 64;

/// A tenant's crawler settings.
#[derive(Debug)]
pub struct CrawlerSettings {
    /// `lru_crawler enable|disable` (memcached starts with it enabled).
    pub enabled: AtomicBool,
    /// `lru_crawler tocrawl`: items a `crawl` inspects at most, 0 = all.
    pub tocrawl: AtomicU32,
    /// `lru_crawler sleep` in microseconds (shown, not applied).
    pub sleep_us: AtomicU32,
    /// `lru_crawler_starts`: `lru_crawler crawl`s started.
    pub starts: AtomicU64,
    /// `crawler_reclaimed`: expired items the crawls removed.
    pub reclaimed: AtomicU64,
    /// `crawler_items_checked`: items the crawls inspected (about: a step's visit count).
    pub checked: AtomicU64,
}

impl Default for CrawlerSettings {
    fn default() -> Self {
        Self {
            enabled: AtomicBool::new(true),
            tocrawl: AtomicU32::new(0),
            sleep_us: AtomicU32::new(100),
            starts: AtomicU64::new(0),
            reclaimed: AtomicU64::new(0),
            checked: AtomicU64::new(0),
        }
    }
}

/// What a crawl does with the items it visits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrawlKind {
    /// `crawl`: remove the expired ones.
    Expired,
    /// `metadump`: a line per live item.
    Metadump,
    /// `mgdump`: an `mg` line per live item.
    Mgdump,
}

/// A crawl in progress on one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crawl {
    tenant: TenantId,
    kind: CrawlKind,
    /// Bit `i` set: class id `i` is crawled (`None`: all classes).
    classes: Option<u64>,
    cursor: u64,
    /// Items still to inspect (`crawl` with `tocrawl`), else `u64::MAX`.
    remaining: u64,
}

/// Runs `lru_crawler ...`; a crawl to run goes to `cx.conn.crawl`. `pipelined`: replies of
/// earlier requests are still unsent (memcached refuses a dump behind them).
pub fn command(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>, c: &LruCrawler<'_>, pipelined: bool) {
    let scope = cx.scope();
    let settings = scope.and_then(|t| cx.mc.tenant(t)).map(|m| &m.crawler);
    let (kind, classes) = match *c {
        LruCrawler::Enable | LruCrawler::Disable => {
            if let Some(s) = settings {
                s.enabled.store(*c == LruCrawler::Enable, Ordering::Relaxed);
            }
            return w.ok();
        }
        LruCrawler::Tocrawl(n) => {
            if let Some(s) = settings {
                s.tocrawl.store(n, Ordering::Relaxed);
            }
            return w.ok();
        }
        LruCrawler::Sleep(us) => {
            if let Some(s) = settings {
                s.sleep_us.store(us, Ordering::Relaxed);
            }
            return w.ok();
        }
        LruCrawler::Crawl { classes } => (CrawlKind::Expired, classes),
        LruCrawler::Metadump { classes } => (CrawlKind::Metadump, classes),
        LruCrawler::Mgdump { classes } => (CrawlKind::Mgdump, classes),
    };
    if settings.is_some_and(|s| !s.enabled.load(Ordering::Relaxed)) {
        return w.line(b"CLIENT_ERROR lru crawler disabled");
    }
    if pipelined && kind != CrawlKind::Expired {
        let what = if kind == CrawlKind::Metadump {
            "metadump"
        } else {
            "mgdump"
        };
        return w.line(format!("ERROR cannot pipeline other commands before {what}").as_bytes());
    }
    let classes = match classes {
        b"all" => None,
        // memcached walks its hash table for a dump; it cannot for a crawl.
        b"hash" if kind == CrawlKind::Expired => {
            return w.line(b"ERROR an unknown error happened");
        }
        b"hash" => None,
        list => match class_mask(list) {
            Some(mask) => Some(mask),
            None => return w.line(b"BADCLASS invalid class id"),
        },
    };
    let tocrawl = settings.map_or(0, |s| s.tocrawl.load(Ordering::Relaxed));
    let remaining = if kind == CrawlKind::Expired && tocrawl > 0 {
        u64::from(tocrawl)
    } else {
        u64::MAX
    };
    if kind == CrawlKind::Expired {
        w.ok();
    }
    // Without a scope tenant there is nothing the connection may see: an empty dump.
    let Some(tenant) = scope else {
        finish(kind, w);
        return;
    };
    if kind == CrawlKind::Expired
        && let Some(s) = settings
    {
        s.starts.fetch_add(1, Ordering::Relaxed);
    }
    cx.conn.crawl = Some(Crawl {
        tenant,
        kind,
        classes,
        cursor: 0,
        remaining,
    });
}

/// memcached's class list: ids `1..64` separated by commas (empty pieces skipped).
fn class_mask(list: &[u8]) -> Option<u64> {
    let mut mask = 0u64;
    for piece in list.split(|&b| b == b',').filter(|p| !p.is_empty()) {
        let id: u32 = std::str::from_utf8(piece).ok()?.parse().ok()?;
        if !(1..MAX_CLASSES).contains(&id) {
            return None;
        }
        mask |= 1 << id;
    }
    Some(mask)
}

/// Whether memcached class id `class` is in the crawl's class set.
fn crawled(classes: Option<u64>, class: u32) -> bool {
    classes.is_none_or(|m| 1u64.checked_shl(class).is_some_and(|bit| m & bit != 0))
}

fn finish(kind: CrawlKind, w: &mut ReplyWriter<'_>) {
    match kind {
        CrawlKind::Expired => {}
        CrawlKind::Metadump => w.end(),
        CrawlKind::Mgdump => w.line(b"EN"),
    }
}

/// Runs one step of `crawl` (engine lock held by the caller), appending its lines to `out`.
/// Returns whether the crawl is over (its last line written).
pub fn step(eng: &mut Engine, mc: &McState, crawl: &mut Crawl, out: &mut Vec<u8>) -> bool {
    let mut w = ReplyWriter::new(out);
    if mc.tenant(crawl.tenant).is_none() {
        finish(crawl.kind, &mut w);
        return true;
    }
    let t = crawl.tenant;
    let budget = usize::try_from(crawl.remaining.min(STEP_ITEMS as u64)).unwrap_or(STEP_ITEMS);
    if crawl.kind == CrawlKind::Expired {
        let classes = crawl.classes;
        let (next, removed) = eng.reclaim_expired(t, crawl.cursor, budget, |c| {
            crawled(classes, u32::from(c.0) + 1)
        });
        if let Some(mt) = mc.tenant(t) {
            let s = &mt.crawler;
            s.reclaimed.fetch_add(removed, Ordering::Relaxed);
            s.checked.fetch_add(budget as u64, Ordering::Relaxed);
        }
        crawl.cursor = next;
        crawl.remaining = crawl.remaining.saturating_sub(budget as u64);
        return next == 0 || crawl.remaining == 0;
    }
    let mut keys = Vec::new();
    let next = eng.scan(t, crawl.cursor, budget, &mut keys);
    let now_ms = eng.now_ms();
    for key in &keys {
        let Some(class) = stored_class(eng, t, key).map(|c| u32::from(c.0) + 1) else {
            continue;
        };
        if !crawled(crawl.classes, class) {
            continue;
        }
        match crawl.kind {
            CrawlKind::Expired => {}
            CrawlKind::Mgdump => w.mgdump_line(key),
            CrawlKind::Metadump => {
                let Some(info) = eng.object_info(t, key) else {
                    continue;
                };
                let Some((meta, _)) = eng.peek_with_meta(t, key).map(item::decode) else {
                    continue;
                };
                w.metadump_line(&MetadumpItem {
                    key,
                    exp: info.expire_at_ms.map(|at| at / 1000),
                    last_access: now_ms.saturating_sub(info.idle_ms) / 1000,
                    cas: meta.cas,
                    fetched: meta.state & item::FETCHED != 0,
                    class,
                    size: info.charged_bytes,
                });
            }
        }
    }
    crawl.cursor = next;
    crawl.remaining = crawl.remaining.saturating_sub(keys.len() as u64);
    let done = next == 0 || crawl.remaining == 0;
    if done {
        finish(crawl.kind, &mut w);
    }
    done
}
