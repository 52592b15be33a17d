//! Operator commands: `calllock transcript` (with the call's per-turn
//! latency), `calllock outbox`, `calllock doctor`.

use crate::call::delivery::transcript_dump;
use crate::call::journal;
use crate::call::outcome::{Ending, Outcome};
use crate::call::record::FinishedCall;
use crate::config::{BackendKind, Config};
use agent::transcript::format_transcript;
use anyhow::{bail, Result};
use providers::probe::{http_get, Probe};
use serde_json::Value;
use std::time::Duration;

/// The §7.9 dump of a stored call: from its event log when it has one (a
/// live or interrupted call included), else from its saved record.
pub async fn call_dump(store: &store::Store, id: &str) -> Result<Option<Value>> {
    let events = store.events(id).await?;
    let summary = store.call_summary(id).await?;
    let started = summary
        .as_ref()
        .map(|c| c.started_at.timestamp_millis() as f64 / 1000.0);
    if !events.is_empty() {
        let started = started.unwrap_or_else(|| events.first().map(|e| e.at_unix).unwrap_or(0.0));
        return Ok(Some(transcript_dump(&journal::rebuild(
            id, &events, started,
        ))));
    }
    let Some(rec) = store.get_call(id).await? else {
        return Ok(None);
    };
    // The saved record, read through the writer's types (none: a call
    // without one, or one that cannot be read — the calls table's phone).
    let saved = FinishedCall::from_stored(&rec.record).ok();
    let mut session = match &saved {
        Some(r) => r.session.clone(),
        None => agent::Session::new(rec.phone.clone()),
    };
    session.call_sid = id.to_string();
    if session.phone_number.is_empty() {
        session.phone_number = rec.phone.clone();
    }
    let start = rec.started_at.timestamp_millis() as f64 / 1000.0;
    let end = rec
        .ended_at
        .map(|e| e.timestamp_millis() as f64 / 1000.0)
        .unwrap_or(start);
    let mut dump = transcript_dump(&Outcome::of_session(session, Ending::Caller, start, end));
    // The saved record knows the duration to the tenth of a second.
    if let (Some(r), Value::Object(o)) = (&saved, &mut dump) {
        o.insert("duration_s".into(), r.duration_s.into());
    }
    Ok(Some(dump))
}

/// Where each answered turn of a call went, from its event log (empty for
/// a call without audio: `chat`, replays).
pub async fn call_latency(
    store: &store::Store,
    id: &str,
) -> Result<Vec<crate::call::latency::TurnLatency>> {
    Ok(crate::call::latency::from_events(&store.events(id).await?))
}

/// `calllock transcript ID`.
pub async fn transcript(store: &store::Store, id: &str, gap_s: f64, json_out: bool) -> Result<()> {
    let Some(dump) = call_dump(store, id).await? else {
        bail!("no call with id {id:?} (see `calllock calls`)");
    };
    if json_out {
        println!("{}", serde_json::to_string_pretty(&dump)?);
        return Ok(());
    }
    if let Some(status) = store.call_status(id).await? {
        if status != store::CallStatus::Completed {
            println!("status: {status}");
        }
    }
    // Stored caller text: printable on the way out too.
    println!(
        "{}",
        agent::printable::printable_text(&format_transcript(&dump, gap_s))
    );
    let turns = call_latency(store, id).await?;
    print!("{}", crate::call::latency::render(&turns));
    Ok(())
}

fn age(now: f64, then: f64) -> String {
    let d = (now - then).max(0.0);
    if d < 90.0 {
        format!("{d:.0}s")
    } else if d < 5400.0 {
        format!("{:.0}m", d / 60.0)
    } else if d < 172_800.0 {
        format!("{:.1}h", d / 3600.0)
    } else {
        format!("{:.1}d", d / 86_400.0)
    }
}

/// `calllock outbox`: what is waiting to be delivered, and why.
pub async fn show_outbox(store: &store::Store, all: bool, limit: i64) -> Result<()> {
    let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let items = if all {
        store
            .outbox_all(limit.clamp(1, u32::MAX as i64) as u32)
            .await?
    } else {
        store.outbox_pending().await?
    };
    if items.is_empty() {
        println!(
            "{}",
            if all {
                "the outbox is empty"
            } else {
                "nothing pending: every delivery was accepted"
            }
        );
        return Ok(());
    }
    println!(
        "{:<8} {:<9} {:<28} {:>4}  {:<12} TARGET / LAST ERROR",
        "STATUS", "KIND", "CALL", "TRY", "NEXT"
    );
    for it in items.iter().take(limit.max(1) as usize) {
        let next = if it.status == store::OutboxStatus::Pending {
            if it.next_attempt_unix <= now {
                "due now".to_string()
            } else {
                format!("in {}", age(it.next_attempt_unix, now))
            }
        } else {
            it.delivered_unix
                .map(|d| format!("{} ago", age(now, d)))
                .unwrap_or_default()
        };
        println!(
            "{:<8} {:<9} {:<28} {:>4}  {:<12} {}",
            it.status, it.kind, it.call_id, it.attempts, next, it.target_url
        );
        if !it.last_error.is_empty() && it.status != store::OutboxStatus::Delivered {
            println!("{:>66}└ {}", "", it.last_error);
        }
    }
    let pending = items
        .iter()
        .filter(|i| i.status == store::OutboxStatus::Pending)
        .count();
    println!(
        "{pending} pending{}",
        if pending > 0 {
            "; a running CallLock retries them, or run `calllock outbox deliver`"
        } else {
            ""
        }
    );
    Ok(())
}

