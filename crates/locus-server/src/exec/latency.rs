//! `LATENCY LATEST | HISTORY | RESET | GRAPH | DOCTOR | HISTOGRAM | HELP` and
//! `latency-monitor-threshold`, as Redis 7.0's latency monitor.
//!
//! Events: with a threshold above 0 ms, a command that ran that long or longer is a sample of the
//! event `command` (`fast-command` for Redis's fast commands), and an active expiry cycle that
//! long a sample of `expire-cycle`. Each event keeps its latest 160 samples (one per second: two
//! in the same second keep the larger, as Redis) and its all-time maximum.
//!
//! Tenants: a tenant's commands are samples of its own log; the admin's commands and the server's
//! own work (the expiry cycle) go to the server's log. A tenant's LATENCY reads and resets its
//! own log; the admin's reads every log (an event's samples merged across them) and resets them
//! all. `LATENCY HISTOGRAM` reports the per-command latency distribution (INFO commandstats'
//! counts in power-of-two microsecond buckets, cumulative, each labelled as Redis labels it: see
//! [`redis_label`]): server-wide figures, so a tenant gets an empty map, as its INFO
//! commandstats is empty.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use locus_engine::TenantId;
use parking_lot::Mutex;

use super::{Args, CmdError, CmdResult, CommandSpec, Ctx, has_flag, lower};
use crate::server::{LATENCY_BUCKETS, Shared, latency_bucket};

/// `latency-monitor-threshold` in milliseconds (0: off, Redis's default).
pub static THRESHOLD_MS: AtomicU64 = AtomicU64::new(0);

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
const KEEP: usize = 160;

/// Whose log: the server's (`None`) or a tenant's.
type Owner = Option<TenantId>;

#[derive(Default, Clone)]
struct Series {
    /// (unix seconds, milliseconds), oldest first.
    samples: VecDeque<(u64, u64)>,
    max: u64,
}

static EVENTS: LazyLock<Mutex<HashMap<(Owner, &'static str), Series>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// One subcommand's calls and duration buckets.
struct SubHist {
    calls: AtomicU64,
    buckets: [AtomicU64; LATENCY_BUCKETS],
}

impl SubHist {
    fn load(&self) -> (u64, Vec<u64>) {
        (
            self.calls.load(Ordering::Relaxed),
            self.buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
        )
    }
}

/// Per-subcommand histograms (`client|id`, ...), one for every subcommand of the table, made
/// once: recording a call is two atomic increments, with no lock and no allocation. The other
/// commands use INFO commandstats' own counters.
static SUBS: LazyLock<HashMap<&'static str, SubHist>> = LazyLock::new(|| {
    super::table::COMMANDS
        .iter()
        .flat_map(|spec| spec.subcommands.iter().copied())
        .map(|name| {
            let hist = SubHist {
                calls: AtomicU64::new(0),
                buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            };
            (name, hist)
        })
        .collect()
});

/// The table's `name|sub` entry of `spec` that the argument `sub` names, in any case.
fn subcommand_of(spec: &CommandSpec, sub: &[u8]) -> Option<&'static str> {
    let skip = spec.name.len() + 1;
    spec.subcommands.iter().copied().find(|full| {
        full.len() == skip + sub.len() && full.as_bytes()[skip..].eq_ignore_ascii_case(sub)
    })
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Adds a sample of `event` to `owner`'s log when `ms` reaches the threshold.
pub fn add_sample_if_needed(owner: Owner, event: &'static str, ms: u64) {
    let th = THRESHOLD_MS.load(Ordering::Relaxed);
    if th == 0 || ms < th {
        return;
    }
    let now = unix_now();
    let mut ev = EVENTS.lock();
    let s = ev.entry((owner, event)).or_default();
    s.max = s.max.max(ms);
    match s.samples.back_mut() {
        Some((t, v)) if *t == now => *v = (*v).max(ms),
        _ => {
            s.samples.push_back((now, ms));
            if s.samples.len() > KEEP {
                s.samples.pop_front();
            }
        }
    }
}

