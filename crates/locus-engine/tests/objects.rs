//! Objects (hashes, lists, sets, sorted sets live outside the pages): the budget holds with them,
//! every removal path frees them, RENAME moves them, strings and objects refuse each other.

mod common;

use std::any::Any;

use common::*;
use locus_common::{Clock, Rng};
use locus_engine::{EngineConfig, EngineError, Object, Policy, SetOptions, ValueRef};

/// A toy collection: a list of byte strings charged 16 bytes each plus their length.
#[derive(Debug, Clone, Default)]
struct Bag(Vec<Vec<u8>>);

impl Object for Bag {
    fn type_name(&self) -> &'static str {
        "list"
    }
    fn encoding(&self) -> &'static str {
        "quicklist"
    }
    fn charge(&self) -> u64 {
        self.0.iter().map(|e| 16 + e.len() as u64).sum()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn clone_object(&self) -> Box<dyn Object> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

fn bag(o: &mut dyn Object) -> &mut Bag {
    o.as_any_mut().downcast_mut::<Bag>().unwrap()
}

/// Pushes `n` elements of `len` bytes onto the bag at `key` (created when absent), as a server
/// command does: reserve the growth, change, settle.
fn push(
    e: &mut locus_engine::Engine,
    t: locus_engine::TenantId,
    key: &[u8],
    n: usize,
    len: usize,
) -> Result<(), EngineError> {
    e.obj_reserve(t, (n * (16 + len)) as u64)?;
    let o = match e.obj_mut(t, key) {
        Ok(Some(o)) => o,
        Ok(None) => match e.obj_create(t, key, Box::new(Bag::default()), false) {
            Ok(o) => o,
            Err(err) => {
                e.obj_settle(t, key);
                return Err(err);
            }
        },
        Err(err) => {
            e.obj_settle(t, key);
            return Err(err);
        }
    };
    for _ in 0..n {
        bag(o).0.push(vec![b'x'; len]);
    }
    e.obj_settle(t, key);
    Ok(())
}

fn large_cfg(pages: u64) -> EngineConfig {
    EngineConfig {
        large_items: Some(2048),
        ..small(pages)
    }
}

#[test]
fn objects_grow_within_the_budget_and_evict_whole_keys() {
    let (mut e, _clock) = engine_with(large_cfg(16));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    let mut rng = Rng::new(7);
    for step in 0..4_000u64 {
        let k = key(rng.below(40));
        match rng.below(10) {
            0 => {
                e.set(t, &k, &val(step, 100), SetOptions::default()).ok();
            }
            1 => {
                e.delete(t, &k);
            }
            _ => match push(&mut e, t, &k, 1 + rng.below(20) as usize, 100) {
                Ok(()) | Err(EngineError::WrongType) => {}
                Err(other) => panic!("step {step}: {other}"),
            },
        }
        let s = e.stats();
        assert!(
            s.used_bytes <= e.config().maxmemory,
            "step {step}: {} > {}",
            s.used_bytes,
            e.config().maxmemory
        );
        e.check_invariants();
    }
    assert!(
        e.tenant_stats(t).evictions > 0,
        "the budget forced evictions"
    );
}

#[test]
fn strings_and_objects_refuse_each_other() {
    let (mut e, _clock) = engine_with(large_cfg(16));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    e.set(t, b"s", b"v", SetOptions::default()).unwrap();
    assert!(matches!(
        push(&mut e, t, b"s", 1, 1),
        Err(EngineError::WrongType)
    ));
    push(&mut e, t, b"l", 3, 1).unwrap();
    assert_eq!(e.get_str(t, b"l"), Err(EngineError::WrongType));
    assert_eq!(e.peek_str(t, b"l"), Err(EngineError::WrongType));
    assert_eq!(e.get(t, b"l"), None);
    assert_eq!(e.key_type(t, b"l"), Some("list"));
    assert_eq!(e.key_type(t, b"s"), Some("string"));
    // SET replaces an object, and frees it.
    e.set(t, b"l", b"now a string", SetOptions::default())
        .unwrap();
    assert_eq!(e.get_str(t, b"l"), Ok(Some(&b"now a string"[..])));
    e.check_invariants();
}

#[test]
fn every_removal_frees_the_object() {
    let (mut e, clock) = engine_with(large_cfg(16));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    let base = e.tenant_stats(t).large_bytes;
    push(&mut e, t, b"a", 10, 100).unwrap();
    assert!(e.tenant_stats(t).large_bytes >= base + 10 * 116);
    assert!(e.delete(t, b"a"));
    assert_eq!(e.tenant_stats(t).large_bytes, base);
    push(&mut e, t, b"b", 10, 100).unwrap();
    e.set_expire(t, b"b", Some(clock.now_ms() + 10));
    clock.advance_ms(20);
    assert!(e.peek_value(t, b"b").is_none());
    assert_eq!(e.tenant_stats(t).large_bytes, base);
    push(&mut e, t, b"c", 10, 100).unwrap();
    e.flush(t);
    assert_eq!(e.tenant_stats(t).large_bytes, base);
    e.check_invariants();
    // Emptied: the key goes.
    push(&mut e, t, b"d", 1, 1).unwrap();
    e.obj_reserve(t, 0).unwrap();
    bag(e.obj_mut(t, b"d").unwrap().unwrap()).0.clear();
    assert!(e.obj_settle(t, b"d"));
    assert!(!e.exists(t, b"d"));
    assert_eq!(e.tenant_stats(t).large_bytes, base);
    e.check_invariants();
}

#[test]
fn rename_moves_the_object() {
    let (mut e, _clock) = engine_with(large_cfg(16));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    push(&mut e, t, b"from", 5, 10).unwrap();
    push(&mut e, t, b"to", 7, 10).unwrap();
    assert_eq!(e.rename(t, b"from", b"to", false), Ok(true));
    match e.peek_value(t, b"to") {
        Some(ValueRef::Obj(o)) => assert_eq!(o.len(), 5),
        other => panic!("{other:?}"),
    }
    assert!(!e.exists(t, b"from"));
    e.check_invariants();
    // COPY-like: a deep copy stored under another key.
    let copy = match e.peek_value(t, b"to") {
        Some(ValueRef::Obj(o)) => o.clone_object(),
        other => panic!("{other:?}"),
    };
    e.obj_store(t, b"copy", copy, false).unwrap();
    assert_eq!(e.key_type(t, b"copy"), Some("list"));
    e.check_invariants();
}

#[test]
fn noeviction_refuses_growth_past_the_budget() {
    let (mut e, _clock) = engine_with(large_cfg(8));
    let t = tenant(&mut e, "a", Policy::NoEviction);
    let mut refused = false;
    for i in 0..200 {
        match push(&mut e, t, &key(i % 3), 10, 200) {
            Ok(()) => {}
            Err(EngineError::OutOfMemory) => {
                refused = true;
                break;
            }
            Err(other) => panic!("{other}"),
        }
        assert!(e.stats().used_bytes <= e.config().maxmemory);
    }
    assert!(refused, "a full noeviction tenant refuses");
    e.check_invariants();
}

#[test]
fn a_detached_object_stays_charged_until_released() {
    let (mut e, _clock) = engine_with(large_cfg(16));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    let other = tenant(&mut e, "b", Policy::AllkeysLru);
    let base = e.tenant_stats(t).large_bytes;
    push(&mut e, t, b"small", 10, 10).unwrap();
    push(&mut e, t, b"big", 100, 10).unwrap();
    push(&mut e, other, b"big", 100, 10).unwrap();
    let theirs = e.tenant_stats(other).large_bytes;
    // Below the free effort asked for: deleted and freed at once.
    let (found, d) = e.delete_detaching(t, b"small", locus_engine::LAZYFREE_THRESHOLD);
    assert!(found && d.is_none());
    let charged = e.tenant_stats(t).large_bytes;
    let (found, d) = e.delete_detaching(t, b"big", locus_engine::LAZYFREE_THRESHOLD);
    let d = d.expect("100 elements pass the threshold");
    assert!(found && !e.exists(t, b"big"));
    assert_eq!(d.tenant, t);
    assert_eq!(
        e.tenant_stats(t).large_bytes,
        charged,
        "charged until really freed"
    );
    e.check_invariants();
    drop(d.object);
    e.release_outside(d.tenant, d.charge);
    assert_eq!(e.tenant_stats(t).large_bytes, base);
    assert!(!e.delete_detaching(t, b"big", 0).0);
    // A flush takes every object of the tenant, none of another's.
    push(&mut e, t, b"x", 3, 10).unwrap();
    push(&mut e, t, b"y", 100, 10).unwrap();
    let ds = e.flush_detaching(t);
    assert_eq!(ds.len(), 2);
    assert!(e.is_empty(t) && e.exists(other, b"big"));
    e.check_invariants();
    for d in ds {
        e.release_outside(d.tenant, d.charge);
    }
    assert_eq!(e.tenant_stats(t).large_bytes, base);
    assert_eq!(e.tenant_stats(other).large_bytes, theirs);
    e.check_invariants();
}
