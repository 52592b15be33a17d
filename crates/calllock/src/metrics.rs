//! The operator's metrics: what `GET /metrics` of `calllock serve` exports,
//! in Prometheus' text format.
//!
//! Every crate records through the `metrics` facade (a no-op until a
//! recorder is installed, so the CLI and tests that never serve pay
//! nothing); [`handle`] installs the Prometheus recorder once per process
//! and describes every metric here, so this table is the whole catalogue:
//!
//! | metric | kind | labels | what |
//! |---|---|---|---|
//! | `calllock_live_calls` | gauge | | calls on the line now |
//! | `calllock_calls_total` | counter | `final_state`, `ended_by` | finished calls by outcome |
//! | `calllock_calls_refused_total` | counter | `reason` (`full`, `draining`) | calls turned away |
//! | `calllock_call_duration_seconds` | histogram | | length of finished calls |
//! | `calllock_turn_seconds` | histogram | `milestone` | from the caller stopping to each milestone of the reply: `stt_final`, `llm_first_token`, `tts_first_audio`, `first_outbound`, `first_heard` |
//! | `calllock_barge_ins_total` | counter | | the agent was talked over and stopped (the turn stage's decision) |
//! | `calllock_caller_frames_dropped_total` | counter | | caller audio frames dropped as they arrive (the pipeline fell behind) |
//! | `calllock_player_frames_total` | counter | | agent audio frames sent |
//! | `calllock_player_frames_late_total` | counter | | … sent 20 ms or more late |
//! | `calllock_stt_reconnects_total` | counter | | Deepgram sockets reopened mid-call |
//! | `calllock_stt_not_heard_total` | counter | `ears` | callers asked to say it again |
//! | `calllock_stt_lost_total` | counter | | calls where Deepgram became unusable |
//! | `calllock_stt_fallbacks_total` | counter | | … and Whisper heard the rest |
//! | `calllock_tts_fallbacks_total` | counter | `voice` (`fallback`, `last_resort`) | lines handed to a voice other than the primary (a line the fallback fails counts under both) |
//! | `calllock_tts_breaker_open` | gauge | | 1 while lines skip the primary voice (breaker open, or half-open with a probe in flight) |
//! | `calllock_llm_fallbacks_total` | counter | `kind` | LLM answers replaced by the offline responder |
//! | `calllock_outbox_depth` | gauge | | deliveries waiting (dashboard, alerts) |
//! | `calllock_outbox_oldest_age_seconds` | gauge | | age of the oldest waiting delivery |
//! | `calllock_recording_dropped_total` | counter | | half seconds of call audio left out of recordings (the disk fell behind) |
//! | `calllock_stream_messages_ignored_total` | counter | `reason` (`not_json`, `foreign_stream`, …: `WireError::kind`) | Media Streams messages a call's socket skipped |
//!
//! The gauges and the player counters are read when scraped ([`render`]);
//! the rest are recorded where they happen.

use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;

pub const LIVE_CALLS: &str = "calllock_live_calls";
pub const CALLS: &str = "calllock_calls_total";
pub const CALLS_REFUSED: &str = "calllock_calls_refused_total";
pub const CALL_SECONDS: &str = "calllock_call_duration_seconds";
pub const TURN_SECONDS: &str = "calllock_turn_seconds";
pub const BARGE_INS: &str = "calllock_barge_ins_total";
pub const CALLER_FRAMES_DROPPED: &str = "calllock_caller_frames_dropped_total";
pub const PLAYER_FRAMES: &str = "calllock_player_frames_total";
pub const PLAYER_FRAMES_LATE: &str = "calllock_player_frames_late_total";
pub const STT_FALLBACKS: &str = "calllock_stt_fallbacks_total";
pub const TTS_BREAKER_OPEN: &str = "calllock_tts_breaker_open";
pub const OUTBOX_DEPTH: &str = "calllock_outbox_depth";
pub const OUTBOX_OLDEST_AGE: &str = "calllock_outbox_oldest_age_seconds";
pub const RECORDING_DROPPED: &str = "calllock_recording_dropped_total";
pub const STREAM_MESSAGES_IGNORED: &str = "calllock_stream_messages_ignored_total";

/// Histogram buckets of turn milestones (seconds).
const TURN_BUCKETS: &[f64] = &[0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0];
/// Histogram buckets of call lengths (seconds).
const CALL_BUCKETS: &[f64] = &[10.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0, 1200.0];

/// The process's Prometheus recorder, installed on first use; `None` when
/// another recorder was installed first (metrics then go there).
pub fn handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let built = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(TURN_SECONDS.into()), TURN_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Full(CALL_SECONDS.into()), CALL_BUCKETS)
                })
                .and_then(|b| b.install_recorder());
            match built {
                Ok(h) => {
                    describe();
                    // Histograms are drained by a scrape, or here: memory
                    // stays bounded when nobody scrapes.
                    let upkeep = h.clone();
                    let spawned = std::thread::Builder::new()
                        .name("metrics-upkeep".into())
                        .spawn(move || loop {
                            std::thread::sleep(std::time::Duration::from_secs(5));
                            upkeep.run_upkeep();
                        });
                    if let Err(e) = spawned {
                        tracing::warn!(error = %e, "metrics: no upkeep thread");
                    }
                    Some(h)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics are not exported (another recorder is installed)");
                    None
                }
            }
        })
        .as_ref()
}

