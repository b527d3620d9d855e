//! Page buffers, and the slow tier's memory region (sdTMM's `file:` and `numa:` backends).
//!
//! Every page's bytes are a [`PageBuf`]: a pointer and a length, so that reading an item costs
//! the same whether the bytes are the page's own heap allocation (every page of an untiered
//! engine, the fast tier, the `emulated:` slow tier) or a page-sized window of a [`Region`]
//! (the slow tier's pages with a `file:` or `numa:` backend).
//!
//! ```text
//!  Region (one mmap, slow budget × page_size bytes)
//!  +------------+------------+-----+------------+
//!  | window 0   | window 1   | ... | window n-1 |   window i = bytes i·page_size .. (i+1)·page_size
//!  +------------+------------+-----+------------+
//!     ^ PageBuf of one slow page (not owned: the region outlives every page that points in it)
//!
//!  file:<path>  MAP_SHARED of <path>, created (or emptied), locked (flock: one engine per file)
//!               and allocated with posix_fallocate to the region's size at start, removed when
//!               the engine is dropped;
//!  numa:<node>  MAP_PRIVATE|MAP_ANONYMOUS, bound to <node> with mbind(MPOL_BIND) before any
//!               byte is touched, so every page faults in on that node.
//! ```

use std::ffi::CString;
use std::ptr::NonNull;

/// A page's bytes: its own zeroed heap allocation, a window of a [`Region`], or none.
pub(crate) struct PageBuf {
    ptr: NonNull<u8>,
    len: usize,
    /// The bytes are a `Box<[u8]>` this buffer frees; otherwise they belong to a region.
    owned: bool,
}

// SAFETY: a PageBuf is the only handle to its bytes (its own allocation, or a region window that
// exactly one page holds at a time), so moving it to another thread moves that exclusive access.
unsafe impl Send for PageBuf {}
// SAFETY: shared references only read through `Deref`; writes need `&mut`.
unsafe impl Sync for PageBuf {}

impl PageBuf {
    /// No bytes.
    pub(crate) fn none() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
            owned: false,
        }
    }

    /// `len` zeroed bytes of its own.
    pub(crate) fn zeroed(len: usize) -> Self {
        let b: Box<[u8]> = vec![0u8; len].into_boxed_slice();
        let len = b.len();
        let ptr = NonNull::new(Box::into_raw(b).cast::<u8>()).expect("Box is never null");
        Self {
            ptr,
            len,
            owned: true,
        }
    }

    /// Whether the bytes are a region's window.
    pub(crate) fn is_mapped(&self) -> bool {
        !self.owned && self.len > 0
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: `ptr`/`len` came from `Box::into_raw` of a `Box<[u8]>` in `zeroed` and
            // were never freed.
            drop(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.ptr.as_ptr(),
                    self.len,
                ))
            });
        }
    }
}

impl std::ops::Deref for PageBuf {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` bytes (its own allocation, or a window of a live
        // region), or dangling with `len` 0.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for PageBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` is the only access to these bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageBuf")
            .field("len", &self.len)
            .field("mapped", &self.is_mapped())
            .finish()
    }
}

/// One mapping holding the slow tier's pages, `pages` windows of `page_size` bytes.
pub(crate) struct Region {
    base: NonNull<u8>,
    len: usize,
    page_size: usize,
    /// The backing file, locked while the region lives and removed when it is dropped
    /// (`file:` only).
    file: Option<(std::path::PathBuf, std::fs::File)>,
}

// SAFETY: the region is a plain memory mapping; the engine hands each window to one page.
unsafe impl Send for Region {}
// SAFETY: the region itself is never read or written through `&Region` (only windows are).
unsafe impl Sync for Region {}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("len", &self.len)
            .field("page_size", &self.page_size)
            .field("file", &self.path())
            .finish()
    }
}

const MPOL_BIND: libc::c_int = 2;
const MPOL_F_NODE: libc::c_ulong = 1;
const MPOL_F_ADDR: libc::c_ulong = 1 << 1;
const MPOL_MF_STRICT: libc::c_uint = 1;

