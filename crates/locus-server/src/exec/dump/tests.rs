//! DUMP/RESTORE's serialization: payloads taken from redis-server 7.0.15 decode to the values
//! that made them, Locus's own payloads round-trip (and are the bytes Redis's rules give), and
//! corrupt payloads are refused without a panic or an allocation their claims would ask for.

use locus_engine::{Object, ValueRef};
use proptest::prelude::*;

use super::crc64::crc64;
use super::pack::LpWriter;
use super::rdb::{self, DecodeError, Decoded, ty};
use crate::exec::types::hash::Hash;
use crate::exec::types::quicklist::List;
use crate::exec::types::set::Set;
use crate::exec::types::stream::{Sid, Stream};
use crate::exec::types::zset::Zset;

fn fixtures() -> Vec<(String, Vec<u8>)> {
    include_str!("testdata/redis-7.0.15.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, h) = l.split_once(' ').unwrap();
            let b = (0..h.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
                .collect();
            (k.to_string(), b)
        })
        .collect()
}

fn fixture(name: &str) -> Vec<u8> {
    fixtures().into_iter().find(|(k, _)| k == name).unwrap().1
}

fn obj(d: Decoded) -> Box<dyn Object> {
    match d {
        Decoded::Obj(o) => o,
        Decoded::Str(_) => panic!("a string"),
    }
}

fn string(d: Decoded) -> Vec<u8> {
    match d {
        Decoded::Str(s) => s,
        Decoded::Obj(_) => panic!("an object"),
    }
}

fn list_of(o: &dyn Object) -> Vec<Vec<u8>> {
    o.as_any().downcast_ref::<List>().unwrap().to_vecs()
}

fn hash_of(o: &dyn Object) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<_> = o
        .as_any()
        .downcast_ref::<Hash>()
        .unwrap()
        .pairs()
        .into_iter()
        .map(|(a, b)| (a.to_vec(), b.to_vec()))
        .collect();
    v.sort();
    v
}

fn set_of(o: &dyn Object) -> Vec<Vec<u8>> {
    let mut v = o.as_any().downcast_ref::<Set>().unwrap().members();
    v.sort();
    v
}

fn zset_of(o: &dyn Object) -> Vec<(Vec<u8>, f64)> {
    o.as_any().downcast_ref::<Zset>().unwrap().pairs()
}

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

#[test]
fn redis_strings_decode() {
    assert_eq!(string(rdb::decode(&fixture("s_raw")).unwrap()), b"hello");
    assert_eq!(string(rdb::decode(&fixture("s_int")).unwrap()), b"12345");
    assert_eq!(
        string(rdb::decode(&fixture("s_bigint")).unwrap()),
        b"1234567890123"
    );
    let lzf = fixture("s_lzf");
    assert_eq!(lzf[1], 0xc3, "redis compressed it");
    let want = format!("{}{}", "a".repeat(100), "b".repeat(50));
    assert_eq!(string(rdb::decode(&lzf).unwrap()), want.as_bytes());
}

#[test]
fn redis_lists_decode() {
    let small = obj(rdb::decode(&fixture("l_small")).unwrap());
    let x100 = "x".repeat(100);
    let want: Vec<Vec<u8>> = ["a", "1", "hello", "-300", "70000", &x100]
        .iter()
        .map(|s| b(s))
        .collect();
    assert_eq!(list_of(&*small), want);
    let big = obj(rdb::decode(&fixture("l_big")).unwrap());
    let want: Vec<Vec<u8>> = (0..3000).map(|i| b(&format!("item{i}"))).collect();
    assert_eq!(list_of(&*big), want);
}

#[test]
fn redis_sets_decode() {
    let s = obj(rdb::decode(&fixture("set_int")).unwrap());
    assert_eq!(s.encoding(), "intset");
    let mut want: Vec<Vec<u8>> = ["1", "2", "3", "-5", "100000"]
        .iter()
        .map(|s| b(s))
        .collect();
    want.sort();
    assert_eq!(set_of(&*s), want);
    let s = obj(rdb::decode(&fixture("set_str")).unwrap());
    assert_eq!(set_of(&*s), vec![b("a"), b("b"), b("c")]);
}

#[test]
fn redis_hashes_decode() {
    let h = obj(rdb::decode(&fixture("h_small")).unwrap());
    assert_eq!(h.encoding(), "listpack");
    let mut want = vec![
        (b("f1"), b("v1")),
        (b("f2"), b("22")),
        (b("f3"), b(&"x".repeat(30))),
    ];
    want.sort();
    assert_eq!(hash_of(&*h), want);
    let h = obj(rdb::decode(&fixture("h_big")).unwrap());
    assert_eq!(h.encoding(), "hashtable");
    let mut want: Vec<_> = (0..300)
        .map(|i| (b(&format!("f{i}")), b(&format!("v{i}"))))
        .collect();
    want.sort();
    assert_eq!(hash_of(&*h), want);
}

