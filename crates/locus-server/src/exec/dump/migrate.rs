//! `MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2
//! username password] [KEYS key ...]`: the keys DUMPed, sent to another server as RESTOREs
//! (any server that speaks RESP and knows RESTORE: redis-server or Locus), and deleted here once
//! the target accepted them (unless COPY).
//!
//! ```text
//!  handler (engine lock held): options, then each key's payload and TTL read ─► a job on the
//!      connection (no reply yet; "+NOKEY" when no key exists)
//!  connection (lock released): connect ─► AUTH, SELECT db, RESTORE key ttl payload [REPLACE] ...
//!      pipelined ─► one reply line each, every step bounded by `timeout` ms
//!  engine lock again: each key the target accepted is deleted (unless COPY), if it still holds
//!      the value sent (a key changed meanwhile by another client is left as it is) ─► reply
//! ```
//!
//! Unlike Redis, the network round trip runs with the engine lock released, so a slow or dead
//! target stalls only the client that called MIGRATE, never the other tenants. The price: the
//! keys are not frozen while they travel; a key written meanwhile is kept here (and the target
//! has the value it had). Inside MULTI/EXEC and scripts, where nothing may wait, MIGRATE is
//! refused. Connections are not cached between calls (INFO's `migrate_cached_sockets` is 0).

use std::time::Duration;

use locus_engine::TenantId;
use locus_protocol::ReplyWriter;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::rdb;
use crate::exec::notify::{GENERIC, notify};
use crate::exec::{Args, CmdError, CmdResult, Ctx, int_arg, is};
use crate::server::{ConnState, Shared};

/// A MIGRATE waiting for its network round trip (see the module docs).
#[derive(Debug)]
pub struct Job {
    host: String,
    port: Option<u16>,
    db: i64,
    timeout: Duration,
    copy: bool,
    replace: bool,
    auth: Option<(Option<Vec<u8>>, Vec<u8>)>,
    tenant: TenantId,
    conn_db: u32,
    /// Each existing key: name, payload, TTL in ms (0: none).
    keys: Vec<(Vec<u8>, Vec<u8>, u64)>,
    /// CLIENT REPLY OFF or SKIP: the reply is dropped.
    quiet: bool,
}

/// The positions of MIGRATE's keys after `KEYS` (for routing; the key argument at 3 is the
/// table's triple).
pub fn keys_after_keyword(a: Args<'_, '_>) -> std::ops::Range<usize> {
    let mut j = 6;
    while j < a.len() {
        if is(&a[j], "keys") {
            return j + 1..a.len();
        }
        j += if is(&a[j], "auth") {
            2
        } else if is(&a[j], "auth2") {
            3
        } else {
            1
        };
    }
    0..0
}

