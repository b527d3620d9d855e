//! Server commands, one file each: [`command`] (COMMAND), [`config`] (CONFIG), [`info`] (INFO),
//! [`memory`] (MEMORY, OBJECT), [`function`] (FUNCTION, in exec/scripting), [`shutdown`] (SHUTDOWN, SAVE, BGSAVE, LASTSAVE), [`tenant`] (`LOCUS.TENANT`), [`mrc`] (`LOCUS.MRC`) and
//! [`controller`] (`LOCUS.CONTROLLER`: the memory controller's state, targets, decision log,
//! decide now, replace it).

pub mod command;
pub mod compat;
pub mod config;
pub mod controller;
pub mod function;
pub mod info;
pub mod memory;
pub mod mrc;
pub mod shutdown;
pub mod tenant;

use super::{CmdError, Ctx};

pub use command::command;
pub use config::config;
pub use controller::controller;
pub use function::function;
pub use info::{info, info_text};
pub use memory::{memory, object};
pub use mrc::mrc;
pub use shutdown::{bgsave, lastsave, save, shutdown};
pub use tenant::tenant;

/// Redis's error for an unknown subcommand of `cmd`.
pub(crate) fn unknown_sub(cmd: &str, sub: &[u8]) -> CmdError {
    CmdError::msg(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        cmd.to_ascii_uppercase()
    ))
}

/// Redis's arity error for `cmd|sub` unless `ok`.
pub(crate) fn sub_arity(ok: bool, cmd: &str, sub: &str) -> Result<(), CmdError> {
    if ok {
        Ok(())
    } else {
        Err(CmdError::WrongArity(format!("{cmd}|{sub}")))
    }
}

/// Writes a HELP reply (one status line each).
pub(crate) fn help(ctx: &mut Ctx<'_>, lines: &[&str]) {
    ctx.w.array(lines.len());
    for l in lines {
        ctx.w.simple(l);
    }
}