#[test]
fn redis_zsets_decode() {
    let z = obj(rdb::decode(&fixture("z_small")).unwrap());
    assert_eq!(z.encoding(), "listpack");
    let want = vec![
        (b("c"), -3.0),
        (b("a"), 1.0),
        (b("b"), 2.5),
        (b("d"), 1e300),
        (b("e"), f64::INFINITY),
    ];
    assert_eq!(zset_of(&*z), want);
    let z = obj(rdb::decode(&fixture("z_big")).unwrap());
    assert_eq!(z.encoding(), "skiplist");
    let want: Vec<_> = (0..300)
        .map(|i| (b(&format!("m{i}")), f64::from(i) * 1.5))
        .collect();
    assert_eq!(zset_of(&*z), want);
}

#[test]
fn redis_stream_decodes_with_its_group() {
    let o = obj(rdb::decode(&fixture("st")).unwrap());
    let s = o.as_any().downcast_ref::<Stream>().unwrap();
    let e = s.entries();
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].0, Sid::new(1, 1));
    assert_eq!(e[1].0, Sid::new(3, 0));
    assert_eq!(e[1].1, vec![(b("c"), b("5"))]);
    assert_eq!(s.last_id, Sid::new(3, 0));
    assert_eq!(s.max_deleted, Sid::new(2, 1));
    assert_eq!(s.entries_added, 3);
    let g = &s.groups[&b"g1"[..]];
    assert_eq!(g.last_id, Sid::new(2, 1));
    assert_eq!(g.entries_read, 2);
    assert_eq!(g.pel.len(), 2);
    assert_eq!(g.consumers[&b"c1"[..]].pel.len(), 2);
}

#[test]
fn every_redis_payload_round_trips_through_locus() {
    for (k, p) in fixtures() {
        let d = rdb::decode(&p).unwrap_or_else(|e| panic!("{k}: {e:?}"));
        let again = match &d {
            Decoded::Str(s) => rdb::encode(ValueRef::Str(s)).unwrap(),
            Decoded::Obj(o) => rdb::encode(ValueRef::Obj(&**o)).unwrap(),
        };
        let d2 = rdb::decode(&again).unwrap();
        match (d, d2) {
            (Decoded::Str(a), Decoded::Str(b)) => assert_eq!(a, b, "{k}"),
            (Decoded::Obj(a), Decoded::Obj(b)) => {
                assert_eq!(a.type_name(), b.type_name(), "{k}");
                assert_eq!(a.len(), b.len(), "{k}");
                assert_eq!(a.encoding(), b.encoding(), "{k}");
                if a.type_name() == "stream" {
                    let (x, y) = (
                        a.as_any().downcast_ref::<Stream>().unwrap(),
                        b.as_any().downcast_ref::<Stream>().unwrap(),
                    );
                    assert_eq!(x.entries(), y.entries());
                    assert_eq!(x.groups.len(), y.groups.len());
                }
            }
            _ => panic!("{k}: type changed"),
        }
    }
}

#[test]
fn strings_are_written_as_redis_writes_them() {
    // Small integers in 1, 2 or 4 bytes; longer ones as text; LZF past 20 bytes when it pays.
    let p = rdb::encode(ValueRef::Str(b"12345")).unwrap();
    assert_eq!(p, fixture("s_int"));
    let p = rdb::encode(ValueRef::Str(b"hello")).unwrap();
    assert_eq!(p, fixture("s_raw"));
    let p = rdb::encode(ValueRef::Str(b"1234567890123")).unwrap();
    assert_eq!(p, fixture("s_bigint"));
    let long = format!("{}{}", "a".repeat(100), "b".repeat(50));
    let p = rdb::encode(ValueRef::Str(long.as_bytes())).unwrap();
    assert_eq!(p[1], 0xc3);
    assert_eq!(string(rdb::decode(&p).unwrap()), long.as_bytes());
}

fn payload(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&10u16.to_le_bytes());
    let c = crc64(0, &p);
    p.extend_from_slice(&c.to_le_bytes());
    p
}

fn bad(p: &[u8]) -> bool {
    matches!(rdb::decode(p), Err(DecodeError::Bad(_)))
}

