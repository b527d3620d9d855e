//! The `postgres` backend: a private PostgreSQL the harness starts, fills and always stops.
//!
//! ```text
//!  PgServer::start: initdb (temp dir, trust auth) ─► postgres -D dir -p FREE_PORT -k dir
//!                   (child process; as the `postgres` user when the harness runs as root,
//!                   which initdb refuses) ─► per tenant i: schema t{i}
//!                      t{i}.items(id bigint primary key, payload text)      rows
//!                      t{i}.facts(id bigint primary key, amount int)        rows + n (agg)
//!  Drop: SIGINT (fast shutdown), wait, SIGKILL after 10 s, remove the directory
//! ```
//! Drop runs on success, on every error and on Ctrl-C / SIGTERM (the run returns an error). A
//! harness killed with SIGKILL cannot clean up; the next run in the same parent directory does:
//! it stops the server of every `locus-replay-pg-<pid>-…` directory whose `<pid>` is gone.
//!
//! A key maps to row `key % rows`. The queries, from cheap to milliseconds:
//! * `pk`: `SELECT payload FROM items WHERE id = $1` (an index lookup, ~0.1 ms);
//! * `agg:N`: the key's row joined with the count and sum of the `N` fact rows after it (an
//!   index range scan and an aggregate; cost grows with `N`, ~1 ms per few thousand rows);
//! * `two:F:N`: a fraction `F` of the keys (by hash) runs `agg:N`, the others `pk`, so one
//!   tenant's keys have two costs, as in pRedis's setting.
//!
//! Every connection task has its own client (one query in flight per connection, as an
//! application thread with its own database connection).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls, Statement};

use crate::config::{PgQuery, PgSettings};
use crate::error::{ReplayError, Result};

fn err(message: impl Into<String>) -> ReplayError {
    ReplayError::Backend {
        backend: "postgres".into(),
        message: message.into(),
    }
}

/// A client error with its causes ("error connecting to server: Connection refused").
fn chain(e: &tokio_postgres::Error) -> String {
    let mut msg = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        msg.push_str(": ");
        msg.push_str(&c.to_string());
        cause = c.source();
    }
    msg
}

/// A PostgreSQL started by the harness (or an external one when `url` is set).
pub struct PgServer {
    child: Option<Child>,
    dir: Option<PathBuf>,
    /// The libpq-style connection string.
    pub conninfo: String,
}

fn find_bin(settings: &PgSettings, name: &str) -> Result<PathBuf> {
    if let Some(d) = &settings.bin_dir {
        let p = d.join(name);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(err(format!("{} not found (--pg-bin)", p.display())))
        };
    }
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            if d.join(name).is_file() {
                return Ok(d.join(name));
            }
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin").join(name))
        .filter(|p| p.is_file())
        .collect();
    versions.sort();
    versions.pop().ok_or_else(|| {
        err(format!(
            "{name} not found on PATH or under /usr/lib/postgresql (install Debian's postgresql: scripts/install-deps.sh)"
        ))
    })
}

/// The uid and gid of the `postgres` user (initdb and postgres refuse to run as root).
fn postgres_ids() -> Result<(u32, u32)> {
    let text =
        std::fs::read_to_string("/etc/passwd").map_err(|e| err(format!("/etc/passwd: {e}")))?;
    text.lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"postgres") && f.len() > 3)
        .and_then(|f| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
        .ok_or_else(|| err("running as root needs a `postgres` user to run PostgreSQL as"))
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| err(format!("no free port: {e}")))?;
    Ok(l.local_addr().map_err(|e| err(e.to_string()))?.port())
}

