//! Sans-IO circuit breaker (SPEC §6.2, DECISIONS D-20).
//!
//! The caller passes the current monotonic time (seconds) explicitly, so the
//! breaker is deterministic and trivially testable. One instance guards the
//! V2 backend client (all five tools share it); another guards the primary
//! TTS provider.
//!
//! * closed: fewer than `failure_threshold` consecutive failures — try;
//! * open: threshold reached and the cooldown has not elapsed — do not try;
//! * half-open: threshold reached and the cooldown has elapsed — one probe
//!   may be tried. A success closes the breaker; a failed probe restarts the
//!   cooldown (D-20; the reference kept the first opening time).

/// What the breaker currently allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Requests flow normally.
    Closed,
    /// Requests are refused until the cooldown elapses.
    Open,
    /// The cooldown has elapsed: a probe request may be attempted.
    HalfOpen,
}

/// A consecutive-failure circuit breaker with a cooldown.
#[derive(Debug, Clone, PartialEq)]
pub struct CircuitBreaker {
    failure_threshold: u32,
    cooldown_s: f64,
    consecutive_failures: u32,
    opened_at: Option<f64>,
}

impl Default for CircuitBreaker {
    /// Threshold 3, cooldown 60 s (SPEC §6.2).
    fn default() -> Self {
        CircuitBreaker::new(3, 60.0)
    }
}

impl CircuitBreaker {
    /// A closed breaker. A threshold of 0 is treated as 1; a negative or
    /// non-finite cooldown as 0.
    pub fn new(failure_threshold: u32, cooldown_s: f64) -> Self {
        CircuitBreaker {
            failure_threshold: failure_threshold.max(1),
            cooldown_s: if cooldown_s.is_finite() && cooldown_s > 0.0 {
                cooldown_s
            } else {
                0.0
            },
            consecutive_failures: 0,
            opened_at: None,
        }
    }

    fn tripped(&self) -> bool {
        self.consecutive_failures >= self.failure_threshold
    }

    fn cooled_down(&self, opened_at: f64, now: f64) -> bool {
        now - opened_at >= self.cooldown_s
    }

    /// The breaker's state at monotonic time `now` (seconds).
    pub fn state(&self, now: f64) -> BreakerState {
        if !self.tripped() {
            return BreakerState::Closed;
        }
        match self.opened_at {
            Some(at) if self.cooled_down(at, now) => BreakerState::HalfOpen,
            _ => BreakerState::Open,
        }
    }

    /// May a request be attempted at `now`? (closed or half-open)
    pub fn should_try(&self, now: f64) -> bool {
        self.state(now) != BreakerState::Open
    }

    /// A request succeeded: close the breaker.
    pub fn record_success(&mut self) {
        self.consecutive_failures = 0;
        self.opened_at = None;
    }

    /// A request failed at `now`. Reaching the threshold opens the breaker;
    /// a failure while half-open (cooldown elapsed) restarts the cooldown
    /// (D-20). Failures while still open keep the opening time.
    pub fn record_failure(&mut self, now: f64) {
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        if self.tripped() {
            match self.opened_at {
                None => self.opened_at = Some(now),
                Some(at) if self.cooled_down(at, now) => self.opened_at = Some(now),
                Some(_) => {}
            }
        }
    }

    /// Number of consecutive failures since the last success.
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures
    }

    /// The breaker has a recorded opening time (it is open or half-open).
    pub fn is_open_marker_set(&self) -> bool {
        self.opened_at.is_some()
    }

    /// The configured failure threshold.
    pub fn failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    /// The configured cooldown in seconds.
    pub fn cooldown_s(&self) -> f64 {
        self.cooldown_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One step of a conformance `cb_sequence` case.
    enum Op {
        Fail,
        Succeed,
        Advance(f64),
        ShouldTry(bool),
        Failures(u32),
        Marker(bool),
    }
    use Op::*;

    fn run(threshold: u32, cooldown: f64, ops: &[Op]) {
        let mut cb = CircuitBreaker::new(threshold, cooldown);
        let mut now = 0.0;
        for (i, op) in ops.iter().enumerate() {
            match op {
                Fail => cb.record_failure(now),
                Succeed => cb.record_success(),
                Advance(s) => now += s,
                ShouldTry(e) => assert_eq!(cb.should_try(now), *e, "step {i}"),
                Failures(e) => assert_eq!(cb.consecutive_failures(), *e, "step {i}"),
                Marker(e) => assert_eq!(cb.is_open_marker_set(), *e, "step {i}"),
            }
        }
    }

    #[test]
    fn cb_starts_closed() {
        run(3, 60.0, &[ShouldTry(true)]);
        assert_eq!(CircuitBreaker::default().state(0.0), BreakerState::Closed);
    }

    #[test]
    fn cb_below_threshold() {
        run(3, 60.0, &[Fail, Fail, ShouldTry(true)]);
    }

    #[test]
    fn cb_opens_at_threshold() {
        run(3, 60.0, &[Fail, Fail, Fail, ShouldTry(false)]);
    }

    #[test]
    fn cb_success_resets() {
        run(3, 60.0, &[Fail, Fail, Succeed, Fail, ShouldTry(true)]);
    }

    #[test]
    fn cb_cooldown_boundary() {
        run(
            3,
            60.0,
            &[
                Fail,
                Fail,
                Fail,
                Advance(59.999),
                ShouldTry(false),
                Advance(0.001),
                ShouldTry(true),
            ],
        );
    }

    #[test]
    fn cb_failed_probe_restarts_cooldown() {
        run(
            3,
            60.0,
            &[
                Fail,
                Fail,
                Fail,
                Advance(61.0),
                ShouldTry(true),
                Fail,
                ShouldTry(false),
                Failures(4),
                Advance(59.9),
                ShouldTry(false),
                Advance(0.2),
                ShouldTry(true),
            ],
        );
    }

    #[test]
    fn cb_d20_repeated_failed_probes() {
        run(
            3,
            60.0,
            &[
                Fail,
                Fail,
                Fail,
                Advance(60.0),
                ShouldTry(true),
                Fail,
                ShouldTry(false),
                Advance(60.0),
                ShouldTry(true),
                Fail,
                ShouldTry(false),
                Failures(5),
                Marker(true),
            ],
        );
    }

    #[test]
    fn cb_d20_failed_probe_then_success_closes() {
        run(
            3,
            60.0,
            &[
                Fail,
                Fail,
                Fail,
                Advance(61.0),
                Fail,
                ShouldTry(false),
                Advance(60.0),
                ShouldTry(true),
                Succeed,
                ShouldTry(true),
                Failures(0),
                Marker(false),
            ],
        );
    }

    #[test]
    fn failure_while_open_keeps_opening_time() {
        let mut cb = CircuitBreaker::new(3, 60.0);
        for _ in 0..3 {
            cb.record_failure(0.0);
        }
        cb.record_failure(30.0); // an in-flight request failing while open
        assert_eq!(cb.state(59.0), BreakerState::Open);
        assert_eq!(cb.state(60.0), BreakerState::HalfOpen);
    }
}
