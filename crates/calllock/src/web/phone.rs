//! The browser phone: talk to the agent from the dashboard with the
//! browser's microphone, to try a configuration without a phone number.
//!
//! The page speaks Twilio's Media Streams protocol itself, over its own
//! socket (`/ws/phone`, signed-in operators only): `connected`, `start`,
//! the microphone as 20 ms of 8 kHz µ-law in each `media` message, each
//! `mark` echoed once the agent audio queued before it has played, `clear`
//! honoured. So a browser call is the same call as a Twilio call — the
//! same handler ([`crate::serve::twilio_call`]), pipeline, pacing, marks,
//! barge-in, journal and post-call — with the browser as the caller
//! ([`BROWSER_CALLER`](crate::serve::twilio_call::BROWSER_CALLER)) and no
//! Twilio call to hang up.

use super::page::{answer, signed_in, to_login};
use crate::serve::app::App;
use crate::serve::twilio_call::{self, Line};
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// `GET /phone`: the phone.
pub async fn page(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if signed_in(&app, &headers).is_none() {
        return to_login();
    }
    let body = format!(
        "<h1>Phone</h1><p class=\"note\">Call the agent from this browser: your microphone is \
         the caller, the agent answers through your speakers. The call is an ordinary call of \
         this server (caller <code>{caller}</code>) and shows in the calls list.</p>\
         <p><button id=\"dial\" type=\"button\">Call the agent</button> \
         <button id=\"hangup\" type=\"button\" disabled>Hang up</button></p>\
         <p>Status: <output id=\"phone-status\">idle</output></p>\
         <p id=\"phone-call\"></p><script src=\"/assets/phone.js\"></script>",
        caller = twilio_call::BROWSER_CALLER
    );
    answer("Phone", body, false)
}

/// `GET /ws/phone`: one browser call per connection.
///
/// Signed-in operators only, and only from the dashboard's own pages: a
/// WebSocket is not bound by the same-origin rules, so a page elsewhere
/// could otherwise open one with the operator's cookie (the cookie is
/// `SameSite=Strict`, and the `Origin` is checked as well).
pub async fn socket(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if signed_in(&app, &headers).is_none() {
        return (StatusCode::FORBIDDEN, "sign in first").into_response();
    }
    if !same_origin(&headers) {
        tracing::warn!("refused a browser phone socket from another origin");
        return (StatusCode::FORBIDDEN, "another origin").into_response();
    }
    let Some(slot) = app.calls.try_enter() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is full or draining",
        )
            .into_response();
    };
    ws.max_message_size(providers::twilio::media_streams::MAX_MESSAGE_BYTES)
        .read_buffer_size(crate::serve::http::READ_BUFFER_BYTES)
        .write_buffer_size(crate::serve::http::WRITE_BUFFER_BYTES)
        .on_upgrade(move |socket| twilio_call::run(app, socket, slot, Line::Browser))
}

/// The request's `Origin` names the host it was sent to (`http` or
/// `https`); a request without `Origin` is not a browser's and is refused.
fn same_origin(headers: &HeaderMap) -> bool {
    let get = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(origin), Some(host)) = (get(header::ORIGIN), get(header::HOST)) else {
        return false;
    };
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|o| o.eq_ignore_ascii_case(host))
}

