//! pRedis's automatic dump/load live (pRedis, section 4): the server's doing half of
//! [`locus_control::dumpload`], whose [`PeriodDetector`] decides.
//!
//! ```text
//!  tick task (hz) ─► step(): per tenant with dump_load != never
//!      requests/misses since the last step (engine counters) ─► PeriodDetector (server clock)
//!      Dump { keep } ─► ranking  (keep > 0): the items' recency stamps, DUMP_SLICE per step;
//!                                the cut-off stamp of the coldest share to dump
//!                       writing: the chosen items to <dir>/<tenant>.locus-dump.tmp.<pid>
//!                                (snapshot format), DUMP_SLICE per step
//!                       closing: end record, fsync, rename, on a thread of its own
//!                       deleting: the written keys, DUMP_SLICE per step, but for those written
//!                                or deleted since the dump began; the tenant goes dormant
//!                                (Engine::set_dormant: a partitioning controller's target for
//!                                it goes to the others)
//!      Load          ─► the tenant wakes (its target back); the file is read and checked on a
//!                       thread, then its items go back LOAD_SLICE per step (skipping keys
//!                       written or deleted since the dump began, and keys present); at the
//!                       end the file is removed
//!  write command of a tenant being dumped, dumped or loaded (RESP or memcached)
//!                    ─► note_write(): its keys are superseded
//! ```
//!
//! No step holds the engine lock for more than a slice of items: the other tenants wait at
//! most that long (BENCHMARKS.md). The file is complete before anything is deleted, so a crash
//! at any point loses nothing; a key written or deleted while its tenant is dumped (from the
//! dump's first step on) is never brought back by the load, and is not deleted by the dump if
//! it was written after the walk copied it. A load due before the dump's file is complete
//! abandons the dump (its temporary file is removed, nothing was deleted); one due while the
//! dump deletes stops the deletes and loads. A dump due while a load is under way waits for it.
//!
//! A dump file failing its checks at load is reported, renamed `.corrupt-<unix ms>` (set aside,
//! never deleted) and the tenant carries on with what it has. A clean stop loads every dump back
//! before the shutdown snapshot (so the snapshot holds the items and the superseded keys are
//! honoured); after a crash, the start loads the dump files left (skipping keys the snapshot
//! already restored).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use locus_control::{DumpLoadAction, DumpLoadConfig, DumpLoadMode, PeriodDetector};
use locus_engine::{Engine, TenantId};
use parking_lot::Mutex;

use crate::snapshot::{self, ThreadedWriter, format::FormatError};

/// The dump file of `tenant` in `dir` (never a snapshot file's name: those end in `.locus`).
pub fn dump_path(dir: &Path, tenant: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}-dump",
        snapshot::file_path(dir, tenant).display()
    ))
}

/// Items a load restores per step of the tick task (`hz` steps a second): the stall a load
/// costs the other tenants is one slice, not the whole file.
pub const LOAD_SLICE: usize = 5_000;

/// Items a dump ranks, writes or deletes per step of the tick task: the stall a dump costs the
/// other tenants is one slice, not the whole tenant.
pub const DUMP_SLICE: usize = 5_000;

