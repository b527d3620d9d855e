//! In-process server harness: start on port 0 with a virtual clock, talk raw bytes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locus_common::VirtualClock;
use locus_server::{Server, ServerConfig, ServerHandle};

/// Virtual clock start: 2030-01-01 in unix ms, so EXPIREAT values look realistic.
pub const T0_MS: u64 = 1_893_456_000_000;

/// A running in-process server and its clock.
pub struct TestServer {
    pub handle: ServerHandle,
    pub clock: VirtualClock,
}

/// Parses a TOML config and forces every port to 0 (ephemeral) unless given.
pub fn config(toml: &str) -> ServerConfig {
    let mut c = ServerConfig::from_toml(toml, "test").expect("test config parses");
    c.server.port = 0;
    c.server.threads = 1;
    c
}

pub fn start(cfg: ServerConfig) -> TestServer {
    let clock = VirtualClock::new(T0_MS);
    let server = Server::bind(cfg, Arc::new(clock.clone()), None).expect("server binds");
    let handle = server.spawn();
    // Poll until the main listener answers.
    let addr = handle.addrs()[0].addr;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut s) = TcpStream::connect(addr) {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
            let mut buf = [0u8; 64];
            if let Ok(n) = s.read(&mut buf)
                && n > 0
            {
                break;
            }
        }
        assert!(Instant::now() < deadline, "server did not come up");
        std::thread::sleep(Duration::from_millis(5));
    }
    TestServer { handle, clock }
}

pub struct Client {
    pub s: TcpStream,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.set_nodelay(true).unwrap();
        Client { s }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("write");
    }

    /// Reads exactly `n` bytes (or what arrived before the timeout / EOF).
    pub fn read_n(&mut self, n: usize) -> Vec<u8> {
        let mut got = Vec::with_capacity(n);
        let mut buf = vec![0u8; 64 * 1024];
        while got.len() < n {
            match self.s.read(&mut buf[..(n - got.len()).min(64 * 1024)]) {
                Ok(0) => break,
                Ok(k) => got.extend_from_slice(&buf[..k]),
                Err(_) => break,
            }
        }
        got
    }

    /// Sends `req` and asserts the reply is exactly `expected`.
    #[track_caller]
    pub fn check(&mut self, req: &[u8], expected: &[u8]) {
        self.send(req);
        let got = self.read_n(expected.len());
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected),
            "request {:?}",
            String::from_utf8_lossy(req)
        );
    }

    /// Sends a command given as words (multibulk) and returns exactly `expected.len()` bytes.
    #[track_caller]
    pub fn cmd(&mut self, words: &[&str], expected: &str) {
        self.check(&enc(words), expected.as_bytes());
    }

    /// True if the server closed the connection (EOF within the timeout).
    pub fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 256];
        loop {
            match self.s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(_) => return false,
            }
        }
    }
}

/// Encodes words as a RESP multibulk request.
pub fn enc(words: &[&str]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        v.extend_from_slice(format!("${}\r\n{}\r\n", w.len(), w).as_bytes());
    }
    v
}

/// Reads one complete RESP2/RESP3 reply and returns its raw bytes (panics on a malformed reply
/// or a closed connection: in these tests every command must get exactly one well-formed reply).
pub fn read_reply(c: &mut Client) -> Vec<u8> {
    let mut out = Vec::new();
    read_value(c, &mut out);
    out
}

fn read_line(c: &mut Client, out: &mut Vec<u8>) -> String {
    let start = out.len();
    while !out[start..].ends_with(b"\r\n") {
        let b = c.read_n(1);
        assert!(
            !b.is_empty(),
            "connection closed mid-reply: {:?}",
            String::from_utf8_lossy(out)
        );
        out.extend(b);
    }
    String::from_utf8_lossy(&out[start..out.len() - 2]).into_owned()
}

fn read_value(c: &mut Client, out: &mut Vec<u8>) {
    let line = read_line(c, out);
    let (tag, rest) = line.split_at(1);
    let n = || {
        rest.parse::<i64>()
            .unwrap_or_else(|_| panic!("bad length in {line:?}"))
    };
    match tag {
        "+" | "-" | ":" | "_" | "," | "#" | "(" => {}
        "$" | "=" | "!" => {
            if n() >= 0 {
                out.extend(c.read_n(n() as usize + 2));
            }
        }
        "*" | "~" | ">" => {
            for _ in 0..n().max(0) {
                read_value(c, out);
            }
        }
        "%" | "|" => {
            for _ in 0..2 * n().max(0) {
                read_value(c, out);
            }
        }
        _ => panic!("unknown reply type in {line:?}"),
    }
}
