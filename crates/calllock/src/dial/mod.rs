//! `calllock dial`: a local phone that calls a `calllock serve` exactly as
//! Twilio does — how an operator checks a deployment and how the
//! end-to-end tests run.
//!
//! 1. The voice webhook: `POST /twiml` with Twilio's form parameters
//!    (`CallSid`, `AccountSid`, `From`, `To`, `Direction`, `CallStatus`),
//!    signed with `X-Twilio-Signature` when the auth token is known.
//! 2. The TwiML answer: `<Connect><Stream url=…>` with `<Parameter>`s (the
//!    call goes on), or `<Say>…<Hangup/>` (the server turned it away).
//! 3. The stream ([`phone`]): signed upgrade, `connected`, `start`, media
//!    every 20 ms, marks echoed as audio plays, `clear` honoured.

pub mod phone;
pub mod recordings;
pub mod script;

use anyhow::{bail, Context, Result};
use phone::{Connect, Phone, PhoneEvent};
use providers::twilio::signature;
use tokio::sync::mpsc;

/// Whom to call, as whom.
#[derive(Debug, Clone)]
pub struct DialOptions {
    /// The server, e.g. `http://127.0.0.1:8765`.
    pub url: String,
    pub from: String,
    pub to: String,
    /// Twilio's auth token, to sign requests as Twilio would.
    pub auth_token: Option<String>,
    /// The caller's speaking rate (characters per second).
    pub chars_per_second: f64,
    /// How the caller speaks and the agent is heard.
    pub speech: phone::PhoneSpeech,
    /// Write both sides of the call to this WAV file (left: caller,
    /// right: agent) when it ends.
    pub record: Option<std::path::PathBuf>,
}

/// What the webhook answered.
pub enum Answer {
    /// The call is connected.
    Connected(Phone),
    /// The server said this and hung up (full or shutting down).
    TurnedAway(String),
}

/// A fresh SID: two letters and 32 hex digits, as Twilio's.
pub fn new_sid(prefix: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::from(prefix);
    while out.len() < prefix.len() + 32 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out.truncate(prefix.len() + 32);
    out
}

/// Undo XML attribute/text escaping.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let Some(end) = tail.find(';') else {
            out.push_str(tail);
            return out;
        };
        let ent = &tail[1..end];
        let c = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => ent
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match c {
            Some(c) => out.push(c),
            None => out.push_str(&tail[..=end]),
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The value of attribute `name` in the tag text `tag`.
fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let i = tag.find(&key)? + key.len();
    let j = tag[i..].find('"')? + i;
    Some(unescape(&tag[i..j]))
}

/// What a TwiML document asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Twiml {
    Stream {
        url: String,
        parameters: Vec<(String, String)>,
    },
    SayAndHangUp(String),
}

/// Read the TwiML CallLock serves (only the verbs it uses).
pub fn parse_twiml(xml: &str) -> Result<Twiml> {
    if let Some(i) = xml.find("<Stream") {
        let end = xml[i..]
            .find('>')
            .map(|j| i + j)
            .context("unterminated <Stream>")?;
        let url = attr(&xml[i..end], "url").context("<Stream> has no url")?;
        let mut parameters = Vec::new();
        let mut rest = &xml[end..];
        while let Some(p) = rest.find("<Parameter") {
            let e = rest[p..]
                .find('>')
                .map(|j| p + j)
                .context("unterminated <Parameter>")?;
            let tag = &rest[p..e];
            if let (Some(n), Some(v)) = (attr(tag, "name"), attr(tag, "value")) {
                parameters.push((n, v));
            }
            rest = &rest[e..];
        }
        return Ok(Twiml::Stream { url, parameters });
    }
    if let (Some(i), Some(j)) = (xml.find("<Say>"), xml.find("</Say>")) {
        if i < j {
            return Ok(Twiml::SayAndHangUp(unescape(&xml[i + 5..j])));
        }
    }
    bail!("the TwiML has neither <Connect><Stream> nor <Say>: {xml}")
}

