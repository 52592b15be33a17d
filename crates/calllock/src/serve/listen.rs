//! Accepting connections with limits a server on the public internet
//! needs (axum's own `serve` sets none):
//!
//! - **Header read timeout** ([`HEADER_READ_TIMEOUT`]): a client must send
//!   a request's headers within this time of the connection opening, or
//!   of the previous answer on a kept-alive connection (a slowloris client
//!   trickling bytes is cut off, and a kept-alive connection waiting for
//!   its next request closes after this long — clients and proxies open a
//!   new one).
//! - **Request timeout** ([`REQUEST_TIMEOUT`]): reading the body and
//!   handling a request may take this long at most; the client then gets
//!   408. Streaming a response (a recording to a slow phone) and a
//!   WebSocket after its upgrade are not bounded by it.
//! - **Idle timeout** ([`IDLE_TIMEOUT`]): a connection on which nothing
//!   moved either way for this long is closed — a request whose client
//!   stopped reading or sending mid-way, or a call's socket whose peer
//!   vanished without closing (Twilio sends audio every 20 ms for the
//!   whole call, so a live call never idles).
//!
//! Each request carries the peer's address as [`ConnectInfo`], as with
//! `into_make_service_with_connect_info`. [`serve`] stops accepting when
//! told to, lets every connection finish its request in flight (keep-alive
//! ones are closed after it), then returns once all are gone.

use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

/// How long a client may take to send a request's headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long reading a request's body and answering it may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection may carry nothing, either way, before it closes.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The limits in force ([`Limits::default`]: the constants above; tests
/// shorten them).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read: Duration,
    pub request: Duration,
    pub idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read: HEADER_READ_TIMEOUT,
            request: REQUEST_TIMEOUT,
            idle: IDLE_TIMEOUT,
        }
    }
}

/// Serve `router` on `listener` until `stop` turns true, then wait for
/// the open connections to finish.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let router = router.layer(tower_http::timeout::TimeoutLayer::with_status_code(
        axum::http::StatusCode::REQUEST_TIMEOUT,
        limits.request,
    ));
    // Every connection holds a receiver; `closed()` on the sender waits
    // for the last one to go.
    let (conns_tx, conns_rx) = watch::channel(false);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|s| *s) => break,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors and the like: wait, don't spin.
                tracing::warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let service = router
            .clone()
            .map_request(move |mut req: axum::http::Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                req.map(Body::new)
            });
        let mut done = conns_rx.clone();
        tokio::spawn(async move {
            let io = TokioIo::new(Idle::new(tcp, limits.idle));
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read);
            let conn = builder
                .serve_connection(io, TowerToHyperService::new(service))
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                    return;
                }
                _ = done.wait_for(|d| *d) => conn.as_mut().graceful_shutdown(),
            }
            let _ = conn.await;
        });
    }
    drop(listener);
    let _ = conns_tx.send(true);
    drop(conns_rx);
    conns_tx.closed().await;
}

/// A connection that fails with `TimedOut` once nothing was read or
/// written for `limit`.
struct Idle<T> {
    inner: T,
    limit: Duration,
    timer: Pin<Box<Sleep>>,
}

impl<T> Idle<T> {
    fn new(inner: T, limit: Duration) -> Self {
        Idle {
            inner,
            limit,
            timer: Box::pin(tokio::time::sleep(limit)),
        }
    }

    fn moved(&mut self) {
        self.timer.as_mut().reset(Instant::now() + self.limit);
    }

    /// A write's result: progress restarts the clock; `Pending` becomes
    /// an error once the connection has idled too long.
    fn wrote(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match r {
            Poll::Ready(r) => {
                if matches!(r, Ok(n) if n > 0) {
                    self.moved();
                }
                Poll::Ready(r)
            }
            Poll::Pending => {
                self.check(cx)?;
                Poll::Pending
            }
        }
    }

    /// `Pending` becomes an error once the connection has idled too long.
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the connection was idle too long",
            )),
            Poll::Pending => Ok(()),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Idle<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    this.moved();
                }
                Poll::Ready(r)
            }
            Poll::Pending => {
                this.check(cx)?;
                Poll::Pending
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Idle<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.wrote(cx, r)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(Pin::new(&mut this.inner).poll_flush(cx))?;
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.wrote(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_idles_fails_and_one_that_talks_does_not() {
        let (a, mut b) = tokio::io::duplex(64);
        let mut idle = Idle::new(a, Duration::from_secs(60));
        let mut buf = [0u8; 8];
        // Bytes every 50 s keep it open past the limit.
        for _ in 0..3 {
            tokio::time::advance(Duration::from_secs(50)).await;
            b.write_all(b"x").await.unwrap();
            assert_eq!(idle.read(&mut buf).await.unwrap(), 1);
        }
        // Then nothing: the read fails once 60 s have passed.
        let t0 = Instant::now();
        let err = idle.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(t0.elapsed(), Duration::from_secs(60));
    }
}
