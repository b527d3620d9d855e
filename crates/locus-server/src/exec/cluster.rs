//! `CLUSTER`, as a Redis 7.0 server without cluster mode answers it: the command and its
//! subcommands exist (so clients and `COMMAND LIST` see them), each checks its arity, and then
//! every one, HELP included, answers that cluster support is disabled. Locus has no cluster layer
//! (DESIGN.md, non-goals): a server is one node holding its tenants.

use super::admin::{sub_arity, unknown_sub};
use super::{Args, CmdError, CmdResult, Ctx, lower};

/// Redis 7.0's CLUSTER subcommands and their arities (name included: `CLUSTER KEYSLOT key` is 3).
pub const SUBCOMMANDS: &[(&str, i32)] = &[
    ("addslots", -3),
    ("addslotsrange", -4),
    ("bumpepoch", 2),
    ("count-failure-reports", 3),
    ("countkeysinslot", 3),
    ("delslots", -3),
    ("delslotsrange", -4),
    ("failover", -2),
    ("flushslots", 2),
    ("forget", 3),
    ("getkeysinslot", 4),
    ("help", 2),
    ("info", 2),
    ("keyslot", 3),
    ("links", 2),
    ("meet", -4),
    ("myid", 2),
    ("nodes", 2),
    ("replicas", 3),
    ("replicate", 3),
    ("reset", -2),
    ("saveconfig", 2),
    ("set-config-epoch", 3),
    ("setslot", -4),
    ("shards", 2),
    ("slaves", 3),
    ("slots", 2),
];

/// `CLUSTER <subcommand> [args...]`
pub fn cluster(_ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let Some(&(name, arity)) = SUBCOMMANDS.iter().find(|(n, _)| *n == sub) else {
        return Err(unknown_sub("cluster", &a[1]));
    };
    let argc = a.len() as i32;
    sub_arity(
        if arity > 0 {
            argc == arity
        } else {
            argc >= -arity
        },
        "cluster",
        name,
    )?;
    Err(CmdError::msg(
        "ERR This instance has cluster support disabled",
    ))
}

/// Whether `cmd sub` is a CLUSTER subcommand Redis flags `noscript` (CLUSTER RESET): a script
/// calling it is refused as Redis refuses it, before the command runs.
pub fn noscript_subcommand(cmd: &str, sub: Option<&[u8]>) -> bool {
    cmd == "cluster" && sub.is_some_and(|s| s.eq_ignore_ascii_case(b"reset"))
}
