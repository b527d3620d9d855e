//! Objects: values that are not strings (Redis's hashes, lists, sets and sorted sets).
//!
//! An object's key is an ordinary item in its tenant's pages, so the index, TTLs, sampling,
//! eviction, SCAN and the profilers treat it like any key; its value bytes are the id of the
//! object, which lives outside the pages in the engine's object table. What the object holds
//! (every element, its encoding, its allocations: [`Object::charge`]) is charged to its tenant
//! beside the large items (`large_bytes`), so the pools, arbiters and controllers see it and the
//! budget holds exactly: pages + metadata + large items + objects <= `maxmemory`.
//!
//! A write that may grow an object first reserves its growth ([`Engine::obj_reserve`]), which
//! makes room as a large item's allocation does (evicting by policy and arbiter, possibly the key
//! being written, as Redis evicts before running a command); then it changes the object
//! ([`Engine::obj_mut`] or [`Engine::obj_create`]) and settles ([`Engine::obj_settle`]): the
//! object's new charge replaces the reservation, and an object left empty is deleted (Redis
//! deletes a key whose collection becomes empty). Removing the key by any path (DEL, expiry,
//! eviction, overwrite, FLUSH) frees the object.

use std::any::Any;

use super::*;

/// A value held outside the pages (the server's hashes, lists, sets and sorted sets).
pub trait Object: Any + Send + std::fmt::Debug {
    /// Redis's TYPE name (`hash`, `list`, `set`, `zset`).
    fn type_name(&self) -> &'static str;
    /// Redis's OBJECT ENCODING name for the current representation.
    fn encoding(&self) -> &'static str;
    /// Bytes of memory the object holds (elements, per-element overhead, tables), as charged to
    /// its tenant. It must not grow by more than the caller reserved before changing it.
    fn charge(&self) -> u64;
    /// Elements held; an object left with none is deleted at [`Engine::obj_settle`].
    fn len(&self) -> usize;
    /// Whether the object holds no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// About how many allocations freeing the object walks (Redis's `lazyfreeGetFreeEffort`): 1
    /// for a compact encoding held in one allocation, else one per element; types made of nodes
    /// (lists, streams) count their nodes. UNLINK frees an object off the request path when this
    /// passes [`LAZYFREE_THRESHOLD`].
    fn free_effort(&self) -> usize {
        match self.encoding() {
            "listpack" | "intset" | "ziplist" | "embstr" | "int" | "raw" => 1,
            _ => self.len(),
        }
    }
    /// A deep copy (COPY).
    fn clone_object(&self) -> Box<dyn Object>;
    /// For downcasting to the concrete type.
    fn as_any(&self) -> &dyn Any;
    /// For downcasting to the concrete type.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// A key's value as stored: a string's bytes or an object.
#[derive(Debug, Clone, Copy)]
pub enum ValueRef<'a> {
    /// A string (Redis's strings, bitmaps and HyperLogLogs).
    Str(&'a [u8]),
    /// A hash, list, set or sorted set.
    Obj(&'a dyn Object),
}

/// Redis's `LAZYFREE_THRESHOLD`: an object whose [`Object::free_effort`] passes it is freed off
/// the request path by UNLINK (and DEL under `lazyfree-lazy-user-del`).
pub const LAZYFREE_THRESHOLD: usize = 64;

/// An object taken out of the engine to be freed elsewhere ([`Engine::delete_detaching`],
/// [`Engine::flush_detaching`]). Its `charge` stays on pool `tenant` as bytes held outside until
/// given back with [`Engine::release_outside`] after the object is dropped.
#[derive(Debug)]
pub struct Detached {
    /// The pool charged for it.
    pub tenant: TenantId,
    /// The object itself.
    pub object: Box<dyn Object>,
    /// The bytes charged for it.
    pub charge: u64,
}

/// An object and the bytes currently charged for it.
#[derive(Debug)]
pub(super) struct ObjCell {
    obj: Box<dyn Object>,
    charge: u64,
}

/// Fixed bytes charged per object beyond its own [`Object::charge`]: its table slot and box.
const OBJ_OVERHEAD: u64 = 32;

/// The object table.
#[derive(Debug, Default)]
pub(super) struct Objects {
    cells: Vec<Option<ObjCell>>,
    free: Vec<u32>,
    /// Bytes reserved by [`Engine::obj_reserve`] and not yet settled, and whose.
    reserved: Option<(usize, u64)>,
}

impl Objects {
    fn insert(&mut self, obj: Box<dyn Object>) -> (u32, u64) {
        let charge = obj.charge() + OBJ_OVERHEAD;
        let cell = Some(ObjCell { obj, charge });
        let id = match self.free.pop() {
            Some(id) => {
                self.cells[id as usize] = cell;
                id
            }
            None => {
                self.cells.push(cell);
                (self.cells.len() - 1) as u32
            }
        };
        (id, charge)
    }

    fn remove(&mut self, id: u32) -> u64 {
        let cell = self.cells[id as usize].take();
        self.free.push(id);
        cell.map_or(0, |c| c.charge)
    }

    fn get(&self, id: u32) -> &dyn Object {
        self.cells[id as usize]
            .as_ref()
            .map(|c| &*c.obj)
            .expect("a live object item names a live object")
    }

    fn get_mut(&mut self, id: u32) -> &mut dyn Object {
        self.cells[id as usize]
            .as_mut()
            .map(|c| &mut *c.obj)
            .expect("a live object item names a live object")
    }
}

/// The object id an object item's value holds.
#[inline]
fn id_of(value: &[u8]) -> u32 {
    u32::from_le_bytes([value[0], value[1], value[2], value[3]])
}

impl Engine {
    /// The value of item `h` (a live item).
    #[inline]
    pub(super) fn value_ref(&self, h: u32) -> ValueRef<'_> {
        if self.store.is_obj(h) {
            ValueRef::Obj(self.objects.get(id_of(self.store.value(h))))
        } else {
            ValueRef::Str(self.store.value(h))
        }
    }

    /// Bytes item `h` is charged outside its chunk (its object's charge; 0 for a string).
    #[inline]
    pub(super) fn object_charge(&self, h: u32) -> u64 {
        if self.store.is_obj(h) {
            let id = id_of(self.store.value(h));
            self.objects.cells[id as usize]
                .as_ref()
                .map_or(0, |c| c.charge)
        } else {
            0
        }
    }

    /// Frees the object of item `h` (being unlinked) and its charge.
    pub(super) fn free_object(&mut self, t: usize, h: u32) {
        let id = id_of(self.store.value(h));
        if self.keep_object == Some(id) {
            return;
        }
        self.drop_object(t, id);
    }

    /// Frees object `id` of tenant `t` whose item is already gone.
    pub(super) fn drop_object(&mut self, t: usize, id: u32) {
        let charge = self.objects.remove(id);
        self.large_bytes -= charge;
        self.tenants[t].large_bytes -= charge;
    }

    /// A key's value, read as GET reads (touch, hit/miss counted, seen by the controller).
    pub fn get_value(&mut self, t: TenantId, key: &[u8]) -> Option<ValueRef<'_>> {
        let h = self.get_handle(t, key)?;
        Some(self.value_ref(h))
    }

