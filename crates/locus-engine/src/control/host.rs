//! Where an installed controller runs: in place on the data path, or on a profiling thread of its
//! own ("offload"), fed in batches.
//!
//! ```text
//!  inline:   data path ──on_access/on_evict──► Controller ──decide──► Decision
//!
//!  offload:  data path ──push Event──► batch (BATCH events) ──channel──► profiling thread
//!                                        ▲                                │ on_access / on_evict,
//!                                        └──── emptied batch ◄────────────┘ in order
//!            decision due: hand over the partial batch, wait until every batch is back (the
//!            controller has then seen exactly the events the inline mode would have), decide.
//! ```
//!
//! The controller sees the same calls in the same order in both modes, and `decide` runs at the
//! same data-path position, so an offloaded run is bit-identical to an inline one: only the work
//! of the profilers (KRR chains, AET's pending table, mini caches, shadow queues) moves off the
//! data path, which then pays one 48-byte store per access and one channel send per batch. The
//! CPU time is not saved, it is spent on another core; use offload where a core is free.
//!
//! At most `BUFFERS` batches exist: a data path that outruns the profiling thread waits for one
//! to come back (bounded memory, and the controller stays at most `BUFFERS × BATCH` events
//! behind). A controller that panics on the profiling thread makes the next hand-over panic on
//! the data path with the same payload, as it would have inline.

use std::mem;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use super::{Access, ControlView, Controller, Decision, Evicted};

/// Events per batch: large enough that the hand-over (a channel send, at times a wake-up) is a
/// few hundred per second at millions of requests per second.
const BATCH: usize = 8192;
/// Batches in existence at most (filling, queued, being profiled, spare).
const BUFFERS: usize = 4;

/// One data-path event, in the order the engine saw it.
#[derive(Clone, Copy, Debug)]
enum Event {
    Access(Access),
    Evict(Evicted),
}

fn feed(ctl: &mut dyn Controller, batch: &[Event]) {
    for e in batch {
        match e {
            Event::Access(a) => ctl.on_access(a),
            Event::Evict(v) => ctl.on_evict(v),
        }
    }
}

/// The controller on its profiling thread.
struct Offloaded {
    ctl: Arc<Mutex<Box<dyn Controller>>>,
    /// The batch being filled.
    buf: Vec<Event>,
    /// Emptied batches ready for reuse.
    spare: Vec<Vec<Event>>,
    /// Batches handed over and not back yet.
    in_flight: usize,
    to_worker: Option<Sender<Vec<Event>>>,
    from_worker: Receiver<Vec<Event>>,
    worker: Option<JoinHandle<()>>,
    /// A data path that outruns the profiling thread drops its batch (counted in `dropped`)
    /// instead of waiting for one to come back (the server: no request waits for a profiler).
    lossy: bool,
    /// Events dropped that way.
    dropped: u64,
}

