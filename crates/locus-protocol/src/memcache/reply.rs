//! Replies of both protocols, byte for byte as memcached 1.6 writes them.
//!
//! [`ReplyWriter`] appends to a `Vec<u8>` the server writes to the socket once per batch of
//! pipelined requests. Text replies are one call each (`VALUE` lines with their data, `STORED`,
//! `STAT`, ...). A meta reply line is built by a [`MetaLine`]: the status code first, then the
//! return flags in the order the server adds them (memcached: the order of the request's flags,
//! then `Z`, `X`, `W`); the line's `\r\n` is written when the builder is dropped, so
//! `w.meta(MetaStatus::Hd).flag_u64(b'c', cas);` is a whole line. After a `VA` line the server
//! writes the value with [`ReplyWriter::data_block`].

use super::MemcacheError;
use super::meta::{MetaRequest, base64_encode};
use super::token::is_valid_key;

/// The status codes of meta replies (besides `VA`, [`ReplyWriter::meta_value`], and `MN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaStatus {
    /// `HD`: success without a value (stored, deleted, hit without `v`).
    Hd,
    /// `EN`: miss (`mg`, `me`).
    En,
    /// `NF`: not found (`md`, `ma`, `ms` with CAS semantics).
    Nf,
    /// `NS`: not stored.
    Ns,
    /// `EX`: the CAS value did not match.
    Ex,
}

impl MetaStatus {
    /// The two-letter code.
    pub fn code(self) -> &'static [u8; 2] {
        match self {
            MetaStatus::Hd => b"HD",
            MetaStatus::En => b"EN",
            MetaStatus::Nf => b"NF",
            MetaStatus::Ns => b"NS",
            MetaStatus::Ex => b"EX",
        }
    }
}

/// Appends memcached replies to a byte vector.
#[derive(Debug)]
pub struct ReplyWriter<'a> {
    out: &'a mut Vec<u8>,
}

