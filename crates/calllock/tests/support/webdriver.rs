//! A headless Chromium driven over the W3C WebDriver protocol (Debian's
//! `chromium` and `chromium-driver`): just the commands the browser tests
//! use — open a page, find elements, type, click, read text, run a script,
//! take a screenshot, size the page like a laptop's or a phone's, read a
//! cookie, measure whether the page scrolls sideways. Test kit only.
#![allow(dead_code)]

use base64::Engine as _;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::time::Instant;

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The W3C key naming an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Ask `probe` every 100 ms until it answers `Ok`, for at most `limit`;
/// otherwise fail, naming `what` and the probe's last answer.
pub async fn until<T, F, Fut>(limit: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + limit;
    loop {
        match probe().await {
            Ok(v) => return v,
            Err(last) => assert!(Instant::now() < deadline, "{what} within {limit:?}: {last}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Why the browser tests cannot run here (`None`: they can).
pub fn missing() -> Option<String> {
    for p in [CHROMIUM, CHROMEDRIVER] {
        if !Path::new(p).exists() {
            return Some(format!(
                "{p} is not installed (Debian packages chromium and chromium-driver; .ci/run installs them)"
            ));
        }
    }
    None
}

/// A running chromedriver with one browser session.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

/// Where screenshots go: `target/browser-screenshots/` (not committed).
pub fn screenshot_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Browser {
    /// Start chromedriver and a headless Chromium; `extra` adds
    /// command-line switches (a fake microphone, say).
    pub async fn start(extra: &[&str]) -> Browser {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        // chromedriver answers /status once it listens.
        until(Duration::from_secs(20), "chromedriver started", || async {
            match http.get(format!("{base}/status")).send().await {
                Ok(r) if r.status().is_success() => Ok(()),
                Ok(r) => Err(format!("/status answered {}", r.status())),
                Err(e) => Err(e.to_string()),
            }
        })
        .await;
        let profile = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--headless=new".to_string(),
            // Tests run as root in CI: Chromium's sandbox refuses root.
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            // Tall, so a screenshot holds a whole page (the call page's chart too).
            "--window-size=1280,2400".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}});
        let mut b = Browser {
            driver,
            base,
            session: String::new(),
            http,
            _profile: profile,
        };
        let v = b.call("POST", "/session", caps).await;
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_string();
        b
    }

    /// One WebDriver command; its `value`, or a panic naming the error.
    async fn call(&self, method: &str, path: &str, body: Value) -> Value {
        self.try_call(method, path, body)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// One WebDriver command; its `value`, or the error it answered.
    async fn try_call(&self, method: &str, path: &str, body: Value) -> Result<Value, String> {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self
                .http
                .post(url)
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).unwrap()),
        };
        let r = req.send().await.expect("chromedriver answers");
        let status = r.status();
        let bytes = r.bytes().await.unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(format!(
                "WebDriver {method} {path}: {status} {}",
                v["value"]
            ));
        }
        Ok(v.get("value").cloned().unwrap_or(Value::Null))
    }

    fn s(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// Open `url` (waits for the page to load).
    pub async fn open(&self, url: &str) {
        self.call("POST", &self.s("/url"), json!({ "url": url }))
            .await;
    }

    /// The page's address now.
    pub async fn url(&self) -> String {
        let v = self.call("GET", &self.s("/url"), Value::Null).await;
        v.as_str().unwrap_or_default().to_string()
    }

    /// The elements matching a CSS selector (their references).
    pub async fn all(&self, css: &str) -> Vec<String> {
        let v = self
            .call(
                "POST",
                &self.s("/elements"),
                json!({"using": "css selector", "value": css}),
            )
            .await;
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The first element matching `css`, waiting up to `limit` for it.
    pub async fn find_within(&self, css: &str, limit: Duration) -> String {
        until(limit, &format!("an element {css:?}"), || async {
            match self.all(css).await.into_iter().next() {
                Some(e) => Ok(e),
                None => Err(format!("none on {}", self.url().await)),
            }
        })
        .await
    }

    /// The first element matching `css` (waiting up to 5 s).
    pub async fn find(&self, css: &str) -> String {
        self.find_within(css, Duration::from_secs(5)).await
    }

    /// Type `text` into an element.
    pub async fn type_into(&self, element: &str, text: &str) {
        self.call(
            "POST",
            &self.s(&format!("/element/{element}/value")),
            json!({ "text": text }),
        )
        .await;
    }

    /// Click an element.
    pub async fn click(&self, element: &str) {
        self.call(
            "POST",
            &self.s(&format!("/element/{element}/click")),
            json!({}),
        )
        .await;
    }

    /// Click an element that leads to another page (a link, a form's
    /// button) and wait up to 10 s until that page has loaded. (A click
    /// answers before the navigation it starts has finished: without the
    /// wait, the next look could find the old page.)
    pub async fn click_to_load(&self, element: &str) {
        self.run("window.__calllock_old_page = true; return null")
            .await;
        self.click(element).await;
        until(
            Duration::from_secs(10),
            "a new page after the click",
            || async {
                // Mid-navigation a script may find no page to run in: try again.
                let v = self
                    .try_call(
                        "POST",
                        &self.s("/execute/sync"),
                        json!({"script": "return window.__calllock_old_page === undefined \
                        && document.readyState === 'complete'", "args": []}),
                    )
                    .await?;
                match v.as_bool() {
                    Some(true) => Ok(()),
                    _ => Err(format!("still {}", self.url().await)),
                }
            },
        )
        .await
    }

    /// An element's rendered text.
    pub async fn text(&self, element: &str) -> String {
        let v = self
            .call(
                "GET",
                &self.s(&format!("/element/{element}/text")),
                Value::Null,
            )
            .await;
        v.as_str().unwrap_or_default().to_string()
    }

    /// The whole page's rendered text.
    pub async fn body_text(&self) -> String {
        let body = self.find("body").await;
        self.text(&body).await
    }

    /// Wait up to `limit` until the page's text contains `needle`.
    pub async fn wait_for_text(&self, needle: &str, limit: Duration) -> String {
        until(limit, &format!("{needle:?} on the page"), || async {
            let t = self.body_text().await;
            if t.contains(needle) {
                Ok(t)
            } else {
                Err(format!("{}: {t}", self.url().await))
            }
        })
        .await
    }

    /// Run `script` in the page (`arguments[0]` is a callback to call with
    /// the result) and return that result.
    pub async fn run_async(&self, script: &str) -> Value {
        self.call(
            "POST",
            &self.s("/execute/async"),
            json!({"script": script, "args": []}),
        )
        .await
    }

    /// Run `script` in the page and return what it returns.
    pub async fn run(&self, script: &str) -> Value {
        self.call(
            "POST",
            &self.s("/execute/sync"),
            json!({"script": script, "args": []}),
        )
        .await
    }

    /// Show pages as a screen `width` × `height` CSS pixels would — a
    /// phone's when `mobile` (its viewport and touch rules) — until
    /// changed again. (Chromium's DevTools emulation through chromedriver:
    /// a window cannot be made narrower than ~500 px, a phone is 390.)
    pub async fn set_viewport(&self, width: u32, height: u32, mobile: bool) {
        self.call(
            "POST",
            &self.s("/goog/cdp/execute"),
            json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile,
            }}),
        )
        .await;
    }

    /// How wide the page is and how wide the window (CSS pixels): the page
    /// scrolls sideways when the first is larger. (A phone's browser may
    /// widen its window to show a page that is too wide — zoomed out —
    /// so compare both with the screen's width too.)
    pub async fn page_and_window_width(&self) -> (u64, u64) {
        let v = self
            .run("return [document.documentElement.scrollWidth, window.innerWidth]")
            .await;
        (
            v[0].as_u64().unwrap_or(u64::MAX),
            v[1].as_u64().unwrap_or(0),
        )
    }

    /// Whether the element matching `css` is wholly inside the window as
    /// the page opens (on its first screen, no scrolling).
    pub async fn on_first_screen(&self, css: &str) -> bool {
        let v = self
            .run(&format!(
                "var e=document.querySelector({css:?});if(!e)return false;\
                 var r=e.getBoundingClientRect();\
                 return r.height>0&&r.top>=0&&r.bottom<=window.innerHeight&&r.right<=window.innerWidth"
            ))
            .await;
        v.as_bool() == Some(true)
    }

    /// The value of the browser's cookie `name` for the page's site (the
    /// driver sees `HttpOnly` cookies too), if it has one.
    pub async fn cookie(&self, name: &str) -> Option<String> {
        let v = self
            .try_call("GET", &self.s(&format!("/cookie/{name}")), Value::Null)
            .await
            .ok()?;
        v["value"].as_str().map(String::from)
    }

    /// Save a PNG of the window as `target/browser-screenshots/{name}.png`.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let v = self.call("GET", &self.s("/screenshot"), Value::Null).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .expect("a base64 screenshot");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        let path = screenshot_dir().join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }

    /// End the session and the driver.
    pub async fn quit(mut self) {
        let path = self.s("");
        self.call("DELETE", &path, Value::Null).await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // A failed test still ends chromedriver (and with it the browser).
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
