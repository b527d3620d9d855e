//! `SLOWLOG GET [count] | LEN | RESET | HELP`: the commands that ran longer than
//! `slowlog-log-slower-than` microseconds (-1: none; 0: every command), as Redis 7.0 logs them.
//!
//! An entry is Redis's six fields: a unique id, the Unix time, the duration in microseconds, the
//! arguments (at most 32: the 32nd says how many more there were; each at most 128 bytes, then
//! how many more bytes), the client's `ip:port` and its name. The dispatcher records a command
//! after it ran (so `SLOWLOG RESET` is itself the first entry after a reset), not EXEC itself
//! (`skip_slowlog`) but each command it runs, and a blocked command when it is served, not when
//! it blocks.
//!
//! Tenants: each tenant has its own log of up to `slowlog-max-len` entries, holding the
//! commands of its connections; a tenant's SLOWLOG reads and resets its own log only. The
//! admin's connections log to the admin's own log, and the admin's SLOWLOG reads (and resets)
//! every log, newest first, so its LEN may pass `slowlog-max-len` when several tenants log.
//! Memory is bounded: entries per log and bytes per entry are capped.

use std::collections::{HashMap, VecDeque};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use locus_engine::TenantId;
use parking_lot::Mutex;

use super::{Args, CmdError, CmdResult, CommandSpec, Ctx, has_flag, lower, parse_i64};

/// `slowlog-log-slower-than` (microseconds; negative: off).
pub static LOG_SLOWER_THAN: AtomicI64 = AtomicI64::new(10_000);
/// `slowlog-max-len` (entries per log).
pub static MAX_LEN: AtomicU64 = AtomicU64::new(128);

/// Arguments kept per entry (Redis's `SLOWLOG_ENTRY_MAX_ARGC`).
const MAX_ARGC: usize = 32;
/// Bytes kept per argument (Redis's `SLOWLOG_ENTRY_MAX_STRING`).
const MAX_STRING: usize = 128;

struct Entry {
    id: u64,
    time: u64,
    micros: u64,
    args: Vec<Vec<u8>>,
    peer: String,
    name: String,
}

/// Whose log: the admin's (`None`) or a tenant's.
type Owner = Option<TenantId>;

#[derive(Default)]
struct Log {
    next_id: u64,
    logs: HashMap<Owner, VecDeque<Entry>>,
}

static LOG: LazyLock<Mutex<Log>> = LazyLock::new(|| Mutex::new(Log::default()));

/// The log a connection of `scope` (`ConnState::scope`) writes to: the admin's (`None`), or its
/// tenant's. A tenant connection not bound to a tenant yet logs nowhere.
fn owner_of(scope: Option<Option<TenantId>>) -> Option<Owner> {
    match scope {
        None => Some(None),
        Some(Some(t)) => Some(Some(t)),
        Some(None) => None,
    }
}

/// The arguments as Redis keeps them.
fn trimmed(a: Args<'_, '_>) -> Vec<Vec<u8>> {
    let keep = if a.len() > MAX_ARGC {
        MAX_ARGC - 1
    } else {
        a.len()
    };
    let mut out: Vec<Vec<u8>> = a[..keep]
        .iter()
        .map(|x| {
            if x.len() > MAX_STRING {
                let mut v = x[..MAX_STRING].to_vec();
                v.extend_from_slice(
                    format!("... ({} more bytes)", x.len() - MAX_STRING).as_bytes(),
                );
                v
            } else {
                x.to_vec()
            }
        })
        .collect();
    if a.len() > MAX_ARGC {
        out.push(format!("... ({} more arguments)", a.len() - keep).into_bytes());
    }
    out
}

