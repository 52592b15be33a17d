//! The operator's sign-in to the dashboard and API: the password (kept only
//! as an argon2id hash), sessions, their CSRF tokens, and the limits that
//! keep sign-in from being abused.
//!
//! - The password is set with `calllock operator password` (the hash goes
//!   into the database) or given as a hash in `serve.operator_password_hash`
//!   (`CALLLOCK_OPERATOR_PASSWORD_HASH`), which wins.
//! - A sign-in starts a session: a random 256-bit token in an `HttpOnly`,
//!   `SameSite=Strict` cookie (`Secure` when served over HTTPS), valid for
//!   [`SESSION_TTL`], kept in this process's memory (a restart signs
//!   everyone out).
//! - A session is bound to the password hash it signed in with: once
//!   another hash is in force (`calllock operator password` run again, by
//!   any process on the same database), every older session is over. A
//!   request with a session cookie waits for the hash in force to be read
//!   again when what this process knows is older than
//!   [`PASSWORD_CONFIRM_EVERY`] (`web::signin::fresh_password`), so a
//!   change ends old sessions from the next request on.
//! - Every state change made with a session cookie must carry the
//!   session's CSRF token (`X-CSRF-Token`); an API token in
//!   `Authorization` is not ambient, so it needs none.
//!
//! # Limits on signing in
//!
//! Checking a password is deliberately expensive (argon2id, ~19 MiB of
//! memory and tens of milliseconds of a core each), so a flood of sign-ins
//! could otherwise take the server down, and every live call with it.
//! [`SignInLimits`] (from `[serve]`: `sign_in_window_s`,
//! `sign_in_failures_per_address`, `sign_in_attempts_global`) bounds it
//! three ways:
//!
//! 1. **Per client address**: each client may have [`FAILURES_PER_MINUTE`]
//!    attempts counted per window (a minute). The attempt is taken
//!    atomically *before* the password is checked ([`Operator::reserve`]),
//!    so parallel guesses cannot all slip past the count; a successful
//!    sign-in (and an attempt that was never checked) gives its slot back,
//!    so the limit only ever holds back failures. An IPv6 client is
//!    counted by its /64, the block one subscriber usually holds. Behind a
//!    reverse proxy (`serve.trusted_proxy`) the client is the last entry of
//!    `X-Forwarded-For` ([`forwarded_client`]).
//! 2. **Globally** (the back-off): all clients together may have
//!    [`SignInLimits::global`] attempts counted per window. A flood from
//!    many addresses therefore slows guessing for everyone — but refused
//!    attempts are not counted, so once the flood ends every counted
//!    attempt is at most one window old and the owner can sign in again
//!    within one window (a minute) of it ending. A flood that never ends
//!    (a few addresses guessing slowly is enough to keep the global count
//!    full) must not lock the owner out for good, so a browser that has
//!    signed in before carries a **known-device** cookie ([`DEVICE_COOKIE`],
//!    a random nonce MACed with the password hash in force: it outlives a
//!    restart, and a new password voids it) that exempts its attempts from
//!    the global count; the per-address limit still holds for it.
//! 3. **A small pool** checks the passwords: [`SignInLimits::concurrent`]
//!    threads of its own, each with one argon2 buffer it reuses, and at
//!    most [`SignInLimits::queue`] checks waiting; beyond that a sign-in
//!    is answered "busy" (503) at once, never queued without bound. The
//!    memory of signing in is that of two checks, whatever arrives, and
//!    its threads inherit the server's lowered priority, behind the
//!    calls' audio.

use anyhow::{anyhow, Result};
use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
use argon2::Argon2;
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// How long a session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Failed sign-ins allowed per client address per window (a minute), by
/// default.
pub const FAILURES_PER_MINUTE: usize = 5;
/// The session cookie's name.
pub const COOKIE: &str = "calllock_session";
/// The known-device cookie's name (see the [module docs](self)); it is
/// only sent to `/login`.
pub const DEVICE_COOKIE: &str = "calllock_device";
/// How long a known-device cookie lasts.
pub const DEVICE_TTL: Duration = Duration::from_secs(365 * 86_400);

