//! `calllock` — the CallLock phone agent, from the command line.
//!
//! Everything runs offline on the embedded defaults: the HVAC business
//! profile, the SQLite booking backend with demo customers, and the scripted
//! responder. See `calllock --help`.

use calllock::{config, demo, display, script, sim};

use agent::engine::Engine;
use agent::responder::Responder;
use agent::Session;
use anyhow::{bail, Context, Result};
use calllock::instance::KeepAlive;
use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

/// CallLock: a phone agent that answers calls for home-service businesses.
///
/// Every command works offline with no keys and no servers: the business
/// profile defaults to the HVAC company "ACE Cooling" (Austin, TX), bookings
/// go to an embedded SQLite database, and a deterministic scripted responder
/// phrases the agent's lines.
#[derive(Parser, Debug)]
#[command(name = "calllock", version, about, long_about = None)]
struct Cli {
    /// Configuration file (TOML). Default: $CALLLOCK_CONFIG, else
    /// ./calllock.toml if present, else the embedded defaults. Print an
    /// example with `calllock config --example`.
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,

    /// SQLite database file (overrides the config and $CALLLOCK_DATABASE).
    #[arg(long, global = true, value_name = "PATH")]
    db: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Be the caller: type what you would say; the agent answers. Ctrl-D
    /// hangs up. Real timers run (post-tool debounce, hang-up after speech).
    Chat {
        /// The caller ID to call from. The demo customers are
        /// +15125550100 (upcoming appointment), +15125550101 (owed a
        /// callback) and +15125550102 (known customer). Default: an unknown
        /// number.
        #[arg(long, value_name = "PHONE", default_value = "+15125559876")]
        caller_id: String,
    },
    /// Be the caller on a real-time voice call: every pipeline stage runs
    /// (turn detection, barge-in, conversation engine, LLM, sentence
    /// aggregation, TTS, resampling, paced playback) with offline mock
    /// speech vendors. Agent words print as they play; type while the agent
    /// talks to interrupt it. Ctrl-D hangs up.
    Voice {
        /// The caller ID to call from (see `chat`).
        #[arg(long, value_name = "PHONE", default_value = "+15125559876")]
        caller_id: String,
    },
    /// Play scripted callers end to end (booking, emergency, out of area,
    /// returning caller rescheduling, high-ticket lead), print each
    /// transcript and outcome, and check each ends where it should.
    Demo {
        /// Run only the scenario with this name (see the list it prints).
        #[arg(long, value_name = "NAME")]
        only: Option<String>,
        /// Print only the outcome lines, not the transcripts.
        #[arg(long)]
        brief: bool,
    },
    /// Run a scripted call from a JSON-lines file through the engine in
    /// virtual time and print the transcript, states and outcome. Uses an
    /// in-memory copy of the demo backend; never writes to your database.
    ///
    /// Line shapes: {"caller": "text", "at": 4.5} (seconds from call
    /// start) or "after": 0.4 (seconds after the previous caller line) or
    /// neither (3 s after the agent's last line finished); {"silence": 8};
    /// {"tool_result": {"tool": "lookup_caller", "result": {...}}} (the next
    /// call of that tool returns this); {"hangup": true}.
    Replay {
        /// The script (JSON lines).
        file: PathBuf,
        /// Caller ID. Default: an unknown number.
        #[arg(long, value_name = "PHONE", default_value = "+15125559876")]
        caller_id: String,
        /// Pin the clock, e.g. 2026-02-23T10:15:00-06:00. Default: now.
        #[arg(long, value_name = "ISO-8601")]
        now: Option<String>,
        /// Print one JSON object instead of the readable transcript.
        #[arg(long)]
        json: bool,
        /// Start with an empty backend instead of the demo customers.
        #[arg(long)]
        no_demo_data: bool,
        /// Seconds from an LLM request to its reply (default from config: 0.6).
        #[arg(long, value_name = "S")]
        llm_latency: Option<f64>,
        /// Seconds a backend tool call takes (default from config: 0.3).
        #[arg(long, value_name = "S")]
        tool_latency: Option<f64>,
        /// Agent speaking rate in characters per second (default 15).
        #[arg(long, value_name = "CPS")]
        speech_rate: Option<f64>,
        /// Call id to use (default: replay-<file name>).
        #[arg(long, value_name = "ID")]
        call_id: Option<String>,
    },
    /// List finished calls, or show one with its transcript and
    /// classification: `calllock calls`, `calllock calls show ID`.
    Calls {
        #[command(subcommand)]
        show: Option<CallsCommand>,
        /// Only calls that started within this long ago, e.g. 30m, 2h, 7d.
        #[arg(long, value_name = "AGE")]
        since: Option<String>,
        /// At most this many calls (newest first).
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Print one call's timestamped transcript: gaps of 2 s or more are
    /// marked (┆ +3.1s), gaps of 5 s or more are marked SLOW. Works for
    /// live and interrupted calls too (read from the call's event log).
    Transcript {
        /// The call id (as listed by `calllock calls`).
        id: String,
        /// Mark gaps at least this long (seconds).
        #[arg(long, value_name = "S", default_value_t = 2.0)]
        gap: f64,
        /// Print the SPEC §7.9 JSON dump instead.
        #[arg(long)]
        json: bool,
    },
    /// Show post-call deliveries waiting in the outbox (dashboard records,
    /// emergency alerts, callbacks not yet created) and why they wait;
    /// `calllock outbox deliver` retries them now.
    Outbox {
        #[command(subcommand)]
        action: Option<OutboxCommand>,
        /// Also list delivered items.
        #[arg(long)]
        all: bool,
        /// At most this many items.
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Check the configuration, the database and every configured vendor
    /// (LLM, V2 backend, dashboard) and say what is missing. Exit status 1
    /// when something configured is not working.
    Doctor,
    /// What the business owes its callers: open callbacks (soonest due
    /// first, with the number to call), upcoming appointments and the newest
    /// sales leads, from the embedded booking backend's tables.
    Agenda {
        /// At most this many rows per list.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Print one JSON object ({callbacks, appointments, leads}).
        #[arg(long)]
        json: bool,
    },
    /// Load the demo customers into the database (idempotent; chat and demo
    /// do it on first run).
    Seed,
    /// Show the effective configuration, check it, or print an example.
    Config {
        /// Print a commented example configuration file.
        #[arg(long)]
        example: bool,
    },
}

#[derive(Subcommand, Debug)]
enum OutboxCommand {
    /// Recover calls a crash left unfinished, then deliver what is due
    /// (ignoring backoff with --now), and report.
    Deliver {
        /// Attempt every pending item now, whatever its backoff says.
        #[arg(long)]
        now: bool,
        /// Keep running, retrying with backoff, until interrupted (Ctrl-C).
        #[arg(long)]
        watch: bool,
    },
}

#[derive(Subcommand, Debug)]
enum CallsCommand {
    /// Show one call: outcome, classification and transcript.
    Show {
        /// The call id (as listed by `calllock calls`).
        id: String,
        /// Print the stored record as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    let (filter, warning) =
        calllock::logging::env_filter(std::env::var("CALLLOCK_LOG").ok().as_deref());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: log collectors get plain
        // lines (a TRANSCRIPT_DUMP reader must find its JSON intact).
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    if let Some(w) = warning {
        eprintln!("{w}");
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = rt.block_on(run(cli)) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

async fn run(cli: Cli) -> Result<()> {
    let mut cfg = config::load(cli.config.as_deref()).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(db) = cli.db {
        cfg.database = db;
    }
    match cli.command {
        Command::Config { example } => {
            if example {
                print!("{}", config::EXAMPLE);
            } else {
                println!("# effective configuration (valid); secrets are shown as \"<set>\"");
                print!("{}", cfg.to_toml_redacted());
            }
            Ok(())
        }
        Command::Agenda { limit, json } => {
            let store = open_store(&cfg).await?;
            let callbacks = store.open_callbacks(limit).await?;
            let appointments = store
                .upcoming_appointments(chrono::Utc::now().timestamp(), limit)
                .await?;
            let leads = store.recent_sales_leads(limit).await?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "callbacks": callbacks,
                        "appointments": appointments,
                        "leads": leads,
                    }))?
                );
            } else {
                display::print_agenda(&callbacks, &appointments, &leads);
            }
            Ok(())
        }
        Command::Seed => {
            let store = open_store(&cfg).await?;
            store::EmbeddedBackend::new(store, cfg.business.clone())
                .seed_demo(chrono::Utc::now())
                .await
                .context("seeding demo data")?;
            println!("demo customers loaded into {}", cfg.database.display());
            for (phone, what) in store::DEMO_CUSTOMERS {
                println!("  {phone}  {what}");
            }
            Ok(())
        }
        Command::Chat { caller_id } => chat(&cfg, caller_id).await,
        Command::Transcript { id, gap, json } => {
            if !(gap.is_finite() && gap > 0.0) {
                bail!("--gap must be a positive number of seconds");
            }
            let store = open_store(&cfg).await?;
            calllock::ops::transcript(&store, &id, gap, json).await
        }
        Command::Outbox { action, all, limit } => {
            let store = open_store(&cfg).await?;
            match action {
                None => calllock::ops::show_outbox(&store, all, limit.clamp(1, 100_000)).await,
                Some(OutboxCommand::Deliver { now, watch }) => {
                    outbox_deliver(&cfg, store, now, watch).await
                }
            }
        }
        Command::Doctor => {
            let source = config::source_of(cli.config.as_deref());
            if calllock::ops::doctor(&cfg, &source).await {
                Ok(())
            } else {
                std::process::exit(1)
            }
        }
        Command::Voice { caller_id } => voice_call(&cfg, caller_id).await,
        Command::Demo { only, brief } => demo::run(&cfg, only.as_deref(), brief).await,
        Command::Replay {
            file,
            caller_id,
            now,
            json,
            no_demo_data,
            llm_latency,
            tool_latency,
            speech_rate,
            call_id,
        } => {
            let mut timing = timing_of(&cfg);
            if let Some(v) = llm_latency {
                timing.llm_latency_s = v;
            }
            if let Some(v) = tool_latency {
                timing.tool_latency_s = v;
            }
            if let Some(v) = speech_rate {
                timing.speech_chars_per_s = v;
            }
            for (name, v) in [
                ("--llm-latency", timing.llm_latency_s),
                ("--tool-latency", timing.tool_latency_s),
            ] {
                if !(v.is_finite() && (0.0..=600.0).contains(&v)) {
                    bail!("{name} must be between 0 and 600 seconds, got {v}");
                }
            }
            if !(timing.speech_chars_per_s.is_finite() && timing.speech_chars_per_s > 0.0) {
                bail!("--speech-rate must be a positive number");
            }
            let bytes = std::fs::read(&file)
                .with_context(|| format!("cannot read replay file {}", file.display()))?;
            let items = script::parse_bytes(&bytes)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let start = match now {
                Some(s) => chrono::DateTime::parse_from_rfc3339(s.trim())
                    .with_context(|| {
                        format!(
                            "--now {s:?} is not an ISO-8601 time like 2026-02-23T10:15:00-06:00"
                        )
                    })?
                    .timestamp() as f64,
                None => chrono::Utc::now().timestamp() as f64,
            };
            let call_id = call_id.unwrap_or_else(|| {
                format!(
                    "replay-{}",
                    file.file_stem()
                        .map(|s| s.to_string_lossy().to_string())
                        .unwrap_or_default()
                )
            });
            let r = demo::replay(
                &cfg,
                items,
                demo::ReplayOptions {
                    caller_id,
                    start,
                    timing,
                    demo_data: !no_demo_data,
                    call_id,
                },
            )
            .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                display::print_outcome_text(&r);
            }
            Ok(())
        }
        Command::Calls { show, since, limit } => {
            let store = open_store(&cfg).await?;
            match show {
                Some(CallsCommand::Show { id, json }) => {
                    let Some(rec) = store.get_call(&id).await? else {
                        bail!("no call with id {id:?} (see `calllock calls`)");
                    };
                    if json {
                        println!("{}", serde_json::to_string_pretty(&rec.record)?);
                    } else {
                        display::print_call_record(&rec);
                    }
                }
                None => {
                    let since = since
                        .map(|s| parse_age(&s).map(|d| chrono::Utc::now() - d))
                        .transpose()?;
                    let calls = store
                        .list_calls(since, limit.clamp(1, 100_000) as u32)
                        .await?;
                    display::print_call_list(&calls);
                }
            }
            Ok(())
        }
    }
}

