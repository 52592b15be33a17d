//! `calllock` — the CallLock phone agent, from the command line.
//!
//! Everything runs offline on the embedded defaults: the HVAC business
//! profile, the SQLite booking backend with demo customers, and the scripted
//! responder. See `calllock --help`.

use calllock::call::driver;
use calllock::cli::{demo, display, script};
use calllock::config;

use anyhow::{bail, Context, Result};
use calllock::instance::KeepAlive;
use clap::{Parser, Subcommand};
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

    /// Log lines as readable text (default) or one JSON object per line
    /// (for a log collector; a call's lines carry its `call_id`). Which
    /// lines: $CALLLOCK_LOG (default `warn`; e.g. `info`).
    #[arg(
        long,
        global = true,
        value_enum,
        env = "CALLLOCK_LOG_FORMAT",
        default_value = "text"
    )]
    log_format: calllock::logging::LogFormat,

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
    /// Be the caller on a real-time voice call: `serve` and a local phone
    /// in one process, every pipeline stage running (turn detection,
    /// barge-in, conversation engine, LLM, sentence aggregation, TTS,
    /// resampling, paced playback). Speech is local (Whisper hears, Flite
    /// speaks; your typed lines are spoken into the line) when installed
    /// (scripts/setup-local-speech, `--features local-speech`), else the
    /// offline speech codec. Agent words print as they play; type while the
    /// agent talks to interrupt it. Ctrl-D hangs up.
    Voice {
        /// The caller ID to call from (see `chat`).
        #[arg(long, value_name = "PHONE", default_value = "+15125559876")]
        caller_id: String,
    },
    /// Print what a WAV file says, utterance by utterance, as Whisper
    /// hears it: a `dial --record` file (left channel the caller, right the
    /// agent), a caller line for `dial --wav`, any PCM16 or µ-law WAV.
    /// Needs local speech (scripts/setup-local-speech, `--features
    /// local-speech`).
    Transcribe {
        /// The WAV file.
        #[arg(value_name = "FILE.wav")]
        file: std::path::PathBuf,
        /// One JSON array of {start, end, channel, speaker, text}.
        #[arg(long)]
        json: bool,
    },
    /// Answer phone calls: the Twilio voice webhook (`/twiml`), the Media
    /// Streams WebSocket (`/ws/twilio`), `/health` and `/metrics`
    /// (Prometheus; `serve.metrics_token` makes it ask for a bearer token). Point a Twilio
    /// number's voice webhook at https://<public host>/twiml. SIGTERM or
    /// Ctrl-C drains: no new calls, live calls get `serve.shutdown_grace_s`,
    /// then are ended politely (a second signal ends them at once).
    Serve {
        /// Port (default: $PORT, else serve.port, else 8765).
        #[arg(long, value_name = "PORT")]
        port: Option<u16>,
        /// Address to bind (default 127.0.0.1). A public address needs
        /// TWILIO_AUTH_TOKEN (signatures) or --allow-unsigned.
        #[arg(long, value_name = "IP")]
        bind: Option<String>,
        /// Listen on a public address without checking Twilio signatures
        /// (only behind a proxy that checks them).
        #[arg(long)]
        allow_unsigned: bool,
    },
    /// The operator's web dashboard on this machine, for someone who makes
    /// calls with `chat`, `demo` or `voice` rather than a phone number:
    /// the calls of this database, live and finished, each call's page,
    /// the outbox, health, and the browser phone (/phone). It is `serve`
    /// bound to 127.0.0.1 (so it answers Twilio's endpoints too, locally).
    /// Sign in with the operator password (`calllock operator password`
    /// sets it).
    Web {
        /// Port (default: $PORT, else serve.port, else 8765).
        #[arg(long, value_name = "PORT")]
        port: Option<u16>,
    },
    /// Ask a running `calllock serve` whether it is healthy (GET /health):
    /// prints its answer; exit status 1 unless it answers 200 within 3 s
    /// (503 `draining` while it shuts down). For container health checks.
    Health {
        /// The server (default: http://127.0.0.1:<$PORT, else serve.port>).
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Call a `calllock serve` as Twilio would: the /twiml webhook, then the
    /// media stream (20 ms audio, marks echoed as audio plays, `clear`
    /// honoured). Type as the caller; agent words print as they play;
    /// Ctrl-D hangs up. Prints the call's outcome when the server shares
    /// this database.
    ///
    /// Speech: when the server hears real speech (local Whisper or
    /// Deepgram), typed lines are spoken by the local voice and the
    /// agent's audio is transcribed by Whisper (needs local speech here
    /// too: scripts/setup-local-speech); otherwise both sides use the
    /// offline speech codec. --voice chooses.
    Dial {
        /// The server (default: http://127.0.0.1:<serve.port>).
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// The caller ID to call from (see `chat`).
        #[arg(long, value_name = "PHONE", default_value = "+15125559876")]
        caller_id: String,
        /// Drive the call with a replay script (see `replay`) instead of the
        /// keyboard.
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        /// With --script: seconds between the agent going quiet and a
        /// caller line with no timing.
        #[arg(long, value_name = "S", default_value_t = 0.5)]
        pause: f64,
        /// Say recorded caller lines instead of typing: a WAV file, or a
        /// folder of them played in name order, each once the agent has
        /// answered (any rate, mono or stereo, PCM16 or µ-law).
        #[arg(long, value_name = "FILE|DIR", conflicts_with = "script")]
        wav: Option<PathBuf>,
        /// Save both sides of the call to a WAV file (left: caller, right:
        /// agent, 8 kHz) for a person to listen to.
        #[arg(long, value_name = "OUT.wav")]
        record: Option<PathBuf>,
        /// How the caller speaks and hears: auto (as the server hears),
        /// codec (the offline speech codec) or local (the local voice and
        /// Whisper).
        #[arg(long, value_name = "MODE", default_value = "auto")]
        voice: String,
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
    /// A voice call's per-turn latency follows the transcript.
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
    /// The operator's sign-in to the dashboard and API of `serve`.
    Operator {
        #[command(subcommand)]
        action: OperatorCommand,
    },
    /// Check the configuration, the database and every configured vendor
    /// (LLM, V2 backend, dashboard) and say what is missing. Exit status 1
    /// when something configured is not working.
    Doctor,
    /// What the business owes its callers: today's emergencies (calls that
    /// ended in the safety script, with address and number), open
    /// callbacks (soonest due first, with the number to call), upcoming
    /// appointments and the newest sales leads.
    Agenda {
        /// At most this many rows per list.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Print one JSON object ({emergencies, callbacks, appointments,
        /// leads}).
        #[arg(long)]
        json: bool,
    },
    /// Load the demo customers into the database (once per database: chat,
    /// demo and serve do it on first run, and never over calls' changes).
    Seed,
    /// Show the effective configuration, check it, or print an example.
    Config {
        /// Print a commented example configuration file.
        #[arg(long)]
        example: bool,
    },
}

#[derive(Subcommand, Debug)]
enum OperatorCommand {
    /// Set the operator's password (at least 8 characters): asked twice
    /// at a terminal, else read from the first line of standard input.
    /// Only its argon2id hash is kept, in the database.
    Password,
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
    /// Show one call: outcome, classification, transcript and, for a
    /// voice call, where each turn's time went (per turn, then p50/p95).
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
    // A server's logs go to a collector: no caller's words in them unless
    // asked for (`CALLLOCK_LOG_TRANSCRIPTS=on`). The demo prints each call
    // as it plays: its dumps would only repeat it.
    use calllock::logging::Transcripts;
    let withheld = matches!(
        cli.command,
        Command::Serve { .. } | Command::Web { .. } | Command::Demo { .. }
    );
    let (transcripts, transcripts_warning) = Transcripts::from_env(
        std::env::var("CALLLOCK_LOG_TRANSCRIPTS").ok().as_deref(),
        if withheld {
            Transcripts::Withheld
        } else {
            Transcripts::Logged
        },
    );
    let warning = calllock::logging::init(
        std::env::var("CALLLOCK_LOG").ok().as_deref(),
        transcripts,
        cli.log_format,
        std::io::stderr,
    );
    for w in [warning, transcripts_warning].into_iter().flatten() {
        eprintln!("{w}");
    }
    // The server handles many calls at once: all cores. Everything else
    // is one conversation on one thread.
    let rt = if matches!(cli.command, Command::Serve { .. }) {
        // The playout threads pace every call's audio; the rest of the
        // server runs a little behind them (serve::playout): every thread
        // started from here on inherits this thread's priority. Their
        // number is the configuration's (read again, with any error
        // reported, when the server starts).
        let threads = calllock::config::load(cli.config.as_deref())
            .map_or(0, |c| c.serve.playout_threads as usize);
        calllock::serve::playout::start(threads);
        calllock::serve::playout::run_behind_playout();
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    } else if matches!(cli.command, Command::Web { .. }) {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let rt = match rt {
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
            let store = calllock::wiring::open_store(&cfg).await?;
            let now = chrono::Utc::now();
            let emergencies = calllock::call::record::emergencies_since(
                &store,
                calllock::call::record::start_of_day(&cfg.business, now),
                limit,
            )
            .await?;
            let callbacks = store.open_callbacks(limit).await?;
            let appointments = store
                .upcoming_appointments(chrono::Utc::now().timestamp(), limit)
                .await?;
            let leads = store.recent_sales_leads(limit).await?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "emergencies": emergencies,
                        "callbacks": callbacks,
                        "appointments": appointments,
                        "leads": leads,
                    }))?
                );
            } else {
                display::print_agenda(
                    &cfg.business,
                    &emergencies,
                    &callbacks,
                    &appointments,
                    &leads,
                );
            }
            Ok(())
        }
        Command::Seed => {
            let store = calllock::wiring::open_store(&cfg).await?;
            let had = store
                .demo_seeded_at()
                .await
                .context("reading the demo data's record")?;
            store::EmbeddedBackend::new(store, cfg.business.clone())
                .seed_demo(chrono::Utc::now())
                .await
                .context("seeding demo data")?;
            match had {
                // Issue 23: written once; what calls changed since stays.
                Some(at) => println!(
                    "{} already holds the demo customers (loaded {}); left as calls changed them",
                    cfg.database.display(),
                    chrono::DateTime::from_timestamp(at as i64, 0)
                        .map(|t| t
                            .with_timezone(&cfg.business.tz())
                            .format("%Y-%m-%d %H:%M %Z")
                            .to_string())
                        .unwrap_or_default()
                ),
                None => println!("demo customers loaded into {}", cfg.database.display()),
            }
            for (phone, what) in store::DEMO_CUSTOMERS {
                println!("  {phone}  {what}");
            }
            Ok(())
        }
        Command::Chat { caller_id } => calllock::cli::console::chat(&cfg, caller_id).await,
        Command::Transcript { id, gap, json } => {
            if !(gap.is_finite() && gap > 0.0) {
                bail!("--gap must be a positive number of seconds");
            }
            let store = calllock::wiring::open_store(&cfg).await?;
            calllock::cli::ops::transcript(&store, &id, gap, json).await
        }
        Command::Outbox { action, all, limit } => {
            let store = calllock::wiring::open_store(&cfg).await?;
            match action {
                None => calllock::cli::ops::show_outbox(&store, all, limit.clamp(1, 100_000)).await,
                Some(OutboxCommand::Deliver { now, watch }) => {
                    outbox_deliver(&cfg, store, now, watch).await
                }
            }
        }
        Command::Doctor => {
            let source = config::source_of(cli.config.as_deref());
            if calllock::cli::ops::doctor(&cfg, &source).await {
                Ok(())
            } else {
                std::process::exit(1)
            }
        }
        Command::Voice { caller_id } => calllock::cli::console::voice(&cfg, caller_id).await,
        Command::Operator {
            action: OperatorCommand::Password,
        } => {
            let store = calllock::wiring::open_store(&cfg).await?;
            calllock::cli::ops::set_operator_password(&store).await
        }
        Command::Health { url } => {
            let url = url.unwrap_or_else(|| format!("http://127.0.0.1:{}", cfg.serve.port));
            calllock::cli::ops::health(&url).await
        }
        Command::Transcribe { file, json } => {
            calllock::cli::transcribe::run(&cfg, &file, json).await
        }
        Command::Serve {
            port,
            bind,
            allow_unsigned,
        } => {
            if let Some(p) = port {
                cfg.serve.port = p;
            }
            if let Some(b) = bind {
                cfg.serve.bind = b;
            }
            calllock::serve::run(cfg, calllock::serve::ServeOptions { allow_unsigned }).await
        }
        Command::Web { port } => {
            if let Some(p) = port {
                cfg.serve.port = p;
            }
            cfg.serve.bind = "127.0.0.1".into();
            let opts = calllock::serve::ServeOptions {
                allow_unsigned: false,
            };
            calllock::serve::run(cfg, opts).await
        }
        Command::Dial {
            url,
            caller_id,
            script,
            pause,
            wav,
            record,
            voice,
        } => {
            if !(pause.is_finite() && (0.0..=60.0).contains(&pause)) {
                bail!("--pause must be between 0 and 60 seconds");
            }
            let url = url.unwrap_or_else(|| format!("http://127.0.0.1:{}", cfg.serve.port));
            let drive = match (script, wav) {
                (None, Some(path)) => calllock::dial::Drive::Recordings {
                    clips: calllock::dial::recordings::load_clips(&path)?,
                    pause: std::time::Duration::from_secs_f64(pause),
                },
                (None, None) => {
                    calllock::dial::Drive::Keyboard(calllock::cli::console::stdin_lines())
                }
                (Some(file), _) => {
                    let bytes = std::fs::read(&file)
                        .with_context(|| format!("cannot read script {}", file.display()))?;
                    let items = script::parse_bytes(&bytes)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
                    calllock::dial::Drive::Script {
                        items,
                        pause: std::time::Duration::from_secs_f64(pause),
                    }
                }
            };
            let store = calllock::wiring::open_store(&cfg).await.ok();
            let mut opts = calllock::cli::console::dial_options(&cfg, url, caller_id);
            opts.speech = calllock::dial::choose_speech(&cfg, &opts.url, &voice).await?;
            opts.record = record;
            calllock::dial::dial(&opts, drive, store.as_ref())
                .await
                .map(|_| ())
        }
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
            let mut timing = driver::Timing::of(&cfg);
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
                display::print_outcome_text(&calllock::call::record::FinishedCall::from_stored(
                    &r,
                )?);
            }
            Ok(())
        }
        Command::Calls { show, since, limit } => {
            let store = calllock::wiring::open_store(&cfg).await?;
            match show {
                Some(CallsCommand::Show { id, json }) => {
                    let Some(rec) = store.get_call(&id).await? else {
                        bail!("no call with id {id:?} (see `calllock calls`)");
                    };
                    let turns = calllock::cli::ops::call_latency(&store, &id).await?;
                    if json {
                        let mut r = rec.record.clone();
                        if let Some(o) = r.as_object_mut().filter(|_| !turns.is_empty()) {
                            o.insert("latency".into(), calllock::call::latency::to_json(&turns));
                        }
                        println!("{}", serde_json::to_string_pretty(&r)?);
                    } else {
                        display::print_call_record(&cfg.business, &rec);
                        print!("{}", calllock::call::latency::render(&turns));
                    }
                }
                None => {
                    let since = since
                        .map(|s| parse_age(&s).map(|d| chrono::Utc::now() - d))
                        .transpose()?;
                    let calls = store
                        .list_calls(since, limit.clamp(1, 100_000) as u32)
                        .await?;
                    display::print_call_list(&cfg.business, &calls);
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
    let recovered = calllock::call::delivery::recover(&post, cfg.instance_lease_s).await?;
    if !recovered.is_empty() {
        eprintln!(
            "recovered {} interrupted call(s): {}",
            recovered.len(),
            recovered.join(", ")
        );
    }
    let worker = vendors.outbox_worker(cfg);
    let clock = calllock::call::delivery::system_clock();
    let pass_clock: calllock::call::delivery::Clock = if now {
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
