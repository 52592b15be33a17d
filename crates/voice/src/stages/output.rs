//! The output: the last stage and the player behind it.
//!
//! [`OutputStage`] hands agent audio into a small bounded queue (the
//! pipeline's tail). The [`Player`] takes it from there at real-time pace —
//! one frame per tick, as long as the sink asks ([`AudioSink::frame`]:
//! 20 ms unless it says otherwise; the Twilio socket takes 40 ms) — into an
//! [`AudioSink`] (the Twilio socket, the console, the test harness's ear).
//! The queue bounds how much audio waits ahead of playback (backpressure:
//! it holds [`OUTPUT_QUEUE_FRAMES`] of the voice's chunks), so a barge-in
//! has little to throw away.
//!
//! On a barge-in the player drops every stale frame still queued, tells the
//! sink to clear what the far end buffered (Twilio `clear`), and reports
//! upstream which utterance was cut and how much of it had been played
//! ([`ControlFrame::PlaybackInterrupted`]) — the conversation turns that
//! into what the caller heard.
//!
//! An utterance is finished ([`ControlFrame::UtteranceFinished`]) when the
//! far end proves it played to its end ([`AudioSink::heard_to_the_end`]),
//! not when its last frame is sent: audio goes out a little ahead of
//! playback, and a caller who hangs up in that moment did not hear the
//! end. Until then the utterance is *parked*: the bot is still speaking,
//! a barge-in cuts it as far as the far end confirmed, and a call that
//! ends settles it by the same proof. A far end that never confirms
//! costs [`ECHO_GRACE`] after the audio's end, then the player trusts its
//! own clock. The next utterance's first frame ends the wait: what was
//! queued before it has been played.
//!
//! When an utterance's first frame goes to the sink, the player reports
//! [`Milestone::FirstOutbound`] upstream (see [`crate::latency`]), and
//! when the utterance continues a stretch of the agent's speech,
//! [`Milestone::PlayerFree`]: when its first frame became due, the
//! earlier audio sent; a
//! transport that learns when the far end *played* it reports
//! [`Milestone::FirstHeard`] through a
//! [`MilestoneReporter`](crate::latency::MilestoneReporter).

use crate::floor::Floor;
use crate::frames::{Audio, ControlFrame, Data, Encoding, Epoch, Frame, UtteranceId};
use crate::inbox::{ControlHandle, Receiver};
use crate::latency::Milestone;
use crate::pacing::PacingStats;
use crate::scope::CallScope;
use crate::stage::{Ctx, Direction, Stage};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How much audio a sink takes at a time unless it says otherwise.
pub const DEFAULT_FRAME: Duration = Duration::from_millis(20);

/// Where agent audio goes.
pub trait AudioSink: Send + 'static {
    /// How much audio goes to [`AudioSink::play`] at a time (at most: a
    /// chunk of the voice's audio may end sooner). Each frame is one
    /// message on a socket: longer frames cost fewer writes, shorter ones
    /// let the player react sooner. Asked once, when the player starts.
    fn frame(&self) -> Duration {
        DEFAULT_FRAME
    }
    /// Send one frame of agent audio to the caller: PCM16, or µ-law when
    /// the voice gave µ-law at the output rate (Deepgram Aura) — passed on
    /// as the voice made it, so a µ-law line (Twilio) sends those bytes
    /// and a sink that needs samples decodes ([`Audio::into_pcm16`]).
    fn play(&mut self, audio: &Audio, id: UtteranceId, epoch: Epoch);
    /// Drop what the far end has buffered (barge-in).
    fn clear(&mut self);
    /// Utterance `id` has no more audio (its last frame was played).
    fn utterance_end(&mut self, _id: UtteranceId) {}
    /// How much of utterance `id` the far end *confirmed* it played, when
    /// the sink knows better than the player's own clock (Twilio echoes
    /// marks once audio has played). `None`: trust the player's count.
    /// Asked right after [`AudioSink::clear`] at a barge-in.
    fn heard(&self, _id: UtteranceId) -> Option<Duration> {
        None
    }
    /// Whether the far end confirmed it played utterance `id` to its last
    /// frame (Twilio: the echo of its last mark). `None`: the sink cannot
    /// know, and the utterance is finished once its last frame is sent.
    fn heard_to_the_end(&self, _id: UtteranceId) -> Option<bool> {
        None
    }
}

