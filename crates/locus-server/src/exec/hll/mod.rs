//! HyperLogLog commands: PFADD PFCOUNT PFMERGE PFSELFTEST.
//!
//! As in Redis, an HLL is a plain string value in Redis's own layout ([`encoding`]): GET, SET,
//! APPEND, SETRANGE... see its bytes, TYPE says `string`, and the PF commands refuse a string
//! that is not one (`WRONGTYPE`) or whose registers do not decode (`INVALIDOBJ`). Every change is
//! a read-modify-write of the whole string through the engine, the TTL kept; a write the engine
//! refuses (OOM) leaves the old value as it was.
//!
//! PFCOUNT of one key caches the cardinality in the value's header, so it rewrites the key (a
//! write in Redis's sense: WATCH sees it) although it is flagged read-only. PFADD and PFMERGE do
//! their WATCH and OBJECT ENCODING bookkeeping here (see `wrote_nothing` in the dispatcher):
//! PFADD touches its key only when a register changed, PFMERGE only its destination, and every
//! value a PF command rewrites is a raw string, as Redis unshares it.

pub mod encoding;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use locus_engine::{Expire, SetCond, SetOptions, TenantId};

use self::encoding::{Corrupt, Edit, REGISTERS};
use super::notify::{STRING, notify};
use super::privilege::noperm;
use super::{Args, CmdError, CmdResult, Ctx};

/// `hll-sparse-max-bytes`: the longest a sparse value may grow before it is promoted to dense.
/// One setting for the whole process, as in Redis (CONFIG SET / GET).
static SPARSE_MAX_BYTES: AtomicU64 = AtomicU64::new(3000);

/// The current `hll-sparse-max-bytes`.
pub fn sparse_max_bytes() -> u64 {
    SPARSE_MAX_BYTES.load(Ordering::Relaxed)
}

/// Changes `hll-sparse-max-bytes` (values already stored are not converted).
pub fn set_sparse_max_bytes(bytes: u64) {
    SPARSE_MAX_BYTES.store(bytes, Ordering::Relaxed);
}

/// Redis's reply for a string that is not an HLL.
fn wrong_type() -> CmdError {
    CmdError::msg("WRONGTYPE Key is not a valid HyperLogLog string value.")
}

/// Redis's reply for an HLL whose registers do not decode.
fn corrupt(_: Corrupt) -> CmdError {
    CmdError::msg("INVALIDOBJ Corrupted HLL object detected")
}

fn check(v: &[u8]) -> CmdResult {
    if encoding::is_hll(v) {
        Ok(())
    } else {
        Err(wrong_type())
    }
}

/// Writes the value back, keeping the key's TTL.
fn store(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8], v: &[u8]) -> CmdResult {
    let opts = SetOptions {
        expire: Expire::Keep,
        cond: SetCond::Always,
    };
    ctx.eng.set(t, key, v, opts)?;
    Ok(())
}

/// Longest string OBJECT ENCODING reports `embstr` for by its shape.
const EMBSTR_MAX: usize = 44;

/// Redis unshares the value a PF command edits: it is a raw string from then on, however short.
fn unshared(ctx: &Ctx<'_>, t: TenantId, key: &[u8], len: usize) {
    if len <= EMBSTR_MAX {
        ctx.fx.note_encoding("raw", t, &[key]);
    }
}

/// `PFADD key [element ...]`: 1 if a register changed (or the key was created), else 0.
pub fn pfadd(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let key = &a[1][..];
    let old = ctx.eng.peek_str(t, key)?.map(<[u8]>::to_vec);
    let (mut v, mut updated) = match &old {
        Some(v) => {
            check(v)?;
            unshared(ctx, t, key, v.len());
            (Edit::new(v.clone()), false)
        }
        None => (Edit::new(encoding::new_sparse()), true),
    };
    let limit = sparse_max_bytes();
    for ele in &a[2..] {
        match v.add(ele, limit) {
            Ok(changed) => updated |= changed,
            Err(e) => {
                // Redis edits the value in place: what the elements before this one changed
                // stays, and nobody is told (no WATCH touch).
                if old.as_deref() != Some(v.bytes()) {
                    let _ = store(ctx, t, key, v.bytes());
                }
                return Err(corrupt(e));
            }
        }
    }
    if updated {
        v.invalidate();
        store(ctx, t, key, v.bytes())?;
        ctx.fx.key_changed(t, key);
        notify(ctx.fx, t, ctx.conn.db, STRING, "pfadd", key);
        if old.is_none() {
            unshared(ctx, t, key, v.bytes().len());
        }
    }
    ctx.w.integer(i64::from(updated));
    Ok(())
}

