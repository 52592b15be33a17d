//! What was said: canned lines (D-16), the LLM context, the transcript
//! (SPEC §5.3 capture) and interruptions.

use super::*;

impl<P: Policy> Engine<P> {
    pub(super) fn speak(&mut self, canned: Canned, now: f64, out: &mut Vec<Effect>) {
        let text = canned.text(&self.profile);
        self.speak_text(canned, text, now, out);
    }

    /// Queue a canned line: D-16 logs it as an agent line now; it also joins
    /// the LLM context (so the LLM knows what was said) without counting as
    /// an agent reply for turn counting.
    pub(super) fn speak_text(
        &mut self,
        canned: Canned,
        text: String,
        now: f64,
        out: &mut Vec<Effect>,
    ) {
        self.idle_at = None;
        self.filler_at = None;
        self.capture(now);
        let state = self.session.state;
        self.session
            .transcript_log
            .push(TranscriptEntry::agent(text.clone(), now, state));
        self.context.push(ChatMessage {
            role: ChatRole::Assistant,
            content: text.clone(),
        });
        self.cursor = self.context.len();
        out.push(Effect::Speak { canned, text });
    }

    pub(super) fn forward_to_llm(&mut self, text: String, out: &mut Vec<Effect>) {
        self.idle_at = None;
        self.context.push(ChatMessage {
            role: ChatRole::User,
            content: text.clone(),
        });
        out.push(Effect::ToLlm { text });
    }

    pub(super) fn refresh_system_prompt(&mut self) {
        let prompt = system_prompt_after(
            &self.persona,
            self.session.state,
            &self.session,
            &self.profile,
        );
        match self.context.first_mut() {
            Some(m) if m.role == ChatRole::System => m.content = prompt,
            _ => self.context.insert(
                0,
                ChatMessage {
                    role: ChatRole::System,
                    content: prompt,
                },
            ),
        }
    }

    pub(super) fn note_state(&mut self, before: State, out: &mut Vec<Effect>) {
        let after = self.session.state;
        if after != before {
            out.push(Effect::StateChanged {
                from: before,
                to: after,
            });
        }
    }

    pub(super) fn agent_interrupted(&mut self, said: &str, heard: &str) {
        let heard = heard.trim();
        if let Some(i) = self
            .context
            .iter()
            .rposition(|m| m.role == ChatRole::Assistant && m.content == said)
        {
            if heard.is_empty() {
                self.context.remove(i);
                if self.cursor > i {
                    self.cursor -= 1;
                }
            } else {
                self.context[i].content = heard.to_string();
            }
        }
        let log = &mut self.session.transcript_log;
        if let Some(i) = log
            .iter()
            .rposition(|e| e.role == Role::Agent && e.content.as_deref() == Some(said))
        {
            if heard.is_empty() {
                // Nothing was heard: no line, and no exchange (SPEC §3
                // counts a fragment as a new turn only after an agent reply
                // the caller got).
                log.remove(i);
                self.session.agent_has_responded = log
                    .iter()
                    .rev()
                    .take_while(|e| e.role != Role::User)
                    .any(|e| e.role == Role::Agent);
            } else {
                log[i].content = Some(heard.to_string());
                log[i].interrupted = true;
            }
        }
    }

    /// SPEC §5.3: log assistant messages added since the last capture.
    pub(super) fn capture(&mut self, now: f64) {
        let start = self.cursor.min(self.context.len());
        for i in start..self.context.len() {
            let m = &self.context[i];
            if m.role == ChatRole::Assistant && !m.content.trim().is_empty() {
                let entry = TranscriptEntry::agent(m.content.clone(), now, self.session.state);
                self.session.transcript_log.push(entry);
                self.session.agent_has_responded = true;
            }
        }
        self.cursor = self.context.len().max(1);
    }
}
