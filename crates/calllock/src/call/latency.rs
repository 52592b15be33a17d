//! Where a turn's time goes, as stored and as printed.
//!
//! A voice call journals one `latency` event per answered caller turn (see
//! [`crate::call::voice_call`], which measures it): the moment the caller
//! stopped speaking, then how long after it each step of the reply
//! happened. It lives in the call's event log, so it survives a crash and
//! shows for every past call; `calllock calls show` and `calllock
//! transcript` print it ([`render`]), `calls show --json` adds it to the
//! record ([`to_json`]).
//!
//! ```text
//!  caller stops ─▶ STT final ─▶ [tools, debounce] ─▶ LLM request ─▶ first token
//!  (the anchor)    endpointing    waits               ours            the model
//!
//!  ─▶ TTS request ─▶ first audio ─▶ first outbound ─▶ first heard
//!     first sentence   the voice       ours              the phone
//! ```
//!
//! Each stage is a delta in milliseconds from the anchor, so the table
//! reads as a timeline; the differences split a turn into **our own
//! time** (STT final → request less the waits, first audio → first
//! outbound less the wait behind the agent's earlier audio), **vendors**
//! (the model, the voice, the backend's tools, the phone network and
//! playout) and **policy waits** (endpointing, the post-tool debounce,
//! waiting for the first whole sentence, the reply's first audio waiting
//! while the agent's earlier audio is still being sent).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// How the reply of a turn was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyKind {
    /// Written by the LLM.
    #[default]
    Llm,
    /// A line the state machine chose (no LLM request).
    Canned,
}

/// What a turn's deltas count from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Anchor {
    /// The VAD's "caller stopped speaking" (itself `stop_secs` — 0.5 s by
    /// default — after the last voiced audio).
    #[default]
    SpeechEnd,
    /// The STT final: the VAD never said the caller stopped.
    SttFinal,
}

/// One answered caller turn: when each step of the reply happened, in
/// milliseconds after the anchor (`None`: the step never happened — the
/// reply was cut off, or the transport cannot tell, like a first mark
/// echo on a sink without marks).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnLatency {
    /// 1 for the first answered turn of the call, and so on.
    pub turn: u32,
    /// The reply's utterance (`msg_id` of its `agent` event).
    pub msg_id: u64,
    pub reply: ReplyKind,
    pub anchor: Anchor,
    /// The anchor (Unix seconds).
    pub at: f64,
    /// The transcript the turn was answered from (may be negative: a
    /// final that beat the VAD's decision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stt_final_ms: Option<f64>,
    /// The LLM stage handed the request to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_request_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_first_token_ms: Option<f64>,
    /// The reply's first sentence reached the TTS stage (it waits there
    /// while the agent's earlier line is still being spoken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tts_queued_ms: Option<f64>,
    /// The reply's first sentence went to the voice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tts_request_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tts_first_audio_ms: Option<f64>,
    /// The reply continued a stretch of the agent's speech (after an
    /// earlier sentence, or "One moment.") and its first frame was due
    /// here, the earlier audio sent. Before then the caller heard the
    /// agent: not our time. `None`: the reply began a stretch of its own
    /// (or the turn was stored before this was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player_free_ms: Option<f64>,
    /// The first audio frame was handed to the phone's socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_outbound_ms: Option<f64>,
    /// The phone confirmed it played the reply (the first mark echo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_heard_ms: Option<f64>,
    /// Audio the first echo proved played: playback began about this long
    /// before `first_heard_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heard_audio_ms: Option<u32>,
    /// Backend tools the reply waited for (vendor time).
    #[serde(default)]
    pub tool_ms: f64,
    /// The post-tool debounce the reply waited for (policy).
    #[serde(default)]
    pub debounce_ms: f64,
    /// The scoped (terminal-state) reply the line waited for (the LLM
    /// vendor, not streamed).
    #[serde(default)]
    pub scoped_ms: f64,
    /// The caller's line waited for the turn before it, still suspended
    /// on its tool or scoped reply (vendor time, not ours).
    #[serde(default)]
    pub queued_ms: f64,
}

fn diff(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? - b?)
}

impl TurnLatency {
    /// When the reply was requested: its LLM request, or — for a line
    /// said without the LLM — when it reached the voice's stage (turns
    /// stored before that was measured: its TTS request). A canned line
    /// waits there while the agent's earlier line is still being spoken:
    /// that wait is the agent not talking over itself, not our work.
    pub fn request_ms(&self) -> Option<f64> {
        match self.reply {
            ReplyKind::Llm => self.llm_request_ms,
            ReplyKind::Canned => self.tts_queued_ms.or(self.tts_request_ms),
        }
    }

