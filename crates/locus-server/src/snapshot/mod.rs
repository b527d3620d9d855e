//! Snapshots and warm restart: `SAVE`, `BGSAVE`, `LASTSAVE`, save points, saving at shutdown
//! and loading at start-up (`[snapshot]`, see [`crate::config::SnapshotSection`]).
//!
//! # Files
//!
//! One file per tenant, `<dir>/<tenant>.locus` (bytes of the name outside `[A-Za-z0-9._-]`
//! written as `%XX`). A save writes `<tenant>.locus.tmp.<pid>`, fsyncs it, renames it over the
//! old file and fsyncs the directory, so the name always holds a complete snapshot: a crash or
//! `kill -9` at any point leaves the previous one in place (and at worst a temporary file, which
//! the next start removes).
//!
//! # Format (version 1, all integers little-endian)
//!
//! ```text
//! header  "LOCUSNAP" | version u16 | recency kind u8 | flags u8 | created_ms u64
//!         | name_len u16 | tenant name | crc32c(every header byte before it) u32
//! record  tag u8 | body_len u32 | body | crc32c(tag, body_len, body) u32
//! item    body = key_len u32 | key | expire_at_ms u64 (u64::MAX: no TTL) | stamp u32 | value
//!           tag 1 string: value = the rest of the body
//!           tag 2 hash:   value = n u32 | n x (field_len u32 | field | value_len u32 | value)
//!           tag 3 list:   value = n u32 | n x (len u32 | element), head first
//!           (tags 4 set and 5 sorted set: not yet, see `types.rs`)
//!           tag 16 memcached item: value = its 13-byte header (flags, CAS, state) | data
//! flags   bit 0: memcached items are tag 16 records. Files without it (older builds) held a
//!         memcached item as a tag 1 string with the header inside the value, indistinguishable
//!         from a RESP value; in a tenant a memcached listener reaches, such a string whose
//!         first 13 bytes read as a header an older build wrote (a CAS unique from 1 to 2^32 - 1,
//!         known state bits) is loaded as the memcached item it was.
//! end     tag 0xFF, body = number of item records u64; nothing may follow it
//! ```
//!
//! TTLs are absolute times of the server clock (Unix ms), so time that passed while the server
//! was down counts, and an item that expired meanwhile is dropped at load. The stamp is the
//! policy's 24-bit recency field (Redis's `lru`: LRU clock seconds, or LFU `minutes << 8 |
//! counter`); the header's recency kind says which, and stamps are restored only into a tenant
//! whose policy reads them the same way (and never under the logical LRU clock, which restarts
//! at zero). An `allkeys-exact-lru` tenant is written least recently used first, so loading in
//! file order rebuilds its list. The engine keeps no per-key penalty class (penalties are per
//! tenant), so there is none to save. Not saved: hyperbolic caching's per-item counts (items
//! restart as new), profilers' state (the controller's curves rebuild from traffic).
//!
//! # Checks at load
//!
//! Every record is framed and checksummed (CRC-32C catches any error within 32 consecutive
//! bits, so any one damaged byte); a record's length is checked against the file's size before
//! anything is allocated; the end record must count the records and close the file. A file
//! failing any check is reported with its name and the byte offset of the bad record, renamed to
//! `<tenant>.locus.corrupt-<unix ms>` (set aside, never deleted), and its tenant starts empty
//! (nothing half-loaded); the server starts either way.
//!
//! # BGSAVE: a forked child
//!
//! BGSAVE forks while holding the engine lock, as Redis does, and the child writes every
//! tenant's file from its copy-on-write image of the engine, then `_exit`s; the parent releases
//! the lock as soon as `fork` returns, so the stall is the page-table copy (measured, INFO
//! `latest_fork_usec`), whatever the data size. An incremental walk under the lock in slices
//! was the other option; it needs a consistent cut (copy-on-write per item or a change log)
//! woven into every write path of the engine, and each slice still stalls every tenant, while
//! the fork gives an exact point-in-time image for free. The cost is memory: pages written
//! during the save are copied (at most doubling). The child is safe because it only reads the
//! engine it already holds, allocates through glibc's malloc (fork-safe), writes files, and
//! reports failure through a pipe, never through locks another thread may have held at the fork
//! (no stdout/stderr, no logging). It closes every inherited descriptor first (a restart can
//! rebind the ports while a child still runs) and asks to be killed when its parent dies
//! (`PR_SET_PDEATHSIG`, which fires when the forking thread ends: a runtime worker, which lives
//! as long as the server), so `kill -9` of the server stops the save; the previous files stay.
//! SHUTDOWN kills a running child, as Redis does.
//!
//! Tenants are a security boundary: SAVE, BGSAVE and SHUTDOWN are the admin's only
//! (`exec/privilege.rs`); a tenant's INFO shows whether a save runs and when the last one ended,
//! not the server-wide count of changes (that would show other tenants' traffic).

pub mod format;
pub mod types;

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use locus_engine::{Engine, ItemMeta, RecencyKind, RestoreValue, TenantId, ValueRef};
use parking_lot::Mutex;

use format::{Body, FLAG_META_RECORDS, Header, Reader, TAG_END, TAG_STRING, TAG_STRING_META};

/// Tenants a memcached listener reaches (set at start-up): only their files of older builds are
/// read for memcached items in the old form (see the module's format notes).
static LEGACY_MEMCACHED: parking_lot::Mutex<Vec<String>> = parking_lot::Mutex::new(Vec::new());

/// Names the tenants a memcached listener reaches, for loading files of older builds.
pub fn set_memcached_tenants(names: Vec<String>) {
    *LEGACY_MEMCACHED.lock() = names;
}

/// Whether a file with `header` may hold memcached items in the old form.
fn legacy_memcached(header: &Header) -> bool {
    header.flags & FLAG_META_RECORDS == 0 && LEGACY_MEMCACHED.lock().contains(&header.tenant)
}

/// A failed BGSAVE is retried by a save point only after this long (Redis's
/// `CONFIG_BGSAVE_RETRY_DELAY`).
const RETRY_DELAY_MS: u64 = 5000;
/// Bytes of a child's error message the parent reads from the pipe.
const CHILD_MSG_MAX: usize = 1024;

