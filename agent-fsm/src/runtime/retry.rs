//! Exponential backoff with jitter, for effects that schedule a retry timer
//! ([`EffectContext::pause`](super::EffectContext::pause)).
//!
//! The machine decides *whether* to retry (a guard such as
//! `retries < max`); the policy only says *how long* to wait, so a retry
//! always follows the table's own path. The jitter is a tiny SplitMix64
//! hash, so no `rand` dependency is needed: of `(seed, retry)` for a seeded
//! policy, so that the same retry always gets the same delay (paused-time
//! tests are exact), and otherwise of a process-wide draw counter hashed
//! with per-process random keys, so that every call gets fresh jitter.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long to wait before each retry.
///
/// The delay before retry `n` (1-based, the number of attempts already
/// failed) is `min(cap, base × factorⁿ⁻¹ × j)` where `j` is drawn uniformly
/// from `[1 − jitter, 1 + jitter]`. The cap applies last, so no delay ever
/// exceeds it.
///
/// Unseeded (the default), every call to [`delay`](Self::delay) draws
/// fresh jitter, so agents sharing one configured policy, or copies of it,
/// do not retry in lockstep. [`seed`](method@Self::seed) makes every
/// delay a function of the seed and the retry number, for reproducible
/// tests.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use agent_fsm::runtime::RetryPolicy;
///
/// let policy = RetryPolicy::default().jitter(0.0);
/// assert_eq!(policy.delay(1), Duration::from_millis(200));
/// assert_eq!(policy.delay(2), Duration::from_millis(400));
/// assert_eq!(policy.delay(10), Duration::from_secs(5)); // capped
/// assert!(policy.should_retry(2));
/// assert!(!policy.should_retry(3)); // three attempts made: give up
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Total attempts, the first one included (default 3: one try and two
    /// retries).
    pub max_attempts: u32,
    /// The delay before the first retry, before jitter (default 200 ms).
    pub base: Duration,
    /// Growth per retry (default 2.0). Values below 1 or not finite are
    /// read as 1.
    pub factor: f64,
    /// No delay exceeds this (default 5 s).
    pub cap: Duration,
    /// Relative spread: the delay is multiplied by a factor drawn from
    /// `[1 − jitter, 1 + jitter]` (default 0.5, so ×[0.5, 1.5]). Clamped to
    /// `[0, 1]`.
    pub jitter: f64,
    /// Seeds the jitter. `None` by default: each call to
    /// [`delay`](Self::delay) draws fresh jitter, so that agents started
    /// together do not retry in lockstep even when they share one policy.
    /// `Some` (see [`seed`](method@Self::seed)) gives the same delay for
    /// the same retry every time, for reproducible tests.
    pub seed: Option<u64>,
}

/// Draws made by unseeded policies, process-wide: each draw hashes a
/// number no other draw used.
static DRAWS: AtomicU64 = AtomicU64::new(0);

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base: Duration::from_millis(200),
            factor: 2.0,
            cap: Duration::from_secs(5),
            jitter: 0.5,
            seed: None,
        }
    }
}

impl RetryPolicy {
    /// The defaults: 3 attempts, 200 ms base, factor 2, 5 s cap, jitter 0.5.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`max_attempts`](field@Self::max_attempts).
    #[must_use]
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// Sets [`base`](field@Self::base).
    #[must_use]
    pub fn base(mut self, base: Duration) -> Self {
        self.base = base;
        self
    }