    /// Every wait before the request that was not ours.
    pub fn waits_ms(&self) -> f64 {
        self.tool_ms + self.debounce_ms + self.scoped_ms + self.queued_ms
    }

    /// Ours, before the request: STT final → request, less the waits.
    pub fn ours_before_ms(&self) -> Option<f64> {
        Some(diff(self.request_ms(), self.stt_final_ms)? - self.waits_ms())
    }

    /// Ours, after the voice: first TTS audio → first outbound frame,
    /// less the wait behind the agent's earlier audio (counted from
    /// `player_free_ms` when that is later).
    pub fn ours_after_ms(&self) -> Option<f64> {
        let from = self
            .tts_first_audio_ms
            .map(|audio| self.player_free_ms.map_or(audio, |free| audio.max(free)));
        diff(self.first_outbound_ms, from)
    }

    /// How long the reply's first audio waited behind the agent's earlier
    /// audio before it went out (0 when it did not, and for turns stored
    /// before this was measured; `None` when it never went out).
    pub fn behind_earlier_audio_ms(&self) -> Option<f64> {
        let (audio, out) = (self.tts_first_audio_ms?, self.first_outbound_ms?);
        Some(
            self.player_free_ms
                .map_or(0.0, |free| (free.min(out) - audio).max(0.0)),
        )
    }

    /// All our own time (both parts; `None` when either is unknown).
    pub fn ours_ms(&self) -> Option<f64> {
        Some(self.ours_before_ms()? + self.ours_after_ms()?)
    }

    /// The model's time to first token.
    pub fn llm_ms(&self) -> Option<f64> {
        diff(self.llm_first_token_ms, self.llm_request_ms)
    }

    /// The voice's time to first audio.
    pub fn tts_ms(&self) -> Option<f64> {
        diff(self.tts_first_audio_ms, self.tts_request_ms)
    }

    /// The phone: first outbound frame → its first mark echo.
    pub fn phone_ms(&self) -> Option<f64> {
        diff(self.first_heard_ms, self.first_outbound_ms)
    }

    /// Waiting for the first whole sentence: first token → TTS request.
    pub fn sentence_ms(&self) -> Option<f64> {
        diff(self.tts_request_ms, self.llm_first_token_ms)
    }
}

/// The `latency` events of a call's log, in turn order.
pub fn from_events(events: &[store::StoredEvent]) -> Vec<TurnLatency> {
    let mut turns: Vec<TurnLatency> = events
        .iter()
        .filter(|e| e.kind == "latency")
        .filter_map(|e| serde_json::from_value(e.data.clone()).ok())
        .collect();
    turns.sort_by_key(|t| t.turn);
    turns
}

/// The `p`-th percentile (nearest rank) of `values`.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v.get(rank.min(v.len()) - 1).copied()
}

type Measure = fn(&TurnLatency) -> Option<f64>;

/// The rows of the summary: group, label, measure.
const ROWS: &[(&str, &str, Measure)] = &[
    ("after speech end", "stt final", |t| t.stt_final_ms),
    ("after speech end", "llm request", |t| t.llm_request_ms),
    ("after speech end", "llm first token", |t| {
        t.llm_first_token_ms
    }),
    ("after speech end", "tts request", |t| t.tts_request_ms),
    ("after speech end", "tts first audio", |t| {
        t.tts_first_audio_ms
    }),
    ("after speech end", "first outbound", |t| {
        t.first_outbound_ms
    }),
    ("after speech end", "first heard", |t| t.first_heard_ms),
    ("ours", "stt final → request", TurnLatency::ours_before_ms),
    ("ours", "first audio → outbound", TurnLatency::ours_after_ms),
    ("ours", "total", TurnLatency::ours_ms),
    ("vendors", "llm first token", TurnLatency::llm_ms),
    ("vendors", "tts first audio", TurnLatency::tts_ms),
    ("vendors", "phone (out → heard)", TurnLatency::phone_ms),
    ("vendors", "backend tools", |t| Some(t.tool_ms)),
    ("vendors", "scoped reply", |t| Some(t.scoped_ms)),
    ("vendors", "behind the turn before", |t| Some(t.queued_ms)),
    ("policy waits", "endpointing (+ stt)", |t| t.stt_final_ms),
    ("policy waits", "post-tool debounce", |t| {
        Some(t.debounce_ms)
    }),
    ("policy waits", "first sentence", TurnLatency::sentence_ms),
    (
        "policy waits",
        "behind earlier audio",
        TurnLatency::behind_earlier_audio_ms,
    ),
];