/// One line of the doctor's report.
struct Check {
    ok: bool,
    what: &'static str,
    detail: String,
}

fn probe_text(p: &Probe, what_401: &str) -> (bool, String) {
    match p {
        Probe::Answered(s) if (200..300).contains(s) => (true, format!("reachable (HTTP {s})")),
        Probe::Answered(401) | Probe::Answered(403) => {
            (false, format!("reachable, but {what_401}"))
        }
        Probe::Answered(s) if *s >= 500 => (false, format!("reachable, but failing (HTTP {s})")),
        Probe::Answered(s) => (true, format!("reachable (HTTP {s})")),
        Probe::Unreachable(why) => (false, format!("unreachable: {why}")),
    }
}

/// Speech recognition: Deepgram's socket opened with the key, or the
/// offline codec.
async fn speech_check(cfg: &Config) -> Check {
    if !cfg.deepgram.enabled() {
        return Check {
            ok: true,
            what: "stt",
            detail: "not configured: callers are heard through the offline speech codec (set DEEPGRAM_API_KEY for Deepgram)".into(),
        };
    }
    let live = crate::serve::speech::deepgram(cfg);
    let base = cfg.deepgram.url.trim();
    match providers::deepgram::live::probe(&live).await {
        Ok(()) => Check {
            ok: true,
            what: "stt",
            detail: format!(
                "Deepgram at {base}, model {}: the key opens a socket",
                cfg.deepgram.model
            ),
        },
        Err(why) => Check {
            ok: false,
            what: "stt",
            detail: format!("Deepgram at {base}: {why} (DEEPGRAM_API_KEY)"),
        },
    }
}

/// The agent's voices: Inworld probed with its key, Aura's endpoint with
/// the Deepgram key (a GET that creates nothing), the offline voice last.
async fn voice_checks(cfg: &Config) -> Vec<Check> {
    let mut out = Vec::new();
    if cfg.inworld.enabled() {
        let iw = crate::serve::speech::inworld(cfg);
        let base = iw.base_url.clone();
        out.push(match providers::inworld::probe(&iw).await {
            Ok(what) => Check {
                ok: true,
                what: "tts",
                detail: format!("Inworld at {base}, voice {}: {what}", cfg.inworld.voice_id),
            },
            Err(why) => Check {
                ok: false,
                what: "tts",
                detail: format!("Inworld at {base}: {why}"),
            },
        });
    }
    if cfg.deepgram.enabled() {
        let base = cfg.deepgram.tts_url.trim().trim_end_matches('/');
        let auth = format!("Token {}", cfg.deepgram.api_key.trim());
        let p = http_get(
            &format!("{base}/v1/projects"),
            &[("Authorization", auth.as_str())],
            Duration::from_secs(5),
        )
        .await;
        let (ok, detail) = probe_text(&p, "the key was refused (DEEPGRAM_API_KEY)");
        out.push(Check {
            ok,
            what: "tts",
            detail: format!(
                "Deepgram Aura at {base}, voice {} (the key checked, not the voice name): {detail}",
                cfg.deepgram.tts_voice
            ),
        });
    }
    let chain = match (cfg.inworld.enabled(), cfg.deepgram.enabled()) {
        (true, true) => "Inworld, then Aura, then the offline voice",
        (true, false) => "Inworld, then the offline voice (set DEEPGRAM_API_KEY for Aura as the fallback)",
        (false, true) => "Aura, then the offline voice (set INWORLD_API_KEY for Inworld first)",
        (false, false) => "the offline speech codec only (set INWORLD_API_KEY and/or DEEPGRAM_API_KEY for real voices)",
    };
    out.push(Check {
        ok: true,
        what: "tts",
        detail: format!("the agent speaks with {chain}"),
    });
    out.push(local_speech_check(cfg));
    out
}

