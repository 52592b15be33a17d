//! Opening Deepgram's live socket: TCP, TLS (rustls with the ring
//! provider, one process-wide configuration) and the HTTP/1.1 upgrade.
//!
//! The upgrade is written here rather than left to tungstenite's client:
//! its handshake reads Deepgram's answer into a 4 KiB buffer and hands
//! that same buffer to the socket, which keeps it as its read buffer for
//! the rest of the call. Here the answer is read into a scratch buffer
//! that is dropped, and the socket starts with the small read buffer
//! [`LiveConfig`] asks for (it grows for a larger message).
//!
//! What Deepgram answers decides what the call does next
//! ([`ConnectError`]): a 4xx (a bad key, a bad query) is final, anything
//! else — a timeout, a 5xx, a reset, a malformed answer — is worth
//! another try.

use super::listen;
use super::live::LiveConfig;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::generate_request;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// One call's open socket.
pub(super) type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Why a connection attempt failed.
#[derive(Debug)]
pub(super) enum ConnectError {
    /// Deepgram said no (4xx), or the settings cannot work: do not try
    /// again.
    Refused(String),
    /// Anything else: try again.
    Transient(String),
}

/// The most an answer's head may take (Deepgram's is well under 1 KiB).
const MAX_HEAD: usize = 16 * 1024;
/// Headers read from an answer at most (as many as tungstenite reads).
const MAX_HEADERS: usize = 124;

/// Open the socket `cfg` names, within its connect timeout.
pub(super) async fn connect(cfg: &LiveConfig) -> Result<Socket, ConnectError> {
    match tokio::time::timeout(cfg.connect_timeout, open(cfg)).await {
        Ok(result) => result,
        Err(_) => Err(ConnectError::Transient("connect timed out".into())),
    }
}

async fn open(cfg: &LiveConfig) -> Result<Socket, ConnectError> {
    let url = cfg.options.url(&cfg.base_url);
    let bad_url = |e: String| ConnectError::Refused(format!("bad Deepgram URL: {e}"));
    let mut req = url
        .as_str()
        .into_client_request()
        .map_err(|e| bad_url(e.to_string()))?;
    let auth = format!("Token {}", cfg.api_key)
        .parse()
        .map_err(|_| ConnectError::Refused("the Deepgram key is not a valid header".into()))?;
    req.headers_mut().insert("Authorization", auth);
    let secure = match req.uri().scheme_str() {
        Some("wss") => true,
        Some("ws") => false,
        _ => return Err(bad_url(format!("{url} is neither ws:// nor wss://"))),
    };
    // An IPv6 literal comes bracketed in a URL, and bare to the resolver.
    let host = req
        .uri()
        .host()
        .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_string())
        .ok_or_else(|| bad_url(format!("{url} names no host")))?;
    let port = req
        .uri()
        .port_u16()
        .unwrap_or(if secure { 443 } else { 80 });
    let (request, key) = generate_request(req).map_err(|e| bad_url(e.to_string()))?;
    // A name TLS cannot use is known before anything is sent.
    let name = if secure {
        Some(
            rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|_| bad_url(format!("{host} is not a valid TLS server name")))?,
        )
    } else {
        None
    };

    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| ConnectError::Transient(format!("connect to {host}:{port}: {e}")))?;
    // Audio goes up in 20 ms frames: never held back waiting for more.
    let _ = tcp.set_nodelay(true);
    let mut stream = if let Some(name) = name {
        let tls = tokio_rustls::TlsConnector::from(tls())
            .connect(name, tcp)
            .await
            .map_err(|e| ConnectError::Transient(format!("TLS with {host}: {e}")))?;
        MaybeTlsStream::Rustls(tls)
    } else {
        MaybeTlsStream::Plain(tcp)
    };
    let io = |e: std::io::Error| ConnectError::Transient(format!("handshake: {e}"));
    stream.write_all(&request).await.map_err(io)?;
    stream.flush().await.map_err(io)?;

    // Read until the answer's head is whole; what follows it is the
    // socket's first bytes.
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    let rest = loop {
        let n = stream.read(&mut chunk).await.map_err(io)?;
        if n == 0 {
            return Err(ConnectError::Transient(
                "Deepgram closed the connection during the handshake".into(),
            ));
        }
        answer.extend_from_slice(&chunk[..n]);
        if let Some(head) = read_answer(&answer, &key)? {
            break answer[head..].to_vec();
        }
        if answer.len() > MAX_HEAD {
            return Err(ConnectError::Transient(format!(
                "Deepgram's handshake answer is over {MAX_HEAD} bytes"
            )));
        }
    };
    drop(answer);
    // Deepgram's messages are a few hundred bytes to a few KB, a couple a
    // second: a small read buffer (grown for a larger message) is kept by
    // every call's socket.
    let ws = WebSocketConfig::default()
        .read_buffer_size(1024)
        .write_buffer_size(0)
        .max_message_size(Some(listen::MAX_MESSAGE_BYTES));
    Ok(WebSocketStream::from_partially_read(stream, rest, Role::Client, Some(ws)).await)
}

