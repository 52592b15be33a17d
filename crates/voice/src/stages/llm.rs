//! The LLM stage: streams a reply for each [`Data::LlmRequest`].
//!
//! Each request runs under a request token of the current turn, so a
//! barge-in (or a newer request superseding it) cancels the stream at once
//! — the vendor sees the request dropped — instead of waiting for it. Text
//! flows downstream as it arrives; when the reply ends (or is cut off), the
//! stage tells the conversation upstream with an [`LlmReply`].
//!
//! Two [milestones](crate::latency) go upstream per reply: when its
//! request was handed to the model ([`Milestone::LlmRequested`]) and when
//! its first text arrived ([`Milestone::LlmFirstToken`]) — the model's
//! time to first token is the difference.

use super::pump;
use crate::frames::{
    ControlFrame, Custom, Data, Epoch, Frame, Streamed, SystemFrame, UtteranceId, UtteranceText,
};
use crate::latency::Milestone;
use crate::stage::{Ctx, Direction, Stage};
use futures_core::Stream;
use std::pin::Pin;
use std::sync::Arc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One event of a streamed reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LlmEvent {
    /// A piece of the reply's text.
    Text(String),
    /// The model asked for a tool (name, JSON arguments).
    ToolCall { name: String, arguments: String },
    /// A tool the model called returned (for a model that runs its own
    /// tools, as an agent does): name, JSON result.
    ToolResult { name: String, result: String },
}

/// Why a stream failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("LLM error: {0}")]
pub struct LlmError(pub String);

/// A streamed reply.
pub type LlmStream = Pin<Box<dyn Stream<Item = Result<LlmEvent, LlmError>> + Send>>;

/// A language model. `request` is whatever the application put in the
/// [`Data::LlmRequest`].
pub trait Llm: Send + Sync + 'static {
    fn stream(&self, request: &Custom) -> LlmStream;
}

/// Sent upstream ([`ControlFrame::LlmReply`]) when a reply ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlmReply {
    pub id: UtteranceId,
    /// The text produced (all of it, or up to the cut).
    pub text: String,
    /// False when cut off (barge-in, superseded) before the end.
    pub complete: bool,
    /// The stream failed.
    pub error: Option<String>,
}

/// Sent upstream ([`ControlFrame::LlmToolCall`]) when the model asks for a
/// tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlmToolCall {
    pub id: UtteranceId,
    pub name: String,
    pub arguments: String,
}

/// Sent upstream ([`ControlFrame::LlmToolResult`]) when a tool the model
/// runs itself returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlmToolResult {
    pub id: UtteranceId,
    pub name: String,
    pub result: String,
}

/// What the stream of reply `id` reported ([`Data::LlmStreamed`], from the
/// stage's task to the stage).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlmStreamed {
    pub id: UtteranceId,
    pub item: Streamed<LlmEvent>,
}

struct InFlight {
    id: UtteranceId,
    epoch: Epoch,
    token: CancellationToken,
    text: String,
}

/// The LLM stage.
pub struct LlmStage {
    llm: Arc<dyn Llm>,
    current: Option<InFlight>,
}

impl LlmStage {
    pub fn new(llm: Arc<dyn Llm>) -> Self {
        LlmStage { llm, current: None }
    }

    fn cut(&mut self, ctx: &mut Ctx<'_>) {
        if let Some(f) = self.current.take() {
            f.token.cancel();
            let reply = LlmReply {
                id: f.id,
                text: f.text,
                complete: false,
                error: None,
            };
            ctx.push_up(Frame::Control(ControlFrame::LlmReply(Box::new(reply))));
        }
    }
}

impl Stage for LlmStage {
    fn name(&self) -> &'static str {
        "llm"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            Frame::System(SystemFrame::Interrupt { .. }) => self.cut(ctx),
            Frame::System(SystemFrame::Cancel) | Frame::Control(ControlFrame::End) => {
                if let Some(f) = self.current.take() {
                    f.token.cancel();
                }
            }
            Frame::Data(d) => match d.data {
                Data::LlmRequest { id, request } => {
                    // A newer request supersedes one still streaming.
                    self.cut(ctx);
                    let (epoch, token) = ctx.scope().request();
                    let epoch = epoch.max(d.epoch);
                    let stream = self.llm.stream(&request);
                    ctx.push_up(Milestone::LlmRequested.frame(id, Instant::now()));
                    self.current = Some(InFlight {
                        id,
                        epoch,
                        token: token.clone(),
                        text: String::new(),
                    });
                    ctx.spawn(token, move |tx| {
                        pump(stream, tx, move |item| {
                            let item = match item {
                                Some(Ok(e)) => Streamed::Event(e),
                                Some(Err(e)) => Streamed::Failed(e.0),
                                None => Streamed::Done,
                            };
                            Frame::data(
                                epoch,
                                Data::LlmStreamed(Box::new(LlmStreamed { id, item })),
                            )
                        })
                    });
                }
                Data::LlmStreamed(streamed) => {
                    let LlmStreamed { id, item: report } = &*streamed;
                    let Some(cur) = self.current.as_mut().filter(|f| f.id == *id) else {
                        return; // a superseded request's leftovers
                    };
                    let epoch = cur.epoch;
                    match report {
                        Streamed::Event(LlmEvent::Text(t)) => {
                            if cur.text.is_empty() && !t.is_empty() {
                                let at = Instant::now();
                                ctx.push_up(Milestone::LlmFirstToken.frame(*id, at));
                            }
                            cur.text.push_str(t);
                            ctx.push(Frame::data(
                                epoch,
                                Data::LlmText(UtteranceText {
                                    id: *id,
                                    text: Arc::from(t.as_str()),
                                }),
                            ));
                        }
                        Streamed::Event(LlmEvent::ToolCall { name, arguments }) => {
                            let call = LlmToolCall {
                                id: *id,
                                name: name.clone(),
                                arguments: arguments.clone(),
                            };
                            ctx.push_up(Frame::Control(ControlFrame::LlmToolCall(Box::new(call))));
                        }
                        Streamed::Event(LlmEvent::ToolResult { name, result }) => {
                            let done = LlmToolResult {
                                id: *id,
                                name: name.clone(),
                                result: result.clone(),
                            };
                            ctx.push_up(Frame::Control(ControlFrame::LlmToolResult(Box::new(
                                done,
                            ))));
                        }
                        Streamed::Failed(e) => {
                            let f = self.current.take().expect("checked");
                            ctx.push(Frame::data(epoch, Data::LlmEnd { id: *id }));
                            let reply = LlmReply {
                                id: *id,
                                text: f.text,
                                complete: false,
                                error: Some(e.clone()),
                            };
                            ctx.push_up(Frame::Control(ControlFrame::LlmReply(Box::new(reply))));
                        }
                        Streamed::Done => {
                            let f = self.current.take().expect("checked");
                            ctx.push(Frame::data(epoch, Data::LlmEnd { id: *id }));
                            let reply = LlmReply {
                                id: *id,
                                text: f.text,
                                complete: true,
                                error: None,
                            };
                            ctx.push_up(Frame::Control(ControlFrame::LlmReply(Box::new(reply))));
                        }
                    }
                }
                data => ctx.push(Frame::data(d.epoch, data)),
            },
            f => ctx.pass(f, dir),
        }
    }
}
