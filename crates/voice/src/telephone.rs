//! The telephone pipeline around a brain: the one place its stages are put
//! in order.
//!
//! ```text
//! input ─▶ vad ─▶ stt ─▶ turn ─▶ BRAIN ─▶ llm ─▶ sentences ─▶ tts
//!       ─▶ resample(8 kHz) ─▶ output ─▶ player ─▶ sink
//! ```
//!
//! The brain is the application's stage: it hears final transcripts and
//! the turn's events, asks the LLM stage for replies (`Data::LlmRequest`)
//! and speaks canned lines (`Data::Speak`). CallLock's conversation stage
//! and the ADK bridge's are two brains on the same telephone; the speech
//! (any [`Stt`], [`Tts`] and [`SpeechDetector`]) and the [`Llm`] are
//! whatever the caller brings: vendors, local speech, or the offline codec.
//!
//! The caller's audio goes into [`Telephone::pipeline`]'s input (8 kHz
//! µ-law or PCM frames) and reaches the STT in the encoding it came in
//! (the VAD stage decodes µ-law only for its detector); the agent's audio
//! comes out of the player into the sink, paced in real time — µ-law from
//! a voice that makes 8 kHz µ-law untouched, anything else as 8 kHz
//! PCM16.
//!
//! [`Stt`]: crate::stages::stt::Stt
//! [`Tts`]: crate::stages::tts::Tts
//! [`SpeechDetector`]: crate::stages::vad::SpeechDetector
//! [`Llm`]: crate::stages::llm::Llm

use crate::floor::Floor;
use crate::stages::{
    llm::{Llm, LlmStage},
    output,
    resample::ResampleStage,
    sentences::SentenceAggregator,
    stt::{Stt, SttStage},
    tts::{Tts, TtsStage},
    turn::{BargeInRules, TurnStage},
    vad::{SpeechDetector, VadStage},
};
use crate::{Pipeline, Stage};
use std::sync::Arc;
use std::time::Duration;

/// The telephone's sample rate: agent audio leaves at 8 kHz.
pub const RATE: u32 = 8000;

/// What a telephone is made of, besides its brain.
pub struct Parts<D, S> {
    /// Who holds the floor (shared with the brain, and with an LLM that
    /// must know whether the agent is speaking).
    pub floor: Arc<Floor>,
    pub detector: D,
    pub stt: S,
    pub barge_in: BargeInRules,
    pub llm: Arc<dyn Llm>,
    pub tts: Arc<dyn Tts>,
    /// How far ahead of real time agent audio goes to the sink (see
    /// [`output::Player::with_lead`]): zero for a local speaker, ~100 ms
    /// for a phone line.
    pub output_lead: Duration,
    /// Where the player counts how late it sends frames (none: not counted).
    pub pacing: Option<Arc<crate::pacing::PacingStats>>,
    /// The runtime the player runs on (none: the caller's). A server gives
    /// its players a thread of their own, so a busy call runtime cannot
    /// make them late. The resample and output stages run there too: the
    /// voice's audio leaves the busy runtime at the TTS stage and crosses
    /// to the player's thread once, instead of queueing behind the rest of
    /// the server's work at every hop on its way.
    pub playout: Option<tokio::runtime::Handle>,
    /// Where the stages report what they see (none: not observed).
    pub observer: Option<crate::observe::ObserverTx>,
}

/// A running telephone.
pub struct Telephone<K> {
    pub pipeline: Pipeline,
    pub floor: Arc<Floor>,
    /// The player; yields the sink back when the call is over.
    pub player: tokio::task::JoinHandle<K>,
    /// Where the transport reports what only it learns about an utterance
    /// (the far end played it: `Milestone::FirstHeard`); reports travel
    /// upstream from the output stage, like the player's.
    pub milestones: crate::latency::MilestoneReporter,
}

/// Append the telephone's last two stages — resample to [`RATE`], output —
/// and the output queue a [`output::Player`] reads (the pipeline's tail,
/// the player reporting upstream to the output stage, the last one). Both
/// run on `playout` (none: the runtime that builds the pipeline): the
/// voice's audio crosses to the player's runtime once, at the stage
/// before them (see [`Parts::playout`]).
pub fn speaker_stages(
    builder: crate::PipelineBuilder,
    playout: Option<tokio::runtime::Handle>,
) -> crate::PipelineBuilder {
    builder
        .stage_on(ResampleStage::new(RATE), playout.clone())
        .stage_on(output::OutputStage, playout)
        .tail(output::OUTPUT_QUEUE_FRAMES)
}

/// Build and start the telephone pipeline around `brain`; agent audio goes
/// to `sink`.
pub fn start<D, S, B, K>(parts: Parts<D, S>, brain: B, sink: K) -> Telephone<K>
where
    D: SpeechDetector,
    S: Stt,
    B: Stage,
    K: output::AudioSink,
{
    let floor = parts.floor;
    let mut builder = Pipeline::builder();
    if let Some(tx) = parts.observer {
        builder = builder.observer(tx);
    }
    let builder = builder
        .stage(VadStage::new(parts.detector))
        .stage(SttStage::new(parts.stt))
        .stage(TurnStage::new(floor.clone(), parts.barge_in))
        .stage(brain)
        .stage(LlmStage::new(parts.llm))
        .stage(SentenceAggregator::default())
        .stage(TtsStage::new(parts.tts));
    let mut pipeline = speaker_stages(builder, parts.playout.clone()).build();
    let tail = pipeline.take_tail().expect("built with a tail");
    let up = pipeline
        .stage_control(pipeline.len() - 1)
        .expect("the output stage");
    let milestones = crate::latency::MilestoneReporter::new(up.clone());
    let mut player = output::Player::new(sink, tail, up, pipeline.scope().clone(), floor.clone())
        .with_lead(parts.output_lead);
    if let Some(stats) = parts.pacing {
        player = player.with_pacing(stats);
    }
    let player = tracing::Instrument::in_current_span(player.run());
    let player = match parts.playout {
        Some(rt) => rt.spawn(player),
        None => tokio::spawn(player),
    };
    Telephone {
        pipeline,
        floor,
        player,
        milestones,
    }
}
