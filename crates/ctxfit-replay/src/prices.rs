//! What a request costs: the prices per token of a prompt-cache model, and the models `replay --prices` names.

use serde::Serialize;

/// Prices per token of the prompt-cache model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prices {
    /// Uncached input (what every token would cost without a cache).
    pub base: f64,
    pub cache_read: f64,
    /// A write to a cache that lives five minutes.
    pub cache_write: f64,
    /// A write to a cache that lives an hour (Anthropic's `"ttl": "1h"`, which half of the corpus's long Claude
    /// Code sessions write to).
    pub cache_write_1h: f64,
}

/// A request's (or many requests') tokens by what the cache did with them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheTokens {
    pub read: usize,
    /// Every token written, to either cache.
    pub write: usize,
    /// Of `write`, those written to the one-hour cache.
    pub hour: usize,
}

impl CacheTokens {
    /// `read` tokens read and `write` written — to the one-hour cache when `one_hour`.
    pub fn of(read: usize, write: usize, one_hour: bool) -> CacheTokens {
        CacheTokens {
            read,
            write,
            hour: if one_hour { write } else { 0 },
        }
    }
}

impl std::ops::Add for CacheTokens {
    type Output = CacheTokens;
    fn add(self, o: CacheTokens) -> CacheTokens {
        CacheTokens {
            read: self.read + o.read,
            write: self.write + o.write,
            hour: self.hour + o.hour,
        }
    }
}

impl std::iter::Sum for CacheTokens {
    fn sum<I: Iterator<Item = CacheTokens>>(iter: I) -> CacheTokens {
        iter.fold(CacheTokens::default(), |a, b| a + b)
    }
}

impl Default for Prices {
    fn default() -> Self {
        PriceModel::Anthropic.prices()
    }
}

impl Prices {
    /// The cost of a request (or of many) from its cache reads and writes.
    pub fn cost(&self, t: CacheTokens) -> f64 {
        let hour = t.hour.min(t.write);
        t.read as f64 * self.cache_read
            + (t.write - hour) as f64 * self.cache_write
            + hour as f64 * self.cache_write_1h
    }
}

/// The named price models, relative to one uncached input token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceModel {
    /// Anthropic's prompt cache: a cache read costs 0.1, a cache write 1.25 (5-minute cache) or 2.0 (one-hour
    /// cache).
    Anthropic,
    /// OpenAI's automatic cache: cached input costs 0.1, with no premium for writing.
    #[serde(rename = "openai")]
    OpenAi,
    /// No prompt cache: every input token costs 1.0, so cost is input tokens.
    Uncached,
}

impl PriceModel {
    pub const ALL: [PriceModel; 3] = [
        PriceModel::Anthropic,
        PriceModel::OpenAi,
        PriceModel::Uncached,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PriceModel::Anthropic => "anthropic",
            PriceModel::OpenAi => "openai",
            PriceModel::Uncached => "uncached",
        }
    }

    /// The model named `name` (`anthropic`, `openai`, `uncached`).
    pub fn parse(name: &str) -> Option<PriceModel> {
        PriceModel::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn prices(self) -> Prices {
        let (cache_read, cache_write, cache_write_1h) = match self {
            PriceModel::Anthropic => (0.1, 1.25, 2.0),
            PriceModel::OpenAi => (0.1, 1.0, 1.0),
            PriceModel::Uncached => (1.0, 1.0, 1.0),
        };
        Prices {
            base: 1.0,
            cache_read,
            cache_write,
            cache_write_1h,
        }
    }
}
