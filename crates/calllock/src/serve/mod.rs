//! `calllock serve`: answer phone calls from Twilio.
//!
//! - [`http`]: `/health`, the `/twiml` webhook, the `/ws/twilio` upgrade,
//!   request signatures;
//! - [`twilio_call`]: one call on one Media Streams socket;
//! - [`twilio_sink`]: agent audio onto the socket, with marks;
//! - [`listen`]: accepting connections, with timeouts for slow and idle
//!   clients;
//! - [`live`]: the live calls (capacity, draining, ending at shutdown);
//! - [`speech`]: the speech vendors of a served call.
//!
//! At start the server takes over calls a crash left unfinished (as `chat`
//! does), then runs the outbox worker and the crash recovery in the
//! background. [`Server::shutdown`] stops admitting calls (`/health` says
//! `draining`), lets live calls finish for `shutdown_grace_s`, ends the
//! rest politely; a second call to it ends them at once. Every call's
//! record is written either way.

pub mod app;
pub(crate) mod auth;
pub(crate) mod http;
pub mod listen;
pub mod live;
pub mod playout;

pub mod speech;
pub mod twilio_call;
pub mod twilio_sink;

use crate::config::Config;
use crate::instance::KeepAlive;
use anyhow::{Context, Result};
use app::App;
use axum::routing::get;
use live::{LiveCalls, Shutdown};
use providers::twilio::rest::{TwilioRest, TwilioRestConfig};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    app: Arc<App>,
    stop_http: watch::Sender<bool>,
    stop_worker: watch::Sender<bool>,
    http: tokio::task::JoinHandle<()>,
    alive: KeepAlive,
}

/// Whether `addr` only accepts connections from this machine.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// The REST client of the configuration (account SID and token set).
fn rest_client(cfg: &Config) -> Result<Option<TwilioRest>> {
    let t = &cfg.twilio;
    if t.account_sid.trim().is_empty() || t.auth_token.is_empty() {
        return Ok(None);
    }
    let rc = TwilioRestConfig {
        api_base_url: t.api_url.trim().trim_end_matches('/').to_string(),
        account_sid: t.account_sid.trim().to_string(),
        auth_token: t.auth_token.clone(),
        timeout: Duration::from_secs(10),
    };
    Ok(Some(
        TwilioRest::new(rc).context("setting up the Twilio REST client")?,
    ))
}

