//! CallLock with an ADK agent (`llm.kind = "adk"`): the agent phrases
//! CallLock's LLM turns; CallLock's state machine still decides everything
//! else — tools, transitions, canned lines, hang-up — so the booking
//! firewall holds whatever the agent is.
//!
//! Each call has its own ADK session. Before each turn the session is
//! brought up to date with what CallLock's log holds and the ADK has not
//! seen (caller lines the state machine answered itself, canned lines; a
//! reply of the agent's that was cut off becomes an interruption event
//! with the heard words), and the state is pushed as session state:
//!
//! | key | what |
//! |---|---|
//! | `calllock_prompt` | CallLock's system prompt for the state: persona, KNOWN INFO, the state's rules |
//! | `calllock_state` | the state machine's current state (`safety`, `discovery`, …) |
//!
//! The default agent's instruction is `{calllock_prompt}`; an agent of
//! your own can read the same keys. Extraction, the scoped wrap-up and
//! classification stay with the `inner` responder.

use crate::interruptions::{normalise, with_interruptions};
use crate::session::AdkCall;
use adk_session::{InMemorySessionService, SessionService};
use agent::extract::ExtractedFields;
use agent::responder::{
    ChatRole, ExtractionRequest, ReplyStream, Responder, ResponderError, ScopedRequest, TurnRequest,
};
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use voice::stages::llm::LlmEvent;

/// Calls whose sessions are kept at once (the oldest go first).
const MAX_CALLS: usize = 1024;

/// One call's ADK side.
#[derive(Clone)]
struct Brain {
    call: AdkCall,
    /// How many of CallLock's messages the session has seen.
    synced: usize,
    /// The agent's last reply as streamed (to recognise it in CallLock's
    /// log, whole or as heard).
    last_reply: Arc<Mutex<String>>,
}

/// The responder.
pub struct AdkResponder {
    agent: Arc<dyn adk_core::Agent>,
    agent_name: String,
    sessions: Arc<dyn SessionService>,
    inner: Arc<dyn Responder>,
    calls: Mutex<(HashMap<String, Brain>, VecDeque<String>)>,
    name: String,
}

impl AdkResponder {
    /// CallLock's default phrasing agent on `model`: its instruction is
    /// CallLock's prompt for the current state.
    pub fn new(model: Arc<dyn adk_core::Llm>, inner: Arc<dyn Responder>) -> Result<Self, String> {
        let name = format!("adk:{}", model.name());
        let agent = with_interruptions(
            adk_agent::LlmAgentBuilder::new("calllock")
                .description("Phrases CallLock's replies")
                .model(model)
                .instruction("{calllock_prompt}"),
        )
        .build()
        .map_err(|e| e.to_string())?;
        Ok(Self::with_agent(Arc::new(agent), "calllock", inner).named(name))
    }

    /// Your own agent (install [`with_interruptions`] on each of its
    /// agents), named `agent_name` as the author of its replies.
    pub fn with_agent(
        agent: Arc<dyn adk_core::Agent>,
        agent_name: &str,
        inner: Arc<dyn Responder>,
    ) -> Self {
        AdkResponder {
            agent,
            agent_name: agent_name.into(),
            sessions: Arc::new(InMemorySessionService::new()),
            inner,
            calls: Mutex::default(),
            name: format!("adk:{agent_name}"),
        }
    }

    fn named(mut self, name: String) -> Self {
        self.name = name;
        self
    }

    /// Keep the calls' sessions in `sessions` (default: in memory; see
    /// [`open_sessions`](crate::session::open_sessions) for CallLock's
    /// database).
    pub fn with_sessions(mut self, sessions: Arc<dyn SessionService>) -> Self {
        self.sessions = sessions;
        self
    }

