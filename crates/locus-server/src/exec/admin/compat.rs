//! Redis settings that CONFIG knows for client compatibility although they mean nothing in Locus
//! (no persistence files, no replication, no client eviction): `save`, `appendonly`,
//! `repl-backlog-size`, `maxmemory-clients`. CONFIG SET validates them as Redis does and keeps
//! the value, so CONFIG GET answers what was set; nothing else reads them (docs/configuration.md
//! says so). `replicaof` / `slaveof` read as empty (Locus is never a replica) and cannot be set.
//! Redis's settings that cannot change at runtime are refused with Redis's `immutable` error;
//! `port` and `bind` may be "set" to their current value only (Locus does not move a listener at
//! runtime), and a port another process holds gets Redis's `Unable to listen` error.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use parking_lot::Mutex;

/// Settings kept, with their value (Redis's defaults until set).
static KEPT: LazyLock<Mutex<BTreeMap<&'static str, String>>> = LazyLock::new(|| {
    Mutex::new(
        [
            ("save", String::new()),
            ("appendonly", "no".to_string()),
            ("repl-backlog-size", (1u64 << 20).to_string()),
            ("maxmemory-clients", "0".to_string()),
        ]
        .into_iter()
        .collect(),
    )
});

/// Redis settings CONFIG SET refuses as immutable.
pub const IMMUTABLE: &[&str] = &[
    "daemonize",
    "databases",
    "io-threads",
    "tcp-backlog",
    "supervised",
    "pidfile",
    "logfile",
    "syslog-enabled",
    "syslog-ident",
    "syslog-facility",
    "unixsocket",
    "unixsocketperm",
    "cluster-enabled",
    "cluster-config-file",
    "cluster-port",
    "aclfile",
    "always-show-logo",
    "set-proc-title",
    "disable-thp",
    "enable-protected-configs",
    "enable-debug-command",
    "enable-module-command",
];

/// The kept settings and `replicaof` / `slaveof`, for CONFIG GET.
pub fn params() -> Vec<(&'static str, String)> {
    let mut v: Vec<(&'static str, String)> =
        KEPT.lock().iter().map(|(k, v)| (*k, v.clone())).collect();
    v.push(("replicaof", String::new()));
    v.push(("slaveof", String::new()));
    v
}

/// Whether `name` is one of the kept settings.
pub fn is_kept(name: &str) -> bool {
    KEPT.lock().contains_key(name)
}

/// Checks a value for a kept setting as Redis does; the normalised value to keep.
///
/// # Errors
/// Redis's reason (the caller adds the `CONFIG SET failed` prefix).
pub fn check(name: &str, v: &str) -> Result<String, String> {
    let memory = |v: &str| {
        v.parse::<locus_common::ByteSize>()
            .map(|b| b.0.to_string())
            .map_err(|_| "argument must be a memory value".to_string())
    };
    match name {
        "save" => {
            let words: Vec<&str> = v.split_whitespace().collect();
            if !words.len().is_multiple_of(2) || words.iter().any(|w| w.parse::<u64>().is_err()) {
                return Err("Invalid save parameters".to_string());
            }
            Ok(words.join(" "))
        }
        "appendonly" => match v.to_ascii_lowercase().as_str() {
            "yes" | "no" => Ok(v.to_ascii_lowercase()),
            _ => Err("argument must be 'yes' or 'no'".to_string()),
        },
        "repl-backlog-size" => memory(v),
        "maxmemory-clients" => match v.strip_suffix('%') {
            Some(p) => {
                let n: u64 = p
                    .parse()
                    .map_err(|_| "argument must be a memory or percent value".to_string())?;
                if n > 100 {
                    return Err("percentage argument must be less or equal to 100".to_string());
                }
                Ok(format!("{n}%"))
            }
            None => memory(v),
        },
        _ => Err("not a kept setting".to_string()),
    }
}

/// Keeps checked values (after the whole CONFIG SET passed).
pub fn keep(name: &str, v: String) {
    if let Some(slot) = KEPT.lock().get_mut(name) {
        *slot = v;
    }
}

/// CONFIG SET `port`: its current value, else Redis's error for a port in use, else Locus's
/// refusal to move its listener at runtime.
pub fn check_port(current: u16, bind: &str, v: &str) -> Result<(), String> {
    let port: u16 = v
        .parse()
        .map_err(|_| "argument must be between 0 and 65535 inclusive".to_string())?;
    if port == current {
        return Ok(());
    }
    let host = bind.split_whitespace().next().unwrap_or("127.0.0.1");
    if let Err(e) = std::net::TcpListener::bind((host, port)) {
        return Err(format!("Unable to listen on this port: {e}"));
    }
    Err("Locus does not move its listener at runtime: set [server] port in the configuration file and restart".to_string())
}
