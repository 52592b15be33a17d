//! The conversation stage of a voice pipeline whose brain is an ADK agent.
//!
//! ```text
//! … ─▶ stt ─▶ turn ─▶ AdkConversation ─▶ llm (AdkLlm) ─▶ sentences ─▶ tts ─▶ …
//! ```
//!
//! Each final caller transcript becomes one request to the agent. Every
//! reply is followed from synthesized to played (the interruption
//! accountant, as in CallLock's own conversation stage); when the caller
//! talks over one, the words they heard go to the ADK session as an
//! interruption event ([`AdkCall::interrupted`]). The session itself is the
//! history: this stage keeps no conversation of its own.
//!
//! While one of the agent's tools runs, barge-in is muted (the LLM stage's
//! [`AdkLlm`](crate::llm::AdkLlm) sets the floor) and what the caller says
//! is held, then asked once the tool's reply is written. Each tool's start
//! and result go to the pipeline's observer ([`Observation::Tool`]).

use crate::llm::AdkTurn;
use crate::session::AdkCall;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use voice::accountant::{Accountant, Outcome};
use voice::floor::{Floor, MuteReason};
use voice::frames::{ControlFrame, Custom, Data, Frame, SystemFrame, UtteranceId};
use voice::observe::Observation;
use voice::stages::llm::LlmReply;
use voice::{Ctx, Direction, Stage};

/// What the application asks of the agent from inside the pipeline: send
/// `Frame::data(epoch, Data::Custom(Custom::new(AdkCommand::…)))` into the
/// pipeline; the conversation stage acts on it in order with the call.
#[derive(Debug, Clone, PartialEq)]
pub enum AdkCommand {
    /// Merge into the session's state (the agent's instruction sees it from
    /// its next model request on).
    PushState(HashMap<String, Value>),
    /// Add a line to the session as `author` (`user`, or an agent's name),
    /// without running the agent.
    Append { author: String, text: String },
    /// Run the agent now without caller speech (to greet, to follow up):
    /// `prompt` is its user turn.
    Invoke { prompt: String },
}

#[derive(Debug, Default)]
struct Reply {
    /// The reply's text once the model finished (or was cut).
    said: Option<String>,
    /// What the caller heard, once cut off.
    heard: Option<String>,
    /// Handed to the accountant.
    queued: bool,
    /// Recorded as interrupted in the session.
    recorded: bool,
}

/// The stage.
pub struct AdkConversation {
    call: AdkCall,
    agent_name: String,
    floor: Arc<Floor>,
    accountant: Accountant,
    replies: HashMap<UtteranceId, Reply>,
    next_id: UtteranceId,
    /// The reply being written.
    pending: Option<UtteranceId>,
    /// What the caller said while a tool ran, asked once its reply is
    /// written (the caller is not heard over a running tool, but not lost).
    held: Vec<String>,
}

impl AdkConversation {
    /// The conversation of `call` with the agent named `agent_name` (the
    /// author of its replies in the session).
    pub fn new(call: AdkCall, agent_name: &str, floor: Arc<Floor>) -> Self {
        AdkConversation {
            call,
            agent_name: agent_name.into(),
            floor,
            accountant: Accountant::default(),
            replies: HashMap::new(),
            next_id: 1,
            pending: None,
            held: Vec::new(),
        }
    }

    fn update_floor(&self) {
        self.floor
            .set_responding(self.pending.is_some() || !self.accountant.is_idle());
    }

    fn ask(&mut self, caller_said: String, ctx: &mut Ctx<'_>) {
        let id = self.next_id;
        self.next_id += 1;
        self.replies.insert(id, Reply::default());
        self.pending = Some(id);
        let request = Custom::new(AdkTurn { caller_said });
        ctx.push(Frame::data(ctx.epoch(), Data::LlmRequest { id, request }));
        self.update_floor();
    }

    /// Record a cut-off reply once both its text and what was heard are
    /// known (they arrive in either order).
    fn record_if_cut(&mut self, id: UtteranceId) {
        let Some(r) = self.replies.get_mut(&id) else {
            return;
        };
        if r.recorded {
            return;
        }
        let (Some(said), Some(heard)) = (&r.said, &r.heard) else {
            return;
        };
        r.recorded = true;
        self.call.interrupted(&self.agent_name, said, heard);
        // In the session now, not only at the next run (a caller who
        // hangs up leaves a complete record).
        self.flush_soon();
    }

