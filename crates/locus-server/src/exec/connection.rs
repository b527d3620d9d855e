//! Connection commands: PING ECHO TIME QUIT RESET AUTH HELLO SELECT CLIENT.

use locus_protocol::{ProtocolVersion, ReplyWriter};

use super::{Args, CmdError, CmdResult, Ctx, int_arg, is, lower};
use crate::config::TenancyMode;
use crate::server::{ConnState, Shared};
use locus_engine::TenantId;

/// `PING [message]`
pub fn ping(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() <= 2 && ctx.conn.proto == ProtocolVersion::Resp2 && ctx.conn.subscriptions() > 0 {
        // Subscribed mode (RESP2): a push-shaped reply, as Redis.
        ctx.w.array(2);
        ctx.w.bulk(b"pong");
        ctx.w.bulk(a.get(1).map_or(&b""[..], |m| &m[..]));
        return Ok(());
    }
    match a.len() {
        1 => ctx.w.simple("PONG"),
        2 => ctx.w.bulk(&a[1]),
        _ => return Err(CmdError::WrongArity("ping".into())),
    }
    Ok(())
}

/// ECHO message
pub fn echo(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    ctx.w.bulk(&a[1]);
    Ok(())
}

/// TIME: [unix seconds, microseconds] from the server's clock: the time now, not the time the
/// command (or the script calling it) is pinned to, as Redis's TIME reads the clock itself.
pub fn time(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    let us = {
        let _unpinned = locus_common::PinnedTime::at_us(0);
        ctx.shared().clock().now_us()
    };
    ctx.w.array(2);
    ctx.w.bulk_int((us / 1_000_000) as i64);
    ctx.w.bulk_int((us % 1_000_000) as i64);
    Ok(())
}

/// QUIT: +OK, then the connection closes.
pub fn quit(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    ctx.w.ok();
    ctx.conn.close = true;
    Ok(())
}

/// RESET: back to a fresh connection's state.
pub fn reset(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    super::transaction::release_queue(ctx.eng, &mut ctx.conn.multi_charged);
    reset_unlocked(ctx.shared(), ctx.conn, &mut ctx.w);
    Ok(())
}

/// RESET's engine-free part, all of it while a script is busy (Redis flags RESET allow-busy):
/// a queued transaction's charge then goes back when the connection next holds the engine
/// (`transaction::settle_after_busy`).
pub(crate) fn reset_unlocked(shared: &Shared, conn: &mut ConnState, w: &mut ReplyWriter<'_>) {
    let watched = std::mem::take(&mut conn.watched);
    shared.unwatch_all(conn.info.id, &watched);
    if conn.subscriptions() > 0 {
        conn.unsubscribe_all(&mut shared.pubsub());
    }
    super::tracking::off_of(shared, conn);
    super::monitor::remove(conn.info.id);
    conn.reset(shared.tenancy(), shared.auth_required());
    w.set_proto(ProtocolVersion::Resp2);
    w.simple("RESET");
}

/// Who a successful AUTH makes the connection.
#[derive(Debug, Clone, Copy)]
enum AuthAs {
    /// The `default` user (`requirepass`): the connection's own tenant, as before AUTH.
    Default,
    /// The `[admin]` user.
    Admin,
    /// A tenant's user: bound to that tenant.
    Tenant(locus_engine::TenantId),
}

