//! Lazy freeing, as Redis's `lazyfree.c`: UNLINK (and DEL under `lazyfree-lazy-user-del`)
//! takes a big object out of the engine under the lock and frees it on a background thread;
//! FLUSHALL / FLUSHDB ASYNC (or plain, under `lazyfree-lazy-user-flush`) take every object of
//! the caller's tenant out the same way.
//!
//! Memory accounting stays exact by erring on the safe side: an object taken out keeps its
//! charge on its tenant (as bytes held outside pages, `Engine::charge_outside`'s kind) until the
//! background thread has really dropped it; the next [`settle`] (every tick of the server, and
//! before each lazy free) gives the bytes back. Meanwhile the tenant's `used_memory` and budget
//! still count them, so the engine never believes memory free that the process still holds, and
//! one tenant's pending frees never weigh on another's budget.
//!
//! The counters are Redis's INFO `lazyfree_pending_objects` (objects taken out whose memory has
//! not been given back yet) and `lazyfreed_objects` (objects freed in the background since
//! start or CONFIG RESETSTAT), kept per tenant: a tenant's INFO shows its own, the admin's the
//! sum.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, mpsc};

use locus_engine::{Detached, Engine, LAZYFREE_THRESHOLD, TenantId};
use parking_lot::Mutex;

/// `lazyfree-lazy-user-del`: DEL frees as UNLINK does.
static USER_DEL: AtomicBool = AtomicBool::new(false);
/// `lazyfree-lazy-user-flush`: FLUSHALL / FLUSHDB without a mode are ASYNC.
static USER_FLUSH: AtomicBool = AtomicBool::new(false);

/// The `lazyfree-*` settings CONFIG GET shows, with whether Locus implements their `yes`.
/// Eviction, expiry and server-side deletes free inside the engine, synchronously: their
/// settings stay `no` (CONFIG SET to `yes` is refused with a clear error).
pub const SETTINGS: [&str; 6] = [
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "replica-lazy-flush",
];

fn flag(name: &str) -> Option<&'static AtomicBool> {
    match name {
        "lazyfree-lazy-user-del" => Some(&USER_DEL),
        "lazyfree-lazy-user-flush" => Some(&USER_FLUSH),
        _ => None,
    }
}

/// The current value of a `lazyfree-*` setting (`yes` / `no`).
pub fn get(name: &str) -> &'static str {
    if flag(name).is_some_and(|f| f.load(Ordering::Relaxed)) {
        "yes"
    } else {
        "no"
    }
}

/// Checks a CONFIG SET value of a `lazyfree-*` setting: `Ok(value)` to apply with [`set`], or
/// the reason it is refused.
pub fn parse(name: &str, v: &[u8]) -> Result<bool, String> {
    let on = if v.eq_ignore_ascii_case(b"yes") {
        true
    } else if v.eq_ignore_ascii_case(b"no") {
        false
    } else {
        return Err("argument must be 'yes' or 'no'".into());
    };
    if on && flag(name).is_none() {
        return Err(format!(
            "Locus frees on {} synchronously inside the engine (only lazyfree-lazy-user-del and lazyfree-lazy-user-flush can be yes)",
            match name {
                "lazyfree-lazy-eviction" => "eviction",
                "lazyfree-lazy-expire" => "expiry",
                "replica-lazy-flush" => "a replica's full sync (Locus has no replication)",
                _ => "server-side deletes",
            }
        ));
    }
    Ok(on)
}

/// Applies a value checked by [`parse`].
pub fn set(name: &str, on: bool) {
    if let Some(f) = flag(name) {
        f.store(on, Ordering::Relaxed);
    }
}

/// Whether DEL frees as UNLINK (`lazyfree-lazy-user-del`).
pub fn user_del() -> bool {
    USER_DEL.load(Ordering::Relaxed)
}

/// Whether FLUSHALL / FLUSHDB without a mode are ASYNC (`lazyfree-lazy-user-flush`).
pub fn user_flush() -> bool {
    USER_FLUSH.load(Ordering::Relaxed)
}

/// One tenant's counters.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    pending: u64,
    freed: u64,
}

/// The tenant a counter belongs to (`u32::MAX`: a connection without one).
fn key_of(t: Option<TenantId>) -> u32 {
    t.map_or(u32::MAX, |t| t.0)
}

static COUNTS: Mutex<Option<HashMap<u32, Counts>>> = Mutex::new(None);

/// Objects dropped by the background thread whose charge waits for [`settle`]: (pool, bytes,
/// counted tenant).
static FREED: Mutex<Vec<(TenantId, u64, u32)>> = Mutex::new(Vec::new());
/// `FREED` is not empty (read without its lock on every tick).
static FREED_WAITING: AtomicBool = AtomicBool::new(false);