    fn outcomes(&mut self, outcomes: Vec<Outcome>) {
        for o in outcomes {
            if let Outcome::Interrupted { msg_id, heard_text } = o {
                if let Some(r) = self.replies.get_mut(&msg_id.0) {
                    r.heard = Some(heard_text);
                }
                self.record_if_cut(msg_id.0);
            }
        }
        self.update_floor();
    }

    fn reply_ended(&mut self, reply: &LlmReply) {
        if self.pending == Some(reply.id) {
            self.pending = None;
        }
        if let Some(e) = &reply.error {
            tracing::warn!(error = %e, "the ADK agent failed");
        }
        if let Some(r) = self.replies.get_mut(&reply.id) {
            r.said = Some(reply.text.clone());
            if !reply.complete && !r.queued && r.heard.is_none() {
                // Cut before any of it was spoken: nothing was heard.
                r.heard = Some(String::new());
            }
        }
        self.record_if_cut(reply.id);
        self.update_floor();
    }

    fn command(&mut self, c: &AdkCommand, ctx: &mut Ctx<'_>) {
        match c {
            AdkCommand::PushState(delta) => {
                let mut e = adk_core::Event::new("calllock-pipeline");
                e.author = "user".into();
                e.actions.state_delta = delta.clone();
                self.call.queue(e);
                self.flush_soon();
            }
            AdkCommand::Append { author, text } => {
                let role = if author == "user" { "user" } else { "model" };
                let mut e = adk_core::Event::new("calllock-pipeline");
                e.author = author.clone();
                e.llm_response.content = Some(adk_core::Content::new(role).with_text(text));
                self.call.queue(e);
                self.flush_soon();
            }
            AdkCommand::Invoke { prompt } => self.ask(prompt.clone(), ctx),
        }
    }

    /// Append what is queued in the background (the next run would too).
    fn flush_soon(&self) {
        let call = self.call.clone();
        tokio::spawn(async move {
            if let Err(e) = call.flush().await {
                tracing::warn!(error = %e, "cannot append to the ADK session");
            }
        });
    }

    /// Ask what was held during a tool, once nothing is being written.
    fn ask_held(&mut self, ctx: &mut Ctx<'_>) {
        if self.pending.is_none() && !self.held.is_empty() {
            let said = std::mem::take(&mut self.held).join(" ");
            self.ask(said, ctx);
        }
    }
}

impl Stage for AdkConversation {
    fn name(&self) -> &'static str {
        "adk_conversation"
    }

    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            // System frames reach every stage from the pipeline itself.
            Frame::System(SystemFrame::Interrupt { .. }) => self.update_floor(),
            Frame::System(SystemFrame::Cancel) | Frame::Control(ControlFrame::End) => {
                let o = self.accountant.interrupt();
                self.outcomes(o);
            }
            Frame::Data(d) => match d.data {
                Data::Transcript { text, is_final } => {
                    if is_final && !text.trim().is_empty() {
                        let said = text.trim().to_string();
                        if self.floor.muted_for(MuteReason::Tool) && self.pending.is_some() {
                            self.held.push(said);
                        } else {
                            self.ask(said, ctx);
                        }
                    }
                }
                Data::Custom(c) if c.get::<AdkCommand>().is_some() => {
                    if let Some(cmd) = c.get::<AdkCommand>() {
                        self.command(cmd, ctx);
                    }
                }
                data => ctx.push(Frame::data(d.epoch, data)),
            },
            Frame::Control(c) if dir == Direction::Upstream => {
                let replies = &mut self.replies;
                let ended = self.accountant.observe(&c, |id| {
                    let wanted = replies.get_mut(&id).filter(|r| !r.queued);
                    wanted.map(|r| r.queued = true).is_some()
                });
                self.outcomes(ended);
                self.upstream(c, ctx);
            }
            f => ctx.pass(f, dir),
        }
    }
}

impl AdkConversation {
    /// A control frame from below, after the accountant took it in.
    fn upstream(&mut self, c: ControlFrame, ctx: &mut Ctx<'_>) {
        match c {
            ControlFrame::LlmReply(reply) => {
                self.reply_ended(&reply);
                self.ask_held(ctx);
            }
            ControlFrame::LlmToolCall(call) => ctx.observe(Observation::Tool {
                name: call.name.clone(),
                finished: false,
            }),
            ControlFrame::LlmToolResult(done) => ctx.observe(Observation::Tool {
                name: done.name.clone(),
                finished: true,
            }),
            // The turn stage above reads the floor, not these.
            _ => {}
        }
    }
}
