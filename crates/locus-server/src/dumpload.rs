//! pRedis's automatic dump/load live (pRedis, section 4): the server's doing half of
//! [`locus_control::dumpload`], whose [`PeriodDetector`] decides.
//!
//! ```text
//!  tick task (hz) ─► step(): per tenant with dump_load != never
//!      requests/misses since the last step (engine counters) ─► PeriodDetector (server clock)
//!      Dump { keep } ─► walk the tenant (least recent first), write all but the most recent
//!                       `keep` share to <dir>/<tenant>.locus-dump (snapshot format, temp +
//!                       rename), delete them: their pages go back to the other tenants
//!      Load          ─► read the whole file and check it, then restore its items LOAD_SLICE
//!                       per step (skipping keys written or deleted meanwhile, and keys
//!                       present); at the end remove the file
//!  write command of a dumped tenant ─► note_write(): its keys are superseded
//! ```
//!
//! A dump file failing its checks at load is reported, renamed `.corrupt-<unix ms>` (set aside,
//! never deleted) and the tenant carries on with what it has. A clean stop loads every dump back
//! before the shutdown snapshot (so the snapshot holds the items and the superseded keys are
//! honoured); after a crash, the start loads the dump files left (skipping keys the snapshot
//! already restored).
//!
//! Not done yet: the dump's walk and file write happen in one step under the engine lock (a
//! stall of the order of the tenant's item count, BENCHMARKS.md; so do the load's file read and
//! check, its restore is sliced), and under a
//! partitioning controller the tenant's target is not lowered while dumped (its freed pages go
//! to the others through the controller's own measurements).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use locus_control::{DumpLoadAction, DumpLoadConfig, DumpLoadMode, PeriodDetector};
use locus_engine::{Engine, TenantId};
use parking_lot::Mutex;

use crate::snapshot;

/// The dump file of `tenant` in `dir` (never a snapshot file's name: those end in `.locus`).
pub fn dump_path(dir: &Path, tenant: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}-dump",
        snapshot::file_path(dir, tenant).display()
    ))
}

/// One tenant's dump/load state.
#[derive(Debug)]
struct TenantDl {
    id: TenantId,
    name: String,
    mode_text: String,
    det: PeriodDetector,
    /// Engine counters at the last step (requests, GET misses).
    seen: Option<(u64, u64)>,
    /// Keys written or deleted since the dump.
    superseded: HashSet<Vec<u8>>,
    /// FLUSHDB/FLUSHALL since the dump: nothing is loaded back.
    flushed: bool,
    dumps: u64,
    loads: u64,
    last_dump_ms: u64,
    last_load_ms: u64,
    items_dumped: u64,
    items_loaded: u64,
    /// How long the last dump held the engine lock, and the longest step of the last load (µs).
    dump_usec: u64,
    load_usec: u64,
    last_error: String,
    /// A load under way: the file's items, checked, restored `LOAD_SLICE` per step.
    pending: Option<PendingLoad>,
}

/// A load carried out over several steps of the tick task.
#[derive(Debug)]
struct PendingLoad {
    items: snapshot::ReadItems,
    next: usize,
    done: snapshot::Loaded,
    path: PathBuf,
}

/// Items a load restores per step of the tick task (`hz` steps a second): the stall a load
/// costs the other tenants is one slice, not the whole file.
pub const LOAD_SLICE: usize = 5_000;

/// What INFO shows of one tenant.
#[derive(Debug, Clone)]
pub struct Status {
    /// `never`, `auto` or the schedule as configured.
    pub mode: String,
    /// `dumped`, `loading` or `resident`.
    pub state: &'static str,
    /// Dumps and loads carried out.
    pub dumps: u64,
    /// Loads carried out.
    pub loads: u64,
    /// Unix ms of the last dump (0: none).
    pub last_dump_ms: u64,
    /// Unix ms of the last load (0: none).
    pub last_load_ms: u64,
    /// Items the last dump wrote.
    pub items_dumped: u64,
    /// Items the last load put back.
    pub items_loaded: u64,
    /// How long the last dump held the engine lock (µs): every tenant waited that long.
    pub dump_usec: u64,
    /// How long the last load held the engine lock (µs).
    pub load_usec: u64,
    /// The last failure ("" if none).
    pub last_error: String,
}

/// Every tenant's dump/load state (in [`crate::server::Shared`]).
#[derive(Debug, Default)]
pub struct DumpLoads {
    tenants: Mutex<Vec<TenantDl>>,
    /// Whether any tenant is dumped (the write hook's fast path).
    any_dumped: AtomicBool,
    cfg: Option<DumpLoadConfig>,
}

