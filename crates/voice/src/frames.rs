//! Frames: everything that moves through a pipeline.
//!
//! [`Frame`] is a closed, nested enum so that how a frame travels follows from
//! its type, checked by the compiler:
//!
//! | kind | travels | dropped by barge-in? |
//! |---|---|---|
//! | [`SystemFrame`] | out of band, to every stage at once (control inbox) | never |
//! | [`ControlFrame`] | in order with data (data inbox), or upstream (control inbox) | never |
//! | [`DataFrame`] | in order (bounded data inbox) | when [`Data::is_interruptible`] and its epoch is stale |
//!
//! Every data frame carries the turn [`Epoch`] it belongs to. Barge-in bumps
//! the call's epoch; a stage never processes an interruptible frame of an
//! older epoch, wherever it sat (queue, in-flight request, output buffer).
//!
//! Payloads are cheap to clone: audio is [`bytes::Bytes`], text is
//! `Arc<str>`, anything larger is behind an `Arc`. A frame is 48 bytes.

use bytes::Bytes;
use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The turn a data frame belongs to. Starts at 0; every barge-in adds one.
pub type Epoch = u64;

/// Identifies one agent utterance (a reply or a canned line) from the moment
/// it is decided until the caller heard it (or cut it off).
pub type UtteranceId = u64;

/// Anything that moves through a pipeline.
#[derive(Clone, Debug)]
pub enum Frame {
    System(SystemFrame),
    Control(ControlFrame),
    Data(DataFrame),
}

/// Out-of-band frames: delivered to every stage's control inbox at once,
/// ahead of any queued data; never dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SystemFrame {
    /// The pipeline is running (first frame every stage sees).
    Start,
    /// Barge-in: every interruptible frame of an epoch below `epoch` is stale.
    Interrupt { epoch: Epoch },
    /// Stop now, without draining.
    Cancel,
}

/// In-order control frames (never dropped by an interruption). Downstream
/// they travel with the data; upstream (bot speaking, playback progress)
/// they are delivered to the previous stage's control inbox.
#[derive(Clone, Debug)]
pub enum ControlFrame {
    /// Graceful end: every stage handles what came before it, forwards it,
    /// and stops.
    End,
    /// The caller started speaking (turn detection).
    UserStartedSpeaking,
    /// The caller stopped speaking (turn detection).
    UserStoppedSpeaking,
    /// The output started playing agent audio.
    BotStartedSpeaking,
    /// The output finished playing everything queued.
    BotStoppedSpeaking,
    /// The output started playing this utterance.
    UtteranceStarted { id: UtteranceId },
    /// `played` of this utterance's audio has been sent to the caller so far.
    UtteranceProgress { id: UtteranceId, played: Duration },
    /// This utterance was played to its end.
    UtteranceFinished { id: UtteranceId },
    /// The output cleared its queue after a barge-in: `id` was playing and
    /// `played` of it had been sent (None: nothing was playing).
    PlaybackInterrupted {
        id: Option<UtteranceId>,
        played: Duration,
    },
    /// TTS synthesized `text` as part of utterance `id`; `words` start at
    /// offsets from the start of the utterance (empty when the vendor gives
    /// no word timing).
    SpeechSynthesized {
        id: UtteranceId,
        text: Arc<str>,
        words: Arc<[crate::accountant::WordTiming]>,
    },
    /// TTS finished utterance `id`: `total` of audio in all.
    SynthesisDone { id: UtteranceId, total: Duration },
    /// The voice gave up on the sentence of utterance `id` it was saying
    /// (D-23: an error after its first audio, or no audio at all): only
    /// `spoken` of its audio, starting `start` into the utterance's audio,
    /// exists. The rest of its text was never said.
    SynthesisCut {
        id: UtteranceId,
        start: Duration,
        spoken: Duration,
    },
    /// Utterance `id` reached `milestone` at `at` (sent upstream by the
    /// stage that saw it; see [`crate::latency`]).
    Milestone {
        id: UtteranceId,
        milestone: crate::latency::Milestone,
        at: tokio::time::Instant,
    },
    /// A stage met an error it could not handle; the call goes on.
    Error {
        stage: &'static str,
        message: Arc<str>,
    },
    /// The LLM stage's reply ended: complete, cut off or failed (sent
    /// upstream, to the conversation).
    LlmReply(Box<crate::stages::llm::LlmReply>),
    /// The model asked for a tool (sent upstream).
    LlmToolCall(Box<crate::stages::llm::LlmToolCall>),
    /// A tool the model runs itself returned (sent upstream).
    LlmToolResult(Box<crate::stages::llm::LlmToolResult>),
    /// The turn stage's wait for the caller's `run`-th stretch of speech to
    /// last long enough to interrupt the agent is over (its own timer).
    SpeechLongEnough { run: u64 },
    /// Application-defined control (never voice's own messages).
    Custom(Custom),
}

