"""The Python package `ctxfit` against the seeds' passes in pure Python, on the same history, in one run.

    cargo bench -p ctxfit-benches --bench compaction -- --test   # writes target/ctxfit-bench/history-1m.json
    pip install ./crates/ctxfit-py
    python benches/python/py_compactor.py target/ctxfit-bench/history-1m.json [path/to/ctxfit]

Per request: a `ctxfit.Compactor` that has seen the history up to its last 100 model requests is called before
each of them with the agent's growing list (what an agent loop does), against seed 000's pass and seed 002's
projection (`seed_passes.py`) on the same list. Whole session: `ctxfit.replay(path, ["smart"])` against the CLI's
`ctxfit replay path --policy smart --json`, each the best of three. Prints one JSON object.
"""

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ctxfit  # noqa: E402
import seed_passes as seeds  # noqa: E402

TIMED = 100


def request_points(messages):
    """Indices before which the agent sends a request: each assistant message."""
    return [i for i, m in enumerate(messages) if i > 0 and m.get("role") == "assistant"]


def live_per_request(messages, profile):
    points = request_points(messages)
    warm, timed = points[:-TIMED], points[-TIMED:]
    compactor = ctxfit.Compactor(profile, format="anthropic")
    history = []
    for i in warm:
        history.extend(messages[len(history) : i])
        compactor.compact(history)
    total = 0.0
    for i in timed:
        history.extend(messages[len(history) : i])
        t = time.perf_counter()
        compactor.compact(history)
        total += time.perf_counter() - t
    return total / len(timed)


def seed_000_per_request(messages):
    work = copy.deepcopy(messages)
    seeds.seed_000_pass(work)
    rounds = 20
    t = time.perf_counter()
    for _ in range(rounds):
        seeds.seed_000_pass(work)
    return (time.perf_counter() - t) / rounds


def seed_002_per_request(messages):
    names = {
        b["id"]: b["name"]
        for m in messages
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    }
    rounds = 10
    t = time.perf_counter()
    for _ in range(rounds):
        seeds.seed_002_projection(messages, names)
    return (time.perf_counter() - t) / rounds


def best_of(n, f):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    path = Path(sys.argv[1])
    cli = sys.argv[2] if len(sys.argv) > 2 else str(Path(__file__).resolve().parents[2] / "target/release/ctxfit")
    messages = json.loads(path.read_text())
    out = {"python": sys.version.split()[0], "messages": len(messages), "timed_requests": TIMED}
    out["tokens"] = ctxfit.count_tokens(messages)
    for profile in ("seed-000", "seed-002", "smart"):
        out[f"ctxfit_{profile}_per_request_ms"] = live_per_request(messages, profile) * 1e3
    out["python_seed_000_per_request_ms"] = seed_000_per_request(messages) * 1e3
    out["python_seed_002_per_request_ms"] = seed_002_per_request(messages) * 1e3
    out["ratio_seed_000"] = out["python_seed_000_per_request_ms"] / out["ctxfit_seed-000_per_request_ms"]
    out["ratio_seed_002"] = out["python_seed_002_per_request_ms"] / out["ctxfit_seed-002_per_request_ms"]
    out["replay_python_s"] = best_of(3, lambda: ctxfit.replay(path, ["smart"]))
    if os.path.exists(cli):
        out["replay_cli_s"] = best_of(
            3,
            lambda: subprocess.run(
                [cli, "replay", str(path), "--policy", "smart", "--json"], check=True, stdout=subprocess.DEVNULL
            ),
        )
        out["replay_python_over_cli"] = out["replay_python_s"] / out["replay_cli_s"]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