/// The file of `tenant` in `dir`.
pub fn file_path(dir: &Path, tenant: &str) -> PathBuf {
    let mut name = String::with_capacity(tenant.len() + 6);
    for &b in tenant.as_bytes() {
        // A leading dot is escaped too: no name can be hidden, `.` or `..`.
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && !name.is_empty()) {
            name.push(b as char);
        } else {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    dir.join(format!("{name}.locus"))
}

/// Writes tenant `t`'s snapshot (see the module doc); returns the items written.
///
/// # Errors
/// The first I/O error or an object without a codec, as a message with the file name; the
/// previous file is untouched then.
pub fn write_tenant(eng: &Engine, t: TenantId, name: &str, dir: &Path) -> Result<u64, String> {
    write_selected(eng, t, name, &file_path(dir, name), &|_| true)
}

/// Writes the items of tenant `t` whose key `select` accepts to `path` (in the snapshot
/// format, through a temporary file renamed over it, as [`write_tenant`]); returns the items
/// written.
///
/// # Errors
/// As [`write_tenant`].
pub fn write_selected(
    eng: &Engine,
    t: TenantId,
    name: &str,
    path: &Path,
    select: &dyn Fn(&[u8]) -> bool,
) -> Result<u64, String> {
    let now = eng.now_ms();
    let mut w = FileWriter::create(path, name, eng.recency_kind(t), now)?;
    let mut failed: Option<String> = None;
    eng.for_each_item(t, |key, value, meta| {
        if failed.is_some() || meta.expire_at_ms.is_some_and(|at| at <= now) || !select(key) {
            return;
        }
        if let Err(e) = w.item(key, value, meta) {
            failed = Some(e);
        }
    });
    match failed {
        Some(e) => {
            w.abandon();
            Err(format!("{}: {e}", path.display()))
        }
        None => w.finish(),
    }
}

/// A tenant's file being written item by item, possibly over several steps (pRedis's dump
/// files, [`crate::dumpload`], are written in slices so that no step stalls the other tenants
/// for long): to `<path>.tmp.<pid>`, which [`FileWriter::finish`] closes with the end record,
/// fsyncs and renames over `path`, and [`FileWriter::abandon`] removes. Until `finish`
/// returns, `path` holds what it held before (a complete file or nothing).
#[derive(Debug)]
pub struct FileWriter {
    path: PathBuf,
    tmp: PathBuf,
    w: BufWriter<File>,
    body: Vec<u8>,
    items: u64,
}

impl FileWriter {
    /// Creates the temporary file and writes the header (tenant `name`, stamps of `recency`).
    ///
    /// # Errors
    /// The I/O error, with the file name.
    pub fn create(
        path: &Path,
        name: &str,
        recency: RecencyKind,
        created_ms: u64,
    ) -> Result<Self, String> {
        crate::server::assert_unlocked("creating a snapshot file");
        let tmp = PathBuf::from(format!("{}.tmp.{}", path.display(), std::process::id()));
        let file = File::create(&tmp).map_err(|e| format!("create {}: {e}", tmp.display()))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let header = Header {
            tenant: name.to_string(),
            recency: recency.code(),
            created_ms,
            flags: FLAG_META_RECORDS,
        };
        if let Err(e) = format::write_header(&mut w, &header) {
            drop(w);
            let _ = fs::remove_file(&tmp);
            return Err(format!("{}: write: {e}", path.display()));
        }
        Ok(Self {
            path: path.to_path_buf(),
            tmp,
            w,
            body: Vec::new(),
            items: 0,
        })
    }

    /// Appends one item.
    ///
    /// # Errors
    /// An I/O error, or an object type without a codec; the caller then abandons the file.
    pub fn item(&mut self, key: &[u8], value: ValueRef<'_>, meta: ItemMeta) -> Result<(), String> {
        crate::server::assert_unlocked("writing a snapshot file");
        encode_item(&mut self.body, &mut self.w, key, value, meta)?;
        self.items += 1;
        Ok(())
    }

    /// Appends records encoded by [`encode_item`] elsewhere (`n` items).
    fn records(&mut self, bytes: &[u8], n: u64) -> Result<(), String> {
        crate::server::assert_unlocked("writing a snapshot file");
        self.w.write_all(bytes).map_err(|e| format!("write: {e}"))?;
        self.items += n;
        Ok(())
    }

    /// Items appended so far.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// Writes the end record, fsyncs, renames the file over its name and fsyncs the directory;
    /// returns the items written. Needs no engine: a caller may run it on another thread.
    ///
    /// # Errors
    /// The first I/O error, with the file name; the temporary file is removed then and the
    /// name keeps what it held.
    pub fn finish(self) -> Result<u64, String> {
        let Self {
            path,
            tmp,
            mut w,
            items,
            ..
        } = self;
        crate::server::assert_unlocked("closing a snapshot file");
        let io = |e: std::io::Error| format!("write: {e}");
        let r = format::write_record(&mut w, TAG_END, &items.to_le_bytes())
            .map_err(io)
            .and_then(|()| w.into_inner().map_err(|e| io(e.into_error())))
            .and_then(|file| file.sync_all().map_err(|e| format!("fsync: {e}")))
            .and_then(|()| fs::rename(&tmp, &path).map_err(|e| format!("rename: {e}")))
            .and_then(|()| match path.parent() {
                Some(dir) => File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| format!("fsync of the directory: {e}")),
                None => Ok(()),
            });
        match r {
            Ok(()) => Ok(items),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(format!("{}: {e}", path.display()))
            }
        }
    }

    /// Gives the file up: the temporary file is removed, the name keeps what it held.
    pub fn abandon(self) {
        let tmp = self.tmp.clone();
        drop(self);
        let _ = fs::remove_file(tmp);
    }
}

/// Encodes one item's record (its body built in `body`, a scratch buffer) into `w`.
fn encode_item(
    body: &mut Vec<u8>,
    w: &mut impl Write,
    key: &[u8],
    value: ValueRef<'_>,
    meta: ItemMeta,
) -> Result<(), String> {
    body.clear();
    format::item_head(body, key, meta.expire_at_ms, meta.stamp);
    let tag = match value {
        ValueRef::Str(v) => match meta.prefix {
            Some(m) => {
                body.extend_from_slice(&m);
                body.extend_from_slice(v);
                TAG_STRING_META
            }
            None => {
                body.extend_from_slice(v);
                TAG_STRING
            }
        },
        ValueRef::Obj(o) => {
            let codec = types::codec_for(o.type_name());
            codec
                .and_then(|c| (c.encode)(o, body).map(|()| c.tag))
                .ok_or_else(|| {
                    format!(
                        "no snapshot codec for type '{}' (key of {} bytes)",
                        o.type_name(),
                        key.len()
                    )
                })?
        }
    };
    format::write_record(w, tag, body).map_err(|e| format!("write: {e}"))
}