/// p50 / p95 of one measure over the turns that have it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub p50: f64,
    pub p95: f64,
    /// Turns that had the measure.
    pub n: usize,
}

/// The per-call summary: every measure's [`Spread`], grouped.
pub fn summary(turns: &[TurnLatency]) -> Vec<(&'static str, &'static str, Option<Spread>)> {
    ROWS.iter()
        .map(|(group, label, f)| {
            let values: Vec<f64> = turns.iter().filter_map(f).collect();
            let spread = percentile(&values, 50.0)
                .zip(percentile(&values, 95.0))
                .map(|(p50, p95)| Spread {
                    p50,
                    p95,
                    n: values.len(),
                });
            (*group, *label, spread)
        })
        .collect()
}

fn ms(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v.abs() < 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.0}"),
    }
}

/// The per-turn table and the p50 / p95 summary, as printed by `calls
/// show` and `transcript` (empty when the call has no latency record:
/// `chat`, replays, calls before it was recorded).
pub fn render(turns: &[TurnLatency]) -> String {
    let mut out = String::new();
    if turns.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "latency by turn (ms after the caller stopped speaking; - = never happened):"
    );
    let _ = writeln!(
        out,
        "{:>4} {:<6} {:>6} {:>6} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6}",
        "turn",
        "reply",
        "stt",
        "tools",
        "debounce",
        "llm_req",
        "llm_1st",
        "tts_req",
        "tts_1st",
        "out",
        "heard",
        "ours"
    );
    for t in turns {
        let reply = match t.reply {
            ReplyKind::Llm => "llm",
            ReplyKind::Canned => "canned",
        };
        let anchor = match t.anchor {
            Anchor::SpeechEnd => "",
            Anchor::SttFinal => "  (no VAD stop: from the STT final)",
        };
        let _ = writeln!(
            out,
            "{:>4} {:<6} {:>6} {:>6} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6}{anchor}",
            t.turn,
            reply,
            ms(t.stt_final_ms),
            ms(Some(t.tool_ms)),
            ms(Some(t.debounce_ms)),
            ms(t.llm_request_ms),
            ms(t.llm_first_token_ms),
            ms(t.tts_request_ms),
            ms(t.tts_first_audio_ms),
            ms(t.first_outbound_ms),
            ms(t.first_heard_ms),
            ms(t.ours_ms()),
        );
    }
    let _ = writeln!(
        out,
        "latency summary over {} turns (ms; p50 / p95):",
        turns.len()
    );
    let mut group = "";
    for (g, label, spread) in summary(turns) {
        if g != group {
            let _ = writeln!(out, "  {g}:");
            group = g;
        }
        let line = match spread {
            None => "-".to_string(),
            Some(s) if s.n == turns.len() => {
                format!("{:>7} / {:>7}", ms(Some(s.p50)), ms(Some(s.p95)))
            }
            Some(s) => format!(
                "{:>7} / {:>7}  ({} turns)",
                ms(Some(s.p50)),
                ms(Some(s.p95)),
                s.n
            ),
        };
        let _ = writeln!(out, "    {label:<24} {line}");
    }
    out
}

