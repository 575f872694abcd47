//! Rule `tiered`: cut each stale tool result to a limit chosen by its tool's tier (seed 002).
//!
//! ## What it does
//! Every stale result longer than its tool's limit becomes its first `limit` characters followed by
//! `"\n...[truncated, already processed]"`. The default tiers are seed 002's: confirmations 150 characters
//! (memory writes), actions 300 (trades), data 400 (market data), search 600 (memory recall, web search), and 800
//! for any other tool. Results already ending with the marker are left alone.
//!
//! ## Why
//! Once the model has answered a result, a confirmation needs a line, data needs its headline numbers, and search
//! results need a little more: one global limit either wastes tokens or cuts too deep.
//!
//! ## Example
//! ```toml
//! [[profiles.mine.rules]]
//! rule = "tiered"
//! params = { default = 800, limits = { get_orderbook = 250, search_web = 1000 } }
//! ```

use std::collections::HashMap;

use ctxfit_model::Value;
use ctxfit_retention::{
    ends_with_marker, read_params, register_rule, truncate_content, Decision, RetentionRule,
    RuleConfigError, RuleContext,
};

pub const MARKER: &str = "\n...[truncated, already processed]";
pub const DEFAULT_LIMIT: usize = 800;

/// Seed 002's tier table: (limit, tools).
pub const SEED_TIERS: &[(usize, &[&str])] = &[
    (
        150,
        &[
            "store_memory",
            "update_memory",
            "delete_memory",
            "explore_memory",
            "manage_clusters",
        ],
    ),
    (
        300,
        &[
            "execute_trade",
            "close_position",
            "modify_position",
            "manage_watchpoints",
            "manage_conflicts",
        ],
    ),
    (
        400,
        &[
            "get_market_data",
            "get_multi_timeframe",
            "get_orderbook",
            "get_funding_history",
            "get_liquidations",
            "get_options_flow",
            "get_institutional_flow",
            "get_global_sentiment",
            "get_trade_stats",
            "get_my_costs",
            "get_account",
        ],
    ),
    (600, &["recall_memory", "search_web"]),
];

/// Limits per tool name, with a default.
#[derive(Debug, Clone)]
pub struct TieredLimits {
    pub limits: HashMap<String, usize>,
    pub default: usize,
    pub marker: String,
}

impl Default for TieredLimits {
    fn default() -> Self {
        let limits = SEED_TIERS
            .iter()
            .flat_map(|(limit, tools)| tools.iter().map(move |t| ((*t).to_owned(), *limit)))
            .collect();
        TieredLimits {
            limits,
            default: DEFAULT_LIMIT,
            marker: MARKER.to_owned(),
        }
    }
}

impl TieredLimits {
    pub fn limit_for(&self, tool: &str) -> usize {
        self.limits.get(tool).copied().unwrap_or(self.default)
    }
}

impl RetentionRule for TieredLimits {
    fn name(&self) -> &'static str {
        "tiered"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        let already = ends_with_marker(ctx.content, &self.marker);
        if already {
            return Decision::Keep;
        }
        match truncate_content(ctx.content, self.limit_for(ctx.tool_name), &self.marker) {
            Some(cut) => Decision::Replace(cut),
            None => Decision::Keep,
        }
    }
}

/// The parameters: limits per tool over the seed's (the tools not named keep theirs), the default, the marker.
#[derive(serde::Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct Params {
    limits: HashMap<String, usize>,
    default: Option<usize>,
    marker: Option<String>,
}

fn build(params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
    let p: Params = read_params("tiered", params)?;
    let mut rule = TieredLimits::default();
    rule.limits.extend(p.limits);
    rule.default = p.default.unwrap_or(rule.default);
    rule.marker = p.marker.unwrap_or(rule.marker);
    Ok(Box::new(rule))
}

register_rule!(
    name: "tiered",
    tools: &["*"],
    summary: "cut a stale result to its tool tier's limit (seed 002: 150/300/400/600, else 800)",
    factory: build,
);