impl DumpLoads {
    /// State for `tenants` (id, name, mode text, mode); only those not `never` are tracked.
    pub fn new(
        cfg: DumpLoadConfig,
        tenants: Vec<(TenantId, String, String, DumpLoadMode)>,
    ) -> Self {
        let tenants: Vec<TenantDl> = tenants
            .into_iter()
            .filter(|t| t.3 != DumpLoadMode::Never)
            .map(|(id, name, mode_text, mode)| TenantDl {
                id,
                name,
                mode_text,
                det: PeriodDetector::new(mode, cfg.clone()),
                seen: None,
                superseded: HashSet::new(),
                flushed: false,
                dumps: 0,
                loads: 0,
                last_dump_ms: 0,
                last_load_ms: 0,
                items_dumped: 0,
                items_loaded: 0,
                dump_usec: 0,
                load_usec: 0,
                last_error: String::new(),
                pending: None,
            })
            .collect();
        Self {
            tenants: Mutex::new(tenants),
            any_dumped: AtomicBool::new(false),
            cfg: Some(cfg),
        }
    }

    /// Whether any tenant uses dump/load.
    pub fn enabled(&self) -> bool {
        self.cfg.is_some() && !self.tenants.lock().is_empty()
    }

    /// Whether any tenant is dumped now.
    pub fn any_dumped(&self) -> bool {
        self.any_dumped.load(Ordering::Relaxed)
    }

    /// Records a write command of tenant `t` on `keys` (`flush`: FLUSHDB/FLUSHALL): a dumped
    /// tenant's copies of them are superseded. Called under the engine lock.
    pub fn note_write(&self, t: TenantId, keys: &[&[u8]], flush: bool) {
        if !self.any_dumped.load(Ordering::Relaxed) {
            return;
        }
        let mut ts = self.tenants.lock();
        if let Some(d) = ts
            .iter_mut()
            .find(|d| d.id == t && (d.det.dumped() || d.pending.is_some()))
        {
            if flush {
                d.flushed = true;
            }
            d.superseded.extend(keys.iter().map(|k| k.to_vec()));
        }
    }

    /// Tenant `t`'s status, if it uses dump/load.
    pub fn status(&self, t: TenantId) -> Option<Status> {
        let ts = self.tenants.lock();
        ts.iter().find(|d| d.id == t).map(|d| Status {
            mode: d.mode_text.clone(),
            state: if d.det.dumped() {
                "dumped"
            } else if d.pending.is_some() {
                "loading"
            } else {
                "resident"
            },
            dumps: d.dumps,
            loads: d.loads,
            last_dump_ms: d.last_dump_ms,
            last_load_ms: d.last_load_ms,
            items_dumped: d.items_dumped,
            items_loaded: d.items_loaded,
            dump_usec: d.dump_usec,
            load_usec: d.load_usec,
            last_error: d.last_error.clone(),
        })
    }

    /// One step of the tick task (the caller holds the engine lock): feed each tenant's
    /// traffic since the last step to its detector and carry out its decision. Returns one log
    /// line per dump or load.
    pub fn step(&self, eng: &mut Engine, dir: &Path) -> Vec<String> {
        let mut lines = Vec::new();
        let now_ms = eng.now_ms();
        let now_us = now_ms.saturating_mul(1000);
        let mut ts = self.tenants.lock();
        for d in ts.iter_mut() {
            let st = eng.tenant_stats(d.id);
            let reqs = st.hits + st.misses + st.sets + st.deletes;
            let (r0, m0) = d.seen.unwrap_or((reqs, st.misses));
            d.seen = Some((reqs, st.misses));
            d.det.requests(now_us, reqs.saturating_sub(r0));
            d.det.misses(st.misses.saturating_sub(m0));
            let began = std::time::Instant::now();
            match d.det.tick(now_us) {
                Some(DumpLoadAction::Dump { keep }) => {
                    // A load still under way finishes first (its items are the tenant's).
                    if d.pending.is_some() {
                        lines.extend(load_slice(eng, d, usize::MAX, now_ms));
                    }
                    lines.push(dump(eng, d, dir, keep, now_ms));
                    d.dump_usec = began.elapsed().as_micros() as u64;
                }
                Some(DumpLoadAction::Load) => {
                    if let Some(line) = load(eng, d, dir, now_ms) {
                        lines.push(line);
                    }
                    d.load_usec = began.elapsed().as_micros() as u64;
                }
                None => {
                    if d.pending.is_some() {
                        lines.extend(load_slice(eng, d, LOAD_SLICE, now_ms));
                        d.load_usec = d.load_usec.max(began.elapsed().as_micros() as u64);
                    }
                }
            }
        }
        self.any_dumped.store(
            ts.iter().any(|d| d.det.dumped() || d.pending.is_some()),
            Ordering::Relaxed,
        );
        lines
    }

    /// Loads every dump back (a clean stop, before the shutdown snapshot). The caller holds the
    /// engine lock.
    pub fn load_all_back(&self, eng: &mut Engine, dir: &Path) -> Vec<String> {
        let now_ms = eng.now_ms();
        let mut ts = self.tenants.lock();
        let mut lines = Vec::new();
        for d in ts.iter_mut() {
            if d.det.dumped() {
                lines.extend(load(eng, d, dir, now_ms));
            }
            if d.pending.is_some() {
                lines.extend(load_slice(eng, d, usize::MAX, now_ms));
            }
        }
        self.any_dumped.store(false, Ordering::Relaxed);
        lines
    }
}

