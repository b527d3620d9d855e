//! The in-process servers: `null` (every GET hits a 1-byte value, every write succeeds: the
//! cheapest request there is) to measure the harness's own ceiling, and `fake` (a hash map) whose hit and miss counts the tests compare
//! with the harness's. Both speak enough RESP2 for the client in [`crate::client`]: GET, SET,
//! DEL, AUTH, SELECT, INFO (its `keyspace_hits` / `keyspace_misses`), each answered at once.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// The fake server's keys and value lengths.
type Store = Arc<Mutex<HashMap<Vec<u8>, usize>>>;

/// Counters of an in-process server.
#[derive(Debug, Default)]
pub struct FakeStats {
    /// GETs that found their key.
    pub hits: AtomicU64,
    /// GETs that did not.
    pub misses: AtomicU64,
    /// SETs.
    pub sets: AtomicU64,
}

/// A running in-process server (stops when the runtime that runs it stops).
pub struct FakeServer {
    /// Where it listens (127.0.0.1, a free port).
    pub addr: SocketAddr,
    /// Its counters.
    pub stats: Arc<FakeStats>,
}

impl FakeServer {
    /// Starts one on 127.0.0.1 port 0 in the current runtime; `store` = a hash map (`fake`),
    /// else every GET hits a 1-byte value (`null`).
    ///
    /// # Errors
    /// The listener cannot be bound.
    pub async fn start(store: bool) -> std::io::Result<FakeServer> {
        let l = TcpListener::bind("127.0.0.1:0").await?;
        let addr = l.local_addr()?;
        let stats = Arc::new(FakeStats::default());
        let map: Store = Arc::default();
        let st = stats.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                let (st, map) = (st.clone(), map.clone());
                tokio::spawn(async move {
                    let _ = serve(s, st, store.then_some(map)).await;
                });
            }
        });
        Ok(FakeServer { addr, stats })
    }
}

async fn read_args(
    rd: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> std::io::Result<Option<Vec<Vec<u8>>>> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "bad request");
    let mut line = Vec::new();
    if rd.read_until(b'\n', &mut line).await? == 0 {
        return Ok(None);
    }
    let n: usize = std::str::from_utf8(line.strip_prefix(b"*").ok_or_else(bad)?)
        .map_err(|_| bad())?
        .trim()
        .parse()
        .map_err(|_| bad())?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        line.clear();
        rd.read_until(b'\n', &mut line).await?;
        let len: usize = std::str::from_utf8(line.strip_prefix(b"$").ok_or_else(bad)?)
            .map_err(|_| bad())?
            .trim()
            .parse()
            .map_err(|_| bad())?;
        let mut a = vec![0; len + 2];
        rd.read_exact(&mut a).await?;
        a.truncate(len);
        args.push(a);
    }
    Ok(Some(args))
}

async fn serve(s: TcpStream, st: Arc<FakeStats>, map: Option<Store>) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    let (r, mut w) = s.into_split();
    let mut rd = BufReader::new(r);
    let mut out = Vec::new();
    while let Some(args) = read_args(&mut rd).await? {
        out.clear();
        let cmd = args
            .first()
            .map(|a| a.to_ascii_uppercase())
            .unwrap_or_default();
        match (cmd.as_slice(), args.len()) {
            (b"GET", 2) => {
                let found = match &map {
                    Some(m) => m.lock().get(&args[1]).copied(),
                    None => Some(1),
                };
                match found {
                    Some(n) => {
                        st.hits.fetch_add(1, Ordering::Relaxed);
                        out.extend_from_slice(format!("${n}\r\n").as_bytes());
                        out.resize(out.len() + n, b'v');
                        out.extend_from_slice(b"\r\n");
                    }
                    None => {
                        st.misses.fetch_add(1, Ordering::Relaxed);
                        out.extend_from_slice(b"$-1\r\n");
                    }
                }
            }
            (b"SET", 3) => {
                st.sets.fetch_add(1, Ordering::Relaxed);
                if let Some(m) = &map {
                    m.lock().insert(args[1].clone(), args[2].len());
                }
                out.extend_from_slice(b"+OK\r\n");
            }
            (b"DEL", 2) => {
                let n = map
                    .as_ref()
                    .map_or(0, |m| m.lock().remove(&args[1]).is_some() as u8);
                out.extend_from_slice(format!(":{n}\r\n").as_bytes());
            }
            (b"AUTH" | b"SELECT", _) => out.extend_from_slice(b"+OK\r\n"),
            (b"INFO", _) => {
                let body = format!(
                    "# Stats\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\n",
                    st.hits.load(Ordering::Relaxed),
                    st.misses.load(Ordering::Relaxed)
                );
                out.extend_from_slice(format!("${}\r\n{body}\r\n", body.len()).as_bytes());
            }
            _ => out.extend_from_slice(b"-ERR unknown command\r\n"),
        }
        w.write_all(&out).await?;
    }
    Ok(())
}
