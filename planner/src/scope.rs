//! Which node pairs of a sequence attend to each other: every pair (`full`), or each node's
//! K-hop neighbourhood (`hops:K[:MAX]`) plus learned global tokens.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::PlannerError;

/// Near pairs one row keeps under `hops:K` when no MAX is given.
pub const DEFAULT_MAX_PAIRS: usize = 256;

/// The attention scope of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum AttentionScope {
    /// Every node attends to every node of its sequence (S² pairs, one bucket byte each).
    #[default]
    Full,
    /// Every node attends to the nodes within `hops` hops of it (itself included), at most
    /// `max_pairs` of them, nearest first, ties by node order.
    Hops {
        /// K, at least 1.
        hops: u8,
        /// MAX, at least 1.
        max_pairs: usize,
    },
}

impl AttentionScope {
    /// Global tokens a model of this scope has unless told otherwise: none for `full`, one
    /// for `hops`.
    pub fn default_global_tokens(self) -> usize {
        match self {
            AttentionScope::Full => 0,
            AttentionScope::Hops { .. } => 1,
        }
    }

    /// Whether this is a `hops` scope.
    pub fn is_hops(self) -> bool {
        matches!(self, AttentionScope::Hops { .. })
    }
}

impl fmt::Display for AttentionScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttentionScope::Full => write!(f, "full"),
            AttentionScope::Hops { hops, max_pairs } => write!(f, "hops:{hops}:{max_pairs}"),
        }
    }
}

impl FromStr for AttentionScope {
    type Err = PlannerError;

    fn from_str(text: &str) -> Result<Self, PlannerError> {
        let fail = |problem: &str| {
            Err(PlannerError::Scope {
                text: text.to_string(),
                problem: problem.to_string(),
            })
        };
        let fields: Vec<&str> = text.split(':').collect();
        match fields[..] {
            ["full"] => Ok(AttentionScope::Full),
            ["hops", hops] | ["hops", hops, _] => {
                let Ok(hops) = hops.parse::<u8>() else {
                    return fail("K is not a number of hops");
                };
                if hops == 0 {
                    return fail(
                        "K must be at least 1 (hops:0 would attend to nothing but itself)",
                    );
                }
                let max_pairs = match fields.get(2) {
                    None => DEFAULT_MAX_PAIRS,
                    Some(max) => match max.parse::<usize>() {
                        Ok(0) => return fail("MAX must be at least 1"),
                        Ok(max) => max,
                        Err(_) => return fail("MAX is not a number of pairs"),
                    },
                };
                Ok(AttentionScope::Hops { hops, max_pairs })
            }
            _ => fail("unknown form"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip() -> Result<(), PlannerError> {
        for text in ["full", "hops:1:256", "hops:3:17"] {
            assert_eq!(text.parse::<AttentionScope>()?.to_string(), text);
        }
        assert_eq!(
            "hops:2".parse::<AttentionScope>()?,
            AttentionScope::Hops {
                hops: 2,
                max_pairs: DEFAULT_MAX_PAIRS
            }
        );
        Ok(())
    }

    #[test]
    fn bad_forms_say_what_is_wrong() {
        for (text, problem) in [
            ("hops:0", "K must be at least 1"),
            ("hops:2:0", "MAX must be at least 1"),
            ("hops:x", "K is not a number"),
            ("hops:300", "K is not a number"),
            ("hops", "unknown form"),
            ("dense", "unknown form"),
        ] {
            let message = text.parse::<AttentionScope>().expect_err(text).to_string();
            assert!(message.contains(problem), "{text}: {message}");
        }
    }

    #[test]
    fn serde_tags_the_kind() -> Result<(), serde_json::Error> {
        let hops = AttentionScope::Hops {
            hops: 2,
            max_pairs: 9,
        };
        let json = serde_json::to_string(&hops)?;
        assert_eq!(json, r#"{"kind":"hops","hops":2,"max_pairs":9}"#);
        assert_eq!(serde_json::from_str::<AttentionScope>(&json)?, hops);
        Ok(())
    }
}
