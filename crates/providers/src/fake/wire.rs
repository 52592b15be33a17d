//! The HTTP/1.1 plumbing the loopback fakes share (feature `testing`):
//! listening on a free loopback port, reading one request, writing chunked
//! or sized answers, noticing a client that went away, and waiting for a
//! recorded condition. The fakes themselves ([`super::openai`],
//! `deepgram::aura_fake`, `inworld::fake`, `deepgram::fake`) keep what is
//! theirs: routes, checks, behaviours and what they record.
//!
//! # HTTP/1.1 in one page (what the fakes need of it)
//!
//! A request is a *head* and a *body*. The head is text lines ending in
//! CRLF (`\r\n`): the request line (`POST /v1/speak?model=x HTTP/1.1`:
//! method, target, version), then one header per line (`Name: value`,
//! names case-insensitive), then an empty line — so the head ends at the
//! first `\r\n\r\n`. What follows is the body; a client sending JSON says
//! how long it is with `Content-Length: <bytes>`. [`read_request`] reads
//! exactly that: the head (at most [`MAX_HEAD_BYTES`]), then
//! `Content-Length` bytes (at most the fake's own limit).
//!
//! It is deliberately lenient and small: the version is not checked, a head
//! that is not UTF-8 is read lossily, a `Content-Length` that is not a
//! number counts as 0, and bytes after the body are dropped (the fakes
//! answer one request at a time and watch the socket for the client
//! leaving while they answer, see [`client_gone`], so nothing is
//! pipelined). Chunked request bodies, `Expect: 100-continue` and
//! pipelining are the business of the scripted JSON server's own stricter
//! reader in [`super::http`], whose clients need them.
//!
//! An answer is a status line (`HTTP/1.1 200 OK`, the phrase from
//! [`reason`]), headers, an empty line and a body framed one of two ways:
//!
//! * sized: `Content-Length: n` and then `n` bytes ([`sized_response`]);
//! * chunked (`Transfer-Encoding: chunked`, for audio or events sent as
//!   they are made): each piece as its length in hex, CRLF, the bytes,
//!   CRLF ([`http_chunk`]); an empty piece would read as the end, so the
//!   body ends with the zero-length chunk [`LAST_CHUNK`] (`0\r\n\r\n`).
//!
//! A fake that wants to break a response on purpose (fuzz tests) simply
//! writes the wrong bytes or closes the socket: nothing here checks what
//! it writes.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// Largest request head (request line and headers) a fake reads; a longer
/// head ends the connection.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// How often [`wait_until`] looks at its condition.
const POLL: Duration = Duration::from_millis(2);

/// The end of a chunked body: the zero-length chunk and no trailers.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

// ---------------------------------------------------------------------------
// Listening

/// Listen on a free port of 127.0.0.1 and hand every accepted connection
/// to `serve`, each on its own task. Returns the address and the accept
/// loop's task.
///
/// The connection tasks live inside the accept loop (a `JoinSet`), so
/// aborting the returned handle — what the fakes' `stop` and `Drop` do —
/// closes the port *and* cuts every open connection, like a server that
/// went away. Must run inside a tokio runtime.
///
/// `serve` is called once per connection, in accept order, so it can
/// number connections (see `FakeOpenAi::connection_count`):
///
/// ```ignore
/// let (addr, server) = wire::listen(move |stream| serve(stream, shared.clone())).await?;
/// ```
pub async fn listen<F, Fut>(serve: F) -> io::Result<(SocketAddr, JoinHandle<()>)>
where
    F: FnMut(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    Ok((addr, tokio::spawn(accept_loop(listener, serve))))
}

