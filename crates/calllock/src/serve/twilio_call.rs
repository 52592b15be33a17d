//! One phone call on one Twilio Media Streams WebSocket.
//!
//! ```text
//! socket reader ──media (µ-law)──▶ pipeline input (never waits: a full
//!       │                           queue drops the frame and counts it)
//!       ├──mark echo──▶ mark ledger ◀── TwilioSink (media + marks, clear)
//!       └──stop / close──▶ the end       ▲
//!                                        └── player (paced, small lead)
//! socket writer ◀── Outgoing (text frames only; nothing after close)
//! ```
//!
//! The first echo that proves an utterance played is also reported to the
//! pipeline ([`FirstHeard`]): when the caller first heard the reply, the
//! last step of the turn's latency record. Both sides go to the call's
//! [recording](crate::recording) as they pass: the caller's frames from
//! the reader, the agent's from the sink.
//!
//! The call starts at Twilio's `start` message: its `callSid` is the call
//! id (D-18), the `From` parameter the caller. It ends one of four ways:
//! the caller hangs up (`stop`, or the socket just closes), the agent hangs
//! up (its last line's final mark echoed — bounded — then one REST hang-up
//! and the socket closed), or the server shuts down (a goodbye line, a
//! callback promised, the REST hang-up). Whatever the end, the pipeline is
//! stopped, the journal closed and post-call processing run exactly once.
//!
//! The dashboard's browser phone ([`crate::web::phone`]) speaks the same
//! protocol on its own socket ([`Line::Browser`]): the same call, except
//! that the caller is the signed-in operator's browser (never what the
//! page claims) and there is no Twilio call to hang up.

use super::app::App;
use super::live::Shutdown;
use super::twilio_sink::{ledger, FirstHeard, Outgoing, SharedLedger, TwilioSink};
use crate::call::outcome::{Ending, Outcome};
use crate::call::voice_call::{start_call, CallParts, Pacing, ResponderLlm};
use agent::engine::{Effect, Engine, Input, ServerEnd};
use agent::session::Session;
use axum::extract::ws::{Message, WebSocket};
use futures_channel::mpsc;
use futures_util::{SinkExt, StreamExt};
use providers::twilio::marks::MarkLedger;
use providers::twilio::media_streams::{mark_message, media_message, Inbound, Start, StreamReader};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use voice::frames::{Audio, Encoding, Frame};
use voice::stages::tts::TtsEvent;

/// How long a new socket may take to send `start`.
const START_TIMEOUT: Duration = Duration::from_secs(10);

type WsRx = futures_util::stream::SplitStream<WebSocket>;

/// Which line a call came in on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// Twilio Media Streams (`/ws/twilio`).
    Twilio,
    /// The dashboard's browser phone (`/ws/phone`).
    Browser,
}

/// The caller of every browser-phone call.
pub const BROWSER_CALLER: &str = "browser";

/// Run one call to its end (the slot is held until post-call is done).
pub(crate) async fn run(app: Arc<App>, socket: WebSocket, slot: super::live::CallSlot, line: Line) {
    let (ws_tx, mut ws_rx) = socket.split();
    // A linked queue, not a tokio channel: it is nearly always empty, and
    // a tokio channel's block of slots would stay with the call for its
    // whole life.
    let (out_tx, out_rx) = mpsc::unbounded();
    // The call's place on the playout: its writer runs there, beside its
    // player (see `playout`), for as long as the call lasts.
    let lane = app.playout.assign();
    let writer = lane.handle().spawn(write_loop(ws_tx, out_rx));
    let mut reader = StreamReader::new();
    let Some(start) = wait_for_start(&mut ws_rx, &mut reader).await else {
        let _ = out_tx.unbounded_send(Outgoing::Close);
        drop(out_tx);
        let _ = writer.await;
        return;
    };
    // At `error` level so the span exists under any filter that shows a
    // line at all (the default is `warn`).
    let span = tracing::error_span!("call", call_id = %start.call_sid);
    let mut call = Call::new(app, start, out_tx, line, lane);
    // Every line of the call (and of the tasks it starts) names it.
    let live = async move {
        let started = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
        let Some(journal) = call.begin(started).await else {
            let _ = call.out.unbounded_send(Outgoing::Close);
            return;
        };
        // Recorded only once the call is known to be new: a refused
        // stream never touches an earlier call's recording.
        call.recording = call.app.recordings.as_ref().map(|r| r.begin(&call.call_id));
        call.run(ws_rx, reader, started, journal).await;
    };
    tracing::Instrument::instrument(live, span).await;
    let _ = writer.await;
    drop(slot);
}

