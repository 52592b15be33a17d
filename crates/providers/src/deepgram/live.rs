//! The live transcription socket of one call: audio up, utterances down.
//!
//! [`spawn`] starts a task that owns the socket; the call talks to it
//! through a [`LiveHandle`] (audio, `Finalize`, close — never waiting) and
//! hears back [`LiveEvent`]s. The task keeps the socket healthy the way
//! Deepgram asks:
//!
//! * audio goes up as binary frames as it comes (Twilio's µ-law as is);
//!   an empty frame is never sent (Deepgram reads it as a broken stream);
//! * whenever audio pauses for [`LiveConfig::keepalive_every`] (a muted
//!   call, a long tool call), a `KeepAlive` text frame goes instead, so
//!   Deepgram's 10-second rule never closes the socket;
//! * a `Finalize` is answered or, after [`LiveConfig::finalize_wait`], the
//!   words heard so far are taken as they are (an answer is not
//!   guaranteed);
//! * a socket that drops mid-call (1011, 1006, a reset) is reopened with
//!   backoff, and the audio Deepgram had not yet covered with final
//!   results — at most [`LiveConfig::replay_limit`] of it — is sent again,
//!   so no words are lost; a refused handshake (bad key, any 4xx) is final:
//!   [`LiveEvent::Failed`], and the call goes on without Deepgram;
//! * a socket that goes quiet is a dead socket (Pipecat #5240, #5735:
//!   no error, no close, no transcripts): when the VAD heard the caller
//!   stop (`Finalize`) and Deepgram sent nothing at all since the previous
//!   `Finalize` nor within [`LiveConfig::stall_after`] of this one, the
//!   socket is stalled. The first stall reopens it and sends the replay
//!   again, finalized, so the words come back; a second stall in a row
//!   reopens it without the replay and reports [`LiveEvent::NotHeard`]
//!   (the caller is asked to say it again); a third is
//!   [`LiveEvent::Failed`] (the call ends politely with a callback rather
//!   than leaving the caller talking to nobody);
//! * at the end, `CloseStream`, the last results (bounded), then close.

use super::listen::{self, ListenOptions, ServerMessage, CLOSE_STREAM, FINALIZE, KEEP_ALIVE};
use super::socket::{connect, ConnectError, Socket};
use super::utterances::{Heard, Utterances};
use bytes::Bytes;
use futures_channel::mpsc;
use futures_util::{SinkExt, StreamExt};
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::{self, Message};

/// µ-law bytes per second (8 kHz, one byte a sample).
const BYTES_PER_S: f64 = 8000.0;

/// Caller audio goes up in pieces of 100 ms (five of Twilio's 20 ms
/// frames), not frame by frame: a fifth of the messages and system calls
/// per call, for Deepgram the same stream. What is held back is sent before
/// every `Finalize` and before the close, so the end of an utterance is
/// never late; only interim results can come up to 80 ms later.
const SEND_BYTES: usize = 800;

/// How one call's socket is opened and kept.
#[derive(Clone)]
pub struct LiveConfig {
    /// `wss://api.deepgram.com` (or a fake's `ws://127.0.0.1:port`).
    pub base_url: String,
    pub api_key: String,
    pub options: ListenOptions,
    /// Send `KeepAlive` after this long without audio.
    pub keepalive_every: Duration,
    /// How long an answer to `Finalize` is waited for.
    pub finalize_wait: Duration,
    /// Audio kept for a replay after a reconnect.
    pub replay_limit: Duration,
    /// Waits between reconnect attempts (their count is the attempts).
    pub backoff: Vec<Duration>,
    /// One attempt to open the socket.
    pub connect_timeout: Duration,
    /// How long the last results are waited for after `CloseStream`.
    pub close_wait: Duration,
    /// A `Finalize` with nothing at all from Deepgram since the previous
    /// one and for this long after it: the socket is stalled.
    pub stall_after: Duration,
}

impl std::fmt::Debug for LiveConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"<hidden>")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl LiveConfig {
    /// Deepgram's defaults for `api_key` at `base_url`.
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Self {
        LiveConfig {
            base_url: base_url.into(),
            api_key: api_key.into(),
            options: ListenOptions::default(),
            keepalive_every: Duration::from_secs(4),
            finalize_wait: Duration::from_millis(400),
            replay_limit: Duration::from_secs(10),
            backoff: [100, 250, 500, 1000, 2000]
                .into_iter()
                .map(Duration::from_millis)
                .collect(),
            connect_timeout: Duration::from_secs(5),
            close_wait: Duration::from_secs(2),
            stall_after: Duration::from_secs(1),
        }
    }
}

