//! The token budget and guard of seed 003: refuse a request over `budget`, warn over `warning_threshold`.

/// Limits on the size of one request. `0` disables a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenBudget {
    /// Hard limit: a request above it is refused.
    pub budget: usize,
    /// Soft limit: a request above it passes with a warning.
    pub warning_threshold: usize,
}

/// A request over its hard budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Prompt too large: {tokens} tokens exceeds budget of {budget}")]
pub struct BudgetError {
    pub tokens: usize,
    pub budget: usize,
}

/// The outcome of a check that passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetStatus {
    Ok,
    /// Above the warning threshold; a `tracing` warning was emitted.
    Warning {
        tokens: usize,
        threshold: usize,
    },
}

impl TokenBudget {
    /// Check a request of `tokens` tokens.
    pub fn check(&self, tokens: usize) -> Result<BudgetStatus, BudgetError> {
        if self.budget > 0 && tokens > self.budget {
            return Err(BudgetError {
                tokens,
                budget: self.budget,
            });
        }
        if self.warning_threshold > 0 && tokens > self.warning_threshold {
            tracing::warn!(
                tokens,
                threshold = self.warning_threshold,
                "prompt of {tokens} tokens is above the warning threshold of {}",
                self.warning_threshold
            );
            return Ok(BudgetStatus::Warning {
                tokens,
                threshold: self.warning_threshold,
            });
        }
        Ok(BudgetStatus::Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_refuses_and_warns() {
        let b = TokenBudget {
            budget: 1000,
            warning_threshold: 800,
        };
        assert_eq!(b.check(500), Ok(BudgetStatus::Ok));
        assert_eq!(b.check(800), Ok(BudgetStatus::Ok));
        assert_eq!(
            b.check(801),
            Ok(BudgetStatus::Warning {
                tokens: 801,
                threshold: 800
            })
        );
        assert_eq!(
            b.check(1000),
            Ok(BudgetStatus::Warning {
                tokens: 1000,
                threshold: 800
            })
        );
        let err = b.check(1001).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Prompt too large: 1001 tokens exceeds budget of 1000"
        );
        assert_eq!(
            TokenBudget::default().check(usize::MAX),
            Ok(BudgetStatus::Ok)
        );
    }
}
