//! Reachability checks for `calllock doctor`: is something answering HTTP
//! at this URL, and what did it say?

use std::time::Duration;

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// An HTTP answer with this status.
    Answered(u16),
    /// No HTTP answer: the reason in plain words.
    Unreachable(String),
}

/// `GET url` with `headers`, at most `timeout`. Any HTTP status counts as
/// reachable (the caller interprets 401/404/405).
pub async fn http_get(url: &str, headers: &[(&str, &str)], timeout: Duration) -> Probe {
    let client = match reqwest::Client::builder().timeout(timeout).build() {
        Ok(c) => c,
        Err(e) => return Probe::Unreachable(format!("cannot build an HTTP client: {e}")),
    };
    let mut req = client.get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    match req.send().await {
        Ok(resp) => Probe::Answered(resp.status().as_u16()),
        Err(e) if e.is_timeout() => {
            Probe::Unreachable(format!("no answer within {:.1} s", timeout.as_secs_f64()))
        }
        Err(e) if e.is_connect() => {
            Probe::Unreachable(format!("cannot connect ({})", root_cause(&e)))
        }
        Err(e) if e.is_builder() => Probe::Unreachable(format!("not a usable URL ({e})")),
        Err(e) => Probe::Unreachable(root_cause(&e)),
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &dyn std::error::Error = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_closed_port_is_unreachable_and_a_listener_answers() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let p = http_get(
            &format!("http://127.0.0.1:{port}/"),
            &[],
            Duration::from_secs(2),
        )
        .await;
        assert!(
            matches!(p, Probe::Unreachable(ref m) if m.contains("cannot connect")),
            "{p:?}"
        );

        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                .await;
        });
        let p = http_get(
            &format!("http://{addr}/jobs"),
            &[("X-Test", "1")],
            Duration::from_secs(2),
        )
        .await;
        assert_eq!(p, Probe::Answered(405));
        let p = http_get("not a url", &[], Duration::from_secs(1)).await;
        assert!(matches!(p, Probe::Unreachable(_)), "{p:?}");
    }
}