/// Read until `start` (ignoring `connected`); `None` if the socket closes,
/// times out or breaks the protocol before it.
async fn wait_for_start(ws_rx: &mut WsRx, reader: &mut StreamReader) -> Option<Start> {
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    loop {
        let msg = tokio::time::timeout_at(deadline, ws_rx.next()).await;
        let text = match msg {
            Err(_) => {
                tracing::warn!("a stream sent no `start` within {START_TIMEOUT:?}; closed");
                return None;
            }
            Ok(None) | Ok(Some(Err(_))) | Ok(Some(Ok(Message::Close(_)))) => return None,
            Ok(Some(Ok(Message::Text(t)))) => t,
            Ok(Some(Ok(Message::Binary(_)))) => {
                tracing::warn!("binary frame before `start` ignored (Twilio sends text)");
                continue;
            }
            Ok(Some(Ok(_))) => continue,
        };
        match reader.read(text.as_str()) {
            Ok(Inbound::Start(s)) => return Some(s),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "message before `start` ignored"),
        }
    }
}

/// The socket's writer: sends what the call queues, in order, until a
/// close. Whatever is queued when it wakes (a frame of audio and its mark,
/// the lead of a new line) goes out in one write: a socket write is most
/// of what a frame costs the server.
pub async fn write_loop(
    mut ws_tx: futures_util::stream::SplitSink<WebSocket, Message>,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
) {
    'socket: while let Some(first) = rx.next().await {
        let mut next = Some(first);
        while let Some(o) = next.take() {
            let msg = match o {
                Outgoing::Text(t) => Message::Text(t.into()),
                Outgoing::Close => {
                    let _ = ws_tx.send(Message::Close(None)).await;
                    break 'socket;
                }
                Outgoing::CloseWith { code, reason } => {
                    let frame = axum::extract::ws::CloseFrame {
                        code,
                        reason: reason.into(),
                    };
                    let _ = ws_tx.send(Message::Close(Some(frame))).await;
                    break 'socket;
                }
            };
            // Buffered (up to `WRITE_BUFFER_BYTES`), written at the flush.
            if ws_tx.feed(msg).await.is_err() {
                break 'socket;
            }
            next = rx.try_recv().ok();
        }
        if ws_tx.flush().await.is_err() {
            break;
        }
    }
    // Dropping `rx` makes every later send a no-op: nothing after close.
    drop(rx);
    let _ = ws_tx.close().await;
}

/// The phone number in the `From` parameter, bounded in length.
fn caller_of(start: &Start) -> String {
    let from = start
        .custom_parameters
        .get("From")
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown");
    from.chars().take(64).collect()
}

/// A usable call id: Twilio's `CA…` call SID, else a local one.
fn call_id_of(start: &Start) -> String {
    let sid = start.call_sid.trim();
    if crate::recording::usable_id(sid) {
        sid.to_string()
    } else {
        format!(
            "CA-local-{}",
            chrono::Utc::now().format("%Y%m%d-%H%M%S-%6f")
        )
    }
}

struct Call {
    app: Arc<App>,
    start: Start,
    call_id: String,
    caller: String,
    line: Line,
    out: mpsc::UnboundedSender<Outgoing>,
    ledger: SharedLedger,
    /// Each utterance's first echo, reported to the pipeline (latency).
    first_heard: FirstHeard,
    /// Both sides of the call, when calls are recorded.
    recording: Option<crate::recording::CallRecording>,
    /// One more than the highest utterance id the pipeline played (the
    /// sink counts): the id of a line said after the pipeline stopped.
    next_id: Arc<AtomicU64>,
    /// The id of the line being said straight onto the socket (`u64::MAX`:
    /// none): its echoes are not a reply's first audio heard.
    direct: AtomicU64,
    /// The playout thread of this call's player and socket writer.
    lane: super::playout::Lane,
}

