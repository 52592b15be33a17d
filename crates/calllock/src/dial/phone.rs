//! The phone: the far end of a Media Streams socket, behaving as Twilio's
//! media server does.
//!
//! - Sends `connected`, `start` (stream and call SIDs, the TwiML's
//!   `<Parameter>`s), then one 20 ms `media` message every 20 ms — the
//!   caller's speech when they say something, silence otherwise — and
//!   `stop` when the caller hangs up.
//! - Plays the agent's `media` at real-time rate from a playout buffer and
//!   echoes each `mark` once the audio queued before it has played (at
//!   once when nothing is queued), as Twilio does.
//! - On `clear`, empties the buffer and echoes every pending mark at once.
//!
//! What the caller heard (the agent's words, as they play) is reported as
//! [`PhoneEvent`]s and kept in the [`PhoneLog`].
//!
//! **Speech** ([`PhoneSpeech`]): with the offline codec, the caller's
//! lines are codec audio and the agent's words are decoded as each one
//! plays. With local speech, the caller's lines are spoken by the local
//! voice (Flite) and each stretch of agent audio is transcribed by
//! Whisper once it has played (so its words arrive a moment after it).
//! Either way the phone can keep a two-channel recording of the call
//! (left: caller, right: agent) for a person to listen to.

use anyhow::{Context, Result};
use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use voice::offline::codec::{self, Decoded};

/// µ-law bytes in 20 ms at 8 kHz.
const FRAME: usize = 160;
/// µ-law silence.
const SILENCE: u8 = 0xFF;

/// What the phone noticed, as it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum PhoneEvent {
    /// An agent word started playing.
    AgentWord(String),
    /// The agent's audio stopped (nothing left to play).
    AgentQuiet,
    /// The server sent `clear` (a barge-in).
    Cleared,
    /// The socket closed.
    Closed,
    /// A stretch of agent audio started playing (local speech: its words
    /// come later, as [`PhoneEvent::AgentSaid`] with the same number).
    /// Stretches are numbered from 0 in the order they play.
    AgentSpeaking(u64),
    /// What stretch `stretch` of agent audio said, transcribed once it
    /// stopped playing (local speech). Every stretch gets exactly one, in
    /// order; `text` is empty when nothing could be made of it.
    AgentSaid { stretch: u64, text: String },
}

/// A listener's count of the stretches of agent audio (local speech): which
/// transcriptions answer the caller's last line, and whether everything
/// played has been heard. A transcription can arrive long after its
/// stretch played (a slow ear), even after the caller spoke again; the
/// words of a stretch from before the caller's line belong to the turn
/// before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stretches {
    /// Stretches started ([`PhoneEvent::AgentSpeaking`]).
    started: u64,
    /// The first stretch of this turn.
    turn_from: u64,
    /// Stretches transcribed ([`PhoneEvent::AgentSaid`] come in order).
    heard: u64,
}

impl Stretches {
    /// Stretch `n` started playing.
    pub fn started(&mut self, n: u64) {
        self.started = self.started.max(n + 1);
    }

    /// Stretch `n` was transcribed; whether its words are this turn's.
    pub fn heard(&mut self, n: u64) -> bool {
        self.heard = self.heard.max(n + 1);
        n >= self.turn_from
    }

    /// The caller spoke: a new turn begins with the next stretch, or with
    /// the one playing now if the agent is `speaking`.
    pub fn new_turn(&mut self, speaking: bool) {
        self.turn_from = if speaking {
            self.started.saturating_sub(1)
        } else {
            self.started
        };
    }

    /// Whether every stretch played so far has been transcribed.
    pub fn all_heard(&self) -> bool {
        self.heard >= self.started
    }
}

/// How the phone speaks the caller's lines and hears the agent.
#[derive(Clone, Default)]
pub enum PhoneSpeech {
    /// The offline speech codec: exact, word by word.
    #[default]
    Codec,
    /// Real voices: lines spoken by the local voice, the agent heard by
    /// Whisper.
    Local(crate::local_speech::LocalSpeech),
}

