//! Small pieces of HTML: escaping, the page layout, and the assets every
//! page embeds (no CDN, nothing fetched: the dashboard works offline).

/// `s` safe inside HTML text and attribute values.
pub fn esc(s: &str) -> String {
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

/// The dashboard's style sheet.
const CSS: &str = "\
body{font:15px/1.4 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}\
header{background:#14324a;color:#fff;padding:.6rem 1rem;display:flex;gap:1.2rem;align-items:center}\
header a{color:#cfe3f5;text-decoration:none}header b{margin-right:1rem}\
main{padding:1rem;max-width:72rem;margin:auto}\
table{border-collapse:collapse;width:100%;background:#fff}\
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top}\
th{font-weight:600;background:#eef1f4}\
.pill{display:inline-block;padding:0 .45rem;border-radius:.6rem;font-size:.85em;background:#e3e6ea}\
.red{background:#f8d0d0}.green{background:#d3f0d3}.blue{background:#d5e5f7}.gray{background:#e3e6ea}\
.live{background:#ffe08a}\
.agent{color:#14324a}.caller{color:#5b2c06}.cut{color:#a00;font-size:.85em}\
.note{color:#667;font-size:.9em}\
form.filters{display:flex;gap:.5rem;flex-wrap:wrap;margin-bottom:.8rem}\
form.filters input,form.filters select,button{font:inherit;padding:.25rem .4rem}\
section{margin:1.2rem 0}h2{font-size:1.1rem;margin:.4rem 0}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;background:#fff;padding:.6rem}\
dt{color:#556}code,pre{font-size:.85em}pre{white-space:pre-wrap;margin:0}";

/// Refreshes the element `#live` from the same URL with `fragment=1`
/// every few seconds (live calls, the calls list) — no page reload.
const JS: &str = "\
(function(){var el=document.getElementById('live');if(!el||!el.dataset.refresh)return;\
var every=+el.dataset.refresh*1000;function tick(){var u=new URL(location.href);\
u.searchParams.set('fragment','1');fetch(u,{credentials:'same-origin'}).then(function(r){\
if(r.ok)return r.text();throw r.status}).then(function(t){el.innerHTML=t;\
if(el.querySelector('[data-final]'))return;setTimeout(tick,every)}).catch(function(){setTimeout(tick,every*2)})}\
setTimeout(tick,every)})();\
document.addEventListener('submit',function(e){var f=e.target;if(!f.dataset.csrf)return;\
e.preventDefault();fetch(f.action,{method:'POST',credentials:'same-origin',headers:{'X-CSRF-Token':f.dataset.csrf}})\
.then(function(r){return r.json().then(function(j){f.querySelector('output').textContent=r.ok?'retrying now':(j.error||r.status)})})});";

/// A whole page: the header's navigation, `body`, the style and script.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{} — CallLock</title>\
         <style>{CSS}</style></head><body><header><b>CallLock</b>\
         <a href=\"/\">Calls</a><a href=\"/outbox\">Outbox</a><a href=\"/status\">Health</a>\
         <a href=\"/phone\">Phone</a>\
         </header><main>{body}</main><script>{JS}</script></body></html>",
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
    }
}