/// Deepgram's answer to an upgrade asked with `key`, as far as it has
/// come: `Ok(None)` while its head is incomplete, `Ok(Some(len))` once it
/// is a valid switch to a WebSocket (its head is `len` bytes), and why
/// not otherwise. Never panics, whatever the bytes.
fn read_answer(bytes: &[u8], key: &str) -> Result<Option<usize>, ConnectError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => {
            return Err(ConnectError::Transient(format!(
                "Deepgram's handshake answer is not HTTP: {e}"
            )))
        }
    };
    let header = |name: &str| {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    let code = resp.code.unwrap_or(0);
    if code != 101 {
        let status = StatusCode::from_u16(code)
            .map(|s| s.to_string())
            .unwrap_or_else(|_| code.to_string());
        let why = header("dg-error").unwrap_or_default();
        let msg = format!("Deepgram refused the socket: HTTP {status} {why}")
            .trim()
            .to_string();
        return Err(if (400..500).contains(&code) {
            ConnectError::Refused(msg)
        } else {
            ConnectError::Transient(msg)
        });
    }
    let upgrade = header("upgrade").unwrap_or_default();
    let connection = header("connection").unwrap_or_default();
    let accept = header("sec-websocket-accept").unwrap_or_default();
    if !upgrade.eq_ignore_ascii_case("websocket")
        || !connection
            .split(',')
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
    {
        return Err(ConnectError::Transient(
            "Deepgram switched protocols but not to a WebSocket".into(),
        ));
    }
    // We asked for no subprotocol and no extension (a compressed frame
    // would break the socket later, not here).
    for asked_none in ["sec-websocket-protocol", "sec-websocket-extensions"] {
        if header(asked_none).is_some() {
            return Err(ConnectError::Transient(format!(
                "Deepgram's answer sets {asked_none}, which was not asked for"
            )));
        }
    }
    if accept != derive_accept_key(key.as_bytes()) {
        return Err(ConnectError::Transient(
            "Deepgram's Sec-WebSocket-Accept does not match the key sent".into(),
        ));
    }
    Ok(Some(len))
}

/// The TLS settings of every call's socket, built once: one root store
/// for the process, and one session cache, so a call's handshake can
/// resume the session of the call before.
fn tls() -> Arc<rustls::ClientConfig> {
    static CONFIG: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
    CONFIG.get_or_init(build_tls).clone()
}