/// A 64-bit hash of `key` (for [`Phase::Writing`]'s `seen`: a collision keeps an item in
/// memory, which is harmless).
fn key_hash(key: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// Encoded items a dump may have shipped to its file's thread and not yet written: past it, a
/// step waits for the disk instead of encoding more (memory stays bounded on a slow disk).
pub const DUMP_IN_FLIGHT: u64 = 16 << 20;

/// Where one tenant's dump or load is.
#[derive(Debug, Default)]
enum Phase {
    /// In memory; nothing under way.
    #[default]
    Resident,
    /// Reading the items' recency stamps, to find the coldest share (`keep` > 0).
    Ranking {
        cursor: u64,
        stamps: Vec<(u64, u32)>,
        keep: f64,
    },
    /// Writing the chosen items to the temporary file.
    Writing {
        cursor: u64,
        writer: ThreadedWriter,
        /// Which items go: all, or those colder than a cut-off stamp (and `ties` more as cold).
        cut: Option<(u32, usize)>,
        keys: Vec<Vec<u8>>,
        /// Hashes of the keys written: an item the walk meets twice (moved by a write made
        /// meanwhile) goes to the file once.
        seen: std::collections::HashSet<u64>,
    },
    /// The file's end record, fsync and rename, on a thread.
    Closing {
        job: JoinHandle<Result<u64, String>>,
        keys: Vec<Vec<u8>>,
    },
    /// Deleting what the file holds.
    Deleting { keys: Vec<Vec<u8>>, next: usize },
    /// Out of memory, in the file.
    Dumped,
    /// The file being read and checked, on a thread.
    Reading {
        job: JoinHandle<FileRead>,
        path: PathBuf,
    },
    /// The items going back, `LOAD_SLICE` per step.
    Loading(PendingLoad),
}

impl Phase {
    fn name(&self) -> &'static str {
        match self {
            Phase::Resident => "resident",
            Phase::Ranking { .. }
            | Phase::Writing { .. }
            | Phase::Closing { .. }
            | Phase::Deleting { .. } => "dumping",
            Phase::Dumped => "dumped",
            Phase::Reading { .. } | Phase::Loading(_) => "loading",
        }
    }
}

/// One tenant's dump/load state.
#[derive(Debug)]
struct TenantDl {
    id: TenantId,
    name: String,
    mode_text: String,
    det: PeriodDetector,
    phase: Phase,
    /// A dump the detector asked for while a load was under way: made when the load ends.
    dump_after_load: Option<f64>,
    /// Engine counters after the last step (requests, GET misses): the dump's and the load's
    /// own deletes and stores are not the tenant's traffic.
    seen: Option<(u64, u64)>,
    /// Keys written or deleted since the dump began.
    superseded: HashSet<Vec<u8>>,
    /// FLUSHDB/FLUSHALL/flush_all since the dump began: nothing is loaded back.
    flushed: bool,
    dumps: u64,
    loads: u64,
    last_dump_ms: u64,
    last_load_ms: u64,
    items_dumped: u64,
    items_loaded: u64,
    /// The last dump's longest step, its steps and the most items one step handled.
    dump_usec: u64,
    dump_steps: u64,
    dump_step_items_max: u64,
    /// The last load's longest step (µs).
    load_usec: u64,
    last_error: String,
}

/// A load carried out over several steps of the tick task.
#[derive(Debug)]
struct PendingLoad {
    items: snapshot::ReadItems,
    next: usize,
    done: snapshot::Loaded,
    path: PathBuf,
    /// Where the file went once read (see [`read_file`]), unlinked off the lock at the end.
    retired: Option<PathBuf>,
}

/// What reading a dump file found (on the reading thread, with every file operation: the
/// engine lock is not held there).
#[derive(Debug)]
enum FileRead {
    /// No dump file.
    Missing,
    /// Read and checked, then moved out of its name (`retired`, `None` when the rename failed
    /// and the file was removed).
    Read {
        items: snapshot::ReadItems,
        retired: Option<PathBuf>,
    },
    /// It failed its checks and was set aside (`moved` says where).
    Corrupt { err: FormatError, moved: String },
}

/// Reads the dump file `path` of tenant `name`. Once read, the file leaves its name at once (a
/// rename): a crash while its items go back must not find a dump file to load at the next
/// start and bring back keys deleted since (the items not yet back are lost then: a cache's
/// miss, not a resurrection). The temporary name is one the start-up cleans away.
fn read_file(path: &Path, name: &str, now_ms: u64) -> FileRead {
    if !path.exists() {
        return FileRead::Missing;
    }
    match snapshot::read_items(path, name) {
        Ok(items) => FileRead::Read {
            items,
            retired: retire(path),
        },
        Err(err) => FileRead::Corrupt {
            err,
            moved: snapshot::set_aside(path, now_ms),
        },
    }
}

