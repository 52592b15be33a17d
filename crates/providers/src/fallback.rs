//! A responder that never leaves the caller in dead air because a vendor is
//! slow or down.
//!
//! [`FallbackResponder`] asks the primary responder (an LLM) first and falls
//! back to the offline one (the scripted responder and heuristic extractor):
//!
//! * `reply`: if the primary fails, or its first text chunk has not arrived
//!   within `first_token_budget` (default 2.5 s), the fallback's reply is
//!   streamed instead and the primary's stream is dropped (which closes its
//!   request). An error after the first chunk ends the reply where it is: the
//!   caller has already heard the start, and splicing in a second reply
//!   would be worse than a short one.
//!   - **Hedged retry** (issue 24; [`FallbackBudgets::hedge_after`], 1 s,
//!     `None` where a second request is not wanted): a primary that failed
//!     at once, or is still silent after `hedge_after`, is asked a second
//!     time; whichever request's first text comes first is the reply, the
//!     other is dropped. Still within the one first-token budget.
//!   - **Breaker** ([`SharedBreaker`], shared by every call: 3 failed
//!     replies in a row open it for 30 s): while it is open, replies come
//!     from the fallback at once — one hung provider costs a few turns the
//!     budget, not every turn of every call. Then one reply probes it.
//! * `scoped_reply`: the primary within `scoped_budget` (2 s), else the
//!   fallback's.
//! * `extract`: the primary within `extract_budget` (10 s), else the
//!   fallback's (the heuristic extractor).
//! * `classify`: the primary within `classify_budget`, else `{}` from the
//!   fallback (the deterministic classification is always in the payload).
//!
//! Each fallback is counted ([`FallbackResponder::stats`]) and logged once at
//! `warn` with the reason.

use crate::breaker::SharedBreaker;
use agent::extract::ExtractedFields;
use agent::responder::{
    ExtractionRequest, ReplyStream, Responder, ResponderError, ScopedRequest, TurnRequest,
};
use futures_util::StreamExt;
use serde_json::{Map, Value};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Time budgets of the primary responder.
#[derive(Debug, Clone, PartialEq)]
pub struct FallbackBudgets {
    /// From the request to the first text chunk of a reply.
    pub first_token: Duration,
    /// The whole scoped wrap-up reply (SPEC §5.11: 2 s).
    pub scoped: Duration,
    /// One extraction pass (SPEC §5.11: 10 s).
    pub extract: Duration,
    /// Post-call classification (SPEC §5.11: 5 s; a retry may follow).
    pub classify: Duration,
    /// A reply request still silent this long (or failed before it) is
    /// sent again, and the first to speak wins; `None`: never.
    pub hedge_after: Option<Duration>,
}

impl Default for FallbackBudgets {
    fn default() -> Self {
        FallbackBudgets {
            first_token: Duration::from_millis(2500),
            scoped: Duration::from_secs(2),
            extract: Duration::from_secs(10),
            classify: Duration::from_secs(12),
            hedge_after: Some(Duration::from_secs(1)),
        }
    }
}

/// How often each request fell back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FallbackStats {
    pub replies: u64,
    pub replies_fallen_back: u64,
    /// Replies whose request was sent a second time (hedged or retried).
    pub replies_hedged: u64,
    /// Replies the fallback said at once because the breaker was open.
    pub replies_skipped: u64,
    pub scoped_fallen_back: u64,
    pub extractions_fallen_back: u64,
    pub classifications_failed: u64,
}

#[derive(Default)]
struct Counters {
    replies: AtomicU64,
    replies_fallen_back: AtomicU64,
    replies_hedged: AtomicU64,
    replies_skipped: AtomicU64,
    scoped_fallen_back: AtomicU64,
    extractions_fallen_back: AtomicU64,
    classifications_failed: AtomicU64,
}

