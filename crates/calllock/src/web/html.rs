//! Small pieces of HTML: escaping, the page layout, the business's clock,
//! and the assets every page uses (no CDN, nothing fetched from elsewhere:
//! the dashboard works offline).
//!
//! Scripts are never inline: the pages load [`DASHBOARD_JS`] from
//! `/assets/dashboard.js` (same origin), so the Content-Security-Policy
//! ([`super::security_headers`]) can forbid every inline script — markup
//! injected into a page through a caller's words could not run.

use agent::BusinessProfile;
use chrono::{DateTime, NaiveDate, TimeZone, Utc};

/// `s` safe inside HTML text and attribute values, and printable: no
/// control character or bidi override reaches the page
/// ([`agent::printable::printable_text`]), even from a record stored
/// before caller lines were cleaned on the way in.
pub fn esc(s: &str) -> String {
    let s = agent::printable::printable_text(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A moment as the business reads it: on its own clock (the profile's
/// `timezone`, e.g. `America/Chicago`), with the zone's abbreviation so
/// nobody has to guess — "Wed, Nov 25, 2026, 9:04 PM CST". Every time a
/// person reads on the dashboard goes through here (or
/// [`local_time_unix`]); none is shown in UTC.
pub fn local_time(business: &BusinessProfile, t: DateTime<Utc>) -> String {
    t.with_timezone(&business.tz())
        .format("%a, %b %-d, %Y, %-I:%M %p %Z")
        .to_string()
}

/// [`local_time`] of Unix seconds (the outbox's and the events' clocks);
/// a time that cannot be a date (NaN, out of range) reads "unknown".
pub fn local_time_unix(business: &BusinessProfile, unix_s: f64) -> String {
    let whole = unix_s.floor();
    if !whole.is_finite() || whole.abs() > 1e13 {
        return "unknown".into();
    }
    match Utc.timestamp_opt(whole as i64, 0).single() {
        Some(t) => local_time(business, t),
        None => "unknown".into(),
    }
}

/// An appointment time as the business says it — "Friday, February 27 at
/// 2:00 PM" — from the booking backend's ISO 8601 time (whatever offset it
/// carries, shown on the business's clock). Text that is not such a time
/// (a V2 backend's own wording) is shown as given.
pub fn appointment_time(business: &BusinessProfile, iso: &str) -> String {
    match DateTime::parse_from_rfc3339(iso.trim()) {
        Ok(t) => t
            .with_timezone(&business.tz())
            .format("%A, %B %-d at %-I:%M %p")
            .to_string(),
        Err(_) => iso.trim().to_string(),
    }
}

/// The Unix second at which `day` begins on the business's clock (what a
/// date filter means: "calls of November 25" are those of the business's
/// November 25, not UTC's). On a day that begins inside a daylight-saving
/// gap, the first moment that exists.
pub fn local_day_start(business: &BusinessProfile, day: NaiveDate) -> i64 {
    let tz = business.tz();
    let midnight = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    // A gap is at most a few hours: the first existing quarter hour.
    (0..=24 * 4)
        .find_map(|q| {
            let t = midnight.checked_add_signed(chrono::Duration::minutes(15 * q))?;
            tz.from_local_datetime(&t).earliest()
        })
        .map_or_else(|| midnight.and_utc().timestamp(), |t| t.timestamp())
}

/// The dashboard's style sheet. Nothing may make the page wider than the
/// window (1024 px, a phone's 390 px): long words wrap anywhere, pictures
/// shrink, wide tables scroll inside their own box (`.scroll`; on a narrow
/// screen every other table as well), and the calls list turns into one
/// card per call on a narrow screen
/// (`table.cards`, each cell labelled by its `data-label`). Short labels
/// that must not break mid-word (`2.5s`, "Agent", a phone number) are
/// `.nowrap`.
const CSS: &str = "\
*{box-sizing:border-box}\
body{font:15px/1.4 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}\
header{background:#14324a;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.4rem 1.2rem;align-items:center}\
header a{color:#cfe3f5;text-decoration:none}header b{margin-right:1rem}\
header nav{display:flex;flex-wrap:wrap;gap:.4rem 1.2rem}\
#signout{margin-left:auto;background:none;color:#fff;border:1px solid #cfe3f5;border-radius:.3rem;cursor:pointer}\
main{padding:1rem;max-width:72rem;margin:auto}\
.scroll{overflow-x:auto;max-width:100%}\
table{border-collapse:collapse;width:100%;background:#fff}\
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top;overflow-wrap:anywhere}\
th{font-weight:600;background:#eef1f4;overflow-wrap:normal}\
.nowrap,.pill,button{white-space:nowrap;overflow-wrap:normal}\
svg{max-width:100%;height:auto}\
.pill{display:inline-block;padding:0 .45rem;border-radius:.6rem;font-size:.85em;background:#e3e6ea}\
.red{background:#f8d0d0}.green{background:#d3f0d3}.blue{background:#d5e5f7}.gray{background:#e3e6ea}\
.live{background:#ffe08a}\
.agent{color:#14324a}.caller{color:#5b2c06}td.agent,td.caller{white-space:nowrap}.cut{color:#a00;font-size:.85em}\
.note{color:#667;font-size:.9em}\
form.filters{display:flex;gap:.5rem;flex-wrap:wrap;margin-bottom:.8rem}\
form.filters input,form.filters select,button{font:inherit;padding:.25rem .4rem;max-width:100%}\
section{margin:1.2rem 0}h2{font-size:1.1rem;margin:.4rem 0}h1{overflow-wrap:anywhere}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;background:#fff;padding:.6rem}\
dt{color:#556}dd{margin:0;min-width:0;overflow-wrap:anywhere}code,pre{font-size:.85em}\
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}\
.next{font-size:1.1rem;font-weight:600;padding:.6rem .8rem;background:#fff;border-left:.4rem solid #14324a}\
.next.red{border-left-color:#c0392b;background:#fdeaea}\
.summary{font-size:1.05rem}\
@media (max-width:760px){\
table.cards,table.cards tbody,table.cards tr,table.cards td{display:block;width:auto}\
table.cards tr.head{display:none}\
table:not(.cards){display:block;overflow-x:auto}\
table.cards tr{background:#fff;border:1px solid #d5d9de;border-radius:.4rem;margin:.5rem 0;padding:.3rem 0}\
table.cards td{border:0;padding:.1rem .6rem}\
table.cards td[data-label]::before{content:attr(data-label) \": \";color:#556;font-size:.85em}\
dl{grid-template-columns:1fr}dd{margin-bottom:.3rem}}";

/// The dashboard's script, served as `/assets/dashboard.js`:
///
/// - the live refresh: the element `#live` is reloaded from the same URL
///   with `fragment=1` every `data-refresh` seconds (no page reload), and
///   once the session is gone (a restart, an expiry, a sign-out elsewhere:
///   the fragment's request was sent on to `/login`, or answered 401) the
///   browser goes to the sign-in page instead of showing it inside the
///   dashboard;
/// - "Sign out": `POST /logout` with the session's CSRF token (read from
///   `/api/session`), then the sign-in page;
/// - forms marked `data-csrf` (the outbox's "retry now") are sent with
///   `fetch` and the token in `X-CSRF-Token`, the answer shown in their
///   `<output>`.
pub const DASHBOARD_JS: &str = "\
(function(){\
function toLogin(){location.assign('/login')}\
function signedOut(r){return r.status===401||(r.redirected&&new URL(r.url).pathname==='/login')}\
var el=document.getElementById('live');\
if(el&&el.dataset.refresh){var every=+el.dataset.refresh*1000;\
var tick=function(){var u=new URL(location.href);u.searchParams.set('fragment','1');\
fetch(u,{credentials:'same-origin'}).then(function(r){\
if(signedOut(r)){toLogin();return null}if(r.ok)return r.text();throw r.status}).then(function(t){\
if(t===null)return;el.innerHTML=t;if(el.querySelector('[data-final]'))return;setTimeout(tick,every)})\
.catch(function(){setTimeout(tick,every*2)})};\
setTimeout(tick,every)}\
var out=document.getElementById('signout');\
if(out)out.addEventListener('click',function(){out.disabled=true;\
fetch('/api/session',{credentials:'same-origin'}).then(function(r){\
if(!r.ok)return{gone:true};return r.json()}).then(function(j){if(j.gone)return{status:401};\
return fetch('/logout',{method:'POST',credentials:'same-origin',headers:{'X-CSRF-Token':j.csrf}})})\
.then(function(r){if(r.status===204||r.status===401){toLogin();return}throw r.status})\
.catch(function(){out.disabled=false;out.textContent='Sign out (failed: try again)'})});\
document.addEventListener('submit',function(e){var f=e.target;if(!f.dataset.csrf)return;\
e.preventDefault();fetch(f.action,{method:'POST',credentials:'same-origin',headers:{'X-CSRF-Token':f.dataset.csrf}})\
.then(function(r){if(signedOut(r)){toLogin();return}return r.json().then(function(j){\
f.querySelector('output').textContent=r.ok?(j.message||'retrying now'):(j.error||r.status)})})});\
})();";

/// A whole page: the header (navigation and "Sign out"), `body`, the
/// style, and the dashboard's script (loaded from `/assets/dashboard.js`).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} — CallLock</title><style>{CSS}</style></head><body><header><b>CallLock</b>\
         <nav><a href=\"/\">Calls</a><a href=\"/outbox\">Outbox</a><a href=\"/status\">Health</a>\
         <a href=\"/phone\">Phone</a></nav>\
         <button id=\"signout\" type=\"button\">Sign out</button>\
         </header><main>{body}</main><script src=\"/assets/dashboard.js\"></script></body></html>",
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cannot_become_markup() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        let p = page("<b>", "<p>x</p>");
        assert!(p.contains("<title>&lt;b&gt; — CallLock</title>"));
        assert!(
            !p.contains("http://") && !p.contains("https://"),
            "nothing fetched"
        );
        assert!(
            !p.contains("<script>"),
            "no inline script: the CSP forbids them"
        );
    }

    #[test]
    fn times_read_on_the_business_clock() {
        let austin = BusinessProfile::default();
        // 03:04 UTC on the 26th is 9:04 PM on the 25th in Austin (CST).
        let t = Utc.with_ymd_and_hms(2026, 11, 26, 3, 4, 0).unwrap();
        assert_eq!(local_time(&austin, t), "Wed, Nov 25, 2026, 9:04 PM CST");
        assert_eq!(
            local_time_unix(&austin, t.timestamp() as f64 + 0.7),
            "Wed, Nov 25, 2026, 9:04 PM CST"
        );
        // Summer: daylight time.
        let july = Utc.with_ymd_and_hms(2026, 7, 4, 17, 0, 0).unwrap();
        assert_eq!(local_time(&austin, july), "Sat, Jul 4, 2026, 12:00 PM CDT");
        for nonsense in [f64::NAN, f64::INFINITY, -1e300, 1e300] {
            assert_eq!(local_time_unix(&austin, nonsense), "unknown");
        }
        let paris = BusinessProfile {
            timezone: "Europe/Paris".into(),
            ..BusinessProfile::default()
        };
        assert_eq!(local_time(&paris, t), "Thu, Nov 26, 2026, 4:04 AM CET");
    }

    #[test]
    fn an_appointment_reads_as_said_and_a_day_begins_at_local_midnight() {
        let austin = BusinessProfile::default();
        assert_eq!(
            appointment_time(&austin, "2026-02-27T14:00:00-06:00"),
            "Friday, February 27 at 2:00 PM"
        );
        // Another offset is moved onto the business's clock.
        assert_eq!(
            appointment_time(&austin, "2026-02-27T20:00:00Z"),
            "Friday, February 27 at 2:00 PM"
        );
        assert_eq!(appointment_time(&austin, " Friday 2pm "), "Friday 2pm");
        let day = NaiveDate::from_ymd_opt(2026, 11, 25).unwrap();
        assert_eq!(
            local_day_start(&austin, day),
            Utc.with_ymd_and_hms(2026, 11, 25, 6, 0, 0)
                .unwrap()
                .timestamp()
        );
        // Havana springs forward at midnight: the day begins at 1:00 AM.
        let havana = BusinessProfile {
            timezone: "America/Havana".into(),
            ..BusinessProfile::default()
        };
        // The last and first days a date can be: an answer, no panic.
        for day in [NaiveDate::MAX, NaiveDate::MIN] {
            local_day_start(&havana, day);
        }
        let spring = NaiveDate::from_ymd_opt(2026, 3, 8).unwrap();
        assert_eq!(
            local_day_start(&havana, spring),
            Utc.with_ymd_and_hms(2026, 3, 8, 5, 0, 0)
                .unwrap()
                .timestamp()
        );
    }
}
