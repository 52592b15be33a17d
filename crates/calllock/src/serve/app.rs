//! The server's shared state: what every request handler and every call
//! on the server reads ([`App`]), and the record of a caller the server
//! could not take.
//!
//! Handlers in `serve/`, `web/` and `api/` import [`App`] from here, not
//! from `serve`'s root, which assembles their routes: so no file imports
//! one that imports it back.

use super::live::LiveCalls;
use super::speech;
use crate::call::delivery::PostCall;
use crate::call::outcome::{Ending, Outcome};
use crate::config::Config;
use crate::wiring::Vendors;
use providers::twilio::rest::TwilioRest;
use std::net::SocketAddr;
use std::sync::Arc;

/// Everything a request handler needs.
pub struct App {
    pub cfg: Arc<Config>,
    pub vendors: Vendors,
    pub post: PostCall,
    pub calls: Arc<LiveCalls>,
    /// The REST client (hang-up), when Twilio credentials are configured.
    pub rest: Option<TwilioRest>,
    /// This process's id: the owner of its live calls in the database.
    pub owner: String,
    /// The address the server listens on.
    pub addr: SocketAddr,
    /// The playout threads every call's player and socket writer run on.
    pub playout: &'static super::playout::Playout,
    /// How late this server's players sent their frames: one set of
    /// counters per playout thread ([`App::pacing`] adds them up).
    pub pacing: Vec<Arc<voice::pacing::PacingStats>>,
    /// The speech vendors (clients and the voice breaker shared by calls).
    pub voices: speech::Voices,
    /// The operator's sessions and sign-in failures.
    pub operator: crate::operator::Operator,
    /// Where calls are recorded (`None`: recording is off or impossible).
    pub recordings: Option<crate::recording::Recorder>,
}

impl App {
    /// How late this server's players sent their frames, all playout
    /// threads together.
    pub fn pacing(&self) -> voice::pacing::PacingSummary {
        voice::pacing::PacingStats::summary_of(self.pacing.iter().map(|p| &**p))
    }
}

/// A caller the server could not take (full or shutting down): their call
/// ([`agent::engine::turned_away`]) is recorded and a callback created (or
/// left in the outbox), so nothing is lost.
pub(super) async fn turned_away(app: &App, from: &str, call_sid: &str) {
    let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let caller = if from.is_empty() {
        "unknown".to_string()
    } else {
        from.chars().take(64).collect()
    };
    // Its own id: the refused call SID may come back in a real call.
    let call_sid = if call_sid.trim().is_empty() {
        format!("CA-busy-{}", chrono::Utc::now().format("%Y%m%d-%H%M%S-%6f"))
    } else {
        format!(
            "{}-busy",
            call_sid.trim().chars().take(64).collect::<String>()
        )
    };
    let session = agent::engine::turned_away(&app.cfg.business, caller, call_sid, now);
    let mut outcome = Outcome::of_session(session, Ending::Agent, now, now);
    let report = app.post.handle_call_ended(&mut outcome, false).await;
    tracing::info!(
        call_id = outcome.session.call_sid,
        callback_created = outcome.session.callback_created,
        pending = report.pending.len(),
        "turned-away call recorded"
    );
}
