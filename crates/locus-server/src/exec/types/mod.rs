//! Redis's collection types (hashes, lists, sets, sorted sets): their data structures, which are
//! [`locus_engine::Object`]s living outside the pages, and their commands.
//!
//! Every command goes through [`read`] or [`write`]: a read touches the key as GET does (the
//! controllers see it, with the object's size); a write first reserves the most the object can
//! grow (so the budget is charged before the write succeeds, evicting if the policy allows), finds
//! or creates the object, changes it, and settles its charge (an object left empty is deleted, as
//! Redis deletes an empty collection). A key holding another type answers `WRONGTYPE`.

pub mod alloc;
pub mod entries;
pub mod hash;
pub mod limits;
pub mod list;
pub mod packed;
pub mod quicklist;
pub mod set;
// Sorted sets.
pub mod ztree;
// Streams.
pub mod stream;
pub mod zset;

use locus_engine::{Object, TenantId, ValueRef};
use locus_protocol::ReplyWriter;

use super::notify::{GENERIC, notify};
use super::{CmdError, Ctx};

/// Reads the object of type `T` at `key` (touching it as GET does). `Ok(None)` when absent.
///
/// # Errors
/// [`CmdError::WrongType`] when the key holds a string or another type.
pub fn read<T: Object, R>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    f: impl FnOnce(&T) -> R,
) -> Result<Option<R>, CmdError> {
    match ctx.eng.get_value(t, key) {
        None => Ok(None),
        Some(ValueRef::Str(_)) => Err(CmdError::WrongType),
        Some(ValueRef::Obj(o)) => match o.as_any().downcast_ref::<T>() {
            Some(v) => Ok(Some(f(v))),
            None => Err(CmdError::WrongType),
        },
    }
}

/// Like [`read`], with the reply writer at hand (a reply written straight from the object).
///
/// # Errors
/// [`CmdError::WrongType`] when the key holds a string or another type.
pub fn with<T: Object, R>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    f: impl FnOnce(&T, &mut ReplyWriter<'_>) -> R,
) -> Result<Option<R>, CmdError> {
    let Ctx { eng, w, .. } = ctx;
    match eng.get_value(t, key) {
        None => Ok(None),
        Some(ValueRef::Str(_)) => Err(CmdError::WrongType),
        Some(ValueRef::Obj(o)) => match o.as_any().downcast_ref::<T>() {
            Some(v) => Ok(Some(f(v, w))),
            None => Err(CmdError::WrongType),
        },
    }
}

/// Publishes a collection's `event` (of notification `class`) for `key`, and `del` when the
/// write emptied it.
pub fn events(ctx: &Ctx<'_>, t: TenantId, key: &[u8], class: u32, event: &str, deleted: bool) {
    notify(ctx.fx, t, ctx.conn.db, class, event, key);
    if deleted {
        notify(ctx.fx, t, ctx.conn.db, GENERIC, "del", key);
    }
}

/// A write changed `key`: one change for the snapshots' count, and WATCH sees it.
pub fn touched(ctx: &Ctx<'_>, t: TenantId, key: &[u8]) {
    ctx.fx.key_changed(t, key);
}

/// Like [`read`] without touching or counting the access (type checks, sizes).
///
/// # Errors
/// [`CmdError::WrongType`] when the key holds a string or another type.
pub fn peek<T: Object, R>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    f: impl FnOnce(&T) -> R,
) -> Result<Option<R>, CmdError> {
    match ctx.eng.peek_value(t, key) {
        None => Ok(None),
        Some(ValueRef::Str(_)) => Err(CmdError::WrongType),
        Some(ValueRef::Obj(o)) => match o.as_any().downcast_ref::<T>() {
            Some(v) => Ok(Some(f(v))),
            None => Err(CmdError::WrongType),
        },
    }
}

/// Checks that `key` is absent or holds a `T` (commands that validate every key before changing
/// any).
///
/// # Errors
/// [`CmdError::WrongType`].
pub fn check_type<T: Object>(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8]) -> Result<bool, CmdError> {
    Ok(peek::<T, ()>(ctx, t, key, |_| ())?.is_some())
}

/// What a write found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrote {
    /// The key was created by this write.
    pub created: bool,
    /// The object was left empty and its key deleted.
    pub deleted: bool,
}

/// Changes the object of type `T` at `key`: reserves `grow` bytes first (the most the change
/// can add to [`Object::charge`]), creates an empty `T` when the key is absent and `create` is
/// set (else answers `Ok(None)` without calling `f`), runs `f`, then settles.
///
/// # Errors
/// [`CmdError::WrongType`] when the key holds another type; [`CmdError::Oom`] when the growth
/// cannot be made room for (nothing changes then).
pub fn write<T: Object + Default, R>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    grow: u64,
    create: bool,
    f: impl FnOnce(&mut T) -> R,
) -> Result<Option<(R, Wrote)>, CmdError> {
    // The type is checked before memory is made: a WRONGTYPE write evicts nothing.
    let exists = check_type::<T>(ctx, t, key)?;
    if !exists && !create {
        return Ok(None);
    }
    ctx.eng.obj_reserve(t, grow)?;
    let obj = match ctx.eng.obj_mut(t, key) {
        Ok(Some(o)) => Ok((o, false)),
        // Absent (or evicted while room was made).
        Ok(None) if create => ctx
            .eng
            .obj_create(t, key, Box::new(T::default()), false)
            .map(|o| (o, true)),
        Ok(None) => {
            ctx.eng.obj_settle(t, key);
            return Ok(None);
        }
        Err(e) => Err(e),
    };
    let (obj, created) = match obj {
        Ok(x) => x,
        Err(e) => {
            ctx.eng.obj_settle(t, key);
            return Err(e.into());
        }
    };
    let r = match obj.as_any_mut().downcast_mut::<T>() {
        Some(v) => f(v),
        None => {
            ctx.eng.obj_settle(t, key);
            return Err(CmdError::WrongType);
        }
    };
    let deleted = ctx.eng.obj_settle(t, key);
    Ok(Some((r, Wrote { created, deleted })))
}

/// Stores a whole object at `key` (the STORE forms), replacing any value and its TTL; an empty
/// object deletes the key. True when the key existed before.
///
/// # Errors
/// [`CmdError::Oom`] when it does not fit.
pub fn store(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    obj: Box<dyn Object>,
) -> Result<bool, CmdError> {
    let existed = ctx.eng.exists(t, key);
    ctx.eng.obj_store(t, key, obj, false)?;
    Ok(existed)
}
