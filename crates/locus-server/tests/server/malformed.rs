//! Malformed input: Redis's protocol error replies, no panic, and other clients keep working.

use crate::common::{Client, config, enc, start};

/// (input, exact error reply); the connection is then closed because framing is lost.
const FATAL: &[(&[u8], &[u8])] = &[
    (
        b"*99999999999\r\n",
        b"-ERR Protocol error: invalid multibulk length\r\n",
    ),
    (
        b"*3000000000\r\n",
        b"-ERR Protocol error: invalid multibulk length\r\n",
    ),
    (
        b"*abc\r\n",
        b"-ERR Protocol error: invalid multibulk length\r\n",
    ),
    (
        b"*1\r\n$9999999999\r\n",
        b"-ERR Protocol error: invalid bulk length\r\n",
    ),
    (
        b"*1\r\n$-3\r\n",
        b"-ERR Protocol error: invalid bulk length\r\n",
    ),
    (
        b"*1\r\n$abc\r\n",
        b"-ERR Protocol error: invalid bulk length\r\n",
    ),
    (
        b"*1\r\nx\r\n",
        b"-ERR Protocol error: expected '$', got 'x'\r\n",
    ),
    (
        b"*2\r\n$3\r\nGET\r\n:1\r\n",
        b"-ERR Protocol error: expected '$', got ':'\r\n",
    ),
    (
        b"*1\r\n$3\r\nGETXX\r\n",
        b"-ERR Protocol error: expected CRLF after bulk string\r\n",
    ),
];

#[test]
fn protocol_errors_reply_then_close() {
    let srv = start(config(""));
    let addr = srv.handle.addrs()[0].addr;
    let mut bystander = Client::connect(addr);
    bystander.cmd(&["SET", "k", "v"], "+OK\r\n");
    for (input, reply) in FATAL {
        let mut c = Client::connect(addr);
        c.check(input, reply);
        assert!(
            c.is_closed(),
            "connection must close after {:?}",
            String::from_utf8_lossy(input)
        );
        bystander.cmd(&["GET", "k"], "$1\r\nv\r\n");
    }
}

#[test]
fn commands_before_the_error_are_answered() {
    let srv = start(config(""));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    let mut req = enc(&["PING"]);
    req.extend(b"*1\r\n$-7\r\n");
    c.check(
        &req,
        b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n",
    );
    assert!(c.is_closed());
}

#[test]
fn too_big_inline_and_headers() {
    let srv = start(config(""));
    let addr = srv.handle.addrs()[0].addr;
    let mut c = Client::connect(addr);
    c.check(
        &vec![b'a'; 70_000],
        b"-ERR Protocol error: too big inline request\r\n",
    );
    assert!(c.is_closed());
    let mut c = Client::connect(addr);
    let mut req = b"*1\r\n$".to_vec();
    req.extend(vec![b'1'; 70_000]);
    c.check(&req, b"-ERR Protocol error: too big bulk count string\r\n");
    assert!(c.is_closed());
}

#[test]
fn truncated_frames_wait_for_more() {
    let srv = start(config(""));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    let full = enc(&["SET", "key", "value"]);
    for b in &full[..full.len() - 1] {
        c.send(&[*b]);
    }
    c.check(&full[full.len() - 1..], b"+OK\r\n");
    // A declared-but-not-sent bulk does not block other clients.
    c.send(b"*2\r\n$3\r\nGET\r\n$100\r\nabc");
    let mut other = Client::connect(srv.handle.addrs()[0].addr);
    other.cmd(&["GET", "key"], "$5\r\nvalue\r\n");
}

#[test]
fn binary_garbage_never_kills_the_server() {
    let srv = start(config(""));
    let addr = srv.handle.addrs()[0].addr;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..60 {
        let mut c = Client::connect(addr);
        c.s.set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .unwrap();
        let len = (next() % 2000) as usize + 1;
        let mut buf: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if round % 3 == 0 {
            buf[0] = b'*';
        }
        if round % 3 == 1 {
            buf.splice(0..0, b"*2\r\n$3\r\nGET\r\n$".iter().copied());
        }
        let _ = std::io::Write::write_all(&mut c.s, &buf);
        let _ = c.read_n(1 << 16);
    }
    let mut ok = Client::connect(addr);
    ok.cmd(&["PING"], "+PONG\r\n");
    ok.cmd(&["SET", "after", "garbage"], "+OK\r\n");
    ok.cmd(&["GET", "after"], "$7\r\ngarbage\r\n");
}