/// The reading thread's result (a panic in it reported as a corrupt file).
fn join_read(job: JoinHandle<FileRead>) -> FileRead {
    job.join().unwrap_or_else(|_| FileRead::Corrupt {
        err: FormatError::from("the file's thread panicked".to_string()),
        moved: "left in place".to_string(),
    })
}

/// What INFO shows of one tenant.
#[derive(Debug, Clone)]
pub struct Status {
    /// `never`, `auto` or the schedule as configured.
    pub mode: String,
    /// `resident`, `dumping`, `dumped` or `loading`.
    pub state: &'static str,
    /// Dumps carried out.
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
    /// The last dump's longest step under the engine lock (µs): every tenant waited that long.
    pub dump_usec: u64,
    /// Steps the last dump took.
    pub dump_steps: u64,
    /// The most items one step of the last dump ranked, wrote or deleted.
    pub dump_step_items_max: u64,
    /// The last load's longest step under the engine lock (µs).
    pub load_usec: u64,
    /// The last failure ("" if none).
    pub last_error: String,
}

/// Every tenant's dump/load state (in [`crate::server::Shared`]).
#[derive(Debug, Default)]
pub struct DumpLoads {
    tenants: Mutex<Vec<TenantDl>>,
    /// Whether any tenant is being dumped, is dumped or is being loaded (the write hook's fast
    /// path).
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
                phase: Phase::Resident,
                dump_after_load: None,
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
                dump_steps: 0,
                dump_step_items_max: 0,
                load_usec: 0,
                last_error: String::new(),
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

    /// Whether any tenant is being dumped, is dumped or is being loaded now.
    pub fn any_dumped(&self) -> bool {
        self.any_dumped.load(Ordering::Relaxed)
    }

    /// Records a write of tenant `t` on `keys` (`flush`: FLUSHDB/FLUSHALL/flush_all), from any
    /// protocol: a dumped tenant's copies of them are superseded. Called under the engine lock.
    pub fn note_write(&self, t: TenantId, keys: &[&[u8]], flush: bool) {
        if !self.any_dumped.load(Ordering::Relaxed) {
            return;
        }
        let mut ts = self.tenants.lock();
        if let Some(d) = ts
            .iter_mut()
            .find(|d| d.id == t && !matches!(d.phase, Phase::Resident))
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
            state: d.phase.name(),
            dumps: d.dumps,
            loads: d.loads,
            last_dump_ms: d.last_dump_ms,
            last_load_ms: d.last_load_ms,
            items_dumped: d.items_dumped,
            items_loaded: d.items_loaded,
            dump_usec: d.dump_usec,
            dump_steps: d.dump_steps,
            dump_step_items_max: d.dump_step_items_max,
            load_usec: d.load_usec,
            last_error: d.last_error.clone(),
        })
    }

    /// One step of the tick task (the caller holds the engine lock): feed each tenant's
    /// traffic since the last step to its detector, start what it decides, and carry the dump
    /// or load under way one slice further. Returns one log line per event.
    pub fn step(&self, eng: &mut Engine, dir: &Path) -> Vec<String> {
        let mut lines = Vec::new();
        let now_ms = eng.now_ms();
        let now_us = now_ms.saturating_mul(1000);
        let mut ts = self.tenants.lock();
        for d in ts.iter_mut() {
            let st = eng.tenant_stats(d.id);
            let reqs = st.hits + st.misses + st.sets + st.deletes;
            let (r0, m0) = d.seen.unwrap_or((reqs, st.misses));
            d.det.requests(now_us, reqs.saturating_sub(r0));
            d.det.misses(st.misses.saturating_sub(m0));
            let began = Instant::now();
            match d.det.tick(now_us) {
                Some(DumpLoadAction::Dump { keep }) => {
                    if matches!(d.phase, Phase::Reading { .. } | Phase::Loading(_)) {
                        d.dump_after_load = Some(keep);
                    } else {
                        start_dump(eng, d, dir, keep, now_ms, &mut lines);
                    }
                }
                Some(DumpLoadAction::Load) => {
                    d.dump_after_load = None;
                    d.load_usec = 0;
                    start_load(eng, d, dir, now_ms, &mut lines);
                }
                None => {}
            }
            advance(eng, d, dir, now_ms, &mut lines);
            let took = began.elapsed().as_micros() as u64;
            if d.phase.name() == "dumping" || matches!(d.phase, Phase::Dumped) {
                d.dump_usec = d.dump_usec.max(took);
            } else if d.phase.name() == "loading" || d.last_load_ms == now_ms {
                d.load_usec = d.load_usec.max(took);
            }
            let st = eng.tenant_stats(d.id);
            d.seen = Some((st.hits + st.misses + st.sets + st.deletes, st.misses));
        }
        self.any_dumped.store(
            ts.iter().any(|d| !matches!(d.phase, Phase::Resident)),
            Ordering::Relaxed,
        );
        lines
    }

    /// Loads every dump back (a clean stop, before the shutdown snapshot), whole, in this
    /// call; a dump whose file is not complete is abandoned. The caller holds the engine lock.
    pub fn load_all_back(&self, eng: &mut Engine, dir: &Path) -> Vec<String> {
        let now_ms = eng.now_ms();
        let mut ts = self.tenants.lock();
        let mut lines = Vec::new();
        for d in ts.iter_mut() {
            d.dump_after_load = None;
            if !matches!(
                d.phase,
                Phase::Resident | Phase::Reading { .. } | Phase::Loading(_)
            ) {
                start_load(eng, d, dir, now_ms, &mut lines);
            }
            if let Phase::Reading { .. } = d.phase
                && let Phase::Reading { job, path } = std::mem::take(&mut d.phase)
            {
                got_file(d, join_read(job), path, &mut lines);
            }
            lines.extend(load_slice(eng, d, usize::MAX, now_ms));
        }
        self.any_dumped.store(false, Ordering::Relaxed);
        lines
    }
}