impl Call {
    fn new(
        app: Arc<App>,
        start: Start,
        out: mpsc::UnboundedSender<Outgoing>,
        line: Line,
        lane: super::playout::Lane,
    ) -> Self {
        let ledger = Arc::new(Mutex::new(MarkLedger::new(app.cfg.twilio.mark_interval_ms)));
        let call_id = call_id_of(&start);
        Call {
            recording: None,
            call_id,
            caller: match line {
                Line::Twilio => caller_of(&start),
                Line::Browser => BROWSER_CALLER.to_string(),
            },
            line,
            app,
            start,
            out,
            ledger,
            first_heard: FirstHeard::default(),
            next_id: Arc::default(),
            direct: AtomicU64::new(u64::MAX),
            lane,
        }
    }

    /// Register the call as new in the database and open its journal:
    /// `Some(journal)` (`Some(None)` when the database cannot be written:
    /// the call goes on, the caller must be served, and its record is
    /// still written at the end), or `None` when a call with this id
    /// already exists — a reused `callSid` is refused, never merged into
    /// the earlier call (its recording, times and post-call work stay).
    async fn begin(&self, started: f64) -> Option<Option<crate::call::journal::Journal>> {
        // Boxed: an async fn's state is as large as its largest await, and
        // a thousand calls would each carry it while they talk.
        match Box::pin(crate::call::journal::Journal::begin_new(
            &self.app.vendors.store,
            &self.call_id,
            &self.caller,
            started,
            &self.app.owner,
        ))
        .await
        {
            Ok(j) => Some(Some(j)),
            Err(store::StoreError::CallExists { .. }) => {
                tracing::warn!(
                    call_id = self.call_id,
                    stream_sid = self.start.stream_sid,
                    "refused a stream: a call with this callSid already exists (a reused call \
                     id); the stream is closed and the earlier call is left as it was"
                );
                metrics::counter!(crate::metrics::CALLS_REFUSED, "reason" => "duplicate_call_sid")
                    .increment(1);
                None
            }
            Err(e) => {
                tracing::error!(call_id = self.call_id, error = %e, "cannot journal the call");
                Some(None)
            }
        }
    }