/// What a stage's own background task reports back to the stage: one event
/// of the stream it pumps, the stream's failure, or its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Streamed<E> {
    Event(E),
    Failed(String),
    Done,
}

/// An application-defined payload (the one escape hatch).
#[derive(Clone)]
pub struct Custom(pub Arc<dyn Any + Send + Sync>);

impl Custom {
    /// Wrap a value.
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        Custom(Arc::new(value))
    }
    /// The value, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl fmt::Debug for Custom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Custom(..)")
    }
}

/// A data frame: a payload and the turn it belongs to.
#[derive(Clone, Debug)]
pub struct DataFrame {
    pub epoch: Epoch,
    pub data: Data,
}

/// Mono 16-bit little-endian PCM (or 8-bit µ-law when `encoding` says so: see
/// [`Encoding`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Audio {
    pub bytes: Bytes,
    pub rate: u32,
    pub encoding: Encoding,
}

/// How audio bytes are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// 16-bit little-endian PCM.
    Pcm16,
    /// G.711 µ-law, one byte per sample.
    MuLaw,
}

impl Audio {
    /// PCM16 audio.
    pub fn pcm16(bytes: impl Into<Bytes>, rate: u32) -> Self {
        Audio {
            bytes: bytes.into(),
            rate,
            encoding: Encoding::Pcm16,
        }
    }
    /// µ-law audio.
    pub fn mulaw(bytes: impl Into<Bytes>, rate: u32) -> Self {
        Audio {
            bytes: bytes.into(),
            rate,
            encoding: Encoding::MuLaw,
        }
    }
    /// The same audio as PCM16 (µ-law decoded; PCM16 as it is).
    pub fn into_pcm16(self) -> Self {
        match self.encoding {
            Encoding::MuLaw => {
                Audio::pcm16(audio::mulaw::decode_to_pcm16le(&self.bytes), self.rate)
            }
            Encoding::Pcm16 => self,
        }
    }
    /// Samples held.
    pub fn samples(&self) -> usize {
        match self.encoding {
            Encoding::Pcm16 => self.bytes.len() / 2,
            Encoding::MuLaw => self.bytes.len(),
        }
    }
    /// How long this audio plays.
    pub fn duration(&self) -> Duration {
        if self.rate == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.samples() as u64 * 1_000_000_000 / u64::from(self.rate))
    }
}

/// A piece of text belonging to an agent utterance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UtteranceText {
    pub id: UtteranceId,
    pub text: Arc<str>,
}

/// Data payloads.
#[derive(Clone, Debug)]
pub enum Data {
    /// Audio from the caller.
    InputAudio(Audio),
    /// Speech-to-text output.
    Transcript { text: Arc<str>, is_final: bool },
    /// The caller spoke but speech-to-text made out no words, and gave up
    /// waiting for them (a vendor's watchdog): the conversation should ask
    /// the caller to say it again.
    NotHeard,
    /// Ask the LLM stage for a reply (the request is application-defined;
    /// see [`crate::llm`]).
    LlmRequest { id: UtteranceId, request: Custom },
    /// A streamed piece of an LLM reply.
    LlmText(UtteranceText),
    /// The LLM reply `id` is complete.
    LlmEnd { id: UtteranceId },
    /// Text to speak: a whole sentence (or a canned line).
    Speak(UtteranceText),
    /// No more text for utterance `id`.
    SpeakEnd { id: UtteranceId },
    /// Synthesized agent audio for utterance `id`.
    OutputAudio { id: UtteranceId, audio: Audio },
    /// The LLM stage's reply stream reported (to the LLM stage itself).
    LlmStreamed(Box<crate::stages::llm::LlmStreamed>),
    /// The TTS stage's synthesis reported (to the TTS stage itself).
    TtsStreamed(Box<crate::stages::tts::TtsStreamed>),
    /// Application-defined data (never voice's own messages).
    Custom(Custom),
}

