//! A real `redis-server` as a peer for differential tests: started on a free loopback port with
//! no persistence, polled until it answers PING, killed when dropped. `None` (and a loud message
//! on stderr) when `redis-server` is not on `PATH`, so a machine without it skips the comparison
//! instead of failing it; `scripts/install-deps.sh` installs it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a started `redis-server` may take to answer PING.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Attempts at starting it (another process may take the free port in between).
const START_ATTEMPTS: usize = 3;

/// A running `redis-server`, killed on drop.
pub struct RedisPeer {
    child: Child,
    dir: PathBuf,
    /// Its loopback address.
    pub addr: SocketAddr,
}

/// `redis-server` on `PATH`, if any.
fn find_redis_server() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("redis-server"))
        .find(|p| p.is_file())
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local addr").port()
}

fn answers_ping(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let mut buf = [0u8; 7];
    s.write_all(b"*1\r\n$4\r\nPING\r\n").is_ok()
        && s.read_exact(&mut buf).is_ok()
        && &buf == b"+PONG\r\n"
}

impl RedisPeer {
    /// Starts `redis-server` on a free port of 127.0.0.1, or returns `None` after printing why the
    /// caller's comparison (`what`) is skipped when it is not installed.
    ///
    /// # Panics
    /// If `redis-server` is installed but does not come up.
    pub fn start(what: &str) -> Option<RedisPeer> {
        let Some(bin) = find_redis_server() else {
            // Straight to stderr, not through the test harness's capture: seen in every run.
            let _ = writeln!(
                std::io::stderr(),
                "\n!!!!!!!! SKIPPED {what}: redis-server is not on PATH (scripts/install-deps.sh \
                 installs it); nothing was compared with Redis !!!!!!!!\n"
            );
            return None;
        };
        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port();
            let dir = std::env::temp_dir()
                .join(format!("locus-redis-peer-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("peer directory");
            let mut child = Command::new(&bin)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .args(["--protected-mode", "no", "--logfile", "redis.log"])
                .arg("--dir")
                .arg(&dir)
                .current_dir(&dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let deadline = Instant::now() + READY_TIMEOUT;
            loop {
                if answers_ping(addr) {
                    return Some(RedisPeer { child, dir, addr });
                }
                if let Ok(Some(status)) = child.try_wait() {
                    last = format!("redis-server on port {port} exited with {status}");
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    last = format!("redis-server on port {port} did not answer PING");
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let log = std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default();
            last = format!("{last}\n{log}");
            let _ = std::fs::remove_dir_all(&dir);
        }
        panic!("redis-server is installed but would not start: {last}");
    }
}

impl Drop for RedisPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