/// What the socket task tells the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveEvent {
    Heard(Heard),
    /// The socket dropped and was reopened (the unacknowledged audio was
    /// sent again).
    Reconnected {
        attempt: usize,
    },
    /// The caller's last words were lost (the socket stalled twice in a
    /// row): ask them to say it again.
    NotHeard,
    /// Deepgram is unusable for this call (refused, every reconnect
    /// failed, or stalled three times in a row): nothing more will be
    /// heard from it. `unheard` is the caller audio (8 kHz µ-law) it
    /// never covered with final results — at most
    /// [`LiveConfig::replay_limit`] — for another recogniser to hear.
    Failed {
        why: String,
        unheard: Bytes,
    },
}

enum Command {
    Audio(Bytes),
    Finalize,
}

/// The call's side of the socket task. Dropping it closes the stream
/// (`CloseStream`, last results, close).
///
/// The task's two queues (commands up, [`LiveEvents`] down) are linked
/// lists, not tokio channels: a call holds them for its whole life and
/// they are nearly always empty, so they cost a few dozen bytes each
/// instead of a channel's pre-allocated block of slots.
pub struct LiveHandle {
    tx: mpsc::UnboundedSender<Command>,
}

impl LiveHandle {
    /// Caller audio (8 kHz µ-law). Empty audio is ignored. False when
    /// the socket task is gone (the stream closed or `Failed`): the audio
    /// was not taken.
    pub fn audio(&self, ulaw: Bytes) -> bool {
        ulaw.is_empty() || self.tx.unbounded_send(Command::Audio(ulaw)).is_ok()
    }

    /// Ask Deepgram for the final results of what it heard so far.
    pub fn finalize(&self) {
        let _ = self.tx.unbounded_send(Command::Finalize);
    }
}

/// Start the socket task of one call; events arrive on the receiver until
/// the handle is dropped and the stream is closed (or `Failed`).
pub fn spawn(cfg: LiveConfig) -> (LiveHandle, LiveEvents) {
    let (tx, rx) = mpsc::unbounded();
    let (ev_tx, ev_rx) = mpsc::unbounded();
    tokio::spawn(tracing::Instrument::in_current_span(run(cfg, rx, ev_tx)));
    (LiveHandle { tx }, LiveEvents(ev_rx))
}

/// What the socket task tells the call, in order.
pub struct LiveEvents(mpsc::UnboundedReceiver<LiveEvent>);

impl LiveEvents {
    /// The next event; `None` once the task has ended and every event
    /// was read.
    pub async fn recv(&mut self) -> Option<LiveEvent> {
        self.0.next().await
    }
}

/// The audio sent, kept until Deepgram covers it with final results.
///
/// Held in blocks of [`Replay::BLOCK`] bytes rather than one growing
/// buffer: what Deepgram covered is given back block by block as its
/// finals arrive, so a call carries about the audio it has not had
/// answered — not the most it ever had (a buffer that doubles keeps its
/// capacity, up to 128 KiB for the 10 s limit, for the rest of the call).
#[derive(Default)]
struct Replay {
    blocks: VecDeque<Vec<u8>>,
    /// Bytes of the first block already covered (dropped from the front).
    head: usize,
    /// Bytes held, after `head`.
    len: usize,
    /// Call-clock seconds of the first byte held.
    start: f64,
}

impl Replay {
    /// A fifth of a second of µ-law per block (what a half-filled last
    /// block wastes stays small).
    const BLOCK: usize = 1600;

    fn push(&mut self, mut audio: &[u8], limit: Duration) {
        while !audio.is_empty() {
            let room = match self.blocks.back() {
                Some(b) if b.len() < Self::BLOCK => Self::BLOCK - b.len(),
                _ => {
                    self.blocks.push_back(Vec::with_capacity(Self::BLOCK));
                    Self::BLOCK
                }
            };
            let (now, rest) = audio.split_at(room.min(audio.len()));
            self.blocks
                .back_mut()
                .expect("a block")
                .extend_from_slice(now);
            self.len += now.len();
            audio = rest;
        }
        let max = (limit.as_secs_f64() * BYTES_PER_S) as usize;
        if self.len > max {
            self.drop_front(self.len - max);
        }
    }