/// Parse an age like `30m`, `2h`, `7d`, `45s`.
fn parse_age(s: &str) -> Result<chrono::Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: i64 = num
        .parse()
        .with_context(|| format!("--since {s:?}: expected a number and a unit, like 2h"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => bail!("--since {s:?}: the unit must be s, m, h or d"),
    };
    chrono::Duration::try_seconds(n.saturating_mul(secs)).context("--since: duration out of range")
}

fn timing_of(cfg: &config::Config) -> sim::Timing {
    sim::Timing {
        llm_latency_s: cfg.sim.llm_latency_s,
        tool_latency_s: cfg.sim.tool_latency_s,
        speech_chars_per_s: cfg.sim.speech_chars_per_s,
    }
}

async fn open_store(cfg: &config::Config) -> Result<store::Store> {
    calllock::wiring::open_store(cfg).await
}

/// `calllock outbox deliver`.
async fn outbox_deliver(
    cfg: &config::Config,
    store: store::Store,
    now: bool,
    watch: bool,
) -> Result<()> {
    let vendors = calllock::wiring::vendors(cfg, store).await?;
    let post = vendors.post_call(cfg);
    let alive = KeepAlive::start(
        vendors.store.clone(),
        calllock::wiring::worker_name(cfg),
        cfg.instance_lease_s,
    )
    .await?;
    let recovered = calllock::delivery::recover(&post, cfg.instance_lease_s).await?;
    if !recovered.is_empty() {
        eprintln!(
            "recovered {} interrupted call(s): {}",
            recovered.len(),
            recovered.join(", ")
        );
    }
    let worker = vendors.outbox_worker(cfg);
    let clock = calllock::delivery::system_clock();
    let pass_clock: calllock::delivery::Clock = if now {
        // Everything pending is due: look far ahead.
        Arc::new(|| chrono::Utc::now().timestamp() as f64 + 1e9)
    } else {
        clock.clone()
    };
    let r = worker.drain_due(&pass_clock).await?;
    println!(
        "attempted {}: {} delivered, {} failed (retried later with backoff)",
        r.claimed, r.delivered, r.failed
    );
    if watch {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            let _ = stop_tx.send(true);
        });
        eprintln!("watching the outbox; Ctrl-C stops");
        worker
            .run(
                clock,
                std::time::Duration::from_secs_f64(cfg.outbox.poll_s),
                stop_rx,
            )
            .await;
    }
    let left = vendors.store.outbox_pending().await?.len();
    println!("{left} pending");
    alive.stop().await;
    Ok(())
}

