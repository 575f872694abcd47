//! What the proxy has done, per API and per conversation: `/ctxfit/stats` (JSON) and `/metrics` (Prometheus
//! text).

use super::*;

#[derive(Default, Clone, Copy)]
pub(super) struct ApiStats {
    pub(super) requests: u64,
    pub(super) compacted: u64,
    pub(super) bypassed: u64,
    pub(super) refused: u64,
    /// Requests whose body the client compressed, inflated to be read.
    pub(super) inflated: u64,
    /// Requests whose lone surrogate escapes were written U+FFFD so that they read (`Forwarded::mended`).
    pub(super) mended: u64,
    pub(super) tokens_in: u64,
    pub(super) tokens_forwarded: u64,
    /// Answers whose usage the provider reported, and what it reported: the input it counted (what it bills),
    /// and of that what it read from its prompt cache and what it wrote to it.
    pub(super) reported: u64,
    pub(super) reported_input: u64,
    pub(super) reported_cache_read: u64,
    pub(super) reported_cache_write: u64,
    /// Refusals of a request as too long for the model's context window the proxy learned a budget from, and
    /// of those the requests it compacted under that budget and sent again.
    pub(super) windows_learned: u64,
    pub(super) window_retries: u64,
}

pub(super) fn count(shared: &Shared, api: Api, f: impl FnOnce(&mut ApiStats)) {
    let mut stats = shared.stats.lock().unwrap_or_else(|p| p.into_inner());
    f(stats.entry(api.name()).or_default());
}

fn conversations(shared: &Shared) -> usize {
    shared
        .gateways
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .map(|g| g.conversations())
        .sum()
}

/// Each conversation in memory through the proxy, with its profile.
fn conversation_stats(shared: &Shared) -> Vec<(String, crate::gateway::ConversationStats)> {
    let gateways = shared.gateways.lock().unwrap_or_else(|p| p.into_inner());
    let mut all: Vec<_> = (gateways.iter())
        .flat_map(|(profile, g)| {
            g.conversation_stats()
                .into_iter()
                .map(move |s| (profile.clone(), s))
        })
        .collect();
    all.sort_by(|a, b| (&a.0, &a.1.id).cmp(&(&b.0, &b.1.id)));
    all
}

/// The figures per API as they are now.
fn snapshot(shared: &Shared) -> BTreeMap<&'static str, ApiStats> {
    shared
        .stats
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

pub(super) fn stats_json(shared: &Shared) -> String {
    let stats = snapshot(shared);
    let apis: serde_json::Map<String, serde_json::Value> = stats
        .iter()
        .map(|(api, s)| {
            (
                (*api).to_owned(),
                serde_json::json!({
                    "requests": s.requests,
                    "compacted": s.compacted,
                    "bypassed": s.bypassed,
                    "refused": s.refused,
                    "inflated": s.inflated,
                    "mended": s.mended,
                    "windows_learned": s.windows_learned,
                    "window_retries": s.window_retries,
                    "tokens_in": s.tokens_in,
                    "tokens_forwarded": s.tokens_forwarded,
                    "tokens_saved": s.tokens_in.saturating_sub(s.tokens_forwarded),
                    "provider": {
                        "answers": s.reported,
                        "input_tokens": s.reported_input,
                        "cache_read_tokens": s.reported_cache_read,
                        "cache_write_tokens": s.reported_cache_write,
                    },
                }),
            )
        })
        .collect();
    let per: Vec<serde_json::Value> = (conversation_stats(shared).into_iter())
        .map(|(profile, s)| {
            let mut v = serde_json::to_value(&s).unwrap_or_default();
            v["profile"] = profile.into();
            v["tokens_saved"] = s.tokens_in.saturating_sub(s.tokens_forwarded).into();
            v
        })
        .collect();
    let mut out = serde_json::json!({
        "conversations": conversations(shared),
        "apis": apis,
        "per_conversation": per,
    });
    if let Some(in_use) = shared.config.memory_in_use {
        out["memory"] = serde_json::json!({"in_use": in_use(), "max": shared.config.max_memory});
    }
    if let Some(store) = &shared.store {
        out["state"] = serde_json::json!({
            "path": store.path().display().to_string(),
            "conversations": store.conversations(),
            "errors": store.errors(),
            "last_error": store.last_error(),
        });
    }
    out.to_string()
}

/// A Prometheus counter family: name, help, and its value of an API's figures.
type Family = (&'static str, &'static str, fn(&ApiStats) -> u64);