/// Carries out a dump of `d`: everything but the most recent `keep` share to its file, then
/// out of memory.
fn dump(eng: &mut Engine, d: &mut TenantDl, dir: &Path, keep: f64, now_ms: u64) -> String {
    d.superseded.clear();
    d.flushed = false;
    // Least recent first (under an LRU list; index order otherwise).
    let mut keys: Vec<Vec<u8>> = Vec::new();
    eng.for_each_item(d.id, |k, _, _| keys.push(k.to_vec()));
    let total = keys.len();
    keys.truncate(DumpLoadAction::dumped_count(total, keep));
    let kept = total - keys.len();
    let chosen: HashSet<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let path = dump_path(dir, &d.name);
    let _ = std::fs::create_dir_all(dir);
    match snapshot::write_selected(eng, d.id, &d.name, &path, &|k| chosen.contains(k)) {
        Ok(n) => {
            for k in &keys {
                eng.delete(d.id, k);
            }
            d.dumps += 1;
            d.last_dump_ms = now_ms;
            d.items_dumped = n;
            d.last_error.clear();
            format!(
                "dump_load: tenant {}: dumped {n} keys to {} (kept the {kept} most recent)",
                d.name,
                path.display()
            )
        }
        Err(e) => {
            // Nothing was deleted; the detector believes the tenant dumped, and the load that
            // follows finds no file and puts nothing back.
            d.last_error = e.clone();
            format!("dump_load: tenant {}: dump failed: {e}", d.name)
        }
    }
}

/// Starts a load of `d`: reads and checks its file whole; the items go back in slices
/// ([`load_slice`], the first one now). A file failing its checks is set aside.
fn load(eng: &mut Engine, d: &mut TenantDl, dir: &Path, now_ms: u64) -> Option<String> {
    let path = dump_path(dir, &d.name);
    if !path.exists() {
        d.superseded.clear();
        return Some(format!(
            "dump_load: tenant {}: no dump file to load",
            d.name
        ));
    }
    match snapshot::read_items(&path, &d.name) {
        Ok(items) => {
            d.pending = Some(PendingLoad {
                items,
                next: 0,
                done: snapshot::Loaded::default(),
                path,
            });
            load_slice(eng, d, LOAD_SLICE, now_ms)
        }
        Err(e) => {
            d.superseded.clear();
            d.flushed = false;
            let moved = snapshot::set_aside(&path, now_ms);
            d.last_error = format!("{} is corrupt {e}", path.display());
            d.items_loaded = 0;
            Some(format!(
                "dump_load: tenant {}: {}; {moved}; nothing loaded",
                d.name, d.last_error
            ))
        }
    }
}

/// Restores up to `n` more items of `d`'s load under way, skipping keys written or deleted
/// since the dump and keys present; at the end, removes the file and returns the log line.
fn load_slice(eng: &mut Engine, d: &mut TenantDl, n: usize, now_ms: u64) -> Option<String> {
    let p = d.pending.as_mut()?;
    let end = p.next.saturating_add(n).min(p.items.len());
    if !d.flushed {
        let (id, superseded) = (d.id, &d.superseded);
        p.items.restore_range(
            eng,
            id,
            p.next..end,
            |eng, k| superseded.contains(k) || eng.exists(id, k),
            &mut p.done,
        );
    }
    p.next = end;
    if end < p.items.len() {
        return None;
    }
    let p = d.pending.take()?;
    d.superseded.clear();
    d.flushed = false;
    let _ = std::fs::remove_file(&p.path);
    d.loads += 1;
    d.last_load_ms = now_ms;
    d.items_loaded = p.done.items;
    d.last_error.clear();
    Some(format!(
        "dump_load: tenant {}: loaded {} keys back from {} ({} expired meanwhile, {} refused for memory)",
        d.name,
        p.done.items,
        p.path.display(),
        p.done.expired,
        p.done.dropped
    ))
}

/// At start-up (after the snapshot load): loads the dump files a crash left, skipping keys
/// already present, and removes them; a corrupt one is set aside. Returns one line per file.
pub fn load_leftovers(eng: &mut Engine, tenants: &[(TenantId, String)], dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for (t, name) in tenants {
        let path = dump_path(dir, name);
        let tmp_prefix = format!("{}.tmp.", path.display());
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.path().display().to_string().starts_with(&tmp_prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        if !path.exists() {
            continue;
        }
        let now_ms = eng.now_ms();
        match snapshot::read_items(&path, name) {
            Ok(items) => {
                let l = items.restore_into(eng, *t, |eng, k| eng.exists(*t, k));
                let _ = std::fs::remove_file(&path);
                lines.push(format!(
                    "dump_load: tenant {name}: loaded {} keys from the dump file {} left at the last stop",
                    l.items,
                    path.display()
                ));
            }
            Err(e) => {
                let moved = snapshot::set_aside(&path, now_ms);
                lines.push(format!(
                    "dump_load: tenant {name}: {} is corrupt {e}; {moved}",
                    path.display()
                ));
            }
        }
    }
    lines
}