/// The last stage: agent audio and utterance ends go to the player; frames
/// the player sends upstream pass on up.
#[derive(Debug, Default)]
pub struct OutputStage;

impl Stage for OutputStage {
    fn name(&self) -> &'static str {
        "output"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            Frame::Data(d) => match d.data {
                Data::OutputAudio { .. } | Data::SpeakEnd { .. } => ctx.push(Frame::Data(d)),
                _ => {}
            },
            f @ Frame::Control(_) if dir == Direction::Upstream => ctx.push_up(f),
            _ => {}
        }
    }
}

/// Frames of agent audio (the voice's chunks) the output queue holds.
pub const OUTPUT_QUEUE_FRAMES: usize = 25;

/// How long past the end of an utterance's audio (at the far end) the
/// player waits for the far end to confirm it played, before it trusts
/// its own clock.
pub const ECHO_GRACE: Duration = Duration::from_millis(500);

/// An utterance whose audio was all sent and whose end the far end has
/// not confirmed yet.
#[derive(Debug, Clone, Copy)]
struct Parked {
    id: UtteranceId,
    sent: Duration,
    /// When to stop waiting for the confirmation.
    until: Instant,
}

struct Current {
    id: UtteranceId,
    epoch: Epoch,
    bytes: Bytes,
    pos: usize,
    rate: u32,
    encoding: Encoding,
}

/// Plays the output queue into a sink at real-time pace.
pub struct Player<S> {
    sink: S,
    rx: Receiver,
    up: ControlHandle,
    scope: Arc<CallScope>,
    floor: Arc<Floor>,
    frame: Duration,
    cur: Option<Current>,
    playing: Option<(UtteranceId, Duration)>,
    parked: Option<Parked>,
    speaking: bool,
    next_tick: Instant,
    /// Played time of the current utterance at its last progress report.
    reported: Duration,
    /// How far ahead of real time audio may be handed to the sink.
    lead: Duration,
    /// When the current stretch of speech started (frames due before it
    /// are the lead, sent at once on purpose).
    stretch_start: Instant,
    pacing: Option<Arc<PacingStats>>,
}

/// How often the player reports playback progress upstream.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(1);

impl<S: AudioSink> Player<S> {
    /// `rx` is the pipeline's tail; `up` the output stage's control handle.
    pub fn new(
        sink: S,
        rx: Receiver,
        up: ControlHandle,
        scope: Arc<CallScope>,
        floor: Arc<Floor>,
    ) -> Self {
        Player {
            frame: sink.frame().max(Duration::from_millis(1)),
            sink,
            rx,
            up,
            scope,
            floor,
            cur: None,
            playing: None,
            parked: None,
            speaking: false,
            next_tick: Instant::now(),
            reported: Duration::ZERO,
            lead: Duration::ZERO,
            stretch_start: Instant::now(),
            pacing: None,
        }
    }

    /// Count how late each frame is sent (see [`crate::pacing`]).
    pub fn with_pacing(mut self, stats: Arc<PacingStats>) -> Self {
        self.pacing = Some(stats);
        self
    }

    /// Hand audio to the sink up to `lead` ahead of real time (a far end
    /// with its own playout buffer, like Twilio, never runs dry between
    /// frames). The player's own "played" count runs ahead by as much; a
    /// sink that learns what really played says so in
    /// [`AudioSink::heard`].
    pub fn with_lead(mut self, lead: Duration) -> Self {
        self.lead = lead;
        self
    }

    fn up(&self, c: ControlFrame) {
        let _ = self.up.push(Frame::Control(c));
    }

    fn stop_speaking(&mut self) {
        if self.speaking {
            self.speaking = false;
            self.floor.set_bot_speaking(false);
            self.up(ControlFrame::BotStoppedSpeaking);
        }
    }

    fn interrupt(&mut self, epoch: Epoch) {
        // A line whose end the far end has just confirmed was not cut.
        self.settle(false);
        self.rx.purge_stale(|f| f.is_stale(epoch));
        if self.cur.as_ref().is_some_and(|c| c.epoch < epoch) {
            self.cur = None;
        }
        self.sink.clear();
        let cut = self
            .playing
            .take()
            .or(self.parked.take().map(|p| (p.id, p.sent)));
        let (id, played) = match cut {
            Some((id, played)) => (Some(id), self.confirmed(id, played)),
            None => (None, Duration::ZERO),
        };
        self.up(ControlFrame::PlaybackInterrupted { id, played });
        self.stop_speaking();
    }