impl PgServer {
    /// Starts a private server (initdb into a new temp directory, a free port), or wraps the
    /// external one `settings.url` names.
    ///
    /// # Errors
    /// [`ReplayError::Backend`]: binaries missing, initdb or postgres failing (their output is
    /// in the message), or the server not ready within 30 s. Whatever was started is stopped.
    pub fn start(settings: &PgSettings, max_connections: usize) -> Result<PgServer> {
        if let Some(url) = &settings.url {
            return Ok(PgServer {
                child: None,
                dir: None,
                conninfo: url.clone(),
            });
        }
        let initdb = find_bin(settings, "initdb")?;
        let postgres = find_bin(settings, "postgres")?;
        let parent = settings
            .tmp_parent
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        reap_orphans(&parent);
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = parent.join(format!(
            "locus-replay-pg-{}-{nanos}-{}",
            std::process::id(),
            RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
        // From here on, Drop removes the directory and stops the server.
        let mut me = PgServer {
            child: None,
            dir: Some(dir.clone()),
            conninfo: String::new(),
        };
        let ids = if is_root() {
            Some(postgres_ids()?)
        } else {
            None
        };
        if let Some((uid, gid)) = ids {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| err(format!("chown {}: {e}", dir.display())))?;
        }
        let data = dir.join("data");
        let as_pg = |cmd: &mut Command| {
            if let Some((uid, gid)) = ids {
                use std::os::unix::process::CommandExt;
                cmd.uid(uid).gid(gid);
            }
        };
        let mut init = Command::new(&initdb);
        init.args(["-D"])
            .arg(&data)
            .args([
                "-U",
                "locus",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C",
            ])
            .stdin(Stdio::null());
        as_pg(&mut init);
        let out = init
            .output()
            .map_err(|e| err(format!("{}: {e}", initdb.display())))?;
        if !out.status.success() {
            return Err(err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let port = free_port()?;
        let log = std::fs::File::create(dir.join("postgres.log"))
            .map_err(|e| err(format!("postgres.log: {e}")))?;
        if let Some((uid, gid)) = ids {
            let _ = std::os::unix::fs::chown(dir.join("postgres.log"), Some(uid), Some(gid));
        }
        let mut cmd = Command::new(&postgres);
        cmd.arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-k"])
            .arg(&dir)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .args(["-c", &format!("max_connections={}", max_connections + 10)])
            .args(["-c", "shared_buffers=128MB"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        as_pg(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| err(format!("{}: {e}", postgres.display())))?;
        me.child = Some(child);
        me.conninfo = format!("host=127.0.0.1 port={port} user=locus dbname=postgres");
        Ok(me)
    }

    /// Waits until the server accepts connections (30 s at most).
    ///
    /// # Errors
    /// Not ready in time, or the server exited (its log's tail in the message).
    pub async fn ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match tokio_postgres::connect(&self.conninfo, NoTls).await {
                Ok((c, conn)) => {
                    tokio::spawn(conn);
                    drop(c);
                    return Ok(());
                }
                Err(e) => {
                    if let Some(ch) = &mut self.child {
                        if let Ok(Some(st)) = ch.try_wait() {
                            return Err(err(format!(
                                "postgres exited ({st}): {}",
                                self.log_tail()
                            )));
                        }
                    } else {
                        return Err(err(format!("{}: {}", self.conninfo, chain(&e))));
                    }
                    if Instant::now() > deadline {
                        return Err(err(format!(
                            "not ready within 30 s: {}; {}",
                            chain(&e),
                            self.log_tail()
                        )));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn log_tail(&self) -> String {
        let Some(d) = &self.dir else {
            return String::new();
        };
        let t = std::fs::read_to_string(d.join("postgres.log")).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }

    /// The private data directory (None for an external server).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Connects a client.
    ///
    /// # Errors
    /// The server cannot be reached.
    pub async fn client(&self) -> Result<Client> {
        let (c, conn) = tokio_postgres::connect(&self.conninfo, NoTls)
            .await
            .map_err(|e| err(format!("{}: {}", self.conninfo, chain(&e))))?;
        tokio::spawn(conn);
        Ok(c)
    }

    /// Creates and fills tenant `t`'s tables for `query`.
    ///
    /// # Errors
    /// A failing statement.
    pub async fn load_tenant(&self, t: usize, query: PgQuery, rows: u64) -> Result<()> {
        let c = self.client().await?;
        let facts = match query {
            PgQuery::Pk => 0,
            PgQuery::Agg(n) | PgQuery::Two { n, .. } => rows + n as u64,
        };
        let sql = format!(
            "DROP SCHEMA IF EXISTS t{t} CASCADE; CREATE SCHEMA t{t};
             CREATE TABLE t{t}.items (id bigint PRIMARY KEY, payload text NOT NULL);
             INSERT INTO t{t}.items SELECT g, md5(g::text) FROM generate_series(0, {last}) g;
             CREATE TABLE t{t}.facts (id bigint PRIMARY KEY, amount int NOT NULL);
             INSERT INTO t{t}.facts SELECT g, (g * 7919) % 1000 FROM generate_series(0, {flast}) g;
             ANALYZE t{t}.items; ANALYZE t{t}.facts;",
            last = rows - 1,
            flast = facts as i64 - 1,
        );
        c.batch_execute(&sql)
            .await
            .map_err(|e| err(format!("loading tenant {t}: {}", chain(&e))))
    }
}

/// Whether process `pid` runs (exists and is not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().chars().next())
        })
        .is_some_and(|state| state != Some('Z'))
}

/// Stops and removes what a harness that died without cleaning up (SIGKILL) left in `parent`:
/// the servers of `locus-replay-pg-<pid>-…` directories whose `<pid>` no longer runs.
fn reap_orphans(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(owner) = name
            .strip_prefix("locus-replay-pg-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if alive(owner) {
            continue;
        }
        let dir = e.path();
        // postmaster.pid's first line is the server's pid; stop it only if that process is
        // a postgres whose command line names this directory (not a reused pid).
        let pid = std::fs::read_to_string(dir.join("data").join("postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<u32>().ok()));
        if let Some(pid) = pid {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(&*dir.to_string_lossy()) {
                let _ = Command::new("kill")
                    .args(["-QUIT", &pid.to_string()])
                    .status();
                let deadline = Instant::now() + Duration::from_secs(5);
                while alive(pid) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if let Some(mut ch) = self.child.take() {
            // SIGINT: PostgreSQL's fast shutdown (aborts sessions, exits cleanly).
            let pid = ch.id().to_string();
            let _ = Command::new("kill").args(["-INT", &pid]).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                match ch.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() > deadline => {
                        let _ = ch.kill();
                        let _ = ch.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// One connection task's client with its prepared statements.
pub struct PgFetcher {
    client: Client,
    pk: Statement,
    agg: Option<Statement>,
    query: PgQuery,
    rows: u64,
}

impl PgFetcher {
    /// Connects and prepares tenant `t`'s statements.
    ///
    /// # Errors
    /// Connection or preparation failure.
    pub async fn new(server: &PgServer, t: usize, query: PgQuery, rows: u64) -> Result<PgFetcher> {
        let client = server.client().await?;
        let prep = |sql: String| {
            let c = &client;
            async move {
                c.prepare(&sql)
                    .await
                    .map_err(|e| err(format!("preparing {sql:?}: {}", chain(&e))))
            }
        };
        let pk = prep(format!("SELECT payload FROM t{t}.items WHERE id = $1")).await?;
        let agg = match query {
            PgQuery::Pk => None,
            PgQuery::Agg(n) | PgQuery::Two { n, .. } => Some(
                prep(format!(
                    "SELECT i.payload, count(f.id), coalesce(sum(f.amount), 0)::bigint \
                     FROM t{t}.items i JOIN t{t}.facts f ON f.id >= i.id AND f.id < i.id + {n} \
                     WHERE i.id = $1 GROUP BY i.payload"
                ))
                .await?,
            ),
        };
        Ok(PgFetcher {
            client,
            pk,
            agg,
            query,
            rows,
        })
    }

    /// Whether `key` runs the expensive query.
    pub fn is_slow(query: PgQuery, key: u64) -> bool {
        match query {
            PgQuery::Pk => false,
            PgQuery::Agg(_) => true,
            PgQuery::Two { slow, .. } => {
                // A fixed hash of the key, so a key's class never changes during a run.
                let h = locus_common::hash_key(&key.to_le_bytes());
                ((h >> 11) as f64 / (1u64 << 53) as f64) < slow
            }
        }
    }

    /// Runs the key's query and returns the row as text.
    ///
    /// # Errors
    /// The query fails or returns no row.
    pub async fn fetch(&self, key: u64) -> Result<String> {
        let id = (key % self.rows) as i64;
        let slow = Self::is_slow(self.query, key);
        let stmt = match (&self.agg, slow) {
            (Some(a), true) => a,
            _ => &self.pk,
        };
        let rows = self
            .client
            .query(stmt, &[&id])
            .await
            .map_err(|e| err(format!("query for row {id}: {}", chain(&e))))?;
        let row = rows.first().ok_or_else(|| err(format!("no row {id}")))?;
        let payload: String = row.get(0);
        Ok(if slow {
            let (n, s): (i64, i64) = (row.get(1), row.get(2));
            format!("{payload}:{n}:{s}")
        } else {
            payload
        })
    }
}
