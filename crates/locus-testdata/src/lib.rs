//! Test-only access to the shared data that lives beside the repository (`../shared` from the
//! workspace root: public traces with exact oracles, Redis's own test suite).
//!
//! A fresh clone has no `../shared`; its test suite must still pass, and must say what it could
//! not check. A test asks for a path with [`require`]:
//!
//! * present: `Some(path)`;
//! * absent: the test is skipped loudly: a banner on stderr, and a line `<test>: <path>` appended
//!   to the skip log (the file named by `LOCUS_SKIP_LOG`, default `target/skipped-tests.txt`),
//!   since `cargo test` hides a passing test's stderr; `scripts/test.sh` prints the log at the end;
//! * absent under `LOCUS_REQUIRE_SHARED=1` (set by `scripts/test.sh` whenever `../shared` exists,
//!   hence in CI): the test fails, so a run that has the data can never skip silently.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The workspace root (this crate sits at `crates/locus-testdata`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared` beside the workspace.
pub fn shared_dir() -> PathBuf {
    workspace_root().join("../shared")
}

/// `../shared/traces`.
pub fn traces_dir() -> PathBuf {
    shared_dir().join("traces")
}

/// Whether missing shared data fails tests instead of skipping them (`LOCUS_REQUIRE_SHARED=1`).
pub fn required() -> bool {
    std::env::var_os("LOCUS_REQUIRE_SHARED").is_some_and(|v| v == "1")
}

/// The skip log: `LOCUS_SKIP_LOG`, else `target/skipped-tests.txt` in the workspace.
pub fn skip_log() -> PathBuf {
    std::env::var_os("LOCUS_SKIP_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/skipped-tests.txt"))
}

/// `path` if it exists; otherwise records that `test` is skipped for it (module documentation)
/// and returns `None`.
///
/// # Panics
/// When `path` is missing and `LOCUS_REQUIRE_SHARED=1`.
pub fn require(test: &str, path: &Path) -> Option<PathBuf> {
    if path.exists() {
        return Some(path.to_path_buf());
    }
    let shown = path.display();
    assert!(
        !required(),
        "{test}: {shown} does not exist, and LOCUS_REQUIRE_SHARED=1 (the shared data is expected \
         beside the repository)"
    );
    eprintln!(
        "\n!!!!!!!! SKIPPED {test}: {shown} not found (shared data beside the repository) !!!!!!!!\n"
    );
    let log = skip_log();
    if let Some(dir) = log.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // Best effort: a log that cannot be written must not fail the test that is skipping.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
    {
        // One write of the whole line: `writeln!` on a `File` writes each piece separately, and
        // tests skipping at once interleaved their pieces in the log.
        let _ = f.write_all(format!("{test}: {shown}\n").as_bytes());
    }
    None
}

/// [`require`] for a file under `../shared/traces`.
pub fn trace(test: &str, name: &str) -> Option<PathBuf> {
    require(test, &traces_dir().join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn present_paths_are_returned_and_missing_ones_logged() {
        let dir = std::env::temp_dir().join(format!("locus-testdata-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let here = dir.join("here");
        std::fs::write(&here, b"x").unwrap();
        assert_eq!(require("t", &here), Some(here.clone()));
        if !required() {
            let log = skip_log();
            let before = std::fs::read_to_string(&log).unwrap_or_default();
            assert_eq!(require("testdata-self-test", &dir.join("absent")), None);
            let after = std::fs::read_to_string(&log).unwrap();
            assert!(after.len() > before.len() && after.contains("testdata-self-test"));
            // Leave the log as it was: this skip is the test's own, not a missing shared file.
            std::fs::write(&log, before).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
