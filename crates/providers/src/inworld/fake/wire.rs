//! The fake's HTTP/1.1 side: routing a request and writing the answer — a
//! JSON status, or the NDJSON speech with its faults. Reading the request
//! and the chunk framing are the shared [`crate::fake::wire`].

use super::{lock, Behaviour, FakeConfig, RecordedRequest, Shared, WavHeaders};
use crate::fake::wire::{
    client_gone, http_chunk, read_request, sized_response, write, WireRequest, LAST_CHUNK,
};
use crate::inworld::wav::{canonical_header, header_with_list};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use voice::offline::codec::{encode_word, to_bytes};

const MAX_BODY_BYTES: usize = 1024 * 1024;
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How answering ended.
enum Outcome {
    Finished,
    /// A write failed: the client is gone.
    ClientGone,
    /// Reset the connection on purpose.
    Reset,
}

pub(super) async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let outcome = {
        let (mut rd, mut wr) = stream.split();
        let Ok(Some(req)) =
            tokio::time::timeout(READ_TIMEOUT, read_request(&mut rd, MAX_BODY_BYTES)).await
        else {
            return;
        };
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let index = {
            let mut all = lock(&shared.requests);
            all.push(RecordedRequest {
                method: req.method.clone(),
                path: req.target.clone(),
                headers: req.headers.clone(),
                body: body.clone(),
                lines_sent: 0,
                client_disconnected: false,
                response_finished: false,
            });
            all.len() - 1
        };
        let config = lock(&shared.config).clone();
        let answer = route(&req, &body, &config, &shared);
        let ctx = Ctx {
            shared: &shared,
            index,
            config,
            body: &body,
        };
        let outcome = tokio::select! {
            biased;
            o = respond(&ctx, answer, &mut wr) => o,
            () = client_gone(&mut rd) => Outcome::ClientGone,
        };
        match outcome {
            Outcome::Finished => {
                shared.update(index, |r| r.response_finished = true);
                let _ = wr.shutdown().await;
            }
            Outcome::ClientGone => shared.update(index, |r| r.client_disconnected = true),
            Outcome::Reset => {}
        }
        outcome
    };
    if matches!(outcome, Outcome::Reset) {
        // SO_LINGER 0: closing sends RST instead of FIN.
        let _ = stream.set_zero_linger();
    }
}

/// What to answer.
enum Answer {
    /// A status with a JSON body.
    Json(u16, Value),
    /// A synthesis behaviour.
    Synthesis(Behaviour),
}

fn grpc_error(code: u16, grpc: u8, message: &str) -> Answer {
    Answer::Json(
        code,
        json!({"code": grpc, "message": message, "details": []}),
    )
}

fn route(req: &WireRequest, body: &Value, config: &FakeConfig, shared: &Shared) -> Answer {
    let path = req.path();
    let auth_ok = req
        .headers
        .iter()
        .any(|(n, v)| n == "authorization" && *v == format!("Basic {}", config.key));
    match (req.method.as_str(), path) {
        (_, "/tts/v1/voices" | "/tts/v1/voice:stream") if !auth_ok => {
            grpc_error(401, 16, "Invalid authorization credentials")
        }
        ("GET", "/tts/v1/voices") => Answer::Json(200, voices()),
        ("POST", "/tts/v1/voice:stream") => {
            if let Err(why) = check_body(body) {
                return grpc_error(400, 3, &why);
            }
            let next = lock(&shared.script).pop_front();
            Answer::Synthesis(next.unwrap_or_else(|| by_default(config, shared)))
        }
        _ => grpc_error(404, 5, "Not Found"),
    }
}

/// The default behaviour, or a random stall ([`FakeConfig::stall_share`]).
fn by_default(config: &FakeConfig, shared: &Shared) -> Behaviour {
    let default = lock(&shared.default).clone();
    let n = shared.synthesis.fetch_add(1, Ordering::Relaxed);
    if default != Behaviour::Speak || config.stall_share <= 0.0 {
        return default;
    }
    let draw = crate::fake::wire::unit_draw(config.stall_seed, n);
    if draw >= config.stall_share {
        return default;
    }
    shared.stalled.fetch_add(1, Ordering::Relaxed);
    // Half before any audio, half after the first word.
    Behaviour::StallAfter(usize::from(draw >= config.stall_share / 2.0))
}

