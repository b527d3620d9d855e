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
//! `rust-lld` (the first is an lld option); `LOCUS_LINK_LAYOUT=0` leaves both out, and a
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