    /// Forget what Deepgram covered up to `t` seconds.
    fn acknowledge(&mut self, t: f64) {
        if t <= self.start {
            return;
        }
        self.drop_front(((t - self.start) * BYTES_PER_S) as usize);
    }

    /// Forget everything held; the next byte is at `t` seconds.
    fn clear(&mut self, t: f64) {
        *self = Replay {
            start: t,
            ..Replay::default()
        };
    }

    fn drop_front(&mut self, n: usize) {
        let n = n.min(self.len);
        self.len -= n;
        self.start += n as f64 / BYTES_PER_S;
        self.head += n;
        // Give back every block now wholly covered.
        while let Some(first) = self.blocks.front() {
            if self.head < first.len() {
                break;
            }
            self.head -= first.len();
            self.blocks.pop_front();
        }
    }

    /// The bytes held, oldest first: a piece per block (at most
    /// [`Replay::BLOCK`] bytes each).
    fn pieces(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut skip = self.head;
        self.blocks
            .iter()
            .map(move |b| &b[std::mem::take(&mut skip).min(b.len())..])
    }

    /// Take every byte held, oldest first (the call clock moves on).
    fn take_all(&mut self) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.len);
        for p in self.pieces() {
            all.extend_from_slice(p);
        }
        let n = self.len;
        self.drop_front(n);
        all
    }
}

/// `calllock doctor`'s check: open a socket with the key (the handshake
/// is where Deepgram refuses a key), then close it at once (`CloseStream`:
/// no audio, nothing transcribed). `Err` says why in plain words.
pub async fn probe(cfg: &LiveConfig) -> Result<(), String> {
    match connect(cfg).await {
        Ok(mut socket) => {
            let _ = socket.send(Message::text(CLOSE_STREAM)).await;
            let _ = socket.close(None).await;
            Ok(())
        }
        Err(ConnectError::Refused(why)) => Err(why),
        Err(ConnectError::Transient(why)) => Err(format!("unreachable: {why}")),
    }
}

/// How one socket's life ended.
enum SocketEnd {
    /// The call closed the stream: done.
    Closed,
    /// The socket dropped: reconnect.
    Dropped(String),
    /// The socket went quiet (see the module docs): reconnect once.
    Stalled,
}

struct Task {
    cfg: LiveConfig,
    rx: mpsc::UnboundedReceiver<Command>,
    events: mpsc::UnboundedSender<LiveEvent>,
    utterances: Utterances,
    replay: Replay,
    /// Call-clock seconds of audio received from the call.
    received: f64,
    /// Messages received from Deepgram (any socket).
    messages: u64,
    /// `messages` when the last stall check passed (or a socket opened).
    quiet_from: u64,
    /// When the pending stall check is due.
    stall_at: Option<Instant>,
    /// Stalls in a row, with no message from Deepgram between them.
    stalls: u32,
    /// Send `Finalize` right after the next socket's replay (the caller
    /// had stopped when the last socket ended).
    refinalize: bool,
}