async fn accept_loop<F, Fut>(listener: TcpListener, mut serve: F)
where
    F: FnMut(TcpStream) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    conns.spawn(serve(stream));
                }
                Err(e) => {
                    // Out of file descriptors and the like: pause, retry.
                    tracing::debug!(error = %e, "loopback fake: accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            // Reap finished connections so the set does not grow.
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

// ---------------------------------------------------------------------------
// Reading a request

/// One request as read off the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireRequest {
    /// `POST`, `GET`, … as sent.
    pub method: String,
    /// The request target as sent: path and query (`/v1/speak?model=x`).
    pub target: String,
    /// Header names lower-cased, values trimmed, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body: exactly `Content-Length` bytes (none without the header).
    pub body: Vec<u8>,
}

impl WireRequest {
    /// The first value of header `name` (give it lower-case: the names are).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The target without its query: `/v1/speak` of `/v1/speak?model=x`.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// Where `needle` first starts in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Read one request: the head up to the empty line (at most
/// [`MAX_HEAD_BYTES`]), then a `Content-Length` body of at most
/// `max_body` bytes. `None` when the connection ends first, on an I/O
/// error, a head without a method and target, a header line without a
/// `:`, or a body over the limit — the fakes then close the connection.
///
/// The caller bounds the wait (`tokio::time::timeout`): a client that
/// opens a connection and sends nothing would otherwise hold it forever.
pub async fn read_request<R: AsyncRead + Unpin>(
    rd: &mut R,
    max_body: usize,
) -> Option<WireRequest> {
    let mut buf = Vec::with_capacity(4096);
    let mut tmp = [0u8; 8192];
    // The head: read until the blank line that ends it.
    let head_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return None;
        }
        let n = rd.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(tmp.get(..n)?);
    };
    let head = String::from_utf8_lossy(buf.get(..head_end)?).into_owned();
    let mut lines = head.split("\r\n");
    // `METHOD TARGET VERSION`; the version is not looked at.
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let target = request_line.next()?.to_string();
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    if length > max_body {
        return None;
    }
    // The body: what came with the head, then more reads until it is whole.
    let mut body = buf.get(head_end + 4..)?.to_vec();
    while body.len() < length {
        let n = rd.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(tmp.get(..n)?);
    }
    body.truncate(length);
    Some(WireRequest {
        method,
        target,
        headers,
        body,
    })
}