    async fn run(
        self,
        mut ws_rx: WsRx,
        mut reader: StreamReader,
        started: f64,
        journal: Option<crate::call::journal::Journal>,
    ) {
        let cfg = self.app.cfg.clone();
        let vendors = &self.app.vendors;
        tracing::info!(
            call_id = self.call_id,
            caller = store::phone_for_logs(&self.caller),
            "call started"
        );
        // The steps after the live part are boxed (see `begin`).
        let mut session = Session::new(self.caller.clone());
        session.call_sid = self.call_id.clone();
        let engine = Engine::new(session, cfg.business.clone(), cfg.engine.engine_config());
        let speech = self.app.voices.for_call(&cfg);
        let speech_lost = speech.lost.clone();
        let sink = TwilioSink::new(
            self.out.clone(),
            self.start.stream_sid.clone(),
            self.ledger.clone(),
        )
        .recorded(self.recording.clone())
        .numbered(self.next_id.clone())
        .with_frame(cfg.serve.output_frame_ms);
        let mut call = start_call(
            CallParts {
                engine,
                backend: vendors.backend.clone(),
                responder: vendors.responder.clone(),
                llm: Arc::new(llm_of(&cfg, vendors)),
                tts: speech.tts,
                stt: speech.stt,
                detector: speech.detector,
                barge_in: voice::stages::turn::BargeInRules::default(),
                start_unix: started,
                journal: journal.clone(),
                output_lead: Duration::from_millis(cfg.serve.output_lead_ms),
                pacing: Some(self.app.pacing[self.lane.index()].clone()),
                playout: Some(self.lane.handle()),
                played_proof: Some({
                    let l = self.ledger.clone();
                    Arc::new(move |id| {
                        let l = ledger(&l);
                        crate::call::voice_call::Played {
                            heard: Duration::from_millis(l.heard_ms(id)),
                            whole: l.heard_whole(id),
                        }
                    })
                }),
            },
            sink,
        );
        self.first_heard.connect(call.milestones.clone());
        let Some(input) = call.pipeline.input().cloned() else {
            tracing::error!(call_id = self.call_id, "the pipeline has no input");
            return;
        };
        let mut shutdown = self.app.calls.shutdown();
        let mut dropped = 0u64;
        let end = loop {
            tokio::select! {
                msg = ws_rx.next() => {
                    let msg = match msg {
                        Some(Ok(msg)) => msg,
                        Some(Err(e)) if too_big(&e) => {
                            // RFC 6455 §7.4.1: 1009, the message is too big
                            // to process. The line broke the protocol; the
                            // caller did not hang up.
                            tracing::warn!(
                                call_id = self.call_id,
                                error = %e,
                                "a message over the size limit; closing the stream with 1009"
                            );
                            let _ = self.out.unbounded_send(Outgoing::CloseWith {
                                code: 1009,
                                reason: "message too big",
                            });
                            break Ending::LineError;
                        }
                        // The line dropped (a reset, no close frame).
                        _ => break Ending::Caller,
                    };
                    match self.on_message(msg, &mut reader) {
                        Step::Audio(ulaw, timestamp_ms) => {
                            if let Some(r) = &self.recording {
                                r.caller(&ulaw, timestamp_ms);
                            }
                            if speech_lost.as_ref().is_some_and(|l| l.load(Ordering::Relaxed)) {
                                break Ending::SpeechLost;
                            }
                            let frame = Frame::input_audio(Audio::mulaw(ulaw, 8000));
                            if input.try_send(frame).is_err() {
                                dropped += 1;
                                metrics::counter!(crate::metrics::CALLER_FRAMES_DROPPED).increment(1);
                            }
                        }
                        Step::Continue => {}
                        Step::Stop => break Ending::Caller,
                    }
                }
                _ = call.control.end.wait_for(Option::is_some) => {
                    break Ending::Agent;
                }
                r = shutdown.wait_for(|s| *s != Shutdown::Running) => {
                    let how = r.map(|s| *s).unwrap_or(Shutdown::Now);
                    break Ending::Shutdown { politely: how != Shutdown::Now };
                }
            }
        };
        // The caller's hang-up (or the agent's decision) is now: the line
        // stays up after it only while the agent still has a line to say.
        let broke_at = now_unix();
        if dropped > 0 {
            tracing::warn!(
                call_id = self.call_id,
                dropped,
                "caller audio frames dropped (the pipeline fell behind)"
            );
        }
        let times = (started, broke_at);
        Box::pin(self.finish(call, end, times, journal, ws_rx, reader)).await;
    }