/// What the caller of a [`ThreadedWriter`] sends its thread.
enum Shipment {
    /// Records of `n` items.
    Records(Vec<u8>, u64),
    /// The last records were sent: close the file.
    Finish,
}

/// A [`FileWriter`] whose file I/O runs on a thread of its own: the caller (which holds the
/// engine lock: pRedis's dumps, [`crate::dumpload`]) only encodes items into memory and ships
/// them; creating, writing, fsyncing and renaming the file never happen under the lock (issue
/// 23). [`ThreadedWriter::in_flight`] is the caller's back-pressure: encoded bytes not yet
/// written.
#[derive(Debug)]
pub struct ThreadedWriter {
    tx: std::sync::mpsc::Sender<Shipment>,
    job: std::thread::JoinHandle<Result<u64, String>>,
    staged: Vec<u8>,
    staged_items: u64,
    body: Vec<u8>,
    in_flight: std::sync::Arc<AtomicU64>,
}

impl std::fmt::Debug for Shipment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shipment::Records(b, n) => write!(f, "Records({} bytes, {n} items)", b.len()),
            Shipment::Finish => f.write_str("Finish"),
        }
    }
}

impl ThreadedWriter {
    /// Starts the file's thread, which creates `<path>.tmp.<pid>` and writes the header (see
    /// [`FileWriter::create`]); an error there is reported by [`ThreadedWriter::finish`].
    ///
    /// # Errors
    /// No thread could be started.
    pub fn create(
        path: &Path,
        name: &str,
        recency: RecencyKind,
        created_ms: u64,
    ) -> Result<Self, String> {
        let (tx, rx) = std::sync::mpsc::channel::<Shipment>();
        let in_flight = std::sync::Arc::new(AtomicU64::new(0));
        let (path, name, flight) = (path.to_path_buf(), name.to_string(), in_flight.clone());
        let job = std::thread::Builder::new()
            .name("locus-dumpwrite".into())
            .spawn(move || {
                if let Some(dir) = path.parent() {
                    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                }
                let mut w = FileWriter::create(&path, &name, recency, created_ms)?;
                // Until the caller says Finish, every shipment is written; a caller that goes
                // away without it (an abandoned dump) leaves no file behind.
                while let Ok(m) = rx.recv() {
                    match m {
                        Shipment::Records(bytes, n) => {
                            let r = w.records(&bytes, n);
                            flight.fetch_sub(bytes.len() as u64, Ordering::Relaxed);
                            if let Err(e) = r {
                                w.abandon();
                                return Err(format!("{}: {e}", path.display()));
                            }
                        }
                        Shipment::Finish => return w.finish(),
                    }
                }
                w.abandon();
                Err("the dump was abandoned".to_string())
            })
            .map_err(|e| format!("no thread to write the file: {e}"))?;
        Ok(Self {
            tx,
            job,
            staged: Vec::new(),
            staged_items: 0,
            body: Vec::new(),
            in_flight,
        })
    }

    /// Encodes one item into memory (no I/O): shipped by [`ThreadedWriter::ship`].
    ///
    /// # Errors
    /// An object type without a codec; the caller then abandons the file.
    pub fn item(&mut self, key: &[u8], value: ValueRef<'_>, meta: ItemMeta) -> Result<(), String> {
        encode_item(&mut self.body, &mut self.staged, key, value, meta)?;
        self.staged_items += 1;
        Ok(())
    }

    /// Hands the items encoded since the last call to the file's thread (no I/O here).
    pub fn ship(&mut self) {
        if self.staged_items == 0 {
            return;
        }
        let bytes = std::mem::take(&mut self.staged);
        self.in_flight
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        // A send fails only when the thread ended on an error, which `finish` reports.
        let _ = self.tx.send(Shipment::Records(
            bytes,
            std::mem::take(&mut self.staged_items),
        ));
    }

    /// Encoded bytes shipped and not yet written.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Ships what is left and asks the thread to close the file (end record, fsync, rename);
    /// the returned job ends with the items written or the first error.
    pub fn finish(mut self) -> std::thread::JoinHandle<Result<u64, String>> {
        self.ship();
        let _ = self.tx.send(Shipment::Finish);
        self.job
    }

    /// Gives the file up; its thread removes the temporary file.
    pub fn abandon(self) {
        drop(self.tx);
        // The thread notices the closed channel on its own; nobody waits for it.
        drop(self.job);
    }
}

/// Writes every tenant's snapshot; returns the items written.
///
/// # Errors
/// The first tenant that failed (tenants written before it keep their new files).
pub fn save_all(eng: &Engine, tenants: &[(TenantId, String)], dir: &Path) -> Result<u64, String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut n = 0;
    for (t, name) in tenants {
        n += write_tenant(eng, *t, name, dir)?;
    }
    Ok(n)
}

/// What a start-up load did: one line per file, for the operator.
#[derive(Debug, Default, Clone)]
pub struct LoadReport {
    /// Items loaded over all tenants.
    pub items: u64,
    /// Items dropped because their TTL passed while the server was down.
    pub expired: u64,
    /// Files that failed their checks (set aside).
    pub corrupt: u64,
    /// Items the budget refused (a smaller memory than when saved, `noeviction`).
    pub dropped: u64,
    /// One line per file loaded, set aside or removed.
    pub lines: Vec<String>,
}

/// What loading one file did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Items stored.
    pub items: u64,
    /// Items dropped because their TTL passed while the server was down.
    pub expired: u64,
    /// Items the budget refused (a smaller memory than when saved, `noeviction`).
    pub dropped: u64,
}

/// Loads tenant `t`'s file (at `path`, which must exist) into the engine.
///
/// # Errors
/// A [`format::FormatError`] (offset and what) for a file failing a check; the tenant is
/// emptied again then.
pub fn load_tenant(
    eng: &mut Engine,
    t: TenantId,
    name: &str,
    path: &Path,
) -> Result<Loaded, format::FormatError> {
    let (file, size) = open_sized(path)?;
    load_from(eng, t, name, file, size)
}

/// `path` opened for reading with its size, errors worded for a snapshot file.
fn open_sized(path: &Path) -> Result<(BufReader<File>, u64), format::FormatError> {
    let ferr = |what: String| format::FormatError { offset: 0, what };
    let file = File::open(path).map_err(|e| ferr(format!("cannot open: {e}")))?;
    let size = file
        .metadata()
        .map_err(|e| ferr(format!("cannot stat: {e}")))?
        .len();
    Ok((BufReader::with_capacity(1 << 20, file), size))
}