/// The MAC of a known-device `nonce` under password hash `hash`.
fn device_mac(nonce: &str, hash: &str) -> String {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(hash.as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(b"calllock known device\0");
    mac.update(nonce.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fresh known-device token for a browser that just signed in with the
/// password hash `hash`: `<nonce>.<mac>`.
pub fn device_token(hash: &str) -> String {
    let nonce = random_token();
    let mac = device_mac(&nonce, hash);
    format!("{nonce}.{mac}")
}

/// Whether `token` is a known-device token made under `hash` (the
/// password in force): a new password voids every older one.
pub fn is_known_device(token: &str, hash: &str) -> bool {
    let Some((nonce, mac)) = token.split_once('.') else {
        return false;
    };
    if nonce.len() != 64 || mac.len() != 64 {
        return false;
    }
    subtle::ConstantTimeEq::ct_eq(device_mac(nonce, hash).as_bytes(), mac.as_bytes()).into()
}

/// How stale the password hash in force may be when a session is checked
/// against it (a request with a session waits for a fresh read when what
/// this process knows is older).
pub const PASSWORD_CONFIRM_EVERY: Duration = Duration::from_secs(1);

/// How signing in is limited (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInLimits {
    /// Attempts counted per client address per [`window`](Self::window).
    pub per_address: usize,
    /// Attempts counted across all clients per [`window`](Self::window):
    /// the global back-off.
    pub global: usize,
    /// How long a counted attempt counts. After a flood ends, the owner
    /// can sign in again within this long.
    pub window: Duration,
    /// Password checks (argon2id runs) at once.
    pub concurrent: usize,
    /// Password checks that may wait for a free run; beyond, a sign-in is
    /// answered "busy" at once.
    pub queue: usize,
}

impl Default for SignInLimits {
    /// Five failures a minute per address, thirty a minute in all, two
    /// argon2 runs at once (~40 MiB) with eight waiting.
    fn default() -> Self {
        SignInLimits {
            per_address: FAILURES_PER_MINUTE,
            global: 30,
            window: Duration::from_secs(60),
            concurrent: 2,
            queue: 8,
        }
    }
}

impl SignInLimits {
    /// The limits of the `[serve]` section (the pool's size is fixed).
    pub fn of(serve: &crate::config::ServeSection) -> SignInLimits {
        let d = SignInLimits::default();
        let window = Duration::try_from_secs_f64(serve.sign_in_window_s)
            .ok()
            .filter(|w| !w.is_zero())
            .unwrap_or(d.window);
        SignInLimits {
            per_address: (serve.sign_in_failures_per_address as usize).max(1),
            global: (serve.sign_in_attempts_global as usize).max(1),
            window,
            ..d
        }
    }
}

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
/// Expensive (argon2id, ~19 MiB): the server checks through
/// [`Operator::check_password`].
pub fn verify_password(password: &str, hash: &str) -> bool {
    verify_in(password, hash, &mut Vec::new())
}

/// The most memory a hash may ask argon2 for (256 MiB, in 1 KiB blocks);
/// the default asks for 19 MiB.
const MAX_BLOCKS: usize = 256 * 1024;

/// [`verify_password`] in `memory`, grown to what the hash asks for and
/// kept for the next check: a pool thread reuses one buffer, so what it
/// holds is fixed, whatever the allocator would keep of a fresh one each
/// time.
fn verify_in(password: &str, hash: &str, memory: &mut Vec<argon2::Block>) -> bool {
    let checked = (|| -> Result<bool, String> {
        let phc = PasswordHash::new(hash).map_err(|e| format!("not a PHC string: {e}"))?;
        let algorithm = argon2::Algorithm::try_from(phc.algorithm).map_err(|e| e.to_string())?;
        let version = phc
            .version
            .map(argon2::Version::try_from)
            .transpose()
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let params = argon2::Params::try_from(&phc).map_err(|e| e.to_string())?;
        let (Some(salt), Some(expected)) = (phc.salt, phc.hash) else {
            return Err("no salt or no hash".into());
        };
        let mut salt_buf = [0u8; 64];
        let salt = salt.decode_b64(&mut salt_buf).map_err(|e| e.to_string())?;
        let blocks = params.block_count();
        if blocks > MAX_BLOCKS {
            return Err(format!(
                "asks for {blocks} KiB of memory (at most {MAX_BLOCKS})"
            ));
        }
        if memory.len() < blocks {
            memory.resize(blocks, argon2::Block::new());
        }
        let mut out = vec![0u8; expected.len()];
        Argon2::new(algorithm, version, params)
            .hash_password_into_with_memory(password.as_bytes(), salt, &mut out, &mut memory[..])
            .map_err(|e| e.to_string())?;
        Ok(subtle::ConstantTimeEq::ct_eq(out.as_slice(), expected.as_bytes()).into())
    })();
    checked.unwrap_or_else(|why| {
        tracing::error!(why, "the operator password hash cannot be checked");
        false
    })
}

/// 32 random bytes from the OS, as hex.
fn random_token() -> String {
    let mut b = [0u8; 32];
    OsRng.fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The client a sign-in is counted against: the address itself, or for
/// IPv6 its /64 (one subscriber's block: counting single addresses would
/// give one attacker 2^64 of them). An IPv4 address mapped into IPv6 is
/// the IPv4 address.
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

/// The real client behind a trusted reverse proxy: the **last** entry of
/// `X-Forwarded-For` (`values`: every such header, in order), else `peer`
/// (the proxy itself).
///
/// Why the last: each proxy *appends* the address that connected to it,
/// so the last entry was written by our own proxy and names whoever
/// connected to it. Everything to its left arrived from that client and
/// may be invented (an attacker sends `X-Forwarded-For: <the owner's
/// address>` to lock the owner out, or a new address per guess to dodge
/// the limit). Only honour this with `serve.trusted_proxy`, when the
/// server can be reached through the proxy alone. An entry may carry a
/// port (`203.0.113.7:5123`, `[2001:db8::1]:443`); an unreadable last
/// entry counts as the proxy.
pub fn forwarded_client<'a>(peer: IpAddr, values: impl IntoIterator<Item = &'a str>) -> IpAddr {
    let last = values
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .last();
    let Some(last) = last else {
        return peer;
    };
    last.parse::<IpAddr>()
        .ok()
        .or_else(|| last.parse::<std::net::SocketAddr>().ok().map(|s| s.ip()))
        .unwrap_or(peer)
}

/// One signed-in operator.
#[derive(Debug, Clone)]
pub struct Session {
    /// What a state change must carry in `X-CSRF-Token`.
    pub csrf: String,
    pub expires: Instant,
    /// A keyed fingerprint of the password hash it signed in with.
    password: u64,
}

/// Why a sign-in is refused before its password is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// This client used up its attempts; it may try again after this long.
    Client(Duration),
    /// All clients together did (the global back-off); anyone may try
    /// again after this long.
    Everyone(Duration),
}

impl Refused {
    /// How long until an attempt would be counted again (at least 1 s).
    pub fn retry_after(&self) -> Duration {
        let (Refused::Client(d) | Refused::Everyone(d)) = *self;
        d.max(Duration::from_secs(1))
    }
}

/// A counted sign-in attempt: kept (dropped) when the password was wrong,
/// handed to [`Operator::give_back`] when it succeeded or was never
/// checked.
#[derive(Debug)]
#[must_use = "drop it to keep the attempt counted, or give it back"]
pub struct Attempt {
    client: IpAddr,
    at: Instant,
    /// Counted in the global back-off too (not for a known device).
    global: bool,
}

/// The password checks are full: try again shortly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// The attempts counted in the window: per client and all together.
/// Every attempt is in both (but a known device's, which only its client
/// counts), so the per-client map stays about as small as the global
/// count (empty and expired entries are pruned).
#[derive(Debug, Default)]
struct Attempts {
    by_client: HashMap<IpAddr, VecDeque<Instant>>,
    all: VecDeque<Instant>,
    /// Refusals not yet logged, and when they last were.
    refused_unlogged: u64,
    logged_at: Option<Instant>,
}

/// Drop the attempts older than `window` from the front of `q`.
fn expire(q: &mut VecDeque<Instant>, now: Instant, window: Duration) {
    while q
        .front()
        .is_some_and(|t| now.saturating_duration_since(*t) >= window)
    {
        q.pop_front();
    }
}

/// Remove one `at` from `q` (attempts are in time order; equal instants are
/// interchangeable).
fn remove_one(q: &mut VecDeque<Instant>, at: Instant) {
    if let Some(i) = q.iter().rposition(|t| *t == at) {
        q.remove(i);
    }
}

/// A password check, run on one of the pool's threads in its memory.
type Job = Box<dyn FnOnce(&mut Vec<argon2::Block>) + Send>;

/// The pool that checks passwords: [`SignInLimits::concurrent`] threads of
/// its own, fed in order, each with its own argon2 memory (~19 MiB, kept),
/// and the places (running + waiting) a check must hold. So the memory of
/// signing in is fixed: that of two checks, whatever arrives.
#[derive(Debug)]
struct Checks {
    places: Arc<Semaphore>,
    /// `None`: no thread could be started (every check is busy).
    jobs: Option<std::sync::mpsc::Sender<Job>>,
}

impl Checks {
    fn start(limits: &SignInLimits) -> Checks {
        let threads = limits.concurrent.max(1);
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut started = 0;
        for i in 0..threads {
            let rx = rx.clone();
            let worker = std::thread::Builder::new()
                .name(format!("signin-{i}"))
                .spawn(move || {
                    let mut memory = Vec::new();
                    loop {
                        // The lock is held only while waiting for a job.
                        let job = lock(&rx).recv();
                        let Ok(job) = job else { return };
                        // A panic loses one answer (read as "wrong"),
                        // never the thread.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            job(&mut memory)
                        }));
                    }
                });
            match worker {
                Ok(_) => started += 1,
                Err(e) => tracing::error!(error = %e, "cannot start a sign-in thread"),
            }
        }
        Checks {
            places: Arc::new(Semaphore::new(started + limits.queue)),
            jobs: (started > 0).then_some(tx),
        }
    }
}

