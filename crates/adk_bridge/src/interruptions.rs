//! Interruptions, the accountant's way: recorded, not hidden.
//!
//! When the caller talks over the agent, the session keeps the agent's
//! whole reply (what was committed) and gains an *interruption event*
//! carrying the words the caller actually heard. Before every model
//! request, [`rewrite`] (installed on each agent by
//! [`with_interruptions`]) turns that into what the model should believe:
//! the interrupted reply replaced by the heard part, the interruption
//! event itself removed. The session is never edited; only the request.
//!
//! Which reply was interrupted: the nearest model reply before the event
//! whose text contains the heard words (compared lower-case, without
//! punctuation, spaces collapsed — a fallback for replies split or
//! re-spaced by streaming), else simply the nearest model reply before it;
//! with no reply at all (the run was cut before it committed one) the
//! heard words are put in as a model turn of their own.
//!
//! ADK-Rust calls model hooks per agent, not from runner plugins, so every
//! agent of a multi-agent tree needs the hook; [`with_interruptions`] is
//! the one call to make on each builder.

use adk_core::{BeforeModelResult, Content, Event, LlmRequest, Part};

/// How an interruption event's text starts.
pub const MARK: &str = "[interrupted by the caller; they heard only:] ";

/// The event recording that the caller heard only `heard` of the
/// agent's last reply. Authored by `user`, so the ADK's history keeps it
/// in the conversation (authors other than `user` become model turns).
pub fn event(heard: &str) -> Event {
    let mut e = Event::new("calllock-pipeline");
    e.author = "user".into();
    e.llm_response.content = Some(Content::new("user").with_text(format!("{MARK}{heard}")));
    e
}

/// The heard words of an interruption content, if it is one.
fn heard_of(c: &Content) -> Option<String> {
    if c.role != "user" {
        return None;
    }
    let text = text_of(c);
    text.strip_prefix(MARK).map(str::to_string)
}

fn text_of(c: &Content) -> String {
    c.parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Lower case, punctuation dropped, whitespace collapsed.
pub fn normalise(s: &str) -> String {
    s.to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_model_text(c: &Content) -> bool {
    c.role == "model" && c.parts.iter().any(|p| matches!(p, Part::Text { .. }))
}

/// `contents` as the model should see them: each interrupted reply
/// replaced by what was heard of it, the interruption events removed.
pub fn rewrite(contents: Vec<Content>) -> Vec<Content> {
    let mut out: Vec<Content> = Vec::with_capacity(contents.len());
    for c in contents {
        let Some(heard) = heard_of(&c) else {
            out.push(c);
            continue;
        };
        let wanted = normalise(&heard);
        let replies: Vec<usize> = (0..out.len())
            .rev()
            .filter(|&i| is_model_text(&out[i]))
            .collect();
        let target = replies
            .iter()
            .copied()
            .find(|&i| !wanted.is_empty() && normalise(&text_of(&out[i])).contains(&wanted))
            .or_else(|| replies.first().copied());
        match target {
            Some(i) if heard.trim().is_empty() => {
                // Cut before its first word: the caller heard nothing.
                out.remove(i);
            }
            Some(i) => {
                let reply = &mut out[i];
                reply.parts.retain(|p| !matches!(p, Part::Text { .. }));
                reply.parts.insert(0, Part::Text { text: heard });
            }
            None if !heard.trim().is_empty() => {
                out.push(Content::new("model").with_text(heard));
            }
            None => {}
        }
    }
    out
}

/// The before-model hook that applies [`rewrite`].
pub fn hook() -> adk_core::BeforeModelCallback {
    Box::new(|_ctx, mut req: LlmRequest| {
        Box::pin(async move {
            req.contents = rewrite(std::mem::take(&mut req.contents));
            Ok(BeforeModelResult::Continue(req))
        })
    })
}

/// `builder` with the interruption hook installed.
pub fn with_interruptions(builder: adk_agent::LlmAgentBuilder) -> adk_agent::LlmAgentBuilder {
    builder.before_model_callback(hook())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(role: &str, text: &str) -> Content {
        Content::new(role).with_text(text)
    }

    fn texts(cs: &[Content]) -> Vec<(String, String)> {
        cs.iter().map(|c| (c.role.clone(), text_of(c))).collect()
    }

    fn mark(heard: &str) -> Content {
        c("user", &format!("{MARK}{heard}"))
    }

    #[test]
    fn the_interrupted_reply_becomes_what_was_heard() {
        let out = rewrite(vec![
            c("user", "hi"),
            c(
                "model",
                "Hello! We can fix that today, or tomorrow morning.",
            ),
            mark("Hello! We can fix"),
            c("user", "today please"),
        ]);
        assert_eq!(
            texts(&out),
            [
                ("user".into(), "hi".into()),
                ("model".into(), "Hello! We can fix".into()),
                ("user".into(), "today please".into()),
            ]
        );
    }

    #[test]
    fn the_reply_is_found_by_its_words_not_its_spacing() {
        let out = rewrite(vec![
            c("model", "First answer."),
            c("model", "Second  answer, with  more words."),
            c("model", "Third."),
            mark("second answer with"),
        ]);
        assert_eq!(text_of(&out[1]), "second answer with");
        assert_eq!(text_of(&out[0]), "First answer.");
        assert_eq!(text_of(&out[2]), "Third.");
    }

    #[test]
    fn nothing_heard_removes_the_reply_and_no_reply_adds_the_heard_words() {
        let out = rewrite(vec![c("user", "hi"), c("model", "Hello there"), mark("")]);
        assert_eq!(texts(&out), [("user".into(), "hi".into())]);
        let out = rewrite(vec![c("user", "hi"), mark("Hello")]);
        assert_eq!(
            texts(&out),
            [
                ("user".into(), "hi".into()),
                ("model".into(), "Hello".into())
            ]
        );
    }
}
