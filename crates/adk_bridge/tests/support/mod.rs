//! What the bridge's tests share.

use adk_bridge::session::AdkCall;

/// (author, text) of the session's events that carry text, in order.
pub async fn session_texts(call: &AdkCall) -> Vec<(String, String)> {
    call.events()
        .await
        .unwrap()
        .iter()
        .filter_map(|e| {
            let c = e.llm_response.content.as_ref()?;
            let t: String = c.parts.iter().filter_map(|p| p.text()).collect();
            (!t.is_empty()).then(|| (e.author.clone(), t))
        })
        .collect()
}