/// The password hash in force, as far as this process knows.
#[derive(Debug, Default)]
struct PasswordInForce {
    state: Mutex<InForce>,
    /// The key of the password fingerprints (random per process).
    keys: RandomState,
}

#[derive(Debug, Default)]
struct InForce {
    /// Its fingerprint; `None`: no password is set (no session is valid).
    password: Option<u64>,
    /// When it was last read; `None`: never.
    confirmed: Option<Instant>,
}

impl PasswordInForce {
    fn fingerprint(&self, hash: &str) -> u64 {
        self.keys.hash_one(hash)
    }

    /// The password hash in force is `hash` (`None`: none is set), as read
    /// at `read_at` (when the read began): sessions of any other hash are
    /// over. A read older than the last one told is ignored (it may have
    /// begun before a change that a newer read saw).
    fn confirmed(&self, hash: Option<&str>, read_at: Instant) {
        let password = hash.map(|h| self.fingerprint(h));
        let mut f = lock(&self.state);
        if f.confirmed.is_some_and(|t| t > read_at) {
            return;
        }
        f.password = password;
        f.confirmed = Some(read_at);
    }
}

/// The sessions, sign-in attempts and password checks of this process.
#[derive(Debug, Default)]
pub struct Operator {
    sessions: Mutex<HashMap<String, Session>>,
    attempts: Mutex<Attempts>,
    /// Made with the first check's limits.
    checks: OnceLock<Checks>,
    in_force: PasswordInForce,
}

