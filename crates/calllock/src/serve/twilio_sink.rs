//! Agent audio onto a Twilio Media Streams socket.
//!
//! The pipeline's player hands each frame of agent audio (8 kHz; as
//! long as the sink asks, [`TwilioSink::with_frame`]: the serve
//! `output_frame_ms`, one `media` message each) to [`TwilioSink::play`]
//! at real-time pace (a little ahead: the serve `output_lead_ms`).
//! µ-law (Deepgram Aura's own audio) goes into one `media` message byte
//! for byte; PCM16 (every other voice) is µ-law
//! encoded first. Every `mark_interval_ms` of audio and at each utterance's
//! end, sends a `mark` recorded in the [`MarkLedger`]. The socket's reader
//! feeds Twilio's echoes back into the same ledger, so what the caller
//! heard — asked for by the player at a barge-in ([`AudioSink::heard`]) —
//! comes from the echoes, never from what was sent. The first echo of each
//! utterance is also when the caller first heard it ([`FirstHeard`]): the
//! last step of a turn's latency.
//!
//! Messages go to the socket's writer task through an unbounded channel:
//! the player never waits on the network, and the channel stays small
//! because the player itself is paced in real time. Once the writer is
//! gone (the socket closed) every send is a no-op: nothing is written
//! after close.

use futures_channel::mpsc::UnboundedSender;
use providers::twilio::marks::MarkLedger;
use providers::twilio::media_streams::{clear_message, mark_message, media_message};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use voice::frames::{Audio, Encoding, Epoch, UtteranceId};
use voice::latency::{Milestone, MilestoneReporter};
use voice::stages::output::AudioSink;

/// What the call sends on its socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// A JSON text frame (`media`, `mark`, `clear`).
    Text(String),
    /// Close the socket (we end the call).
    Close,
    /// Close the socket with this close code and reason (the line broke
    /// the protocol, e.g. 1009: a message too big).
    CloseWith { code: u16, reason: &'static str },
}

/// The mark ledger shared by the sink (marks sent, `clear`) and the
/// socket reader (echoes).
pub type SharedLedger = Arc<Mutex<MarkLedger>>;

/// Lock the ledger (a panic elsewhere never poisons the call).
pub fn ledger(l: &SharedLedger) -> std::sync::MutexGuard<'_, MarkLedger> {
    l.lock().unwrap_or_else(|e| e.into_inner())
}

/// When the caller first heard each utterance: its first echo that
/// proves audio played ([`MarkLedger::echo`] says which do), reported into
/// the call's pipeline as [`Milestone::FirstHeard`] for the turn's
/// latency. Lock-free and O(1) per echo; echoes before the pipeline is
/// [connected](FirstHeard::connect) are not reported.
#[derive(Debug, Default)]
pub struct FirstHeard {
    reporter: OnceLock<MilestoneReporter>,
    /// One more than the utterance last reported (0: none yet).
    last: AtomicU64,
}

impl FirstHeard {
    /// Report into this call's pipeline from now on.
    pub fn connect(&self, reporter: MilestoneReporter) {
        let _ = self.reporter.set(reporter);
    }

    /// The ledger said an echo proved `heard_ms` of `utterance` played.
    /// Utterances play one after another, so the first echo of each is
    /// the first whose utterance differs from the last reported.
    pub fn echoed(&self, utterance: UtteranceId, heard_ms: u64) {
        if utterance == u64::MAX {
            return; // a line said straight onto the socket, not a reply
        }
        if self.last.swap(utterance + 1, Ordering::Relaxed) == utterance + 1 {
            return;
        }
        if let Some(r) = self.reporter.get() {
            let confirmed_ms = u32::try_from(heard_ms).unwrap_or(u32::MAX);
            r.report(utterance, Milestone::FirstHeard { confirmed_ms });
        }
    }
}

/// The agent's voice on one Twilio stream.
pub struct TwilioSink {
    out: UnboundedSender<Outgoing>,
    stream_sid: String,
    ledger: SharedLedger,
    /// Agent audio sent (ms), for metrics and tests.
    sent_ms: Arc<std::sync::atomic::AtomicU64>,
    /// The call's recording (the agent's side).
    recording: Option<crate::recording::CallRecording>,
    /// One more than the highest utterance id played: a line said
    /// straight onto the socket after the pipeline stopped takes its id
    /// from here, so its marks never share an utterance's name.
    next_id: Arc<AtomicU64>,
    /// Agent audio per `media` message.
    frame: Duration,
}