    /// The lookup of a GET ([`Engine::get_value`]): touches and counts a hit (the controller
    /// sees it), counts a miss; the handle of the item found.
    pub(super) fn get_handle(&mut self, t: TenantId, key: &[u8]) -> Option<u32> {
        let ti = t.0 as usize;
        if self.control_due {
            self.run_controller();
        }
        if self.tier_due() {
            self.run_tier_workers();
        }
        if let Some(ts) = self.tiers.as_mut() {
            ts.clear_last_hit();
        }
        self.logical += 1;
        let hash = hash_key(key);
        match self.lookup_key(ti, key, hash) {
            Some((ti, h)) => {
                self.touch(ti, h);
                let c = self.store.pages[self.store.split(h).0].class;
                let tn = &mut self.tenants[ti];
                tn.counters.hits += 1;
                tn.class_counters[c as usize].hits += 1;
                if self.control.is_some() {
                    let size = self.access_size(h);
                    self.observe(ti, AccessKind::GetHit, hash, size, Some(c));
                }
                Some(h)
            }
            None => {
                self.tenants[ti].counters.misses += 1;
                if self.classes_on && self.tenants[ti].group.is_some() {
                    // Counted on its class pool when the fill SET tells the class.
                    self.class_note_miss(ti, hash);
                } else if self.control.is_some() {
                    self.observe(ti, AccessKind::GetMiss, hash, 0, None);
                }
                None
            }
        }
    }