// Test builds: makes the next `Offloaded::start` on this thread fail as if the OS refused the
// thread, so the fallback can be tested.
#[cfg(test)]
thread_local! {
    static FAIL_NEXT_SPAWN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Offloaded {
    /// Starts the profiling thread; if the OS refuses it, hands the controller back with the
    /// error (never panics: this runs with the server's engine lock held).
    fn start(ctl: Box<dyn Controller>) -> Result<Self, (Box<dyn Controller>, std::io::Error)> {
        let ctl = Arc::new(Mutex::new(ctl));
        let (to_worker, inbox) = mpsc::channel::<Vec<Event>>();
        let (outbox, from_worker) = mpsc::channel::<Vec<Event>>();
        let shared = Arc::clone(&ctl);
        let builder = std::thread::Builder::new().name("locus-profiler".into());
        #[cfg(test)]
        let builder = if FAIL_NEXT_SPAWN.with(|f| f.replace(false)) {
            // An impossible stack size: the OS refuses the thread.
            builder.stack_size(usize::MAX)
        } else {
            builder
        };
        let spawned = builder.spawn(move || {
            for mut batch in inbox {
                {
                    let mut c = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    feed(c.as_mut(), &batch);
                }
                batch.clear();
                if outbox.send(batch).is_err() {
                    break;
                }
            }
        });
        let worker = match spawned {
            Ok(w) => w,
            Err(e) => {
                // The closure (and its clone of `ctl`) was dropped with the failed spawn.
                let ctl = Arc::try_unwrap(ctl)
                    .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
                    .map_err(|_| ())
                    .expect("a failed spawn drops the thread's handle on the controller");
                return Err((ctl, e));
            }
        };
        Ok(Offloaded {
            ctl,
            buf: Vec::with_capacity(BATCH),
            spare: Vec::new(),
            in_flight: 0,
            lossy: false,
            dropped: 0,
            to_worker: Some(to_worker),
            from_worker,
            worker: Some(worker),
        })
    }

    #[inline]
    fn push(&mut self, e: Event) {
        self.buf.push(e);
        if self.buf.len() >= BATCH {
            self.hand_over();
        }
    }

    /// The profiling thread is gone: it panicked in the controller. Re-raise that panic here.
    #[cold]
    fn worker_died(&mut self) -> ! {
        self.to_worker = None;
        match self.worker.take().map(JoinHandle::join) {
            Some(Err(payload)) => std::panic::resume_unwind(payload),
            _ => panic!("the controller's profiling thread stopped"),
        }
    }

    fn take_back(&mut self, wait: bool) -> Option<Vec<Event>> {
        let got = if wait {
            self.from_worker.recv().ok()
        } else {
            match self.from_worker.try_recv() {
                Ok(b) => Some(b),
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => None,
            }
        };
        match got {
            Some(b) => {
                self.in_flight -= 1;
                Some(b)
            }
            None => self.worker_died(),
        }
    }

    /// Sends the current batch (if any) to the profiling thread and starts a new one.
    fn hand_over(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let next = match self.spare.pop() {
            Some(b) => b,
            None => match self.take_back(false) {
                Some(b) => b,
                None if self.in_flight + 2 <= BUFFERS => Vec::with_capacity(BATCH),
                None if self.lossy => {
                    // Every batch is out and the thread is behind: this batch's events are
                    // lost to the profilers (their curves are sampled anyway), not waited for.
                    self.dropped += self.buf.len() as u64;
                    self.buf.clear();
                    return;
                }
                None => self.take_back(true).unwrap_or_default(),
            },
        };
        let full = mem::replace(&mut self.buf, next);
        let sent = self
            .to_worker
            .as_ref()
            .is_some_and(|tx| tx.send(full).is_ok());
        if !sent {
            self.worker_died();
        }
        self.in_flight += 1;
    }

    /// Every event so far has reached the controller.
    fn drain(&mut self) {
        self.hand_over();
        while self.in_flight > 0 {
            if let Some(b) = self.take_back(true) {
                self.spare.push(b);
            }
        }
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        self.drain();
        let mut c = self.ctl.lock().unwrap_or_else(PoisonError::into_inner);
        c.decide(view)
    }
}

impl Drop for Offloaded {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop; events still queued are profiled first
        // (nothing reads the controller afterwards, but the thread must not outlive the engine).
        self.to_worker = None;
        if let Some(w) = self.worker.take() {
            // A panic in the controller was already reported by the thread itself.
            let _ = w.join();
        }
    }
}

/// An installed controller and where it runs.
pub(crate) struct Host {
    name: &'static str,
    mode: Mode,
    /// Set when offload was asked for and the profiling thread could not be started.
    offload_error: Option<String>,
}

enum Mode {
    Inline(Box<dyn Controller>),
    Offload(Box<Offloaded>),
}

impl Host {
    /// Hosts `ctl`, on a profiling thread of its own when `offload` (and it observes events).
    ///
    /// If the profiling thread cannot be started, the controller runs inline (same decisions,
    /// bit for bit) and [`Host::offload_error`] says why.
    pub(crate) fn new(ctl: Box<dyn Controller>, offload: bool) -> Self {
        let name = ctl.name();
        let (mode, offload_error) = if offload && ctl.observes() {
            match Offloaded::start(ctl) {
                Ok(o) => (Mode::Offload(Box::new(o)), None),
                Err((ctl, e)) => (
                    Mode::Inline(ctl),
                    Some(format!("could not start the profiling thread: {e}")),
                ),
            }
        } else {
            (Mode::Inline(ctl), None)
        };
        Host {
            name,
            mode,
            offload_error,
        }
    }

