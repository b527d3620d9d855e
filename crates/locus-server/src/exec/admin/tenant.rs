//! `LOCUS.TENANT`: list tenants, read and change per-tenant settings.

use locus_engine::TenantId;

use crate::config::parse_policy;
use crate::exec::privilege::{TENANT_SETTABLE, noperm};
use crate::exec::{Args, CmdError, CmdResult, Ctx, is, lower};
use crate::glob::glob_match;

use super::config::{POLICY_CHOICES, memory_value};

const TENANT_OPTIONS: [&str; 7] = [
    "maxmemory",
    "minmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "dump_load",
    "dump_load-state",
    "penalty_classes",
];

pub(super) fn tenant_option(ctx: &Ctx<'_>, t: TenantId, opt: &str) -> Option<String> {
    let c = ctx.eng.tenant_config(t);
    Some(match opt {
        "maxmemory" => c.max_bytes.unwrap_or(0).to_string(),
        "minmemory" => c.min_bytes.to_string(),
        "maxmemory-policy" => c.policy.name().to_string(),
        "maxmemory-samples" => c.samples.to_string(),
        // pRedis(auto)'s per-key classes: the most class pools (0 = one pool).
        "penalty_classes" => ctx.eng.penalty_classes(t).to_string(),
        // pRedis's dump/load: the setting, and whether the tenant is dumped now.
        "dump_load" => ctx
            .shared()
            .dumploads()
            .status(t)
            .map_or_else(|| "never".to_string(), |s| s.mode),
        "dump_load-state" => ctx
            .shared()
            .dumploads()
            .status(t)
            .map_or("resident", |s| s.state)
            .to_string(),
        _ => return None,
    })
}

/// `LOCUS.TENANT LIST | <name> GET <option|*> | <name> SET <option> <value>`
pub fn tenant(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let scope = ctx.conn.scope();
    if a.len() == 2 && is(&a[1], "list") {
        // A tenant lists itself only.
        let names: Vec<String> = ctx
            .shared()
            .tenancy()
            .names
            .iter()
            .filter(|(_, id)| scope.is_none_or(|s| s == Some(*id)))
            .map(|(n, _)| n.clone())
            .collect();
        ctx.w.array(names.len());
        for n in names {
            ctx.w.bulk(n.as_bytes());
        }
        return Ok(());
    }
    if a.len() < 4 {
        return Err(CmdError::WrongArity("locus.tenant".into()));
    }
    let name = String::from_utf8_lossy(&a[1]).into_owned();
    let t = ctx.shared().tenancy().by_name(&name);
    let t = match (scope, t) {
        (None, Some(t)) => t,
        (None, None) => return Err(CmdError::msg(format!("ERR no such tenant '{name}'"))),
        // Another tenant's name and an unknown one get the same answer: names do not leak.
        (Some(own), t) if t.is_none() || t != own => return Err(noperm("locus.tenant")),
        (Some(_), Some(t)) => t,
        (Some(_), None) => unreachable!("matched above"),
    };
    let opt = lower(&a[3]);
    let bad_opt = || {
        CmdError::msg(format!(
            "ERR unknown tenant option '{opt}' (one of {})",
            TENANT_OPTIONS.join(", ")
        ))
    };
    if is(&a[2], "get") && a.len() == 4 {
        let opts: Vec<&str> = TENANT_OPTIONS
            .iter()
            .copied()
            .filter(|o| glob_match(opt.as_bytes(), o.as_bytes(), true))
            .collect();
        if opts.is_empty() {
            return Err(bad_opt());
        }
        ctx.w.map(opts.len());
        for o in opts {
            let v = tenant_option(ctx, t, o).unwrap_or_default();
            ctx.w.bulk(o.as_bytes());
            ctx.w.bulk(v.as_bytes());
        }
        return Ok(());
    }
    if !(is(&a[2], "set") && a.len() == 5) {
        return Err(CmdError::Syntax);
    }
    if scope.is_some() && !TENANT_SETTABLE.contains(&opt.as_str()) {
        return Err(noperm("locus.tenant|set"));
    }
    set_option(ctx, t, &opt, &a[4], "LOCUS.TENANT SET")?;
    ctx.w.ok();
    Ok(())
}

/// Sets one per-tenant option of tenant `t` (`what` names the command in errors).
pub(super) fn set_option(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    opt: &str,
    v: &[u8],
    what: &str,
) -> Result<(), CmdError> {
    let fail = |why: String| CmdError::msg(format!("ERR {what} {opt} failed - {why}"));
    let bad_opt = || {
        CmdError::msg(format!(
            "ERR unknown tenant option '{opt}' (one of {})",
            TENANT_OPTIONS.join(", ")
        ))
    };
    let cur = ctx.eng.tenant_config(t).clone();
    match opt {
        "maxmemory" => {
            let b = memory_value("maxmemory", v)?;
            let server = ctx.eng.config().maxmemory;
            if b > server {
                // A cap the server can never give (see config validation).
                return Err(fail(format!("{b} exceeds the server's maxmemory {server}")));
            }
            let max = if b == 0 { None } else { Some(b) };
            ctx.eng
                .set_budget(t, cur.min_bytes, max)
                .map_err(|e| fail(e.to_string()))?;
        }
        "minmemory" => {
            let b = memory_value("minmemory", v)?;
            ctx.eng
                .set_budget(t, b, cur.max_bytes)
                .map_err(|e| fail(e.to_string()))?;
        }
        "maxmemory-policy" => {
            let p = parse_policy(&String::from_utf8_lossy(v))
                .map_err(|_| fail(POLICY_CHOICES.to_string()))?;
            ctx.eng.set_policy(t, p);
        }
        "maxmemory-samples" => {
            let k = crate::exec::parse_i64(v)
                .filter(|k| (1..=64).contains(k))
                .ok_or_else(|| fail("argument must be between 1 and 64 inclusive".into()))?;
            ctx.eng
                .set_samples(t, k as u32)
                .map_err(|e| fail(e.to_string()))?;
        }
        "dump_load" | "dump_load-state" => {
            return Err(fail(
                "read-only: set in the configuration ([[tenant]] dump_load)".into(),
            ));
        }
        "penalty_classes" => {
            return Err(fail(
                "read-only: set in the configuration ([[tenant]] penalty_classes)".into(),
            ));
        }
        _ => return Err(bad_opt()),
    }
    Ok(())
}
