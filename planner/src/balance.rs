//! Node shares of one context-parallel group: the least slowest-member time within memory.
//!
//! Each member's time and memory are affine in its share (see `cost`), so the problem
//! "minimise `max_i time_i(s_i)` subject to `Σ s_i = 1`, `0 ≤ s_i ≤ cap_i`" is solved
//! exactly: for a time bound `T` each share may lie in an interval, and the least `T` at
//! which the intervals can sum to 1 is found on piecewise-linear sums. Faster members get
//! proportionally larger shares; a member whose memory caps its share gets less and the rest
//! is spread over the others. When even the caps cannot sum to 1, the shares minimise the
//! worst memory-to-capacity ratio instead, so that the overflow reported is the least.
//! Caps are at the exact capacity; fit checks on predictions allow rounding slack, so
//! shares balanced right up to a cap still fit.

/// `at_zero + slope · share`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Affine {
    pub at_zero: f64,
    pub slope: f64,
}

impl Affine {
    /// Its value at `share`.
    pub fn at(&self, share: f64) -> f64 {
        self.at_zero + self.slope * share
    }

    /// The largest share at which every one of `terms` stays within `limit` (at most 1;
    /// negative where none does).
    pub fn cap_below(terms: &[Affine], limit: f64) -> f64 {
        terms
            .iter()
            .map(|t| {
                if t.at_zero > limit {
                    -1.0
                } else if t.slope > 0.0 {
                    (limit - t.at_zero) / t.slope
                } else {
                    1.0
                }
            })
            .fold(1.0, f64::min)
    }
}

/// One member of a group: its time and memory as functions of its share, its capacity, and
/// the largest share its buffer limit allows (see [`Affine::cap_below`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Member {
    pub time: Affine,
    pub memory: Affine,
    pub capacity: f64,
    pub share_cap: f64,
}

/// Balanced shares of a group and what they give.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Balanced {
    pub shares: Vec<f64>,
    /// The slowest member's time.
    pub time: f64,
    /// Whether every member's memory fits.
    pub fits: bool,
    /// The largest memory-to-capacity ratio.
    pub overflow: f64,
}

impl Member {
    /// The largest share within its memory and buffer limit (at most 1; negative where
    /// none is).
    fn share_limit(&self) -> f64 {
        ((self.capacity - self.memory.at_zero) / self.memory.slope)
            .min(self.share_cap)
            .min(1.0)
    }
}

/// Whether shares within `caps` (each member's [`Member::share_limit`]) can sum to 1.
fn caps_fit(caps: impl Iterator<Item = f64>) -> bool {
    let mut sum = 0.0;
    for cap in caps {
        if cap < 0.0 {
            return false;
        }
        sum += cap;
    }
    sum >= 1.0
}

/// Whether [`balance`] of `members` fits them all, without balancing.
pub(crate) fn fits(members: impl Iterator<Item = Member>) -> bool {
    caps_fit(members.map(|m| m.share_limit()))
}

