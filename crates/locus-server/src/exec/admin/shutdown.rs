//! `SHUTDOWN`, `SAVE`, `BGSAVE` and `LASTSAVE` (snapshots: [`crate::snapshot`]).

use crate::exec::{Args, CmdError, CmdResult, Ctx, is};
use crate::server::save_before_shutdown;

/// The reply when `[snapshot] dir` is empty.
fn snapshots_off(cmd: &str) -> CmdError {
    CmdError::msg(format!(
        "ERR {cmd}: snapshots are off (set [snapshot] dir in the configuration to save)"
    ))
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: saves when asked (`SAVE`) or when
/// `[snapshot] on_shutdown` is on (unless `NOSAVE`), then stops (no reply, like Redis). A save
/// that fails keeps the server running unless `FORCE`, with Redis's error.
pub fn shutdown(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let (mut save, mut nosave, mut force, mut abort) = (false, false, false, false);
    for o in &a[1..] {
        if is(o, "nosave") {
            nosave = true;
        } else if is(o, "save") {
            save = true;
        } else if is(o, "force") {
            force = true;
        } else if is(o, "abort") {
            abort = true;
        } else if !is(o, "now") {
            return Err(CmdError::Syntax);
        }
    }
    if (save && nosave) || (abort && a.len() > 2) {
        return Err(CmdError::Syntax);
    }
    if abort {
        return Err(CmdError::msg("ERR No shutdown in progress."));
    }
    if nosave {
        if let Some((_, dir)) = ctx.shared().snapshot_targets() {
            ctx.shared().snapshots().kill_child(&dir);
        }
    } else if save_before_shutdown(ctx.shared(), ctx.eng, save).is_err() && !force {
        return Err(CmdError::msg("ERR Errors trying to SHUTDOWN. Check logs."));
    }
    ctx.shared().request_shutdown();
    ctx.conn.close = true;
    Ok(())
}

/// `SAVE`: writes every tenant's snapshot and answers when the files are on disk. The files
/// are written by a forked child, as for BGSAVE, while this client waits without the engine
/// lock: the save is of the instant SAVE ran, and no tenant waits for the disk (Redis's SAVE
/// stops every client; issue 23 forbids disk I/O under the lock).
pub fn save(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    let (tenants, dir) = ctx
        .shared()
        .snapshot_targets()
        .ok_or(snapshots_off("SAVE"))?;
    let snaps = ctx.shared().snapshots();
    if snaps.in_progress() {
        return Err(CmdError::msg("ERR Background save already in progress"));
    }
    let waiting = crate::exec::blocking::Waiting::new(None);
    let slot = waiting.slot.clone();
    let proto = ctx.conn.proto;
    snaps
        .save_in_child(
            ctx.eng,
            &tenants,
            &dir,
            Box::new(move |r| {
                let mut out = Vec::new();
                let mut w = locus_protocol::ReplyWriter::new(&mut out, proto);
                match r {
                    Ok(()) => w.simple("OK"),
                    Err(e) => w.error(&format!("ERR snapshot failed: {e}")),
                }
                slot.deliver(out);
            }),
        )
        .map_err(|e| CmdError::msg(format!("ERR snapshot failed: {e}")))?;
    ctx.conn.block.waiting = Some(waiting);
    Ok(())
}

/// `BGSAVE [SCHEDULE]`: forks a child that writes every tenant's snapshot.
pub fn bgsave(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let schedule = match a.len() {
        1 => false,
        2 if is(&a[1], "schedule") => true,
        _ => return Err(CmdError::Syntax),
    };
    let (tenants, dir) = ctx
        .shared()
        .snapshot_targets()
        .ok_or(snapshots_off("BGSAVE"))?;
    let snaps = ctx.shared().snapshots();
    if snaps.in_progress() {
        if schedule {
            snaps.schedule();
            ctx.w.simple("Background saving scheduled");
            return Ok(());
        }
        return Err(CmdError::msg("ERR Background save already in progress"));
    }
    snaps
        .bgsave(ctx.eng, &tenants, &dir)
        .map_err(|e| CmdError::msg(format!("ERR {e}")))?;
    ctx.w.simple("Background saving started");
    Ok(())
}

/// `LASTSAVE`: Unix time of the last successful save (the start time before any).
pub fn lastsave(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    ctx.w
        .integer(ctx.shared().snapshots().lastsave_secs() as i64);
    Ok(())
}