    async fn brain(&self, call_id: &str) -> Result<Brain, ResponderError> {
        let id = key(call_id);
        if let Some(b) = self.lock().0.get(id) {
            return Ok(b.clone());
        }
        let call = AdkCall::start(
            self.agent.clone(),
            self.sessions.clone(),
            "calllock",
            id,
            HashMap::new(),
        )
        .await
        .map_err(|e| ResponderError::Other(e.to_string()))?;
        let brain = Brain {
            call,
            synced: 1, // the system prompt is state, not history
            last_reply: Arc::default(),
        };
        let mut g = self.lock();
        let (map, order) = &mut *g;
        if let Some(b) = map.get(id) {
            return Ok(b.clone()); // started twice at once: keep the first
        }
        map.insert(id.to_string(), brain.clone());
        order.push_back(id.to_string());
        while order.len() > MAX_CALLS {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
        Ok(brain)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (HashMap<String, Brain>, VecDeque<String>)> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue what CallLock's log holds beyond what the session saw, up to
    /// (not including) the caller's last line, which the run adds.
    fn sync(&self, brain: &mut Brain, req: &TurnRequest) {
        let msgs = &req.messages;
        let upto = msgs
            .iter()
            .rposition(|m| m.role == ChatRole::User)
            .unwrap_or(msgs.len());
        if brain.synced > upto {
            brain.synced = upto.min(1);
        }
        let last_reply = brain
            .last_reply
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for m in &msgs[brain.synced..upto] {
            match m.role {
                ChatRole::User => brain.call.queue(text_event("user", "user", &m.content)),
                ChatRole::Assistant => {
                    let (said, full) = (normalise(&m.content), normalise(&last_reply));
                    if !full.is_empty() && said == full {
                        // The agent's own reply, already in the session.
                    } else if !full.is_empty() && full.starts_with(&said) {
                        brain
                            .call
                            .interrupted(&self.agent_name, &last_reply, &m.content);
                    } else {
                        // A line the state machine said itself.
                        brain
                            .call
                            .queue(text_event(&self.agent_name, "model", &m.content));
                    }
                }
                ChatRole::System | ChatRole::Tool => {}
            }
        }
        brain.synced = upto.max(brain.synced);
    }
}

/// The session id of a CallLock call id.
fn key(call_id: &str) -> &str {
    if call_id.trim().is_empty() {
        "call"
    } else {
        call_id
    }
}

fn text_event(author: &str, role: &str, text: &str) -> adk_core::Event {
    let mut e = adk_core::Event::new("calllock");
    e.author = author.into();
    e.llm_response.content = Some(adk_core::Content::new(role).with_text(text));
    e
}

#[async_trait::async_trait]
impl Responder for AdkResponder {
    async fn reply(&self, req: &TurnRequest) -> Result<ReplyStream, ResponderError> {
        let mut brain = self.brain(&req.session.call_sid).await?;
        self.sync(&mut brain, req);
        // The user line the run adds.
        brain.synced = req.messages.len();
        if let Some(b) = self.lock().0.get_mut(key(&req.session.call_sid)) {
            b.synced = brain.synced;
        }
        let prompt = req
            .messages
            .first()
            .filter(|m| m.role == ChatRole::System)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        brain
            .call
            .push_state(HashMap::from([
                ("calllock_prompt".to_string(), json!(prompt)),
                ("calllock_state".to_string(), json!(req.state.as_str())),
            ]))
            .await
            .map_err(|e| ResponderError::Other(e.to_string()))?;
        let events = brain
            .call
            .run(req.last_user_text())
            .await
            .map_err(|e| ResponderError::Other(e.to_string()))?;
        let last_reply = brain.last_reply.clone();
        last_reply.lock().unwrap_or_else(|e| e.into_inner()).clear();
        // What the pipeline would hear of each event (llm::pieces), its
        // text only: the model's tool calls are not CallLock's.
        let mut streamed = HashSet::new();
        let texts = events.flat_map(move |e| {
            let items: Vec<Result<String, ResponderError>> = match e {
                Err(e) => vec![Err(ResponderError::Other(e.to_string()))],
                Ok(e) => crate::llm::pieces(&e, &mut streamed)
                    .into_iter()
                    .filter_map(|p| match p {
                        LlmEvent::Text(t) => Some(t),
                        _ => None,
                    })
                    .map(|t| {
                        last_reply
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push_str(&t);
                        Ok(t)
                    })
                    .collect(),
            };
            futures_util::stream::iter(items)
        });
        Ok(Box::pin(texts))
    }

    async fn scoped_reply(&self, req: &ScopedRequest) -> Result<String, ResponderError> {
        self.inner.scoped_reply(req).await
    }

    async fn extract(&self, req: &ExtractionRequest) -> Result<ExtractedFields, ResponderError> {
        self.inner.extract(req).await
    }

    async fn classify(&self, prompt: &str) -> Result<Map<String, Value>, ResponderError> {
        self.inner.classify(prompt).await
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adk_core::{Content, LlmRequest, LlmResponse, LlmResponseStream};
    use agent::responder::{ChatMessage, ScriptedResponder};

    /// A model that answers in one final response, no partial chunks.
    struct Whole;

    #[async_trait::async_trait]
    impl adk_core::Llm for Whole {
        fn name(&self) -> &str {
            "whole"
        }
        async fn generate_content(
            &self,
            _req: LlmRequest,
            _stream: bool,
        ) -> adk_core::Result<LlmResponseStream> {
            let r = LlmResponse {
                content: Some(Content::new("model").with_text("All in one piece.")),
                partial: false,
                turn_complete: true,
                ..LlmResponse::default()
            };
            Ok(Box::pin(futures_util::stream::iter([Ok(r)])))
        }
    }

    #[tokio::test]
    async fn a_model_that_does_not_stream_is_still_heard() {
        let inner = Arc::new(ScriptedResponder::new(agent::BusinessProfile::default()));
        let r = AdkResponder::new(Arc::new(Whole), inner).unwrap();
        let mut session = agent::session::Session::new("+15125550000");
        session.call_sid = "CAwhole".into();
        let req = TurnRequest {
            state: agent::State::Welcome,
            session,
            messages: vec![ChatMessage::system("Be brief."), ChatMessage::user("hello")],
        };
        let said: Vec<String> = r
            .reply(&req)
            .await
            .unwrap()
            .map(Result::unwrap)
            .collect()
            .await;
        assert_eq!(said, ["All in one piece."]);
    }
}