impl std::fmt::Debug for PhoneSpeech {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PhoneSpeech::Codec => "Codec",
            PhoneSpeech::Local(_) => "Local",
        })
    }
}

/// Both sides of a call as the phone heard it, 8 kHz, sample-aligned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recording {
    pub caller: Vec<i16>,
    pub agent: Vec<i16>,
}

impl Recording {
    /// A two-channel WAV file: left the caller, right the agent.
    pub fn to_wav(&self) -> Vec<u8> {
        let n = self.caller.len().min(self.agent.len());
        let mut interleaved = Vec::with_capacity(n * 2);
        for i in 0..n {
            interleaved.push(self.caller[i]);
            interleaved.push(self.agent[i]);
        }
        audio::wav::write_wav_pcm16(8000, 2, &interleaved)
    }
}

/// One agent word the caller heard, with when it started playing.
#[derive(Debug, Clone, PartialEq)]
pub struct HeardWord {
    pub word: String,
    pub at: Duration,
}

/// Everything the phone saw in one call.
#[derive(Debug, Clone, Default)]
pub struct PhoneLog {
    pub call_sid: String,
    pub heard: Vec<HeardWord>,
    /// `clear` messages received.
    pub clears: usize,
    /// Marks echoed (played or cleared).
    pub marks_echoed: usize,
    /// Agent audio received (ms).
    pub agent_audio_ms: u64,
    /// The phone hung up (sent `stop`); false: the server closed the call.
    pub caller_hung_up: bool,
    /// Messages from the server that were not understood.
    pub bad_messages: usize,
    /// For each agent `media` message, how late it arrived against a
    /// real-time schedule from the first message of its stretch (due when
    /// the audio before it has played; a stretch ends after 200 ms
    /// without audio). Early is zero. Lateness
    /// beyond the server's lead is a gap the caller would hear.
    pub media_lateness: Vec<Duration>,
    /// From the end of each caller line (its last frame sent) to the next
    /// agent audio.
    pub reply_latencies: Vec<Duration>,
    /// For each caller line, the longest silence the caller sat through
    /// before saying more, in playback time (what the phone played, not
    /// when it arrived): the wait from the line's end to the agent's first
    /// audio, or a pause inside the answer, both sides quiet all the while.
    /// A line the agent never answered before the caller's next one counts
    /// its whole wait (a lower bound). The dead air of that turn.
    pub turn_dead_air: Vec<Duration>,
    /// Both sides of the call, when asked for ([`Connect::record`]).
    pub recording: Option<Recording>,
}