/// Local speech: built in? the Whisper model present and whole? Not a
/// failure when it is optional (`speech.local = "auto"`) — then it says
/// what the calls get instead and what to run.
fn local_speech_check(cfg: &Config) -> Check {
    use crate::local_speech::HOW_TO_INSTALL;
    let s = &cfg.speech;
    let required = s.local == "on";
    let check = |ok: bool, detail: String| Check {
        ok: ok || !required,
        what: "speech",
        detail,
    };
    if s.local == "off" {
        return check(true, "local speech is off (speech.local = \"off\")".into());
    }
    let (whisper, flite) = speech::install::built_with();
    if !(whisper && flite) {
        return check(
            false,
            format!("local speech is not built in: calls without vendor keys use the offline speech codec ({HOW_TO_INSTALL})"),
        );
    }
    let model = s.whisper_model_path();
    match speech::convert::GgmlModel::open(&model).and_then(|m| m.validate().map(|()| m)) {
        Ok(m) => check(
            true,
            format!(
                "local speech: Whisper model {} ({}, {} mel bands, {} tokens) and the Flite voice",
                model.display(),
                m.kind().map_or("unknown type".into(), |k| format!("{k:?}")),
                m.hparams.n_mels,
                m.hparams.n_vocab
            ),
        ),
        Err(e) => check(
            false,
            format!(
                "local speech: the Whisper model {} cannot be used: {e} ({HOW_TO_INSTALL})",
                model.display()
            ),
        ),
    }
}

/// `calllock doctor`: config, database, each configured vendor; plain
/// words about what is missing. Returns whether everything is healthy.
/// `calllock operator password`: ask for the password (twice, unechoed,
/// at a terminal; else the first line of standard input) and keep its
/// argon2id hash in `store`.
pub async fn set_operator_password(store: &store::Store) -> Result<()> {
    use std::io::{BufRead, IsTerminal};
    let password = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("New operator password: ")?;
        let again = rpassword::prompt_password("Again: ")?;
        if first != again {
            bail!("the two passwords differ; nothing was changed");
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        line.trim_end_matches(['\r', '\n']).to_string()
    };
    let hash =
        tokio::task::spawn_blocking(move || crate::operator::hash_password(&password)).await??;
    let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    store.set_operator_password_hash(&hash, now).await?;
    println!("operator password set (argon2id hash in the database); sign in at /login");
    Ok(())
}

/// `calllock health`: ask a running server's `/health` (a container's
/// health check, a deploy script). Prints its answer; an error (exit 1)
/// unless it says 200 within 3 s.
pub async fn health(url: &str) -> Result<()> {
    let url = format!("{}/health", url.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()?;
    let r = match client.get(&url).send().await {
        Ok(r) => r,
        Err(e) => bail!("{url}: no answer ({e})"),
    };
    let status = r.status();
    let body = r.text().await.unwrap_or_default();
    if !status.is_success() {
        bail!("{url} answered {status}: {}", body.trim());
    }
    println!("{}", body.trim());
    Ok(())
}

/// Whether call recordings can be kept where the configuration says.
fn recordings_check(cfg: &Config) -> Check {
    if !cfg.recording.enabled {
        return Check {
            ok: true,
            what: "recordings",
            detail: "off (recording.enabled = false): calls are not recorded".into(),
        };
    }
    let dir = cfg.recording.dir_for(&cfg.database);
    let probe = dir.join(".doctor-probe");
    let writable = std::fs::create_dir_all(&dir)
        .and_then(|_| std::fs::write(&probe, b"probe"))
        .and_then(|_| std::fs::remove_file(&probe));
    match writable {
        Ok(()) => {
            let (count, bytes) = std::fs::read_dir(&dir)
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.path().extension().is_some_and(|x| x == "wav"))
                        .fold((0u64, 0u64), |(n, b), e| {
                            (n + 1, b + e.metadata().map_or(0, |m| m.len()))
                        })
                })
                .unwrap_or_default();
            let keep = match cfg.recording.keep_days {
                0 => "kept forever".to_string(),
                d => format!("kept {d} days"),
            };
            Check {
                ok: true,
                what: "recordings",
                detail: format!(
                    "{}: writable; {count} recordings ({:.1} MB), {keep}",
                    dir.display(),
                    bytes as f64 / 1e6
                ),
            }
        }
        Err(e) => Check {
            ok: false,
            what: "recordings",
            detail: format!(
                "{}: cannot write there ({e}); set recording.dir (CALLLOCK_RECORDINGS_DIR) \
                 or CALLLOCK_RECORDING=off",
                dir.display()
            ),
        },
    }
}