fn build_tls() -> Arc<rustls::ClientConfig> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = match rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
    {
        Ok(b) => b.with_root_certificates(roots).with_no_client_auth(),
        // The ring provider supports the default versions; never reached.
        Err(_) => rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth(),
    };
    Arc::new(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    fn switch(accept: &str) -> String {
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
        )
    }

    #[test]
    fn a_valid_switch_is_open_and_what_follows_its_head_is_the_sockets() {
        // RFC 6455's own example key and accept value.
        let head = switch("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        let mut bytes = head.clone().into_bytes();
        bytes.extend_from_slice(&[0x81, 0x02, b'h', b'i']);
        assert_eq!(read_answer(&bytes, KEY).unwrap(), Some(head.len()));
    }

    #[test]
    fn a_head_not_yet_whole_waits_for_more() {
        let head = switch("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        for cut in [0, 10, head.len() - 1] {
            assert_eq!(read_answer(&head.as_bytes()[..cut], KEY).unwrap(), None);
        }
    }

    #[test]
    fn a_wrong_accept_or_no_upgrade_is_worth_another_try() {
        let wrong = switch("AAAAAAAAAAAAAAAAAAAAAAAAAAA=");
        assert!(matches!(
            read_answer(wrong.as_bytes(), KEY),
            Err(ConnectError::Transient(m)) if m.contains("Sec-WebSocket-Accept")
        ));
        let h2c = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n";
        assert!(matches!(
            read_answer(h2c.as_bytes(), KEY),
            Err(ConnectError::Transient(_))
        ));
    }

    #[test]
    fn a_4xx_is_refused_with_deepgrams_reason_and_a_5xx_is_transient() {
        let refused = "HTTP/1.1 401 Unauthorized\r\ndg-error: Invalid credentials.\r\n\
                       Content-Length: 0\r\n\r\n";
        match read_answer(refused.as_bytes(), KEY) {
            Err(ConnectError::Refused(m)) => assert_eq!(
                m,
                "Deepgram refused the socket: HTTP 401 Unauthorized Invalid credentials."
            ),
            other => panic!("{other:?}"),
        }
        let busy = "HTTP/1.1 503 Service Unavailable\r\n\r\n";
        assert!(matches!(
            read_answer(busy.as_bytes(), KEY),
            Err(ConnectError::Transient(m)) if m.ends_with("HTTP 503 Service Unavailable")
        ));
    }

    #[test]
    fn an_answer_that_is_not_http_is_transient() {
        assert!(matches!(
            read_answer(b"SSH-2.0-OpenSSH_9.6\r\n\r\n", KEY),
            Err(ConnectError::Transient(_))
        ));
    }

    #[test]
    fn an_extension_not_asked_for_is_worth_another_try() {
        let head = switch("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=").replace(
            "\r\n\r\n",
            "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
        );
        assert!(matches!(
            read_answer(head.as_bytes(), KEY),
            Err(ConnectError::Transient(m)) if m.contains("sec-websocket-extensions")
        ));
    }

    /// A loopback server that answers the upgrade in `pieces` writes, the
    /// last one carrying a first text frame right after the head.
    async fn answering(pieces: usize) -> (String, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut asked = Vec::new();
            let mut buf = [0u8; 512];
            while !asked.ends_with(b"\r\n\r\n") {
                let n = tcp.read(&mut buf).await.unwrap();
                assert!(n > 0, "the client hung up mid-request");
                asked.extend_from_slice(&buf[..n]);
            }
            let asked = String::from_utf8(asked).unwrap();
            let key = asked
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("sec-websocket-key")
                        .then(|| value.trim().to_string())
                })
                .unwrap();
            let mut answer = switch(&derive_accept_key(key.as_bytes())).into_bytes();
            answer.extend_from_slice(&[0x81, 0x02, b'h', b'i']);
            let step = answer.len().div_ceil(pieces);
            for piece in answer.chunks(step) {
                tcp.write_all(piece).await.unwrap();
                tcp.flush().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            // Hold the connection until the client has read.
            let _ = tcp.read(&mut buf).await;
            asked
        });
        (format!("ws://{addr}"), server)
    }

    #[tokio::test]
    async fn the_first_frame_after_the_head_is_read_however_the_answer_is_cut() {
        use futures_util::StreamExt;
        for pieces in [1, 3, 40] {
            let (url, server) = answering(pieces).await;
            let cfg = LiveConfig::new(url, "key-1");
            let mut socket = connect(&cfg).await.expect("opens");
            // A bound, not a measure: a first frame lost waits forever.
            let first = tokio::time::timeout(std::time::Duration::from_secs(60), socket.next())
                .await
                .expect("the first frame arrives")
                .unwrap()
                .unwrap();
            assert_eq!(first.into_text().unwrap().as_str(), "hi", "{pieces} pieces");
            drop(socket);
            let asked = server.await.unwrap();
            assert!(asked.starts_with("GET /v1/listen?"), "{asked}");
            assert!(
                asked
                    .to_ascii_lowercase()
                    .contains("authorization: token key-1\r\n"),
                "{asked}"
            );
        }
    }

    proptest! {
        #[test]
        fn any_bytes_get_an_answer_and_no_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = read_answer(&bytes, KEY);
            let mut framed = switch("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=").into_bytes();
            framed.truncate(bytes.len() % (framed.len() + 1));
            framed.extend_from_slice(&bytes);
            let _ = read_answer(&framed, KEY);
        }
    }
}