/// Balances the shares of `members` (at least one).
pub(crate) fn balance(members: &[Member]) -> Balanced {
    let caps: Vec<f64> = members.iter().map(Member::share_limit).collect();
    let fits = caps_fit(caps.iter().copied());
    let shares = if members.len() == 1 {
        vec![1.0]
    } else if fits {
        let times: Vec<Affine> = members.iter().map(|m| m.time).collect();
        minimax(&times, &caps)
    } else {
        let ratios: Vec<Affine> = members
            .iter()
            .map(|m| Affine {
                at_zero: m.memory.at_zero / m.capacity,
                slope: m.memory.slope / m.capacity,
            })
            .collect();
        minimax(&ratios, &vec![1.0; members.len()])
    };
    let worst = |f: &dyn Fn(&Member, f64) -> f64| {
        members
            .iter()
            .zip(&shares)
            .map(|(m, &s)| f(m, s))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    Balanced {
        time: worst(&|m, s| m.time.at(s)),
        overflow: worst(&|m, s| m.memory.at(s) / m.capacity),
        fits,
        shares,
    }
}

/// Shares `s` with `Σ s = 1`, `0 ≤ s_i ≤ caps_i` minimising `max_i lines_i(s_i)`;
/// requires `caps_i ≥ 0` and `Σ caps ≥ 1`.
fn minimax(lines: &[Affine], caps: &[f64]) -> Vec<f64> {
    // For a bound T, share i may lie in [lo_i(T), hi_i(T)]:
    // rising lines cap it above, falling lines bound it below, flat lines leave [0, cap].
    let floor = lines
        .iter()
        .zip(caps)
        .map(|(l, &c)| l.at_zero.min(l.at(c)))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut rising = Vec::with_capacity(lines.len());
    let mut falling = Vec::with_capacity(lines.len());
    let mut not_rising_caps = 0.0;
    let mut falling_caps = 0.0;
    for (l, &c) in lines.iter().zip(caps) {
        if l.slope > 0.0 {
            rising.push(Ramp {
                start: l.at_zero,
                rate: 1.0 / l.slope,
                height: c,
            });
        } else {
            not_rising_caps += c;
            if l.slope < 0.0 {
                falling_caps += c;
                falling.push(Ramp {
                    start: l.at(c),
                    rate: -1.0 / l.slope,
                    height: c,
                });
            }
        }
    }
    // Σ hi(T) ≥ 1 and Σ lo(T) ≤ 1, i.e. Σ (cap − lo) ≥ Σ cap − 1 over falling lines.
    let bound = floor
        .max(earliest(&mut rising, 1.0 - not_rising_caps))
        .max(earliest(&mut falling, falling_caps - 1.0));
    let range = |(l, &c): (&Affine, &f64)| {
        let reach = ((bound - l.at_zero) / l.slope).clamp(0.0, c);
        match l.slope {
            s if s > 0.0 => (0.0, reach),
            s if s < 0.0 => (reach, c),
            _ => (0.0, c),
        }
    };
    let (sum_lo, sum_hi) = lines
        .iter()
        .zip(caps)
        .map(range)
        .fold((0.0, 0.0), |(a, b), (lo, hi)| (a + lo, b + hi));
    let lambda = if sum_hi > sum_lo {
        ((1.0 - sum_lo) / (sum_hi - sum_lo)).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mut shares: Vec<f64> = lines
        .iter()
        .zip(caps)
        .map(range)
        .map(|(lo, hi)| lo + lambda * (hi - lo))
        .collect();
    let sum: f64 = shares.iter().sum();
    for s in &mut shares {
        *s /= sum;
    }
    shares
}

/// `clamp((T − start) · rate, 0, height)`: how much a member can take at bound `T`.
struct Ramp {
    start: f64,
    rate: f64,
    height: f64,
}

/// The least `T` at which the ramps sum to at least `target` (−∞ if `target ≤ 0`).
fn earliest(ramps: &mut [Ramp], target: f64) -> f64 {
    if target <= 0.0 {
        return f64::NEG_INFINITY;
    }
    let mut events = Vec::with_capacity(2 * ramps.len());
    events.extend(
        ramps
            .iter()
            .filter(|r| r.height > 0.0)
            .flat_map(|r| [(r.start, r.rate), (r.start + r.height / r.rate, -r.rate)]),
    );
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut t, mut value, mut slope) = (f64::NEG_INFINITY, 0.0, 0.0);
    for (at, change) in events {
        let reached = if slope > 0.0 {
            value + slope * (at - t)
        } else {
            value
        };
        if slope > 0.0 && reached >= target {
            return t + (target - value) / slope;
        }
        (t, value, slope) = (at, reached, slope + change);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(at_zero: f64, at_one: f64, capacity: f64) -> Member {
        Member {
            time: Affine {
                at_zero,
                slope: at_one - at_zero,
            },
            memory: Affine {
                at_zero: 1.0,
                slope: 10.0,
            },
            capacity,
            share_cap: f64::INFINITY,
        }
    }

    #[test]
    fn a_buffer_limit_caps_a_share_like_memory() {
        // Member 0 is twice as fast but its buffer limit allows a share of 0.4 at most.
        let capped = Member {
            share_cap: 0.4,
            ..member(0.0, 1.0, 1e9)
        };
        let b = balance(&[capped, member(0.0, 2.0, 1e9)]);
        assert!(close(b.shares[0], 0.4), "{:?}", b.shares);
        assert!(b.fits);
        let both = [
            Member {
                share_cap: 0.4,
                ..capped
            },
            Member {
                share_cap: 0.5,
                ..capped
            },
        ];
        assert!(!balance(&both).fits, "caps summing below 1");
        let terms = [
            Affine {
                at_zero: 0.0,
                slope: 100.0,
            },
            Affine {
                at_zero: 30.0,
                slope: 10.0,
            },
        ];
        assert!(close(Affine::cap_below(&terms, 50.0), 0.5));
        assert!(close(Affine::cap_below(&terms, 35.0), 0.35));
        assert_eq!(Affine::cap_below(&terms, 1e9), 1.0);
        assert!(
            Affine::cap_below(&terms, 20.0) < 0.0,
            "the key table alone is too large"
        );
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-8 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn shares_follow_speed() {
        // Time per unit share 1 vs 2: the fast member takes 2/3.
        let b = balance(&[member(0.0, 1.0, 1e9), member(0.0, 2.0, 1e9)]);
        assert!(close(b.shares[0], 2.0 / 3.0), "{:?}", b.shares);
        assert!(close(b.time, 2.0 / 3.0));
        assert!(b.fits);
    }

    #[test]
    fn fixed_costs_shift_shares() {
        // Member 0 has a fixed cost of 0.5: T = 0.5 + s0 = 1 − s0 → s0 = 1/4.
        let b = balance(&[member(0.5, 1.5, 1e9), member(0.0, 1.0, 1e9)]);
        assert!(close(b.shares[0], 0.25), "{:?}", b.shares);
        assert!(close(b.time, 0.75));
    }

    #[test]
    fn memory_caps_a_share_and_the_rest_moves() {
        // Memory 1 + 10·s ≤ 3 caps member 0 at 0.2 although it is the faster one.
        let b = balance(&[member(0.0, 1.0, 3.0), member(0.0, 2.0, 1e9)]);
        assert!(close(b.shares[0], 0.2), "{:?}", b.shares);
        assert!(close(b.time, 1.6));
        assert!(b.fits);
    }

    #[test]
    fn falling_times_are_balanced_too() {
        // Member 0 is communication bound: its time 2 − s0 falls with its share, member 1's
        // is 2·(1 − s0); the slowest is least, 1, with everything on member 0.
        let b = balance(&[member(2.0, 1.0, 1e9), member(0.0, 2.0, 1e9)]);
        assert!(close(b.shares[0], 1.0), "{:?}", b.shares);
        assert!(close(b.time, 1.0));
    }

    #[test]
    fn overflowing_group_minimises_the_worst_ratio() {
        // Caps 0.1 and 0.1 cannot sum to 1; ratios (1 + 10 s)/2 balance at s = 1/2.
        let b = balance(&[member(0.0, 1.0, 2.0), member(0.0, 1.0, 2.0)]);
        assert!(!b.fits);
        assert!(close(b.shares[0], 0.5));
        assert!(close(b.overflow, 3.0));
    }

    #[test]
    fn single_member_takes_everything() {
        let b = balance(&[member(0.5, 1.5, 5.0)]);
        assert_eq!(b.shares, vec![1.0]);
        assert!(close(b.time, 1.5));
        assert!(!b.fits);
        assert!(close(b.overflow, 11.0 / 5.0));
    }
}
