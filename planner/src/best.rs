//! Keeping the best candidate: the fastest that fits, and while none fits the one that
//! overflows memory least.

use crate::Prediction;

/// The fastest fitting candidate so far, and the least overflowing one.
pub(crate) struct Best<T> {
    fastest: Option<(f64, T)>,
    least_overflow: Option<(f64, T)>,
}

impl<T> Default for Best<T> {
    fn default() -> Self {
        Best {
            fastest: None,
            least_overflow: None,
        }
    }
}

/// Replaces `slot` if `value` is lower (the first of equals stays).
fn keep_lower<T>(slot: &mut Option<(f64, T)>, value: f64, item: impl FnOnce() -> T) {
    if slot.as_ref().is_none_or(|(v, _)| value < *v) {
        *slot = Some((value, item()));
    }
}

impl<T> Best<T> {
    /// The step time of the fastest fitting candidate so far.
    pub fn fastest_step(&self) -> Option<f64> {
        self.fastest.as_ref().map(|(v, _)| *v)
    }

    /// Offers a fitting candidate with step time `step`.
    pub fn offer_fitting(&mut self, step: f64, item: impl FnOnce() -> T) {
        keep_lower(&mut self.fastest, step, item);
    }

    /// Offers a candidate that does not fit, with worst memory-to-capacity ratio `ratio`;
    /// ignored once some candidate fits.
    pub fn offer_overflowing(&mut self, ratio: f64, item: impl FnOnce() -> T) {
        if self.fastest.is_none() {
            keep_lower(&mut self.least_overflow, ratio, item);
        }
    }

    /// Offers a fully predicted candidate, made by `item` only if it is kept.
    pub fn offer(&mut self, prediction: &Prediction, item: impl FnOnce() -> T) {
        if prediction.fits() {
            self.offer_fitting(prediction.step_seconds, item);
        } else {
            self.offer_overflowing(prediction.worst_overflow().1, item);
        }
    }

    /// `Ok` with the fastest fitting candidate, else `Err` with the least overflowing one;
    /// `None` if nothing was offered.
    pub fn into_result(self) -> Option<Result<T, T>> {
        match (self.fastest, self.least_overflow) {
            (Some((_, item)), _) => Some(Ok(item)),
            (None, Some((_, item))) => Some(Err(item)),
            (None, None) => None,
        }
    }
}