/// Checks credentials as Redis does (`WRONGPASS` for a wrong pair or a disabled user).
fn check_auth(
    shared: &Shared,
    conn: &ConnState,
    user: Option<&[u8]>,
    pass: &[u8],
) -> Result<AuthAs, CmdError> {
    let wrong = || CmdError::msg("WRONGPASS invalid username-password pair or user is disabled.");
    let tenancy = shared.tenancy();
    let user = user.map(|u| String::from_utf8_lossy(u).into_owned());
    let name = user.as_deref().unwrap_or("default");
    if let Some((admin, pw)) = &tenancy.admin
        && admin == name
    {
        return if pw.as_bytes() == pass {
            Ok(AuthAs::Admin)
        } else {
            Err(wrong())
        };
    }
    // Port mode: a password alone (or the `default` user's) on a tenant's port is that
    // tenant's password.
    if name == "default"
        && let Some((t, pw)) = tenancy.port_password(conn.listener_tenant)
    {
        return if pw.as_bytes() == pass {
            Ok(AuthAs::Tenant(t))
        } else {
            Err(wrong())
        };
    }
    if let Some((pw, t)) = tenancy.users.get(name) {
        // On a tenant's port only that tenant's user: a user of another tenant would otherwise
        // reach this listener's keys.
        let elsewhere =
            tenancy.mode == TenancyMode::Port && conn.listener_tenant.is_some_and(|l| l != *t);
        return if pw.as_bytes() == pass && !elsewhere {
            Ok(AuthAs::Tenant(*t))
        } else {
            Err(wrong())
        };
    }
    if name != "default" {
        return Err(wrong());
    }
    let requirepass = shared.config().server.requirepass.clone();
    if requirepass.is_empty() {
        if user.is_none() {
            return Err(CmdError::msg(
                "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            ));
        }
        // In user tenancy without a default tenant the default user owns nothing: disabled.
        if tenancy.mode == TenancyMode::User && tenancy.default.is_none() {
            return Err(wrong());
        }
        Ok(AuthAs::Default)
    } else if requirepass.as_bytes() == pass {
        Ok(AuthAs::Default)
    } else {
        Err(wrong())
    }
}

fn apply_auth(shared: &Shared, conn: &mut ConnState, user: Option<&[u8]>, who: AuthAs) {
    let tenancy = shared.tenancy();
    conn.authenticated = true;
    conn.user = user.map_or_else(
        || "default".to_string(),
        |u| String::from_utf8_lossy(u).into_owned(),
    );
    match who {
        AuthAs::Default => {
            conn.admin = tenancy.admin_by_default();
            conn.owner = tenancy.initial_owner(conn.listener_tenant);
        }
        AuthAs::Admin => conn.admin = true,
        AuthAs::Tenant(t) => {
            conn.admin = false;
            conn.owner = Some(t);
            conn.tenant = Some(t);
            if let Some(db) = tenancy.db_of(t) {
                conn.db = db;
            }
        }
    }
    conn.publish(tenancy);
}

/// `AUTH [username] password`
pub fn auth(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    auth_unlocked(ctx.shared(), ctx.conn, &mut ctx.w, a)
}

/// AUTH without the engine (it needs none), as a busy script lets Redis answer it.
pub(crate) fn auth_unlocked(
    shared: &Shared,
    conn: &mut ConnState,
    w: &mut ReplyWriter<'_>,
    a: Args<'_, '_>,
) -> CmdResult {
    let (user, pass) = match a.len() {
        2 => (None, &a[1][..]),
        3 => (Some(&a[1][..]), &a[2][..]),
        _ => return Err(CmdError::Syntax),
    };
    let who = check_auth(shared, conn, user, pass)?;
    apply_auth(shared, conn, user, who);
    w.ok();
    Ok(())
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`
pub fn hello(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    hello_unlocked(ctx.shared(), ctx.conn, &mut ctx.w, a)
}

/// HELLO without the engine (it needs none): also how a connection is answered while a busy
/// script holds the engine, as Redis answers HELLO then (clients such as redis-py 8 open every
/// connection with `HELLO 3`, so without it none could connect to send SCRIPT KILL).
pub(crate) fn hello_unlocked(
    shared: &Shared,
    conn: &mut ConnState,
    w: &mut ReplyWriter<'_>,
    a: Args<'_, '_>,
) -> CmdResult {
    let mut proto = conn.proto;
    if a.len() >= 2 {
        let v = super::parse_i64(&a[1]).ok_or_else(|| {
            CmdError::msg("ERR Protocol version is not an integer or out of range")
        })?;
        proto = match v {
            2 => ProtocolVersion::Resp2,
            3 => ProtocolVersion::Resp3,
            _ => return Err(CmdError::msg("NOPROTO unsupported protocol version")),
        };
    }
    let mut auth: Option<(&[u8], &[u8])> = None;
    let mut name: Option<&[u8]> = None;
    let mut i = 2;
    while i < a.len() {
        let more = a.len() - i - 1;
        if is(&a[i], "auth") && more >= 2 {
            auth = Some((&a[i + 1], &a[i + 2]));
            i += 3;
        } else if is(&a[i], "setname") && more >= 1 {
            name = Some(&a[i + 1]);
            i += 2;
        } else {
            return Err(CmdError::msg(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&a[i])
            )));
        }
    }
    let who = match auth {
        Some((u, p)) => Some(check_auth(shared, conn, Some(u), p)?),
        None => None,
    };
    if !conn.authenticated && who.is_none() {
        return Err(CmdError::msg(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        ));
    }
    if let Some(n) = name {
        validate_name(n)?;
    }
    if let (Some(who), Some((u, _))) = (who, auth) {
        apply_auth(shared, conn, Some(u), who);
    }
    if let Some(n) = name {
        *conn.info.name.lock() = String::from_utf8_lossy(n).into_owned();
    }
    conn.proto = proto;
    conn.publish(shared.tenancy());
    w.set_proto(proto);
    w.map(7);
    w.bulk(b"server");
    w.bulk(b"redis");
    w.bulk(b"version");
    w.bulk(crate::REDIS_VERSION.as_bytes());
    w.bulk(b"proto");
    w.integer(i64::from(proto.number()));
    w.bulk(b"id");
    w.integer(conn.info.id as i64);
    w.bulk(b"mode");
    w.bulk(b"standalone");
    w.bulk(b"role");
    w.bulk(b"master");
    w.bulk(b"modules");
    w.array(0);
    Ok(())
}

/// SELECT index
pub fn select(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let n = int_arg(&a[1])?;
    let t = db_tenant(ctx, n)?;
    if let Some(t) = t {
        ctx.conn.tenant = Some(t);
    }
    ctx.conn.db = n as u32;
    ctx.conn.publish(ctx.shared().tenancy());
    ctx.w.ok();
    Ok(())
}

/// The tenant database `n` names for this connection (SELECT, COPY ... DB): in `db` tenancy the
/// tenant mapped to it, if the caller may use it; in the other modes only database 0 exists
/// (`None`: it is the connection's own tenant).
pub(super) fn db_tenant(ctx: &Ctx<'_>, n: i64) -> Result<Option<TenantId>, CmdError> {
    let out_of_range = || CmdError::msg("ERR DB index is out of range");
    let dbs = ctx.shared().config().server.databases;
    if n < 0 || n >= i64::from(dbs) {
        return Err(out_of_range());
    }
    let n = n as u32;
    let tenancy = ctx.shared().tenancy();
    if tenancy.mode == TenancyMode::Db {
        let t = *tenancy.dbs.get(&n).ok_or_else(out_of_range)?;
        if !ctx.conn.admin && ctx.conn.owner.is_some_and(|o| o != t) {
            return Err(CmdError::msg(format!(
                "NOPERM this user has no permissions to access database {n}"
            )));
        }
        Ok(Some(t))
    } else if n != 0 {
        Err(CmdError::msg(format!(
            "ERR DB {n}: this server's tenancy mode is '{}'; only database 0 exists (use tenancy mode 'db' for numbered databases)",
            tenancy.mode
        )))
    } else {
        Ok(None)
    }
}

fn validate_name(n: &[u8]) -> CmdResult {
    if n.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(CmdError::msg(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    Ok(())
}

fn sub_arity(sub: &str) -> CmdError {
    CmdError::WrongArity(format!("client|{sub}"))
}

/// CLIENT ID | SETNAME | GETNAME | LIST | INFO | KILL | UNBLOCK | SETINFO | NO-EVICT | NO-TOUCH |
/// HELP
pub fn client(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    match sub.as_str() {
        "id" if a.len() == 2 => ctx.w.integer(ctx.conn.info.id as i64),
        "setname" => {
            if a.len() != 3 {
                return Err(sub_arity(&sub));
            }
            validate_name(&a[2])?;
            *ctx.conn.info.name.lock() = String::from_utf8_lossy(&a[2]).into_owned();
            ctx.w.ok();
        }
        "getname" if a.len() == 2 => {
            let n = ctx.conn.info.name.lock().clone();
            if n.is_empty() {
                ctx.w.null();
            } else {
                ctx.w.bulk(n.as_bytes());
            }
        }
        "info" if a.len() == 2 => {
            let line = ctx.shared().client_line(&ctx.conn.info, ctx.eng.now_ms());
            ctx.w.verbatim("txt", line.as_bytes());
        }
        "list" => {
            let mut ids: Option<Vec<u64>> = None;
            let mut i = 2;
            while i < a.len() {
                if is(&a[i], "type") && i + 1 < a.len() {
                    i += 2;
                } else if is(&a[i], "id") && i + 1 < a.len() {
                    let mut v = Vec::new();
                    for x in &a[i + 1..] {
                        let id = int_arg(x).map_err(|_| CmdError::msg("ERR Invalid client ID"))?;
                        v.push(id as u64);
                    }
                    ids = Some(v);
                    i = a.len();
                } else {
                    return Err(CmdError::Syntax);
                }
            }
            let text = ctx
                .shared()
                .client_list(ids.as_deref(), ctx.conn.scope(), ctx.eng.now_ms());
            ctx.w.verbatim("txt", text.as_bytes());
        }
        "kill" => client_kill(ctx, a)?,
        "tracking" | "caching" | "getredir" | "trackinginfo" => {
            super::tracking::client(ctx, a, &sub)?
        }
        "pause" => super::pause::client_pause(ctx, a)?,
        "unpause" => super::pause::client_unpause(ctx, a)?,
        "unblock" => {
            if !(3..=4).contains(&a.len()) {
                if a.len() < 3 {
                    return Err(sub_arity(&sub));
                }
                return Err(CmdError::msg(
                    "ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.",
                ));
            }
            let error = match a.get(3) {
                None => false,
                Some(r) if is(r, "timeout") => false,
                Some(r) if is(r, "error") => true,
                Some(_) => {
                    return Err(CmdError::msg(
                        "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
                    ));
                }
            };
            let id = int_arg(&a[2])?;
            let done = u64::try_from(id).is_ok_and(|id| {
                super::blocking::unblock(ctx.shared(), ctx.conn.scope(), id, error)
            });
            ctx.w.integer(i64::from(done));
        }
        "setinfo" => {
            if a.len() != 4 {
                return Err(sub_arity(&sub));
            }
            let attr = lower(&a[2]);
            if attr != "lib-name" && attr != "lib-ver" {
                return Err(CmdError::msg(format!(
                    "ERR Unrecognized option '{}'",
                    String::from_utf8_lossy(&a[2])
                )));
            }
            if a[3].iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
                return Err(CmdError::msg(format!(
                    "ERR {attr} cannot contain spaces, newlines or special characters."
                )));
            }
            let v = String::from_utf8_lossy(&a[3]).into_owned();
            if attr == "lib-name" {
                *ctx.conn.info.lib_name.lock() = v;
            } else {
                *ctx.conn.info.lib_ver.lock() = v;
            }
            ctx.w.ok();
        }
        "reply" if a.len() == 3 => {
            if is(&a[2], "on") {
                ctx.conn.reply_off = false;
                ctx.conn.skip_current = false;
                ctx.conn.skip_next = false;
                ctx.w.ok();
            } else if is(&a[2], "off") {
                ctx.conn.reply_off = true;
            } else if is(&a[2], "skip") {
                if !ctx.conn.reply_off {
                    ctx.conn.skip_next = true;
                }
            } else {
                return Err(CmdError::Syntax);
            }
        }
        // NO-EVICT: Locus has no client eviction (Redis's maxmemory-clients), so no client is
        // ever evicted for the memory all clients use; the output buffer limits hold for every
        // client, as they do in Redis for a no-evict one. NO-EVICT is accepted and changes nothing.
        "no-evict" | "no-touch" if a.len() == 3 => {
            if !is(&a[2], "on") && !is(&a[2], "off") {
                return Err(CmdError::Syntax);
            }
            ctx.w.ok();
        }
        "help" => {
            let lines = [
                "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ID",
                "    Return the ID of the current connection.",
                "GETNAME",
                "    Return the name of the current connection.",
                "SETNAME <name>",
                "    Assign the name <name> to the current connection.",
                "LIST [TYPE normal] [ID <id> [<id> ...]]",
                "    Return information about client connections.",
                "INFO",
                "    Return information about the current client connection.",
                "KILL <ip:port> | KILL [ID <id>] [ADDR <ip:port>] [LADDR <ip:port>] [SKIPME yes|no]",
                "    Kill connections.",
                "SETINFO <LIB-NAME|LIB-VER> <value>",
                "    Set client library name or version.",
                "REPLY (ON|OFF|SKIP)",
                "    Replies on, off, or off for the next command only.",
                "PAUSE <timeout> [WRITE|ALL]",
                "    Hold the commands of the clients (of this tenant) for <timeout> milliseconds;",
                "    WRITE holds only the commands that may change data.",
                "UNPAUSE",
                "    End a pause.",
                "UNBLOCK <clientid> [TIMEOUT|ERROR]",
                "    Unblock the specified blocked client.",
                "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]] [OPTIN] [OPTOUT] [NOLOOP]",
                "    Control server assisted client side caching.",
                "CACHING (YES|NO)",
                "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
                "GETREDIR",
                "    Return the client ID we are redirecting to when tracking is enabled.",
                "TRACKINGINFO",
                "    Report tracking status for the current connection.",
                "HELP",
                "    Print this help.",
            ];
            ctx.w.array(lines.len());
            for l in lines {
                ctx.w.simple(l);
            }
        }
        "id" | "getname" | "info" | "no-evict" | "no-touch" | "reply" => {
            return Err(sub_arity(&sub));
        }
        _ => {
            return Err(CmdError::msg(format!(
                "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                String::from_utf8_lossy(&a[1])
            )));
        }
    }
    Ok(())
}

/// CLIENT LIST's `cmd=` for a container command: the subcommand's full name (`client|list`),
/// as Redis shows it (the connection path calls this after `ClientInfo::set_last_cmd`).
pub fn note_subcommand(
    info: &crate::server::ClientInfo,
    spec: &super::CommandSpec,
    a: Args<'_, '_>,
) {
    if spec.subcommands.is_empty() || a.len() < 2 {
        return;
    }
    let full = format!("{}|{}", spec.name, lower(&a[1]));
    if spec.subcommands.contains(&full.as_str()) {
        *info.last_unknown_cmd.lock() = full;
        info.last_cmd.store(
            crate::server::LAST_CMD_UNKNOWN,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

fn client_kill(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let me = ctx.conn.info.id;
    if a.len() == 2 {
        return Err(sub_arity("kill"));
    }
    if a.len() == 3 {
        let addr = String::from_utf8_lossy(&a[2]).into_owned();
        let n = ctx
            .shared()
            .kill_visible(ctx.conn.scope(), |c| c.addr.to_string() == addr);
        if n == 0 {
            return Err(CmdError::msg("ERR No such client"));
        }
        ctx.w.ok();
        return Ok(());
    }
    if a.len() < 4 || !a.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    let (mut id, mut addr, mut laddr, mut skipme) = (None, None, None, true);
    // TYPE: None = any; Some(None) = no client has it (master, replica); Some(Some(pubsub)).
    let mut kind: Option<Option<bool>> = None;
    let mut user: Option<String> = None;
    for kv in a[2..].chunks(2) {
        let v = String::from_utf8_lossy(&kv[1]).into_owned();
        match lower(&kv[0]).as_str() {
            "id" => {
                id = Some(
                    super::parse_i64(&kv[1])
                        .filter(|&x| x > 0)
                        .ok_or_else(|| CmdError::msg("ERR client-id should be greater than 0"))?
                        as u64,
                )
            }
            "addr" => addr = Some(v),
            "laddr" => laddr = Some(v),
            "skipme" => {
                skipme = match v.to_ascii_lowercase().as_str() {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(CmdError::Syntax),
                }
            }
            "type" => {
                kind = Some(match v.to_ascii_lowercase().as_str() {
                    "normal" => Some(false),
                    "pubsub" => Some(true),
                    // Locus has no replication: no client is a master or a replica.
                    "master" | "replica" | "slave" => None,
                    _ => return Err(CmdError::msg(format!("ERR Unknown client type '{v}'"))),
                })
            }
            "user" => {
                let tenancy = ctx.shared().tenancy();
                let known = v == "default"
                    || tenancy.users.contains_key(&v)
                    || tenancy.admin.as_ref().is_some_and(|(a, _)| *a == v);
                if !known {
                    return Err(CmdError::msg(format!("ERR No such user '{v}'")));
                }
                user = Some(v);
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    let subscribers = match kind {
        Some(Some(_)) => ctx.shared().pubsub().subscriber_ids(),
        _ => Default::default(),
    };
    let n = ctx.shared().kill_visible(ctx.conn.scope(), |c| {
        id.is_none_or(|i| c.id == i)
            && kind.is_none_or(|k| k.is_some_and(|p| subscribers.contains(&c.id) == p))
            && user.as_ref().is_none_or(|u| *c.user.lock() == *u)
            && addr.as_ref().is_none_or(|x| &c.addr.to_string() == x)
            && laddr.as_ref().is_none_or(|x| &c.laddr.to_string() == x)
            && !(skipme && c.id == me)
    });
    if !skipme || id == Some(me) {
        // Killing ourselves: reply first, then close.
        if ctx.conn.info.killed() {
            ctx.conn.close = true;
        }
    }
    ctx.w.integer(n as i64);
    Ok(())
}

/// ACL WHOAMI | HELP (Locus has no ACL rules beyond tenant users; see AUTH).
pub fn acl(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    match lower(&a[1]).as_str() {
        "whoami" if a.len() == 2 => ctx.w.bulk(ctx.conn.user.as_bytes()),
        "whoami" => return Err(CmdError::WrongArity("acl|whoami".into())),
        "help" => {
            let lines = [
                "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "WHOAMI",
                "    Return the current connection username.",
                "HELP",
                "    Print this help.",
            ];
            ctx.w.array(lines.len());
            for l in lines {
                ctx.w.simple(l);
            }
        }
        _ => {
            return Err(CmdError::msg(format!(
                "ERR unknown subcommand '{}'. Try ACL HELP.",
                String::from_utf8_lossy(&a[1])
            )));
        }
    }
    Ok(())
}
