//! `COMMAND` (COUNT, INFO, DOCS, LIST, GETKEYS, GETKEYSANDFLAGS, HELP): the table as Redis
//! clients read it, with Redis 7.0's key specs ([`crate::exec::keyspecs`]).

use crate::exec::keyspecs::{self, Begin, FLAG_NAMES, Find, KeySpec};
use crate::exec::table::{COMMANDS, CommandSpec};
use crate::exec::{Args, CmdError, CmdResult, Ctx, is, lookup, lower};
use crate::glob::glob_match;
use locus_protocol::ReplyWriter;

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
    // Tips (Locus keeps none): an empty set, as Redis answers for a command without tips.
    ctx.w.set(0);
    write_key_specs(&mut ctx.w, keyspecs::specs_of(c.name));
    // Subcommands: an array, or an empty set for a command without any (as Redis).
    if c.subcommands.is_empty() {
        ctx.w.set(0);
    } else {
        ctx.w.array(c.subcommands.len());
    }
    for s in c.subcommands {
        let specs = keyspecs::specs_of(s);
        // A subcommand with keys: its own arity and key range (`object|encoding`: 3, 2 2 1).
        let (first, last, step) = match specs.first() {
            Some(KeySpec {
                begin: Begin::Index(i),
                find: Find::Range { last: 0, .. },
                ..
            }) => (*i, *i, 1),
            _ => (0, 0, 0),
        };
        ctx.w.array(10);
        ctx.w.bulk(s.as_bytes());
        ctx.w
            .integer(i64::from(keyspecs::subcommand_arity(s).unwrap_or(-2)));
        ctx.w.set(c.flags.len());
        for f in c.flags {
            ctx.w.simple(f);
        }
        ctx.w.integer(i64::from(first));
        ctx.w.integer(i64::from(last));
        ctx.w.integer(i64::from(step));
        ctx.w.set(c.acl.len());
        for a in c.acl {
            ctx.w.simple(a);
        }
        ctx.w.set(0);
        write_key_specs(&mut ctx.w, specs);
        ctx.w.set(0);
    }
}

/// Key flags as Redis writes them: a set of status strings (`RW`, `access`, ...).
fn write_key_flags(w: &mut ReplyWriter<'_>, flags: u16) {
    let names = FLAG_NAMES.iter().filter(|(bit, _)| flags & bit != 0);
    w.set(names.clone().count());
    for (_, name) in names {
        w.simple(name);
    }
}

/// `COMMAND INFO`'s key specifications: a set of maps (notes, flags, begin_search, find_keys).
fn write_key_specs(w: &mut ReplyWriter<'_>, specs: &[KeySpec]) {
    w.set(specs.len());
    for s in specs {
        w.map(3 + usize::from(s.notes.is_some()));
        if let Some(n) = s.notes {
            w.bulk(b"notes");
            w.bulk(n.as_bytes());
        }
        w.bulk(b"flags");
        write_key_flags(w, s.flags);
        w.bulk(b"begin_search");
        w.map(2);
        w.bulk(b"type");
        match s.begin {
            Begin::Index(i) => {
                w.bulk(b"index");
                w.bulk(b"spec");
                w.map(1);
                w.bulk(b"index");
                w.integer(i64::from(i));
            }
            Begin::Keyword(word, from) => {
                w.bulk(b"keyword");
                w.bulk(b"spec");
                w.map(2);
                w.bulk(b"keyword");
                w.bulk(word.as_bytes());
                w.bulk(b"startfrom");
                w.integer(i64::from(from));
            }
            Begin::Unknown => {
                w.bulk(b"unknown");
                w.bulk(b"spec");
                w.map(0);
            }
        }
        w.bulk(b"find_keys");
        w.map(2);
        w.bulk(b"type");
        let (kind, fields) = match s.find {
            Find::Range { last, step, limit } => (
                "range",
                [("lastkey", last), ("keystep", step), ("limit", limit)],
            ),
            Find::Keynum { at, first, step } => (
                "keynum",
                [("keynumidx", at), ("firstkey", first), ("keystep", step)],
            ),
            Find::Unknown => {
                w.bulk(b"unknown");
                w.bulk(b"spec");
                w.map(0);
                continue;
            }
        };
        w.bulk(kind.as_bytes());
        w.bulk(b"spec");
        w.map(3);
        for (k, v) in fields {
            w.bulk(k.as_bytes());
            w.integer(i64::from(v));
        }
    }
}

/// `COMMAND GETKEYS cmd args...` and `COMMAND GETKEYSANDFLAGS cmd args...` (with each key's
/// flags), as Redis 7.0: the command (or container subcommand) named, checked for keys and arity,
/// then its keys by its key specs ([`keyspecs::find_keys`]).
fn command_getkeys(ctx: &mut Ctx<'_>, rest: Args<'_, '_>, with_flags: bool) -> CmdResult {
    let invalid = || CmdError::msg("ERR Invalid command specified");
    let c = lookup(&rest[0]).ok_or_else(invalid)?;
    // A container with a subcommand argument: the subcommand (Redis's lookupCommand).
    let (name, arity) = if rest.len() >= 2 && !c.subcommands.is_empty() {
        let full = format!("{}|{}", c.name, lower(&rest[1]));
        let sub = c
            .subcommands
            .iter()
            .find(|s| **s == full)
            .ok_or_else(invalid)?;
        (*sub, keyspecs::subcommand_arity(sub).unwrap_or(-2))
    } else {
        (c.name, c.arity)
    };
    if !keyspecs::has_keys(name) {
        return Err(CmdError::msg("ERR The command has no key arguments"));
    }
    let argc = rest.len() as i32;
    if (arity > 0 && argc != arity) || argc < -arity {
        return Err(CmdError::msg(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    let keys = keyspecs::find_keys(name, rest);
    // As Redis: a command whose keys are optional (EVAL with 0 keys) has none.
    if keys.is_empty() && !crate::exec::table::has_flag(c.flags, "no_mandatory_keys") {
        return Err(CmdError::msg("ERR Invalid arguments specified for command"));
    }
    ctx.w.array(keys.len());
    for (pos, flags) in keys {
        if with_flags {
            ctx.w.array(2);
            ctx.w.bulk(&rest[pos]);
            write_key_flags(&mut ctx.w, flags);
        } else {
            ctx.w.bulk(&rest[pos]);
        }
    }
    Ok(())
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

/// `COMMAND [COUNT | INFO [name ...] | DOCS [name ...] | LIST | GETKEYS cmd args... |
/// GETKEYSANDFLAGS cmd args... | HELP]`
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
        "getkeys" if a.len() >= 4 => command_getkeys(ctx, &a[2..], false)?,
        "getkeysandflags" if a.len() >= 4 => command_getkeys(ctx, &a[2..], true)?,
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
                "GETKEYSANDFLAGS <full-command>",
                "    Return the keys and the access flags from a full command.",
                "HELP",
                "    Print this help.",
            ],
        ),
        "count" => return Err(CmdError::WrongArity("command|count".into())),
        "getkeys" => return Err(CmdError::WrongArity("command|getkeys".into())),
        "getkeysandflags" => return Err(CmdError::WrongArity("command|getkeysandflags".into())),
        _ => return Err(unknown_sub("command", &a[1])),
    }
    Ok(())
}