/// The phone in the page: microphone → 8 kHz µ-law → `media`; agent
/// `media` → speakers, scheduled back to back; marks echoed when played;
/// `clear` stops what is queued and echoes the pending marks at once (as
/// Twilio does). Served as `/assets/phone.js` (no inline script: see
/// [`super::security_headers`]).
pub(super) const PHONE_JS: &str = r#"
(function(){
var dial=document.getElementById('dial'),hang=document.getElementById('hangup'),
    st=document.getElementById('phone-status'),info=document.getElementById('phone-call');
// What this page played and echoed (read by the browser test).
var stats=window.calllockPhone={media:0,marks:0,sent:0};
var ws=null,ctx=null,mic=null,proc=null,srcs=[],pending=[],playAt=0,sid='',acc=[],pos=0,chunk=0,t0=0;
function hex(n){var a=new Uint8Array(n);crypto.getRandomValues(a);
  return Array.prototype.map.call(a,function(b){return ('0'+b.toString(16)).slice(-2)}).join('')}
function enc(x){var s=x<0?0x80:0;if(x<0)x=-x;if(x>32635)x=32635;x+=0x84;var e=7;
  for(var m=0x4000;(x&m)===0&&e>0;m>>=1)e--;return (~(s|(e<<4)|((x>>(e+3))&15)))&255}
function dec(u){u=~u&255;var x=(((u&15)<<3)+0x84)<<((u>>4)&7);x-=0x84;return (u&0x80?-x:x)/32768}
function send(o){if(ws&&ws.readyState===1)ws.send(JSON.stringify(o))}
function say(t){st.textContent=t}
function echo(name){stats.marks++;send({event:'mark',streamSid:sid,mark:{name:name}})}
function play(b64){var bin=atob(b64),n=bin.length;if(!n)return;stats.media++;
  var buf=ctx.createBuffer(1,n,8000),d=buf.getChannelData(0);
  for(var i=0;i<n;i++)d[i]=dec(bin.charCodeAt(i));
  var s=ctx.createBufferSource();s.buffer=buf;s.connect(ctx.destination);
  playAt=Math.max(playAt,ctx.currentTime);s.start(playAt);playAt+=n/8000;srcs.push(s);
  s.onended=function(){srcs.splice(srcs.indexOf(s),1)}}
function mark(name){var wait=Math.max(0,playAt-ctx.currentTime)*1000;
  var p={name:name};p.timer=setTimeout(function(){pending.splice(pending.indexOf(p),1);echo(name)},wait);
  pending.push(p)}
function clear(){srcs.slice().forEach(function(s){try{s.stop()}catch(e){}});srcs=[];
  playAt=ctx.currentTime;pending.splice(0).forEach(function(p){clearTimeout(p.timer);echo(p.name)})}
function capture(e){var x=e.inputBuffer.getChannelData(0),step=ctx.sampleRate/8000;
  for(;pos<x.length;pos+=step){var a=Math.floor(pos),b=Math.min(x.length,Math.floor(pos+step)),sum=0;
    for(var i=a;i<b;i++)sum+=x[i];acc.push(enc(Math.round(32767*Math.max(-1,Math.min(1,sum/Math.max(1,b-a)))))) }
  pos-=x.length;
  while(acc.length>=160){var f=acc.splice(0,160),s='';for(var i=0;i<160;i++)s+=String.fromCharCode(f[i]);
    chunk++;stats.sent++;send({event:'media',sequenceNumber:String(chunk+1),streamSid:sid,
      media:{track:'inbound',chunk:String(chunk),timestamp:String(Math.round(performance.now()-t0)),payload:btoa(s)}})}}
function end(why){if(proc){proc.disconnect();proc=null}
  if(mic){mic.getTracks().forEach(function(t){t.stop()});mic=null}
  if(ws){var w=ws;ws=null;if(w.readyState===1)w.send(JSON.stringify({event:'stop',streamSid:sid}));
    try{w.close()}catch(e){}}
  dial.disabled=false;hang.disabled=true;say(why)}
dial.onclick=function(){
  dial.disabled=true;say('asking for the microphone…');
  ctx=ctx||new (window.AudioContext||window.webkitAudioContext)();ctx.resume();
  navigator.mediaDevices.getUserMedia({audio:{echoCancellation:true,noiseSuppression:true}}).then(function(m){
    mic=m;var callSid='CA'+hex(16);sid='MZ'+hex(16);chunk=0;acc=[];pos=0;playAt=0;t0=performance.now();
    ws=new WebSocket((location.protocol==='https:'?'wss://':'ws://')+location.host+'/ws/phone');
    ws.onopen=function(){
      send({event:'connected',protocol:'Call',version:'1.0.0'});
      send({event:'start',sequenceNumber:'1',streamSid:sid,start:{streamSid:sid,callSid:callSid,
        accountSid:'browser',tracks:['inbound'],customParameters:{From:'browser',To:'dashboard'},
        mediaFormat:{encoding:'audio/x-mulaw',sampleRate:8000,channels:1}}});
      var src=ctx.createMediaStreamSource(mic);proc=ctx.createScriptProcessor(1024,1,1);
      proc.onaudioprocess=capture;src.connect(proc);proc.connect(ctx.destination);
      hang.disabled=false;say('connected');
      info.innerHTML='';var a=document.createElement('a');a.href='/calls/'+callSid;a.textContent=callSid;
      info.appendChild(document.createTextNode('Call ')),info.appendChild(a);};
    ws.onmessage=function(e){var m;try{m=JSON.parse(e.data)}catch(x){return}
      if(m.event==='media')play(m.media.payload);
      else if(m.event==='mark')mark(m.mark.name);
      else if(m.event==='clear')clear();};
    ws.onclose=function(){if(ws)end('call ended')};
    ws.onerror=function(){if(ws)end('the call failed')};
  }).catch(function(e){end('no microphone: '+e)})};
hang.onclick=function(){end('you hung up')};
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_the_dashboards_own_origin_may_open_the_phone_socket() {
        let host = ("host", "127.0.0.1:8765");
        assert!(same_origin(&headers(&[
            host,
            ("origin", "http://127.0.0.1:8765")
        ])));
        assert!(same_origin(&headers(&[
            ("host", "calllock.example.com"),
            ("origin", "https://calllock.example.com")
        ])));
        for bad in [
            "http://evil.example",
            "http://127.0.0.1:8766",
            "null",
            "http://127.0.0.1:8765.evil.example",
        ] {
            assert!(!same_origin(&headers(&[host, ("origin", bad)])), "{bad}");
        }
        assert!(!same_origin(&headers(&[host])), "no Origin: not a browser");
    }

    #[test]
    fn the_page_speaks_media_streams() {
        for part in [
            "event:'start'",
            "event:'media'",
            "event:'mark'",
            "'clear'",
            "/ws/phone",
            "getUserMedia",
        ] {
            assert!(PHONE_JS.contains(part), "{part}");
        }
        assert!(!PHONE_JS.contains("http://") && !PHONE_JS.contains("https://"));
    }
}
