//! The memcached parser against its contract, from outside the crate:
//!
//! * every command parses from a byte-exact example into the expected request;
//! * every proper prefix of a valid request is incomplete, and the whole request parses the same
//!   whatever follows it;
//! * a connection fed the same bytes in any chunks (one read, byte by byte, random splits) sees
//!   the same requests and errors, random garbage included, and the parser never panics nor
//!   consumes more than it was given; it waits only for as many bytes as the limits allow;
//! * the limits (250-byte keys, item size with the block swallowed, line length) and `noreply`;
//! * base64 keys round-trip through the parser and the reply writer.

use locus_protocol::memcache::{
    self, AutomoveSetting, ErrorKind, LruCrawler, MemcacheError, MemcacheLimits, MetaCommand,
    MetaStatus, Recovery, ReplyWriter, Request, SetMode, Store, StoreMode, Tokens, base64_decode,
    base64_encode,
};
use proptest::prelude::*;

type Verdict<'a> = Result<Option<(Request<'a>, usize)>, MemcacheError>;

fn parse(buf: &[u8]) -> Verdict<'_> {
    memcache::parse(buf, &MemcacheLimits::default())
}

/// Limits small enough that short random inputs go past each of them.
const SMALL: MemcacheLimits = MemcacheLimits {
    max_item_size: 16,
    max_line: 24,
    max_multiget_line: 40,
};

/// The most bytes the parser may hold while answering "incomplete": a line up to the multi-get
/// limit without its `\n`, or a storage line at the line limit and a block of the item size
/// limit less one byte.
fn max_pending(l: &MemcacheLimits) -> usize {
    let long = l.max_multiget_line.max(l.max_line);
    long.max(l.max_line + 1 + l.max_item_size + 2 - 1)
}

fn one(buf: &[u8]) -> Request<'_> {
    match parse(buf) {
        Ok(Some((r, n))) => {
            assert_eq!(n, buf.len(), "{:?}", String::from_utf8_lossy(buf));
            r
        }
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(buf)),
    }
}

fn error(buf: &[u8]) -> MemcacheError {
    match parse(buf) {
        Err(e) => e,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(buf)),
    }
}