    /// After the live part: the goodbye heard, the pipeline drained, the
    /// hang-up, the journal closed, post-call.
    ///
    /// The call's duration is the line's: from `start` to the last sound
    /// on it — the caller's hang-up, or the last mark of the agent's last
    /// line echoed — never the moment the agent decided to end (its
    /// goodbye still had to play) nor the drain and hang-up after.
    async fn finish(
        &self,
        mut call: crate::call::voice_call::RunningCall<TwilioSink>,
        ending: Ending,
        (started, broke_at): (f64, f64),
        journal: Option<crate::call::journal::Journal>,
        mut ws_rx: WsRx,
        mut reader: StreamReader,
    ) {
        let mut ended = broke_at;
        if ending == Ending::Agent {
            // The goodbye is heard in full (its last mark echoed) before
            // the line is cut.
            self.wait_for_marks(&mut ws_rx, &mut reader).await;
            ended = now_unix();
        }
        let stop = call.pipeline.end(Duration::from_secs(2)).await;
        let _ = call.player.await;
        let server_end = match ending {
            Ending::Shutdown { politely } => Some(ServerEnd::ShuttingDown { politely }),
            Ending::SpeechLost => Some(ServerEnd::SpeechLost),
            _ => None,
        };
        let out = call.control.outcome.await;
        let Ok(out) = out else {
            tracing::error!(call_id = self.call_id, "the call left no outcome");
            return;
        };
        let mut engine = out.engine;
        if let Some(why) = server_end {
            let quiet = self
                .end_for_server(&mut engine, why, &journal, &mut ws_rx, &mut reader)
                .await;
            if let Some(at) = quiet {
                ended = at.max(ended);
            }
        }
        let (mut session, log) = engine.into_parts();
        if ending == Ending::LineError {
            // The stream was closed on a broken message mid-call: nobody
            // told the caller, so an unsettled call becomes a callback.
            if let Some(from) = agent::engine::cut_off_by_the_server(&mut session) {
                tracing::warn!(
                    call_id = self.call_id,
                    state = from.as_str(),
                    "the line was closed mid-call: a callback is owed"
                );
            }
        }
        let mut outcome = Outcome {
            session,
            log,
            ended_by: ending,
            start_time: started,
            end_time: ended,
            tools: Vec::new(),
        };
        if ending.by_agent() {
            self.hang_up().await;
        }
        let _ = self.out.unbounded_send(Outgoing::Close);
        // The recording is on disk before the record says the call ended
        // (the dashboard offers it as soon as the call is finished).
        if let Some(r) = &self.recording {
            r.finish(Duration::from_secs(5)).await;
        }
        if let Some(j) = journal {
            let stats = j.close().await;
            if stats.lost > 0 {
                tracing::error!(
                    call_id = self.call_id,
                    lost = stats.lost,
                    "call events could not be written"
                );
            }
        }
        let report = self.app.post.handle_call_ended(&mut outcome, false).await;
        crate::metrics::call_finished(
            outcome.session.state.as_str(),
            ending.metric_label(),
            outcome.end_time - outcome.start_time,
        );
        tracing::info!(
            call_id = self.call_id,
            state = outcome.session.state.as_str(),
            ended_by = ending.metric_label(),
            graceful = stop.graceful,
            pending = report.pending.len(),
            "call ended"
        );
    }

    /// Handle one socket message.
    fn on_message(&self, msg: Message, reader: &mut StreamReader) -> Step {
        let text = match msg {
            Message::Text(t) => t,
            Message::Close(_) => return Step::Stop,
            Message::Binary(b) => {
                tracing::warn!(
                    call_id = self.call_id,
                    bytes = b.len(),
                    "binary frame ignored (Twilio sends text)"
                );
                return Step::Continue;
            }
            _ => return Step::Continue,
        };
        match reader.read(text.as_str()) {
            Ok(Inbound::Media(m)) => {
                if m.track.is_empty() || m.track == "inbound" {
                    return Step::Audio(m.payload, m.timestamp_ms);
                }
            }
            Ok(Inbound::Mark { name }) => {
                let played = ledger(&self.ledger).echo(&name);
                if let Some((utterance, heard_ms)) = played {
                    if utterance != self.direct.load(Ordering::Relaxed) {
                        self.first_heard.echoed(utterance, heard_ms);
                    }
                }
            }
            Ok(Inbound::Stop { .. }) => return Step::Stop,
            Ok(Inbound::Dtmf { digit }) => {
                tracing::info!(call_id = self.call_id, digit, "keypad press (ignored)");
            }
            Ok(_) => {}
            Err(e) => {
                metrics::counter!(crate::metrics::STREAM_MESSAGES_IGNORED, "reason" => e.kind())
                    .increment(1);
                tracing::warn!(call_id = self.call_id, error = %e, "message ignored");
            }
        }
        Step::Continue
    }

    /// Keep reading (echoes, `stop`) until every mark sent was echoed, the
    /// caller is gone, or `twilio.hangup_wait_s` passed.
    async fn wait_for_marks(&self, ws_rx: &mut WsRx, reader: &mut StreamReader) {
        let wait = Duration::from_secs_f64(self.app.cfg.twilio.hangup_wait_s);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if ledger(&self.ledger).pending() == 0 {
                return;
            }
            tokio::select! {
                msg = ws_rx.next() => {
                    let Some(Ok(msg)) = msg else { return };
                    if let Step::Stop = self.on_message(msg, reader) {
                        return;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    tracing::warn!(call_id = self.call_id, "the last line's mark was not echoed in time; hanging up");
                    return;
                }
            }
        }
    }