fn voices() -> Value {
    let voice = |id: &str, description: &str| {
        json!({"voiceId": id, "displayName": id, "description": description,
            "languages": ["en"], "tags": []})
    };
    json!({"voices": [
        voice("Ashley", "A warm, natural female voice"),
        voice("Dennis", "A smooth, calm male voice"),
        voice("Hades", "A commanding, gruff voice"),
    ]})
}

/// Inworld's checks of a synthesis request, as far as the fake knows them.
fn check_body(body: &Value) -> Result<(), String> {
    let text = body.get("text").and_then(Value::as_str).unwrap_or("");
    if text.trim().is_empty() {
        return Err("text is required".into());
    }
    if text.chars().count() > crate::inworld::MAX_CHARS {
        return Err(format!(
            "text exceeds the maximum of {} characters",
            crate::inworld::MAX_CHARS
        ));
    }
    for field in ["voiceId", "modelId"] {
        if body
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(format!("{field} is required"));
        }
    }
    let encoding = body
        .pointer("/audioConfig/audioEncoding")
        .and_then(Value::as_str);
    if !matches!(encoding, Some("LINEAR16" | "PCM")) {
        return Err(format!("the fake speaks LINEAR16 or PCM, not {encoding:?}"));
    }
    let rate = body
        .pointer("/audioConfig/sampleRateHertz")
        .and_then(Value::as_u64);
    if !rate.is_some_and(|r| (8000..=48000).contains(&r)) {
        return Err(format!("sampleRateHertz {rate:?} is outside 8000-48000"));
    }
    Ok(())
}

struct Ctx<'a> {
    shared: &'a Shared,
    index: usize,
    config: FakeConfig,
    body: &'a Value,
}

const STREAM_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";

fn ok(done: bool) -> Outcome {
    if done {
        Outcome::Finished
    } else {
        Outcome::ClientGone
    }
}

async fn json_response<W: AsyncWrite + Unpin>(wr: &mut W, code: u16, body: &Value) -> Outcome {
    let out = sized_response(code, "application/json", body.to_string().as_bytes(), false);
    ok(write(wr, &out).await)
}

async fn respond<W: AsyncWrite + Unpin>(ctx: &Ctx<'_>, answer: Answer, wr: &mut W) -> Outcome {
    let behaviour = match answer {
        Answer::Json(code, body) => return json_response(wr, code, &body).await,
        Answer::Synthesis(b) => b,
    };
    match behaviour {
        Behaviour::Hang => std::future::pending().await,
        Behaviour::Status(code) => {
            let (grpc, msg) = match code {
                401 => (16, "Invalid authorization credentials"),
                403 => (7, "Permission denied"),
                429 => (8, "Resource exhausted: too many requests"),
                400 => (3, "Invalid argument"),
                _ => (13, "Internal error"),
            };
            let body = json!({"code": grpc, "message": msg, "details": []});
            json_response(wr, code, &body).await
        }
        Behaviour::Raw(pieces) => {
            let mut done = write(wr, STREAM_HEAD).await;
            for p in pieces.iter().filter(|p| !p.is_empty()) {
                done = done && write(wr, &http_chunk(p)).await;
            }
            ok(done && write(wr, LAST_CHUNK).await)
        }
        b => speak(ctx, &b, wr).await,
    }
}

/// Write one response line (in `split_lines` pieces) and count it.
async fn line<W: AsyncWrite + Unpin>(ctx: &Ctx<'_>, wr: &mut W, line: &str) -> bool {
    let bytes = format!("{line}\n").into_bytes();
    let n = ctx.config.split_lines.max(1);
    let size = bytes.len().div_ceil(n).max(1);
    for piece in bytes.chunks(size) {
        if !write(wr, &http_chunk(piece)).await {
            return false;
        }
    }
    ctx.shared.update(ctx.index, |r| r.lines_sent += 1);
    true
}

fn error_line(code: u8, message: &str) -> String {
    json!({"error": {"code": code, "message": message, "details": []}}).to_string()
}

/// Give the client a moment to read what was sent (a reset discards data
/// still in flight), then reset.
async fn reset() -> Outcome {
    tokio::time::sleep(Duration::from_millis(50)).await;
    Outcome::Reset
}