/// [`load_tenant`] from any reader of `size` bytes.
///
/// # Errors
/// As [`load_tenant`].
pub fn load_from(
    eng: &mut Engine,
    t: TenantId,
    name: &str,
    r: impl Read,
    size: u64,
) -> Result<Loaded, format::FormatError> {
    let (header, mut reader) = Reader::open(r, size)?;
    if header.tenant != name {
        return Err(format::FormatError {
            offset: 0,
            what: format!("holds tenant {:?}, not {name:?}", header.tenant),
        });
    }
    let kind = RecencyKind::from_code(header.recency).unwrap_or(RecencyKind::Logical);
    let legacy = legacy_memcached(&header);
    let r = load_records(eng, t, &mut reader, kind, legacy);
    if r.is_err() {
        eng.flush(t);
    }
    r
}

/// One item record decoded: key, value, metadata.
type Decoded<'a> = (&'a [u8], RestoreValue<'a>, ItemMeta);

/// Decodes the item record `tag`/`buf` found at byte `at`; `legacy`: a file of an older build
/// of a tenant a memcached listener reaches (see the module's format notes).
fn decode_item(
    tag: u8,
    buf: &[u8],
    at: u64,
    legacy: bool,
) -> Result<Decoded<'_>, format::FormatError> {
    let bad = |what: String| format::FormatError { offset: at, what };
    let mut body = Body::new(buf);
    let (key, expire_at_ms, stamp) = format::read_item_head(&mut body).map_err(bad)?;
    let mut meta = ItemMeta {
        expire_at_ms,
        stamp,
        prefix: None,
    };
    let header = |v: &[u8]| v[..locus_engine::META_PREFIX].try_into().ok();
    let value = if tag == TAG_STRING {
        let v = body.remaining();
        match legacy
            .then(|| crate::memcache::item::decode_legacy(v))
            .flatten()
        {
            Some((_, data)) => {
                meta.prefix = header(v);
                RestoreValue::Str(data)
            }
            None => RestoreValue::Str(v),
        }
    } else if tag == TAG_STRING_META {
        let v = body.remaining();
        if v.len() < locus_engine::META_PREFIX {
            return Err(bad("memcached item shorter than its header".to_string()));
        }
        meta.prefix = header(v);
        RestoreValue::Str(&v[locus_engine::META_PREFIX..])
    } else {
        let codec =
            types::codec_of_tag(tag).ok_or_else(|| bad(format!("unknown record tag {tag}")))?;
        let obj = (codec.decode)(&mut body).map_err(bad)?;
        body.finish().map_err(bad)?;
        RestoreValue::Obj(obj)
    };
    Ok((key, value, meta))
}

fn load_records(
    eng: &mut Engine,
    t: TenantId,
    reader: &mut Reader<impl Read>,
    kind: RecencyKind,
    legacy: bool,
) -> Result<Loaded, format::FormatError> {
    let mut buf = Vec::new();
    let mut done = Loaded::default();
    while let Some((tag, at)) = reader.next(&mut buf)? {
        let (key, value, meta) = decode_item(tag, &buf, at, legacy)?;
        let stored = eng.restore(t, key, value, meta, kind);
        count_restore(&mut done, stored)
            .map_err(|what| format::FormatError { offset: at, what })?;
    }
    Ok(done)
}

/// Counts one [`Engine::restore`] outcome in `done`.
///
/// # Errors
/// A refusal other than for memory, as a message.
fn count_restore(
    done: &mut Loaded,
    stored: Result<bool, locus_engine::EngineError>,
) -> Result<(), String> {
    match stored {
        Ok(true) => done.items += 1,
        Ok(false) => done.expired += 1,
        // Refused for memory (a smaller budget than when saved, `noeviction`): the item is
        // dropped, as an eviction would have dropped it, and counted.
        Err(locus_engine::EngineError::OutOfMemory) => done.dropped += 1,
        Err(e) => return Err(format!("item refused: {e}")),
    }
    Ok(())
}

/// A file's items read whole and checked, not yet stored (a dump file is checked to its end
/// before anything goes into a tenant that kept serving meanwhile).
#[derive(Debug)]
pub struct ReadItems {
    /// The records' bodies with their tags and offsets, in file order.
    records: Vec<(u8, Vec<u8>, u64)>,
    /// A file of an older build that may hold memcached items in the old form.
    legacy: bool,
}

/// Reads and checks tenant `name`'s file at `path` (every record, the checksums, the end
/// record, and that every item decodes).
///
/// # Errors
/// A [`format::FormatError`] with the offset of the bad record.
pub fn read_items(path: &Path, name: &str) -> Result<ReadItems, format::FormatError> {
    let ferr = |what: String| format::FormatError { offset: 0, what };
    let (file, size) = open_sized(path)?;
    let (header, mut reader) = Reader::open(file, size)?;
    if header.tenant != name {
        return Err(ferr(format!(
            "holds tenant {:?}, not {name:?}",
            header.tenant
        )));
    }
    let legacy = legacy_memcached(&header);
    let mut records = Vec::new();
    let mut buf = Vec::new();
    while let Some((tag, at)) = reader.next(&mut buf)? {
        decode_item(tag, &buf, at, legacy)?;
        records.push((tag, std::mem::take(&mut buf), at));
    }
    Ok(ReadItems { records, legacy })
}

impl ReadItems {
    /// Items read.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether none were read.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Stores the items into tenant `t` in file order, with the recency of a fresh write,
    /// but for those whose key `skip` names.
    pub fn restore_into(
        &self,
        eng: &mut Engine,
        t: TenantId,
        skip: impl FnMut(&mut Engine, &[u8]) -> bool,
    ) -> Loaded {
        let mut done = Loaded::default();
        self.restore_range(eng, t, 0..self.records.len(), skip, &mut done);
        done
    }

    /// [`ReadItems::restore_into`] of the items in `range` only (a load in slices), counted
    /// into `done`.
    pub fn restore_range(
        &self,
        eng: &mut Engine,
        t: TenantId,
        range: std::ops::Range<usize>,
        mut skip: impl FnMut(&mut Engine, &[u8]) -> bool,
        done: &mut Loaded,
    ) {
        let end = range.end.min(self.records.len());
        for (tag, buf, at) in &self.records[range.start.min(end)..end] {
            // Checked by `read_items`.
            let Ok((key, value, meta)) = decode_item(*tag, buf, *at, self.legacy) else {
                continue;
            };
            if skip(eng, key) {
                continue;
            }
            let stored = eng.restore(t, key, value, meta, RecencyKind::Logical);
            if count_restore(done, stored).is_err() {
                done.dropped += 1;
            }
        }
    }
}