/// The result of a job thread (a panic in it is reported as an error).
fn join<T, E: From<String>>(job: JoinHandle<Result<T, E>>) -> Result<T, E> {
    job.join()
        .unwrap_or_else(|_| Err(E::from("the file's thread panicked".to_string())))
}

impl From<String> for FormatError {
    fn from(what: String) -> Self {
        FormatError { offset: 0, what }
    }
}

/// Begins a dump of `d`, everything but the most recent `keep` share of its items.
fn start_dump(
    eng: &mut Engine,
    d: &mut TenantDl,
    dir: &Path,
    keep: f64,
    now_ms: u64,
    lines: &mut Vec<String>,
) {
    d.superseded.clear();
    d.flushed = false;
    d.dump_usec = 0;
    d.dump_steps = 0;
    d.dump_step_items_max = 0;
    d.last_dump_ms = now_ms;
    d.phase = if keep > 0.0 {
        Phase::Ranking {
            cursor: 0,
            stamps: Vec::new(),
            keep,
        }
    } else {
        match begin_writing(eng, d, dir, None) {
            Ok(p) => p,
            Err(e) => {
                lines.push(dump_failed(d, e));
                Phase::Resident
            }
        }
    };
}

fn begin_writing(
    eng: &Engine,
    d: &TenantDl,
    dir: &Path,
    cut: Option<(u32, usize)>,
) -> Result<Phase, String> {
    let writer = ThreadedWriter::create(
        &dump_path(dir, &d.name),
        &d.name,
        eng.recency_kind(d.id),
        eng.now_ms(),
    )?;
    Ok(Phase::Writing {
        cursor: 0,
        writer,
        cut,
        keys: Vec::new(),
        seen: std::collections::HashSet::new(),
    })
}

