//! A minimal HTTP/1.1 server for the metrics listener: GET and HEAD of a few fixed paths, one
//! request per connection (`Connection: close`), every read and write under a deadline.
//!
//! Bounds: a request head of at most [`MAX_HEAD`] bytes (else 431), read within
//! [`READ_TIMEOUT`] (else 408), a response written within [`WRITE_TIMEOUT`], at most
//! [`MAX_CONNECTIONS`] connections at once (more are closed at accept). A malformed request
//! gets 400, an unknown path 404, another method 405; nothing a client sends can panic the
//! handler (the parser indexes nothing it has not checked).
//!
//! Operators only: without `metrics.allow_remote`, a request whose `Host` is not loopback
//! (`localhost`, `127.0.0.1`, `[::1]`, with or without a port) gets 403, so a web page on
//! another origin cannot read the tenants' figures through DNS rebinding.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// Largest request head (request line and headers) read.
pub const MAX_HEAD: usize = 8 * 1024;
/// Time a client has to send its request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a client has to take the response.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 32;

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `HEAD`, ... as sent.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query (after `?`), "" if none.
    pub query: String,
    /// The `Host` header, if sent.
    pub host: Option<String>,
}

/// A response to write.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A `200 OK` with `body`.
    pub fn ok(content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status: 200,
            content_type,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// An error status with a one-line plain-text body.
    pub fn error(status: u16, text: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: format!("{status} {}: {text}\n", reason(status)).into_bytes(),
        }
    }

    /// Adds a header.
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

/// Why a request head could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum HeadError {
    /// The peer closed or the socket failed before a whole head arrived: nothing to answer.
    Closed,
    /// Longer than [`MAX_HEAD`].
    TooLarge,
}

/// The end of the head in `buf` (index after the blank line), if it is there.
fn head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Reads up to the end of the request head (the body, if any, is never read).
async fn read_head(sock: &mut TcpStream) -> Result<Vec<u8>, HeadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = sock.read(&mut chunk).await.map_err(|_| HeadError::Closed)?;
        if n == 0 {
            return Err(HeadError::Closed);
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = head_end(&buf[from..]) {
            let end = from + end;
            if end > MAX_HEAD {
                return Err(HeadError::TooLarge);
            }
            buf.truncate(end);
            return Ok(buf);
        }
        if buf.len() > MAX_HEAD {
            return Err(HeadError::TooLarge);
        }
    }
}

/// Parses a request head. `Err` is the error response to send (400 or 505).
pub fn parse_head(head: &[u8]) -> Result<Request, Response> {
    let bad = |why: &str| Response::error(400, why);
    let text = std::str::from_utf8(head).map_err(|_| bad("the request head is not UTF-8"))?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("the request line is not METHOD TARGET HTTP/1.x"));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(bad("the method is not a token"));
    }
    match version {
        "HTTP/1.1" | "HTTP/1.0" => {}
        v if v.starts_with("HTTP/") => {
            return Err(Response::error(505, "only HTTP/1.0 and HTTP/1.1"));
        }
        _ => return Err(bad("the request line is not METHOD TARGET HTTP/1.x")),
    }
    if !target.starts_with('/') || target.bytes().any(|b| b.is_ascii_control()) {
        return Err(bad("the target is not an absolute path"));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut host = None;
    for l in lines {
        if l.is_empty() {
            break;
        }
        let Some((name, value)) = l.split_once(':') else {
            return Err(bad("a header line has no colon"));
        };
        if name.is_empty() || name.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad("a header name is not a token"));
        }
        if name.eq_ignore_ascii_case("host") {
            if host.is_some() {
                return Err(bad("more than one Host header"));
            }
            host = Some(value.trim().to_string());
        }
    }
    Ok(Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        host,
    })
}