/// Loads every tenant's snapshot from `dir` (start-up): removes temporary files a crash left,
/// sets aside files failing a check (renamed `.corrupt-<unix ms>`), and zeroes the statistics
/// afterwards (a loaded item is not a SET a client made).
pub fn load_all(eng: &mut Engine, tenants: &[(TenantId, String)], dir: &Path) -> LoadReport {
    let mut rep = LoadReport::default();
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.contains(".locus.tmp.") && fs::remove_file(e.path()).is_ok() {
                rep.lines.push(format!(
                    "removed {} (an unfinished save)",
                    e.path().display()
                ));
            }
        }
    }
    for (t, name) in tenants {
        let path = file_path(dir, name);
        if !path.exists() {
            continue;
        }
        match load_tenant(eng, *t, name, &path) {
            Ok(l) => {
                rep.items += l.items;
                rep.expired += l.expired;
                rep.dropped += l.dropped;
                rep.lines.push(format!(
                    "tenant {name}: loaded {} keys from {} ({} expired while down, {} refused \
                     for memory)",
                    l.items,
                    path.display(),
                    l.expired,
                    l.dropped
                ));
            }
            Err(e) => {
                rep.corrupt += 1;
                let moved = set_aside(&path, eng.now_ms());
                rep.lines.push(format!(
                    "tenant {name}: {} is corrupt {e}; {moved}; the tenant starts empty",
                    path.display()
                ));
            }
        }
    }
    eng.reset_stats();
    rep
}

/// Renames a file that failed its checks to `<name>.corrupt-<now_ms>` (set aside, never
/// deleted); returns what happened, for the operator.
pub fn set_aside(path: &Path, now_ms: u64) -> String {
    let aside = PathBuf::from(format!("{}.corrupt-{now_ms}", path.display()));
    match fs::rename(path, &aside) {
        Ok(()) => format!("set aside as {}", aside.display()),
        Err(re) => format!("could not be set aside: {re}"),
    }
}

/// A BGSAVE child.
#[derive(Debug)]
struct Child {
    pid: libc::pid_t,
    started_ms: u64,
    /// Read end of the pipe the child writes its error to.
    pipe: libc::c_int,
}

/// Snapshot state shared by the connections and the tick task.
#[derive(Debug, Default)]
pub struct Snapshots {
    /// Successful write commands since the start (Redis's `dirty`, counted per command).
    dirty: AtomicU64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Unix ms of the last successful save (the start time until one happens, as Redis).
    lastsave_ms: u64,
    /// `dirty` at the last successful save (or at the start of the running one).
    dirty_at_save: u64,
    dirty_at_child: u64,
    last_ok: bool,
    last_error: String,
    last_try_ms: u64,
    last_bgsave_secs: Option<u64>,
    fork_usec: u64,
    child: Option<Child>,
    scheduled: bool,
    saves: u64,
    /// SAVE callers waiting for the running child (see [`Snapshots::save_in_child`]).
    waiters: Waiters,
}

/// What a SAVE caller is told when its child ends: `Ok` or the failure.
pub type SaveDone = Box<dyn FnOnce(Result<(), String>) + Send>;

#[derive(Default)]
struct Waiters(Vec<SaveDone>);

impl std::fmt::Debug for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} waiting", self.0.len())
    }
}

/// What INFO persistence shows.
#[derive(Debug, Clone)]
pub struct Status {
    /// Writes since the last save.
    pub changes: u64,
    /// Whether a BGSAVE runs.
    pub in_progress: bool,
    /// Unix seconds of the last successful save.
    pub lastsave: u64,
    /// Whether the last save succeeded.
    pub last_ok: bool,
    /// The last failure's message ("" after a success).
    pub last_error: String,
    /// Duration of the last BGSAVE in seconds (-1: none yet).
    pub last_bgsave_secs: i64,
    /// Seconds the running BGSAVE has taken (-1: none running).
    pub current_secs: i64,
    /// Microseconds the last fork held the engine lock.
    pub fork_usec: u64,
    /// Successful saves since the start.
    pub saves: u64,
}

impl Snapshots {
    /// State for a server started at `now_ms` (Unix ms).
    pub fn new(now_ms: u64) -> Self {
        Snapshots {
            dirty: AtomicU64::new(0),
            state: Mutex::new(State {
                lastsave_ms: now_ms,
                last_ok: true,
                ..State::default()
            }),
        }
    }

    /// Counts one successful write command.
    pub fn note_write(&self) {
        self.dirty.fetch_add(1, Ordering::Relaxed);
    }

    /// Unix seconds of the last successful save (`LASTSAVE`).
    pub fn lastsave_secs(&self) -> u64 {
        self.state.lock().lastsave_ms / 1000
    }

    /// Whether a BGSAVE child runs.
    pub fn in_progress(&self) -> bool {
        self.state.lock().child.is_some()
    }

    /// INFO persistence's figures at `now_ms`.
    pub fn status(&self, now_ms: u64) -> Status {
        let s = self.state.lock();
        Status {
            changes: self
                .dirty
                .load(Ordering::Relaxed)
                .saturating_sub(s.dirty_at_save),
            in_progress: s.child.is_some(),
            lastsave: s.lastsave_ms / 1000,
            last_ok: s.last_ok,
            last_error: s.last_error.clone(),
            last_bgsave_secs: s.last_bgsave_secs.map_or(-1, |v| v as i64),
            current_secs: s
                .child
                .as_ref()
                .map_or(-1, |c| (now_ms.saturating_sub(c.started_ms) / 1000) as i64),
            fork_usec: s.fork_usec,
            saves: s.saves,
        }
    }

    /// Saves in the foreground (SAVE, SHUTDOWN): the caller holds the engine lock.
    ///
    /// # Errors
    /// The save's failure; also recorded for INFO.
    pub fn save(
        &self,
        eng: &Engine,
        tenants: &[(TenantId, String)],
        dir: &Path,
    ) -> Result<(), String> {
        let dirty = self.dirty.load(Ordering::Relaxed);
        let r = save_all(eng, tenants, dir).map(|_| ());
        let mut s = self.state.lock();
        s.last_try_ms = eng.now_ms();
        match &r {
            Ok(()) => {
                s.lastsave_ms = eng.now_ms();
                s.dirty_at_save = dirty;
                s.last_ok = true;
                s.last_error.clear();
                s.saves += 1;
            }
            Err(e) => {
                s.last_ok = false;
                s.last_error = e.clone();
            }
        }
        r
    }