    /// One REST hang-up (when Twilio credentials are configured).
    async fn hang_up(&self) {
        let Some(rest) = &self.app.rest else { return };
        if self.line == Line::Browser {
            return;
        }
        if self.start.call_sid.trim().is_empty() {
            return;
        }
        match rest.hang_up(&self.start.call_sid).await {
            Ok(r) => tracing::info!(call_id = self.call_id, result = ?r, "hung up"),
            Err(e) => {
                // Closing the socket ends the call too (no TwiML after
                // <Connect>).
                tracing::warn!(call_id = self.call_id, error = %e, "REST hang-up failed; closing the stream")
            }
        }
    }

    /// The server ends the call (it is stopping, or the caller can no
    /// longer be heard). What that means for the call — a promised
    /// callback, the state, the line the caller hears — is the engine's
    /// decision ([`Input::ServerEnding`]); this carries out its effects on
    /// the line, whose pipeline has stopped: a state change goes to the
    /// journal, the line is said straight onto the socket, and what the
    /// echoes prove played is reported back to the engine and journaled
    /// (cut short when the caller hangs up during it, absent when not a
    /// word was heard). Returns when the line went quiet (its last mark
    /// echoed, or the caller gone), `None` when nothing was said.
    async fn end_for_server(
        &self,
        engine: &mut Engine,
        why: ServerEnd,
        journal: &Option<crate::call::journal::Journal>,
        ws_rx: &mut WsRx,
        reader: &mut StreamReader,
    ) -> Option<f64> {
        if why == ServerEnd::SpeechLost {
            tracing::error!(
                call_id = self.call_id,
                "the caller cannot be heard (speech recognition lost); ending the call"
            );
        }
        // The stage journaled the log up to here; what the engine now
        // records goes to the journal the same way.
        let mut rows = crate::call::journal::LogWriter::after(engine.log());
        let mut quiet = None;
        let effects = engine.handle(Input::ServerEnding(why), now_unix());
        if let Some(j) = journal {
            rows.write(j, engine.log());
        }
        for effect in effects {
            if let Effect::Speak { text, msg_id, .. } = effect {
                let said = self.say_directly(&text, ws_rx, reader).await;
                quiet = Some(now_unix());
                if !said.heard.is_empty() {
                    engine.handle(Input::SpeechStarted { msg_id }, said.at);
                }
                let report = if said.cut || said.heard.is_empty() {
                    let heard = said.heard.clone();
                    Input::AgentInterrupted { msg_id, heard }
                } else {
                    Input::SpeechFinished { msg_id }
                };
                engine.handle(report, now_unix());
                if said.heard.is_empty() {
                    tracing::info!(
                        call_id = self.call_id,
                        "the caller heard none of the last line"
                    );
                }
            }
        }
        if let Some(j) = journal {
            rows.write(j, engine.log());
        }
        quiet
    }