/// Speak the request's text, one word per line, with `b`'s fault.
async fn speak<W: AsyncWrite + Unpin>(ctx: &Ctx<'_>, b: &Behaviour, wr: &mut W) -> Outcome {
    let text = ctx.body.get("text").and_then(Value::as_str).unwrap_or("");
    let model = ctx
        .body
        .get("modelId")
        .and_then(Value::as_str)
        .unwrap_or("");
    let rate = ctx
        .body
        .pointer("/audioConfig/sampleRateHertz")
        .and_then(Value::as_u64)
        .and_then(|r| u32::try_from(r).ok())
        .unwrap_or(8000);
    let asynchronous = ctx
        .body
        .get("timestampTransportStrategy")
        .and_then(Value::as_str)
        == Some("ASYNC");
    let delay = match b {
        Behaviour::Slow(d) => *d,
        _ => ctx.config.line_delay,
    };
    if !write(wr, STREAM_HEAD).await {
        return Outcome::ClientGone;
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut t = 0.0f64;
    for (i, word) in words.iter().enumerate() {
        match b {
            Behaviour::ErrorBeforeAudio => {
                return ok(line(ctx, wr, &error_line(13, "Internal error")).await
                    && write(wr, LAST_CHUNK).await);
            }
            Behaviour::ErrorAfter(n) if *n == i => {
                return ok(line(ctx, wr, &error_line(8, "Resource exhausted")).await
                    && write(wr, LAST_CHUNK).await);
            }
            Behaviour::ResetAfter(n) if *n == i => return reset().await,
            Behaviour::StallAfter(n) if *n == i => std::future::pending().await,
            _ => {}
        }
        let garbage = matches!(b, Behaviour::GarbageAfter(n) if *n == i);
        if garbage && !line(ctx, wr, "this is not {json").await {
            return Outcome::ClientGone;
        }
        let wait = if i == 0 {
            ctx.config.first_line_delay
        } else {
            delay
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let mut samples = Vec::new();
        encode_word(word, rate, ctx.config.chars_per_second, &mut samples);
        let pcm = to_bytes(&samples);
        let len = u32::try_from(pcm.len()).unwrap_or(u32::MAX);
        let mut audio = match ctx.config.wav_headers {
            WavHeaders::None => Vec::new(),
            WavHeaders::Canonical => canonical_header(rate, len),
            WavHeaders::WithList => header_with_list(rate, len),
        };
        audio.extend_from_slice(&pcm);
        let secs = samples.len() as f64 / f64::from(rate.max(1));
        let timing = json!({"wordAlignment": {"words": [word],
            "wordStartTimeSeconds": [t], "wordEndTimeSeconds": [t + secs]}});
        t += secs;
        let mut result = json!({"audioContent": B64.encode(&audio)});
        if asynchronous {
            let ts = json!({"result": {"timestampInfo": timing}}).to_string();
            if !line(ctx, wr, &ts).await {
                return Outcome::ClientGone;
            }
        } else {
            result["timestampInfo"] = timing;
        }
        if i + 1 == words.len() {
            result["usage"] =
                json!({"processedCharactersCount": text.chars().count(), "modelId": model});
        }
        if !line(ctx, wr, &json!({ "result": result }).to_string()).await {
            return Outcome::ClientGone;
        }
    }
    // Faults due after more words than the text has.
    let error = matches!(b, Behaviour::ErrorBeforeAudio | Behaviour::ErrorAfter(_));
    if error && !line(ctx, wr, &error_line(8, "Resource exhausted")).await {
        return Outcome::ClientGone;
    }
    match b {
        Behaviour::ResetAfter(_) => return reset().await,
        Behaviour::StallAfter(_) => std::future::pending().await,
        _ => {}
    }
    ok(write(wr, LAST_CHUNK).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fake_checks_bodies_like_inworld() {
        let good = json!({"text": "Hi", "voiceId": "Ashley", "modelId": "m",
            "audioConfig": {"audioEncoding": "LINEAR16", "sampleRateHertz": 8000}});
        assert_eq!(check_body(&good), Ok(()));
        let mut long = good.clone();
        long["text"] = json!("a".repeat(2001));
        assert!(check_body(&long).is_err_and(|e| e.contains("2000")));
        let mut bad = good.clone();
        bad["audioConfig"]["sampleRateHertz"] = json!(4000);
        assert!(check_body(&bad).is_err());
        assert!(check_body(&Value::Null).is_err());
    }
}