fn keys_of(r: &Request<'_>) -> Vec<Vec<u8>> {
    match r {
        Request::Get { keys, .. } | Request::Gat { keys, .. } => {
            keys.iter().map(<[u8]>::to_vec).collect()
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_text_command_from_exact_bytes() {
    let r = one(b"get foo bar\r\n");
    assert!(matches!(r, Request::Get { cas: false, .. }));
    assert_eq!(keys_of(&r), [b"foo".to_vec(), b"bar".to_vec()]);
    let r = one(b"gets foo\r\n");
    assert!(matches!(r, Request::Get { cas: true, .. }));
    assert_eq!(keys_of(&r), [b"foo".to_vec()]);
    let r = one(b"gat 300 foo bar\r\n");
    assert!(matches!(
        r,
        Request::Gat {
            exptime: 300,
            cas: false,
            ..
        }
    ));
    assert_eq!(keys_of(&r), [b"foo".to_vec(), b"bar".to_vec()]);
    assert!(matches!(
        one(b"gats 0 foo\r\n"),
        Request::Gat {
            exptime: 0,
            cas: true,
            ..
        }
    ));
    let store = |mode, cas, noreply| {
        Request::Store(Store {
            mode,
            key: b"foo",
            flags: 7,
            exptime: 60,
            data: b"hi\r\nthere",
            cas,
            noreply,
        })
    };
    assert_eq!(
        one(b"set foo 7 60 9\r\nhi\r\nthere\r\n"),
        store(StoreMode::Set, None, false)
    );
    assert_eq!(
        one(b"add foo 7 60 9 noreply\r\nhi\r\nthere\r\n"),
        store(StoreMode::Add, None, true)
    );
    assert_eq!(
        one(b"replace foo 7 60 9\r\nhi\r\nthere\r\n"),
        store(StoreMode::Replace, None, false)
    );
    assert_eq!(
        one(b"append foo 7 60 9\r\nhi\r\nthere\r\n"),
        store(StoreMode::Append, None, false)
    );
    assert_eq!(
        one(b"prepend foo 7 60 9\r\nhi\r\nthere\r\n"),
        store(StoreMode::Prepend, None, false)
    );
    assert_eq!(
        one(b"cas foo 7 60 9 12345\r\nhi\r\nthere\r\n"),
        store(StoreMode::Cas, Some(12345), false)
    );
    assert_eq!(
        one(b"incr foo 5\r\n"),
        Request::Incr {
            key: b"foo",
            delta: 5,
            noreply: false
        }
    );
    assert_eq!(
        one(b"decr foo 5\r\n"),
        Request::Decr {
            key: b"foo",
            delta: 5,
            noreply: false
        }
    );
    assert_eq!(
        one(b"delete foo\r\n"),
        Request::Delete {
            key: b"foo",
            noreply: false
        }
    );
    assert_eq!(
        one(b"delete foo 0\r\n"),
        Request::Delete {
            key: b"foo",
            noreply: false
        }
    );
    assert_eq!(
        one(b"touch foo 10\r\n"),
        Request::Touch {
            key: b"foo",
            exptime: 10,
            noreply: false
        }
    );
    assert_eq!(
        one(b"flush_all\r\n"),
        Request::FlushAll {
            delay: None,
            noreply: false
        }
    );
    assert_eq!(
        one(b"flush_all 30\r\n"),
        Request::FlushAll {
            delay: Some(30),
            noreply: false
        }
    );
    assert_eq!(one(b"version\r\n"), Request::Version);
    assert_eq!(
        one(b"verbosity 2\r\n"),
        Request::Verbosity {
            level: 2,
            noreply: false
        }
    );
    assert_eq!(one(b"quit\r\n"), Request::Quit);
    assert_eq!(
        one(b"stats\r\n"),
        Request::Stats {
            args: Tokens::new(b"")
        }
    );
    assert_eq!(
        one(b"stats slabs\r\n"),
        Request::Stats {
            args: Tokens::new(b"slabs")
        }
    );
    assert_eq!(
        one(b"slabs reassign 1 2\r\n"),
        Request::SlabsReassign { src: 1, dst: 2 }
    );
    assert_eq!(
        one(b"slabs automove 1\r\n"),
        Request::SlabsAutomove {
            setting: AutomoveSetting::Level(1),
            noreply: false
        }
    );
    assert_eq!(
        one(b"lru_crawler metadump all\r\n"),
        Request::LruCrawler(LruCrawler::Metadump { classes: b"all" })
    );
    assert_eq!(
        one(b"lru_crawler crawl 1,2\r\n"),
        Request::LruCrawler(LruCrawler::Crawl { classes: b"1,2" })
    );
    assert_eq!(
        one(b"cache_memlimit 100\r\n"),
        Request::CacheMemlimit {
            megabytes: 100,
            noreply: false
        }
    );
    assert_eq!(one(b"shutdown\r\n"), Request::Shutdown { graceful: false });
    // A bare "\n" ends a line too.
    assert_eq!(one(b"version\n"), Request::Version);
}

#[test]
fn every_meta_command_from_exact_bytes() {
    let meta = |buf| match one(buf) {
        Request::Meta(m) => m,
        other => panic!("{other:?}"),
    };
    let m = meta(b"mg foo s v t Oop k\r\n");
    assert_eq!(m.command, MetaCommand::Get);
    assert_eq!(m.key.bytes(), b"foo");
    let flags: Vec<(u8, &[u8])> = m.flags.iter().map(|f| (f.letter, f.arg)).collect();
    assert_eq!(
        flags,
        [
            (b's', &b""[..]),
            (b'v', b""),
            (b't', b""),
            (b'O', b"op"),
            (b'k', b"")
        ]
    );
    let m = meta(b"ms foo 5 T0 F3 MS I C10 E11\r\nhello\r\n");
    assert_eq!(m.command, MetaCommand::Set);
    assert_eq!(m.data, b"hello");
    assert_eq!(m.set_mode(), Some(SetMode::Set));
    assert_eq!(
        (
            m.flags.ttl(),
            m.flags.client_flags(),
            m.flags.compare_cas(),
            m.flags.new_cas()
        ),
        (Some(0), Some(3), Some(10), Some(11))
    );
    let m = meta(b"md foo I T30 q\r\n");
    assert_eq!(m.command, MetaCommand::Delete);
    assert!(m.flags.has(b'I') && m.flags.quiet());
    let m = meta(b"ma foo N30 J13 D2 MD v\r\n");
    assert_eq!(m.command, MetaCommand::Arithmetic);
    assert_eq!(
        (
            m.flags.vivify(),
            m.flags.initial(),
            m.flags.delta(),
            m.flags.mode()
        ),
        (Some(30), Some(13), Some(2), Some(b'D'))
    );
    let m = meta(b"me foo\r\n");
    assert_eq!(m.command, MetaCommand::Debug);
    let m = meta(b"mg Zm9v b k\r\n");
    assert_eq!(m.key.bytes(), b"foo");
    assert!(m.key.is_binary());
    assert_eq!(one(b"mn\r\n"), Request::MetaNoop);
}

/// Valid keys: printable ASCII without space, and bytes above 0x7f.
fn key() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![0x21u8..0x7f, 0x80u8..=0xff];
    prop::collection::vec(byte, 1..=24)
}

fn key_str() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![key(), Just(vec![b'k'; 250])]
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn noreply_tail() -> impl Strategy<Value = &'static [u8]> {
    prop_oneof![Just(&b""[..]), Just(&b" noreply"[..])]
}

fn eol() -> impl Strategy<Value = &'static [u8]> {
    prop_oneof![Just(&b"\r\n"[..]), Just(&b"\n"[..])]
}

