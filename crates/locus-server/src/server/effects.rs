//! The server's side of the effects sink ([`crate::exec::effects::Effects`]): each call goes to
//! the part of [`Shared`] that holds it, and returns at once when nobody asked for it.

use locus_engine::TenantId;

use super::Shared;
use crate::config::TenancyMode;
use crate::exec::blocking::Entry;
use crate::exec::effects::Effects;

impl Effects for Shared {
    #[inline]
    fn notify_flags(&self) -> u32 {
        Shared::notify_flags(self)
    }

    #[inline]
    fn notify(&self, t: TenantId, db: u32, class: u32, event: &str, key: &[u8]) {
        crate::exec::notify::publish(self, t, db, class, event, key);
    }

    fn key_changed(&self, t: TenantId, key: &[u8]) {
        Shared::key_changed(self, t, key);
    }

    fn touch_watched(&self, t: TenantId, key: &[u8]) {
        Shared::touch_watched(self, t, key);
    }

    fn touch_all_watched(&self, t: TenantId, exists: &mut dyn FnMut(&[u8]) -> bool) {
        Shared::touch_all_watched(self, t, exists);
    }

    #[inline]
    fn tracks_writes(&self) -> bool {
        Shared::tracks_writes(self)
    }

    fn note_encoding(&self, cmd: &str, t: TenantId, keys: &[&[u8]]) {
        Shared::note_encoding(self, cmd, t, keys);
    }

    #[inline]
    fn any_blocked(&self) -> bool {
        self.blocking().any_waiting()
    }

    fn key_ready(&self, t: TenantId, key: &[u8]) {
        self.blocking().signal_ready(t, key);
    }

    fn tenant_ready(&self, t: TenantId) {
        self.blocking().signal_tenant(t);
    }

    fn block(&self, entry: Entry) {
        self.blocking().add(entry);
    }

    fn note_write(&self) {
        self.snapshots().note_write();
    }

    #[inline]
    fn any_dumped(&self) -> bool {
        self.dumploads().any_dumped()
    }

    fn note_dumped_write(&self, t: TenantId, keys: &[&[u8]], flush: bool) {
        self.dumploads().note_write(t, keys, flush);
    }

    fn proto_max_bulk_len(&self) -> u64 {
        self.config().limits.proto_max_bulk_len.0
    }

    fn owns_key(&self, t: TenantId, key: &[u8]) -> bool {
        let tenancy = self.tenancy();
        tenancy.mode != TenancyMode::Prefix || tenancy.for_key(key) == Some(t)
    }
}