    /// Say `text` straight onto the socket (the pipeline has stopped), in
    /// the call's voice (the offline voice when every vendor fails), as the
    /// player says every line: audio starts as soon as the voice sends
    /// some, one `serve.output_frame_ms` frame at a time, in real time
    /// (`serve.output_lead_ms` ahead), a
    /// mark every `twilio.mark_interval_ms` and at the end, all under an
    /// utterance id of its own. The socket is read meanwhile (echoes, the
    /// caller's hang-up, which stops the line), and afterwards until the
    /// last mark echoed (bounded by `twilio.hangup_wait_s`).
    async fn say_directly(
        &self,
        text: &str,
        ws_rx: &mut WsRx,
        reader: &mut StreamReader,
    ) -> Direct {
        let cfg = &self.app.cfg;
        // 8 bytes of 8 kHz µ-law per millisecond.
        let frame =
            super::twilio_sink::output_frame(cfg.serve.output_frame_ms).as_millis() as usize * 8;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.direct.store(id, Ordering::Relaxed);
        let sid = &self.start.stream_sid;
        let lead = Duration::from_millis(cfg.serve.output_lead_ms);
        let tts = self.app.voices.tts();
        let mut stream = tts.synthesize(text);
        // The primary's wait, then a short line from the fallback: a
        // caller being let go is not kept waiting long.
        let limit = Duration::from_secs_f64(cfg.tts.first_audio_timeout_s.clamp(0.0, 60.0) + 5.0);
        let synth_until = tokio::time::Instant::now() + limit;
        // The voice is done (`complete`: it said the whole line).
        let mut synthesized = false;
        let mut complete = false;
        let mut audio: Vec<u8> = Vec::new();
        let mut pos = 0usize;
        // When the first frame went out, and how much has gone since (ms).
        let mut clock: Option<tokio::time::Instant> = None;
        let mut sent_ms = 0u64;
        let mut caller_gone = false;
        loop {
            let ready = audio.len() - pos >= frame || (synthesized && pos < audio.len());
            if synthesized && pos >= audio.len() {
                break;
            }
            let now = tokio::time::Instant::now();
            let due = match clock {
                None => now,
                Some(t0) => (t0 + Duration::from_millis(sent_ms))
                    .checked_sub(lead)
                    .unwrap_or(t0),
            };
            tokio::select! {
                item = stream.next(), if !synthesized => match item {
                    Some(Ok(TtsEvent::Audio(a))) => match (a.encoding, a.rate) {
                        (Encoding::MuLaw, 8000) => audio.extend_from_slice(&a.bytes),
                        (Encoding::Pcm16, 8000) => {
                            audio.extend(audio::mulaw::encode_pcm16le(&a.bytes));
                        }
                        (enc, rate) => {
                            tracing::warn!(?enc, rate, "a voice's audio is not 8 kHz; skipped");
                        }
                    },
                    Some(_) => {}
                    None => (synthesized, complete) = (true, true),
                },
                _ = tokio::time::sleep_until(synth_until), if !synthesized => {
                    tracing::warn!(call_id = self.call_id, "the last line took too long to synthesize; cut short");
                    synthesized = true;
                }
                _ = tokio::time::sleep_until(due), if ready => {
                    let end = (pos + frame).min(audio.len());
                    let chunk = &audio[pos..end];
                    pos = end;
                    let _ = self.out.unbounded_send(Outgoing::Text(media_message(sid, chunk)));
                    if let Some(r) = &self.recording {
                        r.agent(chunk);
                    }
                    let ms = chunk.len() as u64 / 8;
                    // The voice fell behind and the caller's buffer ran
                    // dry: the schedule starts again from this frame.
                    let now = tokio::time::Instant::now();
                    let behind = clock.is_some_and(|_| now > due + lead);
                    if clock.is_none() || behind {
                        clock = Some(now - Duration::from_millis(sent_ms));
                    }
                    sent_ms += ms;
                    self.mark(id, ms, false);
                }
                msg = ws_rx.next() => {
                    let Some(Ok(msg)) = msg else {
                        caller_gone = true;
                        break;
                    };
                    match self.on_message(msg, reader) {
                        Step::Stop => {
                            caller_gone = true;
                            break;
                        }
                        Step::Audio(ulaw, timestamp_ms) => {
                            if let Some(r) = &self.recording {
                                r.caller(&ulaw, timestamp_ms);
                            }
                        }
                        Step::Continue => {}
                    }
                }
            }
            // Every vendor failed (or said nothing): the offline voice.
            if synthesized && audio.is_empty() {
                let (samples, _) =
                    voice::offline::codec::encode(text, 8000, cfg.sim.speech_chars_per_s);
                audio::mulaw::encode(&samples, &mut audio);
                complete = true;
                if audio.is_empty() {
                    break;
                }
            }
        }
        let at = clock.map_or_else(now_unix, |t0| now_unix() - t0.elapsed().as_secs_f64());
        if !caller_gone {
            self.mark(id, 0, true);
            self.wait_for_marks(ws_rx, reader).await;
        }
        let heard_ms = ledger(&self.ledger).heard_ms(id);
        let total_ms = audio.len() as u64 / 8;
        let whole = complete && pos >= audio.len() && heard_ms >= total_ms;
        let heard = if whole {
            text.to_string()
        } else {
            heard_prefix(text, heard_ms, total_ms).to_string()
        };
        Direct {
            heard,
            cut: !whole,
            at,
        }
    }