    /// How much of utterance `id` was played: what the far end confirmed
    /// when it says, never more than was sent. (Progress reports go
    /// through here too: the accountant keeps the largest report, so one
    /// counted from what was sent ahead would outlive a smaller confirmed
    /// count at a barge-in.)
    fn confirmed(&self, id: UtteranceId, sent: Duration) -> Duration {
        self.sink.heard(id).map_or(sent, |h| h.min(sent))
    }

    /// Finish the parked utterance once the far end confirmed its end, its
    /// wait ran out, or `now` (the next utterance is starting).
    fn settle(&mut self, now: bool) {
        let Some(p) = self.parked else { return };
        let confirmed = self.sink.heard_to_the_end(p.id).unwrap_or(true);
        if !(confirmed || now || Instant::now() >= p.until) {
            return;
        }
        if !confirmed && !now {
            tracing::debug!(id = p.id, "the far end never confirmed the end of a line");
        }
        self.parked = None;
        self.up(ControlFrame::UtteranceFinished { id: p.id });
    }

    /// Returns false when the queue ended.
    fn take(&mut self, frame: Frame) -> bool {
        if frame.is_stale(self.scope.epoch()) {
            return true;
        }
        match frame {
            Frame::Data(d) => match d.data {
                Data::OutputAudio { id, audio } => {
                    if self.playing.map(|p| p.0) != Some(id) {
                        self.settle(true);
                        self.up(ControlFrame::UtteranceStarted { id });
                        self.playing = Some((id, Duration::ZERO));
                        self.reported = Duration::ZERO;
                        // It continues a stretch of speech: its first frame
                        // is due when the earlier audio is sent (the next
                        // tick; past already when that went late, or when
                        // it came after the earlier audio's end).
                        if self.speaking {
                            let _ = self
                                .up
                                .push(Milestone::PlayerFree.frame(id, self.next_tick));
                        }
                    }
                    if !self.speaking {
                        self.speaking = true;
                        self.floor.set_bot_speaking(true);
                        self.up(ControlFrame::BotStartedSpeaking);
                        let now = Instant::now();
                        let start = now.checked_sub(self.lead).unwrap_or(now);
                        self.next_tick = self.next_tick.max(start);
                        self.stretch_start = now;
                    }
                    self.cur = Some(Current {
                        id,
                        epoch: d.epoch,
                        bytes: audio.bytes,
                        pos: 0,
                        rate: audio.rate,
                        encoding: audio.encoding,
                    });
                }
                Data::SpeakEnd { id } => {
                    self.sink.utterance_end(id);
                    match self.playing {
                        Some((pid, sent)) if pid == id => {
                            let played = self.confirmed(id, sent);
                            self.up(ControlFrame::UtteranceProgress { id, played });
                            self.playing = None;
                            // Wait for the far end to play it to its end.
                            self.parked = Some(Parked {
                                id,
                                sent,
                                until: self.next_tick + self.lead + ECHO_GRACE,
                            });
                            self.settle(false);
                        }
                        _ => {
                            // Nothing of it was played: nothing to confirm.
                            self.settle(true);
                            self.up(ControlFrame::UtteranceStarted { id });
                            self.up(ControlFrame::UtteranceFinished { id });
                        }
                    }
                }
                _ => {}
            },
            Frame::Control(ControlFrame::End) => return false,
            _ => {}
        }
        true
    }

    fn play_one(&mut self) {
        let Some(cur) = self.cur.as_mut() else { return };
        // The audio goes to the sink in its own encoding (µ-law from a
        // vendor that speaks it stays µ-law): whole samples of it.
        let sample_bytes = match cur.encoding {
            Encoding::Pcm16 => 2,
            Encoding::MuLaw => 1,
        };
        let per_frame = ((u64::from(cur.rate) * self.frame.as_micros() as u64 / 1_000_000)
            as usize
            * sample_bytes)
            .max(sample_bytes);
        let end = (cur.pos + per_frame).min(cur.bytes.len());
        let chunk = Audio {
            bytes: cur.bytes.slice(cur.pos..end),
            rate: cur.rate,
            encoding: cur.encoding,
        };
        cur.pos = end;
        let (id, epoch) = (cur.id, cur.epoch);
        if cur.pos >= cur.bytes.len() {
            self.cur = None;
        }
        let d = chunk.duration();
        if let Some(stats) = &self.pacing {
            let due = self.next_tick.max(self.stretch_start);
            stats.record(Instant::now().saturating_duration_since(due));
        }
        self.sink.play(&chunk, id, epoch);
        let mut progress = None;
        if let Some((pid, played)) = self.playing.as_mut() {
            if *pid == id {
                if played.is_zero() {
                    // The utterance's first frame is on the wire.
                    let _ = self
                        .up
                        .push(Milestone::FirstOutbound.frame(id, Instant::now()));
                }
                *played += d;
                if *played >= self.reported + PROGRESS_EVERY {
                    self.reported = *played;
                    progress = Some(*played);
                }
            }
        }
        if let Some(sent) = progress {
            let played = self.confirmed(id, sent);
            self.up(ControlFrame::UtteranceProgress { id, played });
        }
        self.next_tick += d;
    }