/// Primary responder with an offline fallback; see the module docs.
pub struct FallbackResponder {
    primary: Arc<dyn Responder>,
    fallback: Arc<dyn Responder>,
    budgets: FallbackBudgets,
    breaker: Arc<SharedBreaker>,
    name: String,
    counters: Counters,
}

impl FallbackResponder {
    pub fn new(
        primary: Arc<dyn Responder>,
        fallback: Arc<dyn Responder>,
        budgets: FallbackBudgets,
    ) -> Self {
        let name = format!("{} (fallback {})", primary.name(), fallback.name());
        FallbackResponder {
            primary,
            fallback,
            budgets,
            breaker: SharedBreaker::new(3, 30.0),
            name,
            counters: Counters::default(),
        }
    }

    /// Use `breaker` for the primary's replies (default: 3 failures in a
    /// row open it for 30 s).
    pub fn with_breaker(mut self, breaker: Arc<SharedBreaker>) -> Self {
        self.breaker = breaker;
        self
    }

    /// The breaker of the primary's replies.
    pub fn breaker(&self) -> &Arc<SharedBreaker> {
        &self.breaker
    }

    /// How often each kind of request fell back so far.
    pub fn stats(&self) -> FallbackStats {
        let c = &self.counters;
        FallbackStats {
            replies: c.replies.load(Ordering::Relaxed),
            replies_fallen_back: c.replies_fallen_back.load(Ordering::Relaxed),
            replies_hedged: c.replies_hedged.load(Ordering::Relaxed),
            replies_skipped: c.replies_skipped.load(Ordering::Relaxed),
            scoped_fallen_back: c.scoped_fallen_back.load(Ordering::Relaxed),
            extractions_fallen_back: c.extractions_fallen_back.load(Ordering::Relaxed),
            classifications_failed: c.classifications_failed.load(Ordering::Relaxed),
        }
    }

    /// The primary's first chunk and the rest of its reply.
    async fn first_chunk(
        &self,
        req: &TurnRequest,
    ) -> Result<(String, ReplyStream), ResponderError> {
        let mut stream = self.primary.reply(req).await?;
        match stream.next().await {
            Some(Ok(chunk)) => Ok((chunk, stream)),
            Some(Err(e)) => Err(e),
            None => Err(ResponderError::Other("the reply was empty".into())),
        }
    }

    /// The first chunk, asking a second time when the first request failed
    /// or is silent after [`FallbackBudgets::hedge_after`]: whichever
    /// speaks first (the other is dropped, closing its request).
    async fn hedged_first_chunk(
        &self,
        req: &TurnRequest,
    ) -> Result<(String, ReplyStream), ResponderError> {
        use futures_util::future::{select, Either};
        let first = self.first_chunk(req);
        let Some(after) = self.budgets.hedge_after else {
            return first.await;
        };
        let mut first = Box::pin(first);
        let first = match tokio::time::timeout(after, &mut first).await {
            Ok(Ok(got)) => return Ok(got),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "LLM reply failed; asking again");
                None
            }
            Err(_) => Some(first),
        };
        self.counters.replies_hedged.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(crate::metrics::LLM_HEDGES).increment(1);
        let second = Box::pin(self.first_chunk(req));
        let Some(first) = first else {
            return second.await;
        };
        match select(first, second).await {
            Either::Left((Ok(got), _)) | Either::Right((Ok(got), _)) => Ok(got),
            Either::Left((Err(_), other)) => other.await,
            Either::Right((Err(_), other)) => other.await,
        }
    }

    /// The primary's reply if its first chunk arrives within the budget.
    async fn primary_reply(&self, req: &TurnRequest) -> Result<ReplyStream, ResponderError> {
        let first = self.hedged_first_chunk(req);
        let (chunk, rest) = within(self.budgets.first_token, first).await?;
        let head = futures_util::stream::once(async move { Ok(chunk) });
        // An error after the first chunk ends the reply there (see the
        // module docs); the error is logged, not spoken.
        let tail = rest.take_while(|item| {
            let keep = item.is_ok();
            if let Err(e) = item {
                tracing::warn!(error = %e, "LLM reply broke off mid-stream; keeping what was said");
            }
            std::future::ready(keep)
        });
        Ok(Box::pin(head.chain(tail)))
    }
}

