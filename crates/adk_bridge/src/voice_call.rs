//! A whole voice call with an ADK agent as its brain: the telephone
//! pipeline of [`voice::telephone`] with [`AdkConversation`] as the brain
//! and [`AdkLlm`] as its model, the player pacing the agent's audio into
//! your sink.
//!
//! Bring the speech (any [`Stt`], [`Tts`] and [`SpeechDetector`] of the
//! `voice` crate: the offline codec, or real vendors) and the agent's
//! call ([`AdkCall`]); send caller audio (8 kHz µ-law or PCM frames) into
//! [`AdkVoiceCall::pipeline`]'s input.
//!
//! [`Stt`]: voice::stages::stt::Stt
//! [`Tts`]: voice::stages::tts::Tts
//! [`SpeechDetector`]: voice::stages::vad::SpeechDetector

use crate::conversation::AdkConversation;
use crate::llm::AdkLlm;
use crate::session::AdkCall;
use std::sync::Arc;
use std::time::Duration;
use voice::floor::Floor;

/// A running call.
pub struct AdkVoiceCall<K> {
    pub pipeline: voice::Pipeline,
    /// Who holds the floor: whether the agent is speaking, barge-in muted.
    pub floor: Arc<Floor>,
    /// The player; yields the sink back when the call is over.
    pub player: tokio::task::JoinHandle<K>,
}

/// What a call is made of.
pub struct Parts<D, S> {
    /// The agent's side of the call.
    pub call: AdkCall,
    /// The author of the root agent's replies in the session.
    pub agent_name: String,
    pub stt: S,
    pub detector: D,
    pub tts: Arc<dyn voice::stages::tts::Tts>,
    pub barge_in: voice::stages::turn::BargeInRules,
    /// Agent audio handed to the sink ahead of real time (0 for a local
    /// speaker, ~100 ms for a phone line).
    pub output_lead: Duration,
    /// Where the stages report what they see (tools starting and
    /// returning among it); none: not observed.
    pub observer: Option<voice::observe::ObserverTx>,
}

/// Build and start the telephone ([`voice::telephone`]) around the ADK
/// conversation; agent audio goes to `sink`.
pub fn start<D, S, K>(parts: Parts<D, S>, sink: K) -> AdkVoiceCall<K>
where
    D: voice::stages::vad::SpeechDetector,
    S: voice::stages::stt::Stt,
    K: voice::stages::output::AudioSink,
{
    let floor = Arc::new(Floor::default());
    let llm = AdkLlm::new(parts.call.clone()).with_floor(floor.clone());
    let brain = AdkConversation::new(parts.call, &parts.agent_name, floor.clone());
    let telephone = voice::telephone::start(
        voice::telephone::Parts {
            floor,
            detector: parts.detector,
            stt: parts.stt,
            barge_in: parts.barge_in,
            llm: Arc::new(llm),
            tts: parts.tts,
            output_lead: parts.output_lead,
            pacing: None,
            playout: None,
            observer: parts.observer,
        },
        brain,
        sink,
    );
    AdkVoiceCall {
        pipeline: telephone.pipeline,
        floor: telephone.floor,
        player: telephone.player,
    }
}