/// The dispatcher's hook after a command ran `nanos`: its latency event, and the histogram of
/// a container command's subcommand.
pub fn record(ctx: &Ctx<'_>, spec: &CommandSpec, a: Args<'_, '_>, nanos: u64) {
    if !spec.subcommands.is_empty()
        && let Some(sub) = a.get(1)
        && let Some(hist) = subcommand_of(spec, sub).and_then(|full| SUBS.get(full))
    {
        hist.calls.fetch_add(1, Ordering::Relaxed);
        hist.buckets[latency_bucket(nanos)].fetch_add(1, Ordering::Relaxed);
    }
    if THRESHOLD_MS.load(Ordering::Relaxed) == 0 {
        return;
    }
    let owner = match ctx.conn.scope() {
        None => None,
        Some(Some(t)) => Some(t),
        Some(None) => return,
    };
    let event = if has_flag(spec.flags, "fast") {
        "fast-command"
    } else {
        "command"
    };
    add_sample_if_needed(owner, event, nanos / 1_000_000);
}

/// CONFIG RESETSTAT: the per-command figures (INFO commandstats, LATENCY HISTOGRAM) start over.
pub fn reset_command_stats(shared: &Shared) {
    for spec in super::table::COMMANDS {
        let c = shared.stats().commands.of(spec);
        for x in [&c.calls, &c.nanos, &c.rejected, &c.failed] {
            x.store(0, Ordering::Relaxed);
        }
        for b in &c.durations {
            b.store(0, Ordering::Relaxed);
        }
    }
    super::errorstats::reset();
    for hist in SUBS.values() {
        hist.calls.store(0, Ordering::Relaxed);
        for b in &hist.buckets {
            b.store(0, Ordering::Relaxed);
        }
    }
}

/// The events `scope` may see, merged by name: name -> series.
fn visible(scope: Option<Option<TenantId>>) -> BTreeMap<&'static str, Series> {
    let ev = EVENTS.lock();
    let mut out: BTreeMap<&'static str, Series> = BTreeMap::new();
    for ((owner, name), s) in ev.iter() {
        if scope.is_some_and(|sc| sc.is_none() || *owner != sc) {
            continue;
        }
        let m = out.entry(name).or_default();
        m.max = m.max.max(s.max);
        m.samples.extend(s.samples.iter().copied());
    }
    for s in out.values_mut() {
        s.samples.make_contiguous().sort_unstable();
    }
    out
}

fn write_histogram(ctx: &mut Ctx<'_>, name: &str, calls: u64, buckets: &[u64]) {
    ctx.w.bulk(name.as_bytes());
    ctx.w.map(2);
    ctx.w.bulk(b"calls");
    ctx.w.integer(calls as i64);
    ctx.w.bulk(b"histogram_usec");
    let nonempty = buckets.iter().filter(|&&n| n > 0).count();
    ctx.w.map(nonempty);
    let mut cumulative = 0;
    for (i, &n) in buckets.iter().enumerate() {
        if n == 0 {
            continue;
        }
        cumulative += n;
        ctx.w.integer(redis_label(i));
        ctx.w.integer(cumulative as i64);
    }
}

/// The microseconds Redis prints for its `i`-th power-of-two bucket.
///
/// Redis reports at 1024·2^i ns, each figure the highest value its HDR histogram (two
/// significant digits: 256 sub-buckets, so 2^(i+3) ns wide there) takes as equal to it, in whole
/// microseconds: 1, 2, 4, 8, 16, 33, 66, 132, 264, ... Clients and dashboards that read Redis's
/// output see the same keys here. Locus's bucket `i` holds calls of at most 2^i µs, which are all
/// at most the label too, so each cumulative count is true of its label.
fn redis_label(i: usize) -> i64 {
    let highest_ns = (129u64 << (3 + i.min(40))) - 1;
    (highest_ns / 1000) as i64
}

