//! A whole voice call with an ADK agent as its brain: the pipeline
//! assembled, the player pacing the agent's audio into your sink.
//!
//! ```text
//! input ─▶ vad ─▶ stt ─▶ turn ─▶ AdkConversation ─▶ llm (AdkLlm) ─▶ sentences
//!       ─▶ tts ─▶ resample(8 kHz) ─▶ output ─▶ player ─▶ sink
//! ```
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

/// Build and start the pipeline; agent audio goes to `sink`.
pub fn start<D, S, K>(parts: Parts<D, S>, sink: K) -> AdkVoiceCall<K>
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
    let llm = AdkLlm::new(parts.call.clone()).with_floor(floor.clone());
    let mut builder = voice::Pipeline::builder();
    if let Some(tx) = parts.observer {
        builder = builder.observer(tx);
    }
    let mut pipeline = builder
        .stage(VadStage::new(parts.detector))
        .stage(SttStage::new(parts.stt))
        .stage(TurnStage::new(floor.clone(), parts.barge_in))
        .stage(AdkConversation::new(
            parts.call,
            &parts.agent_name,
            floor.clone(),
        ))
        .stage(LlmStage::new(Arc::new(llm)))
        .stage(SentenceAggregator::default())
        .stage(TtsStage::new(parts.tts))
        .stage(ResampleStage::new(8000))
        .stage(output::OutputStage)
        .tail(output::OUTPUT_QUEUE_FRAMES)
        .build();
    let tail = pipeline.take_tail().expect("built with a tail");
    let up = pipeline
        .stage_control(pipeline.len() - 1)
        .expect("the output stage");
    let player = output::Player::new(sink, tail, up, pipeline.scope().clone(), floor.clone())
        .with_lead(parts.output_lead);
    let player = tokio::spawn(player.run());
    AdkVoiceCall {
        pipeline,
        floor,
        player,
    }
}