    /// Sets [`factor`](field@Self::factor).
    #[must_use]
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }

    /// Sets [`cap`](field@Self::cap).
    #[must_use]
    pub fn cap(mut self, cap: Duration) -> Self {
        self.cap = cap;
        self
    }

    /// Sets [`jitter`](field@Self::jitter).
    #[must_use]
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// Sets [`seed`](field@Self::seed), making every delay reproducible: the
    /// same retry number always gives the same delay.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Whether another attempt is allowed after `attempts_made` attempts
    /// (the first one included) have failed.
    #[must_use]
    pub fn should_retry(&self, attempts_made: u32) -> bool {
        attempts_made < self.max_attempts
    }

    /// The delay before retry number `retry` (1 = the first retry, i.e. after
    /// one failed attempt), rounded to whole milliseconds (tokio's timer
    /// resolution), and at most the cap (which is returned as set, whole
    /// milliseconds or not). `0` is read as `1`. Never panics: overflow
    /// saturates at the cap; a zero base gives zero delays. Unseeded, two calls with the same `retry` usually differ
    /// (see [`seed`](field@Self::seed)).
    #[must_use]
    pub fn delay(&self, retry: u32) -> Duration {
        let factor = if self.factor.is_finite() && self.factor >= 1.0 { self.factor } else { 1.0 };
        let jitter = if self.jitter.is_finite() { self.jitter.clamp(0.0, 1.0) } else { 0.0 };
        // Retry 0 is read as 1, for the jitter as for the exponent.
        let retry = retry.max(1);
        let exponent = i32::try_from(retry - 1).unwrap_or(i32::MAX);
        let bits = match self.seed {
            Some(seed) => seed,
            // std's RandomState has per-process random keys; the counter
            // makes every draw's input new.
            None => RandomState::new().hash_one(DRAWS.fetch_add(1, Ordering::Relaxed)),
        };
        let unit = unit_interval(splitmix64(bits ^ u64::from(retry)));
        let multiplier = 1.0 - jitter + 2.0 * jitter * unit;
        let start = self.base.as_secs_f64() * 1e3 * multiplier;
        // Nothing grows from zero, however large the exponent (whose
        // power may be infinite: zero times that is NaN, not zero).
        if start <= 0.0 {
            return Duration::ZERO;
        }
        let millis = (start * factor.powi(exponent)).round();
        // Whole milliseconds: tokio's timers have millisecond resolution, so
        // a timer set with this delay fires exactly this late.
        // `try_from_secs_f64` refuses NaN, negatives and overflow; all of them
        // can only come from huge exponents, so the cap is the right answer.
        Duration::try_from_secs_f64(millis / 1e3).map_or(self.cap, |d| d.min(self.cap))
    }
}

impl RetryPolicy {
    /// The delay before retry number `retry`, honouring the server's own
    /// wait when it gave one (an HTTP `retry-after`, as the `llm` feature's
    /// `ProviderError::retry_after` reports it): then exactly that wait, rounded up to whole
    /// milliseconds so the retry never comes early, and at most the
    /// [`cap`](field@Self::cap) (raise the cap to honour longer waits; a server
    /// asking for more than it will likely refuse the early retry too).
    /// Without a hint, [`delay`](Self::delay).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use agent_fsm::runtime::RetryPolicy;
    ///
    /// let policy = RetryPolicy::default().jitter(0.0);
    /// assert_eq!(policy.delay_for(1, Some(Duration::from_secs(2))), Duration::from_secs(2));
    /// assert_eq!(policy.delay_for(1, Some(Duration::from_micros(1_500))), Duration::from_millis(2));
    /// assert_eq!(policy.delay_for(1, Some(Duration::from_secs(60))), Duration::from_secs(5)); // the cap
    /// assert_eq!(policy.delay_for(2, None), policy.delay(2));
    /// ```
    #[must_use]
    pub fn delay_for(&self, retry: u32, server_hint: Option<Duration>) -> Duration {
        let Some(hint) = server_hint else {
            return self.delay(retry);
        };
        let millis = hint.as_millis().saturating_add(u128::from(hint.subsec_nanos() % 1_000_000 != 0));
        let rounded = u64::try_from(millis).map_or(Duration::MAX, Duration::from_millis);
        rounded.min(self.cap)
    }
}