fn describe() {
    use providers::metrics as p;
    describe_gauge!(LIVE_CALLS, "Calls on the line now.");
    describe_counter!(CALLS, "Finished calls, by final state and who ended them.");
    describe_counter!(
        CALLS_REFUSED,
        "Calls turned away (full, or draining at shutdown)."
    );
    describe_histogram!(CALL_SECONDS, Unit::Seconds, "Length of finished calls.");
    describe_histogram!(
        TURN_SECONDS,
        Unit::Seconds,
        "From the caller stopping to each milestone of the agent's reply."
    );
    describe_counter!(BARGE_INS, "Times the agent was talked over and stopped.");
    describe_counter!(
        CALLER_FRAMES_DROPPED,
        "Caller audio frames dropped because the pipeline fell behind."
    );
    describe_counter!(PLAYER_FRAMES, "Agent audio frames sent to callers.");
    describe_counter!(
        STREAM_MESSAGES_IGNORED,
        "Media Streams messages a call's socket skipped, by why (malformed, out of order, another stream's)."
    );
    describe_counter!(
        RECORDING_DROPPED,
        "Half seconds of call audio left out of recordings (the disk fell behind)."
    );
    describe_counter!(
        PLAYER_FRAMES_LATE,
        "Agent audio frames sent 20 ms or more late."
    );
    describe_counter!(p::STT_RECONNECTS, "Deepgram sockets reopened mid-call.");
    describe_counter!(
        p::STT_NOT_HEARD,
        "Callers asked to say it again, by recogniser."
    );
    describe_counter!(p::STT_LOST, "Calls where Deepgram became unusable.");
    describe_counter!(
        STT_FALLBACKS,
        "Calls whose rest Whisper heard after Deepgram was lost."
    );
    describe_counter!(
        p::TTS_FALLBACKS,
        "Lines handed to a voice other than the primary, by which (fallback, last_resort)."
    );
    describe_gauge!(
        TTS_BREAKER_OPEN,
        "1 while the primary voice's circuit breaker is open."
    );
    describe_counter!(
        p::LLM_FALLBACKS,
        "LLM answers replaced by the offline responder, by kind."
    );
    describe_counter!(
        p::LLM_HEDGES,
        "LLM replies asked for a second time (the first failed or was slow)."
    );
    describe_gauge!(OUTBOX_DEPTH, "Deliveries waiting in the outbox.");
    describe_gauge!(
        OUTBOX_OLDEST_AGE,
        Unit::Seconds,
        "Age of the oldest delivery waiting in the outbox."
    );
}

/// What the server reads at scrape time (`GET /metrics`) for the gauges
/// that describe "now" rather than count events.
pub(crate) struct Scrape {
    /// Calls live now.
    pub live_calls: usize,
    /// How late every call's player sent its frames.
    pub pacing: voice::pacing::PacingSummary,
    /// Whether lines skip the primary voice (its breaker open or probing).
    pub tts_breaker_open: bool,
    /// The outbox's depth and its oldest item's enqueue time (Unix seconds);
    /// `None` when it could not be read in time (the gauges keep their
    /// last values).
    pub outbox: Option<(u64, Option<f64>)>,
}

/// Everything recorded, with the scrape-time gauges set from `now`, as
/// Prometheus text (empty when no recorder is installed).
pub(crate) fn render(now: Scrape) -> String {
    let Some(h) = handle() else {
        return String::new();
    };
    metrics::gauge!(LIVE_CALLS).set(now.live_calls as f64);
    metrics::counter!(PLAYER_FRAMES).absolute(now.pacing.frames);
    metrics::counter!(PLAYER_FRAMES_LATE).absolute(now.pacing.late_20ms);
    metrics::gauge!(TTS_BREAKER_OPEN).set(if now.tts_breaker_open { 1.0 } else { 0.0 });
    if let Some((n, oldest)) = now.outbox {
        metrics::gauge!(OUTBOX_DEPTH).set(n as f64);
        let t = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
        let age = oldest.map_or(0.0, |o| (t - o).max(0.0));
        metrics::gauge!(OUTBOX_OLDEST_AGE).set(age);
    }
    h.render()
}

/// One finished call.
pub(crate) fn call_finished(final_state: &str, ended_by: &'static str, seconds: f64) {
    metrics::counter!(CALLS, "final_state" => final_state.to_string(), "ended_by" => ended_by)
        .increment(1);
    if seconds.is_finite() && seconds >= 0.0 {
        metrics::histogram!(CALL_SECONDS).record(seconds);
    }
}

/// One measured turn: each milestone's time from the turn's anchor (the
/// caller stopping, else the transcript).
pub(crate) fn turn_measured(t: &crate::call::latency::TurnLatency) {
    let milestones = [
        ("stt_final", t.stt_final_ms),
        ("llm_first_token", t.llm_first_token_ms),
        ("tts_first_audio", t.tts_first_audio_ms),
        ("first_outbound", t.first_outbound_ms),
        ("first_heard", t.first_heard_ms),
    ];
    for (name, ms) in milestones {
        // A transcript can beat the VAD's decision (a negative offset):
        // it made the caller wait no time at all.
        if let Some(ms) = ms.filter(|ms| ms.is_finite()) {
            metrics::histogram!(TURN_SECONDS, "milestone" => name).record(ms.max(0.0) / 1000.0);
        }
    }
}