fn storage_request() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec!["set", "add", "replace", "append", "prepend", "cas"]),
        key_str(),
        any::<u32>(),
        any::<i32>(),
        prop::collection::vec(any::<u8>(), 0..40),
        any::<u64>(),
        noreply_tail(),
        eol(),
    )
        .prop_map(|(cmd, key, flags, exptime, data, cas, noreply, eol)| {
            let cas = if cmd == "cas" {
                format!(" {cas}")
            } else {
                String::new()
            };
            let head = format!(" {flags} {exptime} {}{cas}", data.len());
            cat(&[
                cmd.as_bytes(),
                b" ",
                &key,
                head.as_bytes(),
                noreply,
                eol,
                &data,
                b"\r\n",
            ])
        })
}

fn retrieval_request() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec!["get", "gets", "gat", "gats"]),
        any::<i32>(),
        prop::collection::vec(key_str(), 1..6),
        eol(),
    )
        .prop_map(|(cmd, exptime, keys, eol)| {
            let mut v = cmd.as_bytes().to_vec();
            if cmd.starts_with("gat") {
                v.extend(format!(" {exptime}").bytes());
            }
            for k in keys {
                v.push(b' ');
                v.extend(k);
            }
            v.extend_from_slice(eol);
            v
        })
}

fn keyed_request() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec!["incr", "decr", "touch", "delete", "delete0"]),
        key_str(),
        any::<u64>(),
        any::<i32>(),
        noreply_tail(),
        eol(),
    )
        .prop_map(|(cmd, key, delta, exptime, noreply, eol)| {
            let (name, arg) = match cmd {
                "touch" => ("touch", format!(" {exptime}")),
                "delete" => ("delete", String::new()),
                "delete0" => ("delete", " 0".to_string()),
                _ => (cmd, format!(" {delta}")),
            };
            cat(&[name.as_bytes(), b" ", &key, arg.as_bytes(), noreply, eol])
        })
}

