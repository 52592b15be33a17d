//! The voice pipeline's LLM stage, driven by the application's
//! [`Responder`] — the same one `chat` uses: an OpenAI-compatible model
//! behind the scripted fallback (first-token budget, so a slow or failed
//! model never leaves dead air), or the scripted responder alone offline.
//!
//! The stream is lazy and owns the request: when the LLM stage drops it (a
//! barge-in, a newer request), the model request is dropped with it.

use agent::responder::{Responder, TurnRequest};
use futures_util::stream::{self, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use voice::frames::Custom;
use voice::stages::llm::{Llm, LlmError, LlmEvent, LlmStream};

/// Artificial timing for a responder that answers at once (the scripted
/// line), so an offline call sounds like one with a model behind it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pacing {
    /// Wait before the first piece of text.
    pub first_token: Duration,
    /// Wait before each further word.
    pub per_word: Duration,
}

/// A [`Llm`] over a [`Responder`]: each request carries a [`TurnRequest`].
#[derive(Clone)]
pub struct ResponderLlm {
    responder: Arc<dyn Responder>,
    pacing: Option<Pacing>,
}

impl ResponderLlm {
    pub fn new(responder: Arc<dyn Responder>) -> Self {
        ResponderLlm {
            responder,
            pacing: None,
        }
    }

    /// Stream the reply with this timing (word by word).
    pub fn with_pacing(mut self, pacing: Pacing) -> Self {
        self.pacing = Some(pacing);
        self
    }
}

/// Split `text` into words that keep their trailing spaces, so that the
/// pieces join back into `text`.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if !c.is_whitespace() && cur.ends_with(char::is_whitespace) {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl Llm for ResponderLlm {
    fn stream(&self, request: &Custom) -> LlmStream {
        let Some(req) = request.get::<TurnRequest>().cloned() else {
            let err = LlmError("the LLM request carries no turn request".into());
            return Box::pin(stream::iter([Err(err)]));
        };
        let responder = self.responder.clone();
        let pacing = self.pacing;
        let reply = async move { responder.reply(&req).await };
        let s = stream::once(reply).flat_map(move |r| match r {
            Err(e) => stream::iter(vec![Err(LlmError(e.to_string()))]).boxed(),
            Ok(chunks) => {
                let texts = chunks.map(|c| c.map_err(|e| LlmError(e.to_string())));
                match pacing {
                    None => texts.map(|c| c.map(LlmEvent::Text)).boxed(),
                    Some(p) => paced(texts, p),
                }
            }
        });
        Box::pin(s)
    }
}

/// Re-time a text stream: `first_token` before the first word, then
/// `per_word` before each next one.
fn paced(
    texts: impl futures_util::Stream<Item = Result<String, LlmError>> + Send + 'static,
    p: Pacing,
) -> futures_util::stream::BoxStream<'static, Result<LlmEvent, LlmError>> {
    let pieces = texts.flat_map(|c| match c {
        Ok(t) => stream::iter(words(&t).into_iter().map(Ok).collect::<Vec<_>>()),
        Err(e) => stream::iter(vec![Err(e)]),
    });
    let mut first = true;
    pieces
        .then(move |piece| {
            let wait = if std::mem::take(&mut first) {
                p.first_token
            } else {
                p.per_word
            };
            async move {
                tokio::time::sleep(wait).await;
                piece.map(LlmEvent::Text)
            }
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent::profile::BusinessProfile;
    use agent::responder::ScriptedResponder;
    use agent::session::Session;
    use agent::State;

    fn request() -> Custom {
        Custom::new(TurnRequest {
            state: State::Welcome,
            session: Session::new("+15125550000"),
            messages: Vec::new(),
        })
    }

    async fn collect(s: LlmStream) -> Vec<Result<LlmEvent, LlmError>> {
        s.collect().await
    }

    #[test]
    fn words_join_back() {
        for t in ["Hi there,  how are you? ", " lead", "", "one"] {
            assert_eq!(words(t).concat(), t);
        }
        assert_eq!(words("a b"), ["a ", "b"]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_scripted_line_streams_with_pacing() {
        let scripted = Arc::new(ScriptedResponder::new(BusinessProfile::default()));
        let llm = ResponderLlm::new(scripted).with_pacing(Pacing {
            first_token: Duration::from_millis(600),
            per_word: Duration::from_millis(30),
        });
        let t0 = tokio::time::Instant::now();
        let out = collect(llm.stream(&request())).await;
        let text: String = out
            .iter()
            .map(|e| match e {
                Ok(LlmEvent::Text(t)) => t.clone(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert!(!text.trim().is_empty());
        let n = out.len() as u32;
        assert!(n > 1, "streamed word by word: {out:?}");
        assert_eq!(
            t0.elapsed(),
            Duration::from_millis(600) + Duration::from_millis(30) * (n - 1)
        );
    }

    #[tokio::test]
    async fn a_request_without_a_turn_is_an_error_not_a_panic() {
        let scripted = Arc::new(ScriptedResponder::new(BusinessProfile::default()));
        let out = collect(ResponderLlm::new(scripted).stream(&Custom::new(1u8))).await;
        assert!(matches!(out.as_slice(), [Err(_)]));
    }
}