fn new_call_id(prefix: &str) -> String {
    let now = chrono::Utc::now();
    format!("{prefix}-{}", now.format("%Y%m%d-%H%M%S-%3f"))
}

async fn chat(cfg: &config::Config, caller_id: String) -> Result<()> {
    let (c, engine) = ConsoleCall::open(cfg, &caller_id, "chat").await?;
    c.banner(&format!(
        "calling {} from {caller_id} (call {}); type as the caller, Ctrl-D hangs up",
        cfg.business.company_name, c.call_id
    ));
    let responder = c.vendors.responder.clone();
    let rx = stdin_lines();
    let mut printer = display::LivePrinter::new(c.color);
    let start = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let journal = calllock::journal::Journal::begin(
        &c.vendors.store,
        &c.call_id,
        &caller_id,
        start,
        c.alive.id(),
    )
    .await
    .context("registering the call")?;
    let mut observer =
        calllock::journal::JournalObserver::new(journal.clone(), start, &mut printer);
    let driver = sim::CallDriver::new(
        engine,
        c.vendors.backend.clone(),
        responder,
        timing_of(cfg),
        start,
        &mut observer,
    );
    let mut outcome = driver.run_interactive(rx).await;
    c.finish(cfg, journal, &mut outcome).await
}

/// Lines typed on stdin (control characters removed); `None` at end of
/// input (Ctrl-D: the caller hangs up).
fn stdin_lines() -> tokio::sync::mpsc::Receiver<Option<String>> {
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
    vendors: calllock::wiring::Vendors,
    call_id: String,
    color: bool,
    /// Stops the background outbox worker and recovery.
    stop_worker: tokio::sync::watch::Sender<bool>,
    /// This process's heartbeat (it owns the call).
    alive: KeepAlive,
}

