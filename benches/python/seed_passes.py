"""The seeds' compaction passes, written the straightforward way in Python, timed on a history file.

Used by `cargo bench -p ctxfit-benches --bench compaction` for the side-by-side figures in
docs/benchmarks.md. Input: an Anthropic message list (JSON). Output: one JSON object of timings.

seed 000: over budget, every tool_result longer than 500 characters in every tool-result message except the
most recent one becomes its first 500 characters + a marker (in place; results already ending with the marker
are skipped). Timed as a pass over the whole history once it has already been compacted (steady state: what
each later turn costs).

seed 002: on every request, a projected copy of the message list in which every tool_result of every user
message except the last is cut to its tool's tier limit + a marker. Timed per request.
"""

import copy
import json
import sys
import time

MARKER_000 = "\n[truncated for context management]"
MARKER_002 = "\n...[truncated, already processed]"
TIERS = {}
for limit, tools in [
    (150, ["store_memory", "update_memory", "delete_memory", "explore_memory", "manage_clusters"]),
    (300, ["execute_trade", "close_position", "modify_position", "manage_watchpoints", "manage_conflicts"]),
    (400, ["get_market_data", "get_multi_timeframe", "get_orderbook", "get_funding_history", "get_liquidations",
           "get_options_flow", "get_institutional_flow", "get_global_sentiment", "get_trade_stats", "get_my_costs",
           "get_account"]),
    (600, ["recall_memory", "search_web"]),
]:
    for t in tools:
        TIERS[t] = limit


def has_results(msg):
    c = msg.get("content")
    return isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in c)


def seed_000_pass(messages, retention=500):
    last = max((i for i, m in enumerate(messages) if has_results(m)), default=-1)
    n = 0
    for i, msg in enumerate(messages):
        if i == last or not has_results(msg):
            continue
        for block in msg["content"]:
            if block.get("type") != "tool_result":
                continue
            text = block.get("content")
            if isinstance(text, str) and len(text) > retention and not text.endswith(MARKER_000):
                block["content"] = text[:retention] + MARKER_000
                n += 1
    return n


def seed_002_projection(messages, names):
    out = []
    last = len(messages) - 1
    for i, msg in enumerate(messages):
        if i == last or msg.get("role") != "user" or not isinstance(msg.get("content"), list):
            out.append(msg)
            continue
        blocks = []
        for block in msg["content"]:
            if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                limit = TIERS.get(names.get(block.get("tool_use_id")), 800)
                text = block["content"]
                if len(text) > limit and not text.endswith(MARKER_002):
                    block = dict(block, content=text[:limit] + MARKER_002)
            blocks.append(block)
        out.append(dict(msg, content=blocks))
    return out


def main():
    with open(sys.argv[1]) as f:
        messages = json.load(f)
    names = {}
    for m in messages:
        if m.get("role") == "assistant" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    names[b["id"]] = b["name"]

    work = copy.deepcopy(messages)
    t = time.perf_counter()
    first = seed_000_pass(work)
    first_pass = time.perf_counter() - t
    rounds = 20
    t = time.perf_counter()
    for _ in range(rounds):
        seed_000_pass(work)
    steady = (time.perf_counter() - t) / rounds

    rounds = 10
    t = time.perf_counter()
    for _ in range(rounds):
        seed_002_projection(messages, names)
    projection = (time.perf_counter() - t) / rounds

    print(json.dumps({
        "python": sys.version.split()[0],
        "messages": len(messages),
        "seed_000_first_pass_ms": first_pass * 1e3,
        "seed_000_compacted": first,
        "seed_000_per_turn_ms": steady * 1e3,
        "seed_002_projection_per_request_ms": projection * 1e3,
    }))


if __name__ == "__main__":
    main()