    /// Starts a BGSAVE (the caller holds the engine lock, so the child's image is one instant).
    ///
    /// # Errors
    /// "already in progress", or why `fork` or `pipe` failed.
    pub fn bgsave(
        &self,
        eng: &Engine,
        tenants: &[(TenantId, String)],
        dir: &Path,
    ) -> Result<(), String> {
        let mut s = self.state.lock();
        if s.child.is_some() {
            return Err("Background save already in progress".to_string());
        }
        s.scheduled = false;
        s.last_try_ms = eng.now_ms();
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid array of two descriptors for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(format!("pipe: {}", std::io::Error::last_os_error()));
        }
        let parent = std::process::id() as libc::pid_t;
        let began = std::time::Instant::now();
        // SAFETY: the child only runs `child_main`, which reads the engine this thread holds
        // locked, allocates with glibc's fork-safe malloc, does file I/O, and `_exit`s; it
        // takes no lock another thread might have held at the fork.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            child_main(eng, tenants, dir, parent, fds[1]);
        }
        let fork_usec = began.elapsed().as_micros() as u64;
        // SAFETY: closing the write end we own; the child has its own copy.
        unsafe { libc::close(fds[1]) };
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: closing the read end we own.
            unsafe { libc::close(fds[0]) };
            s.last_ok = false;
            s.last_error = format!("fork: {e}");
            return Err(format!("fork: {e}"));
        }
        s.fork_usec = fork_usec;
        s.dirty_at_child = self.dirty.load(Ordering::Relaxed);
        s.child = Some(Child {
            pid,
            started_ms: eng.now_ms(),
            pipe: fds[0],
        });
        Ok(())
    }

    /// `SAVE`: the same child as [`Snapshots::bgsave`] writes the files; `done` is called when
    /// it ends (from [`Snapshots::poll`]). The caller waits for it without the engine lock, so
    /// the files are written while every tenant is served (Redis's SAVE stops them all); what
    /// is saved is the image of the instant of the fork, as with SAVE.
    ///
    /// # Errors
    /// As [`Snapshots::bgsave`] (`done` is not called then).
    pub fn save_in_child(
        &self,
        eng: &Engine,
        tenants: &[(TenantId, String)],
        dir: &Path,
        done: SaveDone,
    ) -> Result<(), String> {
        self.bgsave(eng, tenants, dir)?;
        self.state.lock().waiters.0.push(done);
        Ok(())
    }

    /// `BGSAVE SCHEDULE` while a save runs: start one when it ends.
    pub fn schedule(&self) {
        self.state.lock().scheduled = true;
    }

    /// Reaps a finished child (tick task, `hz` times a second); returns true when a BGSAVE is
    /// due (scheduled, or a save point reached at `now_ms`).
    pub fn poll(&self, now_ms: u64, points: &[(u64, u64)]) -> bool {
        let mut s = self.state.lock();
        if let Some((pid, pipe, started)) = s.child.as_ref().map(|c| (c.pid, c.pipe, c.started_ms))
        {
            let mut status = 0;
            // SAFETY: waiting for our own child without blocking.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == 0 {
                return false;
            }
            let msg = read_pipe(pipe);
            s.child = None;
            let ok = r == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
            s.last_bgsave_secs = Some(now_ms.saturating_sub(started) / 1000);
            if ok {
                s.lastsave_ms = now_ms;
                s.dirty_at_save = s.dirty_at_child;
                s.last_ok = true;
                s.last_error.clear();
                s.saves += 1;
            } else {
                s.last_ok = false;
                s.last_error = if msg.is_empty() {
                    format!("the BGSAVE child ended with status {status}")
                } else {
                    msg
                };
            }
            let outcome = if ok {
                Ok(())
            } else {
                Err(s.last_error.clone())
            };
            for done in std::mem::take(&mut s.waiters.0) {
                done(outcome.clone());
            }
        }
        if s.scheduled {
            return true;
        }
        let changes = self
            .dirty
            .load(Ordering::Relaxed)
            .saturating_sub(s.dirty_at_save);
        let since = now_ms.saturating_sub(s.lastsave_ms) / 1000;
        let may_retry = s.last_ok || now_ms.saturating_sub(s.last_try_ms) > RETRY_DELAY_MS;
        may_retry
            && points
                .iter()
                .any(|&(secs, ch)| changes >= ch && changes > 0 && since >= secs)
    }

    /// Kills a running BGSAVE child and removes its temporary files (SHUTDOWN, as Redis).
    pub fn kill_child(&self, dir: &Path) {
        let mut s = self.state.lock();
        if let Some(c) = s.child.take() {
            // SAFETY: signalling and reaping our own child.
            unsafe {
                libc::kill(c.pid, libc::SIGKILL);
                libc::waitpid(c.pid, std::ptr::null_mut(), 0);
                libc::close(c.pipe);
            }
            let tail = format!(".locus.tmp.{}", c.pid);
            if let Ok(entries) = fs::read_dir(dir) {
                for e in entries.flatten() {
                    if e.file_name().to_string_lossy().ends_with(&tail) {
                        let _ = fs::remove_file(e.path());
                    }
                }
            }
        }
        for done in std::mem::take(&mut s.waiters.0) {
            done(Err("the save was stopped (shutdown)".to_string()));
        }
    }
}

/// Reads what a finished child wrote to its pipe, and closes it.
fn read_pipe(fd: libc::c_int) -> String {
    let mut buf = vec![0u8; CHILD_MSG_MAX];
    // SAFETY: reading into a buffer of the given length from our own descriptor; the child has
    // exited, so the read does not block.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(fd) };
    buf.truncate(usize::try_from(n).unwrap_or(0));
    String::from_utf8_lossy(&buf).into_owned()
}