/// `PFCOUNT key [key ...]`: the estimated cardinality of one HLL (cached in its header), or of
/// the union of several (computed, not cached). Missing keys count as empty HLLs.
pub fn pfcount(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    if a.len() > 2 {
        let mut max = Box::new([0u8; REGISTERS]);
        let mut seen: HashSet<&[u8]> = HashSet::new();
        for key in &a[1..] {
            let Some(v) = ctx.eng.get_str(t, key)? else {
                continue;
            };
            // A key named again adds nothing to the union (it was checked the first time).
            if !seen.insert(&key[..]) {
                continue;
            }
            check(v)?;
            encoding::merge_into(&mut max, v).map_err(corrupt)?;
        }
        // Redis replies with the 64-bit estimate read as a signed integer.
        ctx.w.integer(encoding::count_registers(&max) as i64);
        return Ok(());
    }
    let key = &a[1][..];
    let Some(v) = ctx.eng.get_str(t, key)? else {
        ctx.w.integer(0);
        return Ok(());
    };
    check(v)?;
    let len = v.len();
    // The cached cardinality, or (stale) the value to count and rewrite.
    let cached = encoding::cached(v).ok_or_else(|| v.to_vec());
    unshared(ctx, t, key, len);
    let card = match cached {
        Ok(card) => card,
        Err(mut v) => {
            let card = encoding::count(&v).map_err(corrupt)?;
            encoding::set_cached(&mut v, card);
            // Same length, so the engine rewrites it in place; were it refused, the count
            // still stands (Redis never refuses PFCOUNT for memory).
            if store(ctx, t, key, &v).is_ok() {
                ctx.fx.key_changed(t, key);
            }
            card
        }
    };
    ctx.w.integer(card as i64);
    Ok(())
}

/// `PFMERGE destkey [sourcekey ...]`: the destination (itself one of the inputs) becomes the
/// union of all; it turns dense if any input is dense.
pub fn pfmerge(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let mut max = Box::new([0u8; REGISTERS]);
    let mut any_dense = false;
    let mut seen: HashSet<&[u8]> = HashSet::new();
    for key in &a[1..] {
        let Some(v) = ctx.eng.get_str(t, key)? else {
            continue;
        };
        // A key named again adds nothing to the union (it was checked the first time).
        if !seen.insert(&key[..]) {
            continue;
        }
        check(v)?;
        any_dense |= encoding::is_dense(v);
        encoding::merge_into(&mut max, v).map_err(corrupt)?;
    }
    let dest = &a[1][..];
    let mut v = Edit::new(
        ctx.eng
            .peek_str(t, dest)?
            .map_or_else(encoding::new_sparse, <[u8]>::to_vec),
    );
    if any_dense {
        v.promote().map_err(corrupt)?;
    }
    let limit = sparse_max_bytes();
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            // The destination decoded above, so every register is found.
            v.raise(i, m, limit).map_err(corrupt)?;
        }
    }
    v.invalidate();
    store(ctx, t, dest, v.bytes())?;
    ctx.fx.key_changed(t, dest);
    notify(ctx.fx, t, ctx.conn.db, STRING, "pfadd", dest);
    unshared(ctx, t, dest, v.bytes().len());
    ctx.w.ok();
    Ok(())
}

/// `PFSELFTEST`: Redis's self-test of the register layout (random values written and read back)
/// and of the estimator (10 million elements added to a dense and to a sparse HLL, which must
/// agree and stay within six standard errors). Admin only: it holds the engine for a while.
pub fn pfselftest(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    if !ctx.conn.admin {
        return Err(noperm("pfselftest"));
    }
    selftest(sparse_max_bytes()).map_err(CmdError::Msg)?;
    ctx.w.ok();
    Ok(())
}

/// A small xorshift generator for the self-test.
struct Rng(u64);

impl Rng {
    fn seeded() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Rng(nanos | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn selftest(sparse_limit: u64) -> Result<(), String> {
    use encoding::{HDR_SIZE, dense_get, dense_put};
    let mut rng = Rng::seeded();
    let mut dense = Edit::new(encoding::new_sparse());
    dense
        .promote()
        .map_err(|_| "TESTFAILED new HLL".to_string())?;
    let mut dense = dense.into_bytes();
    let mut want = vec![0u8; REGISTERS];
    for _ in 0..1000 {
        for (i, w) in want.iter_mut().enumerate() {
            *w = (rng.next() & 63) as u8;
            dense_put(&mut dense[HDR_SIZE..], i, *w);
        }
        for (i, &w) in want.iter().enumerate() {
            let got = dense_get(&dense[HDR_SIZE..], i);
            if got != w {
                return Err(format!(
                    "TESTFAILED Register {i} should be {w} but is {got}"
                ));
            }
        }
    }
    dense[HDR_SIZE..].fill(0);
    let mut dense = Edit::new(dense);
    let mut sparse = Edit::new(encoding::new_sparse());
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let seed = rng.next();
    let mut checkpoint = 1u64;
    for j in 1..=10_000_000u64 {
        let ele = (j ^ seed).to_le_bytes();
        let _ = dense.add(&ele, sparse_limit);
        let _ = sparse.add(&ele, sparse_limit);
        if j != checkpoint {
            continue;
        }
        if j < sparse_limit / 2 && sparse.is_dense() {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let est = encoding::count(dense.bytes()).unwrap_or(0);
        if encoding::count(sparse.bytes()).ok() != Some(est) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = (checkpoint as i64 - est as i64).unsigned_abs();
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}
