//! `calllock` — the CallLock phone agent, from the command line.
//!
//! Everything runs offline on the embedded defaults: the HVAC business
//! profile, the SQLite booking backend with demo customers, and the scripted
//! responder. See `calllock --help`.

use calllock::{config, demo, display, record, script, sim};

use agent::backend::Backend;
use agent::engine::Engine;
use agent::responder::{Responder, ScriptedResponder};
use agent::Session;
use anyhow::{bail, Context, Result};
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
    let filter = std::env::var("CALLLOCK_LOG").unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .init();
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
                println!("# effective configuration (valid)");
                println!("database = {:?}", cfg.database.display().to_string());
                println!("{:#?}", cfg.business);
                println!("{:#?}", cfg.engine);
                println!("{:#?}", cfg.sim);
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
    store::Store::open(&cfg.database)
        .await
        .with_context(|| format!("opening the database {}", cfg.database.display()))
}

/// The embedded backend over `store`, seeded with the demo customers.
async fn embedded_backend(cfg: &config::Config, store: store::Store) -> Result<Arc<dyn Backend>> {
    let backend = store::EmbeddedBackend::new(store, cfg.business.clone());
    backend
        .seed_demo(chrono::Utc::now())
        .await
        .context("seeding demo data")?;
    Ok(Arc::new(backend))
}

fn new_call_id(prefix: &str) -> String {
    let now = chrono::Utc::now();
    format!("{prefix}-{}", now.format("%Y%m%d-%H%M%S-%3f"))
}

async fn chat(cfg: &config::Config, caller_id: String) -> Result<()> {
    let c = ConsoleCall::open(cfg, &caller_id, "chat").await?;
    c.banner(&format!(
        "calling {} from {caller_id} (call {}); type as the caller, Ctrl-D hangs up",
        cfg.business.company_name, c.call_id
    ));
    let responder: Arc<dyn Responder> = c.scripted;
    let rx = stdin_lines();
    let mut printer = display::LivePrinter::new(c.color);
    let start = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let driver = sim::CallDriver::new(
        c.engine,
        c.backend.clone(),
        responder,
        timing_of(cfg),
        start,
        &mut printer,
    );
    let mut outcome = driver.run_interactive(rx).await;
    save_and_report(&c.store, c.backend.as_ref(), &mut outcome, c.color).await
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
    store: store::Store,
    backend: Arc<dyn agent::backend::Backend>,
    scripted: Arc<ScriptedResponder>,
    engine: Engine,
    call_id: String,
    color: bool,
}

impl ConsoleCall {
    async fn open(cfg: &config::Config, caller_id: &str, prefix: &str) -> Result<Self> {
        let store = open_store(cfg).await?;
        let backend = embedded_backend(cfg, store.clone()).await?;
        let call_id = new_call_id(prefix);
        let mut session = Session::new(caller_id.to_string());
        session.call_sid = call_id.clone();
        Ok(ConsoleCall {
            store,
            backend,
            scripted: Arc::new(ScriptedResponder::new(cfg.business.clone())),
            engine: Engine::new(session, cfg.business.clone(), cfg.engine.engine_config()),
            call_id,
            color: std::io::stdout().is_terminal(),
        })
    }

    fn banner(&self, text: &str) {
        eprintln!("{}", display::dim(text, self.color));
    }
}

/// `calllock voice`: the whole real-time pipeline on the console.
async fn voice_call(cfg: &config::Config, caller_id: String) -> Result<()> {
    use calllock::voice_call::{scripted_llm, start_call, CallEnd, CallParts};
    use voice::testkit::{CodecDetector, MockStt, MockTts, Mouth};
    let c = ConsoleCall::open(cfg, &caller_id, "voice").await?;
    c.banner(&format!(
        "voice call to {} from {caller_id} (call {}): the real-time pipeline with offline \
         mock STT/TTS; type as the caller (type while the agent talks to interrupt), Ctrl-D \
         hangs up",
        cfg.business.company_name, c.call_id
    ));
    let responder: Arc<dyn Responder> = c.scripted.clone();
    let start = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let timing = timing_of(cfg);
    let llm = scripted_llm(
        c.scripted.clone(),
        std::time::Duration::from_secs_f64(timing.llm_latency_s.clamp(0.0, 60.0)),
        std::time::Duration::from_millis(30),
    );
    let tts = MockTts {
        chars_per_second: timing.speech_chars_per_s,
        ..MockTts::default()
    };
    let mut call = start_call(
        CallParts {
            engine: c.engine,
            backend: c.backend.clone(),
            responder,
            llm: Arc::new(llm),
            tts: Arc::new(tts),
            stt: MockStt::default(),
            detector: CodecDetector::default(),
            barge_in: voice::stages::turn::BargeInRules::default(),
            start_unix: start,
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
    save_and_report(&c.store, c.backend.as_ref(), &mut outcome, c.color).await
}

/// Keep a promised callback, classify, save and print a finished call.
async fn save_and_report(
    store: &store::Store,
    backend: &dyn agent::backend::Backend,
    outcome: &mut sim::Outcome,
    color: bool,
) -> Result<()> {
    record::keep_callback_promise(outcome, backend).await;
    let fc = record::classify(outcome, "");
    record::save(store, outcome, &fc).await?;
    display::print_summary(&fc, color);
    eprintln!(
        "{}",
        display::dim(
            &format!("saved; see `calllock calls show {}`", fc.call_id),
            color
        )
    );
    Ok(())
}