impl PhoneLog {
    /// The words heard, joined by spaces.
    pub fn heard_text(&self) -> String {
        self.heard
            .iter()
            .map(|w| w.word.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What the phone connects with.
#[derive(Debug, Clone)]
pub struct Connect {
    /// The `ws://…/ws/twilio` URL from the TwiML.
    pub stream_url: String,
    /// `X-Twilio-Signature` for the upgrade (when a token is known).
    pub signature: Option<String>,
    pub call_sid: String,
    pub account_sid: String,
    /// The TwiML's `<Parameter>`s.
    pub parameters: Vec<(String, String)>,
    /// The caller's speaking rate (characters per second; codec speech).
    pub chars_per_second: f64,
    /// How the caller speaks and the agent is heard.
    pub speech: PhoneSpeech,
    /// Keep a recording of both sides.
    pub record: bool,
}

enum Cmd {
    Say(String),
    /// Caller audio, 8 kHz µ-law.
    Audio(Vec<u8>),
    Raw(String),
    HangUp,
    /// Hang up once this much agent audio (ms, in all) has arrived.
    HangUpOnAgentAudio(u64),
    Drop,
}

/// A live call from the phone's side.
pub struct Phone {
    cmd: mpsc::UnboundedSender<Cmd>,
    /// Local speech: lines to speak, in order (synthesized off the loop).
    speaker: Option<mpsc::UnboundedSender<String>>,
    task: tokio::task::JoinHandle<PhoneLog>,
    pub call_sid: String,
}

enum Item {
    Audio(Vec<u8>),
    Mark(String),
}

impl Phone {
    /// Open the stream and start the call. Events go to `events`.
    pub async fn connect(c: Connect, events: mpsc::UnboundedSender<PhoneEvent>) -> Result<Phone> {
        let mut req = c
            .stream_url
            .as_str()
            .into_client_request()
            .with_context(|| format!("bad stream URL {:?}", c.stream_url))?;
        if let Some(sig) = &c.signature {
            req.headers_mut().insert(
                "X-Twilio-Signature",
                sig.parse().context("signature header")?,
            );
        }
        // Small buffers: a phone's messages are a few hundred bytes (the
        // default 128 KiB read buffer would dominate a load test's memory).
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .read_buffer_size(4 * 1024)
            .write_buffer_size(4 * 1024);
        let (ws, _) = tokio_tungstenite::connect_async_with_config(req, Some(config), false)
            .await
            .with_context(|| format!("cannot open the stream {}", c.stream_url))?;
        let (cmd, rx) = mpsc::unbounded_channel();
        let call_sid = c.call_sid.clone();
        let speaker = match &c.speech {
            PhoneSpeech::Codec => None,
            PhoneSpeech::Local(local) => {
                let (stx, mut srx) = mpsc::unbounded_channel::<String>();
                let (local, cmd) = (local.clone(), cmd.clone());
                tokio::spawn(async move {
                    while let Some(text) = srx.recv().await {
                        match local.say_ulaw(&text).await {
                            Some(ulaw) => {
                                let _ = cmd.send(Cmd::Audio(ulaw));
                            }
                            None => {
                                tracing::warn!(text, "the local voice could not say a caller line")
                            }
                        }
                    }
                });
                Some(stx)
            }
        };
        let task = tokio::spawn(run(ws, c, rx, events));
        Ok(Phone {
            cmd,
            speaker,
            task,
            call_sid,
        })
    }

    /// The caller says `text` (queued after what they are still saying).
    pub fn say(&self, text: &str) {
        match &self.speaker {
            Some(s) => {
                let _ = s.send(text.to_string());
            }
            None => {
                let _ = self.cmd.send(Cmd::Say(text.to_string()));
            }
        }
    }

    /// The caller plays recorded audio (8 kHz µ-law), queued after what
    /// they are still saying.
    pub fn play_ulaw(&self, ulaw: Vec<u8>) {
        let _ = self.cmd.send(Cmd::Audio(ulaw));
    }

    /// Send a raw text frame (tests: garbage, odd messages).
    pub fn send_raw(&self, text: &str) {
        let _ = self.cmd.send(Cmd::Raw(text.to_string()));
    }

    /// The caller hangs up: `stop`, then the socket closes.
    pub fn hang_up(&self) {
        let _ = self.cmd.send(Cmd::HangUp);
    }

    /// The caller hangs up the moment `ms` of agent audio (in all, since
    /// the call began) has arrived — before it has played, so the end of
    /// what arrived last is never heard and its marks never echoed.
    pub fn hang_up_on_agent_audio(&self, ms: u64) {
        let _ = self.cmd.send(Cmd::HangUpOnAgentAudio(ms));
    }

    /// The line drops: the socket closes with no `stop`.
    pub fn drop_line(&self) {
        let _ = self.cmd.send(Cmd::Drop);
    }

    /// Wait for the call to end (either side) and return what happened.
    pub async fn finished(self) -> PhoneLog {
        self.task.await.unwrap_or_default()
    }
}

/// A caller `media` message as Twilio writes it (counts as strings).
/// Written straight into one string — a phone sends one every 20 ms, and
/// a load test runs a thousand phones beside the server it measures.
/// `sid_json` is the stream SID already quoted as a JSON string.
fn media_json(sid_json: &str, seq: u64, chunk: u64, ts_ms: u64, ulaw: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(130 + sid_json.len() + ulaw.len().div_ceil(3) * 4);
    let _ = write!(
        out,
        r#"{{"event":"media","sequenceNumber":"{seq}","streamSid":{sid_json},"media":{{"track":"inbound","chunk":"{chunk}","timestamp":"{ts_ms}","payload":""#
    );
    base64::engine::general_purpose::STANDARD.encode_string(ulaw, &mut out);
    out.push_str(r#""}}"#);
    out
}

/// A message from the agent's side, as Twilio reads it: its `event`, and
/// the fields of `media` and `mark` the phone uses (borrowed from the
/// text: nothing is copied but the audio).
#[derive(serde::Deserialize)]
struct FromAgent<'a> {
    #[serde(borrow)]
    event: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    media: Option<AgentMedia<'a>>,
    #[serde(borrow, default)]
    mark: Option<AgentMark<'a>>,
}

#[derive(serde::Deserialize)]
struct AgentMedia<'a> {
    #[serde(borrow)]
    payload: std::borrow::Cow<'a, str>,
}

#[derive(serde::Deserialize)]
struct AgentMark<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
}

/// The caller's speech as 20 ms µ-law frames.
fn speech_frames(text: &str, cps: f64) -> Vec<Vec<u8>> {
    let (samples, _) = codec::encode(text, 8000, cps);
    let mut ulaw = Vec::with_capacity(samples.len());
    audio::mulaw::encode(&samples, &mut ulaw);
    ulaw.chunks(FRAME).map(|c| c.to_vec()).collect()
}

async fn run(
    ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    c: Connect,
    mut cmds: mpsc::UnboundedReceiver<Cmd>,
    events: mpsc::UnboundedSender<PhoneEvent>,
) -> PhoneLog {
    let (mut tx, mut rx) = ws.split();
    let stream_sid = format!("MZ{}", &c.call_sid.trim_start_matches("CA"));
    let mut log = PhoneLog {
        call_sid: c.call_sid.clone(),
        ..PhoneLog::default()
    };
    let params: serde_json::Map<String, serde_json::Value> = c
        .parameters
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let hello = [
        json!({"event": "connected", "protocol": "Call", "version": "1.0.0"}).to_string(),
        json!({
            "event": "start",
            "sequenceNumber": "1",
            "streamSid": stream_sid,
            "start": {
                "streamSid": stream_sid,
                "accountSid": c.account_sid,
                "callSid": c.call_sid,
                "tracks": ["inbound"],
                "customParameters": params,
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            }
        })
        .to_string(),
    ];
    for m in hello {
        if tx.send(Message::Text(m.into())).await.is_err() {
            let _ = events.send(PhoneEvent::Closed);
            return log;
        }
    }
    let sid_json = serde_json::to_string(&stream_sid).unwrap_or_else(|_| "\"\"".into());
    let t0 = Instant::now();
    let mut seq = 2u64;
    let mut chunk = 1u64;
    let mut caller: VecDeque<Vec<u8>> = VecDeque::new();
    let mut playout: VecDeque<Item> = VecDeque::new();
    let mut playing = false;
    // (first arrival of the stretch, µs of audio in it before this message, last arrival)
    let mut stretch: Option<(Instant, u64, Instant)> = None;
    let mut caller_done_at: Option<Instant> = None;
    // The turn answering the last caller line, measured in playback time.
    let mut turn: Option<TurnAir> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    // Local speech: the agent audio of the current stretch, and the
    // transcriptions under way.
    let ear = match &c.speech {
        PhoneSpeech::Local(l) => l.recogniser(),
        PhoneSpeech::Codec => None,
    };
    let (heard_tx, mut heard_rx) = mpsc::unbounded_channel::<Heard>();
    // The stretch playing now, its audio, and the transcriptions under way
    // (answered in any order, reported in stretch order).
    let mut open: Option<Stretch> = None;
    let mut stretches = 0u64;
    let mut transcribing = 0usize;
    let mut in_order = InOrder::default();
    let submit = |open: &mut Option<Stretch>, transcribing: &mut usize| {
        let (Some(ear), Some(s)) = (&ear, open.take()) else {
            return;
        };
        let tx = heard_tx.clone();
        *transcribing += 1;
        let (n, at) = (s.n, s.at);
        let clip = speech::utterances::to_recogniser_rate(&s.audio, 8000);
        match ear.recognise(clip) {
            Ok(heard) => {
                tokio::spawn(async move {
                    let text = match heard.await {
                        Ok(Ok(t)) => speech::utterances::clean_transcript(&t),
                        _ => String::new(),
                    };
                    let _ = tx.send(Heard { n, at, text });
                });
            }
            Err(_) => {
                let _ = tx.send(Heard {
                    n,
                    at,
                    text: String::new(),
                });
            }
        }
    };
    if c.record {
        log.recording = Some(Recording::default());
    }
    let echo = |name: &str| {
        json!({"event": "mark", "sequenceNumber": "0", "streamSid": stream_sid, "mark": {"name": name}})
            .to_string()
    };
    let mut hang_up_at: Option<u64> = None;
    loop {
        let mut out: Vec<String> = Vec::new();
        let mut hang_up = false;
        tokio::select! {
            _ = tick.tick() => {
                // The caller's next 20 ms.
                let frame = match caller.pop_front() {
                    Some(f) => {
                        if caller.is_empty() {
                            // The line ends with this frame: its turn begins.
                            caller_done_at = Some(Instant::now());
                            turn = Some(TurnAir::default());
                        }
                        f
                    }
                    None => vec![SILENCE; FRAME],
                };
                let ts = (chunk - 1) * 20;
                if let Some(rec) = log.recording.as_mut() {
                    audio::mulaw::decode(&frame, &mut rec.caller);
                }
                out.push(media_json(&sid_json, seq, chunk, ts, &frame));
                seq += 1;
                chunk += 1;
                // The agent's next 20 ms, and the marks it completes.
                let (played, marks) = play(&mut playout);
                for m in &marks {
                    out.push(echo(m));
                }
                log.marks_echoed += marks.len();
                let mut pcm = Vec::with_capacity(FRAME);
                if let Some(t) = turn.as_mut() {
                    t.tick(played.is_some(), caller.is_empty(), Instant::now());
                }
                match played {
                    Some(bytes) => {
                        audio::mulaw::decode(&bytes, &mut pcm);
                        if ear.is_some() {
                            let s = open.get_or_insert_with(|| {
                                let n = stretches;
                                stretches += 1;
                                let _ = events.send(PhoneEvent::AgentSpeaking(n));
                                Stretch { n, at: t0.elapsed(), audio: Vec::new() }
                            });
                            s.audio.extend_from_slice(&pcm);
                        } else if let Decoded::Word(w) = codec::decode(&pcm) {
                            log.heard.push(HeardWord { word: w.clone(), at: t0.elapsed() });
                            let _ = events.send(PhoneEvent::AgentWord(w));
                        }
                        playing = true;
                    }
                    None if playing => {
                        playing = false;
                        submit(&mut open, &mut transcribing);
                        let _ = events.send(PhoneEvent::AgentQuiet);
                    }
                    None => {}
                }
                if let Some(rec) = log.recording.as_mut() {
                    pcm.resize(FRAME, 0);
                    rec.agent.extend_from_slice(&pcm);
                }
            }
            msg = rx.next() => {
                let text = match msg {
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => { log.bad_messages += 1; continue }
                };
                let Ok(m) = serde_json::from_str::<FromAgent>(text.as_str()) else {
                    log.bad_messages += 1;
                    continue;
                };
                match (m.event.as_ref(), m.media, m.mark) {
                    ("media", Some(media), _) => {
                        match base64::engine::general_purpose::STANDARD.decode(media.payload.as_bytes()) {
                            Ok(bytes) => {
                                let now = Instant::now();
                                if let Some(t) = caller_done_at.take() {
                                    log.reply_latencies.push(now - t);
                                }
                                // 125 µs per 8 kHz µ-law byte.
                                let us = bytes.len() as u64 * 125;
                                stretch = match stretch {
                                    Some((first, before, last))
                                        if now - last < Duration::from_millis(200) =>
                                    {
                                        let due = first + Duration::from_micros(before);
                                        log.media_lateness.push(now.saturating_duration_since(due));
                                        Some((first, before + us, now))
                                    }
                                    _ => {
                                        log.media_lateness.push(Duration::ZERO);
                                        Some((now, us, now))
                                    }
                                };
                                log.agent_audio_ms += bytes.len() as u64 / 8;
                                playout.push_back(Item::Audio(bytes));
                                hang_up = hang_up_at.is_some_and(|at| log.agent_audio_ms >= at);
                            }
                            Err(_) => log.bad_messages += 1,
                        }
                    }
                    ("mark", _, Some(mark)) => {
                        let name = mark.name.into_owned();
                        if playout.is_empty() {
                            out.push(echo(&name));
                            log.marks_echoed += 1;
                        } else {
                            playout.push_back(Item::Mark(name));
                        }
                    }
                    ("clear", _, _) => {
                        log.clears += 1;
                        // What played up to the clear is one stretch.
                        submit(&mut open, &mut transcribing);
                        playing = false;
                        let _ = events.send(PhoneEvent::Cleared);
                        for it in playout.drain(..) {
                            if let Item::Mark(name) = it {
                                out.push(echo(&name));
                                log.marks_echoed += 1;
                            }
                        }
                    }
                    _ => log.bad_messages += 1,
                }
            }
            Some(heard) = heard_rx.recv(), if transcribing > 0 => {
                transcribing -= 1;
                for h in in_order.take(heard) {
                    take_heard(&mut log, &events, h);
                }
            }
            cmd = cmds.recv() => match cmd {
                Some(cmd @ (Cmd::Say(_) | Cmd::Audio(_))) => {
                    // A new caller line: the last turn's dead air is known
                    // (a turn never answered counts its whole wait).
                    log.turn_dead_air.extend(turn.take().map(|t| t.dead_air(Instant::now())));
                    match cmd {
                        Cmd::Say(text) => caller.extend(speech_frames(&text, c.chars_per_second)),
                        Cmd::Audio(ulaw) => caller.extend(ulaw_frames(&ulaw)),
                        _ => {}
                    }
                }
                Some(Cmd::Raw(text)) => out.push(text),
                Some(Cmd::HangUp) | None => hang_up = true,
                Some(Cmd::HangUpOnAgentAudio(ms)) => hang_up_at = Some(ms),
                Some(Cmd::Drop) => {
                    // No `stop`, no close handshake: the TCP connection just goes.
                    log.caller_hung_up = true;
                    break;
                }
            },
        }
        if hang_up {
            let stop = json!({
                "event": "stop",
                "sequenceNumber": seq.to_string(),
                "streamSid": stream_sid,
                "stop": {"accountSid": c.account_sid, "callSid": c.call_sid},
            });
            let _ = tx.send(Message::Text(stop.to_string().into())).await;
            let _ = tx.close().await;
            log.caller_hung_up = true;
            break;
        }
        // Everything of this turn of the loop in one write.
        if out.is_empty() {
            continue;
        }
        let mut sent = Ok(());
        for m in out {
            sent = tx.feed(Message::Text(m.into())).await;
            if sent.is_err() {
                break;
            }
        }
        if sent.is_err() || tx.flush().await.is_err() {
            let _ = events.send(PhoneEvent::Closed);
            return log;
        }
    }
    // The last turn, if it was answered before the line closed (one cut
    // off by the hang-up is not the agent's silence).
    log.turn_dead_air
        .extend(turn.filter(|t| t.answered).map(|t| t.air));
    // What played last is transcribed too; wait for what is under way.
    submit(&mut open, &mut transcribing);
    let deadline = Instant::now() + TRANSCRIBE_WAIT;
    while transcribing > 0 {
        match tokio::time::timeout_at(deadline, heard_rx.recv()).await {
            Ok(Some(heard)) => {
                transcribing -= 1;
                for h in in_order.take(heard) {
                    take_heard(&mut log, &events, h);
                }
            }
            _ => break,
        }
    }
    log.heard.sort_by_key(|w| w.at);
    let _ = events.send(PhoneEvent::Closed);
    log
}

/// How long a phone waits, after the call, for the agent's last words to
/// be transcribed.
const TRANSCRIBE_WAIT: Duration = Duration::from_secs(20);

/// A stretch of agent audio being heard (local speech).
struct Stretch {
    n: u64,
    /// When it started playing, from the call's start.
    at: Duration,
    audio: Vec<i16>,
}

/// What the ear made of stretch `n`.
struct Heard {
    n: u64,
    at: Duration,
    text: String,
}

/// Transcriptions back in stretch order: several decoders may answer out
/// of order, and a listener pairs each `AgentSaid` with its stretch.
#[derive(Default)]
struct InOrder {
    next: u64,
    early: std::collections::BTreeMap<u64, Heard>,
}

impl InOrder {
    /// Take one answer; give back those now due, in order.
    fn take(&mut self, h: Heard) -> Vec<Heard> {
        self.early.insert(h.n, h);
        let mut due = Vec::new();
        while let Some(h) = self.early.remove(&self.next) {
            self.next += 1;
            due.push(h);
        }
        due
    }
}

/// Keep what a stretch of agent audio said, and report it.
fn take_heard(log: &mut PhoneLog, events: &mpsc::UnboundedSender<PhoneEvent>, h: Heard) {
    log.heard
        .extend(h.text.split_whitespace().map(|w| HeardWord {
            word: w.to_string(),
            at: h.at,
        }));
    let _ = events.send(PhoneEvent::AgentSaid {
        stretch: h.n,
        text: h.text,
    });
}

/// Caller audio (8 kHz µ-law) as whole 20 ms frames (the last padded with
/// silence).
fn ulaw_frames(ulaw: &[u8]) -> Vec<Vec<u8>> {
    ulaw.chunks(FRAME)
        .map(|c| {
            let mut f = c.to_vec();
            f.resize(FRAME, SILENCE);
            f
        })
        .collect()
}

/// Play 20 ms from the playout buffer: the audio played (if any) and the
/// marks whose audio has now all played.
/// The dead air of one turn, in playback time: from the end of a caller
/// line until the caller's next line, the longest stretch in which neither
/// side was heard and which the agent's audio ended. A turn the agent never
/// answered counts its whole wait, a lower bound of the dead air.
#[derive(Debug, Default)]
struct TurnAir {
    /// The longest silence so far that agent audio ended.
    air: Duration,
    /// Agent audio has played since the caller's line ended.
    answered: bool,
    /// When the current silence began (both sides quiet).
    quiet_since: Option<Instant>,
}

impl TurnAir {
    /// One 20 ms tick of the call: did the agent's audio play, is the
    /// caller silent.
    fn tick(&mut self, agent_played: bool, caller_silent: bool, now: Instant) {
        if agent_played {
            if let Some(q) = self.quiet_since.take() {
                self.air = self.air.max(now - q);
            }
            self.answered = true;
        } else if !caller_silent {
            // The caller talks again: no silence of the agent's.
            self.quiet_since = None;
        } else if self.quiet_since.is_none() {
            self.quiet_since = Some(now);
        }
    }