    /// `ms` more of line `id` were sent (`last`: its end): a mark when due.
    fn mark(&self, id: u64, ms: u64, last: bool) {
        let due = ledger(&self.ledger).sent_audio(id, ms, last);
        if let Some(m) = due {
            let name = m.name;
            let _ = self
                .out
                .unbounded_send(Outgoing::Text(mark_message(&self.start.stream_sid, &name)));
        }
    }
}

/// What a line said straight onto the socket came to.
struct Direct {
    /// The words the echoes prove were played.
    heard: String,
    /// Not heard to its end (the caller hung up during it).
    cut: bool,
    /// When its first frame went out (Unix seconds).
    at: f64,
}

/// The whole words of `text` heard in `heard_ms` of its `total_ms` of
/// audio (the same share of its characters, back to a word's end).
fn heard_prefix(text: &str, heard_ms: u64, total_ms: u64) -> &str {
    if total_ms == 0 || heard_ms == 0 {
        return "";
    }
    if heard_ms >= total_ms {
        return text;
    }
    let chars = (text.chars().count() as u128 * heard_ms as u128 / total_ms as u128) as usize;
    let cut = text
        .char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i);
    let head = &text[..cut];
    // A word cut mid-way was not heard whole.
    let head = if text[cut..].starts_with(char::is_whitespace) || cut == text.len() {
        head
    } else {
        head.rfind(char::is_whitespace).map_or("", |i| &head[..i])
    };
    head.trim_end()
}

fn now_unix() -> f64 {
    chrono::Utc::now().timestamp_millis() as f64 / 1000.0
}

/// The call's LLM stage: the configured responder; offline (the scripted
/// line), paced like a model (`sim.llm_latency_s`, then word by word).
fn llm_of(cfg: &crate::config::Config, vendors: &crate::wiring::Vendors) -> ResponderLlm {
    let llm = ResponderLlm::new(vendors.responder.clone());
    if cfg.llm.enabled() {
        return llm;
    }
    llm.with_pacing(Pacing {
        first_token: Duration::from_secs_f64(cfg.sim.llm_latency_s.clamp(0.0, 60.0)),
        per_word: Duration::from_millis(30),
    })
}

enum Step {
    /// Caller audio (µ-law) and its stream timestamp (ms).
    Audio(Vec<u8>, u64),
    Continue,
    Stop,
}

/// Whether a socket read failed because a message (or frame) was over the
/// size limit (`serve` sets it from `MAX_MESSAGE_BYTES`).
fn too_big(e: &axum::Error) -> bool {
    use tokio_tungstenite::tungstenite::{error::CapacityError, Error};
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(Error::Capacity(CapacityError::MessageTooLong { .. })) =
            err.downcast_ref::<Error>()
        {
            return true;
        }
        source = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_callers_from_start() {
        let mut s = Start {
            call_sid: "CA0123456789abcdef0123456789abcdef".into(),
            ..Start::default()
        };
        s.custom_parameters
            .insert("From".into(), " +15125550100 ".into());
        assert_eq!(call_id_of(&s), "CA0123456789abcdef0123456789abcdef");
        assert_eq!(caller_of(&s), "+15125550100");
        s.call_sid = "../../etc/passwd".into();
        assert!(call_id_of(&s).starts_with("CA-local-"));
        s.custom_parameters.clear();
        assert_eq!(caller_of(&s), "unknown");
    }

    #[test]
    fn a_line_cut_short_keeps_the_whole_words_heard() {
        let text = "one two three";
        assert_eq!(heard_prefix(text, 0, 1300), "");
        assert_eq!(heard_prefix(text, 1300, 1300), text);
        assert_eq!(heard_prefix(text, 2000, 1300), text);
        // 8 of 13 characters: "one two " — two whole words.
        assert_eq!(heard_prefix(text, 800, 1300), "one two");
        // 6: "one tw" — the second word was not heard whole.
        assert_eq!(heard_prefix(text, 600, 1300), "one");
        assert_eq!(heard_prefix(text, 100, 1300), "");
        assert_eq!(heard_prefix("é à ü", 400, 500), "é à");
        assert_eq!(heard_prefix(text, 10, 0), "");
    }
}