/// The BGSAVE child: write every file, report, `_exit`. Never returns.
fn child_main(
    eng: &Engine,
    tenants: &[(TenantId, String)],
    dir: &Path,
    parent: libc::pid_t,
    pipe: libc::c_int,
) -> ! {
    // SAFETY: prctl/getppid/close_range/write/_exit are async-signal-safe system calls on
    // arguments we own.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(2);
        }
        // Every inherited descriptor but the pipe: listeners (a restarted server must be able
        // to bind), client sockets, the runtime's.
        close_from(3, pipe);
    }
    crate::server::forget_held_in_child();
    let code = match save_all(eng, tenants, dir) {
        Ok(_) => 0,
        Err(e) => {
            let b = e.as_bytes();
            // SAFETY: writing our own buffer to our own descriptor.
            unsafe { libc::write(pipe, b.as_ptr().cast(), b.len().min(CHILD_MSG_MAX)) };
            1
        }
    };
    // SAFETY: ends the child without running the parent's destructors or atexit handlers.
    unsafe { libc::_exit(code) }
}

/// Closes every descriptor from `from` up except `keep`.
///
/// # Safety
/// Only in a freshly forked child that uses none of the descriptors closed.
unsafe fn close_from(from: libc::c_uint, keep: libc::c_int) {
    let keep = keep as libc::c_uint;
    // SAFETY: close_range on ranges of descriptors this process owns; the caller guarantees
    // none of them is used afterwards.
    unsafe {
        if keep > from {
            libc::syscall(libc::SYS_close_range, from, keep - 1, 0);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use locus_common::SystemClock;
    use locus_engine::{Expire, SetOptions};

    use super::*;
    use crate::ServerConfig;
    use crate::exec::types::hash::Hash;
    use crate::exec::types::quicklist::List;
    use crate::exec::types::set::Set;
    use crate::exec::types::zset::Zset;

    fn engine() -> (Engine, TenantId) {
        let cfg = ServerConfig::default();
        let mut eng = Engine::new(cfg.engine_config(), Arc::new(SystemClock)).unwrap();
        let t = eng
            .add_tenant(cfg.tenant_config(&cfg.tenant_sections()[0]))
            .unwrap();
        (eng, t)
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("locus-snap-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// Every key of a tenant as (key, type, value as text, expiry).
    fn contents(eng: &Engine, t: TenantId) -> Vec<(Vec<u8>, String, Option<u64>)> {
        let mut v = Vec::new();
        eng.for_each_item(t, |k, val, meta| {
            let text = match val {
                ValueRef::Str(s) => format!("string:{s:?}"),
                ValueRef::Obj(o) => {
                    let mut b = Vec::new();
                    (types::codec_for(o.type_name()).unwrap().encode)(o, &mut b).unwrap();
                    format!("{}:{b:?}", o.type_name())
                }
            };
            v.push((k.to_vec(), text, meta.expire_at_ms));
        });
        v.sort();
        v
    }

    fn fill(eng: &mut Engine, t: TenantId) {
        let later = eng.now_ms() + 3_600_000;
        for i in 0..20u32 {
            let expire = if i % 3 == 0 {
                Expire::AtMs(later + u64::from(i))
            } else {
                Expire::Persist
            };
            let opts = SetOptions {
                expire,
                ..SetOptions::default()
            };
            eng.set(t, format!("s{i}").as_bytes(), &i.to_le_bytes(), opts)
                .unwrap();
        }
        eng.set(t, b"empty", b"", SetOptions::default()).unwrap();
        let mut h = Hash::default();
        h.set(b"f1", b"v1");
        h.set(b"f2", &[0u8, 255, 10]);
        eng.obj_store(t, b"h", Box::new(h), false).unwrap();
        let mut big = Hash::default();
        for i in 0..300u32 {
            big.set(format!("field{i}").as_bytes(), &i.to_be_bytes());
        }
        eng.obj_store(t, b"bighash", Box::new(big), false).unwrap();
        let mut l = List::new();
        for e in ["a", "12345", "-7", "x"] {
            l.push_back(e.as_bytes());
        }
        eng.obj_store(t, b"l", Box::new(l), false).unwrap();
        eng.set_expire(t, b"l", Some(later));
        let (mut ints, mut strs) = (Set::default(), Set::default());
        for m in ["3", "-70000", "12"] {
            ints.add(m.as_bytes());
        }
        for m in ["x", "17", "\u{0}y"] {
            strs.add(m.as_bytes());
        }
        eng.obj_store(t, b"intset", Box::new(ints), false).unwrap();
        eng.obj_store(t, b"set", Box::new(strs), false).unwrap();
        let small = Zset::from_pairs(&[(b"a".to_vec(), 1.5), (b"b".to_vec(), f64::NEG_INFINITY)]);
        let pairs: Vec<_> = (0..200u32)
            .map(|i| (format!("m{i}").into_bytes(), f64::from(i) / 3.0))
            .collect();
        eng.obj_store(t, b"zset", Box::new(small), false).unwrap();
        eng.obj_store(t, b"bigzset", Box::new(Zset::from_pairs(&pairs)), false)
            .unwrap();
    }

    #[test]
    fn round_trip_keeps_keys_values_types_ttls_and_stamps() {
        let d = dir("roundtrip");
        let (mut a, t) = engine();
        fill(&mut a, t);
        let n = write_tenant(&a, t, "default", &d).unwrap();
        assert_eq!(n, 28);
        let (mut b, tb) = engine();
        let l = load_tenant(&mut b, tb, "default", &file_path(&d, "default")).unwrap();
        assert_eq!((l.items, l.expired, l.dropped), (28, 0, 0));
        assert_eq!(contents(&a, t), contents(&b, tb));
        let stamps = |e: &Engine, t| {
            let mut v = Vec::new();
            e.for_each_item(t, |k, _, m| v.push((k.to_vec(), m.stamp)));
            v.sort();
            v
        };
        assert_eq!(stamps(&a, t), stamps(&b, tb));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn memcached_items_keep_their_header_and_old_files_are_read() {
        use crate::memcache::item::{self, Meta};
        let d = dir("memcached");
        let (mut a, t) = engine();
        let meta = Meta {
            flags: 42,
            cas: 7,
            state: item::FETCHED,
        };
        let stored = item::encode(meta, &[b"data"]);
        a.set_with_meta(t, b"mc", &stored, SetOptions::default())
            .unwrap();
        a.set(t, b"resp", &stored, SetOptions::default()).unwrap();
        write_tenant(&a, t, "default", &d).unwrap();
        let (mut b, tb) = engine();
        load_tenant(&mut b, tb, "default", &file_path(&d, "default")).unwrap();
        // The header stays beside the value; a RESP value that looks like one stays a value.
        let (h, v) = b.peek_with_meta(tb, b"mc").unwrap();
        assert_eq!(item::decode((h, v)), (meta, &b"data"[..]));
        assert_eq!(b.peek_with_meta(tb, b"resp").unwrap(), (None, &stored[..]));
        // A file of an older build: the memcached item is a string with the header inside.
        let mut f = Vec::new();
        let header = Header {
            tenant: "default".to_string(),
            recency: RecencyKind::Logical.code(),
            created_ms: 0,
            flags: 0,
        };
        format::write_header(&mut f, &header).unwrap();
        let mut body = Vec::new();
        for (k, v) in [
            (&b"old"[..], &stored[..]),
            (b"text", b"a value written over RESP"),
        ] {
            body.clear();
            format::item_head(&mut body, k, None, 0);
            body.extend_from_slice(v);
            format::write_record(&mut f, TAG_STRING, &body).unwrap();
        }
        format::write_record(&mut f, TAG_END, &2u64.to_le_bytes()).unwrap();
        let load = |b: &mut Engine, tb| load_from(b, tb, "default", &f[..], f.len() as u64);
        // Where no memcached listener reaches the tenant: strings, as written.
        let (mut b, tb) = engine();
        load(&mut b, tb).unwrap();
        assert_eq!(b.peek_with_meta(tb, b"old").unwrap(), (None, &stored[..]));
        // Where one does: the old item is told by its header.
        set_memcached_tenants(vec!["default".to_string()]);
        let (mut b, tb) = engine();
        load(&mut b, tb).unwrap();
        set_memcached_tenants(Vec::new());
        let (h, v) = b.peek_with_meta(tb, b"old").unwrap();
        assert_eq!(item::decode((h, v)), (meta, &b"data"[..]));
        assert_eq!(b.get(tb, b"old"), Some(&b"data"[..]));
        assert_eq!(
            b.peek_with_meta(tb, b"text").unwrap(),
            (None, &b"a value written over RESP"[..])
        );
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn expired_items_are_not_written_and_dropped_at_load() {
        let d = dir("expired");
        let (mut a, t) = engine();
        let soon = a.now_ms() + 200;
        a.set(
            t,
            b"k",
            b"v",
            SetOptions {
                expire: Expire::AtMs(soon),
                ..SetOptions::default()
            },
        )
        .unwrap();
        write_tenant(&a, t, "default", &d).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(250));
        let (mut b, tb) = engine();
        let r = load_tenant(&mut b, tb, "default", &file_path(&d, "default")).unwrap();
        assert_eq!((r.items, r.expired), (0, 1));
        assert_eq!(b.len(tb), 0);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_detected() {
        let d = dir("flips");
        let (mut a, t) = engine();
        fill(&mut a, t);
        write_tenant(&a, t, "default", &d).unwrap();
        let path = file_path(&d, "default");
        let good = fs::read(&path).unwrap();
        // In memory (rewriting a file 10 000 times is slow), one engine for every attempt: a
        // failed load leaves its tenant empty.
        let load = |b: &mut Engine, tb, f: &[u8]| load_from(b, tb, "default", f, f.len() as u64);
        let (mut b, tb) = engine();
        assert_eq!(load(&mut b, tb, &good).map(|l| l.items), Ok(28));
        b.flush(tb);
        for i in 0..good.len() {
            for mask in [0x01u8, 0x80, 0xFF] {
                let mut f = good.clone();
                f[i] ^= mask;
                let r = load(&mut b, tb, &f);
                assert!(r.is_err(), "byte {i} ^ {mask:#x} went unnoticed");
                assert_eq!(b.len(tb), 0, "a corrupt file loads nothing");
            }
        }
        for len in 0..good.len() {
            let e = load(&mut b, tb, &good[..len]).unwrap_err();
            assert!(e.offset <= len as u64, "{e} for a file of {len} bytes");
        }
        let mut longer = good.clone();
        longer.push(0);
        let e = load(&mut b, tb, &longer).unwrap_err();
        assert_eq!(e.offset, good.len() as u64);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn load_all_sets_a_corrupt_file_aside_with_its_offset() {
        let d = dir("aside");
        let (mut a, t) = engine();
        fill(&mut a, t);
        write_tenant(&a, t, "default", &d).unwrap();
        let path = file_path(&d, "default");
        let mut f = fs::read(&path).unwrap();
        let at = f.len() - 30;
        f[at] ^= 0x10;
        fs::write(&path, &f).unwrap();
        fs::write(d.join("default.locus.tmp.12345"), b"partial").unwrap();
        let (mut b, tb) = engine();
        let rep = load_all(&mut b, &[(tb, "default".to_string())], &d);
        assert_eq!(rep.corrupt, 1);
        let text = rep.lines.join("\n");
        assert!(text.contains("default.locus is corrupt at byte"), "{text}");
        assert!(text.contains("removed"), "{text}");
        assert!(!path.exists());
        let aside: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
            .collect();
        assert_eq!(aside.len(), 1);
        assert_eq!(fs::read(aside[0].path()).unwrap(), f);
        assert_eq!(b.len(tb), 0);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn items_a_smaller_noeviction_budget_refuses_are_counted() {
        let d = dir("dropped");
        let (mut a, t) = engine();
        for i in 0..5000u32 {
            a.set(
                t,
                format!("k{i}").as_bytes(),
                &[7u8; 1000],
                SetOptions::default(),
            )
            .unwrap();
        }
        write_tenant(&a, t, "default", &d).unwrap();
        let mut cfg = ServerConfig::default();
        cfg.memory.maxmemory = locus_common::ByteSize(2 << 20);
        cfg.memory.page_size = Some(locus_common::ByteSize(64 << 10));
        cfg.eviction.policy = "noeviction".to_string();
        let mut b = Engine::new(cfg.engine_config(), Arc::new(SystemClock)).unwrap();
        let tb = b
            .add_tenant(cfg.tenant_config(&cfg.tenant_sections()[0]))
            .unwrap();
        let l = load_tenant(&mut b, tb, "default", &file_path(&d, "default")).unwrap();
        assert!(l.dropped > 0 && l.items > 0, "{l:?}");
        assert_eq!(l.items + l.dropped, 5000);
        assert_eq!(b.len(tb), l.items);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn file_names_escape_what_a_path_must_not_hold() {
        let d = Path::new("/x");
        assert_eq!(file_path(d, "a-b_c.d"), Path::new("/x/a-b_c.d.locus"));
        assert_eq!(file_path(d, "../e"), Path::new("/x/%2E.%2Fe.locus"));
        assert_eq!(file_path(d, "a/b c"), Path::new("/x/a%2Fb%20c.locus"));
    }
}
