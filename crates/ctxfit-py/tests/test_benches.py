"""The Python benches run as documented (their figures are in docs/benchmarks.md; here only that they work and
measure what they say)."""

import json
import subprocess
import sys

from conftest import REPO


def test_the_real_session_bench_times_every_later_request(corpus):
    folder = corpus / "sessions" / "claude-code-attio"
    done = subprocess.run(
        [sys.executable, str(REPO / "benches/python/real_sessions.py"), str(folder), "--min-messages", "100"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["windows"] >= 1
    s = out["all"]
    # the later half of each window's requests, each timed once, beside seed 002's pass on the same requests
    assert s["requests"] >= 10 * out["windows"]
    assert 0 < s["p50_us"] <= s["p90_us"] <= s["max_us"]
    assert 0 <= s["within_budget"] <= 1 and s["p50_new_kb"] > 0
    assert s["seed_002_p50_us"] > 0 and s["ratio_seed_002"] > 0


def test_the_real_session_bench_times_another_profile_and_a_call_with_nothing_new(corpus):
    folder = corpus / "sessions" / "claude-code-attio"
    done = subprocess.run(
        [sys.executable, str(REPO / "benches/python/real_sessions.py"), str(folder), "--profile", "seed-000",
         "--again"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["profile"] == "seed-000"
    s = out["all"]
    assert s["requests"] >= 10 * out["windows"]
    assert 0 < s["again_p50_us"] and 0 < s["p50_us"]