async fn run(
    cfg: LiveConfig,
    rx: mpsc::UnboundedReceiver<Command>,
    events: mpsc::UnboundedSender<LiveEvent>,
) {
    let mut task = Task {
        utterances: Utterances::new(cfg.finalize_wait),
        cfg,
        rx,
        events,
        replay: Replay::default(),
        received: 0.0,
        messages: 0,
        quiet_from: 0,
        stall_at: None,
        stalls: 0,
        refinalize: false,
    };
    let mut failures = 0usize;
    let mut reconnecting = false;
    loop {
        // Boxed: the handshake's state is large (TLS, HTTP upgrade) and
        // would otherwise stay part of every call's task while it serves.
        let socket = match Box::pin(connect(&task.cfg)).await {
            Ok(s) => s,
            Err(ConnectError::Refused(why)) => {
                tracing::error!(error = %why, "Deepgram STT unusable for this call");
                task.fail(why).await;
                return;
            }
            Err(ConnectError::Transient(why)) => {
                let Some(wait) = task.cfg.backoff.get(failures).copied() else {
                    let why = format!("Deepgram unreachable after {failures} retries: {why}");
                    tracing::error!(error = %why, "Deepgram STT unusable for this call");
                    task.fail(why).await;
                    return;
                };
                failures += 1;
                tracing::warn!(error = %why, attempt = failures, "Deepgram connect failed; retrying");
                // Keep the audio that arrives meanwhile for the replay.
                if task.wait_buffering(wait).await {
                    task.finish_offline();
                    return;
                }
                continue;
            }
        };
        if reconnecting {
            let _ = task.events.unbounded_send(LiveEvent::Reconnected {
                attempt: failures.max(1),
            });
        }
        // Split here, not in `serve`: an `async fn` keeps its arguments in
        // its state for as long as it runs, and a socket is 1.4 KB.
        let (tx, rx) = socket.split();
        match task.serve(tx, rx).await {
            SocketEnd::Closed => return,
            SocketEnd::Dropped(why) => {
                tracing::warn!(error = %why, "Deepgram socket dropped mid-call; reconnecting");
                // A Finalize awaiting its check: the caller had stopped.
                task.refinalize = task.stall_at.take().is_some();
                reconnecting = true;
                failures = 0;
            }
            SocketEnd::Stalled if task.stalls >= 3 => {
                let why = "Deepgram stopped answering (stalled three times)".to_string();
                tracing::error!(error = %why, "Deepgram STT unusable for this call");
                task.fail(why).await;
                return;
            }
            SocketEnd::Stalled if task.stalls == 2 => {
                // The words are lost: start afresh and ask the caller.
                tracing::warn!("Deepgram stalled again; the caller is asked to repeat");
                // Drop the unheard audio but keep the call clock: the new
                // socket's times start at the call's present, after every
                // word already delivered.
                task.replay.clear(task.received);
                task.refinalize = false;
                let _ = task.events.unbounded_send(LiveEvent::NotHeard);
                reconnecting = true;
                failures = 0;
            }
            SocketEnd::Stalled => {
                tracing::warn!("Deepgram sent nothing for an utterance; reconnecting");
                task.refinalize = true;
                reconnecting = true;
                failures = 0;
            }
        }
    }
}

impl Task {
    fn emit(&self, heard: Heard) {
        let _ = self.events.unbounded_send(LiveEvent::Heard(heard));
    }

    /// Give up on Deepgram: its final words are delivered, then `Failed`
    /// with every byte of caller audio it did not answer — the replay and
    /// what is still queued. The queue is closed first and read to its
    /// end: a send that was under way when it closed is still waited for
    /// (the queue ends only once every accepted send arrived), so nothing
    /// the handle took slips between; later sends are refused.
    async fn fail(&mut self, why: String) {
        if let Some(h) = self.utterances.flush_finals() {
            self.emit(h);
        }
        self.rx.close();
        while let Some(cmd) = self.rx.next().await {
            if let Command::Audio(a) = cmd {
                self.take_audio(&a);
            }
        }
        let unheard = Bytes::from(self.replay.take_all());
        let _ = self
            .events
            .unbounded_send(LiveEvent::Failed { why, unheard });
    }

    /// The call closed while no socket was open.
    fn finish_offline(&mut self) {
        if let Some(h) = self.utterances.flush() {
            self.emit(h);
        }
    }

    fn take_audio(&mut self, audio: &[u8]) {
        self.received += audio.len() as f64 / BYTES_PER_S;
        self.replay.push(audio, self.cfg.replay_limit);
    }

