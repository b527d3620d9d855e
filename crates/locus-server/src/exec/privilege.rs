//! Who may run what. Tenants are a security boundary: a connection that is not the admin acts
//! on its own tenant only (`ConnState::owner`), whatever the command.
//!
//! | command                                   | a tenant's connection                      |
//! |-------------------------------------------|--------------------------------------------|
//! | SHUTDOWN, SAVE, BGSAVE, LOCUS.CONTROLLER, CONFIG RESETSTAT | refused (`NOPERM`)         |
//! | LOCUS.MRC own / other                     | its own curve / refused (`NOPERM`)         |
//! | CONFIG SET maxmemory-policy / -samples    | applies to its own tenant                  |
//! | CONFIG SET anything else                  | refused                                    |
//! | CONFIG GET                                | its tenant's memory settings, no secrets   |
//! | LOCUS.TENANT LIST / own GET / own SET     | its own name; policy and samples only      |
//! | LOCUS.TENANT other                        | refused (unknown and other names alike)    |
//! | CLIENT LIST / INFO / KILL                 | its tenant's clients only, never the admin |
//! | INFO                                      | its tenant's figures only                  |
//! | MONITOR                                   | its tenant's clients' commands only        |
//! | CLIENT PAUSE / UNPAUSE                    | its tenant's clients only                  |
//! | SLOWLOG, LATENCY                          | its tenant's entries and events only       |
//! | MEMORY STATS / DOCTOR                     | refused                                    |
//! | SELECT (db mode, bound)                   | its own database only                      |
//! | keys (prefix mode, bound)                 | its own prefix only                        |
//!
//! The gate here refuses whole commands; the handlers of CONFIG, CLIENT, INFO and LOCUS.TENANT
//! narrow what they show or change to `ConnState::scope`.

use locus_engine::TenantId;

use super::{Args, CmdError, CommandSpec, Ctx, lower};
use crate::config::TenancyMode;
use crate::server::{ConnState, Shared};

/// Per-tenant settings a tenant may change for itself (its eviction only; its memory is the
/// admin's to give).
pub const TENANT_SETTABLE: [&str; 2] = ["maxmemory-policy", "maxmemory-samples"];

/// Redis's error for a command the user may not run (`name` as in ACL: `config|set`).
pub fn noperm(name: &str) -> CmdError {
    CmdError::msg(format!(
        "NOPERM this user has no permissions to run the '{name}' command"
    ))
}

/// Refuses a command the connection may not run, before it is routed.
pub fn check_command(
    ctx: &Ctx<'_>,
    spec: &CommandSpec,
    args: Args<'_, '_>,
) -> Result<(), CmdError> {
    if ctx.conn.admin {
        return Ok(());
    }
    let sub = || args.get(1).map(|a| lower(a)).unwrap_or_default();
    match spec.name {
        "shutdown" | "save" | "bgsave" | "locus.controller" => Err(noperm(spec.name)),
        // CONFIG SET is narrowed by its handler: unknown names get Redis's error, the tenant's
        // own settings apply to its tenant, anything else is NOPERM.
        "config" => match sub().as_str() {
            "resetstat" | "rewrite" => Err(noperm(&format!("config|{}", sub()))),
            _ => Ok(()),
        },
        "memory" => match sub().as_str() {
            "stats" | "doctor" | "malloc-stats" | "purge" => {
                Err(noperm(&format!("memory|{}", sub())))
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Refuses a routed command that would act outside the connection's tenant (prefix mode: a key
/// of another tenant's prefix, for a connection bound by AUTH).
pub fn check_route(ctx: &Ctx<'_>, routed: Option<TenantId>) -> Result<(), CmdError> {
    check_route_of(ctx.shared(), ctx.conn, routed)
}

/// [`check_route`] for a connection answered without the engine (a script is busy).
pub fn check_route_of(
    shared: &Shared,
    conn: &ConnState,
    routed: Option<TenantId>,
) -> Result<(), CmdError> {
    if conn.admin || shared.tenancy().mode != TenancyMode::Prefix {
        return Ok(());
    }
    match (conn.owner, routed) {
        (Some(o), Some(t)) if o != t => Err(CmdError::msg("NOPERM No permissions to access a key")),
        _ => Ok(()),
    }
}