/// Lock `m`, also after a panic elsewhere (the data stays consistent: every
/// critical section here is a few plain updates).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Operator {
    /// Start a session signed in with password hash `hash`, the one just
    /// verified, read as the one in force at `read_at`; its cookie token
    /// and the session.
    pub fn sign_in(&self, hash: &str, read_at: Instant) -> (String, Session) {
        let now = Instant::now();
        let password = self.in_force.fingerprint(hash);
        self.in_force.confirmed(Some(hash), read_at);
        let in_force = lock(&self.in_force.state).password;
        let token = random_token();
        let session = Session {
            csrf: random_token(),
            expires: now + SESSION_TTL,
            password,
        };
        let mut map = lock(&self.sessions);
        map.retain(|_, s| s.expires > now && Some(s.password) == in_force);
        map.insert(token.clone(), session.clone());
        (token, session)
    }

    /// The live session of cookie token `token`: not expired, and signed
    /// in with the password hash in force.
    pub fn session(&self, token: &str) -> Option<Session> {
        let in_force = lock(&self.in_force.state).password;
        let mut map = lock(&self.sessions);
        match map.get(token) {
            Some(s) if s.expires > Instant::now() && Some(s.password) == in_force => {
                Some(s.clone())
            }
            Some(_) => {
                map.remove(token);
                None
            }
            None => None,
        }
    }

    /// End the session of `token`.
    pub fn sign_out(&self, token: &str) {
        lock(&self.sessions).remove(token);
    }

    /// The password hash in force is `hash` (`None`: none is set), as read
    /// at `read_at` (when the read began): sessions of any other hash are
    /// over. A read older than the last one told is ignored (it may have
    /// begun before a change that a newer read saw).
    pub fn confirmed(&self, hash: Option<&str>, read_at: Instant) {
        self.in_force.confirmed(hash, read_at);
    }

    /// Whether what this process knows of the hash in force is older than
    /// `every` (or was never read): a session must not be judged on it
    /// before the hash is read again (a failed read leaves it stale, so
    /// the next request tries again).
    pub fn password_stale(&self, every: Duration, now: Instant) -> bool {
        lock(&self.in_force.state)
            .confirmed
            .is_none_or(|t| now.saturating_duration_since(t) >= every)
    }

    /// Count a sign-in attempt from `ip` at `now` — before its password is
    /// checked, atomically with the check of the limits, so parallel
    /// attempts cannot all pass — or say why not. Refused attempts are not
    /// counted. A `known_device` (it carried a valid [`DEVICE_COOKIE`]) is
    /// held to the per-address limit only: the global back-off neither
    /// refuses nor counts it.
    pub fn reserve(
        &self,
        ip: IpAddr,
        limits: &SignInLimits,
        now: Instant,
        known_device: bool,
    ) -> Result<Attempt, Refused> {
        let client = client_key(ip);
        let window = limits.window;
        let mut a = lock(&self.attempts);
        let a = &mut *a;
        expire(&mut a.all, now, window);
        // Bounded: every counted attempt is also in `all`, so once the
        // expired ones are gone at most `global` clients remain.
        if a.by_client.len() > a.all.len() + 64 {
            a.by_client.retain(|_, q| {
                expire(q, now, window);
                !q.is_empty()
            });
        }
        let mine = a.by_client.entry(client).or_default();
        expire(mine, now, window);
        let refused = if mine.len() >= limits.per_address {
            let oldest = mine.front().copied().unwrap_or(now);
            Some(Refused::Client(window.saturating_sub(now - oldest)))
        } else if !known_device && a.all.len() >= limits.global {
            let oldest = a.all.front().copied().unwrap_or(now);
            Some(Refused::Everyone(window.saturating_sub(now - oldest)))
        } else {
            None
        };
        if let Some(r) = refused {
            if mine.is_empty() {
                a.by_client.remove(&client);
            }
            a.refused_unlogged += 1;
            if a.logged_at
                .is_none_or(|t| now.saturating_duration_since(t) >= Duration::from_secs(10))
            {
                tracing::warn!(
                    refused = a.refused_unlogged,
                    %client,
                    why = match r {
                        Refused::Client(_) => "too many from this client",
                        Refused::Everyone(_) => "too many from everyone (back-off)",
                    },
                    "sign-ins refused"
                );
                a.refused_unlogged = 0;
                a.logged_at = Some(now);
            }
            return Err(r);
        }
        mine.push_back(now);
        if !known_device {
            a.all.push_back(now);
        }
        Ok(Attempt {
            client,
            at: now,
            global: !known_device,
        })
    }

    /// Uncount `attempt` (it succeeded, or its password was never checked).
    pub fn give_back(&self, attempt: Attempt) {
        let mut a = lock(&self.attempts);
        if attempt.global {
            remove_one(&mut a.all, attempt.at);
        }
        if let Some(q) = a.by_client.get_mut(&attempt.client) {
            remove_one(q, attempt.at);
            if q.is_empty() {
                a.by_client.remove(&attempt.client);
            }
        }
    }

    /// The password checks' pool, made with `limits` the first time.
    fn checks(&self, limits: &SignInLimits) -> &Checks {
        self.checks.get_or_init(|| Checks::start(limits))
    }

    /// Whether `password` matches `hash`, checked in the bounded pool:
    /// queued for one of its [`SignInLimits::concurrent`] threads if at
    /// most [`SignInLimits::queue`] others wait, else [`Busy`] at once. The
    /// pool's size is fixed by the first call's `limits`. A check whose
    /// client went away still runs and holds its place: the pool never
    /// holds more than it admitted.
    pub async fn check_password(
        &self,
        password: String,
        hash: String,
        limits: &SignInLimits,
    ) -> Result<bool, Busy> {
        let checks = self.checks(limits);
        let jobs = checks.jobs.as_ref().ok_or(Busy)?;
        let place = checks
            .places
            .clone()
            .try_acquire_owned()
            .map_err(|_| Busy)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        jobs.send(Box::new(move |memory| {
            let ok = verify_in(&password, &hash, memory);
            drop(place);
            let _ = tx.send(ok);
        }))
        .map_err(|_| Busy)?;
        Ok(rx.await.unwrap_or(false))
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

    const HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo";

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
    fn a_check_reuses_its_memory_and_refuses_odd_hashes() {
        let h = hash_password("correct horse").unwrap();
        let mut memory = Vec::new();
        assert!(verify_in("correct horse", &h, &mut memory));
        let held = memory.len();
        assert_eq!(held, argon2::Params::DEFAULT_M_COST as usize);
        assert!(!verify_in("correct horsE", &h, &mut memory));
        assert_eq!(memory.len(), held, "the same memory, not more");
        // Hashes that cannot be checked match nothing, and cost nothing.
        let greedy = h.replace("m=19456", "m=4194304");
        for odd in ["", "not a hash", "$argon2id$v=19$m=19456,t=2,p=1$", &greedy] {
            assert!(!verify_in("correct horse", odd, &mut memory), "{odd}");
        }
        assert_eq!(memory.len(), held);
    }

    #[test]
    fn sessions_are_random_and_end() {
        let o = Operator::default();
        let (a, sa) = o.sign_in(HASH, Instant::now());
        let (b, _) = o.sign_in(HASH, Instant::now());
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
    fn another_password_in_force_ends_older_sessions() {
        let o = Operator::default();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let (old, _) = o.sign_in(HASH, at(0));
        // Read again while nothing changed: the session lives on.
        o.confirmed(Some(HASH), at(1));
        assert!(o.session(&old).is_some());
        // Another hash is in force: the session is over, for good.
        o.confirmed(Some("$argon2id$another"), at(2));
        assert!(o.session(&old).is_none());
        o.confirmed(Some(HASH), at(3));
        assert!(o.session(&old).is_none(), "removed, not suspended");
        // A session of the new hash works; none works without a password.
        let (new, _) = o.sign_in("$argon2id$another", at(4));
        assert!(o.session(&new).is_some());
        // A read begun before that sign-in is stale: ignored.
        o.confirmed(Some(HASH), at(3));
        assert!(o.session(&new).is_some());
        o.confirmed(None, at(5));
        assert!(o.session(&new).is_none());
    }

    #[test]
    fn the_hash_in_force_is_read_again_at_most_every_so_often() {
        let o = Operator::default();
        let t0 = Instant::now();
        let every = Duration::from_secs(1);
        assert!(o.password_stale(every, t0), "never read");
        o.confirmed(Some(HASH), t0);
        assert!(!o.password_stale(every, t0 + every / 2));
        assert!(o.password_stale(every, t0 + every));
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn five_attempts_a_window_then_refused_until_the_oldest_expires() {
        let o = Operator::default();
        let l = SignInLimits::default();
        let t0 = Instant::now();
        let a = ip("203.0.113.7");
        for i in 0..FAILURES_PER_MINUTE {
            let _failed = o
                .reserve(a, &l, t0 + Duration::from_secs(i as u64), false)
                .unwrap();
        }
        let later = t0 + Duration::from_secs(10);
        assert_eq!(
            o.reserve(a, &l, later, false).unwrap_err(),
            Refused::Client(l.window - Duration::from_secs(10))
        );
        // Another address is not held back.
        assert!(o.reserve(ip("203.0.113.8"), &l, later, false).is_ok());
        // Once the first attempt is a window old, one more is counted.
        assert!(o.reserve(a, &l, t0 + l.window, false).is_ok());
        assert!(o.reserve(a, &l, t0 + l.window, false).is_err());
    }

    #[test]
    fn a_success_or_an_unchecked_attempt_gives_its_slot_back() {
        let o = Operator::default();
        let l = SignInLimits::default();
        let now = Instant::now();
        let a = ip("198.51.100.1");
        for _ in 0..100 {
            let attempt = o.reserve(a, &l, now, false).unwrap();
            o.give_back(attempt);
        }
        for _ in 0..l.per_address {
            let _ = o.reserve(a, &l, now, false).unwrap();
        }
        assert!(o.reserve(a, &l, now, false).is_err());
    }

    #[test]
    fn a_flood_from_many_addresses_backs_off_everyone_for_one_window() {
        let o = Operator::default();
        let l = SignInLimits::default();
        let t0 = Instant::now();
        let mut refused = 0;
        for i in 0..1000u32 {
            let from = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            if o.reserve(from, &l, t0 + Duration::from_millis(i as u64), false)
                .is_err()
            {
                refused += 1;
            }
        }
        assert_eq!(refused, 1000 - l.global);
        let end = t0 + Duration::from_millis(999);
        // Right after the flood the owner, from elsewhere, is backed off …
        let owner = ip("192.0.2.1");
        assert!(matches!(
            o.reserve(owner, &l, end, false),
            Err(Refused::Everyone(_))
        ));
        // … and counted again one window after the flood ended, at the
        // latest (refused attempts did not count).
        assert!(o.reserve(owner, &l, end + l.window, false).is_ok());
        // What is remembered stays bounded by what is counted.
        assert!(o.attempts.lock().unwrap().by_client.len() <= l.global + 65);
    }

    #[test]
    fn a_known_device_signs_in_through_a_flood_that_never_ends() {
        let o = Operator::default();
        let l = SignInLimits::default();
        let now = Instant::now();
        // A slow flood keeps the global count full.
        for i in 0..l.global {
            let _ = o
                .reserve(ip(&format!("198.51.100.{i}")), &l, now, false)
                .unwrap();
        }
        let owner = ip("203.0.113.50");
        assert!(matches!(
            o.reserve(owner, &l, now, false),
            Err(Refused::Everyone(_))
        ));
        // The owner's browser, known from an earlier sign-in: let in, and
        // not counted against everyone.
        let attempt = o.reserve(owner, &l, now, true).unwrap();
        o.give_back(attempt);
        assert!(matches!(
            o.reserve(ip("198.51.100.200"), &l, now, false),
            Err(Refused::Everyone(_))
        ));
        // Still held to the per-address limit.
        for _ in 0..l.per_address {
            let _ = o.reserve(owner, &l, now, true).unwrap();
        }
        assert!(matches!(
            o.reserve(owner, &l, now, true),
            Err(Refused::Client(_))
        ));
    }

    #[test]
    fn a_known_device_token_holds_only_under_the_password_it_was_made_with() {
        let t = device_token("$argon2id$hash-one");
        assert!(is_known_device(&t, "$argon2id$hash-one"));
        assert!(
            !is_known_device(&t, "$argon2id$hash-two"),
            "a new password voids it"
        );
        let (nonce, mac) = t.split_once('.').unwrap();
        let forged = format!("{nonce}.{}", "0".repeat(mac.len()));
        assert!(!is_known_device(&forged, "$argon2id$hash-one"));
        for junk in ["", ".", "abc", "x.y", &"a".repeat(200)] {
            assert!(!is_known_device(junk, "$argon2id$hash-one"), "{junk:?}");
        }
        assert_ne!(device_token("h"), device_token("h"), "random nonces");
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_slash_64() {
        let o = Operator::default();
        let l = SignInLimits::default();
        let now = Instant::now();
        for i in 0..l.per_address {
            let _ = o
                .reserve(ip(&format!("2001:db8:1:2::{i:x}")), &l, now, false)
                .unwrap();
        }
        assert!(o
            .reserve(ip("2001:db8:1:2:ffff::1"), &l, now, false)
            .is_err());
        assert!(o.reserve(ip("2001:db8:1:3::1"), &l, now, false).is_ok());
        assert_eq!(client_key(ip("::ffff:192.0.2.9")), ip("192.0.2.9"));
    }

    #[test]
    fn behind_a_proxy_the_client_is_the_last_forwarded_entry() {
        let proxy = ip("10.0.0.2");
        let f = |v: &[&str]| forwarded_client(proxy, v.iter().copied());
        assert_eq!(f(&[]), proxy);
        assert_eq!(f(&["203.0.113.7"]), ip("203.0.113.7"));
        // Whatever the client wrote to the left is ignored.
        assert_eq!(f(&["192.0.2.1, 203.0.113.7"]), ip("203.0.113.7"));
        assert_eq!(f(&["192.0.2.1", "203.0.113.7 "]), ip("203.0.113.7"));
        assert_eq!(f(&["203.0.113.7:5123"]), ip("203.0.113.7"));
        assert_eq!(f(&["[2001:db8::1]:443"]), ip("2001:db8::1"));
        assert_eq!(f(&["2001:db8::1"]), ip("2001:db8::1"));
        assert_eq!(f(&["192.0.2.1, nonsense"]), proxy);
        assert_eq!(f(&[" , "]), proxy);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_pool_runs_a_few_checks_and_turns_the_rest_away_at_once() {
        let o = Arc::new(Operator::default());
        let l = SignInLimits::default();
        let hash = hash_password("the password").unwrap();
        // Every thread is taken (as by slow checks): who gets a place waits.
        let jobs = o.checks(&l).jobs.clone().unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let held = Arc::new(Mutex::new(held));
        for _ in 0..l.concurrent {
            let held = held.clone();
            jobs.send(Box::new(move |_| {
                let _ = lock(&held).recv();
            }))
            .unwrap();
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for _ in 0..40 {
            let (o, hash, tx) = (o.clone(), hash.clone(), tx.clone());
            tokio::spawn(async move {
                let _ = tx.send(o.check_password("wrong password".into(), hash, &l).await);
            });
        }
        // (The blocking jobs hold no places: all of them are for checks.)
        let places = l.concurrent + l.queue;
        for _ in 0..40 - places {
            assert_eq!(rx.recv().await, Some(Err(Busy)), "busy at once");
        }
        // The threads free: every check that had a place is done, wrong.
        drop(release);
        for _ in 0..places {
            assert_eq!(rx.recv().await, Some(Ok(false)));
        }
        // And the pool is free again.
        assert_eq!(
            o.check_password("the password".into(), hash, &l).await,
            Ok(true)
        );
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        assert_eq!(cookie_token("a=1; calllock_session=abc; b=2"), Some("abc"));
        assert_eq!(cookie_token("calllock_session="), None);
        assert_eq!(cookie_token("other=x"), None);
        assert_eq!(cookie_token("xcalllock_session=abc"), None);
    }
}
