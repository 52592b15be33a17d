//! The stages of a voice call, in pipeline order:
//!
//! ```text
//! input ─▶ mulaw ─▶ vad ─▶ stt ─▶ turn ─▶ (conversation: the application)
//!        ─▶ llm ─▶ sentences ─▶ tts ─▶ resample ─▶ output ─▶ player ─▶ wire
//! ```
//!
//! STT, LLM and TTS are traits here ([`stt::Stt`], [`llm::Llm`],
//! [`tts::Tts`]); vendors implement them elsewhere, and the test kit
//! (`testkit`, feature "testing") has symmetric mocks.

pub mod llm;
pub mod mulaw;
pub mod output;
pub mod resample;
pub mod sentences;
pub mod stt;
pub mod stt_fallback;
pub mod tts;
pub mod turn;
pub mod vad;

use std::future::poll_fn;
use std::pin::Pin;

/// Forward a vendor stream into a stage's inbox: each item as
/// `wrap(Some(item))`, then `wrap(None)` at its end. Stops after the first
/// error (forwarded too) or when the stage is gone.
pub(crate) async fn pump<T, E>(
    mut stream: Pin<Box<dyn futures_core::Stream<Item = Result<T, E>> + Send>>,
    tx: crate::inbox::Sender,
    wrap: impl Fn(Option<Result<T, E>>) -> crate::frames::Frame,
) {
    while let Some(item) = next(&mut stream).await {
        let failed = item.is_err();
        if tx.send(wrap(Some(item))).await.is_err() || failed {
            return;
        }
    }
    let _ = tx.send(wrap(None)).await;
}

/// The next item of a boxed stream.
pub(crate) async fn next<T>(
    s: &mut Pin<Box<dyn futures_core::Stream<Item = T> + Send>>,
) -> Option<T> {
    poll_fn(|cx| s.as_mut().poll_next(cx)).await
}