fn with_counts<R>(f: impl FnOnce(&mut HashMap<u32, Counts>) -> R) -> R {
    f(COUNTS.lock().get_or_insert_with(HashMap::new))
}

/// A batch for the background thread: the objects and the tenant they are counted for.
struct Job {
    counted: u32,
    objects: Vec<Detached>,
}

/// The background thread's queue, started on first use.
fn queue() -> Option<&'static mpsc::Sender<Job>> {
    static QUEUE: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("locus-lazyfree".into())
                .spawn(move || {
                    for job in rx {
                        free_now(job);
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Drops a job's objects (the expensive part, without the engine lock) and queues their charges
/// for [`settle`].
fn free_now(job: Job) {
    let mut done = Vec::with_capacity(job.objects.len());
    for d in job.objects {
        let Detached {
            tenant,
            object,
            charge,
        } = d;
        drop(object);
        done.push((tenant, charge, job.counted));
    }
    FREED.lock().extend(done);
    FREED_WAITING.store(true, Ordering::Release);
    crate::malloc::trim();
}

/// Hands objects taken out of the engine to the background thread, counted for tenant
/// `counted`. Without a thread (it could not be started) they are freed here.
fn submit(eng: &mut Engine, counted: Option<TenantId>, objects: Vec<Detached>) {
    if objects.is_empty() {
        return;
    }
    let counted = key_of(counted);
    let n = objects.len() as u64;
    with_counts(|c| c.entry(counted).or_default().pending += n);
    let job = Job { counted, objects };
    let job = match queue() {
        Some(tx) => match tx.send(job) {
            Ok(()) => return,
            Err(mpsc::SendError(job)) => job,
        },
        None => job,
    };
    free_now(job);
    settle(eng);
}

/// Gives back the charges of the objects the background thread has freed (under the engine
/// lock, which the caller holds) and moves them from pending to freed.
pub fn settle(eng: &mut Engine) {
    if !FREED_WAITING.swap(false, Ordering::Acquire) {
        return;
    }
    let done = std::mem::take(&mut *FREED.lock());
    if done.is_empty() {
        return;
    }
    with_counts(|c| {
        for (pool, bytes, counted) in done {
            eng.release_outside(pool, bytes);
            let e = c.entry(counted).or_default();
            e.pending = e.pending.saturating_sub(1);
            e.freed += 1;
        }
    });
}

/// UNLINK of one key: true when it existed. An object whose free effort passes Redis's
/// threshold (64 allocations) is freed in the background; anything smaller at once, as Redis
/// does (handing it over would cost more than freeing it).
pub fn unlink(eng: &mut Engine, t: TenantId, key: &[u8]) -> bool {
    settle(eng);
    let (found, detached) = eng.delete_detaching(t, key, LAZYFREE_THRESHOLD);
    if let Some(d) = detached {
        submit(eng, Some(t), vec![d]);
    }
    found
}

/// FLUSHDB / FLUSHALL ASYNC of tenant `t`: its keys are gone at once, its objects are freed in
/// the background.
pub fn flush_async(eng: &mut Engine, t: TenantId) {
    settle(eng);
    let objects = eng.flush_detaching(t);
    submit(eng, Some(t), objects);
}

/// `(lazyfree_pending_objects, lazyfreed_objects)` for a connection of `scope`
/// (`ConnState::scope`: `None` = the admin, the server's totals).
pub fn counts(scope: Option<Option<TenantId>>) -> (u64, u64) {
    with_counts(|c| match scope {
        None => c
            .values()
            .fold((0, 0), |(p, f), e| (p + e.pending, f + e.freed)),
        Some(t) => c.get(&key_of(t)).map_or((0, 0), |e| (e.pending, e.freed)),
    })
}

/// CONFIG RESETSTAT: `lazyfreed_objects` restarts from 0 (pending objects stay counted).
pub fn reset_stats() {
    with_counts(|c| {
        for e in c.values_mut() {
            e.freed = 0;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_refuse_what_is_not_implemented() {
        assert_eq!(parse("lazyfree-lazy-user-del", b"YES"), Ok(true));
        assert_eq!(parse("lazyfree-lazy-user-flush", b"no"), Ok(false));
        assert!(parse("lazyfree-lazy-user-del", b"maybe").is_err());
        assert!(parse("lazyfree-lazy-eviction", b"yes").is_err());
        assert_eq!(parse("lazyfree-lazy-expire", b"no"), Ok(false));
        assert_eq!(get("lazyfree-lazy-eviction"), "no");
    }
}