#[test]
fn footers_are_checked() {
    let mut p = fixture("s_raw");
    assert!(rdb::decode(&p).is_ok());
    let n = p.len();
    p[n - 1] ^= 1;
    assert_eq!(rdb::decode(&p).unwrap_err(), DecodeError::Footer);
    // Version 11 (Redis 7.2) is newer than this server reads.
    let mut body = fixture("s_raw")[..n - 10].to_vec();
    body.extend_from_slice(&11u16.to_le_bytes());
    let c = crc64(0, &body);
    body.extend_from_slice(&c.to_le_bytes());
    assert_eq!(rdb::decode(&body).unwrap_err(), DecodeError::Footer);
    for k in 0..10 {
        assert_eq!(rdb::decode(&p[..k]).unwrap_err(), DecodeError::Footer);
    }
}

#[test]
fn truncated_payloads_are_refused_at_every_length() {
    for (k, p) in fixtures() {
        let body = &p[..p.len() - 10];
        // Every cut of the small payloads; of the large ones, every 61st and the last 100.
        let step = if body.len() > 2000 { 61 } else { 1 };
        let cuts = (0..body.len())
            .step_by(step)
            .chain(body.len().saturating_sub(100)..body.len());
        for cut in cuts {
            assert!(bad(&payload(&body[..cut])), "{k} cut at {cut}");
        }
        // And a byte too many.
        let mut longer = body.to_vec();
        longer.push(0);
        assert!(bad(&payload(&longer)), "{k} with a trailing byte");
    }
}