/// Records the command that just ran, when it took `took` or more than the threshold. The
/// dispatcher calls it after every command it executed.
pub fn record(ctx: &Ctx<'_>, spec: &CommandSpec, a: Args<'_, '_>, took: Duration) {
    let threshold = LOG_SLOWER_THAN.load(Ordering::Relaxed);
    if threshold < 0 || has_flag(spec.flags, "skip_slowlog") {
        return;
    }
    let micros = took.as_micros() as u64;
    if micros < threshold as u64 {
        return;
    }
    // Blocked (not served yet): logged when it is served.
    if ctx.conn.block.waits() {
        return;
    }
    let Some(owner) = owner_of(ctx.conn.scope()) else {
        return;
    };
    let max = MAX_LEN.load(Ordering::Relaxed) as usize;
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let addr = ctx.conn.info.addr;
    let entry = Entry {
        id: 0,
        time,
        micros,
        args: trimmed(a),
        peer: format!("{}:{}", addr.ip(), addr.port()),
        name: ctx.conn.info.name.lock().clone(),
    };
    let mut log = LOG.lock();
    let id = log.next_id;
    log.next_id += 1;
    let ring = log.logs.entry(owner).or_default();
    ring.push_front(Entry { id, ..entry });
    ring.truncate(max);
}

/// `SLOWLOG <subcommand>`
pub fn slowlog(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let scope = ctx.conn.scope();
    let visible = |o: &Owner| scope.is_none() || owner_of(scope).as_ref() == Some(o);
    match sub.as_str() {
        "get" if a.len() <= 3 => {
            let count = match a.get(2) {
                None => 10,
                Some(c) => parse_i64(c).filter(|&n| n >= -1).ok_or_else(|| {
                    CmdError::msg("ERR count should be greater than or equal to -1")
                })?,
            };
            let log = LOG.lock();
            let mut shown: Vec<&Entry> = log
                .logs
                .iter()
                .filter(|(o, _)| visible(o))
                .flat_map(|(_, r)| r.iter())
                .collect();
            shown.sort_by_key(|e| std::cmp::Reverse(e.id));
            if count >= 0 {
                shown.truncate(count as usize);
            }
            ctx.w.array(shown.len());
            for e in shown {
                ctx.w.array(6);
                ctx.w.integer(e.id as i64);
                ctx.w.integer(e.time as i64);
                ctx.w.integer(e.micros as i64);
                ctx.w.array(e.args.len());
                for x in &e.args {
                    ctx.w.bulk(x);
                }
                ctx.w.bulk(e.peer.as_bytes());
                ctx.w.bulk(e.name.as_bytes());
            }
        }
        "len" if a.len() == 2 => {
            let log = LOG.lock();
            let n: usize = log
                .logs
                .iter()
                .filter(|(o, _)| visible(o))
                .map(|(_, r)| r.len())
                .sum();
            ctx.w.integer(n as i64);
        }
        "reset" if a.len() == 2 => {
            LOG.lock().logs.retain(|o, _| !visible(o));
            ctx.w.ok();
        }
        "help" if a.len() == 2 => super::admin::help(
            ctx,
            &[
                "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET [<count>]",
                "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
                "    Entries are made of:",
                "    id, timestamp, time in microseconds, arguments array, client IP and port,",
                "    client name",
                "LEN",
                "    Return the length of the slowlog.",
                "RESET",
                "    Reset the slowlog.",
                "HELP",
                "    Print this help.",
            ],
        ),
        "get" | "len" | "reset" | "help" => {
            return Err(CmdError::WrongArity(format!("slowlog|{sub}")));
        }
        _ => return Err(super::admin::unknown_sub("slowlog", &a[1])),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    #[test]
    fn long_commands_are_trimmed_as_redis() {
        let many: Vec<Cow<'static, [u8]>> = (0..33)
            .map(|i| Cow::Owned(i.to_string().into_bytes()))
            .collect();
        let t = trimmed(&many);
        assert_eq!(t.len(), 32);
        assert_eq!(t[30], b"30");
        assert_eq!(t[31], b"... (2 more arguments)");
        let long = vec![Cow::Owned(vec![b'A'; 129])];
        let t = trimmed(&long);
        assert_eq!(t[0].len(), 128 + "... (1 more bytes)".len());
        assert!(t[0].ends_with(b"A... (1 more bytes)"));
    }
}
