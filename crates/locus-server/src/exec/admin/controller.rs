//! `LOCUS.CONTROLLER`: the memory controller's state, targets, decision log; decide now; replace it.

use locus_engine::control::IntervalRecord;

use crate::exec::{Args, CmdError, CmdResult, Ctx, lower};

use super::{help, unknown_sub};

/// Decisions `LOCUS.CONTROLLER RECORDS` returns without a count.
const DEFAULT_RECORDS: usize = 10;

/// The error for subcommands that need a running controller.
pub(super) fn no_controller() -> CmdError {
    CmdError::msg(
        "ERR no memory controller is running (set [controller] name in the configuration)",
    )
}

/// Pool names in pool order: a tenant's own pool has its name, a class pool of per-key
/// penalty classes `<tenant>/class<k>`.
pub(super) fn pool_names(ctx: &Ctx<'_>) -> Vec<String> {
    (0..ctx.eng.pool_count() as u32)
        .map(|i| {
            let p = locus_engine::PoolId(i);
            let t = ctx.eng.tenant_of_pool(p);
            let name = ctx.shared().tenancy().name(t);
            if t.0 == i {
                name.to_string()
            } else {
                let own = ctx.eng.pool_name(p);
                let suffix = own.rfind('/').map_or(own, |j| &own[j..]);
                format!("{name}{suffix}")
            }
        })
        .collect()
}