    /// Wait `wait`, keeping audio for the replay; true if the call closed.
    async fn wait_buffering(&mut self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => return false,
                cmd = self.rx.next() => match cmd {
                    Some(Command::Audio(a)) => self.take_audio(&a),
                    // The caller stopped while no socket was open: ask
                    // the next one for the words at once.
                    Some(Command::Finalize) => self.refinalize = true,
                    None => return true,
                },
            }
        }
    }

    /// A `Finalize` went out: check for a stall after `stall_after`.
    fn arm_stall_check(&mut self) {
        if self.stall_at.is_none() {
            self.stall_at = Some(Instant::now() + self.cfg.stall_after);
        }
    }

    /// The stall check is due: true if Deepgram sent nothing since the
    /// last check passed.
    fn stalled(&mut self) -> bool {
        self.stall_at = None;
        if self.messages > self.quiet_from {
            self.quiet_from = self.messages;
            return false;
        }
        self.stalls += 1;
        true
    }

    /// Run one open socket until the call closes or the socket drops.
    async fn serve(
        &mut self,
        mut tx: futures_util::stream::SplitSink<Socket, Message>,
        mut rx: futures_util::stream::SplitStream<Socket>,
    ) -> SocketEnd {
        self.quiet_from = self.messages;
        let after_stall = std::mem::take(&mut self.refinalize);
        self.stall_at = None;
        // This socket's audio starts where Deepgram's coverage ended.
        let offset = self.replay.start;
        let again: Vec<Bytes> = self.replay.pieces().map(Bytes::copy_from_slice).collect();
        for chunk in again {
            if let Err(e) = tx.send(Message::Binary(chunk)).await {
                return SocketEnd::Dropped(e.to_string());
            }
        }
        if after_stall {
            // The caller had stopped when the old socket stalled: ask for
            // the replayed words at once, and watch this socket too.
            if let Err(e) = tx.send(Message::text(FINALIZE)).await {
                return SocketEnd::Dropped(e.to_string());
            }
            self.utterances.finalize_sent(Instant::now());
            self.arm_stall_check();
        }
        let mut last_sent = Instant::now();
        // Caller audio not sent yet: it goes up in pieces of SEND_BYTES.
        let mut unsent = bytes::BytesMut::new();
        loop {
            let keepalive_at = last_sent + self.cfg.keepalive_every;
            let deadline = self.utterances.deadline();
            tokio::select! {
                cmd = self.rx.next() => match cmd {
                    Some(Command::Audio(a)) => {
                        self.take_audio(&a);
                        unsent.extend_from_slice(&a);
                        if unsent.len() >= SEND_BYTES {
                            if let Err(e) = send_unsent(&mut tx, &mut unsent).await {
                                return SocketEnd::Dropped(e.to_string());
                            }
                            last_sent = Instant::now();
                        }
                    }
                    Some(Command::Finalize) => {
                        // The words end with the audio held back.
                        if let Err(e) = send_unsent(&mut tx, &mut unsent).await {
                            return SocketEnd::Dropped(e.to_string());
                        }
                        if let Err(e) = tx.send(Message::text(FINALIZE)).await {
                            return SocketEnd::Dropped(e.to_string());
                        }
                        self.utterances.finalize_sent(Instant::now());
                        self.arm_stall_check();
                        last_sent = Instant::now();
                    }
                    None => {
                        // On error, close() finds the socket gone too and
                        // still delivers the words heard.
                        let _ = send_unsent(&mut tx, &mut unsent).await;
                        self.close(&mut tx, &mut rx, offset).await;
                        return SocketEnd::Closed;
                    }
                },
                msg = rx.next() => match msg {
                    Some(Ok(Message::Text(t))) => self.on_text(t.as_str(), offset),
                    Some(Ok(Message::Close(frame))) => {
                        let why = frame.map_or("closed".to_string(), |f| format!("{} {}", f.code, f.reason));
                        return SocketEnd::Dropped(why);
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return SocketEnd::Dropped(e.to_string()),
                    None => return SocketEnd::Dropped("socket ended".into()),
                },
                _ = tokio::time::sleep_until(keepalive_at) => {
                    // Audio held back is sent rather than a KeepAlive.
                    let sent = if unsent.is_empty() {
                        tx.send(Message::text(KEEP_ALIVE)).await
                    } else {
                        send_unsent(&mut tx, &mut unsent).await
                    };
                    if let Err(e) = sent {
                        return SocketEnd::Dropped(e.to_string());
                    }
                    last_sent = Instant::now();
                }
                _ = sleep_until_some(deadline) => {
                    if let Some(h) = self.utterances.on_deadline(Instant::now()) {
                        self.emit(h);
                        self.replay.acknowledge(self.utterances.acknowledged());
                    }
                }
                _ = sleep_until_some(self.stall_at) => {
                    if self.stalled() {
                        return SocketEnd::Stalled;
                    }
                }
            }
        }
    }

    fn on_text(&mut self, text: &str, offset: f64) {
        self.messages += 1;
        self.stalls = 0;
        match listen::parse(text) {
            Ok(ServerMessage::Error { description }) => {
                tracing::warn!(error = %description, "Deepgram reported an error");
            }
            Ok(msg) => {
                for h in self.utterances.on_message(&msg, offset) {
                    self.emit(h);
                }
                self.replay.acknowledge(self.utterances.acknowledged());
            }
            Err(e) => tracing::warn!(error = %e, "Deepgram message ignored"),
        }
    }

    /// `CloseStream`, then the last results until Deepgram closes (bounded).
    async fn close(
        &mut self,
        tx: &mut futures_util::stream::SplitSink<Socket, Message>,
        rx: &mut futures_util::stream::SplitStream<Socket>,
        offset: f64,
    ) {
        if tx.send(Message::text(CLOSE_STREAM)).await.is_ok() {
            let until = Instant::now() + self.cfg.close_wait;
            loop {
                match tokio::time::timeout_at(until, rx.next()).await {
                    Ok(Some(Ok(Message::Text(t)))) => self.on_text(t.as_str(), offset),
                    Ok(Some(Ok(Message::Close(_)))) | Ok(None) | Ok(Some(Err(_))) | Err(_) => break,
                    Ok(Some(Ok(_))) => {}
                }
            }
        }
        let _ = tx.close().await;
        if let Some(h) = self.utterances.flush() {
            self.emit(h);
        }
    }
}