    /// Why offload was asked for and is not in effect (the thread could not be started).
    pub(crate) fn offload_error(&self) -> Option<&str> {
        self.offload_error.as_deref()
    }

    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the controller runs on a profiling thread.
    pub(crate) fn offloaded(&self) -> bool {
        matches!(self.mode, Mode::Offload(_))
    }

    #[inline]
    pub(crate) fn on_access(&mut self, a: Access) {
        match &mut self.mode {
            Mode::Inline(c) => c.on_access(&a),
            Mode::Offload(o) => o.push(Event::Access(a)),
        }
    }

    #[inline]
    pub(crate) fn on_evict(&mut self, e: Evicted) {
        match &mut self.mode {
            Mode::Inline(c) => c.on_evict(&e),
            Mode::Offload(o) => o.push(Event::Evict(e)),
        }
    }

    /// Lossy hand-over (see [`Offloaded`]'s `lossy`): for the server, where no request may
    /// wait for a profiler. Nothing changes for a controller running inline.
    pub(crate) fn set_lossy(&mut self, lossy: bool) {
        if let Mode::Offload(o) = &mut self.mode {
            o.lossy = lossy;
        }
    }

    /// Events a lossy hand-over dropped.
    pub(crate) fn dropped_events(&self) -> u64 {
        match &self.mode {
            Mode::Offload(o) => o.dropped,
            Mode::Inline(_) => 0,
        }
    }

    /// Returns once every event so far has reached the controller.
    pub(crate) fn sync(&mut self) {
        if let Mode::Offload(o) = &mut self.mode {
            o.drain();
        }
    }

    /// The controller's [`Controller::model_bytes`] (offloaded: once its thread finished the
    /// batch it is on).
    pub(crate) fn model_bytes(&self) -> u64 {
        match &self.mode {
            Mode::Inline(c) => c.model_bytes(),
            Mode::Offload(o) => o
                .ctl
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .model_bytes(),
        }
    }

    /// Decides, after every event so far has reached the controller.
    pub(crate) fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        match &mut self.mode {
            Mode::Inline(c) => c.decide(view),
            Mode::Offload(o) => o.decide(view),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::AccessKind;
    use crate::{ClassId, PoolId, TenantId};

    /// Records every call, and panics on a chosen access.
    #[derive(Debug, Default)]
    struct Log {
        seen: Vec<(char, u64)>,
        panic_at: Option<u64>,
    }

    impl Controller for Log {
        fn name(&self) -> &'static str {
            "log"
        }
        fn on_access(&mut self, a: &Access) {
            assert_ne!(
                Some(a.key_hash),
                self.panic_at,
                "controller bug at this key"
            );
            self.seen.push(('a', a.key_hash));
        }
        fn on_evict(&mut self, e: &Evicted) {
            self.seen.push(('e', e.key_hash));
        }
        fn decide(&mut self, _view: &ControlView<'_>) -> Decision {
            let mut d = Decision::default();
            d.notes.push(("seen".into(), self.seen.len() as f64));
            // The order of every call so far, folded into one figure.
            let fold = self.seen.iter().fold(0u64, |h, (c, k)| {
                h.wrapping_mul(31).wrapping_add(*k ^ u64::from(*c as u32))
            });
            d.notes.push(("fold".into(), fold as f64));
            d
        }
    }

    fn access(k: u64) -> Access {
        Access {
            tenant: TenantId(0),
            pool: PoolId(0),
            kind: AccessKind::GetHit,
            key_hash: k,
            size: 10,
            class: None,
            now_us: k,
        }
    }

    fn evicted(k: u64) -> Evicted {
        Evicted {
            tenant: TenantId(0),
            pool: PoolId(0),
            class: ClassId(0),
            key_hash: k,
            size: 10,
            idle_ms: 0,
            now_us: k,
        }
    }

