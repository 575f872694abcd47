"""The Python package on real recorded sessions, request by request, against seed 002's pass in pure Python.

    pip install ./crates/ctxfit-py
    python benches/python/real_sessions.py ../shared/corpus/sessions/claude-code-entire [--min-messages 100] \
        [--profile seed-000] [--again]

For every context window of at least `--min-messages` messages in the folder: a
`ctxfit.Compactor("smart")` is called with the agent's growing list before each model request (before each run
of the model's output), exactly as an agent loop calls it; the requests of the later half of the window are timed, one call
each, with the size of the messages appended since the previous call (the new content the call converts).
Seed 002's projection in Python (`seed_passes.py`) is timed on the same requests where they are Anthropic
messages (what it reads). Prints one JSON object: the
p50 / p90 / max per request, the p50 against the budget "50 µs + 1 µs per KB of new content", the ratio to
seed 002's pass over all timed requests and over those above 100k tokens, and what building a `Compactor("smart")`
costs (once per conversation). `--profile` times another profile than `smart` (`seed-000`, which cuts nothing at
these sizes: what reading the new messages costs alone); `--again` also times a second call with the same list
(`again_p50_us`: what a call costs when nothing is new).
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ctxfit  # noqa: E402
import seed_passes as seeds  # noqa: E402


MODEL_ITEMS = {"function_call", "reasoning", "custom_tool_call", "local_shell_call", "web_search_call"}


def from_model(m):
    """An assistant message (Anthropic, OpenAI Chat) or a model's output item (Responses)."""
    return m.get("role") == "assistant" or m.get("type") in MODEL_ITEMS


def request_points(messages):
    """Where the agent sent a request: before each run of the model's output."""
    return [i for i, m in enumerate(messages) if i > 0 and from_model(m) and not from_model(messages[i - 1])]


def names_of(messages):
    return {
        b["id"]: b["name"]
        for m in messages
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    }


def time_window(messages, wire, rows, profile="smart", again=False):
    points = request_points(messages)
    half = len(points) // 2
    compactor = ctxfit.Compactor(profile, format=wire)
    history = []
    for k, i in enumerate(points):
        new = messages[len(history) : i]
        history.extend(new)
        if k < half:
            compactor.compact(history)
            continue
        new_kb = len(json.dumps(new, default=str)) / 1024
        t = time.perf_counter()
        compactor.compact(history)
        ours = time.perf_counter() - t
        tokens = compactor.last_report["tokens_before"]
        repeat = None
        if again:
            t = time.perf_counter()
            compactor.compact(history)
            repeat = (time.perf_counter() - t) * 1e6
        theirs = None
        if wire == "anthropic":  # seed 002's pass reads Anthropic messages
            names = names_of(history)
            t = time.perf_counter()
            seeds.seed_002_projection(history, names)
            theirs = (time.perf_counter() - t) * 1e6
        rows.append({"us": ours * 1e6, "new_kb": new_kb, "seed_002_us": theirs, "tokens": tokens, "again_us": repeat})


def summary(rows):
    us = sorted(r["us"] for r in rows)
    q = lambda p: us[min(len(us) - 1, int(p * len(us)))]  # noqa: E731
    budget = [50 + r["new_kb"] for r in rows]
    out = {
        "requests": len(rows),
        "p50_us": round(q(0.5), 1),
        "p90_us": round(q(0.9), 1),
        "max_us": round(us[-1], 1),
        "p50_new_kb": round(statistics.median(r["new_kb"] for r in rows), 1),
        "within_budget": round(sum(r["us"] <= b for r, b in zip(rows, budget)) / len(rows), 3),
        "p50_over_budget": round(statistics.median(r["us"] / b for r, b in zip(rows, budget)), 3),
    }
    if rows[0]["again_us"] is not None:
        out["again_p50_us"] = round(statistics.median(r["again_us"] for r in rows), 1)
    seed = [r for r in rows if r["seed_002_us"] is not None]
    if seed:
        out["seed_002_p50_us"] = round(statistics.median(r["seed_002_us"] for r in seed), 1)
        out["ratio_seed_002"] = round(sum(r["seed_002_us"] for r in seed) / sum(r["us"] for r in seed), 1)
    return out


def load(path):
    try:
        return ctxfit.load_sessions(path)
    except ValueError:  # not a session (a README, say)
        return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--min-messages", type=int, default=100)
    ap.add_argument("--profile", default="smart")
    ap.add_argument("--again", action="store_true")
    args = ap.parse_args()
    rows, windows = [], 0
    files = sorted(p for p in Path(args.folder).rglob("*") if p.is_file() and not p.name.startswith("."))
    for s in (s for f in files for s in load(f)):
        if len(s["messages"]) < args.min_messages:
            continue
        windows += 1
        time_window(s["messages"], s["format"], rows, args.profile, args.again)
    big = [r for r in rows if r["tokens"] > 100_000]
    # what a new conversation pays once: building its compactor (median of 100)
    builds = []
    for _ in range(100):
        t = time.perf_counter()
        ctxfit.Compactor("smart")
        builds.append((time.perf_counter() - t) * 1e6)
    out = {"python": sys.version.split()[0], "folder": args.folder, "profile": args.profile, "windows": windows,
           "new_compactor_us": round(statistics.median(builds), 1)}
    if rows:
        out["all"] = summary(rows)
    if big:
        out["above_100k_tokens"] = summary(big)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
