//! One call's ADK conversation: the runner of the user's agent and the
//! call's session in an ADK session service (which owns the history).
//!
//! Besides running the agent on what the caller said, the pipeline pushes
//! facts into the session from outside a run — an interruption with the
//! words the caller heard, a state delta, any event — as ADK events, so
//! the session stays the one record of the conversation.

use crate::interruptions;
use adk_core::{AdkIdentity, AppName, Content, Event, EventStream, SessionId, UserId};
use adk_runner::Runner;
use adk_session::{AppendEventRequest, CreateRequest, GetRequest, SessionService};
use futures_util::StreamExt;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Why the bridge could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// An id the ADK refuses (empty, too long, odd characters).
    #[error("not a usable ADK id: {0}")]
    BadId(String),
    /// The ADK failed.
    #[error("ADK: {0}")]
    Adk(String),
}

impl From<adk_core::AdkError> for BridgeError {
    fn from(e: adk_core::AdkError) -> Self {
        BridgeError::Adk(e.to_string())
    }
}

/// The session service for CallLock's `database`, through the ADK's own
/// SQL backends (its tables: `sessions`, `events`, `app_states`,
/// `user_states`, created on first use), so a call's conversation
/// survives a crash:
///
/// - PostgreSQL (`postgres://…`): the same database;
/// - a SQLite file (a path or a `sqlite:` URL): a file of its own beside
///   it (`calllock.db` → `calllock.adk.db`), on one connection — two
///   writers on one SQLite file fail each other's transactions;
/// - `""` or `":memory:"`: in memory.
pub async fn open_sessions(database: &str) -> Result<Arc<dyn SessionService>, BridgeError> {
    let db = database.trim();
    if db.is_empty() || db == ":memory:" {
        return Ok(Arc::new(adk_session::InMemorySessionService::new()));
    }
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        let s = adk_session::PostgresSessionService::new(db).await?;
        s.migrate().await?;
        return Ok(Arc::new(s));
    }
    let path = std::path::Path::new(db.strip_prefix("sqlite://").unwrap_or(db));
    let path = path.to_string_lossy();
    let path = path.split('?').next().unwrap_or_default();
    let file = std::path::Path::new(path).with_extension("adk.db");
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&file)
        .create_if_missing(true)
        .foreign_keys(true)
        .busy_timeout(std::time::Duration::from_secs(10));
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .map_err(|e| BridgeError::Adk(format!("opening {}: {e}", file.display())))?;
    let s = adk_session::SqliteSessionService::from_pool(pool);
    s.migrate().await?;
    Ok(Arc::new(s))
}

/// A fact waiting to be appended.
enum Pending {
    Event(Box<Event>),
    Interrupted {
        agent: String,
        full: String,
        heard: String,
    },
}

/// One call's conversation with an ADK agent.
#[derive(Clone)]
pub struct AdkCall {
    runner: Arc<Runner>,
    sessions: Arc<dyn SessionService>,
    identity: AdkIdentity,
    /// Facts the pipeline recorded that are not in the session yet, in
    /// order. Queued without waiting (a pipeline stage cannot wait);
    /// appended by [`AdkCall::flush`], which every run does first, so the
    /// agent never runs on a history missing them.
    pending: Arc<std::sync::Mutex<std::collections::VecDeque<Pending>>>,
    /// Held by a flush, and by a run for as long as it goes: appends wait
    /// for the run they follow (an interruption lands after the reply it
    /// cuts, a tool's result before the interruption).
    writer: Arc<tokio::sync::Mutex<()>>,
}

impl AdkCall {
    /// Start the call's session (`state`: what the agent knows before the
    /// first word) and a runner for `agent`.
    pub async fn start(
        agent: Arc<dyn adk_core::Agent>,
        sessions: Arc<dyn SessionService>,
        app: &str,
        call_id: &str,
        state: HashMap<String, Value>,
    ) -> Result<AdkCall, BridgeError> {
        let bad = |e: adk_core::IdentityError| BridgeError::BadId(e.to_string());
        let identity = AdkIdentity::new(
            AppName::new(app).map_err(bad)?,
            UserId::new("caller").map_err(bad)?,
            SessionId::new(call_id).map_err(bad)?,
        );
        sessions
            .create(CreateRequest {
                app_name: app.to_string(),
                user_id: identity.user_id.to_string(),
                session_id: Some(call_id.to_string()),
                state,
            })
            .await?;
        let runner = Runner::builder()
            .app_name(app)
            .agent(agent)
            .session_service(sessions.clone())
            .build()?;
        Ok(AdkCall {
            runner: Arc::new(runner),
            sessions,
            identity,
            pending: Arc::default(),
            writer: Arc::default(),
        })
    }

