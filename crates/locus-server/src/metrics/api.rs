//! The JSON the live page reads.
//!
//! * `/api/tenants`: the server, the controller, every tenant's figures with its "over time"
//!   series (columns: `t_ms`, `pages`, `target`, `hit_ratio`, `penalty_us`, ...), and the
//!   controller's last decisions.
//! * `/api/curves[?tenant=NAME]`: each tenant's newest miss ratio curves, the decision and model
//!   that built them, where its pages and target sit on them, and the memory the model says it
//!   needs for a few hit ratios (`memory_for`, as `LOCUS.MRC <tenant> MEMORY-FOR <h>`).
//!
//! Numbers that are not finite are written as `null` (JSON has no NaN).

use serde_json::{Map, Value, json};

use super::Monitor;
use super::snapshot::{Snapshot, TenantSnap};
use crate::server::Shared;

/// A finite number, else `null`.
fn num(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

fn eviction_causes(t: &TenantSnap) -> Value {
    let mut m = Map::new();
    for r in locus_engine::EvictionReason::ALL {
        m.insert(
            r.name().to_string(),
            json!(t.stats.evictions_by_reason.get(r)),
        );
    }
    Value::Object(m)
}

/// `/api/tenants`.
pub fn tenants(shared: &Shared, mon: &Monitor) -> Value {
    let snap = Snapshot::take(shared);
    let hist = mon.history.lock();
    let tenants: Vec<Value> = snap
        .tenants
        .iter()
        .map(|t| {
            let s: Vec<&super::Sample> = hist.series(t.id.0 as usize).collect();
            let gets = t.stats.hits + t.stats.misses;
            json!({
                "name": t.name,
                "policy": t.stats.policy.name(),
                "pages": t.stats.pages,
                "target": t.target,
                "items": t.stats.items,
                "used_bytes": t.used_bytes,
                "item_bytes": t.stats.item_bytes,
                "min_bytes": t.stats.min_bytes,
                "max_bytes": t.stats.max_bytes,
                "hits": t.stats.hits,
                "misses": t.stats.misses,
                "hit_ratio": if gets > 0 { num(t.stats.hits as f64 / gets as f64) } else { Value::Null },
                "evictions": t.stats.evictions,
                "evictions_by_cause": eviction_causes(t),
                "expired": t.stats.expired,
                "samples": t.stats.samples,
                "penalty_us": num(t.penalty_us),
                "penalty_samples": t.penalty_samples,
                "clients": t.clients,
                "modelled_miss_ratio": t.modelled_miss_ratio().map_or(Value::Null, num),
                "modelled_miss_latency_us": t.modelled_miss_latency_us().map_or(Value::Null, num),
                "tiers": t.tier.as_ref().map_or(Value::Null, |tt| json!({
                    "fast": tt.tiers[0],
                    "slow": tt.tiers[1],
                    "promotions": tt.promotions,
                    "demotions": tt.demotions,
                })),
                "history": {
                    "t_ms": s.iter().map(|x| x.t_ms).collect::<Vec<_>>(),
                    "pages": s.iter().map(|x| x.pages).collect::<Vec<_>>(),
                    "target": s.iter().map(|x| x.target).collect::<Vec<_>>(),
                    "items": s.iter().map(|x| x.items).collect::<Vec<_>>(),
                    "hit_ratio": s.iter().map(|x| x.hit_ratio.map_or(Value::Null, num)).collect::<Vec<_>>(),
                    "gets_per_s": s.iter().map(|x| num(x.gets_per_s)).collect::<Vec<_>>(),
                    "penalty_us": s.iter().map(|x| num(x.penalty_us)).collect::<Vec<_>>(),
                    "samples": s.iter().map(|x| x.samples).collect::<Vec<_>>(),
                    "evictions": s.iter().map(|x| x.evictions).collect::<Vec<_>>(),
                },
            })
        })
        .collect();
    drop(hist);
    let names: Vec<&str> = snap.tenants.iter().map(|t| t.name.as_str()).collect();
    let per_pool = |vals: Vec<Value>| -> Value {
        Value::Object(
            names
                .iter()
                .zip(vals)
                .map(|(n, v)| ((*n).to_string(), v))
                .collect(),
        )
    };
    let (controller, decisions) = match &snap.controller {
        None => (Value::Null, Vec::new()),
        Some(c) => (
            json!({
                "name": c.name,
                "interval": c.interval,
                "max_moves": c.max_moves,
                "decisions": c.decisions,
                "requests": c.requests,
                "page_moves": c.moves,
                "items_evicted_by_moves": c.evicted_by_moves,
            }),
            c.recent
                .iter()
                .rev()
                .map(|r| {
                    json!({
                        "interval": r.interval,
                        "at_us": r.at_us,
                        "at_request": r.at_request,
                        "moves": r.moves_done,
                        "evicted_by_moves": r.items_evicted_by_moves,
                        "pages": per_pool(r.pages.iter().map(|x| json!(x)).collect()),
                        "targets": per_pool(r.targets.iter().map(|x| json!(x)).collect()),
                        "samples": per_pool(r.samples.iter().map(|x| json!(x)).collect()),
                        "penalty_us": per_pool(r.penalty_us.iter().map(|x| num(*x)).collect()),
                        "notes": Value::Object(r.notes.iter().map(|(k, v)| (k.clone(), num(*v))).collect()),
                    })
                })
                .collect(),
        ),
    };
    let st = &snap.engine;
    json!({
        "now_ms": snap.now_ms,
        "now_us": snap.now_us,
        "uptime_s": snap.uptime_s,
        "sample_interval_ms": mon.sample_ms,
        "server": {
            "version": env!("CARGO_PKG_VERSION"),
            "tenancy": shared.tenancy().mode.to_string(),
            "maxmemory": st.maxmemory,
            "used_bytes": st.used_bytes,
            "page_size": st.page_size,
            "pages_total": st.pages_total,
            "pages_used": st.pages_used,
            "items": st.items,
            "connected_clients": snap.server.connected,
            "commands_processed": snap.server.total_commands,
        },
        "controller": controller,
        "tenants": tenants,
        "decisions": decisions,
    })
}

/// The tenant named by `?tenant=NAME` (percent-decoded), if any.
///
/// # Errors
/// A message for a query that is not `tenant=NAME` or is badly encoded.
pub fn tenant_filter(query: &str) -> Result<Option<String>, String> {
    if query.is_empty() {
        return Ok(None);
    }
    let mut only = None;
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("tenant", v)) => only = Some(percent_decode(v)?),
            _ => return Err(format!("unknown query {pair:?} (only tenant=NAME)")),
        }
    }
    Ok(only)
}

fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = b
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("bad percent-encoding in {s:?}"))?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8"))
}

/// The hit ratios `/api/curves` gives the memory for (`memory_for`).
pub const MEMORY_FOR_SHOWN: [f64; 5] = [0.5, 0.8, 0.9, 0.95, 0.99];

/// `/api/curves`.
pub fn curves(shared: &Shared, only: Option<&str>) -> Value {
    let snap = Snapshot::take(shared);
    let tenants: Vec<Value> = snap
        .tenants
        .iter()
        .filter(|t| only.is_none_or(|n| n == t.name))
        .map(|t| {
            let (decision, at_us, upp, main, list) = match &t.curves {
                None => (
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Vec::new(),
                ),
                Some(c) => (
                    json!(c.decision),
                    json!(c.at_us),
                    c.units_per_page.map_or(Value::Null, num),
                    c.curves.get(c.main).map_or(Value::Null, |m| json!(m.label)),
                    c.curves
                        .iter()
                        .map(|r| {
                            json!({
                                "label": r.label,
                                "unit": r.mrc.unit().to_string(),
                                "metric": r.mrc.metric().to_string(),
                                "points": r.mrc.points().iter()
                                    .map(|&(x, y)| json!([num(x), num(y)]))
                                    .collect::<Vec<_>>(),
                            })
                        })
                        .collect(),
                ),
            };
            json!({
                "name": t.name,
                "pages": t.stats.pages,
                "target": t.target,
                "samples": t.stats.samples,
                "decision": decision,
                "at_us": at_us,
                "units_per_page": upp,
                "model": main,
                "modelled_miss_ratio": t.modelled_miss_ratio().map_or(Value::Null, num),
                // LOCUS.MRC <tenant> MEMORY-FOR <h> at a few hit ratios (bytes; null: the
                // curve does not reach it).
                "memory_for": t.curves.as_ref().map_or(Value::Null, |c| {
                    MEMORY_FOR_SHOWN
                        .iter()
                        .map(|&h| {
                            let v = c.memory_for(h, snap.engine.page_size);
                            (h.to_string(), v.map_or(Value::Null, |b| json!(b)))
                        })
                        .collect::<Map<_, _>>()
                        .into()
                }),
                "curves": list,
            })
        })
        .collect();
    json!({
        "now_us": snap.now_us,
        "controller": snap.controller.as_ref().map(|c| c.name.clone()),
        "pages_total": snap.engine.pages_total,
        "tenants": tenants,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenant_filter_decodes_names() {
        assert_eq!(tenant_filter(""), Ok(None));
        assert_eq!(tenant_filter("tenant=a%22b"), Ok(Some("a\"b".into())));
        assert_eq!(tenant_filter("tenant=a+b"), Ok(Some("a b".into())));
        assert!(tenant_filter("tenant=%zz").is_err());
        assert!(tenant_filter("tenant=%2").is_err());
        assert!(tenant_filter("x=1").is_err());
        assert!(tenant_filter("tenant=%ff").is_err());
    }
}
