//! `LOCUS.MRC <tenant> [POINTS n]` and `LOCUS.MRC <tenant> MEMORY-FOR <hit-ratio>`: a tenant's
//! current miss ratio curve, as the profiler of its memory controller built it at its newest
//! decision (the same curve `/api/curves` and the live page show), and the memory that curve
//! says the tenant needs for a hit ratio.
//!
//! The curve is the controller's: `kredis` records KRR curves per K and their merge (`mmrc`,
//! the one answered), or one EAET curve with `model = "eaet"`; `dlru` miniature simulations;
//! `lama` footprint curves per class; and so on (the reply's `model` names it). Capacities are
//! turned into bytes of pages through the controller's units per page (objects or bytes a page
//! holds). Without a controller, or before its first decision with a curve of this tenant,
//! there is no curve and the command says so.
//!
//! Privileges: a tenant asks about itself only (another tenant's name and an unknown one get the
//! same NOPERM, so names do not leak); the admin about any tenant.

use super::controller::no_controller;
use crate::exec::privilege::noperm;
use crate::exec::{Args, CmdError, CmdResult, Ctx, int_arg, is, parse_f64};
use crate::metrics::snapshot::tenant_curves;

/// Most points `POINTS` may ask for.
pub const MAX_POINTS: i64 = 10_000;

/// `LOCUS.MRC <tenant> [POINTS n] | <tenant> MEMORY-FOR <hit-ratio>`.
pub fn mrc(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() != 2 && a.len() != 4 {
        return Err(CmdError::WrongArity("locus.mrc".into()));
    }
    let name = String::from_utf8_lossy(&a[1]).into_owned();
    let t = ctx.shared().tenancy().by_name(&name);
    let t = match (ctx.conn.scope(), t) {
        (None, Some(t)) => t,
        (None, None) => return Err(CmdError::msg(format!("ERR no such tenant '{name}'"))),
        (Some(own), Some(t)) if own == Some(t) => t,
        (Some(_), _) => return Err(noperm("locus.mrc")),
    };
    enum Ask {
        Curve(Option<usize>),
        MemoryFor(f64),
    }
    let ask = if a.len() == 2 {
        Ask::Curve(None)
    } else if is(&a[2], "points") {
        let n = int_arg(&a[3])?;
        if !(2..=MAX_POINTS).contains(&n) {
            return Err(CmdError::msg(format!(
                "ERR POINTS must be between 2 and {MAX_POINTS}"
            )));
        }
        Ask::Curve(Some(n as usize))
    } else if is(&a[2], "memory-for") {
        let h = parse_f64(&a[3])
            .filter(|h| (0.0..=1.0).contains(h))
            .ok_or_else(|| CmdError::msg("ERR MEMORY-FOR needs a hit ratio between 0 and 1"))?;
        Ask::MemoryFor(h)
    } else {
        return Err(CmdError::Syntax);
    };
    let Some(controller) = ctx.eng.controller_name() else {
        return Err(no_controller());
    };
    let page_size = ctx.eng.config().page_size;
    let curves = tenant_curves(ctx.eng, t)
        .filter(|c| c.main_curve().is_some())
        .ok_or_else(|| {
            CmdError::msg(format!(
                "ERR no miss ratio curve for tenant '{name}' yet: the '{controller}' controller \
                 has not recorded one (LOCUS.CONTROLLER RUN decides now)"
            ))
        })?;
    let Some(main) = curves.main_curve() else {
        return Err(no_controller());
    };
    let upp = curves.units_per_page.ok_or_else(|| {
        CmdError::msg(format!(
            "ERR tenant '{name}' holds no items: its curve cannot be placed in bytes yet"
        ))
    })?;
    match ask {
        Ask::MemoryFor(h) => match curves.memory_for(h, page_size) {
            Some(b) => ctx.w.integer(i64::try_from(b).unwrap_or(i64::MAX)),
            None => ctx.w.null(),
        },
        Ask::Curve(n) => {
            let mrc = &main.mrc;
            let points: Vec<(f64, f64)> = match n {
                None => mrc.points().to_vec(),
                Some(n) => {
                    let max = mrc.points().last().map_or(0.0, |p| p.0);
                    let caps: Vec<f64> = (0..n).map(|i| max * i as f64 / (n - 1) as f64).collect();
                    caps.iter().map(|&c| (c, mrc.miss_ratio(c))).collect()
                }
            };
            ctx.w.map(9);
            ctx.w.bulk(b"tenant");
            ctx.w.bulk(name.as_bytes());
            ctx.w.bulk(b"controller");
            ctx.w.bulk(controller.as_bytes());
            ctx.w.bulk(b"model");
            ctx.w.bulk(main.label.as_bytes());
            ctx.w.bulk(b"decision");
            ctx.w.integer(curves.decision as i64);
            ctx.w.bulk(b"unit");
            ctx.w.bulk(mrc.unit().to_string().as_bytes());
            ctx.w.bulk(b"units_per_page");
            ctx.w.double(upp);
            ctx.w.bulk(b"page_size");
            ctx.w.integer(page_size as i64);
            ctx.w.bulk(b"hit_ratio_now");
            // The model's hit ratio at the pages the tenant holds now.
            let units = ctx.eng.tenant_stats(t).pages as f64 * upp;
            ctx.w.double(1.0 - mrc.miss_ratio(units));
            // [memory in bytes, capacity in the curve's unit, miss ratio] per point.
            ctx.w.bulk(b"points");
            ctx.w.array(points.len());
            for (c, m) in points {
                ctx.w.array(3);
                let bytes = (c / upp * page_size as f64).round();
                ctx.w.integer(bytes as i64);
                ctx.w.double(c);
                ctx.w.double(m);
            }
        }
    }
    Ok(())
}