/// Abandons a half-open probe when dropped while still set.
struct ProbeGuard<'a>(Option<&'a SharedBreaker>);

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        if let Some(b) = self.0 {
            b.abandon_probe();
        }
    }
}

/// Run `fut` for at most `budget`.
async fn within<T>(
    budget: Duration,
    fut: impl Future<Output = Result<T, ResponderError>>,
) -> Result<T, ResponderError> {
    match tokio::time::timeout(budget, fut).await {
        Ok(r) => r,
        Err(_) => Err(ResponderError::Timeout),
    }
}

#[async_trait::async_trait]
impl Responder for FallbackResponder {
    async fn reply(&self, req: &TurnRequest) -> Result<ReplyStream, ResponderError> {
        self.counters.replies.fetch_add(1, Ordering::Relaxed);
        let Some(probe) = self.breaker.admit() else {
            self.counters
                .replies_skipped
                .fetch_add(1, Ordering::Relaxed);
            metrics::counter!(crate::metrics::LLM_FALLBACKS, "kind" => "reply_breaker_open")
                .increment(1);
            return self.fallback.reply(req).await;
        };
        // A probe dropped before its outcome (a barge-in) lets the next
        // reply probe instead.
        let mut guard = ProbeGuard(probe.then_some(&*self.breaker));
        let outcome = self.primary_reply(req).await;
        guard.0 = None;
        match outcome {
            Ok(s) => {
                self.breaker.record_success();
                Ok(s)
            }
            Err(e) => {
                self.breaker.record_failure();
                self.counters
                    .replies_fallen_back
                    .fetch_add(1, Ordering::Relaxed);
                metrics::counter!(crate::metrics::LLM_FALLBACKS, "kind" => "reply").increment(1);
                tracing::warn!(error = %e, primary = self.primary.name(), "LLM reply unavailable; speaking the scripted line");
                self.fallback.reply(req).await
            }
        }
    }

    async fn scoped_reply(&self, req: &ScopedRequest) -> Result<String, ResponderError> {
        match within(self.budgets.scoped, self.primary.scoped_reply(req)).await {
            Ok(s) => Ok(s),
            Err(e) => {
                self.counters
                    .scoped_fallen_back
                    .fetch_add(1, Ordering::Relaxed);
                metrics::counter!(crate::metrics::LLM_FALLBACKS, "kind" => "scoped").increment(1);
                tracing::warn!(error = %e, "scoped reply unavailable; using the fallback");
                self.fallback.scoped_reply(req).await
            }
        }
    }

    async fn extract(&self, req: &ExtractionRequest) -> Result<ExtractedFields, ResponderError> {
        match within(self.budgets.extract, self.primary.extract(req)).await {
            Ok(f) => Ok(f),
            Err(e) => {
                self.counters
                    .extractions_fallen_back
                    .fetch_add(1, Ordering::Relaxed);
                metrics::counter!(crate::metrics::LLM_FALLBACKS, "kind" => "extract").increment(1);
                tracing::warn!(error = %e, "LLM extraction unavailable; using the heuristic extractor");
                self.fallback.extract(req).await
            }
        }
    }

