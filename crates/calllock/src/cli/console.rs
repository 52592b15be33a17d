//! Calls typed on the console: `chat` (the engine in real time, text in
//! and out) and `voice` (a phone call on this machine: `serve` on a
//! loopback port and `dial` calling it), and the keyboard they read.

use crate::call::driver;
use crate::call::outcome::Outcome;
use crate::cli::display;
use crate::config;
use crate::instance::KeepAlive;
use agent::engine::Engine;
use agent::Session;
use anyhow::{Context, Result};
use std::io::IsTerminal;

fn new_call_id(prefix: &str) -> String {
    let now = chrono::Utc::now();
    format!("{prefix}-{}", now.format("%Y%m%d-%H%M%S-%3f"))
}

/// `calllock chat`.
pub async fn chat(cfg: &config::Config, caller_id: String) -> Result<()> {
    let (c, engine) = ConsoleCall::open(cfg, &caller_id, "chat").await?;
    c.banner(&format!(
        "calling {} from {caller_id} (call {}); type as the caller, Ctrl-D hangs up",
        cfg.business.company_name, c.call_id
    ));
    let responder = c.vendors.responder.clone();
    let rx = stdin_lines();
    let mut printer = display::LivePrinter::new(c.color);
    let start = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let journal = crate::call::journal::Journal::begin(
        &c.vendors.store,
        &c.call_id,
        &caller_id,
        start,
        c.alive.id(),
    )
    .await
    .context("registering the call")?;
    let mut observer =
        crate::call::journal::JournalObserver::new(journal.clone(), start, &mut printer);
    let driver = driver::CallDriver::new(
        engine,
        c.vendors.backend.clone(),
        responder,
        driver::Timing::of(cfg),
        start,
        &mut observer,
    );
    let mut outcome = driver.run_interactive(rx).await;
    c.finish(cfg, journal, &mut outcome).await
}

