//! `COMMAND` (COUNT, INFO, DOCS, LIST, GETKEYS, HELP): the table as Redis clients read it.

use crate::exec::table::{COMMANDS, CommandSpec};
use crate::exec::{Args, CmdError, CmdResult, Ctx, is, key_positions, lookup, lower};
use crate::glob::glob_match;

use super::{help, unknown_sub};

pub(super) fn command_info(ctx: &mut Ctx<'_>, c: &CommandSpec) {
    ctx.w.array(10);
    ctx.w.bulk(c.name.as_bytes());
    ctx.w.integer(i64::from(c.arity));
    ctx.w.set(c.flags.len());
    for f in c.flags {
        ctx.w.simple(f);
    }
    ctx.w.integer(i64::from(c.first_key));
    ctx.w.integer(i64::from(c.last_key));
    ctx.w.integer(i64::from(c.step));
    ctx.w.set(c.acl.len());
    for a in c.acl {
        ctx.w.simple(a);
    }
    ctx.w.array(0); // tips
    ctx.w.array(0); // key specs
    ctx.w.array(c.subcommands.len());
    for s in c.subcommands {
        ctx.w.array(10);
        ctx.w.bulk(s.as_bytes());
        ctx.w.integer(-2);
        ctx.w.set(c.flags.len());
        for f in c.flags {
            ctx.w.simple(f);
        }
        ctx.w.integer(0);
        ctx.w.integer(0);
        ctx.w.integer(0);
        ctx.w.set(c.acl.len());
        for a in c.acl {
            ctx.w.simple(a);
        }
        ctx.w.array(0);
        ctx.w.array(0);
        ctx.w.array(0);
    }
}

pub(super) fn command_docs(ctx: &mut Ctx<'_>, c: &CommandSpec) {
    ctx.w.bulk(c.name.as_bytes());
    ctx.w.map(3);
    ctx.w.bulk(b"summary");
    ctx.w.bulk(c.summary.as_bytes());
    ctx.w.bulk(b"since");
    ctx.w.bulk(c.since.as_bytes());
    ctx.w.bulk(b"group");
    ctx.w.bulk(c.group.as_bytes());
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]`: every command's
/// name and its subcommands' (`config|get`), as Redis 7.0; a pattern matches either (case
/// insensitively), a category a command's or its parent's; Locus has no modules.
fn command_list(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let filter = match a.len() {
        2 => None,
        5 if is(&a[2], "filterby") => {
            let kind = lower(&a[3]);
            if !["module", "aclcat", "pattern"].contains(&kind.as_str()) {
                return Err(CmdError::Syntax);
            }
            Some((kind, &a[4]))
        }
        _ => return Err(CmdError::Syntax),
    };
    let mut names: Vec<&str> = Vec::new();
    for c in COMMANDS {
        for name in std::iter::once(c.name).chain(c.subcommands.iter().copied()) {
            let keep = match &filter {
                None => true,
                Some((kind, arg)) => match kind.as_str() {
                    "aclcat" => c.acl.iter().any(|cat| {
                        cat.trim_start_matches('@')
                            .as_bytes()
                            .eq_ignore_ascii_case(arg)
                    }),
                    "pattern" => glob_match(arg, name.as_bytes(), true),
                    _ => false,
                },
            };
            if keep {
                names.push(name);
            }
        }
    }
    ctx.w.array(names.len());
    for n in names {
        ctx.w.bulk(n.as_bytes());
    }
    Ok(())
}

/// `COMMAND [COUNT | INFO [name ...] | DOCS [name ...] | LIST | GETKEYS cmd args... | HELP]`
pub fn command(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() == 1 {
        ctx.w.array(COMMANDS.len());
        for c in COMMANDS {
            command_info(ctx, c);
        }
        return Ok(());
    }
    let sub = lower(&a[1]);
    match sub.as_str() {
        "count" if a.len() == 2 => ctx.w.integer(COMMANDS.len() as i64),
        "list" => command_list(ctx, a)?,
        "info" => {
            if a.len() == 2 {
                ctx.w.array(COMMANDS.len());
                for c in COMMANDS {
                    command_info(ctx, c);
                }
            } else {
                ctx.w.array(a.len() - 2);
                for n in &a[2..] {
                    match lookup(n) {
                        Some(c) => command_info(ctx, c),
                        None => ctx.w.null_array(),
                    }
                }
            }
        }
        "docs" => {
            let found: Vec<&CommandSpec> = if a.len() == 2 {
                COMMANDS.iter().collect()
            } else {
                a[2..].iter().filter_map(|n| lookup(n)).collect()
            };
            ctx.w.map(found.len());
            for c in found {
                command_docs(ctx, c);
            }
        }
        "getkeys" if a.len() >= 3 => {
            let rest = &a[2..];
            let c =
                lookup(&rest[0]).ok_or_else(|| CmdError::msg("ERR Invalid command specified"))?;
            let argc = rest.len() as i32;
            if (c.arity > 0 && argc != c.arity) || (c.arity < 0 && argc < -c.arity) {
                return Err(CmdError::msg(
                    "ERR Invalid number of arguments specified for command",
                ));
            }
            let keys: Vec<usize> = key_positions(c, rest.len())
                .chain(crate::exec::counted_keys(c, rest))
                // MIGRATE's KEYS form: its empty key argument is no key.
                .filter(|&k| !(c.name == "migrate" && rest[k].is_empty()))
                .collect();
            // As Redis: a command whose keys are optional (EVAL with 0 keys) has none.
            if keys.is_empty() && !crate::exec::table::has_flag(c.flags, "no_mandatory_keys") {
                return Err(CmdError::msg("ERR The command has no key arguments"));
            }
            ctx.w.array(keys.len());
            for k in keys {
                ctx.w.bulk(&rest[k]);
            }
        }
        "help" => help(
            ctx,
            &[
                "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "(no subcommand)",
                "    Return details about all commands.",
                "COUNT",
                "    Return the total number of commands in this server.",
                "LIST",
                "    Return a list of all commands in this server.",
                "INFO [<command-name> ...]",
                "    Return details about multiple commands.",
                "DOCS [<command-name> ...]",
                "    Return documentation details about multiple commands.",
                "GETKEYS <full-command>",
                "    Return the keys from a full command.",
                "HELP",
                "    Print this help.",
            ],
        ),
        "count" => return Err(CmdError::WrongArity("command|count".into())),
        "getkeys" => return Err(CmdError::WrongArity("command|getkeys".into())),
        _ => return Err(unknown_sub("command", &a[1])),
    }
    Ok(())
}