/// Send the audio held back, if any.
async fn send_unsent(
    tx: &mut futures_util::stream::SplitSink<Socket, Message>,
    unsent: &mut bytes::BytesMut,
) -> Result<(), tungstenite::Error> {
    if unsent.is_empty() {
        return Ok(());
    }
    tx.send(Message::Binary(unsent.split().freeze())).await
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(r: &Replay) -> Vec<u8> {
        r.pieces().flatten().copied().collect()
    }

    #[test]
    fn replay_keeps_only_what_deepgram_has_not_covered() {
        let mut r = Replay::default();
        r.push(&[1u8; 8000], Duration::from_secs(10)); // 1 s
        r.acknowledge(0.5);
        assert_eq!(r.len, 4000);
        assert_eq!(r.start, 0.5);
        r.acknowledge(0.25); // older: nothing
        assert_eq!(r.len, 4000);
        r.push(&[2u8; 8000 * 12], Duration::from_secs(10));
        assert_eq!(r.len, 80_000, "at most the replay limit");
        assert_eq!(held(&r), vec![2u8; 80_000]);
        assert!((r.start - 3.0).abs() < 1e-9, "{}", r.start);
        r.acknowledge(100.0);
        assert_eq!(r.len, 0);
        assert!(r.blocks.is_empty(), "nothing held once all is covered");
    }

    #[test]
    fn replay_gives_covered_blocks_back_and_keeps_order() {
        // A model: the same pushes and acknowledgements on a plain queue.
        let mut r = Replay::default();
        let mut model: VecDeque<u8> = VecDeque::new();
        let mut model_start = 0.0f64;
        let limit = Duration::from_secs(2);
        let mut next = 0u8;
        let mut seed = 0x2545_f491_u64;
        for step in 0..2_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            if seed.is_multiple_of(3) {
                let t = model_start + (seed % 9_000) as f64 / BYTES_PER_S;
                r.acknowledge(t);
                let n = (((t - model_start) * BYTES_PER_S) as usize).min(model.len());
                model.drain(..n);
                model_start += n as f64 / BYTES_PER_S;
            } else {
                let frame: Vec<u8> = (0..(seed % 700) as usize)
                    .map(|_| {
                        next = next.wrapping_add(1);
                        next
                    })
                    .collect();
                r.push(&frame, limit);
                model.extend(&frame);
                let max = 2 * 8000;
                if model.len() > max {
                    let n = model.len() - max;
                    model.drain(..n);
                    model_start += n as f64 / BYTES_PER_S;
                }
            }
            assert_eq!(r.len, model.len(), "step {step}");
            assert!((r.start - model_start).abs() < 1e-6, "step {step}");
            assert_eq!(
                held(&r),
                model.iter().copied().collect::<Vec<_>>(),
                "step {step}"
            );
            let blocks_needed = (r.head + r.len).div_ceil(Replay::BLOCK);
            assert!(
                r.blocks.len() <= blocks_needed + 1,
                "step {step}: {} blocks for {} bytes",
                r.blocks.len(),
                r.len
            );
            assert!(r.head < Replay::BLOCK, "step {step}");
        }
        let all = r.take_all();
        assert_eq!(all, model.iter().copied().collect::<Vec<_>>());
        assert!(r.len == 0 && r.blocks.is_empty());
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let cfg = LiveConfig::new("wss://api.deepgram.com", "dg-secret-key");
        assert!(!format!("{cfg:?}").contains("dg-secret-key"));
    }
}