impl Server {
    /// Open the vendors, recover interrupted calls, start the background
    /// workers and serve on `listener`.
    pub async fn start(cfg: Config, listener: tokio::net::TcpListener) -> Result<Server> {
        let addr = listener
            .local_addr()
            .context("reading the listening address")?;
        let store = crate::wiring::open_store(&cfg).await?;
        let vendors = crate::wiring::vendors(&cfg, store).await?;
        let alive = KeepAlive::start(
            vendors.store.clone(),
            crate::wiring::worker_name(&cfg),
            cfg.instance_lease_s,
        )
        .await
        .context("registering this process in the database")?;
        let post = vendors.post_call(&cfg);
        match crate::call::delivery::recover(&post, cfg.instance_lease_s).await {
            Ok(ids) if !ids.is_empty() => tracing::info!(
                count = ids.len(),
                calls = ids.join(", "),
                "recovered calls interrupted mid-call"
            ),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "cannot recover interrupted calls"),
        }
        let (stop_worker, stop_rx) = watch::channel(false);
        tokio::spawn(vendors.outbox_worker(&cfg).run(
            crate::call::delivery::system_clock(),
            Duration::from_secs_f64(cfg.outbox.poll_s),
            stop_rx,
        ));
        tokio::spawn(crate::call::delivery::keep_recovering(
            post.clone(),
            cfg.instance_lease_s,
            stop_worker.subscribe(),
        ));
        let rest = rest_client(&cfg)?;
        let local = crate::local_speech::LocalSpeech::start(&cfg)?;
        if let Some(why) = &local.note {
            if !cfg.deepgram.enabled() {
                tracing::warn!(
                    "callers are heard through the offline speech codec, not real speech: {why}"
                );
            }
        }
        // Metrics are recorded from the first call on (`GET /metrics`).
        crate::metrics::handle();
        let voices = speech::Voices::new(&cfg, local)?;
        // A recording that cannot be kept must not keep calls from being
        // answered: say why and go on without.
        let recordings = match crate::recording::Recorder::start(&cfg) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = format!("{e:#}"), "calls are NOT recorded");
                None
            }
        };
        tracing::info!(
            voices = voices.chain.join(" → "),
            ears = voices.ears(&cfg),
            ears_fallback = voices.ears_fallback(&cfg).unwrap_or("none"),
            "the agent's voice and ears"
        );
        // Started by `calllock serve` before its runtime (see `playout`);
        // a server started another way (tests, `demo`) starts it here.
        let playout = playout::start(cfg.serve.playout_threads as usize);
        let max_calls = max_calls(&cfg, voices.ears(&cfg));
        let app = Arc::new(App {
            calls: LiveCalls::new(max_calls as usize),
            cfg: Arc::new(cfg),
            vendors,
            post,
            rest,
            owner: alive.id().to_string(),
            addr,
            playout,
            pacing: (0..playout.threads()).map(|_| Arc::default()).collect(),
            operator: Default::default(),
            voices,
            recordings,
        });
        let router = axum::Router::new()
            .route("/health", get(http::health))
            .route("/metrics", get(http::metrics))
            .merge(crate::api::router())
            .merge(crate::web::router())
            .route("/twiml", get(http::twiml).post(http::twiml))
            .route("/ws/twilio", get(http::stream))
            // Every answer: CSP, nosniff, no framing, no referrer, no-store.
            .layer(axum::middleware::from_fn(crate::web::security_headers))
            // Sessions judged against the password in force, read afresh.
            .layer(axum::middleware::from_fn_with_state(
                app.clone(),
                crate::web::signin::fresh_password,
            ))
            .with_state(app.clone());
        let (stop_http, stop_rx) = watch::channel(false);
        // With the limits a public server needs (slow or idle clients are
        // cut off) and each request's peer address (sign-in limits).
        let http = tokio::spawn(listen::serve(
            listener,
            router,
            listen::Limits::default(),
            stop_rx,
        ));
        Ok(Server {
            addr,
            app,
            stop_http,
            stop_worker,
            http,
            alive,
        })
    }

    /// The database the server writes its calls to.
    pub fn store(&self) -> &store::Store {
        &self.app.vendors.store
    }

    /// The local speech the server uses, if any (to share its model).
    pub fn local_speech(&self) -> Option<crate::local_speech::LocalSpeech> {
        let l = self.app.voices.local();
        l.is_on().then(|| l.clone())
    }

    /// How calls are heard and spoken, in words.
    pub fn speech_summary(&self) -> String {
        let v = &self.app.voices;
        let ears = match v.ears_fallback(&self.app.cfg) {
            Some(then) => format!("{} → {then}", v.ears(&self.app.cfg)),
            None => v.ears(&self.app.cfg).to_string(),
        };
        format!("heard by {ears}, spoken by {}", v.chain.join(" → "))
    }

    /// Calls live now.
    pub fn live_calls(&self) -> usize {
        self.app.calls.live()
    }

    /// Stop admitting calls (`/health` answers 503 `draining`).
    pub fn drain(&self) {
        self.app.calls.drain();
    }

    /// Tell live calls to end (`Politely`: goodbye, callback, hang-up;
    /// `Now`: at once).
    pub fn end_calls(&self, how: Shutdown) {
        self.app.calls.end_all(how);
    }

    /// Wait until no call is live.
    pub async fn idle(&self) {
        self.app.calls.idle().await
    }

    /// Stop the HTTP server and the workers (after the calls ended).
    pub async fn stop(self) {
        let _ = self.stop_http.send(true);
        // Connections still open (a socket whose call is over) must not
        // hold the process.
        let _ = tokio::time::timeout(Duration::from_secs(5), self.http).await;
        let _ = self.stop_worker.send(true);
        self.alive.stop().await;
    }
}

/// Options of `calllock serve` beyond the configuration.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Bind a non-loopback address with no Twilio auth token.
    pub allow_unsigned: bool,
}

