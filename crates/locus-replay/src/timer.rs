//! A timer with microsecond precision for the `delay` backend.
//!
//! Tokio's timer wheel rounds sleeps up to whole milliseconds, which would turn a 100 µs penalty
//! into 1 ms. This thread keeps a heap of deadlines and waits on a condition variable (a futex
//! with a nanosecond timeout), so a sleep ends within the scheduler's wake-up latency (tens of
//! µs) without blocking any task: the sleeping task awaits a oneshot channel.
//!
//! ```text
//!  task ── sleep(d) ── push (deadline, tx) ──► heap ──► timer thread: wait until the earliest,
//!    ▲                                                   send on every expired tx
//!    └──────────────── rx.await ◄───────────────────────┘
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

struct Entry(Instant, u64, oneshot::Sender<()>);

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.0, self.1).cmp(&(o.0, o.1))
    }
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    stop: bool,
}

/// The timer; the thread stops when the last handle is dropped.
#[derive(Clone)]
pub struct Timer {
    inner: Arc<(Mutex<State>, Condvar)>,
    _guard: Arc<StopGuard>,
}

struct StopGuard(Arc<(Mutex<State>, Condvar)>);

impl Drop for StopGuard {
    fn drop(&mut self) {
        self.0.0.lock().stop = true;
        self.0.1.notify_one();
    }
}

impl Timer {
    /// Starts the timer thread.
    pub fn start() -> Timer {
        let inner: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let th = inner.clone();
        std::thread::Builder::new()
            .name("replay-timer".into())
            .spawn(move || run(&th))
            .expect("spawning the timer thread");
        Timer {
            _guard: Arc::new(StopGuard(inner.clone())),
            inner,
        }
    }

    /// Sleeps `d` without blocking the runtime.
    pub async fn sleep(&self, d: Duration) {
        if d.is_zero() {
            return;
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.inner.0.lock();
            st.seq += 1;
            let seq = st.seq;
            let earliest = st.heap.peek().map(|e| e.0.0);
            let at = Instant::now() + d;
            st.heap.push(Reverse(Entry(at, seq, tx)));
            if earliest.is_none_or(|e| at < e) {
                self.inner.1.notify_one();
            }
        }
        let _ = rx.await;
    }
}

fn run(inner: &(Mutex<State>, Condvar)) {
    let mut st = inner.0.lock();
    loop {
        if st.stop {
            return;
        }
        let now = Instant::now();
        while st.heap.peek().is_some_and(|e| e.0.0 <= now) {
            if let Some(Reverse(Entry(_, _, tx))) = st.heap.pop() {
                let _ = tx.send(());
            }
        }
        match st.heap.peek().map(|e| e.0.0) {
            Some(at) => {
                let _ = inner.1.wait_until(&mut st, at);
            }
            None => inner.1.wait(&mut st),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sleeps end no sooner than asked, in deadline order, whatever order they were started in.
    #[test]
    fn sleeps_end_in_deadline_order_and_not_early() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let timer = Timer::start();
            let order = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = Vec::new();
            for us in [3000u64, 500, 2000, 100] {
                let (t, o) = (timer.clone(), order.clone());
                tasks.push(tokio::spawn(async move {
                    let start = Instant::now();
                    t.sleep(Duration::from_micros(us)).await;
                    assert!(start.elapsed() >= Duration::from_micros(us));
                    o.lock().push(us);
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            assert_eq!(*order.lock(), vec![100, 500, 2000, 3000]);
        });
    }
}
