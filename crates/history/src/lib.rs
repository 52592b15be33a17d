//! The per-call history: an append-only, typed event log and its projections.
//!
//! # Why an event log and projections
//!
//! A voice call is not a chat. A reply is generated in full but the caller
//! may hear only its first words before barging in; a canned line may be
//! queued and never played; a tool may be cancelled half-way. If the
//! conversation were kept as a mutable list of LLM messages and another of
//! transcript lines, every one of those facts would have to be patched into
//! each copy at the moment it happened, the copies could drift apart, and
//! what really happened would be lost under the patches.
//!
//! Instead, everything is recorded once, as it happens, as a typed [`Event`]
//! with its time and the application's phase (CallLock: the call's state),
//! in an [`EventLog`] that is only ever appended to (the application
//! persists each entry as it is appended, so a crash loses nothing). Every
//! view of the call is a pure **projection** computed from the log when it
//! is read:
//!
//! - [`EventLog::llm_messages`]: what the LLM is told was said. An
//!   interrupted agent line is replaced by what the caller actually heard
//!   ([`Event::Interrupted`] names it by [`MsgId`]); a line cut off before
//!   its first word is left out entirely.
//! - [`EventLog::transcript`]: the record of the call — caller lines, agent
//!   lines where they were written down ([`Event::Captured`]), tool
//!   results — each with its time and phase; a line the caller cut off
//!   keeps only what they heard, and one cut off before its first word is
//!   not part of the record.
//! - [`EventLog::open_tool_calls`] and [`EventLog::unfinished_utterances`]:
//!   invariant checks (every tool call finishes or is cancelled; every
//!   utterance is played to the end or interrupted).
//!
//! What the caller said and what the LLM is sent are separate events: the
//! transcript keeps each utterance as it was heard ([`Event::CallerSaid`]),
//! while the LLM may receive several joined into one message, or none
//! ([`Event::LlmAsked`], [`Event::Context`]). An agent line enters the LLM
//! context when it is said ([`Event::AgentSaid`]) and the transcript when
//! it is captured ([`Event::Captured`]): for a canned line at once, for an
//! LLM reply at the application's next capture point.
//!
//! Because the projections are computed, the order in which facts arrive
//! does not matter much: an `Interrupted` appended after the caller's next
//! words still edits the line *where it was said*.
//!
//! The heard text itself comes from the interruption accountant (the voice
//! crate's `accountant`), which knows how much audio of each utterance was
//! played. When only the heard text is known and not which utterance it
//! belongs to, [`EventLog::interrupt_by_text`] finds the utterance by
//! normalised text — a fallback, never the normal path.
//!
//! This crate is sans-IO: no clock (times are given as a [`Duration`] on
//! the application's clock — since call start, or since the Unix epoch),
//! no persistence, no async. It knows nothing of the business: which tools
//! exist, which phases a call goes through, or what a [`Note`] kind means
//! is the application's affair.
//!
//! [`Note`]: Event::Note

use std::collections::HashMap;
use std::time::Duration;

/// Identifies one agent utterance (one reply or one canned line) within a
/// call. Allocate with [`EventLog::next_msg_id`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MsgId(pub u64);

/// Identifies one tool call within a call. Allocate with
/// [`EventLog::next_tool_call_id`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolCallId(pub u64);

/// Where an agent utterance came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentSource {
    /// Phrased by the LLM.
    Llm,
    /// A fixed line chosen by the application; `id` names it (e.g. the
    /// greeting), in the application's own vocabulary.
    Canned { id: String },
}

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolOutcome {
    Ok,
    Failed,
    /// Still running when the call ended.
    Cancelled,
    /// Asked for by the model, but the application chooses its tools
    /// itself: recorded, never run.
    Refused,
}

impl ToolOutcome {
    /// The outcome of a tool that answered, well (`ok`) or not.
    pub fn of_answer(ok: bool) -> Self {
        if ok {
            ToolOutcome::Ok
        } else {
            ToolOutcome::Failed
        }
    }

    /// The tool ran and answered (well or not): its result is part of the
    /// transcript.
    pub fn answered(self) -> bool {
        matches!(self, ToolOutcome::Ok | ToolOutcome::Failed)
    }
}