    /// Queue `event` for the session (appended by the next flush).
    pub fn queue(&self, event: Event) {
        self.push(Pending::Event(Box::new(event)));
    }

    fn push(&self, p: Pending) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(p);
    }

    /// Append everything queued, in order (after any run in progress).
    pub async fn flush(&self) -> Result<(), BridgeError> {
        let _writer = self.writer.lock().await;
        self.flush_locked().await
    }

    async fn flush_locked(&self) -> Result<(), BridgeError> {
        loop {
            let next = self
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front();
            match next {
                None => return Ok(()),
                Some(Pending::Event(e)) => self.append(*e).await?,
                Some(Pending::Interrupted { agent, full, heard }) => {
                    // The run was cut before the agent committed its reply
                    // when the session's last words are not the agent's.
                    let events = self.events().await?;
                    let last = events.iter().rev().find(|e| {
                        !e.llm_response.partial
                            && e.llm_response
                                .content
                                .as_ref()
                                .is_some_and(|c| c.parts.iter().any(|p| p.text().is_some()))
                    });
                    // (Any agent's: a transfer may have handed the turn on.)
                    let committed = last.is_some_and(|e| e.author != "user");
                    if !committed && !full.is_empty() {
                        let mut reply = Event::new("calllock-pipeline");
                        reply.author = agent;
                        reply.llm_response.content = Some(Content::new("model").with_text(full));
                        self.append(reply).await?;
                    }
                    self.append(interruptions::event(&heard)).await?;
                }
            }
        }
    }

    /// Run the agent on what the caller said (after appending what the
    /// pipeline queued). Later appends wait until the run is over (the
    /// stream ends or is dropped).
    pub async fn run(&self, caller_said: &str) -> Result<EventStream, BridgeError> {
        let writer = self.writer.clone().lock_owned().await;
        self.flush_locked().await?;
        let content = Content::new("user").with_text(caller_said);
        let events = self
            .runner
            .run(
                self.identity.user_id.clone(),
                self.identity.session_id.clone(),
                content,
            )
            .await?;
        Ok(Box::pin(events.map(move |e| {
            let _held = &writer;
            e
        })))
    }

    /// Append `event` to the session (outside any run).
    pub async fn append(&self, event: Event) -> Result<(), BridgeError> {
        self.sessions
            .append_event_for_identity(AppendEventRequest {
                identity: self.identity.clone(),
                event,
            })
            .await?;
        Ok(())
    }

    /// Merge `delta` into the session's state (the agent's instruction
    /// sees it from its next model request on).
    pub async fn push_state(&self, delta: HashMap<String, Value>) -> Result<(), BridgeError> {
        let mut e = Event::new("calllock-pipeline");
        e.author = "user".into();
        e.actions.state_delta = delta;
        self.queue(e);
        self.flush().await
    }

    /// Record that the caller talked over the reply of `agent_name` and
    /// heard only `heard` of it (`full`: the text the pipeline got): an
    /// interruption event, after the reply itself when the agent's run was
    /// cut before committing it. Queued (see [`AdkCall::queue`]);
    /// [`flush`](AdkCall::flush) to append now.
    pub fn interrupted(&self, agent_name: &str, full: &str, heard: &str) {
        self.push(Pending::Interrupted {
            agent: agent_name.into(),
            full: full.into(),
            heard: heard.into(),
        });
    }

    /// The call's session as the service holds it now.
    async fn session(&self) -> Result<Box<dyn adk_session::Session>, BridgeError> {
        Ok(self
            .sessions
            .get(GetRequest {
                app_name: self.identity.app_name.to_string(),
                user_id: self.identity.user_id.to_string(),
                session_id: self.identity.session_id.to_string(),
                num_recent_events: None,
                after: None,
            })
            .await?)
    }

    /// The session's events (the conversation as the ADK keeps it).
    pub async fn events(&self) -> Result<Vec<Event>, BridgeError> {
        Ok(self.session().await?.events().all())
    }

    /// The session's state now.
    pub async fn state(&self) -> Result<HashMap<String, Value>, BridgeError> {
        Ok(self.session().await?.state().all())
    }
}