impl ConsoleCall {
    async fn open(cfg: &config::Config, caller_id: &str, prefix: &str) -> Result<(Self, Engine)> {
        let store = open_store(cfg).await?;
        let vendors = calllock::wiring::vendors(cfg, store).await?;
        // A call a crash left unfinished is recovered first; then the
        // outbox is worked in the background while the call runs.
        let alive = KeepAlive::start(
            vendors.store.clone(),
            calllock::wiring::worker_name(cfg),
            cfg.instance_lease_s,
        )
        .await
        .context("registering this process in the database")?;
        let post = vendors.post_call(cfg);
        match calllock::delivery::recover(&post, cfg.instance_lease_s).await {
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
            calllock::delivery::system_clock(),
            std::time::Duration::from_secs_f64(cfg.outbox.poll_s),
            stop_rx,
        ));
        // Take over the calls of processes that die while this one runs.
        tokio::spawn(calllock::delivery::keep_recovering(
            post,
            cfg.instance_lease_s,
            stop_worker.subscribe(),
        ));
        let call_id = new_call_id(prefix);
        let mut session = Session::new(caller_id.to_string());
        session.call_sid = call_id.clone();
        let engine = Engine::new(session, cfg.business.clone(), cfg.engine.engine_config());
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
        journal: calllock::journal::Journal,
        outcome: &mut sim::Outcome,
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

/// `calllock voice`: the whole real-time pipeline on the console.
async fn voice_call(cfg: &config::Config, caller_id: String) -> Result<()> {
    use calllock::voice_call::{scripted_llm, start_call, CallEnd, CallParts};
    use voice::testkit::{CodecDetector, MockStt, MockTts, Mouth};
    let (c, engine) = ConsoleCall::open(cfg, &caller_id, "voice").await?;
    c.banner(&format!(
        "voice call to {} from {caller_id} (call {}): the real-time pipeline with offline \
         mock STT/TTS; type as the caller (type while the agent talks to interrupt), Ctrl-D \
         hangs up",
        cfg.business.company_name, c.call_id
    ));
    let responder: Arc<dyn Responder> = c.vendors.scripted.clone();
    let start = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let journal = calllock::journal::Journal::begin(
        &c.vendors.store,
        &c.call_id,
        &caller_id,
        start,
        c.alive.id(),
    )
    .await
    .context("registering the call")?;
    let timing = timing_of(cfg);
    let llm = scripted_llm(
        c.vendors.scripted.clone(),
        std::time::Duration::from_secs_f64(timing.llm_latency_s.clamp(0.0, 60.0)),
        std::time::Duration::from_millis(30),
    );
    let tts = MockTts {
        chars_per_second: timing.speech_chars_per_s,
        ..MockTts::default()
    };
    let mut call = start_call(
        CallParts {
            engine,
            backend: c.vendors.backend.clone(),
            responder,
            llm: Arc::new(llm),
            tts: Arc::new(tts),
            stt: MockStt::default(),
            detector: CodecDetector::default(),
            barge_in: voice::stages::turn::BargeInRules::default(),
            start_unix: start,
            journal: Some(journal.clone()),
        },
        calllock::console::ConsoleEar::new(c.color),
    );
    let input = call.pipeline.input().context("pipeline input")?.clone();
    let mouth = Mouth::start(input, 8000, timing.speech_chars_per_s);
    let mut lines = stdin_lines();
    let ended_by = loop {
        tokio::select! {
            line = lines.recv() => match line {
                Some(Some(text)) if !text.trim().is_empty() => mouth.speak(text.trim()),
                Some(Some(_)) => {}
                _ => break sim::EndedBy::Caller,
            },
            _ = call.control.end.wait_for(|e| *e == CallEnd::AgentHungUp) => break sim::EndedBy::Agent,
        }
    };
    mouth.hang_up();
    let stop = call.pipeline.end(std::time::Duration::from_secs(2)).await;
    let _ = call.player.await;
    let out = call
        .control
        .outcome
        .await
        .context("the call left no outcome")?;
    let end = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    eprintln!(
        "{}",
        display::dim(
            &format!(
                "{} hung up; pipeline stopped {}",
                match ended_by {
                    sim::EndedBy::Agent => "agent",
                    _ => "caller",
                },
                if stop.graceful { "cleanly" } else { "by force" }
            ),
            c.color
        )
    );
    let mut outcome = sim::Outcome {
        session: out.session,
        ended_by,
        start_time: start,
        end_time: end,
        tools: Vec::new(),
    };
    c.finish(cfg, journal, &mut outcome).await
}