    fn view() -> ControlView<'static> {
        ControlView {
            now_us: 0,
            requests: 0,
            interval: 0,
            page_size: 1024,
            pages_total: 1,
            pages_used: 0,
            fast_pages: None,
            pools: &[],
        }
    }

    fn drive(host: &mut Host, n: u64) -> Vec<Decision> {
        let mut out = Vec::new();
        for k in 0..n {
            host.on_access(access(k));
            if k % 7 == 0 {
                host.on_evict(evicted(k));
            }
            // Decisions at uneven points: inside a batch, at a batch edge, after several.
            if k == 5 || k == BATCH as u64 - 1 || k == 3 * BATCH as u64 + 17 || k + 1 == n {
                out.push(host.decide(&view()));
            }
        }
        out
    }

    #[test]
    fn offload_feeds_the_same_calls_in_the_same_order() {
        let n = 10 * BATCH as u64 + 123;
        let inline = drive(&mut Host::new(Box::new(Log::default()), false), n);
        let mut off = Host::new(Box::new(Log::default()), true);
        assert!(off.offloaded());
        assert_eq!(off.name(), "log");
        let offloaded = drive(&mut off, n);
        let notes = |d: &[Decision]| d.iter().map(|x| x.notes.clone()).collect::<Vec<_>>();
        assert_eq!(notes(&inline), notes(&offloaded));
        let last = &offloaded.last().unwrap().notes[0];
        assert_eq!(
            last.1 as u64,
            n + n.div_ceil(7),
            "every event reached the controller"
        );
    }

    #[test]
    fn a_panic_on_the_profiling_thread_reaches_the_data_path() {
        let ctl = Log {
            panic_at: Some(100),
            ..Log::default()
        };
        let mut host = Host::new(Box::new(ctl), true);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for k in 0..(BUFFERS as u64 + 2) * BATCH as u64 {
                host.on_access(access(k));
            }
            host.decide(&view())
        }));
        let payload = r.expect_err("the controller's panic must surface");
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(msg.contains("controller bug at this key"), "{msg}");
    }

    /// Blocks in `on_access` until told to go on (a profiler far slower than the data path).
    #[derive(Debug)]
    struct Stuck {
        go: std::sync::mpsc::Receiver<()>,
        seen: u64,
    }

    impl Controller for Stuck {
        fn name(&self) -> &'static str {
            "stuck"
        }
        fn on_access(&mut self, _a: &Access) {
            if self.seen == 0 {
                let _ = self.go.recv();
            }
            self.seen += 1;
        }
        fn on_evict(&mut self, _e: &Evicted) {}
        fn decide(&mut self, _view: &ControlView<'_>) -> Decision {
            let mut d = Decision::default();
            d.notes.push(("seen".into(), self.seen as f64));
            d
        }
    }

    #[test]
    fn a_lossy_host_drops_batches_instead_of_waiting_for_a_slow_profiler() {
        let (go, rx) = std::sync::mpsc::channel();
        let mut host = Host::new(Box::new(Stuck { go: rx, seen: 0 }), true);
        host.set_lossy(true);
        // Ten batches while the profiler is stuck on its first event: a waiting hand-over would
        // block here for ever (the test would hang); a lossy one drops what it cannot hand over.
        let n = 10 * BATCH as u64;
        for k in 0..n {
            host.on_access(access(k));
        }
        let dropped = host.dropped_events();
        assert!(dropped >= 5 * BATCH as u64, "{dropped}");
        go.send(()).unwrap();
        let d = host.decide(&view());
        // Every event was either profiled or counted as dropped.
        assert_eq!(d.notes[0].1 as u64 + dropped, n);
    }

    #[test]
    fn dropping_an_offloaded_host_stops_its_thread() {
        let mut host = Host::new(Box::new(Log::default()), true);
        for k in 0..(BATCH as u64 * 2 + 5) {
            host.on_access(access(k));
        }
        drop(host); // joins the thread; a hang here fails the test by timeout
    }

    #[test]
    fn a_refused_thread_falls_back_inline_with_the_reason() {
        FAIL_NEXT_SPAWN.with(|f| f.set(true));
        let n = 20_000;
        let mut host = Host::new(Box::new(Log::default()), true);
        assert!(
            !host.offloaded(),
            "the thread was refused: the controller runs inline"
        );
        let why = host.offload_error().expect("the reason is kept");
        assert!(why.contains("profiling thread"), "{why}");
        let notes = |d: &[Decision]| d.iter().map(|x| x.notes.clone()).collect::<Vec<_>>();
        let inline = drive(&mut Host::new(Box::new(Log::default()), false), n);
        assert_eq!(
            notes(&drive(&mut host, n)),
            notes(&inline),
            "same calls, same order"
        );
        // The next start is not affected.
        assert!(Host::new(Box::new(Log::default()), true).offloaded());
    }
}
