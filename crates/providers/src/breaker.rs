//! A circuit breaker shared by every call of a process, for a vendor whose
//! failures cost the caller time (the primary voice, the LLM).
//!
//! [`SharedBreaker`] wraps the sans-IO [`CircuitBreaker`] (SPEC §6.2,
//! D-20) with its own monotonic clock and a lock, so calls learn from each
//! other's failures: once the vendor has failed `failure_threshold`
//! requests in a row, every call skips it until the cooldown ends. Then
//! one request probes it ([`SharedBreaker::admit`] answers `Some(true)`)
//! while every other request keeps skipping it; a failed probe starts the
//! cooldown again. A probe abandoned before its outcome is known (the
//! caller barged in) lets the next request probe instead
//! ([`SharedBreaker::abandon_probe`]).

use agent::breaker::{BreakerState, CircuitBreaker};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::time::Instant;

/// A vendor's circuit breaker with its own clock; share one `Arc`.
#[derive(Debug)]
pub struct SharedBreaker {
    breaker: Mutex<CircuitBreaker>,
    epoch: Instant,
    /// A half-open probe is in flight: every other request skips the
    /// vendor meanwhile (a dead vendor costs one request its wait, not
    /// every request of every call that starts in that window).
    probing: AtomicBool,
}

impl SharedBreaker {
    /// Opens after `failure_threshold` consecutive failures for
    /// `cooldown_s` (SPEC §6.2: 3 and 60 s).
    pub fn new(failure_threshold: u32, cooldown_s: f64) -> Arc<Self> {
        Arc::new(SharedBreaker {
            breaker: Mutex::new(CircuitBreaker::new(failure_threshold, cooldown_s)),
            epoch: Instant::now(),
            probing: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, CircuitBreaker> {
        self.breaker.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    /// Whether a request starting now would ask the vendor: closed, or
    /// half-open with no probe in flight. Only looks.
    pub fn should_try(&self) -> bool {
        let now = self.now();
        match self.lock().state(now) {
            BreakerState::Closed => true,
            BreakerState::HalfOpen => !self.probing.load(Ordering::Acquire),
            BreakerState::Open => false,
        }
    }

    /// `Some(is_probe)` when the vendor may be asked now; a probe must end
    /// in [`SharedBreaker::record_success`], [`SharedBreaker::record_failure`]
    /// or [`SharedBreaker::abandon_probe`].
    pub fn admit(&self) -> Option<bool> {
        let now = self.now();
        let state = self.lock().state(now);
        match state {
            BreakerState::Closed => Some(false),
            BreakerState::HalfOpen if !self.probing.swap(true, Ordering::AcqRel) => Some(true),
            _ => None,
        }
    }

    /// The vendor failed a request (or was too slow to be used).
    pub fn record_failure(&self) {
        let now = self.now();
        self.lock().record_failure(now);
        self.probing.store(false, Ordering::Release);
    }

    /// The vendor served a request.
    pub fn record_success(&self) {
        self.lock().record_success();
        self.probing.store(false, Ordering::Release);
    }

    /// The probe was dropped before its outcome was known: the next
    /// request probes instead.
    pub fn abandon_probe(&self) {
        self.probing.store(false, Ordering::Release);
    }

    /// Consecutive failures of the vendor (for health output and tests).
    pub fn consecutive_failures(&self) -> u32 {
        self.lock().consecutive_failures()
    }
}