/// A map from tenant name to one value per pool, written by `each`.
pub(super) fn per_pool<T>(
    ctx: &mut Ctx<'_>,
    names: &[String],
    vals: &[T],
    each: fn(&mut Ctx<'_>, &T),
) {
    let n = names.len().min(vals.len());
    ctx.w.map(n);
    for (name, v) in names.iter().zip(vals).take(n) {
        ctx.w.bulk(name.as_bytes());
        each(ctx, v);
    }
}

pub(super) fn write_u64(ctx: &mut Ctx<'_>, v: &u64) {
    ctx.w.integer(i64::try_from(*v).unwrap_or(i64::MAX));
}

pub(super) fn write_u32(ctx: &mut Ctx<'_>, v: &u32) {
    ctx.w.integer(i64::from(*v));
}

pub(super) fn write_f64(ctx: &mut Ctx<'_>, v: &f64) {
    ctx.w.double(*v);
}

pub(super) fn write_target(ctx: &mut Ctx<'_>, v: &Option<u64>) {
    match v {
        Some(x) => write_u64(ctx, x),
        None => ctx.w.null(),
    }
}

/// One decision as a map (RESP3) / flat key-value array (RESP2).
pub(super) fn write_record(ctx: &mut Ctx<'_>, names: &[String], r: &IntervalRecord) {
    ctx.w.map(13);
    for (k, v) in [
        ("interval", r.interval),
        ("at_us", r.at_us),
        ("at_request", r.at_request),
        ("moves", r.moves_done),
        ("evicted_by_moves", r.items_evicted_by_moves),
    ] {
        ctx.w.bulk(k.as_bytes());
        write_u64(ctx, &v);
    }
    ctx.w.bulk(b"pages");
    per_pool(ctx, names, &r.pages, write_u64);
    ctx.w.bulk(b"targets");
    per_pool(ctx, names, &r.targets, write_target);
    ctx.w.bulk(b"samples");
    per_pool(ctx, names, &r.samples, write_u32);
    ctx.w.bulk(b"penalty_us");
    per_pool(ctx, names, &r.penalty_us, write_f64);
    ctx.w.bulk(b"hits");
    per_pool(ctx, names, &r.hits, write_u64);
    ctx.w.bulk(b"misses");
    per_pool(ctx, names, &r.misses, write_u64);
    ctx.w.bulk(b"notes");
    ctx.w.map(r.notes.len());
    for (k, v) in &r.notes {
        ctx.w.bulk(k.as_bytes());
        ctx.w.double(*v);
    }
    ctx.w.bulk(b"curves");
    ctx.w.array(r.curves.len());
    for c in &r.curves {
        ctx.w.map(3);
        ctx.w.bulk(b"tenant");
        let name = names.get(c.pool.0 as usize).map_or("?", String::as_str);
        ctx.w.bulk(name.as_bytes());
        ctx.w.bulk(b"label");
        ctx.w.bulk(c.label.as_bytes());
        ctx.w.bulk(b"points");
        ctx.w.integer(c.mrc.points().len() as i64);
    }
}

/// `LOCUS.CONTROLLER INFO`: the controller and every tenant's pages, target, K and penalty.
pub(super) fn controller_info(ctx: &mut Ctx<'_>) {
    let names = pool_names(ctx);
    let st = ctx.eng.stats();
    let cc = ctx.eng.control_config();
    let targets = ctx.eng.targets();
    ctx.w.map(9);
    ctx.w.bulk(b"controller");
    let name = ctx
        .eng
        .controller_name()
        .unwrap_or(crate::config::NO_CONTROLLER);
    ctx.w.bulk(name.as_bytes());
    ctx.w.bulk(b"interval");
    match cc {
        Some(c) => ctx.w.bulk(c.interval.to_string().as_bytes()),
        None => ctx.w.null(),
    }
    ctx.w.bulk(b"max_moves");
    match cc {
        Some(c) => ctx.w.integer(i64::from(c.max_moves)),
        None => ctx.w.null(),
    }
    let decisions = ctx.eng.control_decisions();
    let requests = ctx.eng.control_requests();
    // Whether a decision is due and waits for the tick task (decisions never run in a request).
    let due = u64::from(ctx.eng.decision_due());
    for (k, v) in [
        ("decisions", decisions),
        ("requests", requests),
        ("due", due),
        ("pages_total", st.pages_total),
        ("pages_used", st.pages_used),
    ] {
        ctx.w.bulk(k.as_bytes());
        write_u64(ctx, &v);
    }
    ctx.w.bulk(b"tenants");
    // Every pool: a tenant's own, then (per-key penalty classes) its class pools.
    let ids: Vec<locus_engine::PoolId> = ctx
        .eng
        .tenant_ids()
        .into_iter()
        .flat_map(|t| {
            let mut v = vec![locus_engine::PoolId(t.0)];
            v.extend(ctx.eng.pools_of(t).into_iter().skip(1));
            v
        })
        .collect();
    ctx.w.map(ids.len());
    for p in ids {
        let t = locus_engine::TenantId(p.0);
        let ts = ctx.eng.pool_stats_of(p);
        let (penalty, samples) = ctx.eng.penalty(t);
        let name = names.get(p.0 as usize).map_or("?", String::as_str);
        ctx.w.bulk(name.as_bytes());
        ctx.w.map(5);
        ctx.w.bulk(b"pages");
        write_u64(ctx, &ts.pages);
        ctx.w.bulk(b"target");
        write_target(ctx, &targets.get(t.0 as usize).copied().flatten());
        ctx.w.bulk(b"samples");
        write_u32(ctx, &ts.samples);
        ctx.w.bulk(b"penalty_us");
        ctx.w.double(penalty);
        ctx.w.bulk(b"penalty_samples");
        write_u64(ctx, &samples);
    }
}

/// `LOCUS.CONTROLLER SET name [INTERVAL i] [MAX_MOVES n] [setting value ...]`: builds the new
/// controller exactly as the `[controller]` section would (same validation, every problem
/// reported), then replaces the running one; nothing changes on an error. The new controller
/// starts from scratch (no curves, no decisions), targets of the old one are dropped, and the
/// running configuration's `[controller]` section is updated to match.
pub(super) fn controller_set(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() < 3 || a.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity("locus.controller|set".to_string()));
    }
    let text = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| CmdError::msg("ERR controller names and settings must be UTF-8"))
    };
    let mut sec = ctx.shared().config().controller.clone();
    sec.name = text(&a[2])?.to_ascii_lowercase();
    sec.settings.clear();
    for kv in a[3..].chunks(2) {
        let key = lower(&kv[0]);
        let value = text(&kv[1])?;
        match key.as_str() {
            "interval" => sec.interval = crate::config::TextOrNumber(value),
            "offload" => {
                sec.offload = match value.to_ascii_lowercase().as_str() {
                    "yes" | "on" | "true" | "1" => true,
                    "no" | "off" | "false" | "0" => false,
                    _ => return Err(CmdError::msg("ERR offload must be yes or no")),
                };
            }
            "max_moves" | "max-moves" => {
                sec.max_moves = value
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        CmdError::msg("ERR max_moves must be an integer of at least 1")
                    })?;
            }
            _ => {
                sec.settings.insert(key, toml::Value::String(value));
            }
        }
    }
    let problems = |p: Vec<String>| CmdError::msg(format!("ERR {}", p.join("; ")));
    let cfg = sec.control_config().map_err(|e| problems(vec![e]))?;
    let built = sec.build().map_err(problems)?;
    // A controller that needs memcached's class mode sets it; the others run in the default.
    ctx.eng.set_class_mode(locus_engine::ClassMode::Auto);
    match built {
        Some(ctl) => ctx.eng.set_controller(ctl, cfg),
        None => ctx.eng.clear_controller(),
    }
    ctx.shared().config_mut().controller = sec;
    if let Some(why) = ctx.eng.controller_offload_error() {
        // Installed and deciding, but on the data path: say so rather than a plain OK.
        return Err(CmdError::msg(format!(
            "ERR controller installed, running inline: {why}"
        )));
    }
    ctx.w.ok();
    Ok(())
}