/// Records a failed dump: nothing was deleted; the detector believes the tenant dumped, and
/// the load that follows finds no file and puts nothing back.
fn dump_failed(d: &mut TenantDl, e: String) -> String {
    d.last_error = e.clone();
    format!("dump_load: tenant {}: dump failed: {e}", d.name)
}

/// Begins the load of `d`: it wakes (its target back); a dump not yet in its file is
/// abandoned; the file is read and checked on a thread ([`advance`] restores it in slices).
fn start_load(
    eng: &mut Engine,
    d: &mut TenantDl,
    dir: &Path,
    now_ms: u64,
    lines: &mut Vec<String>,
) {
    eng.set_dormant(d.id, false);
    match std::mem::take(&mut d.phase) {
        Phase::Ranking { .. } => {
            lines.push(abandoned(d));
            return;
        }
        Phase::Writing { writer, .. } => {
            writer.abandon();
            lines.push(abandoned(d));
            return;
        }
        Phase::Closing { job, .. } => {
            // Nothing was deleted: the file is loaded like any other (its keys are present).
            if let Err(e) = join(job) {
                lines.push(dump_failed(d, e));
            }
        }
        Phase::Reading { job, path } => {
            d.phase = Phase::Reading { job, path };
            return;
        }
        Phase::Loading(p) => {
            d.phase = Phase::Loading(p);
            return;
        }
        Phase::Resident | Phase::Deleting { .. } | Phase::Dumped => {}
    }
    let path = dump_path(dir, &d.name);
    let (name, p) = (d.name.clone(), path.clone());
    match std::thread::Builder::new()
        .name("locus-dumpload".into())
        .spawn(move || read_file(&p, &name, now_ms))
    {
        Ok(job) => d.phase = Phase::Reading { job, path },
        // No thread: read here (one longer step, the only file I/O under the lock).
        Err(_) => got_file(d, read_file(&path, &d.name, now_ms), path, lines),
    }
}

fn abandoned(d: &mut TenantDl) -> String {
    d.superseded.clear();
    d.flushed = false;
    format!(
        "dump_load: tenant {}: its load came before its dump was complete: dump abandoned (nothing was deleted)",
        d.name
    )
}

/// The dump file of `d` read: its items go back from the next slices on; a file failing its
/// checks is set aside.
fn got_file(d: &mut TenantDl, read: FileRead, path: PathBuf, lines: &mut Vec<String>) {
    match read {
        FileRead::Missing => {
            d.superseded.clear();
            d.phase = Phase::Resident;
            lines.push(format!(
                "dump_load: tenant {}: no dump file to load",
                d.name
            ));
        }
        FileRead::Read { items, retired } => {
            d.phase = Phase::Loading(PendingLoad {
                items,
                next: 0,
                done: snapshot::Loaded::default(),
                path,
                retired,
            });
        }
        FileRead::Corrupt { err, moved } => {
            d.superseded.clear();
            d.flushed = false;
            d.last_error = format!("{} is corrupt {err}", path.display());
            d.items_loaded = 0;
            d.phase = Phase::Resident;
            lines.push(format!(
                "dump_load: tenant {}: {}; {moved}; nothing loaded",
                d.name, d.last_error
            ));
        }
    }
}