    /// The turn's dead air when the caller's next line begins at `now`.
    fn dead_air(&self, now: Instant) -> Duration {
        if self.answered {
            self.air
        } else {
            self.quiet_since.map_or(self.air, |q| now - q).max(self.air)
        }
    }
}

fn play(playout: &mut VecDeque<Item>) -> (Option<Vec<u8>>, Vec<String>) {
    let mut marks = Vec::new();
    let mut frame: Vec<u8> = Vec::new();
    while frame.len() < FRAME {
        match playout.front_mut() {
            Some(Item::Mark(_)) => {
                if let Some(Item::Mark(n)) = playout.pop_front() {
                    marks.push(n);
                }
            }
            Some(Item::Audio(a)) => {
                let take = (FRAME - frame.len()).min(a.len());
                frame.extend(a.drain(..take));
                if a.is_empty() {
                    playout.pop_front();
                }
            }
            None => break,
        }
    }
    // Marks right after this frame's audio: it has played.
    while let Some(Item::Mark(_)) = playout.front() {
        if let Some(Item::Mark(n)) = playout.pop_front() {
            marks.push(n);
        }
    }
    ((!frame.is_empty()).then_some(frame), marks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_echo_once_their_audio_played() {
        let mut p = VecDeque::new();
        p.push_back(Item::Audio(vec![1; 200]));
        p.push_back(Item::Mark("a".into()));
        p.push_back(Item::Audio(vec![2; 120]));
        p.push_back(Item::Mark("b".into()));
        let (f, m) = play(&mut p);
        assert_eq!(f.unwrap().len(), 160);
        assert!(m.is_empty());
        let (f, m) = play(&mut p);
        assert_eq!(f.unwrap().len(), 160);
        assert_eq!(m, ["a", "b"]);
        let (f, m) = play(&mut p);
        assert!(f.is_none() && m.is_empty());
    }

    #[test]
    fn a_caller_media_message_is_the_json_twilio_sends() {
        let sid = "MZ\"1";
        let sid_json = serde_json::to_string(sid).unwrap();
        let text = media_json(&sid_json, 7, 6, 100, &[0xFF, 0x7F, 0x00]);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v,
            json!({
                "event": "media",
                "sequenceNumber": "7",
                "streamSid": sid,
                "media": {"track": "inbound", "chunk": "6", "timestamp": "100", "payload": "/38A"},
            })
        );
    }

    #[test]
    fn the_agents_messages_are_read_without_copies() {
        let m: FromAgent =
            serde_json::from_str(r#"{"event":"mark","streamSid":"MZ1","mark":{"name":"u1:0.20"}}"#)
                .unwrap();
        assert_eq!(
            (m.event.as_ref(), m.mark.map(|k| k.name.into_owned())),
            ("mark", Some("u1:0.20".into()))
        );
        let m: FromAgent = serde_json::from_str(
            r#"{"event":"media","streamSid":"MZ1","media":{"payload":"/38A"}}"#,
        )
        .unwrap();
        assert!(matches!(
            m.media.as_ref().map(|p| &p.payload),
            Some(std::borrow::Cow::Borrowed("/38A"))
        ));
    }

    #[test]
    fn speech_is_whole_frames() {
        let frames = speech_frames("my AC is broken", 15.0);
        assert!(frames.iter().all(|f| f.len() == FRAME));
        let words: Vec<String> = frames
            .iter()
            .filter_map(|f| {
                let mut pcm = Vec::new();
                audio::mulaw::decode(f, &mut pcm);
                match codec::decode(&pcm) {
                    Decoded::Word(w) => Some(w),
                    _ => None,
                }
            })
            .collect();
        assert_eq!(words, ["my", "AC", "is", "broken"]);
    }

    #[test]
    fn transcriptions_are_reported_in_the_order_their_stretches_played() {
        let h = |n: u64| Heard {
            n,
            at: Duration::from_secs(n),
            text: format!("stretch {n}"),
        };
        let mut order = InOrder::default();
        assert!(
            order.take(h(1)).is_empty(),
            "stretch 0 is still being heard"
        );
        assert!(order.take(h(2)).is_empty());
        let due: Vec<u64> = order.take(h(0)).iter().map(|h| h.n).collect();
        assert_eq!(due, [0, 1, 2]);
        let due: Vec<u64> = order.take(h(3)).iter().map(|h| h.n).collect();
        assert_eq!(due, [3]);
    }
}