/// Lines typed on stdin (control characters removed); `None` at end of
/// input (Ctrl-D: the caller hangs up).
pub fn stdin_lines() -> tokio::sync::mpsc::Receiver<Option<String>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Option<String>>(16);
    std::thread::spawn(move || {
        use std::io::BufRead;
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        loop {
            let mut buf = Vec::new();
            match lock.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.blocking_send(None);
                    return;
                }
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).to_string();
                    let line: String = line
                        .chars()
                        .filter(|c| !c.is_control() || *c == '\t')
                        .collect();
                    if tx.blocking_send(Some(line)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// What a call typed on the console (`chat`, `voice`) starts from.
struct ConsoleCall {
    vendors: crate::wiring::Vendors,
    call_id: String,
    color: bool,
    /// Stops the background outbox worker and recovery.
    stop_worker: tokio::sync::watch::Sender<bool>,
    /// This process's heartbeat (it owns the call).
    alive: KeepAlive,
}

impl ConsoleCall {
    async fn open(cfg: &config::Config, caller_id: &str, prefix: &str) -> Result<(Self, Engine)> {
        let store = crate::wiring::open_store(cfg).await?;
        let vendors = crate::wiring::vendors(cfg, store).await?;
        // A call a crash left unfinished is recovered first; then the
        // outbox is worked in the background while the call runs.
        let alive = KeepAlive::start(
            vendors.store.clone(),
            crate::wiring::worker_name(cfg),
            cfg.instance_lease_s,
        )
        .await
        .context("registering this process in the database")?;
        let post = vendors.post_call(cfg);
        match crate::call::delivery::recover(&post, cfg.instance_lease_s).await {
            Ok(ids) if !ids.is_empty() => eprintln!(
                "recovered {} call(s) interrupted mid-call: {}",
                ids.len(),
                ids.join(", ")
            ),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "cannot recover interrupted calls"),
        }
        let (stop_worker, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(vendors.outbox_worker(cfg).run(
            crate::call::delivery::system_clock(),
            std::time::Duration::from_secs_f64(cfg.outbox.poll_s),
            stop_rx,
        ));
        // Take over the calls of processes that die while this one runs.
        tokio::spawn(crate::call::delivery::keep_recovering(
            post,
            cfg.instance_lease_s,
            stop_worker.subscribe(),
        ));
        let call_id = new_call_id(prefix);
        let mut session = Session::new(caller_id.to_string());
        session.call_sid = call_id.clone();
        let engine = Engine::new(
            session,
            cfg.business.clone(),
            cfg.engine.text_engine_config(),
        );
        Ok((
            ConsoleCall {
                vendors,
                call_id,
                color: std::io::stdout().is_terminal(),
                stop_worker,
                alive,
            },
            engine,
        ))
    }

    /// Close the journal, run post-call processing, print the outcome.
    async fn finish(
        &self,
        cfg: &config::Config,
        journal: crate::call::journal::Journal,
        outcome: &mut Outcome,
    ) -> Result<()> {
        let stats = journal.close().await;
        if stats.lost > 0 {
            eprintln!("warning: {} call events could not be written", stats.lost);
        }
        let report = self
            .vendors
            .post_call(cfg)
            .handle_call_ended(outcome, false)
            .await;
        let _ = self.stop_worker.send(true);
        self.alive.stop().await;
        display::print_summary(&report.finished, self.color);
        let mut note = format!(
            "saved; see `calllock calls show {}`",
            report.finished.call_id
        );
        if self.vendors.dashboard.is_some() {
            if report.pending.is_empty() {
                note.push_str("; delivered to the dashboard");
            } else {
                note.push_str(&format!(
                    "; {} deliveries wait in the outbox (`calllock outbox`)",
                    report.pending.len()
                ));
            }
        }
        eprintln!("{}", display::dim(&note, self.color));
        Ok(())
    }

    fn banner(&self, text: &str) {
        eprintln!("{}", display::dim(text, self.color));
    }
}

/// `calllock voice`: a whole phone call on this machine — `serve` on a
/// loopback port and `dial` calling it, in one process.
pub async fn voice(cfg: &config::Config, caller_id: String) -> Result<()> {
    let mut cfg = cfg.clone();
    cfg.serve.bind = "127.0.0.1".into();
    cfg.serve.public_url.clear();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .context("opening a loopback port")?;
    let server = crate::serve::Server::start(cfg.clone(), listener).await?;
    eprintln!(
        "{}",
        display::dim(
            &format!(
                "voice call to {} from {caller_id}: `calllock serve` on {} and a local phone \
                 (Twilio Media Streams over loopback, {}); type as the caller \
                 (type while the agent talks to interrupt), Ctrl-D hangs up",
                cfg.business.company_name,
                server.addr,
                server.speech_summary()
            ),
            std::io::stdout().is_terminal()
        )
    );
    let store = server.store().clone();
    let mut opts = dial_options(&cfg, format!("http://{}", server.addr), caller_id);
    // The phone shares the server's local speech (one model in memory).
    if let Some(local) = server.local_speech() {
        opts.speech = crate::dial::phone::PhoneSpeech::Local(local);
    }
    let r = crate::dial::dial(
        &opts,
        crate::dial::Drive::Keyboard(stdin_lines()),
        Some(&store),
    )
    .await;
    server.drain();
    server.idle().await;
    server.stop().await;
    r.map(|_| ())
}

/// How `dial` calls `url` with this configuration.
pub fn dial_options(cfg: &config::Config, url: String, from: String) -> crate::dial::DialOptions {
    crate::dial::DialOptions {
        url,
        from,
        to: "+15125550000".into(),
        auth_token: cfg.twilio.signed().then(|| cfg.twilio.auth_token.clone()),
        chars_per_second: cfg.sim.speech_chars_per_s,
        speech: Default::default(),
        record: None,
    }
}
