//! The event loops: `server.threads` tokio runtimes of one worker thread each, and the hand-off
//! of every accepted connection to one of them, as memcached's `-t N` hands its connections to
//! its worker threads' event loops.
//!
//! ```text
//!  loop 0 (locus-loop-0): accept tasks, tick, metrics, signals + its share of the connections
//!  loop 1 (locus-loop-1): its share of the connections
//!  ...
//!  accept ─► least-loaded loop (ties in turn) ─► the connection's task lives there: its reads,
//!            its batches under the engine lock and its writes all run on that one thread
//! ```
//!
//! Why not one runtime of `server.threads` workers: tokio's multi-thread scheduler lets workers
//! steal each other's tasks and wakes a parked worker whenever a task becomes ready and another
//! may be idle, so on a request path (socket ready → task woken → read → execute → write) the
//! workers keep waking each other. Measured before this change (BENCHMARKS.md, "Event loops"):
//! two workers spent more server CPU per request than one, a large part of it in the kernel's
//! wake-up path. Here a connection's task is only ever woken by its own loop's I/O driver, except
//! for what another connection sends it on purpose (pub/sub messages, a blocked client served,
//! CLIENT KILL, shutdown), which wakes it across threads as before.
//!
//! Each loop is a multi-thread runtime with one worker, not a `current_thread` runtime, so that
//! `tokio::task::block_in_place` works: a script past `busy-reply-threshold` hands its loop to
//! a fresh thread (exec/scripting/busy) and the loop's other clients are answered `BUSY`.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::TcpStream;
use tokio::runtime::{Handle, Runtime};

/// One event loop: its runtime's handle and its number of connections.
#[derive(Debug)]
struct Loop {
    handle: Handle,
    conns: Arc<AtomicUsize>,
}

/// The event loops connections are handed to (cheap to clone: shared).
#[derive(Debug, Clone)]
pub struct EventLoops {
    loops: Arc<[Loop]>,
    /// Where the search for the least-loaded loop starts (ties go round in turn).
    next: Arc<AtomicUsize>,
}

/// Decrements a loop's connection count when its connection's task ends (or is dropped).
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Builds `n` runtimes of one worker each, named `locus-loop-I`. The caller owns them (a
/// runtime must be dropped outside any runtime); [`EventLoops`] holds their handles.
///
/// # Errors
/// The first runtime that could not be built.
pub fn build(n: usize) -> std::io::Result<(Vec<Runtime>, EventLoops)> {
    let mut rts = Vec::with_capacity(n.max(1));
    for i in 0..n.max(1) {
        rts.push(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(format!("locus-loop-{i}"))
                .enable_all()
                .build()?,
        );
    }
    let loops = rts
        .iter()
        .map(|rt| Loop {
            handle: rt.handle().clone(),
            conns: Arc::new(AtomicUsize::new(0)),
        })
        .collect();
    Ok((
        rts,
        EventLoops {
            loops,
            next: Arc::new(AtomicUsize::new(0)),
        },
    ))
}

impl EventLoops {
    /// Number of loops.
    pub fn len(&self) -> usize {
        self.loops.len()
    }

    /// Whether there is no loop (never, once built).
    pub fn is_empty(&self) -> bool {
        self.loops.is_empty()
    }

    /// Connections each loop serves now.
    pub fn connections(&self) -> Vec<usize> {
        self.loops
            .iter()
            .map(|l| l.conns.load(Ordering::Relaxed))
            .collect()
    }

    /// The loop with the fewest connections; among equals, the next in turn.
    fn pick(&self) -> usize {
        let n = self.loops.len();
        if n == 1 {
            return 0;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut best = start;
        let mut least = self.loops[start].conns.load(Ordering::Relaxed);
        for k in 1..n {
            let i = (start + k) % n;
            let c = self.loops[i].conns.load(Ordering::Relaxed);
            if c < least {
                best = i;
                least = c;
            }
        }
        best
    }

    /// Runs a new connection's task on the least-loaded loop: `serve` gets the socket registered
    /// with that loop's I/O driver, or the error that prevented it (then it only undoes the
    /// accept's bookkeeping). Called from a task of one of the loops (an accept task).
    pub fn spawn<F, Fut>(&self, sock: TcpStream, serve: F)
    where
        F: FnOnce(std::io::Result<TcpStream>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let i = self.pick();
        let target = &self.loops[i];
        target.conns.fetch_add(1, Ordering::Relaxed);
        let counted = Counted(target.conns.clone());
        if self.loops.len() == 1 {
            // One loop: the accept task runs on it already; the socket stays registered.
            tokio::spawn(async move {
                let _counted = counted;
                serve(Ok(sock)).await;
            });
            return;
        }
        // The socket leaves this loop's I/O driver and joins the target's (one epoll_ctl each,
        // once per connection).
        match sock.into_std() {
            Ok(std) => {
                target.handle.spawn(async move {
                    let _counted = counted;
                    serve(TcpStream::from_std(std)).await;
                });
            }
            Err(e) => {
                tokio::spawn(async move {
                    let _counted = counted;
                    serve(Err(e)).await;
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_go_to_the_least_loaded_loop_and_are_counted_until_they_end() {
        let (rts, loops) = build(2).unwrap();
        assert_eq!(loops.len(), 2);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<std::sync::mpsc::Sender<()>>();
        // Four connections, each held open by its task until the test says so.
        let accepted = {
            let loops = loops.clone();
            rts[0].spawn(async move {
                listener.set_nonblocking(true).unwrap();
                let l = tokio::net::TcpListener::from_std(listener).unwrap();
                for _ in 0..4 {
                    let (s, _) = l.accept().await.unwrap();
                    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
                    let tx = tx.clone();
                    loops.spawn(s, move |s| async move {
                        let s = s.unwrap();
                        let name = std::thread::current().name().unwrap_or("").to_string();
                        assert!(name.starts_with("locus-loop-"), "{name}");
                        let (stop_tx, stop_rx) = std::sync::mpsc::channel();
                        tx.send(stop_tx).unwrap();
                        let _ = done_tx.send(());
                        // Wait (off the loop's thread) until released.
                        tokio::task::spawn_blocking(move || stop_rx.recv())
                            .await
                            .unwrap()
                            .unwrap();
                        drop(s);
                    });
                    done_rx.await.unwrap();
                }
            })
        };
        let clients: Vec<_> = (0..4)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        let stops: Vec<_> = (0..4).map(|_| rx.recv().unwrap()).collect();
        rts[0].block_on(accepted).unwrap();
        assert_eq!(loops.connections(), vec![2, 2]);
        for s in stops {
            s.send(()).unwrap();
        }
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while loops.connections() != vec![0, 0] {
            assert!(std::time::Instant::now() < end, "{:?}", loops.connections());
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        drop(clients);
    }
}