/// Whether a `Host` header names this machine's loopback: `localhost`, a loopback address,
/// each with or without a port.
pub fn host_is_loopback(host: &str) -> bool {
    let h = host.trim();
    let name = if let Some(rest) = h.strip_prefix('[') {
        // [v6]:port
        match rest.split_once(']') {
            Some((ip, tail)) if tail.is_empty() || tail.starts_with(':') => ip,
            _ => return false,
        }
    } else {
        match h.rsplit_once(':') {
            Some((n, port)) if port.bytes().all(|b| b.is_ascii_digit()) => n,
            Some(_) => return false,
            None => h,
        }
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

/// The bytes of a response (`head_only`: HEAD, the headers of the GET without its body).
pub fn encode_response(r: &Response, head_only: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len()
    );
    for (k, v) in &r.headers {
        out.push_str(k);
        out.push_str(": ");
        out.push_str(v);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    if !head_only {
        bytes.extend_from_slice(&r.body);
    }
    bytes
}

/// Serves one connection: one request, one response, close.
async fn connection<F>(mut sock: TcpStream, allow_remote: bool, route: Arc<F>)
where
    F: Fn(&Request) -> Response + Send + Sync + 'static,
{
    let (resp, head_only) = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut sock)).await {
        Err(_) => (
            Response::error(408, "the request head took too long"),
            false,
        ),
        Ok(Err(HeadError::Closed)) => return,
        Ok(Err(HeadError::TooLarge)) => (
            Response::error(431, &format!("the request head exceeds {MAX_HEAD} bytes")),
            false,
        ),
        Ok(Ok(head)) => match parse_head(&head) {
            Err(r) => (r, false),
            Ok(req) => {
                let head_only = req.method == "HEAD";
                let r = if req.method != "GET" && req.method != "HEAD" {
                    Response::error(405, "only GET and HEAD").with("Allow", "GET, HEAD")
                } else if !allow_remote && !req.host.as_deref().is_none_or(host_is_loopback) {
                    Response::error(
                        403,
                        "this listener answers loopback Host names only (metrics.allow_remote is off)",
                    )
                } else {
                    // The route reads the engine under its lock: off the async workers.
                    let route = route.clone();
                    match tokio::task::spawn_blocking(move || route(&req)).await {
                        Ok(r) => r,
                        Err(_) => Response::error(503, "the handler failed"),
                    }
                };
                (r, head_only)
            }
        },
    };
    let bytes = encode_response(&resp, head_only);
    crate::server::assert_unlocked("a write to a metrics client's socket");
    let _ = tokio::time::timeout(WRITE_TIMEOUT, async {
        sock.write_all(&bytes).await?;
        sock.shutdown().await
    })
    .await;
}

/// Accepts connections until `stop` resolves; each is served by `route` (which must not block
/// for long: it runs on the blocking pool).
pub async fn serve<F>(
    listener: TcpListener,
    allow_remote: bool,
    route: F,
    stop: impl std::future::Future<Output = ()>,
) where
    F: Fn(&Request) -> Response + Send + Sync + 'static,
{
    let route = Arc::new(route);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = &mut stop => return,
        };
        let Ok((sock, _)) = accepted else {
            // EMFILE and the like: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            drop(sock);
            continue;
        };
        let route = route.clone();
        tokio::spawn(async move {
            connection(sock, allow_remote, route).await;
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_get_parses() {
        let r = parse_head(
            b"GET /api/curves?tenant=a HTTP/1.1\r\nHost: 127.0.0.1:9121\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/api/curves");
        assert_eq!(r.query, "tenant=a");
        assert_eq!(r.host.as_deref(), Some("127.0.0.1:9121"));
        // Bare LF line ends are accepted, as most servers do.
        assert!(parse_head(b"GET / HTTP/1.0\n\n").is_ok());
    }

    #[test]
    fn malformed_heads_get_400_or_505() {
        for (head, status) in [
            (&b"GET /\r\n\r\n"[..], 400),
            (b"GET  / HTTP/1.1\r\n\r\n", 400),
            (b"get / HTTP/1.1\r\n\r\n", 400),
            (b"GET / HTTP/1.1 x\r\n\r\n", 400),
            (b"GET metrics HTTP/1.1\r\n\r\n", 400),
            (b"GET / FTP/1.0\r\n\r\n", 400),
            (b"GET / HTTP/2.0\r\n\r\n", 505),
            (b"GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            (b"GET /\x01 HTTP/1.1\r\n\r\n", 400),
            (b"GET /\xff HTTP/1.1\r\n\r\n", 400),
            (b"\r\n\r\n", 400),
        ] {
            let e = parse_head(head).unwrap_err();
            assert_eq!(e.status, status, "{:?}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "LOCALHOST:9121",
            "127.0.0.1",
            "127.0.0.1:9121",
            "[::1]",
            "[::1]:9121",
        ] {
            assert!(host_is_loopback(h), "{h}");
        }
        for h in [
            "evil.example",
            "evil.example:9121",
            "10.0.0.1:9121",
            "[::1]x",
            "127.0.0.1:x",
            "",
            "localhost.evil.example",
        ] {
            assert!(!host_is_loopback(h), "{h}");
        }
    }

    #[test]
    fn responses_carry_length_and_close() {
        let r = Response::ok("text/plain", "hi").with("X-A", "b");
        let full = String::from_utf8(encode_response(&r, false)).unwrap();
        assert!(full.starts_with("HTTP/1.1 200 OK\r\n"), "{full}");
        assert!(full.contains("Content-Length: 2\r\n"), "{full}");
        assert!(full.contains("Connection: close\r\n"), "{full}");
        assert!(full.contains("X-A: b\r\n"), "{full}");
        assert!(full.ends_with("\r\n\r\nhi"), "{full}");
        let head = String::from_utf8(encode_response(&r, true)).unwrap();
        assert!(head.ends_with("\r\n\r\n"), "{head}");
        assert!(head.contains("Content-Length: 2\r\n"), "{head}");
    }

    #[test]
    fn the_head_end_is_found_across_reads() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nbody"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
    }
}