impl TwilioSink {
    pub fn new(out: UnboundedSender<Outgoing>, stream_sid: String, ledger: SharedLedger) -> Self {
        TwilioSink {
            out,
            stream_sid,
            ledger,
            sent_ms: Arc::default(),
            recording: None,
            next_id: Arc::default(),
            frame: voice::stages::output::DEFAULT_FRAME,
        }
    }

    /// Send `frame_ms` of audio per `media` message (the serve
    /// `output_frame_ms`; 20 ms unless set), as [`output_frame`] reads it.
    pub fn with_frame(mut self, frame_ms: u64) -> Self {
        self.frame = output_frame(frame_ms);
        self
    }

    /// Count the utterance ids played into `next_id` (one more than the
    /// highest), shared with whoever speaks after the pipeline stopped.
    pub fn numbered(mut self, next_id: Arc<AtomicU64>) -> Self {
        self.next_id = next_id;
        self
    }

    /// Record what the agent sends (and what a `clear` cut) on `recording`.
    pub fn recorded(mut self, recording: Option<crate::recording::CallRecording>) -> Self {
        self.recording = recording;
        self
    }

    fn send(&self, text: String) {
        // The writer is gone once the socket closed: drop silently.
        let _ = self.out.unbounded_send(Outgoing::Text(text));
    }

    fn mark_if_due(&self, id: UtteranceId, ms: u64, last: bool) {
        self.next_id
            .fetch_max(id.saturating_add(1), Ordering::Relaxed);
        let due = ledger(&self.ledger).sent_audio(id, ms, last);
        if let Some(m) = due {
            self.send(mark_message(&self.stream_sid, &m.name));
        }
    }
}

/// Agent audio per `media` message for the serve `output_frame_ms`: whole
/// 20 ms frames from 20 to 100 ms (the configuration is checked for that
/// when it loads; one built in code is held to it here).
pub fn output_frame(ms: u64) -> Duration {
    Duration::from_millis(ms.clamp(20, 100) / 20 * 20)
}

/// µ-law bytes of a frame of agent audio (PCM16 is encoded; µ-law passes).
fn ulaw_of(audio: &Audio) -> Vec<u8> {
    match audio.encoding {
        Encoding::MuLaw => audio.bytes.to_vec(),
        Encoding::Pcm16 => audio::mulaw::encode_pcm16le(&audio.bytes),
    }
}

impl AudioSink for TwilioSink {
    fn frame(&self) -> Duration {
        self.frame
    }

    fn play(&mut self, audio: &Audio, id: UtteranceId, _epoch: Epoch) {
        let ulaw = ulaw_of(audio);
        if ulaw.is_empty() {
            return;
        }
        // 8 µ-law bytes per millisecond at 8 kHz.
        let ms = ulaw.len() as u64 / 8;
        self.send(media_message(&self.stream_sid, &ulaw));
        if let Some(r) = &self.recording {
            r.agent(&ulaw);
        }
        self.sent_ms
            .fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
        self.mark_if_due(id, ms, false);
    }

    fn clear(&mut self) {
        self.send(clear_message(&self.stream_sid));
        ledger(&self.ledger).clear();
        if let Some(r) = &self.recording {
            r.agent_cleared();
        }
    }

    fn utterance_end(&mut self, id: UtteranceId) {
        self.mark_if_due(id, 0, true);
    }

    fn heard(&self, id: UtteranceId) -> Option<Duration> {
        Some(Duration::from_millis(ledger(&self.ledger).heard_ms(id)))
    }