/// `calllock serve`: bind, serve until SIGTERM/SIGINT, shut down gracefully.
pub async fn run(cfg: Config, opts: ServeOptions) -> Result<()> {
    let ip: std::net::IpAddr = cfg
        .serve
        .bind
        .trim()
        .parse()
        .with_context(|| format!("serve.bind {:?} is not an IP address", cfg.serve.bind))?;
    let addr = SocketAddr::new(ip, cfg.serve.port);
    if !cfg.twilio.signed() && !is_loopback(&addr) && !opts.allow_unsigned {
        anyhow::bail!(
            "refusing to listen on {addr} without TWILIO_AUTH_TOKEN: anyone could place calls \
             and nothing could check Twilio's signatures. Set twilio.auth_token \
             (TWILIO_AUTH_TOKEN), bind to 127.0.0.1, or pass --allow-unsigned if a proxy in \
             front checks requests"
        );
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let grace = Duration::from_secs_f64(cfg.serve.shutdown_grace_s);
    let signed = cfg.twilio.signed();
    let public = cfg.serve.public_url.clone();
    let server = Server::start(cfg, listener).await?;
    let base = if public.is_empty() {
        format!("http://{}", server.addr)
    } else {
        public
    };
    println!("listening on http://{}", server.addr);
    println!(
        "  Twilio voice webhook: {base}/twiml   stream: {}/ws/twilio   health: {base}/health",
        base.replacen("http", "ws", 1)
    );
    println!(
        "  signatures: {}   try it: calllock dial --url http://{}",
        if signed {
            "checked (TWILIO_AUTH_TOKEN)"
        } else {
            "NOT checked (no TWILIO_AUTH_TOKEN)"
        },
        server.addr
    );
    println!(
        "  dashboard: {base}/   (sign in with the operator password; `calllock operator password` sets it)"
    );
    shutdown_on_signals(&server, grace).await;
    server.stop().await;
    Ok(())
}

/// Wait for SIGTERM/SIGINT, then drain: live calls get `grace`, then are
/// ended politely; a second signal ends them at once.
async fn shutdown_on_signals(server: &Server, grace: Duration) {
    let mut signals = Signals::new();
    signals.next().await;
    // Warnings: seen under the default filter, and JSON under
    // `--log-format json` like every other line.
    tracing::warn!(
        live = server.live_calls(),
        grace_s = grace.as_secs(),
        "shutting down: no new calls; live calls may finish within the grace period (signal \
         again to end them now)"
    );
    server.drain();
    let ended_now = tokio::select! {
        _ = server.idle() => return,
        _ = tokio::time::sleep(grace) => false,
        _ = signals.next() => true,
    };
    if ended_now {
        tracing::warn!(live = server.live_calls(), "ending live calls now");
        server.end_calls(Shutdown::Now);
    } else {
        tracing::warn!(
            live = server.live_calls(),
            "grace period over: ending live calls politely (goodbye, callback)"
        );
        server.end_calls(Shutdown::Politely);
        tokio::select! {
            _ = server.idle() => return,
            _ = signals.next() => server.end_calls(Shutdown::Now),
        }
    }
    // Records are written even when ending at once; wait for them, bounded.
    let _ = tokio::time::timeout(Duration::from_secs(30), server.idle()).await;
}

/// SIGTERM and SIGINT (Ctrl-C) as one stream.
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        Signals {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        }
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some(term) = self.term.as_mut() {
            tokio::select! {
                _ = term.recv() => {},
                _ = tokio::signal::ctrl_c() => {},
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The calls this server takes at once: `serve.max_calls`, and no more
/// than Whisper can hear when it hears the callers (`speech.max_calls`):
/// a caller beyond gets the busy line and a callback rather than every
/// call's words arriving late or not at all.
pub fn max_calls(cfg: &Config, ears: &str) -> u32 {
    let max = cfg.serve.max_calls;
    if ears != "whisper" {
        return max;
    }
    let whisper = cfg.speech.max_calls_or_default();
    if whisper < max {
        tracing::info!(
            calls = whisper,
            serve_max_calls = max,
            "Whisper hears this many calls at once (speech.max_calls); more callers get the busy line and a callback"
        );
    }
    max.min(whisper)
}