impl Data {
    /// Whether barge-in makes a frame of an old epoch stale. The caller's own
    /// audio and transcripts never are; everything the agent is about to say
    /// is.
    pub fn is_interruptible(&self) -> bool {
        !matches!(
            self,
            Data::InputAudio(_) | Data::Transcript { .. } | Data::NotHeard
        )
    }
}

impl Frame {
    /// A data frame of `epoch`.
    pub fn data(epoch: Epoch, data: Data) -> Frame {
        Frame::Data(DataFrame { epoch, data })
    }
    /// Caller audio (epoch is irrelevant: never stale).
    pub fn input_audio(audio: Audio) -> Frame {
        Frame::data(0, Data::InputAudio(audio))
    }
    /// Whether this frame is stale at `current` epoch.
    pub fn is_stale(&self, current: Epoch) -> bool {
        match self {
            Frame::Data(d) => d.epoch < current && d.data.is_interruptible(),
            _ => false,
        }
    }
    /// Short name for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Frame::System(SystemFrame::Start) => "start",
            Frame::System(SystemFrame::Interrupt { .. }) => "interrupt",
            Frame::System(SystemFrame::Cancel) => "cancel",
            Frame::Control(c) => match c {
                ControlFrame::End => "end",
                ControlFrame::UserStartedSpeaking => "user_started_speaking",
                ControlFrame::UserStoppedSpeaking => "user_stopped_speaking",
                ControlFrame::BotStartedSpeaking => "bot_started_speaking",
                ControlFrame::BotStoppedSpeaking => "bot_stopped_speaking",
                ControlFrame::UtteranceStarted { .. } => "utterance_started",
                ControlFrame::UtteranceProgress { .. } => "utterance_progress",
                ControlFrame::UtteranceFinished { .. } => "utterance_finished",
                ControlFrame::PlaybackInterrupted { .. } => "playback_interrupted",
                ControlFrame::SpeechSynthesized { .. } => "speech_synthesized",
                ControlFrame::SynthesisDone { .. } => "synthesis_done",
                ControlFrame::SynthesisCut { .. } => "synthesis_cut",
                ControlFrame::Milestone { .. } => "milestone",
                ControlFrame::Error { .. } => "error",
                ControlFrame::LlmReply(_) => "llm_reply",
                ControlFrame::LlmToolCall(_) => "llm_tool_call",
                ControlFrame::LlmToolResult(_) => "llm_tool_result",
                ControlFrame::SpeechLongEnough { .. } => "speech_long_enough",
                ControlFrame::Custom(_) => "custom_control",
            },
            Frame::Data(d) => match d.data {
                Data::InputAudio(_) => "input_audio",
                Data::Transcript { .. } => "transcript",
                Data::NotHeard => "not_heard",
                Data::LlmRequest { .. } => "llm_request",
                Data::LlmText(_) => "llm_text",
                Data::LlmEnd { .. } => "llm_end",
                Data::Speak(_) => "speak",
                Data::SpeakEnd { .. } => "speak_end",
                Data::OutputAudio { .. } => "output_audio",
                Data::LlmStreamed(_) => "llm_streamed",
                Data::TtsStreamed(_) => "tts_streamed",
                Data::Custom(_) => "custom_data",
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_stay_small() {
        assert!(
            std::mem::size_of::<Frame>() <= 56,
            "{}",
            std::mem::size_of::<Frame>()
        );
    }

    #[test]
    fn only_agent_output_goes_stale() {
        let audio = Audio::pcm16(vec![0u8; 320], 8000);
        assert!(!Frame::input_audio(audio.clone()).is_stale(5));
        let t = Frame::data(
            1,
            Data::Transcript {
                text: "hi".into(),
                is_final: true,
            },
        );
        assert!(!t.is_stale(5));
        let out = Frame::data(1, Data::OutputAudio { id: 1, audio });
        assert!(out.is_stale(2));
        assert!(!out.is_stale(1));
        assert!(!Frame::Control(ControlFrame::End).is_stale(9));
    }

    #[test]
    fn audio_duration() {
        assert_eq!(
            Audio::pcm16(vec![0u8; 320], 8000).duration(),
            Duration::from_millis(20)
        );
        assert_eq!(
            Audio::mulaw(vec![0u8; 160], 8000).duration(),
            Duration::from_millis(20)
        );
        assert_eq!(Audio::pcm16(vec![0u8; 3], 0).duration(), Duration::ZERO);
    }
}