/// Carries `d`'s dump or load one slice further.
fn advance(eng: &mut Engine, d: &mut TenantDl, dir: &Path, now_ms: u64, lines: &mut Vec<String>) {
    let dumping = d.phase.name() == "dumping";
    let mut handled = 0u64;
    match std::mem::take(&mut d.phase) {
        Phase::Ranking {
            mut cursor,
            mut stamps,
            keep,
        } => {
            let before = stamps.len();
            cursor = eng.walk_items(d.id, cursor, DUMP_SLICE, |_, _, meta, cold| {
                stamps.push((cold, meta.stamp));
            });
            handled = (stamps.len() - before) as u64;
            d.phase = if cursor != 0 {
                Phase::Ranking {
                    cursor,
                    stamps,
                    keep,
                }
            } else {
                // The coldest `n` go: the cut-off is the n-th coldest stamp; as many of the
                // items exactly as cold as it go as make up `n`.
                let n = DumpLoadAction::dumped_count(stamps.len(), keep);
                let cut = if n == 0 {
                    Some((0, 0))
                } else if n >= stamps.len() {
                    None
                } else {
                    let (_, nth, _) = stamps.select_nth_unstable_by(n - 1, |a, b| b.0.cmp(&a.0));
                    let (cold, stamp) = *nth;
                    let colder = stamps.iter().filter(|s| s.0 > cold).count();
                    Some((stamp, n - colder))
                };
                let none = matches!(cut, Some((_, 0))) && n == 0;
                match begin_writing(eng, d, dir, cut) {
                    Ok(Phase::Writing {
                        cursor,
                        writer,
                        keys,
                        seen,
                        ..
                    }) if none => Phase::Writing {
                        cursor,
                        writer,
                        cut: Some((u32::MAX, usize::MAX)),
                        keys,
                        seen,
                    },
                    Ok(p) => p,
                    Err(e) => {
                        lines.push(dump_failed(d, e));
                        Phase::Resident
                    }
                }
            };
        }
        Phase::Writing {
            mut cursor,
            mut writer,
            mut cut,
            mut keys,
            mut seen,
        } => {
            if writer.in_flight() > DUMP_IN_FLIGHT {
                // The disk is behind: this step walks nothing (the file's thread catches up
                // without the engine lock).
                d.phase = Phase::Writing {
                    cursor,
                    writer,
                    cut,
                    keys,
                    seen,
                };
                return;
            }
            let mut failed = None;
            let before = keys.len();
            // The cut-off's coldness now: stamps age together, so the comparison holds.
            let cut_cold = cut.map(|(stamp, _)| eng.coldness(d.id, stamp));
            let t = d.id;
            let mut visited = 0u64;
            cursor = eng.walk_items(t, cursor, DUMP_SLICE, |key, value, meta, cold| {
                visited += 1;
                if failed.is_some() {
                    return;
                }
                let chosen = match (&mut cut, cut_cold) {
                    (None, _) => true,
                    (Some((u32::MAX, usize::MAX)), _) => false,
                    (Some((_, ties)), Some(cc)) => {
                        cold > cc
                            || (cold == cc && *ties > 0 && {
                                *ties -= 1;
                                true
                            })
                    }
                    (Some(_), None) => false,
                };
                if chosen && seen.insert(key_hash(key)) {
                    match writer.item(key, value, meta) {
                        Ok(()) => keys.push(key.to_vec()),
                        Err(e) => failed = Some(e),
                    }
                }
            });
            handled = visited.max((keys.len() - before) as u64);
            writer.ship();
            if let Some(e) = failed {
                writer.abandon();
                lines.push(dump_failed(d, e));
                d.phase = Phase::Resident;
            } else if cursor != 0 {
                d.phase = Phase::Writing {
                    cursor,
                    writer,
                    cut,
                    keys,
                    seen,
                };
            } else {
                // The end record, fsync and rename on the file's thread.
                d.phase = Phase::Closing {
                    job: writer.finish(),
                    keys,
                };
            }
        }
        Phase::Closing { job, keys } => {
            if !job.is_finished() {
                d.phase = Phase::Closing { job, keys };
                return;
            }
            match join(job) {
                Ok(n) => {
                    d.items_dumped = n;
                    d.last_error.clear();
                    d.phase = Phase::Deleting { keys, next: 0 };
                }
                Err(e) => {
                    lines.push(dump_failed(d, e));
                    d.phase = Phase::Resident;
                }
            }
        }
        Phase::Deleting { keys, next } => {
            let end = next.saturating_add(DUMP_SLICE).min(keys.len());
            for k in &keys[next..end] {
                // Written or deleted since the walk began: memory holds the newer state.
                if !d.superseded.contains(k) {
                    eng.delete(d.id, k);
                }
            }
            handled = (end - next) as u64;
            if end < keys.len() {
                d.phase = Phase::Deleting { keys, next: end };
            } else {
                off_lock(keys, None);
                eng.set_dormant(d.id, true);
                d.dumps += 1;
                d.phase = Phase::Dumped;
                lines.push(format!(
                    "dump_load: tenant {}: dumped {} keys to {} in {} steps",
                    d.name,
                    d.items_dumped,
                    dump_path(dir, &d.name).display(),
                    d.dump_steps + 1
                ));
            }
        }
        Phase::Reading { job, path } => {
            if !job.is_finished() {
                d.phase = Phase::Reading { job, path };
                return;
            }
            got_file(d, join_read(job), path, lines);
            lines.extend(load_slice(eng, d, LOAD_SLICE, now_ms));
        }
        Phase::Loading(p) => {
            d.phase = Phase::Loading(p);
            lines.extend(load_slice(eng, d, LOAD_SLICE, now_ms));
        }
        p @ (Phase::Resident | Phase::Dumped) => d.phase = p,
    }
    if dumping {
        d.dump_steps += 1;
        d.dump_step_items_max = d.dump_step_items_max.max(handled);
    }
    if matches!(d.phase, Phase::Resident)
        && let Some(keep) = d.dump_after_load.take()
        && d.det.dumped()
    {
        start_dump(eng, d, dir, keep, now_ms, lines);
    }
}