    /// A key's value without touching or counting (lazy expiry still applies).
    pub fn peek_value(&mut self, t: TenantId, key: &[u8]) -> Option<ValueRef<'_>> {
        let (_, h) = self.lookup_key(t.0 as usize, key, hash_key(key))?;
        Some(self.value_ref(h))
    }

    /// Several keys' values borrowed together, for a command that reads many inputs at once
    /// (the set algebra), without touching or counting. Lazy expiry runs for every key before
    /// any value is borrowed, so an expiry cannot move an item whose value is already out.
    pub fn peek_values(&mut self, t: TenantId, keys: &[&[u8]]) -> Vec<Option<ValueRef<'_>>> {
        let ti = t.0 as usize;
        for k in keys {
            let _ = self.lookup_key(ti, k, hash_key(k));
        }
        let this: &Self = self;
        keys.iter()
            .map(|k| {
                this.find_key(ti, k, hash_key(k))
                    .map(|(_, h)| this.value_ref(h))
            })
            .collect()
    }

    /// Charges `bytes` that tenant `t`'s clients hold outside pages and objects (a transaction's
    /// queued commands), making room as an object's growth does (evicting by the tenant's policy;
    /// refused under `noeviction`, past the tenant's cap, or past what the budget can hold). They
    /// count in used memory and against the tenant until [`Engine::release_outside`].
    ///
    /// # Errors
    /// [`EngineError::OutOfMemory`] when no room can be made (nothing is charged then).
    pub fn charge_outside(&mut self, t: TenantId, bytes: u64) -> Result<(), EngineError> {
        let ti = t.0 as usize;
        if ti >= self.tenants.len() {
            return Err(EngineError::OutOfMemory);
        }
        self.make_room_outside(ti, bytes)?;
        self.large_bytes += bytes;
        let tn = &mut self.tenants[ti];
        tn.large_bytes += bytes;
        tn.outside_bytes += bytes;
        Ok(())
    }

    /// Gives back bytes charged by [`Engine::charge_outside`] (at most what tenant `t` holds).
    pub fn release_outside(&mut self, t: TenantId, bytes: u64) {
        let Some(tn) = self.tenants.get_mut(t.0 as usize) else {
            return;
        };
        let b = bytes.min(tn.outside_bytes);
        tn.outside_bytes -= b;
        tn.large_bytes -= b;
        self.large_bytes -= b;
    }

    /// The size the profilers see for an access to item `h`: key + value, or key + the object's
    /// charge.
    pub(super) fn access_size(&self, h: u32) -> u32 {
        let (klen, vlen) = self.store.lens(h);
        let v = if self.store.is_obj(h) {
            self.object_charge(h)
        } else {
            vlen as u64
        };
        (klen as u64 + v).min(u64::from(u32::MAX)) as u32
    }

    /// Reserves `bytes` of the budget for tenant `t`'s next object write, making room as a large
    /// item's allocation does. The reservation holds until [`Engine::obj_settle`].
    ///
    /// # Errors
    /// [`EngineError::OutOfMemory`] when no room can be made (noeviction and full, a tenant cap).
    pub fn obj_reserve(&mut self, t: TenantId, bytes: u64) -> Result<(), EngineError> {
        let ti = t.0 as usize;
        if self.control_due {
            self.run_controller();
        }
        self.release_reservation();
        if bytes > 0 {
            self.make_room_outside(ti, bytes)?;
        }
        self.large_bytes += bytes;
        self.tenants[ti].large_bytes += bytes;
        self.objects.reserved = Some((ti, bytes));
        Ok(())
    }

    fn release_reservation(&mut self) {
        if let Some((t, r)) = self.objects.reserved.take() {
            self.large_bytes -= r;
            self.tenants[t].large_bytes -= r;
        }
    }

    /// The object at `key` for changing it (touched as a write), `None` when the key is absent.
    ///
    /// # Errors
    /// [`EngineError::WrongType`] when the key holds a string.
    pub fn obj_mut(
        &mut self,
        t: TenantId,
        key: &[u8],
    ) -> Result<Option<&mut dyn Object>, EngineError> {
        let Some((ti, h)) = self.lookup_key(t.0 as usize, key, hash_key(key)) else {
            return Ok(None);
        };
        if !self.store.is_obj(h) {
            return Err(EngineError::WrongType);
        }
        self.logical += 1;
        self.touch(ti, h);
        let id = id_of(self.store.value(h));
        Ok(Some(self.objects.get_mut(id)))
    }

    /// Stores `obj` at `key` (replacing any value; the TTL is kept with `keep_ttl`, else cleared)
    /// and returns it for filling. Its charge so far must fit the current reservation.
    ///
    /// # Errors
    /// [`EngineError::ItemTooLarge`] for a key the pages cannot hold;
    /// [`EngineError::OutOfMemory`] when the key's chunk cannot be allocated.
    pub fn obj_create(
        &mut self,
        t: TenantId,
        key: &[u8],
        obj: Box<dyn Object>,
        keep_ttl: bool,
    ) -> Result<&mut dyn Object, EngineError> {
        let lead = t.0 as usize;
        if key.len() >= crate::store::MAX_KEY_LEN {
            return Err(EngineError::ItemTooLarge {
                size: key.len() as u64,
                max: crate::store::MAX_KEY_LEN as u64 - 1,
            });
        }
        let hash = hash_key(key);
        let size = (HDR + key.len() + 4) as u64;
        // An object stays in the pool of the key it replaces, else goes to the tenant's own
        // (per-key classes place keys on SET only).
        let found = self.lookup_key(lead, key, hash);
        let ti = found.map_or(lead, |(p, _)| p);
        let existing = found.map(|(_, h)| h);
        let exp = if keep_ttl {
            existing.and_then(|h| self.expiry(ti, h))
        } else {
            None
        };
        let lru = self.fresh_lru(ti, existing);
        self.logical += 1;
        let h = self.alloc_item(ti, size)?;
        if let Some((p, o)) = self.find_key(lead, key, hash) {
            self.unlink_item(p, o, true);
        }
        let (id, charge) = self.objects.insert(obj);
        self.large_bytes += charge;
        self.tenants[ti].large_bytes += charge;
        self.link_item(ti, h, hash, key, &id.to_le_bytes(), lru, exp);
        self.store.set_obj_flag(h);
        Ok(self.objects.get_mut(id))
    }

    /// Ends an object write: the reservation is released, the object at `key` is charged what
    /// it now holds, and deleted when empty (true then). Counted as a SET and seen by the
    /// controller with the object's size.
    pub fn obj_settle(&mut self, t: TenantId, key: &[u8]) -> bool {
        self.release_reservation();
        let hash = hash_key(key);
        let Some((ti, h)) = self.find_key(t.0 as usize, key, hash) else {
            return false;
        };
        if !self.store.is_obj(h) {
            return false;
        }
        let id = id_of(self.store.value(h));
        let cell = self.objects.cells[id as usize]
            .as_mut()
            .expect("a live object item names a live object");
        if cell.obj.is_empty() {
            self.unlink_item(ti, h, true);
            self.tenants[ti].counters.deletes += 1;
            if self.control.is_some() {
                self.observe(ti, AccessKind::Delete, hash, 0, None);
            }
            return true;
        }
        let new = cell.obj.charge() + OBJ_OVERHEAD;
        let old = std::mem::replace(&mut cell.charge, new);
        self.large_bytes = self.large_bytes + new - old;
        let tn = &mut self.tenants[ti];
        tn.large_bytes = tn.large_bytes + new - old;
        tn.counters.sets += 1;
        let c = self.store.pages[self.store.split(h).0].class;
        tn.class_counters[c as usize].sets += 1;
        if self.control.is_some() {
            let size = self.access_size(h);
            self.observe(ti, AccessKind::Set, hash, size, Some(c));
        }
        if new > old && self.budget_used() > self.cfg.maxmemory {
            // More than was reserved (a caller's bound too low): make room after the fact.
            let _ = self.make_room_outside(ti, 0);
        }
        false
    }

    /// Stores a whole object at `key` (STORE commands, COPY, RESTORE-like paths): reserves its
    /// charge, replaces any value, and settles. An empty object deletes the key instead.
    ///
    /// # Errors
    /// As [`Engine::obj_reserve`] and [`Engine::obj_create`]; nothing changes then.
    pub fn obj_store(
        &mut self,
        t: TenantId,
        key: &[u8],
        obj: Box<dyn Object>,
        keep_ttl: bool,
    ) -> Result<(), EngineError> {
        if obj.is_empty() {
            self.release_reservation();
            self.delete(t, key);
            return Ok(());
        }
        // The reservation covers the object while its key's chunk is allocated.
        self.obj_reserve(t, obj.charge() + OBJ_OVERHEAD)?;
        let r = self.obj_create(t, key, obj, keep_ttl).map(|_| ());
        match r {
            Ok(()) => {
                self.obj_settle(t, key);
                Ok(())
            }
            Err(e) => {
                self.release_reservation();
                Err(e)
            }
        }
    }

    /// The ids of the objects pool `p`'s items name.
    fn object_ids(&self, p: usize) -> Vec<u32> {
        self.tenants[p]
            .all
            .iter()
            .filter(|&&h| self.store.is_obj(h))
            .map(|&h| id_of(self.store.value(h)))
            .collect()
    }

    /// Objects a tenant's pages name (FLUSH frees them with the pages).
    pub(super) fn free_tenant_objects(&mut self, t: usize) {
        for id in self.object_ids(t) {
            let charge = self.objects.remove(id);
            self.large_bytes -= charge;
            self.tenants[t].large_bytes -= charge;
        }
    }

    /// DEL of one key (as [`Engine::delete`]) that, when the key holds an object whose
    /// [`Object::free_effort`] passes `min_effort`, takes the object out instead of dropping it,
    /// for the caller to free off the request path (lazy freeing: UNLINK). The object's charge
    /// stays on its pool as bytes held outside until the caller gives it back with
    /// [`Engine::release_outside`] once the object is really freed, so the budget never counts
    /// memory as free before it is.
    pub fn delete_detaching(
        &mut self,
        t: TenantId,
        key: &[u8],
        min_effort: usize,
    ) -> (bool, Option<Detached>) {
        let detached = match self.lookup_key(t.0 as usize, key, hash_key(key)) {
            Some((p, h)) if self.store.is_obj(h) => {
                let id = id_of(self.store.value(h));
                let big = self.objects.cells[id as usize]
                    .as_ref()
                    .is_some_and(|c| c.obj.free_effort() > min_effort);
                if big && self.keep_object != Some(id) {
                    self.detach_object(p, id)
                } else {
                    None
                }
            }
            _ => None,
        };
        (self.delete(t, key), detached)
    }

    /// FLUSHDB of tenant `t` (as [`Engine::flush`]) that takes every object out for the caller
    /// to free off the request path (FLUSHALL/FLUSHDB ASYNC); their charges stay on their pools
    /// as with [`Engine::delete_detaching`]. Strings are freed in place (page slots, no
    /// per-key deallocation).
    pub fn flush_detaching(&mut self, t: TenantId) -> Vec<Detached> {
        let mut out = Vec::new();
        for p in self.members(t.0 as usize) {
            for id in self.object_ids(p) {
                if self.keep_object != Some(id)
                    && let Some(d) = self.detach_object(p, id)
                {
                    out.push(d);
                }
            }
        }
        self.flush(t);
        out
    }

    /// Takes object `id` of pool `p` out of the table, leaving its slot to be recycled when its
    /// item goes; its charge moves to the pool's bytes held outside.
    fn detach_object(&mut self, p: usize, id: u32) -> Option<Detached> {
        let cell = self.objects.cells[id as usize].take()?;
        self.tenants[p].outside_bytes += cell.charge;
        Some(Detached {
            tenant: TenantId(p as u32),
            object: cell.obj,
            charge: cell.charge,
        })
    }

    /// A key's type name (`string` or the object's), without touching it.
    pub fn key_type(&mut self, t: TenantId, key: &[u8]) -> Option<&'static str> {
        match self.peek_value(t, key)? {
            ValueRef::Str(_) => Some("string"),
            ValueRef::Obj(o) => Some(o.type_name()),
        }
    }

    /// A string value read as GET reads; `Ok(None)` when absent.
    ///
    /// # Errors
    /// [`EngineError::WrongType`] when the key holds an object.
    pub fn get_str(&mut self, t: TenantId, key: &[u8]) -> Result<Option<&[u8]>, EngineError> {
        match self.get_value(t, key) {
            None => Ok(None),
            Some(ValueRef::Str(v)) => Ok(Some(v)),
            Some(ValueRef::Obj(_)) => Err(EngineError::WrongType),
        }
    }

    /// A string value without touching it; `Ok(None)` when absent.
    ///
    /// # Errors
    /// [`EngineError::WrongType`] when the key holds an object.
    pub fn peek_str(&mut self, t: TenantId, key: &[u8]) -> Result<Option<&[u8]>, EngineError> {
        match self.peek_value(t, key) {
            None => Ok(None),
            Some(ValueRef::Str(v)) => Ok(Some(v)),
            Some(ValueRef::Obj(_)) => Err(EngineError::WrongType),
        }
    }
}

impl Engine {
    /// The unsettled reservation: (tenant, bytes).
    pub(super) fn objects_reserved(&self) -> Option<(usize, u64)> {
        self.objects.reserved
    }

    /// Objects alive in the table.
    pub(super) fn objects_live(&self) -> u64 {
        (self.objects.cells.len() - self.objects.free.len()) as u64
    }
}
