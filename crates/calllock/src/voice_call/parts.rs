//! Assembling a voice call: the stages in order, the conversation stage
//! with its journal, and the player that paces agent audio into a sink.

use super::conversation::{CallControl, ConversationStage};
use super::journal::VoiceJournal;
use super::played::PlayedProof;
use agent::backend::Backend;
use agent::engine::Engine;
use agent::responder::Responder;
use std::sync::Arc;
use std::time::Duration;
use voice::floor::Floor;

/// Everything a voice call is made of.
pub struct CallParts<D, S> {
    pub engine: Engine,
    pub backend: Arc<dyn Backend>,
    pub responder: Arc<dyn Responder>,
    pub llm: Arc<dyn voice::stages::llm::Llm>,
    pub tts: Arc<dyn voice::stages::tts::Tts>,
    pub stt: S,
    pub detector: D,
    pub barge_in: voice::stages::turn::BargeInRules,
    /// Unix seconds of the call start.
    pub start_unix: f64,
    /// Where the call's events go as they happen (none: in memory only).
    pub journal: Option<crate::journal::Journal>,
    /// How far ahead of real time agent audio goes to the sink (see
    /// [`voice::stages::output::Player::with_lead`]); zero for a local
    /// speaker, ~100 ms for Twilio.
    pub output_lead: Duration,
    /// Where the player counts how late it sends frames (none: not counted).
    pub pacing: Option<Arc<voice::pacing::PacingStats>>,
    /// The runtime the player runs on (none: the caller's; a server gives
    /// its players a thread of their own, see [`crate::serve::playout`]).
    pub playout: Option<tokio::runtime::Handle>,
    /// How much of an utterance the far end proved it played (Twilio's
    /// mark echoes), read when the call ends so a line the caller hung up
    /// on is recorded as far as they heard it (none: the player's count).
    pub played_proof: Option<PlayedProof>,
}

/// A running voice call.
pub struct RunningCall<K> {
    pub pipeline: voice::Pipeline,
    pub control: CallControl,
    pub floor: Arc<Floor>,
    /// The player; yields the sink back when the call is over.
    pub player: tokio::task::JoinHandle<K>,
    /// Where the transport reports what only it learns about an
    /// utterance — the far end played it ([`Milestone::FirstHeard`]) —
    /// for the turn's latency. Reports travel upstream from the output
    /// stage, like the player's.
    ///
    /// [`Milestone::FirstHeard`]: voice::latency::Milestone::FirstHeard
    pub milestones: voice::latency::MilestoneReporter,
}

/// The output sample rate (telephone audio).
pub const OUTPUT_RATE: u32 = 8000;

/// Build and start the CallLock pipeline; agent audio goes to `sink`.
pub fn start_call<D, S, K>(parts: CallParts<D, S>, sink: K) -> RunningCall<K>
where
    D: voice::stages::vad::SpeechDetector,
    S: voice::stages::stt::Stt,
    K: voice::stages::output::AudioSink,
{
    use voice::stages::{
        llm::LlmStage, output, resample::ResampleStage, sentences::SentenceAggregator,
        stt::SttStage, tts::TtsStage, turn::TurnStage, vad::VadStage,
    };
    let floor = Arc::new(Floor::default());
    let (conversation, control) = ConversationStage::new(
        parts.engine,
        parts.backend,
        parts.responder,
        floor.clone(),
        parts.start_unix,
    );
    let mut conversation = conversation;
    conversation.journal = parts.journal.map(VoiceJournal::new);
    conversation.played_proof = parts.played_proof;
    let mut pipeline = voice::Pipeline::builder()
        // The VAD stage decodes the caller's µ-law itself.
        .stage(VadStage::new(parts.detector))
        .stage(SttStage::new(parts.stt))
        .stage(TurnStage::new(floor.clone(), parts.barge_in))
        .stage(conversation)
        .stage(LlmStage::new(parts.llm))
        .stage(SentenceAggregator::default())
        .stage(TtsStage::new(parts.tts))
        .stage(ResampleStage::new(OUTPUT_RATE))
        .stage(output::OutputStage)
        .tail(output::OUTPUT_QUEUE_FRAMES)
        .build();
    let tail = pipeline.take_tail().expect("built with a tail");
    let up = pipeline
        .stage_control(pipeline.len() - 1)
        .expect("output stage");
    let milestones = voice::latency::MilestoneReporter::new(up.clone());
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
    RunningCall {
        pipeline,
        control,
        floor,
        player,
        milestones,
    }
}