/// Restores up to `n` more items of `d`'s load under way, skipping keys written or deleted
/// since the dump and keys present; at the end, removes the file and returns the log line.
fn load_slice(eng: &mut Engine, d: &mut TenantDl, n: usize, now_ms: u64) -> Option<String> {
    let Phase::Loading(p) = &mut d.phase else {
        return None;
    };
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
    let Phase::Loading(p) = std::mem::take(&mut d.phase) else {
        return None;
    };
    let superseded = std::mem::take(&mut d.superseded);
    d.flushed = false;
    let path = p.path.clone();
    let done = p.done;
    // Freeing the file's records and the keys, and unlinking the file (it left its name when it
    // was read), take tens of ms for a large tenant: not under the engine lock.
    let gone = p.retired.clone();
    off_lock((p, superseded), gone);
    d.loads += 1;
    d.last_load_ms = now_ms;
    d.items_loaded = done.items;
    d.last_error.clear();
    Some(format!(
        "dump_load: tenant {}: loaded {} keys back from {} ({} expired meanwhile, {} refused for memory)",
        d.name,
        done.items,
        path.display(),
        done.expired,
        done.dropped
    ))
}

/// Moves the loaded dump file `path` out of the way under a temporary name (see
/// [`load_leftovers`]) for the caller to unlink off the lock; removes it here when the rename
/// fails. `None` once the file is gone.
fn retire(path: &Path) -> Option<PathBuf> {
    let tmp = PathBuf::from(format!(
        "{}.tmp.loaded.{}",
        path.display(),
        std::process::id()
    ));
    match std::fs::rename(path, &tmp) {
        Ok(()) => Some(tmp),
        Err(_) => {
            let _ = std::fs::remove_file(path);
            None
        }
    }
}

/// Drops `x` and removes the file `rm` on a thread of their own (here if none can be had).
fn off_lock<T: Send + 'static>(x: T, rm: Option<PathBuf>) {
    let work = move || {
        drop(x);
        if let Some(p) = rm {
            let _ = std::fs::remove_file(p);
        }
    };
    // A spawn that fails hands the closure back only inside the error; run it the long way.
    let slot = std::sync::Arc::new(Mutex::new(Some(work)));
    let theirs = std::sync::Arc::clone(&slot);
    let spawned = std::thread::Builder::new()
        .name("locus-dumpload".into())
        .spawn(move || {
            if let Some(w) = theirs.lock().take() {
                w();
            }
        });
    if spawned.is_err()
        && let Some(w) = slot.lock().take()
    {
        w();
    }
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
