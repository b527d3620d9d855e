//! `SHUTDOWN`, and `SAVE` / `BGSAVE`, refused: Locus keeps nothing on disk yet.

use crate::exec::{Args, CmdError, CmdResult, Ctx, is};

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: stops the server (no reply, like Redis).
pub fn shutdown(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    for o in &a[1..] {
        if is(o, "abort") {
            return Err(CmdError::msg("ERR No shutdown in progress."));
        }
        if !(is(o, "nosave") || is(o, "save") || is(o, "now") || is(o, "force")) {
            return Err(CmdError::Syntax);
        }
    }
    // Locus has no persistence: SAVE and NOSAVE both just stop.
    ctx.shared.request_shutdown();
    ctx.conn.close = true;
    Ok(())
}

/// `SAVE` / `BGSAVE [SCHEDULE]`: Locus has no snapshots yet; a clear error, not an unknown
/// command (SAVE is also refused inside MULTI, as Redis flags it `no_multi`).
pub fn save(_ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    Err(CmdError::msg(format!(
        "ERR {}: Locus keeps no snapshot on disk (a cache's data is rebuilt from its backend)",
        String::from_utf8_lossy(&a[0]).to_ascii_uppercase()
    )))
}