/// Appends the decimal form of `n`.
fn push_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Appends the decimal form of `n`.
fn push_i64(out: &mut Vec<u8>, n: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Appends `text` with line breaks replaced by spaces, so it cannot break the framing.
fn push_one_line(out: &mut Vec<u8>, text: &[u8]) {
    out.extend(
        text.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
}

impl<'a> ReplyWriter<'a> {
    /// A writer appending to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Self { out }
    }

    /// Bytes in the vector (everything written so far).
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// True when the vector is empty.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    fn status(&mut self, line: &[u8]) {
        self.out.extend_from_slice(line);
        self.out.extend_from_slice(b"\r\n");
    }

    /// One item of a retrieval: `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n` (the CAS
    /// value for `gets`/`gats`). The reply ends with [`ReplyWriter::end`].
    pub fn value(&mut self, key: &[u8], flags: u32, data: &[u8], cas: Option<u64>) {
        self.out.reserve(key.len() + data.len() + 48);
        self.out.extend_from_slice(b"VALUE ");
        self.out.extend_from_slice(key);
        self.out.push(b' ');
        push_u64(self.out, u64::from(flags));
        self.out.push(b' ');
        push_u64(self.out, data.len() as u64);
        if let Some(cas) = cas {
            self.out.push(b' ');
            push_u64(self.out, cas);
        }
        self.out.extend_from_slice(b"\r\n");
        self.data_block(data);
    }

    /// `END\r\n`: the end of a retrieval or of a `stats` listing.
    pub fn end(&mut self) {
        self.status(b"END");
    }

    /// One `lru_crawler metadump` line, as memcached 1.6.18 writes it (ended by `\n` alone):
    /// `key=<uri-encoded key> exp=<unix time, -1 for never> la=<unix time of last access>
    /// cas=<cas> fetch=<yes|no> cls=<class id> size=<bytes>`.
    pub fn metadump_line(&mut self, item: &MetadumpItem<'_>) {
        self.out.extend_from_slice(b"key=");
        uri_encode(item.key, self.out);
        self.out.extend_from_slice(b" exp=");
        match item.exp {
            Some(at) => push_u64(self.out, at),
            None => self.out.extend_from_slice(b"-1"),
        }
        self.out.extend_from_slice(b" la=");
        push_u64(self.out, item.last_access);
        self.out.extend_from_slice(b" cas=");
        push_u64(self.out, item.cas);
        self.out.extend_from_slice(if item.fetched {
            b" fetch=yes cls="
        } else {
            b" fetch=no cls="
        });
        push_u64(self.out, u64::from(item.class));
        self.out.extend_from_slice(b" size=");
        push_u64(self.out, item.size);
        self.out.push(b'\n');
    }

    /// One `lru_crawler mgdump` line: `mg <key>\r\n`, or `mg <base64 key> b\r\n` for a key
    /// the text protocol cannot carry (memcached 1.6's current format).
    pub fn mgdump_line(&mut self, key: &[u8]) {
        self.out.extend_from_slice(b"mg ");
        if is_valid_key(key) {
            self.out.extend_from_slice(key);
            self.out.extend_from_slice(b"\r\n");
        } else {
            base64_encode(key, self.out);
            self.out.extend_from_slice(b" b\r\n");
        }
    }

    /// `STORED\r\n`.
    pub fn stored(&mut self) {
        self.status(b"STORED");
    }

    /// `NOT_STORED\r\n`: an `add`/`replace`/`append`/`prepend` condition failed.
    pub fn not_stored(&mut self) {
        self.status(b"NOT_STORED");
    }

    /// `EXISTS\r\n`: a `cas` found the item changed.
    pub fn exists(&mut self) {
        self.status(b"EXISTS");
    }

    /// `NOT_FOUND\r\n`.
    pub fn not_found(&mut self) {
        self.status(b"NOT_FOUND");
    }

    /// `DELETED\r\n`.
    pub fn deleted(&mut self) {
        self.status(b"DELETED");
    }

    /// `TOUCHED\r\n`.
    pub fn touched(&mut self) {
        self.status(b"TOUCHED");
    }

    /// `OK\r\n`.
    pub fn ok(&mut self) {
        self.status(b"OK");
    }

    /// `RESET\r\n` (`stats reset`).
    pub fn reset(&mut self) {
        self.status(b"RESET");
    }

    /// `ERROR\r\n`: an unknown command.
    pub fn error(&mut self) {
        self.status(b"ERROR");
    }

    /// The new value after `incr`/`decr`: `<n>\r\n`.
    pub fn number(&mut self, n: u64) {
        push_u64(self.out, n);
        self.out.extend_from_slice(b"\r\n");
    }

    /// `VERSION <version>\r\n`.
    pub fn version(&mut self, version: &str) {
        self.out.extend_from_slice(b"VERSION ");
        push_one_line(self.out, version.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// `STAT <name> <value>\r\n`; the listing ends with [`ReplyWriter::end`].
    pub fn stat(&mut self, name: &str, value: &[u8]) {
        self.out.extend_from_slice(b"STAT ");
        push_one_line(self.out, name.as_bytes());
        self.out.push(b' ');
        push_one_line(self.out, value);
        self.out.extend_from_slice(b"\r\n");
    }

    /// `STAT <name> <n>\r\n`.
    pub fn stat_u64(&mut self, name: &str, n: u64) {
        self.stat(name, itoa::Buffer::new().format(n).as_bytes());
    }

    /// `STAT <name> <n>\r\n` for a signed value.
    pub fn stat_i64(&mut self, name: &str, n: i64) {
        self.stat(name, itoa::Buffer::new().format(n).as_bytes());
    }

    /// `CLIENT_ERROR <msg>\r\n` (line breaks in `msg` become spaces).
    pub fn client_error(&mut self, msg: &str) {
        self.out.extend_from_slice(b"CLIENT_ERROR ");
        push_one_line(self.out, msg.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// `SERVER_ERROR <msg>\r\n` (line breaks in `msg` become spaces).
    pub fn server_error(&mut self, msg: &str) {
        self.out.extend_from_slice(b"SERVER_ERROR ");
        push_one_line(self.out, msg.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// The reply memcached sends for a parse error, if any (nothing for `noreply` and for the
    /// silent closes). Returns whether a line was written.
    pub fn protocol_error(&mut self, e: &MemcacheError) -> bool {
        match e.reply() {
            Some(line) => {
                self.status(line.as_bytes());
                true
            }
            None => false,
        }
    }

    /// Any other one-line reply (`BUSY currently processing reassign request`, `BADCLASS ...`),
    /// line breaks replaced by spaces, then `\r\n`.
    pub fn line(&mut self, text: &[u8]) {
        push_one_line(self.out, text);
        self.out.extend_from_slice(b"\r\n");
    }

    /// Appends pre-encoded bytes as they are.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// A data block: `<data>\r\n` (after a `VA` line).
    pub fn data_block(&mut self, data: &[u8]) {
        self.out.extend_from_slice(data);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A meta status line: the code, then the flags added to the returned builder.
    pub fn meta(&mut self, status: MetaStatus) -> MetaLine<'_> {
        self.out.extend_from_slice(status.code());
        MetaLine { out: self.out }
    }

    /// A meta value line, `VA <len>` and the flags added to the returned builder; the data
    /// block follows ([`ReplyWriter::data_block`]).
    pub fn meta_value(&mut self, len: usize) -> MetaLine<'_> {
        self.out.extend_from_slice(b"VA ");
        push_u64(self.out, len as u64);
        MetaLine { out: self.out }
    }

    /// `MN\r\n`.
    pub fn meta_noop(&mut self) {
        self.status(b"MN");
    }

    /// The `me` line, `ME <key>` and the `name=value` fields added to the returned builder
    /// (memcached: `exp`, `la`, `cas`, `fetch`, `cls`, `size`). A binary key is written in
    /// base64 (without a `b` marker, as memcached).
    pub fn meta_debug(&mut self, key: &[u8], binary: bool) -> MetaDebugLine<'_> {
        self.out.extend_from_slice(b"ME ");
        if binary {
            base64_encode(key, self.out);
        } else {
            self.out.extend_from_slice(key);
        }
        MetaDebugLine { out: self.out }
    }
}

/// The flags of a meta reply line; writes the line's `\r\n` when dropped.
#[derive(Debug)]
pub struct MetaLine<'w> {
    out: &'w mut Vec<u8>,
}

impl MetaLine<'_> {
    /// A flag without argument (` W`, ` X`, ` Z`, ` b`).
    pub fn flag(&mut self, letter: u8) -> &mut Self {
        self.out.extend_from_slice(&[b' ', letter]);
        self
    }

    /// A flag with a number (` c<cas>`, ` s<size>`, ` f<flags>`, ` h0`).
    pub fn flag_u64(&mut self, letter: u8, n: u64) -> &mut Self {
        self.flag(letter);
        push_u64(self.out, n);
        self
    }

    /// A flag with a signed number (` t-1` for an item without TTL).
    pub fn flag_i64(&mut self, letter: u8, n: i64) -> &mut Self {
        self.flag(letter);
        push_i64(self.out, n);
        self
    }

    /// A flag with an argument as given (line breaks replaced by spaces).
    pub fn flag_bytes(&mut self, letter: u8, arg: &[u8]) -> &mut Self {
        self.flag(letter);
        push_one_line(self.out, arg);
        self
    }

    /// The opaque token copied back: ` O<token>`.
    pub fn opaque(&mut self, token: &[u8]) -> &mut Self {
        self.flag_bytes(b'O', token)
    }

    /// The key: ` k<key>`, or ` k<base64> b` for a binary key.
    pub fn key(&mut self, key: &[u8], binary: bool) -> &mut Self {
        self.flag(b'k');
        if binary {
            base64_encode(key, self.out);
            self.flag(b'b');
        } else {
            self.out.extend_from_slice(key);
        }
        self
    }

    /// The `O` and `k` flags of `req`, in the request's order: all memcached returns on a miss
    /// (`EN`, `NF`) and on `md` and `ma` without a value.
    pub fn echo(&mut self, req: &MetaRequest<'_>) -> &mut Self {
        for f in req.flags.iter() {
            match f.letter {
                b'O' => {
                    self.opaque(f.arg);
                }
                b'k' => {
                    self.key(req.key.bytes(), req.key.is_binary());
                }
                _ => {}
            }
        }
        self
    }
}

impl Drop for MetaLine<'_> {
    fn drop(&mut self) {
        self.out.extend_from_slice(b"\r\n");
    }
}

/// The fields of an `ME` line; writes the line's `\r\n` when dropped.
#[derive(Debug)]
pub struct MetaDebugLine<'w> {
    out: &'w mut Vec<u8>,
}

