//! `WAIT numreplicas timeout`: Locus is a standalone server with no replicas, so no replica ever
//! acknowledges. As Redis 7.0 standalone: a request for 0 replicas (or fewer), or a WAIT inside
//! MULTI/EXEC, answers 0 at once; a request for one or more blocks the client until its timeout
//! (milliseconds; 0 = forever) and then answers 0. CLIENT UNBLOCK ends the wait early (with 0, or
//! with the UNBLOCKED error).

use super::blocking::{self, Denied, Timeout};
use super::{Args, CmdError, CmdResult, Ctx, int_arg, parse_i64};

/// The `type_name` a waiting WAIT registers with: no key is ever of this kind, so only its
/// timeout (or CLIENT UNBLOCK) ends it.
pub const KIND: &str = "wait";

/// `WAIT numreplicas timeout`
pub fn wait(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let replicas = int_arg(&a[1])?;
    let ms = parse_i64(&a[2])
        .ok_or_else(|| CmdError::msg("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::msg("ERR timeout is negative"));
    }
    if replicas <= 0 || ctx.conn.block.deny {
        ctx.w.integer(0);
        return Ok(());
    }
    if ctx.tenant.is_none() {
        // A connection bound to no tenant (prefix tenancy without a default one): the waiting
        // registry files a client under a tenant for the keys it waits on, and WAIT waits on
        // none, so any tenant serves.
        ctx.tenant = ctx.shared().tenancy().names.first().map(|(_, t)| *t);
    }
    blocking::block(ctx, a, &[], KIND, Timeout(ms as u64), Denied::Null)
}