    async fn classify(&self, prompt: &str) -> Result<Map<String, Value>, ResponderError> {
        match within(self.budgets.classify, self.primary.classify(prompt)).await {
            Ok(m) => Ok(m),
            Err(e) => {
                self.counters
                    .classifications_failed
                    .fetch_add(1, Ordering::Relaxed);
                metrics::counter!(crate::metrics::LLM_FALLBACKS, "kind" => "classify").increment(1);
                tracing::warn!(error = %e, "LLM classification unavailable; deterministic classification only");
                self.fallback.classify(prompt).await
            }
        }
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent::responder::{collect_reply, stream_from_items, ChatMessage, ScriptedResponder};
    use agent::{BusinessProfile, Session, State};

    /// A primary with a chosen behaviour.
    enum Mode {
        Ok(Vec<&'static str>),
        FirstAfter(Duration, &'static str),
        Fails,
        BreaksAfterFirst,
        Hangs,
    }

    struct Primary(Mode);

    #[async_trait::async_trait]
    impl Responder for Primary {
        async fn reply(&self, _req: &TurnRequest) -> Result<ReplyStream, ResponderError> {
            match &self.0 {
                Mode::Ok(chunks) => Ok(stream_from_items(
                    chunks.iter().map(|c| Ok(c.to_string())).collect(),
                )),
                Mode::FirstAfter(d, text) => {
                    let d = *d;
                    let text = text.to_string();
                    Ok(Box::pin(futures_util::stream::once(async move {
                        tokio::time::sleep(d).await;
                        Ok(text)
                    })))
                }
                Mode::Fails => Err(ResponderError::Http("HTTP 500".into())),
                Mode::BreaksAfterFirst => Ok(stream_from_items(vec![
                    Ok("Sure, ".into()),
                    Err(ResponderError::Http("connection reset".into())),
                    Ok("never heard".into()),
                ])),
                Mode::Hangs => Ok(Box::pin(futures_util::stream::pending())),
            }
        }
        async fn scoped_reply(&self, _req: &ScopedRequest) -> Result<String, ResponderError> {
            match &self.0 {
                Mode::Hangs => std::future::pending().await,
                Mode::Fails => Err(ResponderError::Timeout),
                _ => Ok("We'll see you then.".into()),
            }
        }
        async fn extract(
            &self,
            _req: &ExtractionRequest,
        ) -> Result<ExtractedFields, ResponderError> {
            match &self.0 {
                Mode::Fails => Err(ResponderError::Parse("not JSON".into())),
                _ => Ok(ExtractedFields {
                    customer_name: "From LLM".into(),
                    ..ExtractedFields::default()
                }),
            }
        }
        async fn classify(&self, _prompt: &str) -> Result<Map<String, Value>, ResponderError> {
            match &self.0 {
                Mode::Fails => Err(ResponderError::Http("HTTP 503".into())),
                _ => {
                    let mut m = Map::new();
                    m.insert("call_type".into(), "SERVICE".into());
                    Ok(m)
                }
            }
        }
        fn name(&self) -> &str {
            "primary"
        }
    }

    fn responder(mode: Mode) -> FallbackResponder {
        FallbackResponder::new(
            Arc::new(Primary(mode)),
            Arc::new(ScriptedResponder::new(BusinessProfile::default())),
            FallbackBudgets::default(),
        )
    }

    fn turn() -> TurnRequest {
        TurnRequest {
            state: State::Discovery,
            session: Session::new("+15125550199"),
            messages: vec![
                ChatMessage::system("sys"),
                ChatMessage::user("my AC is broken"),
            ],
        }
    }

    fn scripted_line() -> String {
        ScriptedResponder::new(BusinessProfile::default()).line(&turn())
    }

    #[tokio::test]
    async fn a_healthy_primary_is_used() {
        let r = responder(Mode::Ok(vec!["Hello ", "there."]));
        let text = collect_reply(r.reply(&turn()).await.unwrap())
            .await
            .unwrap();
        assert_eq!(text, "Hello there.");
        assert_eq!(r.stats().replies_fallen_back, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_first_token_falls_back_at_the_budget() {
        let r = responder(Mode::FirstAfter(Duration::from_secs(4), "late"));
        let t0 = tokio::time::Instant::now();
        let text = collect_reply(r.reply(&turn()).await.unwrap())
            .await
            .unwrap();
        assert_eq!(text, scripted_line());
        assert_eq!(t0.elapsed(), Duration::from_millis(2500));
        assert_eq!(r.stats().replies_fallen_back, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_token_inside_the_budget_is_kept() {
        let r = responder(Mode::FirstAfter(Duration::from_millis(2400), "in time"));
        let text = collect_reply(r.reply(&turn()).await.unwrap())
            .await
            .unwrap();
        assert_eq!(text, "in time");
    }

    #[tokio::test]
    async fn an_error_falls_back() {
        let r = responder(Mode::Fails);
        let text = collect_reply(r.reply(&turn()).await.unwrap())
            .await
            .unwrap();
        assert_eq!(text, scripted_line());
        let f = r
            .extract(&ExtractionRequest { history: vec![] })
            .await
            .unwrap();
        assert_eq!(f, ExtractedFields::default());
        assert!(r.classify("p").await.unwrap().is_empty());
        let s = r.stats();
        assert_eq!(
            (
                s.replies_fallen_back,
                s.extractions_fallen_back,
                s.classifications_failed
            ),
            (1, 1, 1)
        );
    }

    #[tokio::test]
    async fn a_break_after_the_first_chunk_keeps_what_was_said() {
        let r = responder(Mode::BreaksAfterFirst);
        let text = collect_reply(r.reply(&turn()).await.unwrap())
            .await
            .unwrap();
        assert_eq!(text, "Sure, ");
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_primary_never_hangs_the_call() {
        let r = responder(Mode::Hangs);
        let text = collect_reply(r.reply(&turn()).await.unwrap())
            .await
            .unwrap();
        assert_eq!(text, scripted_line());
        let scoped = ScopedRequest {
            state: State::Callback,
            session: Session::new("+1"),
            user_text: "thanks".into(),
        };
        let t0 = tokio::time::Instant::now();
        assert_eq!(r.scoped_reply(&scoped).await.unwrap(), "");
        assert_eq!(t0.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test]
    async fn healthy_extraction_and_classification_come_from_the_primary() {
        let r = responder(Mode::Ok(vec!["x"]));
        let f = r
            .extract(&ExtractionRequest { history: vec![] })
            .await
            .unwrap();
        assert_eq!(f.customer_name, "From LLM");
        assert_eq!(r.classify("p").await.unwrap()["call_type"], "SERVICE");
    }

    /// A primary answering each reply request as the next mode says (the
    /// last one for every request after).
    struct Seq(std::sync::Mutex<Vec<Mode>>, AtomicU64);

    #[async_trait::async_trait]
    impl Responder for Seq {
        async fn reply(&self, req: &TurnRequest) -> Result<ReplyStream, ResponderError> {
            self.1.fetch_add(1, Ordering::Relaxed);
            let mode = {
                let mut modes = self.0.lock().unwrap();
                if modes.len() > 1 {
                    modes.remove(0)
                } else {
                    match &modes[0] {
                        Mode::Ok(c) => Mode::Ok(c.clone()),
                        Mode::FirstAfter(d, t) => Mode::FirstAfter(*d, t),
                        Mode::Fails => Mode::Fails,
                        Mode::BreaksAfterFirst => Mode::BreaksAfterFirst,
                        Mode::Hangs => Mode::Hangs,
                    }
                }
            };
            Primary(mode).reply(req).await
        }
        async fn scoped_reply(&self, _req: &ScopedRequest) -> Result<String, ResponderError> {
            Err(ResponderError::Timeout)
        }
        async fn extract(
            &self,
            _req: &ExtractionRequest,
        ) -> Result<ExtractedFields, ResponderError> {
            Err(ResponderError::Timeout)
        }
        fn name(&self) -> &str {
            "seq"
        }
    }

    fn seq(modes: Vec<Mode>) -> (FallbackResponder, Arc<Seq>) {
        let primary = Arc::new(Seq(std::sync::Mutex::new(modes), AtomicU64::new(0)));
        let r = FallbackResponder::new(
            primary.clone(),
            Arc::new(ScriptedResponder::new(BusinessProfile::default())),
            FallbackBudgets::default(),
        );
        (r, primary)
    }

    async fn said(r: &FallbackResponder) -> String {
        collect_reply(r.reply(&turn()).await.unwrap())
            .await
            .unwrap()
    }

    /// Issue 24: a request still silent at the hedge (1 s) is sent again;
    /// the second answers, so the caller hears the model, not the script,
    /// and waits the hedge plus the second's time — not the 2.5 s budget.
    #[tokio::test(start_paused = true)]
    async fn a_silent_request_is_hedged_and_the_first_to_speak_wins() {
        let (r, p) = seq(vec![
            Mode::Hangs,
            Mode::FirstAfter(Duration::from_millis(300), "Second."),
        ]);
        let t0 = tokio::time::Instant::now();
        assert_eq!(said(&r).await, "Second.");
        assert_eq!(t0.elapsed(), Duration::from_millis(1300));
        assert_eq!(p.1.load(Ordering::Relaxed), 2);
        let s = r.stats();
        assert_eq!((s.replies_hedged, s.replies_fallen_back), (1, 0));
        // The first can still win the race after the hedge.
        let (r, _) = seq(vec![
            Mode::FirstAfter(Duration::from_millis(1200), "First."),
            Mode::FirstAfter(Duration::from_millis(900), "Second."),
        ]);
        assert_eq!(said(&r).await, "First.");
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_that_fails_at_once_is_retried_and_without_a_hedge_not() {
        let (r, p) = seq(vec![Mode::Fails, Mode::Ok(vec!["Retried."])]);
        let t0 = tokio::time::Instant::now();
        assert_eq!(said(&r).await, "Retried.");
        assert_eq!(t0.elapsed(), Duration::ZERO);
        assert_eq!(p.1.load(Ordering::Relaxed), 2);
        let primary = Arc::new(Seq(
            std::sync::Mutex::new(vec![Mode::Fails, Mode::Ok(vec!["Retried."])]),
            AtomicU64::new(0),
        ));
        let r = FallbackResponder::new(
            primary.clone(),
            Arc::new(ScriptedResponder::new(BusinessProfile::default())),
            FallbackBudgets {
                hedge_after: None,
                ..FallbackBudgets::default()
            },
        );
        assert_eq!(said(&r).await, scripted_line());
        assert_eq!(primary.1.load(Ordering::Relaxed), 1);
    }

    /// Issue 24: one hung provider costs three replies the budget; then the
    /// breaker is open and the scripted line comes at once, until the
    /// cooldown lets one reply probe the provider again.
    #[tokio::test(start_paused = true)]
    async fn a_hung_provider_opens_the_breaker_and_costs_no_more_turns() {
        let (r, p) = seq(vec![Mode::Hangs]);
        for _ in 0..3 {
            let t0 = tokio::time::Instant::now();
            assert_eq!(said(&r).await, scripted_line());
            assert_eq!(t0.elapsed(), Duration::from_millis(2500));
        }
        let asked = p.1.load(Ordering::Relaxed);
        let t0 = tokio::time::Instant::now();
        assert_eq!(said(&r).await, scripted_line());
        assert_eq!(
            t0.elapsed(),
            Duration::ZERO,
            "the open breaker costs no wait"
        );
        assert_eq!(
            p.1.load(Ordering::Relaxed),
            asked,
            "the provider was not asked"
        );
        assert_eq!(r.stats().replies_skipped, 1);
        // After the cooldown one reply probes; the provider is back.
        *p.0.lock().unwrap() = vec![Mode::Ok(vec!["Back."])];
        tokio::time::advance(Duration::from_secs(31)).await;
        assert_eq!(said(&r).await, "Back.");
        assert_eq!(r.breaker().consecutive_failures(), 0);
    }
}