/// `LATENCY HISTOGRAM [command ...]`
fn histogram(ctx: &mut Ctx<'_>, a: Args<'_, '_>) {
    // (name, calls, buckets) of every command or subcommand asked for (all when none is).
    let mut rows: Vec<(String, u64, Vec<u64>)> = Vec::new();
    if ctx.conn.scope().is_none() {
        let sub_rows = |name: &str| {
            SUBS.get(name)
                .map(SubHist::load)
                .filter(|(calls, _)| *calls > 0)
        };
        let plain = |spec: &CommandSpec| {
            let c = ctx.shared().stats().commands.of(spec);
            let calls = c.calls.load(Ordering::Relaxed);
            (calls > 0).then(|| {
                (
                    spec.name.to_string(),
                    calls,
                    c.durations
                        .iter()
                        .map(|b| b.load(Ordering::Relaxed))
                        .collect(),
                )
            })
        };
        let of_parent = |spec: &CommandSpec, rows: &mut Vec<(String, u64, Vec<u64>)>| {
            if spec.subcommands.is_empty() {
                rows.extend(plain(spec));
            } else {
                for sub in spec.subcommands {
                    if let Some((calls, b)) = sub_rows(sub) {
                        rows.push((sub.to_string(), calls, b));
                    }
                }
            }
        };
        if a.len() == 2 {
            for spec in super::table::COMMANDS {
                of_parent(spec, &mut rows);
            }
        } else {
            for name in &a[2..] {
                let name = lower(name);
                if rows.iter().any(|r| r.0 == name) {
                    continue;
                }
                if SUBS.contains_key(name.as_str()) {
                    if let Some((calls, b)) = sub_rows(&name) {
                        rows.push((name, calls, b));
                    }
                } else if let Some(spec) = super::lookup(name.as_bytes()) {
                    of_parent(spec, &mut rows);
                }
            }
        }
    }
    ctx.w.map(rows.len());
    for (name, calls, b) in rows {
        write_histogram(ctx, &name, calls, &b);
    }
}

