//! `INFO errorstats` and `total_error_replies`, as Redis 7.0 counts them: every error reply the
//! Redis face writes is counted once, under its code (the first word of the message when a space
//! comes within its first 31 bytes, else `ERR`), wherever it is written: a refused or failed
//! command, one inside EXEC, one a script's `redis.call` / `redis.pcall` ran. A script passing on
//! the error reply of a command it called (`return redis.pcall(...)`, an uncaught `redis.call`
//! error) writes it uncounted, as Redis's `ignore_error_stats_update`; an error the script makes
//! itself (`redis.error_reply`, a Lua error) is counted when it is replied.
//!
//! Server-wide figures, like INFO commandstats: the admin's INFO shows them, a tenant's shows an
//! empty section (the codes would tell of other tenants' traffic). `CONFIG RESETSTAT` clears
//! them. Codes are bounded: a client choosing error codes (`redis.error_reply`) adds at most
//! [`MAX_CODES`] names; later new codes are counted in `total_error_replies` only.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Distinct error codes kept (Redis 7.2 stops adding codes at 128 too).
pub const MAX_CODES: usize = 128;

static TOTAL: AtomicU64 = AtomicU64::new(0);
static CODES: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// The code an error reply is counted under.
fn code(msg: &str) -> &str {
    let head = &msg.as_bytes()[..msg.len().min(31)];
    match head.iter().position(|&b| b == b' ') {
        Some(n) if n > 0 => &msg[..n],
        _ => "ERR",
    }
}

/// Counts one error reply (the hook of `ReplyWriter::error`).
pub fn record(msg: &str) {
    TOTAL.fetch_add(1, Ordering::Relaxed);
    let code = code(msg);
    let mut codes = CODES.lock();
    if let Some(n) = codes.get_mut(code) {
        *n += 1;
    } else if codes.len() < MAX_CODES {
        codes.insert(code.to_string(), 1);
    }
}

/// Starts counting every error reply this process writes (once; later calls change nothing).
pub fn install() {
    locus_protocol::reply::set_error_hook(record);
}

/// Error replies written since the start or the last `CONFIG RESETSTAT`.
pub fn total() -> u64 {
    TOTAL.load(Ordering::Relaxed)
}

/// `CONFIG RESETSTAT`.
pub fn reset() {
    TOTAL.store(0, Ordering::Relaxed);
    CODES.lock().clear();
}

/// The section's lines, `errorstat_<CODE>:count=<n>`, by code.
pub fn info_lines(out: &mut String) {
    for (code, n) in CODES.lock().iter() {
        let _ = write!(out, "errorstat_{code}:count={n}\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::code;

    #[test]
    fn the_code_is_the_first_word_within_31_bytes_else_err() {
        assert_eq!(code("WRONGTYPE Operation against a key"), "WRONGTYPE");
        assert_eq!(code("ERR syntax error"), "ERR");
        assert_eq!(code("NOSCRIPT No matching script."), "NOSCRIPT");
        assert_eq!(code("nospace"), "ERR");
        assert_eq!(code(""), "ERR");
        assert_eq!(code(" leading space"), "ERR");
        let long = format!("{} tail", "X".repeat(31));
        assert_eq!(code(&long), "ERR");
        let fits = format!("{} tail", "Y".repeat(30));
        assert_eq!(code(&fits), "Y".repeat(30));
    }
}