/// `LOCUS.CONTROLLER INFO | TARGETS | RECORDS [count] | RUN | SET name ... | HELP`
pub fn controller(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let arity = |max: usize| {
        if a.len() > max {
            Err(CmdError::WrongArity(format!("locus.controller|{sub}")))
        } else {
            Ok(())
        }
    };
    match sub.as_str() {
        "info" => {
            arity(2)?;
            controller_info(ctx);
        }
        "targets" => {
            arity(2)?;
            let names = pool_names(ctx);
            let targets = ctx.eng.targets();
            per_pool(ctx, &names, &targets, write_target);
        }
        "records" => {
            arity(3)?;
            let count = match a.get(2) {
                None => DEFAULT_RECORDS,
                Some(c) => crate::exec::parse_i64(c)
                    .filter(|n| *n > 0)
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
                    .ok_or_else(|| CmdError::msg("ERR value is out of range, must be positive"))?,
            };
            let names = pool_names(ctx);
            let records = ctx.eng.control_records();
            let tail = &records[records.len().saturating_sub(count)..];
            ctx.w.array(tail.len());
            for r in tail {
                write_record(ctx, &names, r);
            }
        }
        "run" => {
            arity(2)?;
            if ctx.eng.controller_name().is_none() {
                return Err(no_controller());
            }
            ctx.eng.run_controller();
            let names = pool_names(ctx);
            let Some(r) = ctx.eng.last_control_record().cloned() else {
                return Err(no_controller());
            };
            write_record(ctx, &names, &r);
        }
        "set" => controller_set(ctx, a)?,
        "help" => {
            arity(2)?;
            help(
                ctx,
                &[
                    "LOCUS.CONTROLLER <subcommand> [<arg> ...]. Subcommands are:",
                    "INFO",
                    "    The memory controller (name, interval, decisions) and per tenant: pages, target, K, miss penalty.",
                    "TARGETS",
                    "    Page target per tenant (nil: none).",
                    "RECORDS [<count>]",
                    "    The last <count> decisions (default 10), oldest first: pages, targets, K, moves, notes.",
                    "RUN",
                    "    Decide now and return the decision.",
                    "SET <name> [INTERVAL <interval>] [MAX_MOVES <n>] [OFFLOAD yes|no] [<setting> <value> ...]",
                    "    Replace the running controller (NONE: the memory.partition arbiter). Interval,",
                    "    max_moves and offload (profile on a thread of its own) default to the configured ones;",
                    "    the other pairs are the controller's settings.",
                    "HELP",
                    "    Print this help.",
                ],
            );
        }
        _ => return Err(unknown_sub("locus.controller", &a[1])),
    }
    Ok(())
}