/// Place a call: the webhook, then the stream.
pub async fn place_call(
    o: &DialOptions,
    events: mpsc::UnboundedSender<PhoneEvent>,
) -> Result<Answer> {
    let base = o.url.trim().trim_end_matches('/');
    let webhook = format!("{base}/twiml");
    let call_sid = new_sid("CA");
    let account_sid = new_sid("AC");
    let form: Vec<(String, String)> = [
        ("AccountSid", account_sid.as_str()),
        ("CallSid", call_sid.as_str()),
        ("CallStatus", "ringing"),
        ("Direction", "inbound"),
        ("From", o.from.as_str()),
        ("To", o.to.as_str()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .context("HTTP client")?;
    let mut req = client.post(&webhook).form(&form);
    if let Some(token) = &o.auth_token {
        req = req.header(
            "X-Twilio-Signature",
            signature::expected(token, &webhook, &form),
        );
    }
    let resp = req
        .send()
        .await
        .with_context(|| format!("cannot reach {webhook} (is `calllock serve` running?)"))?;
    let status = resp.status();
    let body = resp.text().await.context("reading the TwiML")?;
    if !status.is_success() {
        bail!("{webhook} answered {status}: {}", body.trim());
    }
    let (url, parameters) = match parse_twiml(&body)? {
        Twiml::SayAndHangUp(text) => return Ok(Answer::TurnedAway(text)),
        Twiml::Stream { url, parameters } => (url, parameters),
    };
    let signature = o
        .auth_token
        .as_ref()
        .map(|t| signature::expected(t, &url, &[]));
    let phone = Phone::connect(
        Connect {
            stream_url: url,
            signature,
            call_sid,
            account_sid,
            parameters,
            chars_per_second: o.chars_per_second,
            speech: o.speech.clone(),
            record: o.record.is_some(),
        },
        events,
    )
    .await?;
    Ok(Answer::Connected(phone))
}

/// How `calllock dial` drives the call.
pub enum Drive {
    /// Lines typed on the keyboard (end of input hangs up).
    Keyboard(mpsc::Receiver<Option<String>>),
    /// A replay script; `pause` after the agent's turn before each line.
    Script {
        items: Vec<crate::call::driver::ScriptItem>,
        pause: std::time::Duration,
    },
    /// Recorded caller lines (`--wav`), each said once the agent has
    /// answered and gone quiet (then `pause`).
    Recordings {
        clips: Vec<recordings::Clip>,
        pause: std::time::Duration,
    },
}

/// `calllock dial`: place the call, drive it, then report the outcome the
/// server recorded (read from `store` when this machine shares its
/// database). Returns the call SID, or `None` when turned away.
pub async fn dial(
    o: &DialOptions,
    drive: Drive,
    store: Option<&store::Store>,
) -> Result<Option<String>> {
    let (tx, rx) = mpsc::unbounded_channel();
    let phone = match place_call(o, tx).await? {
        Answer::TurnedAway(text) => {
            // The server's words (TwiML from outside): printable only.
            println!("agent:  {}", agent::printable::printable_text(&text));
            println!("(the server turned the call away and hung up)");
            return Ok(None);
        }
        Answer::Connected(p) => p,
    };
    eprintln!("connected: call {}", phone.call_sid);
    let listener = script::Listener::new(rx, true);
    let log = match drive {
        Drive::Keyboard(lines) => script::run_interactive(phone, listener, lines).await,
        Drive::Script { items, pause } => {
            script::run_script(phone, listener, items, pause, o.chars_per_second).await
        }
        Drive::Recordings { clips, pause } => {
            script::run_recordings(phone, listener, clips, pause).await
        }
    };
    if let (Some(path), Some(rec)) = (&o.record, &log.recording) {
        match std::fs::write(path, rec.to_wav()) {
            Ok(()) => eprintln!(
                "recorded {:.1} s of the call to {} (left: caller, right: agent)",
                rec.caller.len() as f64 / 8000.0,
                path.display()
            ),
            Err(e) => eprintln!("cannot write the recording {}: {e}", path.display()),
        }
    }
    eprintln!(
        "call {} ended: {} hung up; {} agent word(s) heard, {} barge-in clear(s), {} mark(s) echoed",
        log.call_sid,
        if log.caller_hung_up { "caller" } else { "agent" },
        log.heard.len(),
        log.clears,
        log.marks_echoed
    );
    if let Some(store) = store {
        report_outcome(store, &log.call_sid).await;
    }
    Ok(Some(log.call_sid))
}

/// Print the server's record of the call once its post-call work is done.
async fn report_outcome(store: &store::Store, call_id: &str) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match store.get_call(call_id).await {
            Ok(Some(rec)) if rec.ended_at.is_some() => {
                println!(
                    "outcome: {} (state {}, booking {}, urgency {}); see `calllock calls show {call_id}`",
                    rec.end_call_reason, rec.final_state, rec.booking_status, rec.urgency
                );
                return;
            }
            Ok(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Ok(_) => {
                println!("outcome: not recorded in this database yet (the server may use another)");
                return;
            }
            Err(e) => {
                println!("outcome: cannot read the call record: {e}");
                return;
            }
        }
    }
}

/// How `dial` should speak: `"codec"`, `"local"`, or `"auto"` — whatever
/// the server hears (`/health?verbose=1`: Whisper or Deepgram hear real
/// speech; the codec hears only the codec).
pub async fn choose_speech(
    cfg: &crate::config::Config,
    url: &str,
    mode: &str,
) -> Result<phone::PhoneSpeech> {
    let local = || -> Result<phone::PhoneSpeech> {
        let mut c = cfg.clone();
        c.speech.local = "on".into();
        let l = crate::local_speech::LocalSpeech::start(&c)
            .context("speaking real voices needs local speech on this side too")?;
        Ok(phone::PhoneSpeech::Local(l))
    };
    match mode {
        "codec" => Ok(phone::PhoneSpeech::Codec),
        "local" => local(),
        "auto" => {
            let ears = server_ears(url, &cfg.serve.metrics_token).await;
            match ears.as_deref() {
                Some("whisper") | Some("deepgram") => local(),
                _ => Ok(phone::PhoneSpeech::Codec),
            }
        }
        other => bail!("--voice must be auto, codec or local (not {other:?})"),
    }
}

/// What the server at `url` hears callers with, if it says (a server on
/// this machine always does; a remote one only with its metrics token).
async fn server_ears(url: &str, metrics_token: &str) -> Option<String> {
    let health = format!("{}/health?verbose=1", url.trim().trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()
        .ok()?;
    let mut req = client.get(&health);
    if !metrics_token.is_empty() {
        req = req.bearer_auth(metrics_token);
    }
    let v: serde_json::Value = req.send().await.ok()?.json().await.ok()?;
    v["vendors"]["speech"]["ears"].as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twiml_stream_and_parameters() {
        let x = r#"<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="ws://127.0.0.1:1/ws/twilio"><Parameter name="From" value="&quot;&gt;&lt;Hangup/&gt;"/><Parameter name="To" value="+1512"/></Stream></Connect></Response>"#;
        assert_eq!(
            parse_twiml(x).unwrap(),
            Twiml::Stream {
                url: "ws://127.0.0.1:1/ws/twilio".into(),
                parameters: vec![
                    ("From".into(), "\"><Hangup/>".into()),
                    ("To".into(), "+1512".into())
                ],
            }
        );
        assert_eq!(
            parse_twiml("<Response><Say>Busy &amp; sorry</Say><Hangup/></Response>").unwrap(),
            Twiml::SayAndHangUp("Busy & sorry".into())
        );
        assert!(parse_twiml("<Response/>").is_err());
        assert!(parse_twiml("<Stream url=\"x").is_err());
    }

    #[test]
    fn sids_look_like_twilios() {
        let s = new_sid("CA");
        assert_eq!(s.len(), 34);
        assert!(s[2..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(s, new_sid("CA"));
    }
}