fn admin_request() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec![
            "flush_all",
            "flush_all 10",
            "flush_all -5",
            "version",
            "verbosity 1",
            "quit",
            "stats",
            "stats items",
            "stats detail dump",
            "slabs reassign -1 3",
            "slabs automove 2",
            "slabs automove window 10",
            "slabs automove ratio 0.5",
            "lru_crawler enable",
            "lru_crawler sleep 100",
            "lru_crawler tocrawl 0",
            "lru_crawler mgdump hash",
            "cache_memlimit 64",
            "shutdown graceful",
            "mn",
        ]),
        eol(),
    )
        // memcached refuses lines shorter than 4 bytes: "mn\n" is a bad command line.
        .prop_map(|(line, eol)| cat(&[line.as_bytes(), if line == "mn" { b"\r\n" } else { eol }]))
}

fn meta_flags() -> impl Strategy<Value = Vec<String>> {
    let flag = prop::sample::select(vec![
        "v", "k", "c", "f", "h", "l", "q", "s", "t", "u", "x", "I", "O1", "Oabcdef", "T30", "T-1",
        "N0", "R5", "C99", "E100", "F7", "Lpath", "P",
    ]);
    prop::collection::vec(flag, 0..8).prop_map(|fs| {
        let mut seen = Vec::new();
        for f in fs {
            if !seen
                .iter()
                .any(|s: &String| s.as_bytes()[0] == f.as_bytes()[0])
            {
                seen.push(f.to_string());
            }
        }
        seen
    })
}

fn meta_request() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec!["mg", "md", "ma", "me", "ms", "msb"]),
        key_str(),
        prop::collection::vec(any::<u8>(), 1..40),
        meta_flags(),
        prop::collection::vec(any::<u8>(), 0..30),
        eol(),
    )
        .prop_map(|(cmd, key, bin, mut flags, data, eol)| {
            let mut key = key;
            if cmd == "msb" {
                key.clear();
                base64_encode(&bin, &mut key);
                flags.push("b".to_string());
            }
            if cmd == "ma" {
                flags.retain(|f| !f.starts_with('F'));
            }
            let mut v = cmd.as_bytes()[..2].to_vec();
            v.push(b' ');
            v.extend(key);
            let set = cmd.starts_with("ms");
            if set {
                v.extend(format!(" {}", data.len()).bytes());
            }
            for f in &flags {
                v.push(b' ');
                v.extend(f.bytes());
            }
            v.extend_from_slice(eol);
            if set {
                v.extend(data);
                v.extend_from_slice(b"\r\n");
            }
            v
        })
}

fn valid_request() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        storage_request(),
        retrieval_request(),
        keyed_request(),
        admin_request(),
        meta_request(),
    ]
}

/// What a connection sees: each request (its debug form) or error, in order.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    Request(String),
    Error(MemcacheError),
}

