//! What a request costs: the prices per token of a prompt-cache model, and the models `replay --prices` names.

use serde::Serialize;

/// Prices per token of the prompt-cache model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prices {
    /// Uncached input (what every token would cost without a cache).
    pub base: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Default for Prices {
    fn default() -> Self {
        PriceModel::Anthropic.prices()
    }
}

impl Prices {
    /// The cost of a request (or of many) from its cache reads and writes.
    pub fn cost(&self, cache_read_tokens: usize, cache_write_tokens: usize) -> f64 {
        cache_read_tokens as f64 * self.cache_read + cache_write_tokens as f64 * self.cache_write
    }
}

/// The named price models, relative to one uncached input token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceModel {
    /// Anthropic's prompt cache: a cache read costs 0.1, a cache write 1.25 (5-minute cache).
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
        let (cache_read, cache_write) = match self {
            PriceModel::Anthropic => (0.1, 1.25),
            PriceModel::OpenAi => (0.1, 1.0),
            PriceModel::Uncached => (1.0, 1.0),
        };
        Prices {
            base: 1.0,
            cache_read,
            cache_write,
        }
    }
}