impl MetaDebugLine<'_> {
    /// ` <name>=<value>` (line breaks in `value` replaced by spaces).
    pub fn field(&mut self, name: &str, value: &[u8]) -> &mut Self {
        self.out.push(b' ');
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(b'=');
        push_one_line(self.out, value);
        self
    }

    /// ` <name>=<n>`.
    pub fn field_u64(&mut self, name: &str, n: u64) -> &mut Self {
        self.field(name, itoa::Buffer::new().format(n).as_bytes())
    }

    /// ` <name>=<n>` for a signed value (`exp=-1`).
    pub fn field_i64(&mut self, name: &str, n: i64) -> &mut Self {
        self.field(name, itoa::Buffer::new().format(n).as_bytes())
    }
}

impl Drop for MetaDebugLine<'_> {
    fn drop(&mut self) {
        self.out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ErrorKind, MemcacheLimits, Request, parse};
    use super::*;

    fn enc(f: impl FnOnce(&mut ReplyWriter<'_>)) -> Vec<u8> {
        let mut v = Vec::new();
        f(&mut ReplyWriter::new(&mut v));
        v
    }

    #[test]
    fn text_replies() {
        assert_eq!(
            enc(|w| {
                w.value(b"foo", 0, b"bar", None);
                w.value(
                    b"k",
                    4_294_967_295,
                    b"\r\n",
                    Some(18_446_744_073_709_551_615),
                );
                w.end();
            }),
            b"VALUE foo 0 3\r\nbar\r\nVALUE k 4294967295 2 18446744073709551615\r\n\r\n\r\nEND\r\n"
        );
        assert_eq!(enc(|w| w.stored()), b"STORED\r\n");
        assert_eq!(enc(|w| w.not_stored()), b"NOT_STORED\r\n");
        assert_eq!(enc(|w| w.exists()), b"EXISTS\r\n");
        assert_eq!(enc(|w| w.not_found()), b"NOT_FOUND\r\n");
        assert_eq!(enc(|w| w.deleted()), b"DELETED\r\n");
        assert_eq!(enc(|w| w.touched()), b"TOUCHED\r\n");
        assert_eq!(enc(|w| w.ok()), b"OK\r\n");
        assert_eq!(enc(|w| w.reset()), b"RESET\r\n");
        assert_eq!(enc(|w| w.error()), b"ERROR\r\n");
        assert_eq!(enc(|w| w.number(0)), b"0\r\n");
        assert_eq!(enc(|w| w.number(u64::MAX)), b"18446744073709551615\r\n");
        assert_eq!(enc(|w| w.version("1.6.38")), b"VERSION 1.6.38\r\n");
        assert_eq!(
            enc(|w| {
                w.stat("pid", b"42");
                w.stat_u64("curr_items", 7);
                w.stat_i64("delta", -3);
                w.end();
            }),
            b"STAT pid 42\r\nSTAT curr_items 7\r\nSTAT delta -3\r\nEND\r\n"
        );
        assert_eq!(
            enc(|w| w.client_error("bad\r\nthing")),
            b"CLIENT_ERROR bad  thing\r\n"
        );
        assert_eq!(
            enc(|w| w.server_error("out of memory storing object")),
            b"SERVER_ERROR out of memory storing object\r\n"
        );
        assert_eq!(
            enc(|w| w.line(b"BUSY currently processing reassign request")),
            b"BUSY currently processing reassign request\r\n"
        );
        assert_eq!(enc(|w| w.raw(b"x")), b"x");
    }

    #[test]
    fn parse_errors_as_replies() {
        let l = MemcacheLimits::default();
        let reply = |buf: &[u8]| match parse(buf, &l) {
            Err(e) => enc(|w| {
                w.protocol_error(&e);
            }),
            other => panic!("{other:?}"),
        };
        assert_eq!(reply(b"bogus\r\n"), b"ERROR\r\n");
        assert_eq!(reply(b"bogus noreply\r\n"), b"");
        assert_eq!(
            reply(b"set k 0 0 2000000\r\n"),
            b"SERVER_ERROR object too large for cache\r\n"
        );
        assert_eq!(
            reply(b"set k 0 0 1\r\nxx\r\n"),
            b"CLIENT_ERROR bad data chunk\r\n"
        );
        assert_eq!(reply(b"GET / HTTP/1.0\r\n"), b"");
        let e = MemcacheError::keep(ErrorKind::InvalidFlag, 1, false);
        let mut v = Vec::new();
        assert!(ReplyWriter::new(&mut v).protocol_error(&e));
        assert_eq!(v, b"CLIENT_ERROR invalid flag\r\n");
    }

    #[test]
    fn meta_replies() {
        assert_eq!(enc(|w| drop(w.meta(MetaStatus::Hd))), b"HD\r\n");
        assert_eq!(enc(|w| w.meta_noop()), b"MN\r\n");
        assert_eq!(
            enc(|w| {
                w.meta(MetaStatus::Hd).flag_u64(b'c', 99).flag_i64(b't', -1);
            }),
            b"HD c99 t-1\r\n"
        );
        assert_eq!(
            enc(|w| {
                w.meta_value(2)
                    .flag_u64(b'f', 0)
                    .flag_u64(b's', 2)
                    .opaque(b"123")
                    .key(b"foo", false)
                    .flag(b'W');
                w.data_block(b"hi");
            }),
            b"VA 2 f0 s2 O123 kfoo W\r\nhi\r\n"
        );
        assert_eq!(
            enc(|w| {
                w.meta(MetaStatus::En);
                w.meta(MetaStatus::Nf);
                w.meta(MetaStatus::Ns);
                w.meta(MetaStatus::Ex);
            }),
            b"EN\r\nNF\r\nNS\r\nEX\r\n"
        );
        assert_eq!(
            enc(|w| {
                w.meta(MetaStatus::Hd).key(&[0, 1, 2, 255], true);
            }),
            b"HD kAAEC/w== b\r\n"
        );
        assert_eq!(
            enc(|w| {
                w.meta(MetaStatus::Hd).flag_bytes(b'O', b"a\nb");
            }),
            b"HD Oa b\r\n"
        );
        assert_eq!(
            enc(|w| {
                w.meta_debug(b"foo", false)
                    .field_i64("exp", -1)
                    .field_u64("la", 3)
                    .field_u64("cas", 2)
                    .field("fetch", b"no")
                    .field_u64("cls", 1)
                    .field_u64("size", 63);
            }),
            b"ME foo exp=-1 la=3 cas=2 fetch=no cls=1 size=63\r\n"
        );
        assert_eq!(enc(|w| drop(w.meta_debug(&[0xff], true))), b"ME /w==\r\n");
    }

    #[test]
    fn echo_copies_opaque_and_key_in_request_order() {
        let l = MemcacheLimits::default();
        let buf = b"mg Zm9v b v k Oxyz t\r\n";
        let Ok(Some((Request::Meta(req), _))) = parse(buf, &l) else {
            panic!()
        };
        assert_eq!(
            enc(|w| {
                w.meta(MetaStatus::En).echo(&req);
            }),
            b"EN kZm9v b Oxyz\r\n"
        );
    }

    #[test]
    fn writer_length() {
        let mut v = Vec::new();
        let mut w = ReplyWriter::new(&mut v);
        assert!(w.is_empty());
        w.ok();
        assert_eq!(w.len(), 4);
    }
}