/// The record's `latency` (for `calls show --json`): every turn, and the
/// summary keyed `"group/label"`.
pub fn to_json(turns: &[TurnLatency]) -> Value {
    let summary: serde_json::Map<String, Value> = summary(turns)
        .into_iter()
        .map(|(g, label, s)| (format!("{g}/{label}"), json!(s)))
        .collect();
    json!({ "turns": turns, "summary": summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(n: u32, heard: Option<f64>) -> TurnLatency {
        TurnLatency {
            turn: n,
            msg_id: u64::from(n) * 2,
            stt_final_ms: Some(0.0),
            tool_ms: 300.0,
            debounce_ms: 1500.0,
            llm_request_ms: Some(1800.5),
            llm_first_token_ms: Some(2100.5),
            tts_request_ms: Some(2160.5),
            tts_first_audio_ms: Some(2310.5),
            first_outbound_ms: Some(2311.0),
            first_heard_ms: heard,
            ..TurnLatency::default()
        }
    }

    #[test]
    fn the_parts_of_a_turn() {
        let t = turn(1, Some(2511.0));
        assert_eq!(t.ours_before_ms(), Some(0.5));
        assert_eq!(t.ours_after_ms(), Some(0.5));
        assert_eq!(t.ours_ms(), Some(1.0));
        assert_eq!(t.llm_ms(), Some(300.0));
        assert_eq!(t.tts_ms(), Some(150.0));
        assert_eq!(t.sentence_ms(), Some(60.0));
        assert_eq!(t.phone_ms(), Some(200.0));
        let canned = TurnLatency {
            reply: ReplyKind::Canned,
            llm_request_ms: None,
            llm_first_token_ms: None,
            ..turn(2, None)
        };
        assert_eq!(canned.request_ms(), Some(2160.5));
        assert_eq!(canned.llm_ms(), None);
    }

    #[test]
    fn a_canned_line_waiting_for_the_agent_s_own_speech_is_not_our_time() {
        let queued = TurnLatency {
            reply: ReplyKind::Canned,
            stt_final_ms: Some(0.0),
            tts_queued_ms: Some(0.4),
            // The agent's earlier line played for 5.6 s more.
            tts_request_ms: Some(6000.0),
            tts_first_audio_ms: Some(6150.0),
            first_outbound_ms: Some(6150.3),
            ..TurnLatency::default()
        };
        assert_eq!(queued.ours_before_ms(), Some(0.4));
        assert!((queued.ours_ms().unwrap() - 0.7).abs() < 1e-9);
        // A turn stored before the queue was measured: the TTS request.
        let older = TurnLatency {
            tts_queued_ms: None,
            ..queued.clone()
        };
        assert_eq!(older.ours_before_ms(), Some(6000.0));
        // The LLM's replies are measured at the LLM request, as before.
        let llm = TurnLatency {
            reply: ReplyKind::Llm,
            llm_request_ms: Some(2.0),
            ..queued
        };
        assert_eq!(llm.ours_before_ms(), Some(2.0));
    }

    #[test]
    fn a_reply_waiting_behind_the_agent_s_earlier_audio_is_not_our_time() {
        // "One moment." still playing: the reply's first audio reached the
        // player at 2310.5 ms and could go out from 2900 ms, when the
        // filler's audio was all sent; it went out at 2902.
        let behind = TurnLatency {
            player_free_ms: Some(2900.0),
            first_outbound_ms: Some(2902.0),
            ..turn(1, None)
        };
        assert_eq!(behind.ours_after_ms(), Some(2.0));
        assert_eq!(behind.behind_earlier_audio_ms(), Some(589.5));
        assert_eq!(behind.ours_ms(), Some(2.5));
        // The earlier audio was sent before the voice's first audio came
        // back: the whole way from there is ours.
        let early = TurnLatency {
            player_free_ms: Some(2000.0),
            first_outbound_ms: Some(2320.5),
            ..turn(1, None)
        };
        assert_eq!(early.ours_after_ms(), Some(10.0));
        assert_eq!(early.behind_earlier_audio_ms(), Some(0.0));
        // Cut before it went out: no wait is counted.
        let cut = TurnLatency {
            first_outbound_ms: None,
            ..behind.clone()
        };
        assert_eq!(cut.behind_earlier_audio_ms(), None);
        // No wait reported: as before.
        let plain = turn(1, None);
        assert_eq!(plain.ours_after_ms(), Some(0.5));
        assert_eq!(plain.behind_earlier_audio_ms(), Some(0.0));
        // The stored form keeps it, and a turn stored before it reads None.
        let back: TurnLatency =
            serde_json::from_value(serde_json::to_value(&behind).unwrap()).unwrap();
        assert_eq!(back.player_free_ms, Some(2900.0));
        let old: TurnLatency = serde_json::from_value(
            json!({"turn": 1, "msg_id": 2, "reply": "llm", "anchor": "speech_end", "at": 0.0}),
        )
        .unwrap();
        assert_eq!(old.player_free_ms, None);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(10.0));
        assert_eq!(percentile(&v, 95.0), Some(19.0));
        assert_eq!(percentile(&[7.0], 95.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn stored_form_round_trips_and_renders() {
        let turns = [turn(2, None), turn(1, Some(2511.0))];
        let events: Vec<store::StoredEvent> = turns
            .iter()
            .enumerate()
            .map(|(i, t)| store::StoredEvent {
                call_id: "CA1".into(),
                seq: i as i64 + 1,
                at_unix: 100.0,
                kind: "latency".into(),
                data: serde_json::to_value(t).unwrap(),
            })
            .collect();
        let back = from_events(&events);
        assert_eq!(back.iter().map(|t| t.turn).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(back[0], turns[1]);
        let text = render(&back);
        assert!(text.contains("latency by turn"), "{text}");
        assert!(text.contains("   1 llm"), "{text}");
        assert!(text.contains("latency summary over 2 turns"), "{text}");
        assert!(
            text.contains("(1 turns)"),
            "first heard on one turn: {text}"
        );
        let j = to_json(&back);
        assert_eq!(j["summary"]["vendors/llm first token"]["p50"], 300.0);
        assert!(render(&[]).is_empty());
    }
}