/// A text chart of a series (LATENCY GRAPH): one column per sample, scaled between its lowest
/// and highest value, with the sample's age under it.
fn graph(name: &str, s: &Series) -> String {
    const ROWS: u64 = 4;
    let hi = s.samples.iter().map(|x| x.1).max().unwrap_or(0);
    let lo = s.samples.iter().map(|x| x.1).min().unwrap_or(0);
    let mut out = format!(
        "{name} - high {hi} ms, low {lo} ms (all time high {} ms)\n",
        s.max
    );
    out.push_str(&"-".repeat(80));
    out.push('\n');
    let shown: Vec<(u64, u64)> = s.samples.iter().rev().take(80).rev().copied().collect();
    for row in (1..=ROWS).rev() {
        let line: String = shown
            .iter()
            .map(|&(_, v)| {
                let h = if hi == lo {
                    ROWS
                } else {
                    1 + (v - lo) * (ROWS - 1) / (hi - lo)
                };
                if h >= row { '#' } else { ' ' }
            })
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let now = unix_now();
    let ages: Vec<String> = shown
        .iter()
        .map(|&(t, _)| {
            let age = now.saturating_sub(t);
            if age < 60 {
                format!("{age}s")
            } else if age < 3600 {
                format!("{}m", age / 60)
            } else {
                format!("{}h", age / 3600)
            }
        })
        .collect();
    // Ages written vertically, one character per row, under their column.
    let tall = ages.iter().map(String::len).max().unwrap_or(0);
    for i in 0..tall {
        let line: String = ages
            .iter()
            .map(|a| a.as_bytes().get(i).map_or(' ', |&c| c as char))
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// LATENCY DOCTOR's report.
fn doctor(scope: Option<Option<TenantId>>) -> String {
    let th = THRESHOLD_MS.load(Ordering::Relaxed);
    let events = visible(scope);
    let mut out = String::new();
    if th == 0 {
        out.push_str(
            "Latency monitoring is off (latency-monitor-threshold is 0). Turn it on with CONFIG SET latency-monitor-threshold <milliseconds>: events that take that long or longer are then recorded.\n",
        );
        return out;
    }
    if events.is_empty() {
        let _ = writeln!(
            out,
            "No latency event of {th} ms or more was recorded since the monitor was reset. Nothing to report."
        );
        return out;
    }
    let _ = writeln!(
        out,
        "Latency events of {th} ms or more recorded since the last reset:\n"
    );
    for (i, (name, s)) in events.iter().enumerate() {
        let n = s.samples.len() as u64;
        let sum: u64 = s.samples.iter().map(|x| x.1).sum();
        let avg = sum / n.max(1);
        let dev = s.samples.iter().map(|x| x.1.abs_diff(avg)).sum::<u64>() / n.max(1);
        let period = match (s.samples.front(), s.samples.back()) {
            (Some(a), Some(b)) if n > 1 => (b.0 - a.0) / (n - 1),
            _ => 0,
        };
        let _ = writeln!(
            out,
            "{}. {name}: {n} latency spikes (average {avg}ms, mean deviation {dev}ms, period {period} sec). Worst all time event {}ms.",
            i + 1,
            s.max
        );
    }
    out.push('\n');
    if events.contains_key("command") || events.contains_key("fast-command") {
        out.push_str("- Slow commands: SLOWLOG GET shows which ones; commands over large values (SORT, SUNION, LRANGE of long lists, KEYS) grow with their input, and Lua scripts hold the server while they run.\n");
    }
    if events.contains_key("fast-command") {
        out.push_str("- A command flagged fast (O(1) or O(log N)) was slow: the machine itself was probably busy (another process, swapping, a noisy neighbour on a shared host).\n");
    }
    if events.contains_key("expire-cycle") {
        out.push_str("- The expiry cycle was slow: many keys expiring at once, or large values freed when they expire; spread TTLs out, or delete large keys with UNLINK before they expire.\n");
    }
    out
}

/// `LATENCY <subcommand>`
pub fn latency(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let scope = ctx.conn.scope();
    let arity = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(CmdError::WrongArity(format!("latency|{sub}")))
        }
    };
    match sub.as_str() {
        "latest" => {
            arity(a.len() == 2)?;
            let ev = visible(scope);
            ctx.w.array(ev.len());
            for (name, s) in ev {
                let (t, v) = s.samples.back().copied().unwrap_or((0, 0));
                ctx.w.array(4);
                ctx.w.bulk(name.as_bytes());
                ctx.w.integer(t as i64);
                ctx.w.integer(v as i64);
                ctx.w.integer(s.max as i64);
            }
        }
        "history" => {
            arity(a.len() == 3)?;
            let ev = visible(scope);
            let name = String::from_utf8_lossy(&a[2]).into_owned();
            let samples = ev.get(name.as_str()).map(|s| s.samples.clone());
            let samples = samples.unwrap_or_default();
            ctx.w.array(samples.len());
            for (t, v) in samples {
                ctx.w.array(2);
                ctx.w.integer(t as i64);
                ctx.w.integer(v as i64);
            }
        }
        "reset" => {
            let mut ev = EVENTS.lock();
            let names: Vec<String> = a[2..]
                .iter()
                .map(|x| String::from_utf8_lossy(x).into_owned())
                .collect();
            let mut reset = std::collections::BTreeSet::new();
            ev.retain(|(owner, name), _| {
                let mine = scope.is_none_or(|sc| sc.is_some() && *owner == sc);
                let named = names.is_empty() || names.iter().any(|n| n == name);
                if mine && named {
                    reset.insert(*name);
                }
                !(mine && named)
            });
            // The events reset (by name, each counted once).
            let n = reset.len();
            ctx.w.integer(n as i64);
        }
        "graph" => {
            arity(a.len() == 3)?;
            let name = String::from_utf8_lossy(&a[2]).into_owned();
            let ev = visible(scope);
            let Some(s) = ev.get(name.as_str()).filter(|s| !s.samples.is_empty()) else {
                return Err(CmdError::msg(format!(
                    "ERR No samples available for event '{name}'"
                )));
            };
            let text = graph(&name, s);
            ctx.w.verbatim("txt", text.as_bytes());
        }
        "doctor" => {
            arity(a.len() == 2)?;
            let text = doctor(scope);
            ctx.w.verbatim("txt", text.as_bytes());
        }
        "histogram" => histogram(ctx, a),
        "help" => {
            arity(a.len() == 2)?;
            super::admin::help(
                ctx,
                &[
                    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "DOCTOR",
                    "    A report, in words, on the latency events recorded.",
                    "GRAPH <event>",
                    "    A text chart of the samples of <event>.",
                    "HISTORY <event>",
                    "    The samples of <event>: [unix time, milliseconds] pairs.",
                    "LATEST",
                    "    Every event's latest sample and all-time maximum.",
                    "RESET [<event> ...]",
                    "    Forget the samples of the <event>s named (of every event when none is).",
                    "HISTOGRAM [COMMAND ...]",
                    "    Per-command latency distributions (cumulative counts per power-of-two",
                    "    microsecond bucket) of the commands named, or of every command called.",
                    "HELP",
                    "    Print this help.",
                ],
            );
        }
        _ => return Err(super::admin::unknown_sub("latency", &a[1])),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::redis_label;

    #[test]
    fn histogram_keys_are_the_ones_redis_prints() {
        // Redis 7.0's LATENCY HISTOGRAM keys, the last two as seen from a slow SET (264).
        let first: Vec<i64> = (0..9).map(redis_label).collect();
        assert_eq!(first, [1, 2, 4, 8, 16, 33, 66, 132, 264]);
        assert_eq!(redis_label(20), 1_082_130);
    }
}