/// What a `lru_crawler metadump` line says about one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadumpItem<'a> {
    /// The key (URI-encoded on the line).
    pub key: &'a [u8],
    /// Absolute expiry, Unix seconds; `None`: never.
    pub exp: Option<u64>,
    /// Last access, Unix seconds.
    pub last_access: u64,
    /// The CAS unique.
    pub cas: u64,
    /// Fetched since it was stored.
    pub fetched: bool,
    /// Its slab class id.
    pub class: u32,
    /// Its size in bytes.
    pub size: u64,
}

/// memcached's `uriencode`: letters, digits and `-._~` as they are, every other byte `%XX`.
fn uri_encode(src: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in src {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

#[cfg(test)]
mod dump_tests {
    use super::*;

    #[test]
    fn metadump_and_mgdump_lines() {
        let mut out = Vec::new();
        let mut w = ReplyWriter::new(&mut out);
        w.metadump_line(&MetadumpItem {
            key: b"a b/c~",
            exp: None,
            last_access: 1700000000,
            cas: 7,
            fetched: true,
            class: 1,
            size: 96,
        });
        w.metadump_line(&MetadumpItem {
            key: b"k",
            exp: Some(1700000100),
            last_access: 5,
            cas: 8,
            fetched: false,
            class: 12,
            size: 1184,
        });
        w.mgdump_line(b"plain");
        w.mgdump_line(b"sp ace");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "key=a%20b%2Fc~ exp=-1 la=1700000000 cas=7 fetch=yes cls=1 size=96\n\
             key=k exp=1700000100 la=5 cas=8 fetch=no cls=12 size=1184\n\
             mg plain\r\nmg c3AgYWNl b\r\n"
        );
    }
}