/// One fact about the call. Events hold only text (no audio), so they are
/// cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The caller said this (one recognised utterance): a caller line of
    /// the transcript. What the LLM is sent of it is a separate event.
    CallerSaid { text: String },
    /// A user message sent to the LLM for a reply (the caller's words, or
    /// several utterances joined).
    LlmAsked { text: String },
    /// A message added to the LLM context without asking for a reply.
    Context { role: Role, text: String },
    /// A reply was generated or a canned line was queued for speech: the
    /// full text the agent intended to say. It joins the LLM context here.
    AgentSaid {
        msg_id: MsgId,
        text: String,
        source: AgentSource,
    },
    /// The utterance is written into the transcript here (with this
    /// entry's time and phase). Only the first capture of an id counts.
    Captured { msg_id: MsgId },
    /// The first audio of the utterance reached the caller.
    SpeechStarted { msg_id: MsgId },
    /// The caller cut the utterance off; `heard_text` is what they actually
    /// heard (may be empty).
    Interrupted { msg_id: MsgId, heard_text: String },
    /// The utterance was played to its end.
    SpeechFinished { msg_id: MsgId },
    /// A tool was called; `args` is JSON text.
    ToolCalled {
        call_id: ToolCallId,
        name: String,
        args: String,
    },
    /// A tool call ended (a cancelled or refused call ends too).
    ToolFinished {
        call_id: ToolCallId,
        result: String,
        outcome: ToolOutcome,
    },
    /// The application's phase changed (CallLock: the call's state). Every
    /// entry carries the phase it was appended in; this records the move.
    PhaseChanged {
        from: &'static str,
        to: &'static str,
    },
    /// Anything else worth recording; the application picks the `kind`
    /// strings.
    Note { kind: String, text: String },
    /// The call ended; `reason` in the application's words.
    CallEnded { reason: String },
}

impl Event {
    /// Give back what each text holds beyond its length.
    fn shrink_texts(&mut self) {
        match self {
            Event::CallerSaid { text }
            | Event::LlmAsked { text }
            | Event::Context { text, .. }
            | Event::AgentSaid { text, .. }
            | Event::Interrupted {
                heard_text: text, ..
            }
            | Event::ToolFinished { result: text, .. }
            | Event::CallEnded { reason: text } => text.shrink_to_fit(),
            Event::ToolCalled { name, args, .. } => {
                name.shrink_to_fit();
                args.shrink_to_fit();
            }
            Event::Note { kind, text } => {
                kind.shrink_to_fit();
                text.shrink_to_fit();
            }
            Event::Captured { .. }
            | Event::SpeechStarted { .. }
            | Event::SpeechFinished { .. }
            | Event::PhaseChanged { .. } => {}
        }
    }
}

/// One appended event with its sequence number, time and phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Position in the log: 0 for the first entry, then one more each time.
    pub seq: u64,
    /// Time on the application's clock, as given to [`EventLog::append`].
    pub at: Duration,
    /// The application's phase when the entry was appended
    /// ([`EventLog::set_phase`]; "" when never set).
    pub phase: &'static str,
    pub event: Event,
}

/// Who a message to the LLM is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of the [`EventLog::llm_messages`] projection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

/// Who a [`TranscriptLine`] is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaker {
    Caller,
    Agent,
    /// A tool's result (`text` is the result, JSON text as recorded).
    Tool,
}

/// One line of the [`EventLog::transcript`] projection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranscriptLine {
    /// When it was written down: a caller line when it was recognised, an
    /// agent line when it was captured, a tool line when the tool answered.
    pub at: Duration,
    /// The phase then.
    pub phase: &'static str,
    pub speaker: Speaker,
    /// For an interrupted agent line, only what the caller heard.
    pub text: String,
    /// The caller cut the agent off during this line.
    pub interrupted: bool,
    /// The utterance, for agent lines.
    pub msg_id: Option<MsgId>,
    /// The tool's name, for tool lines.
    pub tool: Option<String>,
}

/// How many entries an [`EventLog`] grows by when it is full (a call
/// appends a dozen or so a turn).
const GROW_ENTRIES: usize = 24;

/// The per-call, append-only event log. See the [crate docs](crate).
#[derive(Clone, Debug, Default)]
pub struct EventLog {
    entries: Vec<Entry>,
    phase: &'static str,
    next_msg: u64,
    next_call: u64,
}

/// How an utterance ended: the first ending event for its id decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending<'a> {
    Finished,
    Interrupted(&'a str),
}

