//! Layouts without a sample among the shared traces (MSR, generic CSV options, little-endian and
//! 64-bit key streams, vscsi v2), decoded field by field.

use std::io::Cursor;

use locus_trace::{
    CsvOptions, Format, KeyStream, Op, ReadOptions, Request, TimeUnit, open_stream, requests,
};

fn read(bytes: &[u8], opts: &ReadOptions) -> Vec<Request> {
    let mut r = open_stream("t", Box::new(Cursor::new(bytes.to_vec())), opts).unwrap();
    requests(&mut *r).map(Result::unwrap).collect()
}

#[test]
fn msr_cambridge() {
    let data = b"128166372003061629,hm,1,Read,383496192,32768,1233\n\
                 128166372016382155,hm,1,Write,383496192,4096,41711\n\
                 128166372026382245,prn,1,Read,383496192,4096,10\n";
    // The format is detected from the first line.
    let o = ReadOptions {
        volume_as_tenant: true,
        ..ReadOptions::default()
    };
    let r = read(data, &o);
    assert_eq!(r.len(), 3);
    assert_eq!(r[0].time_us, 12_816_637_200_306_162);
    assert_eq!(
        (r[0].value_size, r[0].op, r[0].penalty_us),
        (32768, Op::Get, Some(123))
    );
    assert_eq!((r[1].op, r[1].key), (Op::Set, r[0].key));
    assert_ne!(
        r[2].key, r[0].key,
        "same offset on another host is another block"
    );
    assert_eq!((r[0].tenant, r[1].tenant, r[2].tenant), (0, 0, 1));
}

#[test]
fn generic_csv_options() {
    let o: CsvOptions =
        "obj-id-col=2,obj-size-col=3,time-col=1,op-col=4,tenant-col=5,penalty-col=6,key-size-col=7,\
         delimiter=tab,has-header=true,obj-id-is-num=false,time-unit=ms"
            .parse()
            .unwrap();
    assert_eq!(
        (o.delimiter, o.time_unit, o.numeric_ids),
        (b'\t', TimeUnit::Millis, false)
    );
    let mut opts = ReadOptions::with_format(Format::Csv);
    opts.csv = o;
    let data = b"t\tk\ts\top\tten\tpen\tks\n1500.5\tuser:1\t100\tSET\t3\t250\t6\n1501\tuser:2\t7\tdel\t4\t\t6\n";
    let r = read(data, &opts);
    assert_eq!(r[0].time_us, 1_500_500);
    assert_eq!(
        (
            r[0].value_size,
            r[0].op,
            r[0].tenant,
            r[0].penalty_us,
            r[0].key_size
        ),
        (100, Op::Set, 3, Some(250), 6)
    );
    assert_eq!((r[1].op, r[1].penalty_us), (Op::Delete, None));
    assert_eq!(r[0].key, locus_common::hash_key(b"user:1"));
    // libCacheSim's "delimiter=," spelling.
    let o: CsvOptions = "obj-id-col=1,delimiter=,,has-header=false".parse().unwrap();
    assert_eq!((o.delimiter, o.has_header), (b',', false));
    assert!("obj-id-col=0".parse::<CsvOptions>().is_err());
    assert!("nonsense=1".parse::<CsvOptions>().is_err());
    // Without a size column, the default size applies.
    let mut opts = ReadOptions::with_format(Format::Csv);
    opts.csv = "obj-id-col=1".parse().unwrap();
    opts.default_size = 4096;
    assert_eq!(read(b"7\n8\n", &opts)[1].value_size, 4096);
}

#[test]
fn key_streams_in_both_byte_orders() {
    let cases: [(KeyStream, Vec<u8>, u64); 6] = [
        (
            KeyStream::I32Be,
            (-2i32).to_be_bytes().to_vec(),
            (-2i64) as u64,
        ),
        (KeyStream::I32Le, 5i32.to_le_bytes().to_vec(), 5),
        (
            KeyStream::U32Be,
            u32::MAX.to_be_bytes().to_vec(),
            u32::MAX as u64,
        ),
        (KeyStream::U32Le, 9u32.to_le_bytes().to_vec(), 9),
        (KeyStream::I64Be, 1i64.to_be_bytes().to_vec(), 1),
        (KeyStream::U64Le, u64::MAX.to_le_bytes().to_vec(), u64::MAX),
    ];
    for (ks, bytes, key) in cases {
        let r = read(&bytes, &ReadOptions::with_format(Format::KeyStream(ks)));
        assert_eq!((r.len(), r[0].key, r[0].value_size), (1, key, 1), "{ks:?}");
    }
}

#[test]
fn vscsi_version_2() {
    let mut data = Vec::new();
    for i in 0..3u64 {
        data.extend_from_slice(&0x2au16.to_le_bytes()); // cmd: write
        data.extend_from_slice(&0x0200u16.to_le_bytes()); // ver 2
        data.extend_from_slice(&(i as u32).to_le_bytes()); // sn
        data.extend_from_slice(&4096u32.to_le_bytes()); // len
        data.extend_from_slice(&1u32.to_le_bytes()); // nSG
        data.extend_from_slice(&(100 + i).to_le_bytes()); // lbn
        data.extend_from_slice(&(1_000 * i).to_le_bytes()); // ts (µs)
        data.extend_from_slice(&7u64.to_le_bytes()); // rt
    }
    let r = read(&data, &ReadOptions::with_format(Format::Vscsi));
    assert_eq!(r.len(), 3);
    assert_eq!(
        (r[2].key, r[2].value_size, r[2].time_us, r[2].op),
        (102, 4096, 2000, Op::Set)
    );
}