/// `MIGRATE`: reads the keys and leaves the round trip to the connection ([`run`]).
pub fn migrate(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    // MIGRATE makes the server open a TCP connection to any host and port the caller names:
    // across a tenant boundary that is a way out of the sandbox (to the operator's network), so
    // it is the admin's, as every command that reaches beyond the caller's tenant. A
    // single-tenant server without an `[admin]` user runs every connection as its admin (as
    // Redis), so MIGRATE works there as in Redis.
    if !ctx.conn.admin {
        return Err(CmdError::msg(
            "NOPERM MIGRATE connects wherever its caller says: on a server with tenants it is the admin's",
        ));
    }
    let (mut copy, mut replace) = (false, false);
    let mut auth: Option<(Option<Vec<u8>>, Vec<u8>)> = None;
    let mut keys: Vec<&[u8]> = vec![&a[3]];
    let mut j = 6;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if is(&a[j], "copy") {
            copy = true;
        } else if is(&a[j], "replace") {
            replace = true;
        } else if is(&a[j], "auth") {
            if more < 1 {
                return Err(CmdError::Syntax);
            }
            auth = Some((None, a[j + 1].to_vec()));
            j += 1;
        } else if is(&a[j], "auth2") {
            if more < 2 {
                return Err(CmdError::Syntax);
            }
            auth = Some((Some(a[j + 1].to_vec()), a[j + 2].to_vec()));
            j += 2;
        } else if is(&a[j], "keys") {
            if !a[3].is_empty() {
                return Err(CmdError::msg(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            keys = a[j + 1..].iter().map(|k| &k[..]).collect();
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let mut ms = int_arg(&a[5])?;
    let db = int_arg(&a[4])?;
    if ms <= 0 {
        ms = 1000;
    }
    if ctx.conn.block.deny {
        return Err(CmdError::msg(
            "ERR MIGRATE is not allowed inside MULTI/EXEC or scripts on this server (it waits for the network with the engine unlocked)",
        ));
    }
    let t = ctx.t()?;
    let now = ctx.eng.now_ms();
    let mut found = Vec::new();
    for k in keys {
        let at = ctx.eng.expire_at(t, k).flatten();
        let Some(v) = ctx.eng.get_value(t, k) else {
            continue;
        };
        let Some(payload) = rdb::encode(v) else {
            continue;
        };
        let ttl = match at {
            None => 0,
            Some(at) if at <= now => continue,
            Some(at) => (at - now).max(1),
        };
        found.push((k.to_vec(), payload, ttl));
    }
    if found.is_empty() {
        ctx.w.simple("NOKEY");
        return Ok(());
    }
    ctx.conn.migrate = Some(Box::new(Job {
        host: String::from_utf8_lossy(&a[1]).into_owned(),
        port: std::str::from_utf8(&a[2]).ok().and_then(|p| p.parse().ok()),
        db,
        timeout: Duration::from_millis(ms as u64),
        copy,
        replace,
        auth,
        tenant: t,
        conn_db: ctx.conn.db,
        keys: found,
        quiet: ctx.conn.reply_off || ctx.conn.skip_current,
    }));
    Ok(())
}

fn push_command(buf: &mut Vec<u8>, args: &[&[u8]]) {
    buf.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        buf.extend_from_slice(a);
        buf.extend_from_slice(b"\r\n");
    }
}

/// What the target said: an I/O failure (Redis's IOERR text), or one line per command sent.
enum Outcome {
    Io(&'static str),
    Lines(Vec<String>),
}

async fn round_trip(job: &Job) -> Outcome {
    let t = job.timeout;
    let Some(port) = job.port else {
        return Outcome::Io("IOERR error or timeout connecting to the client");
    };
    let sock = match timeout(t, TcpStream::connect((job.host.as_str(), port))).await {
        Ok(Ok(s)) => s,
        _ => return Outcome::Io("IOERR error or timeout connecting to the client"),
    };
    let _ = sock.set_nodelay(true);
    let mut buf = Vec::new();
    let mut sent = 0;
    if let Some((user, pw)) = &job.auth {
        match user {
            Some(u) => push_command(&mut buf, &[b"AUTH", u, pw]),
            None => push_command(&mut buf, &[b"AUTH", pw]),
        }
        sent += 1;
    }
    let db = job.db.to_string();
    push_command(&mut buf, &[b"SELECT", db.as_bytes()]);
    sent += 1;
    for (k, p, ttl) in &job.keys {
        let ttl = ttl.to_string();
        if job.replace {
            push_command(&mut buf, &[b"RESTORE", k, ttl.as_bytes(), p, b"REPLACE"]);
        } else {
            push_command(&mut buf, &[b"RESTORE", k, ttl.as_bytes(), p]);
        }
        sent += 1;
    }
    let (rd, mut wr) = sock.into_split();
    // Written in 64 KiB pieces, each within the timeout (as Redis's syncWrite).
    for piece in buf.chunks(64 * 1024) {
        if !matches!(timeout(t, wr.write_all(piece)).await, Ok(Ok(()))) {
            return Outcome::Io("IOERR error or timeout writing to target instance");
        }
    }
    let mut rd = BufReader::new(rd);
    let mut lines = Vec::with_capacity(sent);
    for _ in 0..sent {
        let mut line = Vec::new();
        // A reply line is short: a target that sends more than 64 KiB without a newline is not
        // answering RESTORE.
        let read = timeout(t, async {
            loop {
                let avail = rd.fill_buf().await?;
                if avail.is_empty() {
                    return Ok::<bool, std::io::Error>(false);
                }
                if let Some(i) = avail.iter().position(|&b| b == b'\n') {
                    line.extend_from_slice(&avail[..=i]);
                    rd.consume(i + 1);
                    return Ok(true);
                }
                let n = avail.len();
                line.extend_from_slice(avail);
                rd.consume(n);
                if line.len() > 64 * 1024 {
                    return Ok(false);
                }
            }
        })
        .await;
        if !matches!(read, Ok(Ok(true))) {
            return Outcome::Io("IOERR error or timeout reading to target instance");
        }
        let s = String::from_utf8_lossy(&line);
        lines.push(s.trim_end_matches(['\r', '\n']).to_string());
    }
    Outcome::Lines(lines)
}

/// Runs a MIGRATE job with the engine unlocked, then deletes what the target accepted and
/// writes the reply to `out`.
pub async fn run(shared: &Shared, st: &mut ConnState, job: Box<Job>, out: &mut Vec<u8>) {
    let outcome = round_trip(&job).await;
    let mut quiet_out = Vec::new();
    let out = if job.quiet { &mut quiet_out } else { out };
    let mut w = ReplyWriter::new(out, st.proto);
    let lines = match outcome {
        Outcome::Io(e) => {
            w.error(e);
            return;
        }
        Outcome::Lines(l) => l,
    };
    let pre = usize::from(job.auth.is_some()) + 1;
    // The first error of AUTH, SELECT or a RESTORE is the reply. After a failed AUTH or SELECT
    // nothing is deleted; otherwise each key whose RESTORE the target accepted is (as Redis).
    let setup_error = lines[..pre]
        .iter()
        .find(|l| l.starts_with('-'))
        .map(|l| l[1..].to_string());
    let mut error = setup_error.clone();
    let mut eng = shared.engine();
    for ((k, payload, _), line) in job.keys.iter().zip(&lines[pre..]) {
        if let Some(e) = line.strip_prefix('-') {
            error.get_or_insert_with(|| e.to_string());
            continue;
        }
        if job.copy || setup_error.is_some() {
            continue;
        }
        let unchanged = eng
            .peek_value(job.tenant, k)
            .and_then(rdb::encode)
            .is_some_and(|now| now == *payload);
        if unchanged && eng.delete(job.tenant, k) {
            shared.key_changed(job.tenant, k);
            notify(shared, job.tenant, job.conn_db, GENERIC, "del", k);
        }
    }
    drop(eng);
    match error {
        Some(e) => w.error(&format!("ERR Target instance replied with error: {e}")),
        None => w.ok(),
    }
}
