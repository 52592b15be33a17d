//! Assembling a voice call: the conversation stage with its journal and
//! the far end's proof of what played, on the telephone pipeline of
//! [`voice::telephone`] (the stages in order, the player that paces agent
//! audio into a sink).

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
    pub journal: Option<crate::call::journal::Journal>,
    /// How far ahead of real time agent audio goes to the sink (see
    /// [`voice::stages::output::Player::with_lead`]); zero for a local
    /// speaker, ~100 ms for Twilio.
    pub output_lead: Duration,
    /// Where the player counts how late it sends frames (none: not counted).
    pub pacing: Option<Arc<voice::pacing::PacingStats>>,
    /// The runtime the player, and the two stages that feed it, run on
    /// (none: the caller's; a server gives its players a thread of their
    /// own, see [`crate::serve::playout`] and [`voice::telephone::Parts`]).
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
pub const OUTPUT_RATE: u32 = voice::telephone::RATE;

/// Build and start the CallLock pipeline — the telephone
/// ([`voice::telephone`]) around the conversation stage; agent audio goes
/// to `sink`.
pub fn start_call<D, S, K>(parts: CallParts<D, S>, sink: K) -> RunningCall<K>
where
    D: voice::stages::vad::SpeechDetector,
    S: voice::stages::stt::Stt,
    K: voice::stages::output::AudioSink,
{
    let floor = Arc::new(Floor::default());
    let (mut conversation, control) = ConversationStage::new(
        parts.engine,
        parts.backend,
        parts.responder,
        floor.clone(),
        parts.start_unix,
    );
    conversation.journal = parts.journal.map(VoiceJournal::new);
    conversation.played_proof = parts.played_proof;
    let telephone = voice::telephone::start(
        voice::telephone::Parts {
            floor,
            detector: parts.detector,
            stt: parts.stt,
            barge_in: parts.barge_in,
            llm: parts.llm,
            tts: parts.tts,
            output_lead: parts.output_lead,
            pacing: parts.pacing,
            playout: parts.playout,
            observer: None,
        },
        conversation,
        sink,
    );
    RunningCall {
        pipeline: telephone.pipeline,
        control,
        floor: telephone.floor,
        player: telephone.player,
        milestones: telephone.milestones,
    }
}
