//! `FUNCTION`: Locus runs no scripts or functions, so there is never a library. FLUSH and LIST
//! answer as Redis does with no library loaded (clients and Redis's own test suite send
//! `FUNCTION FLUSH` to start from a clean server); LOAD, RESTORE and DUMP are refused with a
//! clear error, DELETE and KILL answer as Redis does when there is nothing to delete or kill.

use crate::exec::{Args, CmdError, CmdResult, Ctx, is, lower};

use super::{help, unknown_sub};

/// `FUNCTION FLUSH [ASYNC|SYNC] | LIST [WITHCODE] [LIBRARYNAME pattern] | DELETE name | KILL |
/// STATS | LOAD | DUMP | RESTORE | HELP`
pub fn function(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let arity = |ok: bool| super::sub_arity(ok, "function", &sub);
    match sub.as_str() {
        "flush" => {
            arity(a.len() <= 3)?;
            if a.len() == 3 && !is(&a[2], "async") && !is(&a[2], "sync") {
                return Err(CmdError::msg(
                    "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
                ));
            }
            ctx.w.ok();
        }
        "list" => {
            let mut i = 2;
            while i < a.len() {
                if is(&a[i], "withcode") {
                    i += 1;
                } else if is(&a[i], "libraryname") && i + 1 < a.len() {
                    i += 2;
                } else {
                    return Err(CmdError::msg(format!(
                        "ERR Unknown argument {}",
                        String::from_utf8_lossy(&a[i])
                    )));
                }
            }
            ctx.w.array(0);
        }
        "stats" => {
            arity(a.len() == 2)?;
            ctx.w.map(2);
            ctx.w.bulk(b"running_script");
            ctx.w.null();
            ctx.w.bulk(b"engines");
            ctx.w.map(0);
        }
        "delete" => {
            arity(a.len() == 3)?;
            return Err(CmdError::msg("ERR Library not found"));
        }
        "kill" => {
            arity(a.len() == 2)?;
            return Err(CmdError::msg("NOTBUSY No scripts in execution right now."));
        }
        "load" | "dump" | "restore" => {
            return Err(CmdError::msg(format!(
                "ERR FUNCTION {}: Locus does not run functions or scripts",
                sub.to_ascii_uppercase()
            )));
        }
        "help" => help(
            ctx,
            &[
                "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "FLUSH [ASYNC|SYNC]",
                "    Delete all the libraries (Locus has none: a no-op).",
                "LIST [WITHCODE] [LIBRARYNAME <pattern>]",
                "    Return the libraries (always none).",
                "STATS",
                "    Return the running script (none) and the engines (none).",
                "HELP",
                "    Print this help.",
            ],
        ),
        _ => return Err(unknown_sub("function", &a[1])),
    }
    Ok(())
}