/// Runs a connection over `stream` delivered in pieces of the given sizes (cycled; a size of 0
/// counts as 1), as a server would: parse what is buffered, drop what is consumed, swallow what
/// an error says to, read more when incomplete. Checks the bounds of every answer on the way.
fn run(stream: &[u8], chunks: &[usize], limits: &MemcacheLimits) -> Vec<Event> {
    let mut events = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut pos = 0;
    let mut swallow = 0usize;
    let mut i = 0;
    loop {
        // Discard what a refused storage command left to swallow.
        let now = swallow.min(buf.len());
        buf.drain(..now);
        swallow -= now;
        if swallow == 0 {
            match memcache::parse(&buf, limits) {
                Ok(Some((r, n))) => {
                    assert!(n > 0 && n <= buf.len(), "consumed {n} of {}", buf.len());
                    events.push(Event::Request(format!("{r:?}")));
                    buf.drain(..n);
                    continue;
                }
                Ok(None) => {
                    assert!(
                        buf.len() <= max_pending(limits),
                        "waits with {} bytes: {:?}",
                        buf.len(),
                        String::from_utf8_lossy(&buf)
                    );
                }
                Err(e) => {
                    events.push(Event::Error(e.clone()));
                    match e.recovery {
                        Recovery::Close => return events,
                        Recovery::Continue {
                            consumed,
                            swallow: s,
                        } => {
                            assert!(consumed > 0 && consumed <= buf.len());
                            let (now, later) = e.skip(buf.len()).unwrap_or((consumed, 0));
                            assert_eq!(now + later, consumed + s);
                            buf.drain(..now);
                            swallow = later;
                            continue;
                        }
                    }
                }
            }
        }
        if pos == stream.len() {
            return events;
        }
        let size = chunks
            .get(i % chunks.len().max(1))
            .copied()
            .unwrap_or(usize::MAX)
            .max(1);
        i += 1;
        let end = stream.len().min(pos.saturating_add(size));
        buf.extend_from_slice(&stream[pos..end]);
        pos = end;
    }
}

/// The same events whether the stream comes at once, byte by byte, or in `chunks`.
fn check_stream(stream: &[u8], chunks: &[usize], limits: &MemcacheLimits) -> Vec<Event> {
    let whole = run(stream, &[usize::MAX], limits);
    assert_eq!(run(stream, &[1], limits), whole, "byte by byte");
    assert_eq!(run(stream, chunks, limits), whole, "in chunks {chunks:?}");
    whole
}