    fn heard_to_the_end(&self, id: UtteranceId) -> Option<bool> {
        Some(ledger(&self.ledger).heard_whole(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use providers::twilio::media_streams::{parse, Inbound};

    fn sink() -> (
        TwilioSink,
        futures_channel::mpsc::UnboundedReceiver<Outgoing>,
    ) {
        let (tx, rx) = futures_channel::mpsc::unbounded();
        let ledger = Arc::new(Mutex::new(MarkLedger::new(100)));
        (TwilioSink::new(tx, "MZ1".into(), ledger), rx)
    }

    fn events(rx: &mut futures_channel::mpsc::UnboundedReceiver<Outgoing>) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(Outgoing::Text(t)) = rx.try_recv() {
            let v: serde_json::Value = serde_json::from_str(&t).unwrap();
            out.push(v["event"].as_str().unwrap().to_string());
        }
        out
    }

    #[test]
    fn an_output_frame_is_whole_20_ms_frames_from_20_to_100() {
        let ms = |v| output_frame(v).as_millis();
        assert_eq!(
            [ms(0), ms(20), ms(40), ms(45), ms(100), ms(1000)],
            [20, 20, 40, 40, 100, 100]
        );
        // The sink asks the player for that much at a time.
        let frame_of = |v| sink().0.with_frame(v).frame().as_millis();
        assert_eq!([frame_of(0), frame_of(60), frame_of(1000)], [20, 60, 100]);
        assert_eq!(sink().0.frame().as_millis(), 20, "unless set");
    }

    #[test]
    fn media_then_a_mark_every_interval_and_at_the_end() {
        let (mut s, mut rx) = sink();
        let frame = Audio::pcm16(vec![0u8; 320], 8000); // 20 ms
        for _ in 0..6 {
            s.play(&frame, 7, 0);
        }
        s.utterance_end(7);
        let ev = events(&mut rx);
        assert_eq!(
            ev,
            ["media", "media", "media", "media", "media", "mark", "media", "mark"]
        );
    }

    #[test]
    fn heard_comes_from_echoes_and_a_clear_settles_pending_marks() {
        let (mut s, mut rx) = sink();
        let frame = Audio::pcm16(vec![0u8; 320], 8000);
        let mut marks = Vec::new();
        for _ in 0..15 {
            s.play(&frame, 3, 0);
            while let Ok(Outgoing::Text(t)) = rx.try_recv() {
                if let Ok((Inbound::Other { .. }, _)) = parse(&t) {
                    continue;
                }
                let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                if v["event"] == "mark" {
                    marks.push(v["mark"]["name"].as_str().unwrap().to_string());
                }
            }
        }
        assert_eq!(marks.len(), 3, "{marks:?}");
        assert_eq!(s.heard(3), Some(Duration::ZERO), "nothing echoed yet");
        ledger(&s.ledger).echo(&marks[0]);
        assert_eq!(s.heard(3), Some(Duration::from_millis(100)));
        s.clear();
        // Echoes after the clear are "cleared", not played.
        ledger(&s.ledger).echo(&marks[2]);
        assert_eq!(s.heard(3), Some(Duration::from_millis(100)));
        assert_eq!(ledger(&s.ledger).pending(), 0);
    }

    #[test]
    fn only_the_first_echo_of_each_utterance_is_reported() {
        let (tx, mut rx) = voice::inbox::inbox(8);
        let heard = FirstHeard::default();
        heard.echoed(1, 100); // before the pipeline: dropped
        heard.connect(MilestoneReporter::new(tx.control_handle()));
        for (u, ms) in [(1, 200), (2, 100), (2, 200), (3, 50), (u64::MAX, 100)] {
            heard.echoed(u, ms);
        }
        let mut got = Vec::new();
        while let Some(voice::Frame::Control(voice::ControlFrame::Milestone {
            id,
            milestone: Milestone::FirstHeard { confirmed_ms },
            ..
        })) = rx.try_recv()
        {
            got.push((id, confirmed_ms));
        }
        assert_eq!(got, [(2, 100), (3, 50)]);
    }

    #[test]
    fn mulaw_goes_out_byte_for_byte_and_pcm16_is_encoded() {
        use base64::Engine;
        let payload = |rx: &mut futures_channel::mpsc::UnboundedReceiver<Outgoing>| {
            let Ok(Outgoing::Text(t)) = rx.try_recv() else {
                panic!("no media message");
            };
            let v: serde_json::Value = serde_json::from_str(&t).unwrap();
            assert_eq!(v["event"], "media");
            base64::engine::general_purpose::STANDARD
                .decode(v["media"]["payload"].as_str().unwrap())
                .unwrap()
        };
        let (mut s, mut rx) = sink();
        let ulaw: Vec<u8> = (0..160u32).map(|i| (i * 7) as u8).collect();
        s.play(&Audio::mulaw(ulaw.clone(), 8000), 1, 0);
        assert_eq!(payload(&mut rx), ulaw, "the voice's own bytes");
        let pcm = audio::mulaw::decode_to_pcm16le(&ulaw);
        s.play(&Audio::pcm16(pcm, 8000), 1, 0);
        assert_eq!(payload(&mut rx), ulaw, "every µ-law level encodes back");
        assert_eq!(s.sent_ms.load(Ordering::Relaxed), 40);
    }

    #[test]
    fn nothing_is_sent_after_the_socket_closed() {
        let (mut s, rx) = sink();
        drop(rx);
        s.play(&Audio::pcm16(vec![0u8; 320], 8000), 1, 0);
        s.clear();
    }
}