#[test]
fn hostile_lengths_are_refused_without_allocating() {
    // A string claiming 2^64-1 bytes, a list claiming 2^32 elements, an LZF string claiming
    // 4 GiB uncompressed.
    let mut b = vec![ty::STRING, 0x81];
    b.extend_from_slice(&u64::MAX.to_be_bytes());
    assert!(bad(&payload(&b)));
    let mut b = vec![ty::LIST, 0x81];
    b.extend_from_slice(&(1u64 << 32).to_be_bytes());
    assert!(bad(&payload(&b)));
    let mut b = vec![ty::STRING, 0xc3, 2, 0x80];
    b.extend_from_slice(&u32::MAX.to_be_bytes());
    b.extend_from_slice(&[0x00, b'a']);
    assert!(bad(&payload(&b)));
    // A hash listpack with a count of 65534 but two entries.
    let mut w = LpWriter::new();
    w.push(b"f");
    w.push(b"v");
    let mut lp = w.finish();
    lp[4] = 0xfe;
    lp[5] = 0xff;
    let mut b = vec![ty::HASH_LISTPACK];
    rdb::put_string(&mut b, &lp);
    assert!(bad(&payload(&b)));
    // A listpack whose total length is wrong.
    let mut w = LpWriter::new();
    w.push(b"f");
    w.push(b"v");
    let mut lp = w.finish();
    lp[0] += 3;
    let mut b = vec![ty::HASH_LISTPACK];
    rdb::put_string(&mut b, &lp);
    assert!(bad(&payload(&b)));
    // A ziplist list claiming 2^32 - 1 bytes.
    let mut zl = vec![0u8; 10];
    zl[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    zl[4..8].copy_from_slice(&10u32.to_le_bytes());
    zl.push(0xff);
    let mut b = vec![ty::LIST_ZIPLIST];
    rdb::put_string(&mut b, &zl);
    assert!(bad(&payload(&b)));
    // An intset whose count passes its bytes.
    let mut is = vec![2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
    is.extend_from_slice(&[1, 0]);
    let mut b = vec![ty::SET_INTSET];
    rdb::put_string(&mut b, &is);
    assert!(bad(&payload(&b)));
}

#[test]
fn values_past_the_limit_are_refused_before_they_are_built() {
    // An LZF string claiming 2 MiB from 24 KiB of input, against a 1 MiB limit: refused at its
    // claim, before anything is decompressed.
    let mut x = vec![ty::STRING, 0xc3, 0x80];
    x.extend_from_slice(&24576u32.to_be_bytes());
    x.push(0x80);
    x.extend_from_slice(&(2u32 << 20).to_be_bytes());
    x.extend_from_slice(&vec![0u8; 24576]);
    assert_eq!(
        rdb::decode_within(&payload(&x), 1 << 20).unwrap_err(),
        DecodeError::TooLarge
    );
    // A claim no input of that size can make is malformed, whatever the limit.
    let mut x = vec![ty::STRING, 0xc3, 2, 0x80];
    x.extend_from_slice(&(1u32 << 30).to_be_bytes());
    x.extend_from_slice(&[0x00, b'a']);
    assert!(matches!(
        rdb::decode_within(&payload(&x), u64::MAX),
        Err(DecodeError::Bad(_))
    ));
    // A list whose strings add up past the limit.
    let p = fixture("l_big");
    assert!(rdb::decode_within(&p, 1 << 20).is_ok());
    assert_eq!(
        rdb::decode_within(&p, 1000).unwrap_err(),
        DecodeError::TooLarge
    );
}

#[test]
fn duplicates_nan_and_empty_collections_are_refused() {
    let mut b = vec![ty::SET, 2];
    rdb::put_string(&mut b, b"a");
    rdb::put_string(&mut b, b"a");
    assert!(bad(&payload(&b)));
    let mut b = vec![ty::HASH, 2];
    for s in [b"f", b"1", b"f", b"2"] {
        rdb::put_string(&mut b, s);
    }
    assert!(bad(&payload(&b)));
    let mut b = vec![ty::ZSET_2, 1];
    rdb::put_string(&mut b, b"m");
    b.extend_from_slice(&f64::NAN.to_bits().to_le_bytes());
    assert!(bad(&payload(&b)));
    assert!(bad(&payload(&[ty::LIST, 0])));
    assert!(bad(&payload(&[ty::HASH, 0])));
    // Module values and Redis 7.2's listpack sets are not read.
    assert!(bad(&payload(&[7, 0])));
    assert!(bad(&payload(&[20, 0])));
}

#[test]
fn old_encodings_decode() {
    // A zipmap hash (RDB type 9) and a sorted set with text scores (type 3).
    let zm = [
        2, 1, b'a', 2, 0, b'x', b'y', 3, b'k', b'e', b'y', 1, 1, b'v', 0, 0xff,
    ];
    let mut x = vec![ty::HASH_ZIPMAP];
    rdb::put_string(&mut x, &zm);
    let h = obj(rdb::decode(&payload(&x)).unwrap());
    assert_eq!(hash_of(&*h), vec![(b("a"), b("xy")), (b("key"), b("v"))]);
    let mut x = vec![ty::ZSET, 3];
    rdb::put_string(&mut x, b"a");
    x.extend_from_slice(&[3, b'1', b'.', b'5']);
    rdb::put_string(&mut x, b"b");
    x.push(254);
    rdb::put_string(&mut x, b"c");
    x.push(255);
    let z = obj(rdb::decode(&payload(&x)).unwrap());
    assert_eq!(
        zset_of(&*z),
        vec![
            (b("c"), f64::NEG_INFINITY),
            (b("a"), 1.5),
            (b("b"), f64::INFINITY)
        ]
    );
    // An old linked list (type 1) and a plain quicklist node (type 18, container 1).
    let mut x = vec![ty::LIST, 2];
    rdb::put_string(&mut x, b"x");
    rdb::put_string(&mut x, b"7");
    assert_eq!(
        list_of(&*obj(rdb::decode(&payload(&x)).unwrap())),
        vec![b("x"), b("7")]
    );
    let mut x = vec![ty::LIST_QUICKLIST_2, 1, 1];
    rdb::put_string(&mut x, b"plain");
    assert_eq!(
        list_of(&*obj(rdb::decode(&payload(&x)).unwrap())),
        vec![b("plain")]
    );
}

#[test]
fn redis_6_stream_decodes() {
    // Redis's own test payload (unit/type/stream-cgroups, "Loading from legacy"), a stream of
    // RDB type 15 with two groups.
    let hex = concat!(
        "0F011000000000000000010000000000000000C3404A40571657000000230002010401010184646174610500",
        "0103010020010381610204200A0001400A0062600A0002400A0063600A4022018164200A4039200A0065600A",
        "0005400A0066200A00FF02060002026731050004000000000000000100000000000000003EF783437A010000",
        "01000000000000000200000000000000003EF783437A01000001000000000000000400000000000000003EF7",
        "83437A01000001000000000000000500000000000000003EF783437A0100000101036331313EF783437A0100",
        "0004000000000000000100000000000000000000000000000002000000000000000000000000000000040000",
        "000000000000000000000000000500000000000000000267320000000009003D52EF6867521DFA",
    );
    let p: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let o = obj(rdb::decode(&p).unwrap());
    let s = o.as_any().downcast_ref::<Stream>().unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s.entries_added, 2);
    assert!(s.max_deleted.is_zero());
    let g1 = &s.groups[&b"g1"[..]];
    assert_eq!(g1.entries_read, 1);
    assert_eq!(s.groups[&b"g2"[..]].entries_read, 0);
    assert_eq!(g1.pel.len(), 4);
}

#[test]
fn locus_values_round_trip() {
    let mut h = Hash::default();
    for i in 0..200 {
        h.set(
            format!("f{i}").as_bytes(),
            format!("{}", i * 7 - 100).as_bytes(),
        );
    }
    let mut l = List::new();
    for i in 0..5000 {
        l.push_back(format!("{}", i as i64 - 2500).as_bytes());
        l.push_back(&vec![b'q'; i % 70]);
    }
    let mut s = Set::default();
    for i in 0..700 {
        s.add(format!("{}", i * 1000).as_bytes());
    }
    let z = Zset::from_pairs(&[(b("a"), -0.5), (b("b"), 1e-300), (b("c"), 12345.0)]);
    let mut st = Stream::new();
    for i in 1..=250u64 {
        let f: Vec<(&[u8], &[u8])> = if i % 3 == 0 {
            vec![(b"other", b"x")]
        } else {
            vec![(b"a", b"1"), (b"b", b"two")]
        };
        st.append(Sid::new(i * 10, i), &f).unwrap();
    }
    st.delete(Sid::new(50, 5));
    st.create_group(b"g", Sid::new(100, 10), 10);
    st.groups
        .get_mut(&b"g"[..])
        .unwrap()
        .create_consumer(b"alice", 123);
    st.groups
        .get_mut(&b"g"[..])
        .unwrap()
        .assign(Sid::new(20, 2), b"alice", 456, Some(3));
    let objs: Vec<Box<dyn Object>> = vec![
        Box::new(h),
        Box::new(l),
        Box::new(s),
        Box::new(z),
        Box::new(st),
    ];
    for o in objs {
        let p = rdb::encode(ValueRef::Obj(&*o)).unwrap();
        let back = obj(rdb::decode(&p).unwrap());
        assert_eq!(back.type_name(), o.type_name());
        assert_eq!(back.len(), o.len());
        assert_eq!(back.encoding(), o.encoding(), "{}", o.type_name());
        match o.type_name() {
            "list" => assert_eq!(list_of(&*back), list_of(&*o)),
            "hash" => assert_eq!(hash_of(&*back), hash_of(&*o)),
            "set" => assert_eq!(set_of(&*back), set_of(&*o)),
            "zset" => assert_eq!(zset_of(&*back), zset_of(&*o)),
            _ => {
                let (x, y) = (
                    o.as_any().downcast_ref::<Stream>().unwrap(),
                    back.as_any().downcast_ref::<Stream>().unwrap(),
                );
                assert_eq!(x.entries(), y.entries());
                assert_eq!(
                    (x.last_id, x.first_id, x.max_deleted, x.entries_added),
                    (y.last_id, y.first_id, y.max_deleted, y.entries_added)
                );
                let (gx, gy) = (&x.groups[&b"g"[..]], &y.groups[&b"g"[..]]);
                assert_eq!((gx.last_id, gx.entries_read), (gy.last_id, gy.entries_read));
                assert_eq!(gx.pel.len(), gy.pel.len());
                let n = &gy.pel[&Sid::new(20, 2)];
                assert_eq!(
                    (&n.consumer[..], n.delivery_time, n.delivery_count),
                    (&b"alice"[..], 456, 3)
                );
                assert_eq!(gy.consumers[&b"alice"[..]].seen_time, 123);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn strings_round_trip(v in proptest::collection::vec(prop_oneof![Just(b'7'), Just(b'-'), any::<u8>()], 0..200)) {
        let p = rdb::encode(ValueRef::Str(&v)).unwrap();
        prop_assert_eq!(string(rdb::decode(&p).unwrap()), v);
    }

    #[test]
    fn hashes_round_trip(pairs in proptest::collection::btree_map(
        proptest::collection::vec(any::<u8>(), 0..80), proptest::collection::vec(any::<u8>(), 0..80), 1..200)) {
        let mut h = Hash::default();
        for (f, v) in &pairs {
            h.set(f, v);
        }
        let p = rdb::encode(ValueRef::Obj(&h)).unwrap();
        let back = obj(rdb::decode(&p).unwrap());
        prop_assert_eq!(hash_of(&*back), hash_of(&h));
    }

    #[test]
    fn corrupted_payloads_never_panic(k in 0usize..12, at in any::<usize>(), byte in any::<u8>()) {
        // One byte changed anywhere in a real payload (with its CRC fixed up): decoded or
        // refused, never a panic.
        let fx = fixtures();
        let p = &fx[k % fx.len()].1;
        let mut body = p[..p.len() - 10].to_vec();
        let i = at % body.len();
        body[i] = byte;
        let _ = rdb::decode(&payload(&body));
    }
}