pub(super) fn metrics_text(shared: &Shared) -> String {
    let stats = snapshot(shared);
    let mut out = String::new();
    let families: [Family; 13] = [
        (
            "ctxfit_proxy_requests_total",
            "Requests received, per API.",
            |s| s.requests,
        ),
        (
            "ctxfit_proxy_compacted_total",
            "Requests compacted, per API.",
            |s| s.compacted,
        ),
        (
            "ctxfit_proxy_inflated_total",
            "Requests whose body the client compressed (zstd, gzip, deflate), inflated to be compacted, per API.",
            |s| s.inflated,
        ),
        (
            "ctxfit_proxy_mended_total",
            "Requests whose lone surrogate escapes (half an emoji a client cut in two, which the provider refuses) were written U+FFFD, per API.",
            |s| s.mended,
        ),
        (
            "ctxfit_proxy_windows_learned_total",
            "Refusals of a request as too long for the model's context window, from which the conversation's request budget was learned, per API.",
            |s| s.windows_learned,
        ),
        (
            "ctxfit_proxy_window_retries_total",
            "Requests refused as too long for the model's context window, compacted under the budget learned and sent again, per API.",
            |s| s.window_retries,
        ),
        (
            "ctxfit_proxy_tokens_in_total",
            "Estimated input tokens of the requests as received.",
            |s| s.tokens_in,
        ),
        (
            "ctxfit_proxy_tokens_forwarded_total",
            "Estimated input tokens of the requests as forwarded.",
            |s| s.tokens_forwarded,
        ),
        (
            "ctxfit_proxy_tokens_saved_total",
            "Estimated input tokens compaction removed.",
            |s| s.tokens_in.saturating_sub(s.tokens_forwarded),
        ),
        (
            "ctxfit_proxy_provider_answers_total",
            "Answers to compacted requests whose usage the provider reported.",
            |s| s.reported,
        ),
        (
            "ctxfit_proxy_provider_input_tokens_total",
            "Input tokens the provider reported for compacted requests, cache reads and writes included: what it bills.",
            |s| s.reported_input,
        ),
        (
            "ctxfit_proxy_provider_cache_read_tokens_total",
            "Of those, the tokens the provider read from its prompt cache.",
            |s| s.reported_cache_read,
        ),
        (
            "ctxfit_proxy_provider_cache_write_tokens_total",
            "Of those, the tokens the provider wrote to its prompt cache (Anthropic; OpenAI reports none).",
            |s| s.reported_cache_write,
        ),
    ];
    for (name, help, value) in families {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} counter\n"));
        for (api, s) in &stats {
            out.push_str(&format!("{name}{{api=\"{api}\"}} {}\n", value(s)));
        }
    }
    out.push_str(&format!(
        "# HELP ctxfit_proxy_conversations Conversations kept.\n# TYPE ctxfit_proxy_conversations gauge\nctxfit_proxy_conversations {}\n",
        conversations(shared)
    ));
    let per = conversation_stats(shared);
    let label = |profile: &str, id: &str| {
        format!(
            "profile=\"{}\",conversation=\"{}\"",
            profile.replace(['\\', '"', '\n'], "_"),
            id.replace(['\\', '"', '\n'], "_")
        )
    };
    type Per = (
        &'static str,
        &'static str,
        &'static str,
        fn(&crate::gateway::ConversationStats) -> String,
    );
    let families: [Per; 3] = [
        (
            "ctxfit_proxy_conversation_tokens_saved",
            "Estimated input tokens compaction removed from a conversation's requests, in memory now.",
            "gauge",
            |s| s.tokens_in.saturating_sub(s.tokens_forwarded).to_string(),
        ),
        (
            "ctxfit_proxy_conversation_cost_saved",
            "Estimated cost a conversation saved against sending everything, in uncached input tokens at Anthropic's cache prices (negative: it cost more).",
            "gauge",
            |s| format!("{:.1}", s.cost_saved),
        ),
        (
            "ctxfit_proxy_conversation_refetches",
            "Tool calls of a conversation that fetched again what a cut left out (the same call as one whose result is cut).",
            "gauge",
            |s| s.refetches.to_string(),
        ),
    ];
    for (name, help, kind, value) in families {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (profile, s) in &per {
            out.push_str(&format!(
                "{name}{{{}}} {}\n",
                label(profile, &s.id),
                value(s)
            ));
        }
    }
    out.push_str(&format!(
        "# HELP ctxfit_proxy_cost_saved Estimated cost the conversations in memory saved, in uncached input tokens at Anthropic's cache prices.\n# TYPE ctxfit_proxy_cost_saved gauge\nctxfit_proxy_cost_saved {:.1}\n\
         # HELP ctxfit_proxy_refetches Tool calls of the conversations in memory that fetched again what a cut left out.\n# TYPE ctxfit_proxy_refetches gauge\nctxfit_proxy_refetches {}\n",
        per.iter().map(|(_, s)| s.cost_saved).sum::<f64>(),
        per.iter().map(|(_, s)| s.refetches).sum::<u64>(),
    ));
    if let Some(in_use) = shared.config.memory_in_use {
        out.push_str(&format!(
            "# HELP ctxfit_proxy_memory_bytes Bytes of heap in use.\n# TYPE ctxfit_proxy_memory_bytes gauge\nctxfit_proxy_memory_bytes {}\n",
            in_use()
        ));
    }
    if let Some(store) = &shared.store {
        out.push_str(&format!(
            "# HELP ctxfit_proxy_state_conversations Conversations in the state database.\n# TYPE ctxfit_proxy_state_conversations gauge\nctxfit_proxy_state_conversations {}\n",
            store.conversations()
        ));
        out.push_str(&format!(
            "# HELP ctxfit_proxy_state_errors_total Failed reads and writes of the state database.\n# TYPE ctxfit_proxy_state_errors_total counter\nctxfit_proxy_state_errors_total {}\n",
            store.errors()
        ));
    }
    out
}