/// Resolves when the peer closes its side or the connection fails.
///
/// Raced against writing an answer (`tokio::select!`), this is how a fake
/// sees a client hang up mid-response — a barge-in dropping its stream —
/// even while the fake itself is only waiting (a paced or hung answer).
/// Anything the client sends meanwhile is read and dropped.
pub async fn client_gone<R: AsyncRead + Unpin>(rd: &mut R) {
    let mut tmp = [0u8; 1024];
    loop {
        match rd.read(&mut tmp).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

// ---------------------------------------------------------------------------
// Writing an answer

/// Write all of `bytes` and flush: `false` if the client is gone.
///
/// Flushing each write puts every chunk on the wire at once, so a client
/// sees audio or events exactly as paced by the fake.
pub async fn write<W: AsyncWrite + Unpin>(wr: &mut W, bytes: &[u8]) -> bool {
    wr.write_all(bytes).await.is_ok() && wr.flush().await.is_ok()
}

/// `bytes` framed as one chunk of a chunked body: the length in hex, CRLF,
/// the bytes, CRLF. Never pass an empty piece (that is [`LAST_CHUNK`]).
pub fn http_chunk(bytes: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
    out
}

/// The reason phrase of a status line: the standard one (`404` → `Not
/// Found`), else `Status`. Clients ignore it; it makes raw dumps readable.
pub fn reason(code: u16) -> &'static str {
    reqwest::StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Status")
}

/// A whole response with a sized body: status line, `Content-Type`,
/// `Content-Length`, `Connection: keep-alive` or `close`, then the body.
pub fn sized_response(code: u16, content_type: &str, body: &[u8], keep_alive: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
Connection: {}\r\n\r\n",
        reason(code),
        body.len(),
        if keep_alive { "keep-alive" } else { "close" },
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

// ---------------------------------------------------------------------------
// Waiting in tests

/// Check `cond` every 2 ms until it holds or `timeout` has passed;
/// whether it held. The fakes' `wait_until`, `wait_for_requests` and
/// `wait_for_disconnect` are this over their recorded requests:
///
/// ```ignore
/// wire::wait_until(timeout, || pred(&lock(&self.shared.requests))).await
/// ```
///
/// `cond` runs between sleeps, never across one, so a lock it takes is
/// not held while waiting. On tokio's clock: with paused time the wait
/// advances the clock instead of sleeping.
pub async fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A draw in [0, 1) for request `n` under `seed` (splitmix64): the same
/// seed picks the same requests, so a faulty load run can be repeated.
pub fn unit_draw(seed: u64, n: u64) -> f64 {
    let mut z = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read `bytes` (written in `pieces`-sized writes) as one request.
    async fn read(bytes: &[u8], pieces: usize, max_body: usize) -> Option<WireRequest> {
        let (mut client, mut server) = tokio::io::duplex(64 * 1024);
        let bytes = bytes.to_vec();
        let writer = tokio::spawn(async move {
            for piece in bytes.chunks(pieces.max(1)) {
                if client.write_all(piece).await.is_err() {
                    return;
                }
            }
            // Dropping `client` is the end of the connection.
        });
        let req = read_request(&mut server, max_body).await;
        let _ = writer.await;
        req
    }

    #[tokio::test]
    async fn a_request_is_read_whole_however_it_arrives() {
        let raw =
            b"POST /v1/speak?model=aura HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
CONTENT-LENGTH: 13\r\n\r\n{\"text\":\"Hi\"}";
        for pieces in [1, 3, 7, raw.len()] {
            let req = read(raw, pieces, 1024).await.unwrap();
            assert_eq!(req.method, "POST");
            assert_eq!(req.target, "/v1/speak?model=aura");
            assert_eq!(req.path(), "/v1/speak");
            assert_eq!(req.header("content-type"), Some("application/json"));
            assert_eq!(req.headers[2], ("content-length".into(), "13".into()));
            assert_eq!(req.body, b"{\"text\":\"Hi\"}");
        }
    }

    #[tokio::test]
    async fn lenient_where_clients_differ_strict_on_limits() {
        // No body, no version, bytes after the body dropped.
        let req = read(b"GET /voices\r\n\r\n", 100, 0).await.unwrap();
        assert_eq!((req.method.as_str(), req.body.len()), ("GET", 0));
        let req = read(b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nabcd", 100, 10)
            .await
            .unwrap();
        assert_eq!(req.body, b"ab");
        // A body over the limit, a header without a colon, a missing
        // target, a connection that ends mid-body: no request.
        let big = b"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n0123456789a";
        assert!(read(big, 100, 10).await.is_none());
        assert!(read(b"POST / HTTP/1.1\r\nbad\r\n\r\n", 100, 10)
            .await
            .is_none());
        assert!(read(b"POST\r\n\r\n", 100, 10).await.is_none());
        let short = b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab";
        assert!(read(short, 100, 10).await.is_none());
        // A head that never ends, past the limit.
        let endless = vec![b'a'; MAX_HEAD_BYTES + 10];
        assert!(read(&endless, 8192, 10).await.is_none());
    }

    #[test]
    fn chunk_framing() {
        assert_eq!(
            http_chunk(b"hello world, 16!"),
            b"10\r\nhello world, 16!\r\n"
        );
        assert_eq!(
            http_chunk(b"0123456789abcdefg"),
            b"11\r\n0123456789abcdefg\r\n"
        );
    }

    #[test]
    fn status_lines() {
        assert_eq!(reason(200), "OK");
        assert_eq!(reason(429), "Too Many Requests");
        assert_eq!(reason(799), "Status");
        assert_eq!(
            sized_response(404, "application/json", b"{}", false),
            b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\
Connection: close\r\n\r\n{}"
        );
        let keep = sized_response(200, "text/plain", b"", true);
        assert!(keep.ends_with(b"Connection: keep-alive\r\n\r\n"));
    }

    #[tokio::test(start_paused = true)]
    async fn wait_until_polls_until_the_condition_or_the_timeout() {
        let mut calls = 0;
        assert!(
            wait_until(Duration::from_secs(1), || {
                calls += 1;
                calls == 3
            })
            .await
        );
        let start = Instant::now();
        assert!(!wait_until(Duration::from_millis(100), || false).await);
        assert!(start.elapsed() >= Duration::from_millis(100));
    }

    #[test]
    fn draws_are_uniform_and_repeatable() {
        let draws: Vec<f64> = (0..10_000).map(|n| unit_draw(7, n)).collect();
        assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
        let under = draws.iter().filter(|d| **d < 0.02).count();
        assert!((120..=280).contains(&under), "{under} of 10000 under 2 %");
        assert_eq!(unit_draw(7, 3), draws[3]);
        assert_ne!(unit_draw(8, 3), draws[3]);
    }
}