pub async fn doctor(cfg: &Config, config_source: &str) -> bool {
    let mut checks = vec![Check {
        ok: true,
        what: "config",
        detail: format!("valid ({config_source})"),
    }];
    let db = cfg.database.to_string_lossy().to_string();
    match crate::wiring::open_store(cfg).await {
        Ok(store) => {
            let pending = store.outbox_pending().await.map(|v| v.len()).unwrap_or(0);
            let interrupted = store
                .count_calls_with_status(store::CallStatus::Interrupted)
                .await
                .unwrap_or(0);
            checks.push(Check {
                ok: true,
                what: "database",
                detail: format!(
                    "{} ({:?}): open, schema up to date; {pending} deliveries pending, {interrupted} interrupted calls",
                    store::redact_url(&db),
                    store.dialect()
                ),
            });
        }
        Err(e) => checks.push(Check {
            ok: false,
            what: "database",
            detail: format!("{e:#}"),
        }),
    }
    checks.push(recordings_check(cfg));
    let t = Duration::from_secs(5);
    if cfg.llm.enabled() {
        let base = cfg.llm.effective_base_url().trim_end_matches('/');
        let auth = format!("Bearer {}", cfg.llm.api_key.trim());
        let headers: Vec<(&str, &str)> = if cfg.llm.api_key.trim().is_empty() {
            vec![]
        } else {
            vec![("Authorization", auth.as_str())]
        };
        let p = http_get(&format!("{base}/models"), &headers, t).await;
        let (ok, detail) = probe_text(&p, "the API key was refused (llm.api_key / OPENAI_API_KEY)");
        checks.push(Check {
            ok,
            what: "llm",
            detail: format!("{} model {}: {detail}", base, cfg.llm.model),
        });
    } else {
        checks.push(Check {
            ok: true,
            what: "llm",
            detail: "not configured: the scripted responder speaks (set llm.base_url or OPENAI_API_KEY for an LLM)".into(),
        });
    }
    match cfg.backend.kind {
        BackendKind::Embedded => checks.push(Check {
            ok: true,
            what: "backend",
            detail:
                "embedded: bookings go to this database (set V2_BACKEND_URL for the V2 backend)"
                    .into(),
        }),
        BackendKind::V2 => {
            let base = cfg.backend.url.trim().trim_end_matches('/');
            let key = cfg.backend.api_key.trim().to_string();
            let headers: Vec<(&str, &str)> = if key.is_empty() {
                vec![]
            } else {
                vec![("X-API-Key", key.as_str())]
            };
            let p = http_get(base, &headers, t).await;
            let (ok, mut detail) = probe_text(&p, "the API key was refused (V2_API_KEY)");
            if key.is_empty() {
                detail.push_str("; no V2_API_KEY set (the backend will answer 401)");
            }
            checks.push(Check {
                ok,
                what: "backend",
                detail: format!("V2 at {base}: {detail}"),
            });
        }
    }
    if cfg.dashboard.enabled() {
        let d = &cfg.dashboard;
        for (what, url) in [
            ("dashboard jobs", &d.jobs_url),
            ("dashboard calls", &d.calls_url),
            ("dashboard alerts", &d.alerts_url),
        ] {
            if url.trim().is_empty() {
                checks.push(Check {
                    ok: what != "dashboard calls",
                    what: "dashboard",
                    detail: format!("{what}: no URL set"),
                });
                continue;
            }
            // Authenticated as a delivery is (the shared secret and the
            // signature of the — empty — body), but a GET: nothing is
            // created on the dashboard.
            let signature = providers::dashboard::sign(&d.webhook_secret, b"");
            let headers = [
                ("X-Webhook-Secret", d.webhook_secret.as_str()),
                ("X-Webhook-Signature", signature.as_str()),
            ];
            let p = http_get(url.trim(), &headers, t).await;
            let (ok, detail) = probe_text(&p, "it refused our secret (DASHBOARD_WEBHOOK_SECRET)");
            checks.push(Check {
                ok,
                what: "dashboard",
                detail: format!("{what} {}: {detail}", url.trim()),
            });
        }
        if d.user_email.trim().is_empty() {
            checks.push(Check {
                ok: true,
                what: "dashboard",
                detail:
                    "no user_email set (DASHBOARD_USER_EMAIL): records are sent without an owner"
                        .into(),
            });
        }
    } else {
        checks.push(Check {
            ok: true,
            what: "dashboard",
            detail: "not configured: call records stay in the database only (set DASHBOARD_JOBS_URL, DASHBOARD_CALLS_URL and DASHBOARD_WEBHOOK_SECRET)".into(),
        });
    }
    checks.push(speech_check(cfg).await);
    checks.extend(voice_checks(cfg).await);
    let mut healthy = true;
    for c in &checks {
        healthy &= c.ok;
        println!(
            "{} {:<10} {}",
            if c.ok { "ok  " } else { "FAIL" },
            c.what,
            c.detail
        );
    }
    println!(
        "{}",
        if healthy {
            "everything configured is reachable"
        } else {
            "some checks failed (see FAIL above)"
        }
    );
    healthy
}
