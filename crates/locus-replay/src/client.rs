//! The wire clients: one TCP connection, one request in flight, RESP2 or memcached text.
//!
//! Only what a look-aside application sends: GET, SET, DEL (and AUTH / SELECT / INFO to set up
//! and observe). An error reply (`-OOM …`, `SERVER_ERROR …`) is returned as
//! [`Reply::Error`] and counted by the caller; a reply that breaks framing ends the run.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use crate::error::{ReplayError, Result};

/// The wire protocol of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// RESP2.
    Resp,
    /// memcached's text protocol.
    Memcached,
}

/// The outcome of one request.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// GET found the key (its value's length).
    Hit(usize),
    /// GET did not find it.
    Miss,
    /// A write or command succeeded.
    Ok,
    /// The server answered an error (its line).
    Error(String),
}

/// Longest reply line or value accepted (guards against a runaway peer).
const MAX_REPLY: usize = 512 << 20;

/// One connection to the target.
pub struct Conn {
    proto: Proto,
    addr: String,
    rd: BufReader<OwnedReadHalf>,
    wr: OwnedWriteHalf,
    out: Vec<u8>,
    line: Vec<u8>,
}

impl Conn {
    /// Connects (within 5 s).
    ///
    /// # Errors
    /// [`ReplayError::Target`] when the address does not resolve, refuses or times out.
    pub async fn connect(addr: &str, proto: Proto) -> Result<Conn> {
        let err = |error| ReplayError::Target {
            target: addr.to_string(),
            error,
        };
        let s = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr))
            .await
            .map_err(|_| {
                err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "connect timed out",
                ))
            })?
            .map_err(err)?;
        s.set_nodelay(true).map_err(err)?;
        let (r, w) = s.into_split();
        Ok(Conn {
            proto,
            addr: addr.to_string(),
            rd: BufReader::with_capacity(64 * 1024, r),
            wr: w,
            out: Vec::with_capacity(4096),
            line: Vec::with_capacity(256),
        })
    }

    fn io(&self, error: std::io::Error) -> ReplayError {
        ReplayError::Target {
            target: self.addr.clone(),
            error,
        }
    }

    fn proto_err(&self, message: String) -> ReplayError {
        ReplayError::Protocol {
            target: self.addr.clone(),
            message,
        }
    }

    fn push_resp(&mut self, args: &[&[u8]]) {
        self.out.clear();
        self.out
            .extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            self.out
                .extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            self.out.extend_from_slice(a);
            self.out.extend_from_slice(b"\r\n");
        }
    }

    async fn flush(&mut self) -> Result<()> {
        let r = self.wr.write_all(&self.out).await;
        r.map_err(|e| self.io(e))
    }

    /// Reads one line (without `\r\n`) into `self.line`.
    async fn read_line(&mut self) -> Result<()> {
        self.line.clear();
        let n = self.rd.read_until(b'\n', &mut self.line).await;
        let n = n.map_err(|e| self.io(e))?;
        if n == 0 {
            return Err(self.io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed by the server",
            )));
        }
        if !self.line.ends_with(b"\r\n") {
            return Err(self.proto_err("reply line without CRLF".into()));
        }
        self.line.truncate(self.line.len() - 2);
        Ok(())
    }

    async fn skip(&mut self, n: usize) -> Result<()> {
        let mut left = n as u64;
        let mut sink = tokio::io::sink();
        let copied = tokio::io::copy(&mut (&mut self.rd).take(left), &mut sink).await;
        left -= copied.map_err(|e| self.io(e))?;
        if left > 0 {
            return Err(self.io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed inside a value",
            )));
        }
        Ok(())
    }

    fn line_text(&self) -> String {
        String::from_utf8_lossy(&self.line).into_owned()
    }

    /// Reads one RESP2 reply; a bulk string's body is read and dropped (its length returned).
    async fn resp_reply(&mut self) -> Result<Reply> {
        self.read_line().await?;
        let Some((&kind, rest)) = self.line.split_first() else {
            return Err(self.proto_err("empty reply line".into()));
        };
        match kind {
            b'+' | b':' => Ok(Reply::Ok),
            b'-' => Ok(Reply::Error(String::from_utf8_lossy(rest).into_owned())),
            b'$' => {
                let n: i64 = std::str::from_utf8(rest)
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| {
                        self.proto_err(format!("bad bulk length {:?}", self.line_text()))
                    })?;
                if n < 0 {
                    return Ok(Reply::Miss);
                }
                let n = n as usize;
                if n > MAX_REPLY {
                    return Err(self.proto_err(format!("bulk of {n} bytes")));
                }
                self.skip(n + 2).await?;
                Ok(Reply::Hit(n))
            }
            _ => Err(self.proto_err(format!("unexpected reply {:?}", self.line_text()))),
        }
    }

    /// Reads the body of a RESP bulk reply (INFO) as text.
    async fn resp_text(&mut self) -> Result<String> {
        self.read_line().await?;
        match self.line.split_first() {
            Some((b'$', rest)) => {
                let n: usize = std::str::from_utf8(rest)
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .filter(|&n| n <= MAX_REPLY)
                    .ok_or_else(|| self.proto_err("bad INFO reply".into()))?;
                let mut buf = vec![0; n + 2];
                let r = self.rd.read_exact(&mut buf).await;
                r.map_err(|e| self.io(e))?;
                buf.truncate(n);
                Ok(String::from_utf8_lossy(&buf).into_owned())
            }
            Some((b'-', rest)) => Err(self.proto_err(String::from_utf8_lossy(rest).into_owned())),
            _ => Err(self.proto_err(format!("unexpected reply {:?}", self.line_text()))),
        }
    }

    /// Sends a command and expects success (setup: AUTH, SELECT).
    ///
    /// # Errors
    /// The server's error reply as [`ReplayError::Protocol`], or a socket error.
    pub async fn command(&mut self, args: &[&[u8]]) -> Result<()> {
        self.push_resp(args);
        self.flush().await?;
        match self.resp_reply().await? {
            Reply::Error(e) => {
                Err(self.proto_err(format!("{} refused: {e}", String::from_utf8_lossy(args[0]))))
            }
            _ => Ok(()),
        }
    }

    /// GET.
    ///
    /// # Errors
    /// A socket or framing error.
    pub async fn get(&mut self, key: &[u8]) -> Result<Reply> {
        match self.proto {
            Proto::Resp => {
                self.push_resp(&[b"GET", key]);
                self.flush().await?;
                self.resp_reply().await
            }
            Proto::Memcached => {
                self.out.clear();
                self.out.extend_from_slice(b"get ");
                self.out.extend_from_slice(key);
                self.out.extend_from_slice(b"\r\n");
                self.flush().await?;
                self.read_line().await?;
                if self.line == b"END" {
                    return Ok(Reply::Miss);
                }
                if let Some(e) = error_line(&self.line) {
                    return Ok(Reply::Error(e));
                }
                // VALUE <key> <flags> <bytes> [<cas>]
                let text = self.line_text();
                let mut w = text.split(' ');
                let n = match (w.next(), w.nth(2)) {
                    (Some("VALUE"), Some(n)) => n.parse::<usize>().ok(),
                    _ => None,
                }
                .filter(|&n| n <= MAX_REPLY)
                .ok_or_else(|| self.proto_err(format!("unexpected reply {text:?}")))?;
                self.skip(n + 2).await?;
                self.read_line().await?;
                if self.line != b"END" {
                    return Err(self.proto_err(format!("expected END, got {:?}", self.line_text())));
                }
                Ok(Reply::Hit(n))
            }
        }
    }

    /// SET (no expiry).
    ///
    /// # Errors
    /// A socket or framing error.
    pub async fn set(&mut self, key: &[u8], value: &[u8]) -> Result<Reply> {
        match self.proto {
            Proto::Resp => {
                self.push_resp(&[b"SET", key, value]);
                self.flush().await?;
                self.resp_reply().await
            }
            Proto::Memcached => {
                self.out.clear();
                self.out.extend_from_slice(b"set ");
                self.out.extend_from_slice(key);
                self.out
                    .extend_from_slice(format!(" 0 0 {}\r\n", value.len()).as_bytes());
                self.out.extend_from_slice(value);
                self.out.extend_from_slice(b"\r\n");
                self.flush().await?;
                self.read_line().await?;
                self.mc_status()
            }
        }
    }

    /// DEL.
    ///
    /// # Errors
    /// A socket or framing error.
    pub async fn del(&mut self, key: &[u8]) -> Result<Reply> {
        match self.proto {
            Proto::Resp => {
                self.push_resp(&[b"DEL", key]);
                self.flush().await?;
                self.resp_reply().await
            }
            Proto::Memcached => {
                self.out.clear();
                self.out.extend_from_slice(b"delete ");
                self.out.extend_from_slice(key);
                self.out.extend_from_slice(b"\r\n");
                self.flush().await?;
                self.read_line().await?;
                self.mc_status()
            }
        }
    }

    fn mc_status(&self) -> Result<Reply> {
        match self.line.as_slice() {
            b"STORED" | b"DELETED" | b"NOT_FOUND" => Ok(Reply::Ok),
            l => match error_line(l) {
                Some(e) => Ok(Reply::Error(e)),
                None => Err(self.proto_err(format!("unexpected reply {:?}", self.line_text()))),
            },
        }
    }

    /// The server's statistics as `name → value` text: `INFO` sections for RESP, `stats`
    /// for memcached.
    ///
    /// # Errors
    /// A socket or framing error, or an error reply.
    pub async fn info(&mut self, section: &str) -> Result<Vec<(String, String)>> {
        match self.proto {
            Proto::Resp => {
                self.push_resp(&[b"INFO", section.as_bytes()]);
                self.flush().await?;
                let text = self.resp_text().await?;
                Ok(text
                    .lines()
                    .filter(|l| !l.starts_with('#'))
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.to_string(), v.trim().to_string()))
                    .collect())
            }
            Proto::Memcached => {
                self.out.clear();
                self.out.extend_from_slice(b"stats\r\n");
                self.flush().await?;
                let mut out = Vec::new();
                loop {
                    self.read_line().await?;
                    if self.line == b"END" {
                        return Ok(out);
                    }
                    let text = self.line_text();
                    match text.strip_prefix("STAT ").and_then(|t| t.split_once(' ')) {
                        Some((k, v)) => out.push((k.to_string(), v.to_string())),
                        None => {
                            return Err(self.proto_err(format!("unexpected stats line {text:?}")));
                        }
                    }
                }
            }
        }
    }
}

fn error_line(l: &[u8]) -> Option<String> {
    (l.starts_with(b"ERROR") || l.starts_with(b"SERVER_ERROR") || l.starts_with(b"CLIENT_ERROR"))
        .then(|| String::from_utf8_lossy(l).into_owned())
}
