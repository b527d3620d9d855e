//! Link settings of the `locus` executable that keep its resident size small (issue 28,
//! acceptance 4: a memcached-face server's RSS beside memcached's).
//!
//! * `--symbol-ordering-file text-order/hot.txt`: the ~1 MiB of functions a serving `locus serve`
//!   runs are placed together at the start of `.text`. The kernel maps an executable in 64 KiB
//!   windows around each page fault, so code spread over the whole 8 MiB `.text` kept 5 to 6 MiB
//!   of it resident; grouped, about the code that runs. The file is generated
//!   (`text-order/generate.py`); names it has that the binary no longer has are skipped.
//! * `-z pack-relative-relocs` (DT_RELR): the position-independent executable's ~13,500 relative
//!   relocations in a few KiB instead of 320 KiB of `.rela.dyn`, which the dynamic loader reads
//!   whole at every start.
//!
//! Both only for release-like profiles of x86_64 Linux with glibc, linked by rustc's default
//! `rust-lld` (the first is an lld option; rustc 1.90 and later, checked with `rustc -vV`);
//! `LOCUS_LINK_LAYOUT=0` leaves both out, and a
//! `-C linker`/`link-self-contained` in RUSTFLAGS (another linker) does too. DT_RELR needs glibc
//! 2.36 or later where the binary runs.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=text-order/hot.txt");
    println!("cargo:rerun-if-env-changed=LOCUS_LINK_LAYOUT");
    let var = |k: &str| env::var(k).unwrap_or_default();
    let rustflags = var("CARGO_ENCODED_RUSTFLAGS");
    if var("LOCUS_LINK_LAYOUT") == "0"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
        || var("PROFILE") != "release"
        || rustflags.contains("linker")
        || rustflags.contains("link-self-contained")
        || !links_with_rust_lld(&var("RUSTC"))
    {
        return;
    }
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("text-order/hot.txt");
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
}

/// Whether this rustc links x86_64 Linux binaries with its own `rust-lld` by default (1.90 and
/// later): the workspace builds with 1.88 too, whose default is the system's `cc` and GNU ld,
/// which has no `--symbol-ordering-file`.
fn links_with_rust_lld(rustc: &str) -> bool {
    let rustc = if rustc.is_empty() { "rustc" } else { rustc };
    let Ok(out) = std::process::Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let minor = text
        .lines()
        .find_map(|l| l.strip_prefix("release: 1."))
        .and_then(|rest| rest.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|m| m >= 90)
}