/// One SplitMix64 step: a good 64-bit mix of its input.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Maps 64 random bits to `[0, 1)` using the top 53 (an f64's mantissa).
fn unit_interval(bits: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)] // 53 bits fit an f64 exactly
    let top = (bits >> 11) as f64;
    top / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    // Through the crate's own name, as users write it.
    use agent_fsm::runtime::RetryPolicy;
    use std::time::Duration;

    #[test]
    fn defaults_are_documented_values() {
        let p = RetryPolicy::default();
        assert_eq!(p.max_attempts, 3);
        assert_eq!(p.base, Duration::from_millis(200));
        assert!((p.factor - 2.0).abs() < f64::EPSILON);
        assert_eq!(p.cap, Duration::from_secs(5));
        assert!((p.jitter - 0.5).abs() < f64::EPSILON);
    }

    #[test]
    fn jitter_stays_in_range_and_is_seeded() {
        let p = RetryPolicy::default().seed(7);
        for retry in 1..=4 {
            let nominal = 0.2 * 2f64.powi(i32::try_from(retry).unwrap() - 1);
            let d = p.delay(retry).as_secs_f64();
            assert!(d >= nominal * 0.5 - 1e-9 && d <= nominal * 1.5 + 1e-9, "{d} vs {nominal}");
            assert_eq!(p.delay(retry), RetryPolicy::default().seed(7).delay(retry));
        }
        assert_ne!(RetryPolicy::default().seed(1).delay(1), RetryPolicy::default().seed(2).delay(1));
    }

    #[test]
    fn unseeded_policies_draw_fresh_jitter_on_every_call() {
        let shared = RetryPolicy::default();
        assert_eq!(shared.seed, None);
        // Copies of one configured policy, as agents sharing it hold: the
        // delays still spread (a few draws, so that an equal pair by
        // chance cannot fail the test).
        let (a, b) = (shared, shared);
        let delays: std::collections::BTreeSet<Duration> = (0..8).flat_map(|_| [a.delay(1), b.delay(1)]).collect();
        assert!(delays.len() > 4, "{delays:?}");
        for d in delays {
            assert!(d >= Duration::from_millis(100) && d <= Duration::from_millis(300), "{d:?}");
        }
    }

    #[test]
    fn retry_zero_is_read_as_one() {
        let p = RetryPolicy::default().seed(42);
        assert_eq!(p.delay(0), p.delay(1));
    }

    #[test]
    fn bad_values_do_not_panic() {
        let p = RetryPolicy::default().factor(f64::NAN).jitter(f64::INFINITY).base(Duration::MAX);
        assert_eq!(p.delay(u32::MAX), p.cap);
        assert_eq!(p.delay(0), p.cap);
        let p = RetryPolicy::default().factor(1e300).jitter(0.0);
        assert_eq!(p.delay(1_000), p.cap);
        assert_eq!(p.delay(1), Duration::from_millis(200));
    }

    #[test]
    fn a_server_hint_replaces_the_backoff_up_to_the_cap() {
        let p = RetryPolicy::default().seed(3);
        assert_eq!(p.delay_for(1, Some(Duration::from_secs(2))), Duration::from_secs(2));
        assert_eq!(p.delay_for(3, Some(Duration::ZERO)), Duration::ZERO);
        assert_eq!(p.delay_for(1, Some(Duration::from_nanos(1))), Duration::from_millis(1));
        assert_eq!(p.delay_for(1, Some(Duration::from_millis(7))), Duration::from_millis(7));
        assert_eq!(p.delay_for(1, Some(Duration::MAX)), p.cap);
        assert_eq!(p.delay_for(1, Some(Duration::from_secs(6))), p.cap);
        assert_eq!(p.delay_for(2, None), p.delay(2));
        let long = p.cap(Duration::from_secs(60));
        assert_eq!(long.delay_for(1, Some(Duration::from_secs(30))), Duration::from_secs(30));
    }

    #[test]
    fn a_zero_base_stays_zero_past_any_exponent() {
        let p = RetryPolicy::default().base(Duration::ZERO);
        for retry in [1, 1_024, 1_025, 5_000, u32::MAX] {
            assert_eq!(p.delay(retry), Duration::ZERO, "retry {retry}");
        }
    }
}
