//! The operator's sign-in to the dashboard and API: the password (kept only
//! as an argon2id hash), sessions, their CSRF tokens, and the limit on
//! failed sign-ins.
//!
//! - The password is set with `calllock operator password` (the hash goes
//!   into the database) or given as a hash in `serve.operator_password_hash`
//!   (`CALLLOCK_OPERATOR_PASSWORD_HASH`), which wins.
//! - A sign-in starts a session: a random 256-bit token in an `HttpOnly`,
//!   `SameSite=Strict` cookie (`Secure` when served over HTTPS), valid for
//!   [`SESSION_TTL`], kept in this process's memory (a restart signs
//!   everyone out).
//! - Every state change made with a session cookie must carry the
//!   session's CSRF token (`X-CSRF-Token`); an API token in
//!   `Authorization` is not ambient, so it needs none.
//! - Each client address may fail [`FAILURES_PER_MINUTE`] sign-ins a
//!   minute; beyond that it is refused (429) until the minute has passed.

use anyhow::{anyhow, Result};
use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Failed sign-ins allowed per client address per minute.
pub const FAILURES_PER_MINUTE: usize = 5;
/// The session cookie's name.
pub const COOKIE: &str = "calllock_session";

/// The argon2id hash (PHC string) of `password`, with a fresh salt.
pub fn hash_password(password: &str) -> Result<String> {
    if password.chars().count() < 8 {
        return Err(anyhow!("the password must have at least 8 characters"));
    }
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow!("cannot hash the password: {e}"))
}

/// Whether `password` matches `hash`; a malformed hash matches nothing.
pub fn verify_password(password: &str, hash: &str) -> bool {
    match PasswordHash::new(hash) {
        Ok(h) => Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok(),
        Err(e) => {
            tracing::error!(error = %e, "the operator password hash is not a PHC string");
            false
        }
    }
}

/// 32 random bytes from the OS, as hex.
fn random_token() -> String {
    let mut b = [0u8; 32];
    OsRng.fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One signed-in operator.
#[derive(Debug, Clone)]
pub struct Session {
    /// What a state change must carry in `X-CSRF-Token`.
    pub csrf: String,
    pub expires: Instant,
}

/// The sessions, sign-in failures by address, of this process.
#[derive(Debug, Default)]
pub struct Operator {
    sessions: Mutex<HashMap<String, Session>>,
    failures: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

impl Operator {
    /// Start a session; its cookie token and the session.
    pub fn sign_in(&self) -> (String, Session) {
        let token = random_token();
        let session = Session {
            csrf: random_token(),
            expires: Instant::now() + SESSION_TTL,
        };
        let mut map = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        map.retain(|_, s| s.expires > now);
        map.insert(token.clone(), session.clone());
        (token, session)
    }

    /// The live session of cookie token `token`.
    pub fn session(&self, token: &str) -> Option<Session> {
        let mut map = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(token) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                map.remove(token);
                None
            }
            None => None,
        }
    }

    /// End the session of `token`.
    pub fn sign_out(&self, token: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(token);
    }

    /// Whether `ip` may try to sign in now.
    pub fn may_try(&self, ip: IpAddr) -> bool {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let recent = f.entry(ip).or_default();
        while recent
            .front()
            .is_some_and(|t| now.duration_since(*t) > Duration::from_secs(60))
        {
            recent.pop_front();
        }
        recent.len() < FAILURES_PER_MINUTE
    }

    /// `ip` failed to sign in.
    pub fn failed(&self, ip: IpAddr) {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: forget the oldest addresses beyond 10,000.
        if f.len() > 10_000 {
            f.clear();
        }
        f.entry(ip).or_default().push_back(Instant::now());
    }
}

/// The session cookie's token in a `Cookie` header value.
pub fn cookie_token(cookie_header: &str) -> Option<&str> {
    cookie_header
        .split(';')
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_kept_as_an_argon2id_hash() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"), "{h}");
        assert!(!h.contains("correct horse"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("correct horsE", &h));
        assert!(!verify_password("correct horse", "not a hash"));
        // Salted: the same password hashes differently each time.
        assert_ne!(h, hash_password("correct horse").unwrap());
        assert!(hash_password("short").is_err());
    }

    #[test]
    fn sessions_are_random_and_end() {
        let o = Operator::default();
        let (a, sa) = o.sign_in();
        let (b, _) = o.sign_in();
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert_ne!(sa.csrf, a);
        assert_eq!(o.session(&a).unwrap().csrf, sa.csrf);
        o.sign_out(&a);
        assert!(o.session(&a).is_none());
        assert!(o.session(&b).is_some());
        assert!(o.session("").is_none());
    }

    #[test]
    fn five_failures_a_minute_then_refused() {
        let o = Operator::default();
        let ip: IpAddr = "203.0.113.7".parse().unwrap();
        for _ in 0..FAILURES_PER_MINUTE {
            assert!(o.may_try(ip));
            o.failed(ip);
        }
        assert!(!o.may_try(ip));
        // Another address is not held back.
        assert!(o.may_try("203.0.113.8".parse().unwrap()));
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        assert_eq!(cookie_token("a=1; calllock_session=abc; b=2"), Some("abc"));
        assert_eq!(cookie_token("calllock_session="), None);
        assert_eq!(cookie_token("other=x"), None);
        assert_eq!(cookie_token("xcalllock_session=abc"), None);
    }
}