    /// Play until the queue ends or the call is cancelled; returns the sink.
    pub async fn run(mut self) -> S {
        let mut seen = self.scope.epoch();
        let cancel = self.scope.call_token().clone();
        let scope = self.scope.clone();
        loop {
            let changed = scope.epoch_changed();
            if cancel.is_cancelled() {
                break;
            }
            let epoch = self.scope.epoch();
            if epoch != seen {
                seen = epoch;
                self.interrupt(epoch);
                continue;
            }
            if self.cur.is_some() {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => break,
                    _ = changed => continue,
                    _ = tokio::time::sleep_until(self.next_tick) => self.play_one(),
                }
                continue;
            }
            if let Some(f) = self.rx.try_recv() {
                if !self.take(f) {
                    break;
                }
                continue;
            }
            // Idle: wait for audio; while a line waits for the far end's
            // confirmation, look again every frame; else, while speaking,
            // the last frame's end (next tick) is when the bot stops.
            let parked = self.parked.is_some();
            let speaking = self.speaking && !parked;
            let until = self.next_tick;
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                _ = changed => continue,
                f = self.rx.recv() => match f {
                    Some(f) => if !self.take(f) { break },
                    None => break,
                },
                _ = tokio::time::sleep_until(until), if speaking => self.stop_speaking(),
                _ = tokio::time::sleep(self.frame), if parked => self.settle(false),
            }
        }
        self.stop_speaking();
        self.sink
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbox::inbox;

    /// A player into `sink` from `rx`, reporting upstream into `up`.
    fn player<S: AudioSink>(
        sink: S,
        rx: Receiver,
        up: &crate::inbox::Sender,
        scope: &Arc<CallScope>,
    ) -> Player<S> {
        Player::new(
            sink,
            rx,
            up.control_handle(),
            scope.clone(),
            Arc::new(Floor::default()),
        )
    }

    /// A far end that confirms only `confirmed` of any utterance.
    struct Lagging {
        confirmed: Duration,
        frames: usize,
    }

    impl AudioSink for Lagging {
        fn play(&mut self, _: &Audio, _: UtteranceId, _: Epoch) {
            self.frames += 1;
        }
        fn clear(&mut self) {}
        fn heard(&self, _: UtteranceId) -> Option<Duration> {
            Some(self.confirmed)
        }
    }

    /// Plays 1.5 s of one utterance (no end), returns what went upstream.
    async fn play_a_while(confirmed: Duration, pacing: Arc<PacingStats>) -> (Vec<Frame>, usize) {
        let (tx, rx) = inbox(200);
        let (up_tx, mut up_rx) = inbox(200);
        let scope = Arc::new(CallScope::new());
        let sink = Lagging {
            confirmed,
            frames: 0,
        };
        let player = player(sink, rx, &up_tx, &scope)
            .with_lead(Duration::from_millis(100))
            .with_pacing(pacing);
        let audio = Audio::pcm16(vec![0u8; 8000 * 2 * 3 / 2], 8000);
        tx.try_send(Frame::data(0, Data::OutputAudio { id: 7, audio }))
            .unwrap();
        let run = tokio::spawn(tracing::Instrument::in_current_span(player.run()));
        tokio::time::sleep(Duration::from_millis(1700)).await;
        scope.cancel();
        let sink = run.await.unwrap();
        let mut up = Vec::new();
        while let Some(f) = up_rx.try_recv() {
            up.push(f);
        }
        (up, sink.frames)
    }

    #[tokio::test(start_paused = true)]
    async fn progress_reports_what_the_far_end_confirmed_not_what_was_sent() {
        let stats = Arc::new(PacingStats::default());
        let (up, frames) = play_a_while(Duration::from_millis(640), stats.clone()).await;
        let progress: Vec<Duration> = up
            .iter()
            .filter_map(|f| match f {
                Frame::Control(ControlFrame::UtteranceProgress { id: 7, played }) => Some(*played),
                _ => None,
            })
            .collect();
        assert_eq!(progress, vec![Duration::from_millis(640)], "{up:?}");
        assert_eq!(frames, 75, "1.5 s sent in 20 ms frames");
        let sum = stats.summary();
        assert_eq!(sum.frames, 75);
        assert_eq!(sum.late_20ms, 0, "the lead is not lateness: {sum:?}");
    }

    /// A far end that takes `frame` at a time and notes when each came.
    struct Timed {
        frame: Duration,
        got: Arc<std::sync::Mutex<Vec<(Instant, Duration)>>>,
    }

    impl AudioSink for Timed {
        fn frame(&self) -> Duration {
            self.frame
        }
        fn play(&mut self, audio: &Audio, _: UtteranceId, _: Epoch) {
            self.got
                .lock()
                .unwrap()
                .push((Instant::now(), audio.duration()));
        }
        fn clear(&mut self) {}
    }

    #[tokio::test(start_paused = true)]
    async fn the_sink_says_how_much_audio_goes_at_a_time() {
        for ms in [20u64, 40, 100] {
            let frame = Duration::from_millis(ms);
            let got = Arc::default();
            let (tx, rx) = inbox(200);
            let (up_tx, _up_rx) = inbox(200);
            let scope = Arc::new(CallScope::new());
            let sink = Timed {
                frame,
                got: Arc::clone(&got),
            };
            let player = player(sink, rx, &up_tx, &scope);
            // 1 s of audio in one chunk, and 30 ms more in another.
            for (id, len) in [(1, 1000), (1, 30)] {
                let audio = Audio::pcm16(vec![0u8; 16 * len], 8000);
                tx.try_send(Frame::data(0, Data::OutputAudio { id, audio }))
                    .unwrap();
            }
            let t0 = Instant::now();
            let run = tokio::spawn(player.run());
            tokio::time::sleep(Duration::from_millis(1500)).await;
            scope.cancel();
            run.await.unwrap();
            let got = got.lock().unwrap();
            // Each chunk in frames of `ms`, the last of it what is left.
            let mut want = Vec::new();
            for mut left in [1000, 30] {
                while left > 0 {
                    want.push(Duration::from_millis(left.min(ms)));
                    left -= left.min(ms);
                }
            }
            let sizes: Vec<Duration> = got.iter().map(|g| g.1).collect();
            assert_eq!(sizes, want, "{ms} ms frames");
            // Each frame goes when the ones before it have played.
            let mut due = t0;
            for (i, (at, d)) in got.iter().enumerate() {
                assert_eq!(*at, due, "frame {i} of {ms} ms");
                due += *d;
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_line_behind_the_agent_s_earlier_audio_says_when_the_player_is_free_for_it() {
        let (tx, rx) = inbox(200);
        let (up_tx, mut up_rx) = inbox(200);
        let scope = Arc::new(CallScope::new());
        let sink = Timed {
            frame: DEFAULT_FRAME,
            got: Arc::default(),
        };
        let player = player(sink, rx, &up_tx, &scope);
        // Two lines queued at once: 300 ms, then 100 ms right behind it.
        for (id, ms) in [(1, 300), (2, 100)] {
            let audio = Audio::pcm16(vec![0u8; 16 * ms], 8000);
            tx.try_send(Frame::data(0, Data::OutputAudio { id, audio }))
                .unwrap();
        }
        let t0 = Instant::now();
        let run = tokio::spawn(player.run());
        // Long after both: a third line, said after a silence.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let t3 = Instant::now();
        let audio = Audio::pcm16(vec![0u8; 16 * 100], 8000);
        tx.try_send(Frame::data(0, Data::OutputAudio { id: 3, audio }))
            .unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        scope.cancel();
        run.await.unwrap();
        let mut got = Vec::new();
        while let Some(f) = up_rx.try_recv() {
            if let Frame::Control(ControlFrame::Milestone { id, milestone, at }) = f {
                got.push((id, milestone, at));
            }
        }
        let ms = |m| Duration::from_millis(m);
        assert_eq!(
            got,
            [
                (1, Milestone::FirstOutbound, t0),
                // Line 2 waited behind line 1's 300 ms, then went at once.
                (2, Milestone::PlayerFree, t0 + ms(300)),
                (2, Milestone::FirstOutbound, t0 + ms(300)),
                // Line 3 began a stretch of its own: it waited behind nothing.
                (3, Milestone::FirstOutbound, t3),
            ]
        );
    }

    /// A far end whose confirmations the test gives: how much of any
    /// utterance played, and whether to its end.
    #[derive(Clone, Default)]
    struct Confirming(Arc<std::sync::Mutex<(Duration, bool)>>);

    impl Confirming {
        fn confirm(&self, heard: Duration, whole: bool) {
            *self.0.lock().unwrap() = (heard, whole);
        }
    }

    impl AudioSink for Confirming {
        fn play(&mut self, _: &Audio, _: UtteranceId, _: Epoch) {}
        fn clear(&mut self) {}
        fn heard(&self, _: UtteranceId) -> Option<Duration> {
            Some(self.0.lock().unwrap().0)
        }
        fn heard_to_the_end(&self, _: UtteranceId) -> Option<bool> {
            Some(self.0.lock().unwrap().1)
        }
    }

    /// A player (100 ms lead) into a [`Confirming`] far end; what it sends
    /// upstream comes out of the returned receiver.
    fn confirming_player(
        ms: &[(UtteranceId, u64)],
    ) -> (Confirming, Receiver, Arc<CallScope>, crate::inbox::Sender) {
        let (tx, rx) = inbox(200);
        let (up_tx, up_rx) = inbox(200);
        let scope = Arc::new(CallScope::new());
        let sink = Confirming::default();
        let player = player(sink.clone(), rx, &up_tx, &scope).with_lead(Duration::from_millis(100));
        for &(id, ms) in ms {
            let audio = Audio::pcm16(vec![0u8; 16 * ms as usize], 8000);
            tx.try_send(Frame::data(0, Data::OutputAudio { id, audio }))
                .unwrap();
            tx.try_send(Frame::data(0, Data::SpeakEnd { id })).unwrap();
        }
        tokio::spawn(player.run());
        (sink, up_rx, scope, tx)
    }

    /// The control frames sent upstream so far, by name.
    fn names(up: &mut Receiver) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(f) = up.try_recv() {
            if let Frame::Control(c) = f {
                out.push(match c {
                    ControlFrame::UtteranceStarted { id } => format!("started {id}"),
                    ControlFrame::UtteranceFinished { id } => format!("finished {id}"),
                    ControlFrame::PlaybackInterrupted { id, played } => {
                        format!("interrupted {id:?} at {}", played.as_millis())
                    }
                    ControlFrame::BotStoppedSpeaking => "stopped".into(),
                    _ => continue,
                });
            }
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn a_line_is_finished_when_the_far_end_confirms_its_end_not_when_sent() {
        let (far, mut up, _scope, _tx) = confirming_player(&[(7, 400)]);
        // All of it was sent 100 ms before it ends at the far end; past
        // its end, until the far end confirms, the bot is still speaking.
        tokio::time::sleep(Duration::from_millis(400 + 200)).await;
        assert_eq!(names(&mut up), ["started 7"]);
        far.confirm(Duration::from_millis(400), true);
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(names(&mut up), ["finished 7", "stopped"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_far_end_that_never_confirms_costs_the_grace_then_the_clock_is_trusted() {
        let (_far, mut up, _scope, _tx) = confirming_player(&[(7, 400)]);
        // Its end at the far end: 400 ms of audio, 100 ms of lead at most.
        let end = Duration::from_millis(400 + 100);
        tokio::time::sleep(end + ECHO_GRACE - Duration::from_millis(140)).await;
        assert_eq!(names(&mut up), ["started 7"]);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(names(&mut up), ["finished 7", "stopped"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_barge_in_before_the_confirmation_cuts_the_line_where_the_far_end_was() {
        let (far, mut up, scope, _tx) = confirming_player(&[(7, 400)]);
        tokio::time::sleep(Duration::from_millis(360)).await;
        far.confirm(Duration::from_millis(300), false);
        scope.interrupt();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            names(&mut up),
            ["started 7", "interrupted Some(7) at 300", "stopped"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_next_line_starting_finishes_the_one_before() {
        let (_far, mut up, _scope, _tx) = confirming_player(&[(7, 200), (8, 200)]);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(names(&mut up), ["started 7", "finished 7", "started 8"]);
    }
}