impl EventLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// The phase later entries are appended in (until set again).
    pub fn set_phase(&mut self, phase: &'static str) {
        self.phase = phase;
    }

    /// The phase entries are appended in now.
    pub fn phase(&self) -> &'static str {
        self.phase
    }

    /// Append an event at `at` (stored as given) in the current phase and
    /// return its sequence number.
    ///
    /// Ids found in the event move the allocators past them, so a log
    /// rebuilt by appending persisted entries again never hands out an id
    /// twice.
    pub fn append(&mut self, at: Duration, mut event: Event) -> u64 {
        // Kept for the whole call: a text built up piece by piece (a
        // streamed reply) gives back the room it grew into.
        event.shrink_texts();
        match &event {
            Event::AgentSaid { msg_id, .. } => {
                self.next_msg = self.next_msg.max(msg_id.0.saturating_add(1));
            }
            Event::ToolCalled { call_id, .. } => {
                self.next_call = self.next_call.max(call_id.0.saturating_add(1));
            }
            _ => {}
        }
        let seq = self.entries.len() as u64;
        if self.entries.len() == self.entries.capacity() {
            // Grown a step at a time, not doubled: a call's log is read
            // and appended for the whole call, and a doubled buffer would
            // keep up to half of itself empty in every live call.
            self.entries.reserve_exact(GROW_ENTRIES);
        }
        self.entries.push(Entry {
            seq,
            at,
            phase: self.phase,
            event,
        });
        seq
    }

    /// All entries, in append order.
    pub fn events(&self) -> &[Entry] {
        &self.entries
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Entry> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Append a tool call that ended at once (answered, refused, or an
    /// answer recorded after the fact): its `ToolCalled` and its
    /// `ToolFinished`, both at `at`. Returns its id.
    pub fn append_tool(
        &mut self,
        at: Duration,
        name: String,
        args: String,
        result: String,
        outcome: ToolOutcome,
    ) -> ToolCallId {
        let call_id = self.next_tool_call_id();
        self.append(
            at,
            Event::ToolCalled {
                call_id,
                name,
                args,
            },
        );
        self.append(
            at,
            Event::ToolFinished {
                call_id,
                result,
                outcome,
            },
        );
        call_id
    }

    /// The first `n` entries as a log of their own (what the log was
    /// when it held `n` entries).
    pub fn prefix(&self, n: usize) -> EventLog {
        let mut log = EventLog::new();
        for e in &self.entries[..n.min(self.entries.len())] {
            log.phase = e.phase;
            log.append(e.at, e.event.clone());
        }
        log.phase = self.phase;
        log
    }

    /// A fresh utterance id, never used in this log before.
    pub fn next_msg_id(&mut self) -> MsgId {
        let id = MsgId(self.next_msg);
        self.next_msg = self.next_msg.saturating_add(1);
        id
    }

    /// A fresh tool call id, never used in this log before.
    pub fn next_tool_call_id(&mut self) -> ToolCallId {
        let id = ToolCallId(self.next_call);
        self.next_call = self.next_call.saturating_add(1);
        id
    }

    /// What the LLM is told was said, in the order it was said.
    ///
    /// - `LlmAsked` becomes a [`Role::User`] message, `Context` a message
    ///   of its role. `CallerSaid` is not part of it: what the LLM is sent
    ///   of the caller's words is recorded apart.
    /// - `AgentSaid` (LLM replies and canned lines alike) becomes a
    ///   [`Role::Assistant`] message at the position of the `AgentSaid`,
    ///   with the full text — unless the utterance was interrupted: then the
    ///   content is the heard text (trimmed), and when nothing was heard the
    ///   message is left out.
    /// - Only the first ending event of an utterance counts (an
    ///   `Interrupted` after `SpeechFinished` changes nothing, and the other
    ///   way round); an ending for an unknown id is ignored.
    /// - Tool calls and results, captures, notes, speech starts and the
    ///   call end are not part of this projection. Consecutive messages of
    ///   the same role are not merged.
    pub fn llm_messages(&self) -> Vec<Message> {
        let endings = self.endings();
        let mut out = Vec::new();
        for entry in &self.entries {
            match &entry.event {
                Event::LlmAsked { text } => out.push(Message {
                    role: Role::User,
                    content: text.clone(),
                }),
                Event::Context { role, text } => out.push(Message {
                    role: *role,
                    content: text.clone(),
                }),
                Event::AgentSaid { msg_id, text, .. } => {
                    let content = match endings.get(msg_id) {
                        Some(Ending::Interrupted(heard)) => heard.trim(),
                        _ => text.as_str(),
                    };
                    if !content.is_empty() {
                        out.push(Message {
                            role: Role::Assistant,
                            content: content.to_owned(),
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The record of the call: every caller, agent and tool line, in the
    /// order they were written down.
    ///
    /// - A caller line at each `CallerSaid`.
    /// - An agent line at the first `Captured` of an utterance that was
    ///   said (`AgentSaid`) with words in it. A line the caller cut off
    ///   shows the heard text (trimmed) with `interrupted: true`; a line cut
    ///   off before its first word is no line at all. A line not (yet)
    ///   finished or interrupted shows the full intended text.
    /// - A tool line at each `ToolFinished` of a tool that answered
    ///   ([`ToolOutcome::answered`]), named by its `ToolCalled`.
    pub fn transcript(&self) -> Vec<TranscriptLine> {
        self.transcript_since(0)
    }

    /// The lines of [`transcript`](Self::transcript) written down by the
    /// entries from `start` on (the rest of the log still says what they
    /// are): a transcript kept up to date as the log grows appends these
    /// — unless an `Interrupted` came, which edits a line already there.
    pub fn transcript_since(&self, start: usize) -> Vec<TranscriptLine> {
        let endings = self.endings();
        let mut said: HashMap<MsgId, &str> = HashMap::new();
        let mut tools: HashMap<ToolCallId, &str> = HashMap::new();
        let mut captured: Vec<MsgId> = Vec::new();
        let mut out = Vec::new();
        for (i, entry) in self.entries.iter().enumerate() {
            let written = i >= start;
            let line = |speaker, text: &str| TranscriptLine {
                at: entry.at,
                phase: entry.phase,
                speaker,
                text: text.to_owned(),
                interrupted: false,
                msg_id: None,
                tool: None,
            };
            match &entry.event {
                Event::CallerSaid { text } if written => out.push(line(Speaker::Caller, text)),
                Event::AgentSaid { msg_id, text, .. } => {
                    said.entry(*msg_id).or_insert(text);
                }
                Event::Captured { msg_id } => {
                    if captured.contains(msg_id) {
                        continue;
                    }
                    captured.push(*msg_id);
                    let Some(text) = said.get(msg_id).filter(|_| written) else {
                        continue;
                    };
                    let (text, interrupted) = match endings.get(msg_id) {
                        Some(Ending::Interrupted(heard)) => (heard.trim(), true),
                        _ => (*text, false),
                    };
                    if text.trim().is_empty() {
                        continue;
                    }
                    out.push(TranscriptLine {
                        interrupted,
                        msg_id: Some(*msg_id),
                        ..line(Speaker::Agent, text)
                    });
                }
                Event::ToolCalled { call_id, name, .. } => {
                    tools.insert(*call_id, name);
                }
                Event::ToolFinished {
                    call_id,
                    result,
                    outcome,
                } if written && outcome.answered() => out.push(TranscriptLine {
                    tool: Some(tools.get(call_id).copied().unwrap_or("tool").to_owned()),
                    ..line(Speaker::Tool, result)
                }),
                _ => {}
            }
        }
        out
    }

    /// Whether the utterance `msg_id` is a line of the transcript.
    pub fn has_line(&self, msg_id: MsgId) -> bool {
        let captured = self
            .entries
            .iter()
            .any(|e| e.event == Event::Captured { msg_id });
        let said = self.entries.iter().find_map(|e| match &e.event {
            Event::AgentSaid {
                msg_id: id, text, ..
            } if *id == msg_id => Some(text.as_str()),
            _ => None,
        });
        let heard = match self.endings().get(&msg_id) {
            Some(Ending::Interrupted(heard)) => heard.trim().to_owned(),
            _ => said.unwrap_or_default().to_owned(),
        };
        captured && said.is_some() && !heard.trim().is_empty()
    }

    /// Tool calls without a `ToolFinished`, in call order. Empty at the end
    /// of a well-run call: every tool call finishes or is cancelled.
    pub fn open_tool_calls(&self) -> Vec<ToolCallId> {
        let mut open: Vec<ToolCallId> = Vec::new();
        for entry in &self.entries {
            match &entry.event {
                Event::ToolCalled { call_id, .. } => open.push(*call_id),
                Event::ToolFinished { call_id, .. } => open.retain(|c| c != call_id),
                _ => {}
            }
        }
        open
    }

    /// Utterances (`AgentSaid`) with neither `SpeechFinished` nor
    /// `Interrupted`, in the order they were said: queued or still playing.
    pub fn unfinished_utterances(&self) -> Vec<MsgId> {
        let endings = self.endings();
        self.entries
            .iter()
            .filter_map(|entry| match &entry.event {
                Event::AgentSaid { msg_id, .. } if !endings.contains_key(msg_id) => Some(*msg_id),
                _ => None,
            })
            .collect()
    }

    /// Fallback when the heard text is known but not which utterance it
    /// belongs to: find the latest unfinished utterance whose normalised
    /// text (lowercase, punctuation dropped, whitespace collapsed) starts
    /// with the normalised `heard_text`, append `Interrupted` for it at `at`
    /// and return its id. `None` (and nothing appended) when no unfinished
    /// utterance matches.
    ///
    /// The recorded heard text is the matching prefix of the utterance's own
    /// text, so it keeps the original case and punctuation ("Thanks Jonas,"
    /// for a heard "thanks jonas"); a heard text with no letters or digits
    /// matches the latest unfinished utterance with nothing heard.
    pub fn interrupt_by_text(&mut self, at: Duration, heard_text: &str) -> Option<MsgId> {
        let heard = normalise(heard_text).0;
        let endings = self.endings();
        let (msg_id, recorded) =
            self.entries
                .iter()
                .rev()
                .find_map(|entry| match &entry.event {
                    Event::AgentSaid { msg_id, text, .. } if !endings.contains_key(msg_id) => {
                        matching_prefix(text, &heard).map(|prefix| (*msg_id, prefix.to_owned()))
                    }
                    _ => None,
                })?;
        self.append(
            at,
            Event::Interrupted {
                msg_id,
                heard_text: recorded,
            },
        );
        Some(msg_id)
    }

    /// The first ending event of each utterance.
    fn endings(&self) -> HashMap<MsgId, Ending<'_>> {
        let mut endings = HashMap::new();
        for entry in &self.entries {
            let (msg_id, ending) = match &entry.event {
                Event::SpeechFinished { msg_id } => (*msg_id, Ending::Finished),
                Event::Interrupted { msg_id, heard_text } => {
                    (*msg_id, Ending::Interrupted(heard_text.as_str()))
                }
                _ => continue,
            };
            endings.entry(msg_id).or_insert(ending);
        }
        endings
    }
}

impl<'a> IntoIterator for &'a EventLog {
    type Item = &'a Entry;
    type IntoIter = std::slice::Iter<'a, Entry>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

/// Lowercase, letters and digits only, words separated by one space. Also
/// returns, for each char of the result, the byte offset in `text` just
/// after the char it came from.
fn normalise(text: &str) -> (String, Vec<usize>) {
    let mut out = String::new();
    let mut ends = Vec::new();
    let mut space = false;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() {
            if space && !out.is_empty() {
                out.push(' ');
                ends.push(i);
            }
            space = false;
            for lower in c.to_lowercase() {
                out.push(lower);
                ends.push(i + c.len_utf8());
            }
        } else if c.is_whitespace() {
            space = true;
        }
    }
    (out, ends)
}

/// The prefix of `text` whose normalised form is `heard` (already
/// normalised), or `None` when the normalised text does not start with it.
/// A match ending on a whole word takes the word's trailing punctuation
/// along; the result is trimmed.
fn matching_prefix<'t>(text: &'t str, heard: &str) -> Option<&'t str> {
    let (norm, ends) = normalise(text);
    if !norm.starts_with(heard) {
        return None;
    }
    let matched = heard.chars().count();
    if matched == 0 {
        return Some("");
    }
    let mut cut = ends[matched - 1];
    let rest = &norm[heard.len()..];
    if rest.is_empty() || rest.starts_with(' ') {
        cut += text[cut..]
            .find(char::is_whitespace)
            .unwrap_or(text.len() - cut);
    }
    Some(text[..cut].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_appended_text_keeps_no_room_it_grew_into() {
        let mut log = EventLog::new();
        let mut text = String::with_capacity(4096);
        text.push_str("Thanks, Maria.");
        let msg_id = log.next_msg_id();
        log.append(
            Duration::ZERO,
            Event::AgentSaid {
                msg_id,
                text,
                source: AgentSource::Llm,
            },
        );
        let Event::AgentSaid { text, .. } = &log.events()[0].event else {
            panic!("an agent line");
        };
        assert_eq!(text, "Thanks, Maria.");
        assert!(text.capacity() < 64, "kept {} bytes", text.capacity());
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The caller says `text` and it is sent to the LLM as it is.
    fn caller(log: &mut EventLog, at: u64, text: &str) {
        log.append(ms(at), Event::CallerSaid { text: text.into() });
        log.append(ms(at), Event::LlmAsked { text: text.into() });
    }

    fn agent(log: &mut EventLog, at: u64, text: &str) -> MsgId {
        let msg_id = log.next_msg_id();
        log.append(
            ms(at),
            Event::AgentSaid {
                msg_id,
                text: text.into(),
                source: AgentSource::Llm,
            },
        );
        msg_id
    }

    fn interrupted(log: &mut EventLog, at: u64, msg_id: MsgId, heard: &str) {
        log.append(
            ms(at),
            Event::Interrupted {
                msg_id,
                heard_text: heard.into(),
            },
        );
    }

    fn user(content: &str) -> Message {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    fn assistant(content: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }

    #[test]
    fn append_numbers_entries_in_order() {
        let mut log = EventLog::new();
        assert!(log.is_empty());
        assert_eq!(
            log.append(ms(5), Event::CallerSaid { text: "hi".into() }),
            0
        );
        assert_eq!(
            log.append(
                ms(9),
                Event::CallEnded {
                    reason: "caller hung up".into()
                }
            ),
            1
        );
        assert_eq!(log.len(), 2);
        let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 1]);
        assert_eq!(log.events()[1].at, ms(9));
        assert_eq!((&log).into_iter().count(), 2);
    }

    #[test]
    fn ids_are_fresh_even_after_appending_foreign_ids() {
        let mut log = EventLog::new();
        assert_eq!(log.next_msg_id(), MsgId(0));
        assert_eq!(log.next_msg_id(), MsgId(1));
        log.append(
            ms(0),
            Event::AgentSaid {
                msg_id: MsgId(7),
                text: "x".into(),
                source: AgentSource::Llm,
            },
        );
        assert_eq!(log.next_msg_id(), MsgId(8));
        assert_eq!(log.next_tool_call_id(), ToolCallId(0));
        log.append(
            ms(0),
            Event::ToolCalled {
                call_id: ToolCallId(4),
                name: "t".into(),
                args: "{}".into(),
            },
        );
        assert_eq!(log.next_tool_call_id(), ToolCallId(5));
        log.append(
            ms(0),
            Event::AgentSaid {
                msg_id: MsgId(u64::MAX),
                text: "x".into(),
                source: AgentSource::Llm,
            },
        );
        assert_eq!(log.next_msg_id(), MsgId(u64::MAX));
    }

    #[test]
    fn llm_projection_of_a_plain_exchange() {
        let mut log = EventLog::new();
        let greeting = log.next_msg_id();
        log.append(
            ms(0),
            Event::AgentSaid {
                msg_id: greeting,
                text: "Hello, how can I help?".into(),
                source: AgentSource::Canned {
                    id: "greeting".into(),
                },
            },
        );
        log.append(ms(10), Event::SpeechStarted { msg_id: greeting });
        log.append(ms(900), Event::SpeechFinished { msg_id: greeting });
        caller(&mut log, 1500, "My heater is broken.");
        log.append(
            ms(1600),
            Event::Context {
                role: Role::User,
                text: "Caller is calling from 555-0100.".into(),
            },
        );
        let call_id = log.next_tool_call_id();
        log.append(
            ms(1700),
            Event::ToolCalled {
                call_id,
                name: "lookup".into(),
                args: r#"{"phone":"555-0100"}"#.into(),
            },
        );
        log.append(
            ms(1800),
            Event::ToolFinished {
                call_id,
                result: "{}".into(),
                outcome: ToolOutcome::Ok,
            },
        );
        log.append(
            ms(1850),
            Event::Note {
                kind: "state".into(),
                text: "a -> b".into(),
            },
        );
        let reply = agent(&mut log, 1900, "Sorry to hear that.");
        log.append(ms(2500), Event::SpeechFinished { msg_id: reply });
        log.append(
            ms(3000),
            Event::CallEnded {
                reason: "done".into(),
            },
        );
        assert_eq!(
            log.llm_messages(),
            [
                assistant("Hello, how can I help?"),
                user("My heater is broken."),
                user("Caller is calling from 555-0100."),
                assistant("Sorry to hear that."),
            ]
        );
    }

    #[test]
    fn interrupted_reply_is_replaced_by_its_heard_part_where_it_was_said() {
        let mut log = EventLog::new();
        caller(&mut log, 0, "This is Jonas.");
        let reply = agent(
            &mut log,
            100,
            "Thanks Jonas, I can get a tech out tomorrow.",
        );
        caller(&mut log, 1200, "Wait, today?");
        interrupted(&mut log, 1250, reply, " Thanks Jonas, I can ");
        assert_eq!(
            log.llm_messages(),
            [
                user("This is Jonas."),
                assistant("Thanks Jonas, I can"),
                user("Wait, today?"),
            ]
        );
    }

    #[test]
    fn nothing_heard_omits_the_assistant_message() {
        let mut log = EventLog::new();
        caller(&mut log, 0, "Hello?");
        let a = agent(&mut log, 100, "Hi there!");
        let b = agent(&mut log, 110, "How can I help?");
        interrupted(&mut log, 300, a, "");
        interrupted(&mut log, 300, b, "  ");
        caller(&mut log, 400, "I need help.");
        assert_eq!(log.llm_messages(), [user("Hello?"), user("I need help.")]);
    }

    #[test]
    fn two_replies_one_interrupted() {
        let mut log = EventLog::new();
        caller(&mut log, 0, "Can you come today?");
        let first = agent(&mut log, 100, "Let me check the schedule.");
        let second = agent(&mut log, 200, "We have a slot at three, or one at five.");
        log.append(ms(900), Event::SpeechFinished { msg_id: first });
        interrupted(&mut log, 1500, second, "We have a slot at three,");
        caller(&mut log, 1550, "Three works.");
        assert_eq!(
            log.llm_messages(),
            [
                user("Can you come today?"),
                assistant("Let me check the schedule."),
                assistant("We have a slot at three,"),
                user("Three works."),
            ]
        );
    }

    #[test]
    fn first_ending_wins_and_unknown_endings_are_ignored() {
        let mut log = EventLog::new();
        let a = agent(&mut log, 0, "One two three.");
        log.append(ms(10), Event::SpeechFinished { msg_id: a });
        interrupted(&mut log, 20, a, "One");
        let b = agent(&mut log, 30, "Four five six.");
        interrupted(&mut log, 40, b, "Four");
        log.append(ms(50), Event::SpeechFinished { msg_id: b });
        interrupted(&mut log, 60, MsgId(99), "ghost");
        log.append(ms(60), Event::SpeechFinished { msg_id: MsgId(98) });
        assert_eq!(
            log.llm_messages(),
            [assistant("One two three."), assistant("Four")]
        );
        assert!(log.unfinished_utterances().is_empty());
    }

    #[test]
    fn transcript_writes_lines_where_captured_and_drops_unheard_ones() {
        let mut log = EventLog::new();
        log.set_phase("welcome");
        let greeting = agent(&mut log, 0, "Hello!");
        log.append(ms(1), Event::Captured { msg_id: greeting });
        log.append(ms(40), Event::SpeechStarted { msg_id: greeting });
        log.append(ms(500), Event::SpeechFinished { msg_id: greeting });
        caller(&mut log, 1000, "Hi, my AC is out.");
        log.set_phase("lookup");
        let call_id = log.next_tool_call_id();
        log.append(
            ms(1050),
            Event::ToolCalled {
                call_id,
                name: "lookup_caller".into(),
                args: "{}".into(),
            },
        );
        log.append(
            ms(1100),
            Event::ToolFinished {
                call_id,
                result: r#"{"found":false}"#.into(),
                outcome: ToolOutcome::Ok,
            },
        );
        let cut = agent(&mut log, 1200, "Sorry to hear that, let me help.");
        let unheard = agent(&mut log, 1210, "What is your address?");
        let playing = agent(&mut log, 1220, "Still going.");
        let never = agent(&mut log, 1230, "Not captured.");
        for (at, msg_id) in [(1300, cut), (1301, unheard), (1302, playing), (1303, cut)] {
            log.append(ms(at), Event::Captured { msg_id });
        }
        interrupted(&mut log, 1900, cut, "Sorry to hear that,");
        interrupted(&mut log, 1900, unheard, "");
        let refused = log.next_tool_call_id();
        log.append(
            ms(1950),
            Event::ToolCalled {
                call_id: refused,
                name: "anything".into(),
                args: "{}".into(),
            },
        );
        log.append(
            ms(1950),
            Event::ToolFinished {
                call_id: refused,
                result: "refused".into(),
                outcome: ToolOutcome::Refused,
            },
        );
        let line = |at, phase, speaker, text: &str| TranscriptLine {
            at: ms(at),
            phase,
            speaker,
            text: text.into(),
            interrupted: false,
            msg_id: None,
            tool: None,
        };
        assert_eq!(
            log.transcript(),
            [
                TranscriptLine {
                    msg_id: Some(greeting),
                    ..line(1, "welcome", Speaker::Agent, "Hello!")
                },
                line(1000, "welcome", Speaker::Caller, "Hi, my AC is out."),
                TranscriptLine {
                    tool: Some("lookup_caller".into()),
                    ..line(1100, "lookup", Speaker::Tool, r#"{"found":false}"#)
                },
                TranscriptLine {
                    msg_id: Some(cut),
                    interrupted: true,
                    ..line(1300, "lookup", Speaker::Agent, "Sorry to hear that,")
                },
                TranscriptLine {
                    msg_id: Some(playing),
                    ..line(1302, "lookup", Speaker::Agent, "Still going.")
                },
            ]
        );
        assert_eq!(log.unfinished_utterances(), [playing, never]);
        // The LLM hears every line said, whether captured or not.
        assert_eq!(log.llm_messages().len(), 5);
    }

    #[test]
    fn a_transcript_kept_as_the_log_grows_is_the_transcript() {
        let mut log = EventLog::new();
        let mut kept: Vec<TranscriptLine> = Vec::new();
        let cut = log.next_msg_id();
        let events = [
            Event::CallerSaid { text: "Hi.".into() },
            Event::AgentSaid {
                msg_id: cut,
                text: "Hello there, how can I help?".into(),
                source: AgentSource::Llm,
            },
            Event::Captured { msg_id: cut },
            Event::Captured { msg_id: cut },
            Event::CallerSaid {
                text: "Wait.".into(),
            },
            Event::Interrupted {
                msg_id: cut,
                heard_text: "Hello there,".into(),
            },
        ];
        for (i, e) in events.into_iter().enumerate() {
            let edits = matches!(e, Event::Interrupted { .. });
            let n = log.len();
            log.append(ms(i as u64), e);
            if edits {
                kept = log.transcript();
            } else {
                kept.extend(log.transcript_since(n));
            }
            assert_eq!(kept, log.transcript(), "after event {i}");
        }
        assert!(log.has_line(cut));
        assert!(!log.has_line(MsgId(9)));
    }

    #[test]
    fn a_prefix_is_the_log_as_it_was() {
        let mut log = EventLog::new();
        log.set_phase("a");
        caller(&mut log, 0, "One.");
        log.set_phase("b");
        let id = agent(&mut log, 10, "Two.");
        let p = log.prefix(2);
        assert_eq!(p.events(), &log.events()[..2]);
        assert_eq!(p.phase(), "b");
        let mut p = log.prefix(1);
        assert_eq!(p.events()[0].phase, "a");
        assert_eq!(p.next_msg_id(), MsgId(0), "no line said yet");
        let mut whole = log.prefix(99);
        assert_eq!(whole.events(), log.events());
        assert_eq!(
            whole.next_msg_id(),
            MsgId(id.0 + 1),
            "ids go on after the lines in it"
        );
    }

    #[test]
    fn open_tool_calls_are_those_without_an_end() {
        let mut log = EventLog::new();
        let calls: Vec<ToolCallId> = (0..4).map(|_| log.next_tool_call_id()).collect();
        for &call_id in &calls {
            log.append(
                ms(0),
                Event::ToolCalled {
                    call_id,
                    name: "book".into(),
                    args: "{}".into(),
                },
            );
        }
        assert_eq!(log.open_tool_calls(), calls);
        for (call_id, outcome) in [
            (calls[0], ToolOutcome::Ok),
            (calls[2], ToolOutcome::Cancelled),
            (calls[3], ToolOutcome::Failed),
        ] {
            log.append(
                ms(5),
                Event::ToolFinished {
                    call_id,
                    result: String::new(),
                    outcome,
                },
            );
        }
        assert_eq!(log.open_tool_calls(), [calls[1]]);
        assert!(log.llm_messages().is_empty());
    }

    #[test]
    fn unfinished_utterances_are_neither_finished_nor_interrupted() {
        let mut log = EventLog::new();
        let a = agent(&mut log, 0, "a");
        let b = agent(&mut log, 1, "b");
        let c = agent(&mut log, 2, "c");
        let d = agent(&mut log, 3, "d");
        log.append(ms(4), Event::SpeechStarted { msg_id: b });
        log.append(ms(5), Event::SpeechFinished { msg_id: a });
        interrupted(&mut log, 6, c, "");
        assert_eq!(log.unfinished_utterances(), [b, d]);
    }

    #[test]
    fn interrupt_by_text_finds_the_latest_matching_unfinished_utterance() {
        let mut log = EventLog::new();
        let done = agent(&mut log, 0, "Thanks Jonas, I can help.");
        log.append(ms(1), Event::SpeechFinished { msg_id: done });
        let older = agent(&mut log, 2, "Thanks Jonas, I can get a tech out tomorrow.");
        let latest = agent(&mut log, 3, "Is there anything else?");

        assert_eq!(log.interrupt_by_text(ms(10), "no such words"), None);
        assert_eq!(log.len(), 4, "nothing appended without a match");

        assert_eq!(
            log.interrupt_by_text(ms(10), "thanks  JONAS i"),
            Some(older)
        );
        assert_eq!(
            log.events().last().unwrap().event,
            Event::Interrupted {
                msg_id: older,
                heard_text: "Thanks Jonas, I".into()
            }
        );
        // The finished one is never chosen, and the interrupted one is no
        // longer unfinished.
        assert_eq!(log.interrupt_by_text(ms(11), "Thanks Jonas"), None);
        assert_eq!(log.unfinished_utterances(), [latest]);
        assert_eq!(
            log.llm_messages(),
            [
                assistant("Thanks Jonas, I can help."),
                assistant("Thanks Jonas, I"),
                assistant("Is there anything else?"),
            ]
        );
    }

    #[test]
    fn interrupt_by_text_keeps_original_words_and_trailing_punctuation() {
        let cases = [
            (
                "Thanks Jonas, I can get a tech out.",
                "thanks jonas",
                "Thanks Jonas,",
            ),
            (
                "Thanks Jonas, I can get a tech out.",
                "Thanks Jon",
                "Thanks Jon",
            ),
            ("All done.", "all done", "All done."),
            ("  Grüße, JÜRGEN! Ça va?", "grüße jürgen", "Grüße, JÜRGEN!"),
            ("Sure - I can.", "sure", "Sure"),
            ("Hello there.", "", ""),
            ("Hello there.", "...", ""),
        ];
        for (text, heard, expected) in cases {
            let mut log = EventLog::new();
            let id = agent(&mut log, 0, text);
            assert_eq!(log.interrupt_by_text(ms(1), heard), Some(id), "{text:?}");
            assert_eq!(
                log.events()[1].event,
                Event::Interrupted {
                    msg_id: id,
                    heard_text: expected.into()
                },
                "{text:?} / {heard:?}"
            );
        }
    }

    #[test]
    fn interrupt_by_text_with_empty_heard_text_takes_the_latest_unfinished() {
        let mut log = EventLog::new();
        let _first = agent(&mut log, 0, "First.");
        let second = agent(&mut log, 1, "Second.");
        assert_eq!(log.interrupt_by_text(ms(2), ""), Some(second));
        assert_eq!(log.llm_messages(), [assistant("First.")]);
        let mut empty = EventLog::new();
        assert_eq!(empty.interrupt_by_text(ms(0), ""), None);
    }
}