/// Parses `buf` and every prefix of it: the verdict, once not "incomplete", never changes.
fn check_final_verdicts(buf: &[u8], limits: &MemcacheLimits) {
    let mut first: Option<(usize, Verdict<'_>)> = None;
    for k in 0..=buf.len() {
        let v = memcache::parse(&buf[..k], limits);
        match &first {
            None => {
                if v != Ok(None) {
                    if let Ok(Some((_, n))) = &v {
                        assert_eq!(
                            *n, k,
                            "a request completed by byte {n} was missed until {k}"
                        );
                    }
                    first = Some((k, v));
                }
            }
            Some((at, seen)) => assert_eq!(&v, seen, "verdict after {at} bytes changed at {k}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// Incomplete until the last byte, then one request of exactly the whole length, whatever
    /// follows.
    #[test]
    fn valid_requests_split_anywhere(req in valid_request(), tail in prop::collection::vec(any::<u8>(), 0..16)) {
        let full = parse(&req);
        let Ok(Some((r, n))) = &full else {
            return Err(TestCaseError::fail(format!("{:?}: {full:?}", String::from_utf8_lossy(&req))));
        };
        prop_assert_eq!(*n, req.len());
        for cut in 0..req.len() {
            prop_assert_eq!(parse(&req[..cut]), Ok(None), "prefix of {} bytes", cut);
        }
        let mut more = req.clone();
        more.extend(tail);
        let again = parse(&more);
        prop_assert_eq!(again, Ok(Some((r.clone(), *n))));
    }

    /// A pipeline of valid requests, delivered in any pieces, gives the requests in order.
    #[test]
    fn pipelines_in_any_chunks(reqs in prop::collection::vec(valid_request(), 1..6),
                               chunks in prop::collection::vec(0usize..64, 1..8)) {
        let stream = reqs.concat();
        let events = check_stream(&stream, &chunks, &MemcacheLimits::default());
        prop_assert_eq!(events.len(), reqs.len());
        prop_assert!(events.iter().all(|e| matches!(e, Event::Request(_))));
    }

    #[test]
    fn random_bytes(buf in prop::collection::vec(any::<u8>(), 0..300),
                    chunks in prop::collection::vec(0usize..32, 1..6)) {
        for l in [&MemcacheLimits::default(), &SMALL] {
            check_stream(&buf, &chunks, l);
            check_final_verdicts(&buf, l);
        }
    }

    /// Garbage made of protocol words, so that it often parses or almost parses.
    #[test]
    fn protocol_words(words in prop::collection::vec(prop::sample::select(vec![
            "get", "gets", "gat", "set", "cas", "incr", "delete", "touch", "flush_all", "mg",
            "ms", "md", "ma", "me", "mn", "noreply", "0", "1", "5", "-1", "99999999999", "k",
            "Zm9v", "b", "v", "T1", "Ox", "q", "MA", " ", "  ", "\r\n", "\n", "\r", "abc",
            "stats", "slabs", "automove", "lru_crawler", "HTTP/1.1",
        ]), 0..40),
        chunks in prop::collection::vec(0usize..16, 1..6)) {
        let buf = words.concat().into_bytes();
        for l in [&MemcacheLimits::default(), &SMALL] {
            check_stream(&buf, &chunks, l);
            check_final_verdicts(&buf, l);
        }
    }

    /// Valid requests with a few bytes changed.
    #[test]
    fn mutated_requests(reqs in prop::collection::vec(valid_request(), 1..4),
                        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
                        chunks in prop::collection::vec(0usize..16, 1..6)) {
        let mut buf = reqs.concat();
        for (i, b) in flips {
            let j = i.index(buf.len());
            buf[j] = b;
        }
        for l in [&MemcacheLimits::default(), &SMALL] {
            check_stream(&buf, &chunks, l);
            check_final_verdicts(&buf, l);
        }
    }

    #[test]
    fn base64_round_trips(bytes in prop::collection::vec(any::<u8>(), 1..=186)) {
        let mut enc = Vec::new();
        base64_encode(&bytes, &mut enc);
        prop_assert!(enc.len() <= 248);
        prop_assert_eq!(base64_decode(&enc), Some(bytes.clone()));
        // Through the parser, and back out through the reply writer.
        let mut req = b"mg ".to_vec();
        req.extend(&enc);
        req.extend(b" b k v\r\n");
        let Ok(Some((Request::Meta(m), _))) = parse(&req) else {
            return Err(TestCaseError::fail("not parsed"));
        };
        prop_assert_eq!(m.key.bytes(), &bytes[..]);
        prop_assert_eq!(m.key.raw(), &enc[..]);
        let mut out = Vec::new();
        ReplyWriter::new(&mut out).meta(MetaStatus::Hd).echo(&m);
        let mut want = b"HD k".to_vec();
        want.extend(&enc);
        want.extend(b" b\r\n");
        prop_assert_eq!(out, want);
    }
}

#[test]
fn keys_longer_than_250_bytes_are_refused() {
    let k250 = "k".repeat(250);
    let k251 = "k".repeat(251);
    for template in [
        "get {}\r\n",
        "gets a {}\r\n",
        "gat 1 {}\r\n",
        "incr {} 1\r\n",
        "decr {} 1\r\n",
        "delete {}\r\n",
        "touch {} 1\r\n",
        "mg {} v\r\n",
        "md {}\r\n",
        "me {}\r\n",
    ] {
        let ok = template.replace("{}", &k250);
        assert!(matches!(parse(ok.as_bytes()), Ok(Some(_))), "{template}");
        let bad = template.replace("{}", &k251);
        assert_eq!(
            error(bad.as_bytes()),
            MemcacheError {
                kind: ErrorKind::BadFormat,
                noreply: false,
                recovery: Recovery::Continue {
                    consumed: bad.len(),
                    swallow: 0
                }
            },
            "{template}"
        );
    }
    let bad = format!("ma {k251}\r\n");
    assert_eq!(
        error(bad.as_bytes()).kind,
        ErrorKind::InvalidOrDuplicateFlag
    );
    // Storage commands swallow the block after the refusal.
    for template in ["set {} 0 0 2\r\n", "ms {} 2\r\n"] {
        let ok = format!("{}hi\r\n", template.replace("{}", &k250));
        assert!(matches!(parse(ok.as_bytes()), Ok(Some(_))), "{template}");
        let line = template.replace("{}", &k251);
        let e = error(line.as_bytes());
        assert_eq!(e.kind, ErrorKind::BadFormat);
        assert_eq!(
            e.recovery,
            Recovery::Continue {
                consumed: line.len(),
                swallow: 4
            }
        );
    }
}

#[test]
fn oversized_items_are_refused_and_swallowed() {
    let limits = MemcacheLimits {
        max_item_size: 1000,
        ..MemcacheLimits::default()
    };
    for cmd in ["set big 0 0 1001", "ms big 1001 T0"] {
        let mut stream = format!("{cmd}\r\n").into_bytes();
        let line = stream.len();
        stream.extend(vec![b'x'; 1001]);
        stream.extend(b"\r\nget big\r\n");
        // Declared size above the limit: refused at once, before the block arrives.
        let e = memcache::parse(&stream[..line], &limits).unwrap_err();
        assert_eq!(
            e,
            MemcacheError {
                kind: ErrorKind::TooLarge,
                noreply: false,
                recovery: Recovery::Continue {
                    consumed: line,
                    swallow: 1003
                }
            }
        );
        assert_eq!(e.reply(), Some("SERVER_ERROR object too large for cache"));
        // The connection goes on with the request after the block, however the bytes arrive.
        for chunks in [&[usize::MAX][..], &[1], &[7, 300, 2]] {
            let events = run(&stream, chunks, &limits);
            assert_eq!(events.len(), 2, "{cmd} {chunks:?}: {events:?}");
            assert!(matches!(&events[0], Event::Error(e) if e.kind == ErrorKind::TooLarge));
            assert!(matches!(&events[1], Event::Request(r) if r.starts_with("Get")));
        }
        // At the limit: stored.
        let ok = format!(
            "{}\r\n{}\r\n",
            cmd.replace("1001", "1000"),
            "x".repeat(1000)
        );
        assert!(memcache::parse(ok.as_bytes(), &limits).unwrap().is_some());
    }
    // noreply silences the error reply, the block is still swallowed.
    let e = error(b"set k 0 0 2000000 noreply\r\n");
    assert_eq!(e.kind, ErrorKind::TooLarge);
    assert_eq!(e.reply(), None);
}

#[test]
fn bad_data_chunks_keep_the_connection() {
    let stream = b"set k 0 0 2\r\nabc\r\nget k\r\n";
    let events = run(stream, &[usize::MAX], &MemcacheLimits::default());
    assert_eq!(
        events[0],
        Event::Error(MemcacheError {
            kind: ErrorKind::BadDataChunk,
            noreply: false,
            recovery: Recovery::Continue {
                consumed: 17,
                swallow: 0
            }
        })
    );
    // memcached then reads on after the 2 + 2 bytes it took as the block: the "\n" left is an
    // empty line (1.6.18: `ERROR`), then comes the get.
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(matches!(&events[1], Event::Error(e) if e.kind == ErrorKind::UnknownCommand));
    assert!(matches!(&events[2], Event::Request(r) if r.starts_with("Get")));
}

#[test]
fn line_limits() {
    let limits = MemcacheLimits::default();
    // A command line up to 2048 bytes is read; longer, the connection closes silently.
    let mut line = b"delete ".to_vec();
    line.extend(vec![b'k'; 2048 - 7]);
    line.extend(b"\r\n");
    assert_eq!(error(&line).kind, ErrorKind::LineTooLong);
    assert!(error(&line).closes());
    line.truncate(2047);
    line.push(b'\n');
    assert_eq!(
        error(&line).kind,
        ErrorKind::BadFormat,
        "key too long, line fine"
    );
    let junk = vec![b'x'; 2049];
    assert_eq!(
        memcache::parse(&junk, &limits),
        Err(MemcacheError {
            kind: ErrorKind::LineTooLong,
            noreply: false,
            recovery: Recovery::Close
        })
    );
    assert_eq!(memcache::parse(&junk[..2048], &limits), Ok(None));
    // Multi-gets may be long.
    let mut get = b"get".to_vec();
    for i in 0..20_000 {
        get.extend(format!(" key{i}").bytes());
    }
    get.extend(b"\r\n");
    assert!(get.len() > 100_000);
    let r = one(&get);
    assert!(matches!(r, Request::Get { keys, .. } if keys.len() == 20_000));
    assert_eq!(memcache::parse(&get[..get.len() - 1], &limits), Ok(None));
    let small = MemcacheLimits {
        max_multiget_line: 10_000,
        ..limits
    };
    assert_eq!(
        memcache::parse(&get, &small).unwrap_err().kind,
        ErrorKind::LineTooLong
    );
}

#[test]
fn noreply_everywhere_it_is_allowed() {
    let with = [
        &b"set k 0 0 1 noreply\r\nx\r\n"[..],
        b"add k 0 0 1 noreply\r\nx\r\n",
        b"replace k 0 0 1 noreply\r\nx\r\n",
        b"append k 0 0 1 noreply\r\nx\r\n",
        b"prepend k 0 0 1 noreply\r\nx\r\n",
        b"cas k 0 0 1 5 noreply\r\nx\r\n",
        b"incr k 1 noreply\r\n",
        b"decr k 1 noreply\r\n",
        b"delete k noreply\r\n",
        b"delete k 0 noreply\r\n",
        b"touch k 1 noreply\r\n",
        b"flush_all noreply\r\n",
        b"flush_all 0 noreply\r\n",
        b"verbosity 0 noreply\r\n",
        b"slabs automove 1 noreply\r\n",
        b"cache_memlimit 100 noreply\r\n",
    ];
    for buf in with {
        let r = one(buf);
        assert!(r.noreply(), "{:?}", String::from_utf8_lossy(buf));
        let without = String::from_utf8_lossy(buf).replace(" noreply", "");
        assert!(!one(without.as_bytes()).noreply(), "{without:?}");
    }
    // Errors of those commands are silenced too; retrievals, meta commands and the errors
    // found before `noreply` is read are not.
    for (buf, silent) in [
        (&b"incr k x noreply\r\n"[..], true),
        (b"touch k x noreply\r\n", true),
        (b"set k x 0 1 noreply\r\n", true),
        (b"bogus noreply\r\n", true),
        (b"set k 0 0 x noreply\r\n", false),
        (b"incr k noreply\r\n", true),
        (b"incr noreply\r\n", false),
        (b"get a\tb noreply\r\n", false),
        (b"ms k 1 q z\r\nx\r\n", false),
    ] {
        let e = error(buf);
        assert_eq!(
            e.reply().is_none(),
            silent,
            "{:?}",
            String::from_utf8_lossy(buf)
        );
    }
    // `noreply` is a key for retrievals, and meta commands have `q` instead.
    let r = one(b"get noreply\r\n");
    assert!(!r.noreply());
    assert_eq!(keys_of(&r), [b"noreply".to_vec()]);
    let Request::Meta(m) = one(b"md k q\r\n") else {
        panic!()
    };
    assert!(m.flags.quiet());
}

#[test]
fn replies_byte_exact() {
    let mut out = Vec::new();
    let mut w = ReplyWriter::new(&mut out);
    w.value(b"foo", 3, b"bar", Some(42));
    w.end();
    w.stored();
    w.number(10);
    w.meta_value(3)
        .flag_u64(b'c', 42)
        .flag_i64(b't', -1)
        .flag(b'X')
        .flag(b'W');
    w.data_block(b"bar");
    w.meta(MetaStatus::Ns).opaque(b"7");
    w.meta_noop();
    assert_eq!(
        out,
        b"VALUE foo 3 3 42\r\nbar\r\nEND\r\nSTORED\r\n10\r\nVA 3 c42 t-1 X W\r\nbar\r\nNS O7\r\nMN\r\n"
    );
}