fn os_err(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

impl Region {
    /// A shared mapping of `path`, created or truncated, then given `pages × page_size` bytes
    /// of storage (`posix_fallocate`: a file system without the space is refused here, not
    /// with a SIGBUS at the first write).
    ///
    /// # Errors
    /// The problem, worded for `tier.slow_backend`.
    pub(crate) fn file(path: &str, pages: u64, page_size: u64) -> Result<Self, String> {
        use std::os::unix::io::AsRawFd;
        let len = Self::len_of(pages, page_size)?;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("file {path} cannot be opened for writing: {e}"))?;
        let meta = f
            .metadata()
            .map_err(|e| format!("file {path}: cannot stat: {e}"))?;
        if !meta.file_type().is_file() {
            return Err(format!(
                "file {path} is not a regular file (a DAX device is used through a file on its fsdax mount)"
            ));
        }
        // One engine per file: truncating a file another engine has mapped would take its
        // pages away under it (SIGBUS). The lock lives as long as the region holds the file.
        // SAFETY: plain syscall on an open descriptor.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(os_err(&format!(
                "file {path} is in use by another engine (flock)"
            )));
        }
        // Leftovers of an earlier run are discarded: the slow tier starts empty.
        f.set_len(0)
            .map_err(|e| format!("file {path} cannot be truncated: {e}"))?;
        // SAFETY: plain syscall on an open descriptor.
        let rc = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, len as libc::off_t) };
        if rc != 0 {
            let e = std::io::Error::from_raw_os_error(rc);
            let _ = std::fs::remove_file(path);
            return Err(format!(
                "file {path} cannot hold the slow tier's {len} bytes ({pages} pages): {e}"
            ));
        }
        // SAFETY: a fresh shared mapping of `len` bytes of a file at least that long.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = os_err(&format!("file {path}: mmap of {len} bytes failed"));
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        Ok(Self {
            base: NonNull::new(p.cast::<u8>()).expect("mmap never returns null on success"),
            len,
            page_size: page_size as usize,
            file: Some((path.into(), f)),
        })
    }

    /// An anonymous mapping bound to NUMA node `node` (`mbind`, `MPOL_BIND`, strict).
    ///
    /// # Errors
    /// The problem, worded for `tier.slow_backend` (an unknown node, a kernel without NUMA).
    pub(crate) fn numa(node: u32, pages: u64, page_size: u64) -> Result<Self, String> {
        if !numa_node_exists(node) {
            return Err(format!(
                "NUMA node {node} does not exist on this machine (see /sys/devices/system/node)"
            ));
        }
        let len = Self::len_of(pages, page_size)?;
        // SAFETY: a fresh anonymous private mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_err(&format!("numa:{node}: mmap of {len} bytes failed")));
        }
        let region = Self {
            base: NonNull::new(p.cast::<u8>()).expect("mmap never returns null on success"),
            len,
            page_size: page_size as usize,
            file: None,
        };
        let bits = 8 * std::mem::size_of::<libc::c_ulong>();
        let mut mask = vec![0 as libc::c_ulong; node as usize / bits + 1];
        mask[node as usize / bits] |= 1 << (node as usize % bits);
        // SAFETY: `p` is our mapping of `len` bytes; the mask holds `mask.len() * bits` bits
        // and the kernel reads `maxnode - 1` of them.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                p,
                len,
                MPOL_BIND,
                mask.as_ptr(),
                (mask.len() * bits + 1) as libc::c_ulong,
                MPOL_MF_STRICT,
            )
        };
        if rc != 0 {
            return Err(os_err(&format!("numa:{node}: mbind to node {node} failed")));
        }
        Ok(region)
    }

    fn len_of(pages: u64, page_size: u64) -> Result<usize, String> {
        pages
            .checked_mul(page_size)
            .and_then(|l| usize::try_from(l).ok())
            .filter(|&l| l > 0)
            .ok_or_else(|| format!("{pages} pages of {page_size} bytes cannot be mapped"))
    }

    /// Windows in the region.
    pub(crate) fn pages(&self) -> u64 {
        (self.len / self.page_size) as u64
    }

    /// Window `i` as a page buffer. The caller MUST hand each window to one page at a time and
    /// drop the region only after the pages.
    pub(crate) fn window(&self, i: u64) -> PageBuf {
        assert!(i < self.pages(), "window {i} outside the region");
        // SAFETY: `i * page_size + page_size <= len`, inside the mapping.
        let ptr = unsafe { self.base.as_ptr().add(i as usize * self.page_size) };
        PageBuf {
            ptr: NonNull::new(ptr).expect("inside a non-null mapping"),
            len: self.page_size,
            owned: false,
        }
    }

    /// The backing file (`file:` only).
    pub(crate) fn path(&self) -> Option<&std::path::Path> {
        self.file.as_ref().map(|(p, _)| p.as_path())
    }

    /// The mapping's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once; no page reads it after the engine is dropped.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        // Removed while still locked, so that no other engine truncates it before it is gone.
        if let Some((p, _)) = &self.file {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Whether the kernel knows NUMA node `node`.
pub(crate) fn numa_node_exists(node: u32) -> bool {
    std::path::Path::new(&format!("/sys/devices/system/node/node{node}")).exists()
}

/// The NUMA node holding the (touched) byte at `addr`, as the kernel reports it.
pub(crate) fn node_of(addr: *const u8) -> Option<i32> {
    let mut node: libc::c_int = -1;
    // SAFETY: get_mempolicy writes one int; the other pointers are null with maxnode 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            addr,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    (rc == 0).then_some(node)
}

/// Whether `path` names a file that could be created or opened for writing, without creating
/// it (validation must not leave files behind).
pub(crate) fn file_writable(path: &str) -> Result<(), String> {
    let p = std::path::Path::new(path);
    let (target, what) = if p.exists() {
        (p.to_path_buf(), "file")
    } else {
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        if !parent.is_dir() {
            return Err(format!(
                "file {path} cannot be opened for writing: directory {} does not exist",
                parent.display()
            ));
        }
        (parent, "directory")
    };
    let c = CString::new(target.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("file {path}: the path holds a NUL byte"))?;
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
        return Err(format!(
            "file {path} cannot be opened for writing: {what} {} is not writable ({})",
            target.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_region_is_sized_shared_and_removed() {
        let dir = std::env::temp_dir().join(format!("locus-region-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("slow");
        let ps = path.to_str().unwrap();
        let r = Region::file(ps, 3, 4096).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 3 * 4096);
        assert!(
            Region::file(ps, 3, 4096)
                .unwrap_err()
                .contains("in use by another engine"),
            "a second engine may not map the same file"
        );
        let mut w = r.window(2);
        assert!(w.is_mapped());
        w[..5].copy_from_slice(b"hello");
        // The bytes are the file's: read it back through the file system.
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(&on_disk[2 * 4096..2 * 4096 + 5], b"hello");
        drop(w);
        drop(r);
        assert!(!path.exists(), "the file is removed with the region");
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        assert!(
            file_writable("/proc/no/such/dir/x")
                .unwrap_err()
                .contains("does not exist")
        );
        assert!(
            Region::file("/proc/no/such/dir/x", 1, 4096)
                .unwrap_err()
                .contains("cannot be opened for writing")
        );
        assert!(
            Region::file("/dev/null", 1, 4096)
                .unwrap_err()
                .contains("not a regular file")
        );
    }

    #[test]
    fn a_numa_region_on_node_0_places_its_pages_there() {
        let r = Region::numa(0, 4, 4096).unwrap();
        let mut w = r.window(1);
        w[0] = 7;
        assert_eq!(node_of(w.as_ptr()), Some(0));
        assert!(
            Region::numa(4095, 1, 4096)
                .unwrap_err()
                .contains("NUMA node 4095 does not exist")
        );
    }

    #[test]
    fn heap_buffers_are_zeroed_and_owned() {
        let mut b = PageBuf::zeroed(64);
        assert!(b.iter().all(|&x| x == 0) && !b.is_mapped());
        b[63] = 1;
        assert_eq!(b[63], 1);
        assert!(PageBuf::none().is_empty());
    }
}
