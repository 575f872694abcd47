"""The real Claude Code and Codex CLI, from the npm registry, through `ctxfit proxy`, against a scripted upstream.

Everything is on 127.0.0.1 (`.ci/run` runs this file in a network namespace with nothing but loopback): the
scripted model (`loopback.py`) asks each client to read a large file, run a long and a short shell command and edit
the file, then answers; a relay between the client and the proxy keeps the client's own bytes and the proxy's
answers. Each client runs the session twice, once with a pause longer than the proxy's `--cache-ttl` in it.

`.ci/run` installs the clients (`npm install` into `target/npm-clients`, versions pinned there) and sets
`CTXFIT_REQUIRE_CLIENTS=1`; elsewhere the tests skip when the clients are not installed.
"""

import base64
import json
import os
import re
import ssl
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

import ctxfit
from conftest import REPO
from loopback import STREAM_GAP, Relay, ScriptedAnthropic, ScriptedResponses, serve
from test_proxy import ctxfit_binary

CLIENTS = Path(os.environ.get("CTXFIT_CLIENTS", REPO / "target" / "npm-clients"))
# seconds: the proxy's --cache-ttl — far above a client's gap between two requests of the steady run, even on a
# busy machine (about a second here; once, under CI's load, Codex CLI took over ten after its last command), so that
# only the pause reads as an expired cache
CACHE_TTL = 30
PAUSE = 34  # seconds the upstream waits before one answer: longer than the cache lives
SECRET = "sk-test-secret-of-the-client"


def client(name):
    exe = CLIENTS / "node_modules" / ".bin" / name
    if not exe.exists():
        if os.environ.get("CTXFIT_REQUIRE_CLIENTS") == "1":
            pytest.fail(f"{exe} is not installed (.ci/run installs it with npm)")
        pytest.skip(f"{name} is not installed in {CLIENTS} (npm install --prefix {CLIENTS} …, as .ci/run does)")
    return str(exe)


def project(tmp_path):
    """A working folder with one large source file: 1,500 small functions."""
    (tmp_path / "src").mkdir()
    big = tmp_path / "src" / "big.py"
    big.write_text("\n".join(f"def handler_{i}(request):\n    return respond(request, code={i})\n" for i in range(1500)))
    return big


# an origin where nothing listens: the other API's upstream, which no request of the client may reach
NOWHERE = "http://127.0.0.1:9"


def start_proxy(anthropic, openai, *more):
    p = subprocess.Popen(
        [str(ctxfit_binary()), "proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", anthropic,
         "--upstream-openai", openai, "--cache-ttl", str(CACHE_TTL), *more],
        stderr=subprocess.PIPE, text=True,
    )
    m = re.search(r"listening on https?://127\.0\.0\.1:(\d+)", p.stderr.readline())
    assert m, "the proxy did not start"
    lines = []
    threading.Thread(target=lambda: lines.extend(p.stderr), daemon=True).start()
    return p, int(m.group(1)), lines


def run_clients(handler, script, commands, env, cwd, prepare=None, pause_before=None, sub_script=()):
    """Runs of a real client, one after the other, through one proxy and scripted upstream: each run's outcome,
    the relay's exchanges of them all (the client's requests and the proxy's answers) and the bodies the upstream
    received, in order. `{origin}` in a command and the environment is the relay's origin; `prepare(origin)`
    writes what else needs it."""
    handler.received = []
    handler.heads = []
    handler.script = script
    handler.sub_script = list(sub_script)
    handler.pause_before = pause_before
    httpd, upstream = serve(handler)
    anthropic = handler is ScriptedAnthropic
    proxy, port, lines = start_proxy(upstream if anthropic else NOWHERE, NOWHERE if anthropic else upstream)
    relay = Relay(port)
    try:
        if prepare:
            prepare(relay.origin)
        outs = [subprocess.run([c.replace("{origin}", relay.origin) for c in command], cwd=cwd,
                               env={k: v.replace("{origin}", relay.origin) for k, v in env.items()},
                               capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
                for command in commands]
        handler.proxy_stats = settled_stats(port)
    finally:
        proxy.terminate()
        proxy.wait(10)
        relay.close()
        httpd.shutdown()
        httpd.server_close()
    # nothing the proxy printed holds the client's key
    assert not any(SECRET in line for line in lines), lines
    return outs, relay.exchanges(), list(handler.received)


def settled_stats(port):
    """What the proxy counted per API, its own figures and the usage the upstream reported, once the clients are
    done: read until two reads a tenth of a second apart agree (an answer's usage is counted as its last bytes
    pass, which a client that has read its last event need not wait for)."""
    last = None
    for _ in range(50):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ctxfit/stats", timeout=10) as answer:
            now = json.load(answer)
        if last is not None and now["apis"] == last["apis"]:
            return now
        last = now
        time.sleep(0.1)
    return last


def run_session(handler, script, pause_before, command, env, cwd, prepare=None, sub_script=()):
    """One scripted session of a real client through the proxy (`run_clients`, one run)."""
    outs, exchanges, received = run_clients(handler, script, [command], env, cwd, prepare, pause_before, sub_script)
    return outs[0], exchanges, received


def array_items(raw, key):
    """The raw text of each element of the top-level array `key` of a JSON object, as it was written."""
    text = raw.decode()
    decoder = json.JSONDecoder()
    ws = re.compile(r"[ \t\n\r]*")
    i = ws.match(text, 1).end()
    while text[i] != "}":
        name, i = decoder.raw_decode(text, i)
        i = ws.match(text, ws.match(text, i).end() + 1).end()  # past the colon
        if name == key:
            items, i = [], ws.match(text, i + 1).end()
            while text[i] != "]":
                _, end = decoder.raw_decode(text, i)
                items.append(text[i:end])
                i = ws.match(text, end).end()
                if text[i] == ",":
                    i = ws.match(text, i + 1).end()
            return items
        _, i = decoder.raw_decode(text, i)
        i = ws.match(text, i).end()
        if text[i] == ",":
            i = ws.match(text, i + 1).end()
    return None


def check_forwarding(main, received, key):
    """What the proxy forwarded of each request is the client's own bytes, but for the tool results it cut."""
    assert len(main) == len(received)
    for exchange, (_, forwarded, _) in zip(main, received):
        sent, out = array_items(exchange["body"], key), array_items(forwarded, key)
        assert len(sent) == len(out)
        for a, b in zip(sent, out):
            if json.loads(a) == json.loads(b):
                assert a == b, "an untouched message was not forwarded byte for byte"
            else:
                # only a result changed: the same message otherwise
                a, b = json.loads(a), json.loads(b)
                assert a.get("role") == b.get("role") and a.get("type") == b.get("type")
                assert "tool_result" in json.dumps(a) or a.get("type") == "function_call_output", a


def main_requests(exchanges, path):
    """The session's model requests, as the client sent them: those to the API's path that offer tools."""
    return [e for e in exchanges if e["method"] == "POST" and e["path"].split("?")[0] == path
            and '"tools"' in e["body"].decode()]


def upstream_requests(received, path):
    """The session's model requests as the upstream received them: (path, raw body, parsed body)."""
    return [r for r in received if r[0].split("?")[0] == path and "tools" in r[2]]


def check_provider_usage(handler, exchanges, path, api):
    """The usage the upstream reported for every request the proxy compacted (its answers stream it: Anthropic's
    in its first event, the Responses API's in its last), counted in the proxy's stats: 1,000 input tokens each,
    nothing from the cache."""
    answered = [e for e in exchanges if e["method"] == "POST" and e["path"].split("?")[0] == path
                and e["status"] == 200]
    provider = handler.proxy_stats["apis"][api]["provider"]
    assert provider == {"answers": len(answered), "input_tokens": 1000 * len(answered), "cache_read_tokens": 0,
                        "cache_write_tokens": 0}, (provider, len(answered))


def check_session(out, exchanges, received, main_path, key):
    """One conversation, streamed as it came, forwarded as sent; the tokens the proxy forwarded in all."""
    assert out.returncode == 0, out.stderr[-3000:]
    main = main_requests(exchanges, main_path)
    assert len(main) == 5, [(e["method"], e["path"]) for e in exchanges]
    # every request of the session was one conversation to the proxy
    conversations = {e["headers"].get("x-ctxfit-conversation") for e in main}
    assert len(conversations) == 1 and None not in conversations, [(e["status"], sorted(k for k in e["headers"] if k.startswith("x-ctxfit")), e["headers"].get("x-ctxfit-cache-expired"), len(e["body"])) for e in main]
    # the answers were relayed as they came: their first bytes reached the client before the upstream sent the rest
    for e in main:
        assert e["status"] == 200
        assert e["last"] - e["first"] >= 0.8 * STREAM_GAP, "the proxy held a streamed answer back"
    upstream_main = upstream_requests(received, main_path)
    check_forwarding(main, upstream_main, key)
    # the client's request reads as its API's format with nothing to warn of, even under --strict
    strict = subprocess.run([str(ctxfit_binary()), "stats", "-", "--strict"], input=main[-1]["body"],
                            capture_output=True)
    assert strict.returncode == 0 and b"warning" not in strict.stdout + strict.stderr, strict.stderr
    # per request: the tokens forwarded, the expiry flag, and seconds since the answer before it began (at the relay)
    return [(int(e["headers"]["x-ctxfit-tokens-after"]), e["headers"].get("x-ctxfit-cache-expired"),
             round(e["first"] - before["first"], 2) if k else None)
            for k, (before, e) in enumerate(zip([main[0], *main], main))]


def tool_results(messages):
    """Each tool result of a list of messages, Anthropic's or the Responses API's, as {call id: its text}."""
    results = {}
    for m in messages:
        if m.get("type") == "function_call_output":
            results[m["call_id"]] = m["output"]
        for block in m.get("content") if isinstance(m.get("content"), list) else []:
            if block.get("type") == "tool_result":
                content = block.get("content")
                results[block["tool_use_id"]] = content if isinstance(content, str) else "".join(
                    b.get("text", "") for b in content or [])
    return results


def check_own_log(logs, main, key, source, calls, unlogged=0):
    """The log the client itself wrote of the session imports as one session of `source`: its tool calls in
    order, each result the text the client sent, and the replay sees as many model requests as the client made
    (but the first `unlogged`, of which the log holds nothing)."""
    assert len(logs) == 1, logs
    sessions = ctxfit.load_sessions(logs[0])
    assert [s["source"] for s in sessions] == [source], [(s["source"], s["name"]) for s in sessions]
    messages = sessions[0]["messages"]
    named = [b for m in messages for b in ([m] if m.get("type") == "function_call" else
             m.get("content") if isinstance(m.get("content"), list) else []) if b.get("type") in ("tool_use", "function_call")]
    assert [(c["name"], c.get("input") or json.loads(c["arguments"])) for c in named] == calls
    sent = tool_results(json.loads(main[-1]["body"])[key])
    assert len(sent) == len(calls) and tool_results(messages) == sent
    report = ctxfit.replay(logs[0], ["none"])
    assert report["policies"][0]["turns"] == len(main) - unlogged, report["policies"][0]
    return report["policies"][0]


def check_pause(steady, paused, step):
    """The proxy saw the pause: the request after it, and no other, found the cache expired."""
    assert [expired for _, expired, _ in steady] == [None] * len(steady), steady
    assert [expired for _, expired, _ in paused] == [("1" if k == step + 1 else None) for k in range(len(paused))], paused
    return [tokens for tokens, _, _ in steady], [tokens for tokens, _, _ in paused]


CLAUDE_ENV = {"ANTHROPIC_BASE_URL": "{origin}", "ANTHROPIC_API_KEY": SECRET, "DISABLE_TELEMETRY": "1",
              "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def fix_the_last_handler(big):
    """Claude Code's scripted session: it reads the large file, runs a long and a short shell command, edits the
    file and finishes."""
    return [
        ("Read", {"file_path": str(big)}),
        ("Bash", {"command": "seq 1 3000", "description": "Count to 3000"}),
        ("Bash", {"command": "grep -n 'code=7)' src/big.py", "description": "Find handler 7"}),
        ("Edit", {"file_path": str(big), "old_string": "code=1499)", "new_string": "code=-1)"}),
        "All done.",
    ]


FIX_OPTIONS = ["--output-format", "json", "--allowedTools", "Read,Edit,Bash(seq:*),Bash(grep:*)",
               "--permission-mode", "acceptEdits"]


def test_claude_code_through_the_proxy(tmp_path):
    claude = client("claude")
    runs = {}
    for pause in (None, (1, PAUSE)):
        cwd = tmp_path / ("paused" if pause else "steady")
        cwd.mkdir()
        big = project(cwd)
        script = fix_the_last_handler(big)
        env = {**os.environ, "HOME": str(cwd / "home"), **CLAUDE_ENV}
        command = [claude, "-p", "Fix the last handler", *FIX_OPTIONS]
        out, exchanges, received = run_session(ScriptedAnthropic, script, pause, command, env, cwd)
        result = json.loads(out.stdout)
        assert (result["is_error"], result["result"], result["num_turns"]) == (False, "All done.", 5), result
        assert big.read_text().endswith("code=-1)\n"), "the edit did not land"
        # Claude Code 2.1.197's first request of all is a HEAD / that names no API (later versions send none): the
        # proxy answers it (the OpenAI upstream, where nothing listens, would have made it a 502); every other
        # request went to Anthropic's
        assert [e["status"] for e in exchanges if e["method"] == "HEAD"] in ([], [200])
        assert all(e["status"] == 200 for e in exchanges), [(e["method"], e["path"], e["status"]) for e in exchanges]
        runs[bool(pause)] = check_session(out, exchanges, received, "/v1/messages", "messages")
        main = main_requests(exchanges, "/v1/messages")
        calls = [(name, dict(args, replace_all=False) if name == "Edit" else args) for name, args in script[:-1]]
        row = check_own_log(sorted((cwd / "home" / ".claude" / "projects").glob("*/*.jsonl")), main, "messages",
                            "claude-code", calls)
        # the log records each request's usage, which the replay reads as what was billed
        assert row["billed"]["requests"] == len(main), row
        check_provider_usage(ScriptedAnthropic, exchanges, "/v1/messages", "anthropic-messages")
    # the pause was seen, and the cut that waited for its cache write to pay was made when the cache had expired
    steady, paused = check_pause(runs[False], runs[True], 1)
    assert paused[:2] == pytest.approx(steady[:2], abs=50)
    assert sum(paused[2:]) < sum(steady[2:]) - 5000, (steady, paused)


def test_claude_code_that_outgrows_its_models_window_never_sees_it_refused(tmp_path):
    """The model's window is set below the request after the long shell command: the provider refuses the next
    one as too long. The proxy learns the window from the refusal, cuts the stale file read and shell output to
    fit it, and sends the request again: Claude Code sees every answer succeed and finishes its task."""
    claude = client("claude")
    big = project(tmp_path)
    script = fix_the_last_handler(big)
    env = {**os.environ, "HOME": str(tmp_path / "home"), **CLAUDE_ENV}
    # the window ten thousand tokens below the request after the long shell command
    ScriptedAnthropic.window_at, ScriptedAnthropic.window, ScriptedAnthropic.refused = (2, -10_000), None, []
    try:
        out, exchanges, received = run_session(ScriptedAnthropic, script, None,
                                                [claude, "-p", "Fix the last handler", *FIX_OPTIONS], env, tmp_path)
    finally:
        ScriptedAnthropic.window_at = None
    result = json.loads(out.stdout)
    assert (result["is_error"], result["result"], result["num_turns"]) == (False, "All done.", 5), result
    assert big.read_text().endswith("code=-1)\n"), "the edit did not land"
    assert all(e["status"] == 200 for e in exchanges), [(e["method"], e["path"], e["status"]) for e in exchanges]
    # one request refused (the one that taught the window) and sent again within it; the rest within it at once
    window = ScriptedAnthropic.window
    main = [len(raw) // 4 for path, raw, body in received if len(body.get("tools", [])) > 5]
    assert len(ScriptedAnthropic.refused) == 1, (window, main)
    assert ScriptedAnthropic.proxy_stats["apis"]["anthropic-messages"]["window_retries"] == 1
    after = main[main.index(ScriptedAnthropic.refused[0]) + 1:]
    assert after and all(tokens <= window for tokens in after), (window, main)


def test_claude_code_at_an_anthropic_compatible_endpoint_under_a_path_of_its_own(tmp_path):
    """docs/proxy.md: a provider's Anthropic-compatible endpoint serves the API under a path of its own
    (`https://…/api/anthropic`); the path goes in Claude Code's `ANTHROPIC_BASE_URL`, and the proxy compacts the
    session and sends each request on to that path."""
    claude = client("claude")
    big = project(tmp_path)
    script = fix_the_last_handler(big)
    env = {**os.environ, "HOME": str(tmp_path / "home"), **CLAUDE_ENV, "ANTHROPIC_BASE_URL": "{origin}/api/anthropic"}
    command = [claude, "-p", "Fix the last handler", *FIX_OPTIONS]
    ScriptedAnthropic.base = "/api/anthropic"
    try:
        out, exchanges, received = run_session(ScriptedAnthropic, script, None, command, env, tmp_path)
    finally:
        ScriptedAnthropic.base = ""
    result = json.loads(out.stdout)
    assert (result["is_error"], result["result"], result["num_turns"]) == (False, "All done.", 5), result
    assert big.read_text().endswith("code=-1)\n"), "the edit did not land"
    tokens = check_session(out, exchanges, received, "/api/anthropic/v1/messages", "messages")
    # compacted: the long shell output went stale and was cut, as at the API's own path
    sent = [int(e["headers"]["x-ctxfit-tokens-before"]) for e in main_requests(exchanges, "/api/anthropic/v1/messages")]
    assert sum(t for t, _, _ in tokens) < sum(sent), (tokens, sent)
    assert all(path.startswith("/api/anthropic/") for path, _, _ in received), [path for path, _, _ in received]


def test_claude_code_signed_in_with_a_subscription_through_the_proxy(tmp_path):
    """docs/proxy.md: Claude Code signed in with a Claude plan (`/login`, OAuth, no API key), its traffic besides
    the model's left on as a user has it, needs nothing more than `ANTHROPIC_BASE_URL` either. Its token goes
    upstream as the client sent it, in `Authorization`, with the beta header that goes with it; its reachability
    check reaches Anthropic's upstream; the session is one conversation, forwarded as sent but for the cuts; the
    proxy prints no token."""
    claude = client("claude")
    big = project(tmp_path)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    # what `/login` leaves on Linux: tokens that no server has issued, expiring in 2100, so never refreshed
    token = f"sk-ant-oat01-{SECRET}"
    (home / ".claude" / ".credentials.json").write_text(json.dumps({"claudeAiOauth": {
        "accessToken": token, "refreshToken": "sk-ant-ort01-never-used", "expiresAt": 4102444800000,
        "scopes": ["user:inference", "user:profile"], "subscriptionType": "max"}}))
    script = fix_the_last_handler(big)
    # as a user runs it: its traffic besides the model's not turned off (it checks the API is reachable first)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_") and k != "CLAUDE_CODE_OAUTH_TOKEN"}
    env.update({k: v for k, v in CLAUDE_ENV.items()
                if k not in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")}, HOME=str(home))
    command = [claude, "-p", "Fix the last handler", *FIX_OPTIONS]
    out, exchanges, received = run_session(ScriptedAnthropic, script, None, command, env, tmp_path)
    result = json.loads(out.stdout)
    assert (result["is_error"], result["result"], result["num_turns"]) == (False, "All done.", 5), result
    assert big.read_text().endswith("code=-1)\n"), "the edit did not land"
    check_session(out, exchanges, received, "/v1/messages", "messages")
    # every request reached Anthropic's upstream — Claude Code 2.1.332's `HEAD /api/hello`, which names no API, too
    # (the OpenAI upstream, where nothing listens, would have made it a 502)
    assert all(e["status"] == 200 for e in exchanges), [(e["method"], e["path"], e["status"]) for e in exchanges]
    # the client authenticated with its token, and the upstream received exactly what the client sent for it
    def credentials(headers):
        return headers.get("authorization"), headers.get("x-api-key"), headers.get("anthropic-beta")

    sent = sorted(credentials(e["sent"]) for e in exchanges if e["method"] == "POST")
    assert sent == sorted(credentials(h) for h in ScriptedAnthropic.heads) and sent, (sent, ScriptedAnthropic.heads)
    for authorization, api_key, beta in sent:
        assert (authorization, api_key) == (f"Bearer {token}", None) and "oauth" in (beta or ""), beta
    assert ScriptedAnthropic.proxy_stats["conversations"] == 1, ScriptedAnthropic.proxy_stats


def sub_agent_session(tmp_path, background, pause=None):
    """Claude Code's main conversation reads a file, starts a sub-agent (`Agent`) that greps and reads, then runs a
    shell command; the sub-agent in the foreground (the main conversation waits for it) or in the background
    (Claude Code 2.1.332's default: both conversations go on at once, over two connections). Checks that the
    run succeeded and that the proxy kept the two conversations apart; returns the run's model requests, what
    the upstream received, and whether each request is the sub-agent's."""
    claude = client("claude")
    big = project(tmp_path)
    agent = {"description": "Find handler 7", "prompt": "SUBTASK: find where handler 7 returns",
             "subagent_type": "general-purpose", "run_in_background": background}
    script = [("Read", {"file_path": str(big)}), ("Agent", agent),
              ("Bash", {"command": "seq 1 3000", "description": "Count to 3000"}), "All done."]
    sub_script = ["SUBTASK", ("Bash", {"command": "grep -n 'code=7)' src/big.py", "description": "Find handler 7"}),
                  ("Read", {"file_path": str(big)}), "Handler 7 returns at line 23."]
    env = {**os.environ, "HOME": str(tmp_path / "home"), **CLAUDE_ENV}
    command = [claude, "-p", "Find handler 7 with a sub-agent", "--output-format", "json",
               "--allowedTools", "Read,Agent,Bash(seq:*),Bash(grep:*)", "--permission-mode", "acceptEdits"]
    out, exchanges, received = run_session(ScriptedAnthropic, script, pause, command, env, tmp_path,
                                           sub_script=sub_script)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert (result["is_error"], result["result"]) == (False, "All done."), result
    requests = main_requests(exchanges, "/v1/messages")
    assert all(e["status"] == 200 for e in requests), [e["status"] for e in requests]
    is_sub = ["SUBTASK" in json.dumps(json.loads(e["body"])["messages"][0]) for e in requests]
    # the main conversation is one conversation to the proxy, the sub-agent's another
    ids = [e["headers"]["x-ctxfit-conversation"] for e in requests]
    main_ids = {i for i, s in zip(ids, is_sub) if not s}
    sub_ids = {i for i, s in zip(ids, is_sub) if s}
    assert len(main_ids) == 1 and len(sub_ids) == 1 and main_ids != sub_ids, (ids, is_sub)
    return requests, received, is_sub


def check_sub_agent_logs(tmp_path):
    """Claude Code's logs of the session: the main conversation and the sub-agent's, each its own session."""
    projects = tmp_path / "home" / ".claude" / "projects"
    sessions = ctxfit.load_sessions(next(projects.glob("*/*.jsonl")))
    assert len(sessions) == 1
    subs = sorted(projects.glob("*/*/subagents/agent-*.jsonl"))
    assert len(subs) == 1, sorted(str(p) for p in projects.rglob("*"))
    sub = ctxfit.load_sessions(subs[0])
    assert len(sub) == 1
    calls = [b["name"] for m in sub[0]["messages"] if isinstance(m["content"], list) for b in m["content"]
             if b["type"] == "tool_use"]
    assert calls == ["Bash", "Read"]
    report = ctxfit.replay(str(projects), ["none"])
    assert report["policies"][0]["sessions"] == 2, report["policies"][0]
    return report["policies"][0]


def test_claude_code_with_a_sub_agent(tmp_path):
    """A sub-agent's requests, between two of the main conversation's, are a conversation of their own: the main
    one goes on as it was (one conversation, its cut kept), and the logs import as both."""
    # the main conversation's answer that starts the sub-agent waits longer than the cache lives: its next
    # request finds the cache expired and cuts its file read at once
    requests, received, is_sub = sub_agent_session(tmp_path, False, (1, PAUSE))
    # the main conversation's four requests, and the sub-agent's three between its second and third
    assert is_sub == [False, False, True, True, True, False, False], is_sub
    # each conversation forwarded as sent but for the results it cut; the main one went on where it was: the
    # request after the sub-agent, and no other, found its cache expired (the sub-agent's requests between did
    # not count as the main conversation's), cut the file read, and the next request kept the cut
    upstream = upstream_requests(received, "/v1/messages")
    check_forwarding(requests, upstream, "messages")
    expired = [e["headers"].get("x-ctxfit-cache-expired") for e in requests]
    assert expired == [None, None, None, None, None, "1", None], expired
    cut = [int(e["headers"]["x-ctxfit-tokens-before"]) - int(e["headers"]["x-ctxfit-tokens-after"]) for e in requests]
    assert cut[:5] == [0] * 5 and cut[5] > 5000 and cut[6] >= cut[5], cut
    assert check_sub_agent_logs(tmp_path)["turns"] == 7


def test_claude_code_with_a_sub_agent_in_the_background(tmp_path):
    """A sub-agent run in the background (Claude Code 2.1.332's default): its requests and the main conversation's
    go on at once, over two connections, each conversation its own — and the proxy keeps them apart."""
    requests, received, is_sub = sub_agent_session(tmp_path, True)
    # the main conversation: the prompt, the file read, the agent started, the shell command, and the agent's
    # notification (with the shell command's, or after it: as the two conversations' timing falls); the
    # sub-agent's: its task, its grep, its read
    sizes = {s: sorted(len(json.loads(e["body"])["messages"]) for e, t in zip(requests, is_sub) if t == s)
             for s in (False, True)}
    assert sizes[True] == [2, 5, 7] and sizes[False][:3] == [2, 4, 6] and len(sizes[False]) in (4, 5), sizes
    assert [c["requests"] for c in ScriptedAnthropic.proxy_stats["per_conversation"]] == [len(sizes[False]), 3]
    # forwarded as sent but for the cuts, each request beside what the upstream received of it
    def shape(body):
        return len(body.get("tools", [])), len(body["messages"])

    upstream = sorted(upstream_requests(received, "/v1/messages"), key=lambda r: shape(r[2]))
    check_forwarding(sorted(requests, key=lambda e: shape(json.loads(e["body"]))), upstream, "messages")
    assert check_sub_agent_logs(tmp_path)["turns"] == len(sizes[False]) + 3


def run_through_proxy(handler, script, commands, env, cwd, prepare=None):
    """Runs of a real client (one, or a session and then the same session continued) that each succeed: their
    outcomes and the relay's exchanges of them all (`run_clients`)."""
    outs, exchanges, _ = run_clients(handler, script, commands, env, cwd, prepare)
    for out in outs:
        assert out.returncode == 0, out.stderr[-3000:]
    return outs, exchanges


def check_continued(exchanges, path, key, received):
    """The runs' requests: the first run's three, then one of the continued run that holds all of the first run
    and the new prompt — one conversation to the proxy, forwarded as the client sent it but for the cuts."""
    requests = main_requests(exchanges, path)
    sizes = [len(json.loads(e["body"])[key]) for e in requests]
    assert len(sizes) == 4 and sizes == sorted(sizes) and sizes[3] > sizes[2], sizes
    assert len({e["headers"]["x-ctxfit-conversation"] for e in requests}) == 1, [e["headers"] for e in requests]
    upstream = upstream_requests(received, path)
    check_forwarding(requests, upstream, key)


def test_claude_code_continued_is_one_conversation(tmp_path):
    """`claude --continue` sends the session again with a new prompt: the proxy goes on with the conversation it
    knows (the same model named, so the same system prompt), as it would with the next request of one run."""
    claude = client("claude")
    big = project(tmp_path)
    script = [("Read", {"file_path": str(big)}), ("Bash", {"command": "seq 1 3000", "description": "Count"}),
              "All done."]
    env = {**os.environ, "HOME": str(tmp_path / "home"), **CLAUDE_ENV}
    common = ["--output-format", "json", "--model", "claude-opus-4-8", "--allowedTools", "Read,Bash(seq:*)"]
    runs = [[claude, "-p", "Count", *common], [claude, "-p", "Count again", "--continue", *common]]
    outs, exchanges = run_through_proxy(ScriptedAnthropic, script, runs, env, tmp_path)
    assert [json.loads(out.stdout)["result"] for out in outs] == ["All done."] * 2
    check_continued(exchanges, "/v1/messages", "messages", ScriptedAnthropic.received)


def codex_provider(home):
    """docs/proxy.md: Codex CLI reaches the proxy through a provider of its own, written into `home`."""
    def write(origin):
        (home / "config.toml").write_text(
            f'model = "gpt-5.1-codex"\nmodel_provider = "ctxfit"\n\n[model_providers.ctxfit]\n'
            f'name = "ctxfit proxy"\nbase_url = "{origin}/v1"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
        )
    return write


def test_codex_cli_resumed_is_one_conversation(tmp_path):
    """`codex exec resume --last` sends the session again with a new prompt: one conversation to the proxy."""
    codex = client("codex")
    project(tmp_path)
    home = tmp_path / "codex-home"
    home.mkdir()
    script = [("exec_command", {"cmd": "cat -n src/big.py"}), ("exec_command", {"cmd": "seq 1 3000"}), "All done."]
    env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": SECRET}
    common = ["exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--json"]
    runs = [[codex, *common, "Count"], [codex, *common, "resume", "--last", "Count again"]]
    outs, exchanges = run_through_proxy(ScriptedResponses, script, runs, env, tmp_path, codex_provider(home))
    for out in outs:
        events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        assert [e["item"]["text"] for e in events if e.get("type") == "item.completed"
                and e["item"].get("type") == "agent_message"] == ["All done."], out.stdout[-2000:]
    check_continued(exchanges, "/v1/responses", "input", ScriptedResponses.received)


def test_claude_code_parallel_calls(tmp_path):
    """Two tool calls in one answer: Claude Code runs both and sends both results in one message; the proxy
    forwards them as sent, and the log — which writes each block of the answer on a line of its own — imports as
    the one answer and the one message of results the client sent."""
    claude = client("claude")
    big = project(tmp_path)
    script = [[("Bash", {"command": "seq 1 3000", "description": "Count"}),
               ("Read", {"file_path": str(big)})], "All done."]
    env = {**os.environ, "HOME": str(tmp_path / "home"), **CLAUDE_ENV}
    command = [claude, "-p", "Count and read", "--output-format", "json", "--allowedTools", "Read,Bash(seq:*)"]
    outs, exchanges = run_through_proxy(ScriptedAnthropic, script, [command], env, tmp_path)
    assert json.loads(outs[0].stdout)["result"] == "All done."
    requests = main_requests(exchanges, "/v1/messages")
    assert len(requests) == 2
    last = json.loads(requests[-1]["body"])["messages"]
    results = [b["tool_use_id"] for b in last[-1]["content"] if b.get("type") == "tool_result"]
    assert sorted(results) == ["toolu_00", "toolu_00a"], last[-1]
    upstream = upstream_requests(ScriptedAnthropic.received, "/v1/messages")
    check_forwarding(requests, upstream, "messages")
    logs = sorted((tmp_path / "home" / ".claude" / "projects").glob("*/*.jsonl"))
    check_own_log(logs, requests, "messages", "claude-code", [tuple(c) for c in script[0]])
    messages = ctxfit.load_sessions(logs[0])[0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"], messages


def test_claude_code_stream_json_imports(tmp_path):
    """What `claude -p --output-format stream-json` prints (what the GitHub Action logs) imports as the session:
    the calls in order, each result the text the client sent."""
    claude = client("claude")
    big = project(tmp_path)
    script = [("Read", {"file_path": str(big)}), ("Bash", {"command": "seq 1 3000", "description": "Count"}),
              "All done."]
    env = {**os.environ, "HOME": str(tmp_path / "home"), **CLAUDE_ENV}
    command = [claude, "-p", "Count", "--output-format", "stream-json", "--verbose",
               "--allowedTools", "Read,Bash(seq:*)"]
    outs, exchanges = run_through_proxy(ScriptedAnthropic, script, [command], env, tmp_path)
    printed = tmp_path / "printed.jsonl"
    printed.write_text(outs[0].stdout)
    requests = main_requests(exchanges, "/v1/messages")
    # the printed stream leaves out the user's prompt: the first request, made of it alone, is not replayed
    row = check_own_log([printed], requests, "messages", "claude-code", [tuple(c) for c in script[:-1]], unlogged=1)
    assert row["sessions"] == 1


def test_codex_cli_parallel_calls(tmp_path):
    """Two function calls in one response: Codex CLI runs both and sends both outputs; the proxy forwards them as
    sent, and its rollout imports with both calls and the outputs it sent."""
    codex = client("codex")
    project(tmp_path)
    home = tmp_path / "codex-home"
    home.mkdir()
    script = [[("exec_command", {"cmd": "seq 1 3000"}), ("exec_command", {"cmd": "cat -n src/big.py"})],
              "All done."]
    env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": SECRET}
    command = [codex, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--json", "Count"]
    outs, exchanges = run_through_proxy(ScriptedResponses, script, [command], env, tmp_path, codex_provider(home))
    events = [json.loads(line) for line in outs[0].stdout.splitlines() if line.startswith("{")]
    assert [e["item"]["text"] for e in events if e.get("type") == "item.completed"
            and e["item"].get("type") == "agent_message"] == ["All done."], outs[0].stdout[-2000:]
    requests = main_requests(exchanges, "/v1/responses")
    assert len(requests) == 2
    outputs = [i for i in json.loads(requests[-1]["body"])["input"] if i.get("type") == "function_call_output"]
    assert len(outputs) == 2, outputs
    upstream = upstream_requests(ScriptedResponses.received, "/v1/responses")
    check_forwarding(requests, upstream, "input")
    check_own_log(sorted((home / "sessions").glob("*/*/*/rollout-*.jsonl")), requests, "input", "codex",
                  [tuple(c) for c in script[0]])


def test_codex_cli_through_the_proxy(tmp_path):
    codex = client("codex")
    runs = {}
    for pause in (None, (1, PAUSE)):
        cwd = tmp_path / ("paused" if pause else "steady")
        cwd.mkdir()
        big = project(cwd)
        home = cwd / "codex-home"
        home.mkdir()
        script = [
            ("exec_command", {"cmd": "cat -n src/big.py"}),
            ("exec_command", {"cmd": "seq 1 3000"}),
            ("exec_command", {"cmd": "grep -n 'code=7)' src/big.py"}),
            ("exec_command", {"cmd": "sed -i 's/code=1499)/code=-1)/' src/big.py"}),
            "All done.",
        ]
        env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": SECRET}
        command = [codex, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--json",
                   "Fix the last handler"]

        out, exchanges, received = run_session(ScriptedResponses, script, pause, command, env, cwd,
                                               codex_provider(home))
        events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        messages = [e["item"]["text"] for e in events if e.get("type") == "item.completed"
                    and e["item"].get("type") == "agent_message"]
        assert messages == ["All done."], out.stdout[-2000:]
        assert big.read_text().endswith("code=-1)\n"), "the edit did not land"
        runs[bool(pause)] = check_session(out, exchanges, received, "/v1/responses", "input")
        main = main_requests(exchanges, "/v1/responses")
        check_own_log(sorted((home / "sessions").glob("*/*/*/rollout-*.jsonl")), main, "input", "codex",
                      [(name, args) for name, args in script[:-1]])
        check_provider_usage(ScriptedResponses, exchanges, "/v1/responses", "openai-responses")
    # the pause was seen (Codex's small outputs — it caps them — pay for their cuts at once: none was waiting)
    steady, paused = check_pause(runs[False], runs[True], 1)
    assert steady == pytest.approx(paused, abs=50), (steady, paused)
    assert steady[-1] < max(steady), "nothing was cut"


def test_codex_cli_that_outgrows_its_models_window_never_sees_it_refused(tmp_path):
    """Codex CLI reads four files of its own; the model's window is the request after the second read. The
    Responses API refuses the next one saying no numbers: the proxy takes the window as the last request the
    provider accepted, cuts the stale reads to fit it, and sends the request again — Codex CLI sees every answer
    succeed and finishes."""
    codex = client("codex")
    (tmp_path / "src").mkdir()
    for name in "abcd":
        (tmp_path / "src" / f"{name}.py").write_text(
            "".join(f"def {name}_{i}(request):\n    return respond(request, code={i}, part='{name}')\n" for i in range(60)))
    home = tmp_path / "codex-home"
    home.mkdir()
    script = [("exec_command", {"cmd": f"cat -n src/{name}.py"}) for name in "abcd"] + ["All done."]
    env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": SECRET}
    command = [codex, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--json",
               "Read the sources"]
    ScriptedResponses.window_at, ScriptedResponses.window, ScriptedResponses.refused = (2, 100), None, []
    try:
        out, exchanges, received = run_session(ScriptedResponses, script, None, command, env, tmp_path,
                                               codex_provider(home))
    finally:
        ScriptedResponses.window_at = None
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    messages = [e["item"]["text"] for e in events if e.get("type") == "item.completed"
                and e["item"].get("type") == "agent_message"]
    assert messages == ["All done."], out.stdout[-2000:]
    assert all(e["status"] == 200 for e in exchanges), [(e["method"], e["path"], e["status"]) for e in exchanges]
    window = ScriptedResponses.window
    main = [len(raw) // 4 for path, raw, body in received if body.get("tools")]
    assert len(ScriptedResponses.refused) == 1, (window, main)
    assert ScriptedResponses.proxy_stats["apis"]["openai-responses"]["window_retries"] == 1
    after = main[main.index(ScriptedResponses.refused[0]) + 1:]
    assert after and all(tokens <= window for tokens in after), (window, main)


def test_codex_cli_built_in_provider_tries_the_websocket_once_then_http(tmp_path):
    """Codex CLI's built-in provider pointed at the proxy (`openai_base_url`) opens the Responses API as a
    WebSocket first: the proxy refuses the upgrade at once (426), and Codex goes on over HTTP without retrying."""
    codex = client("codex")
    project(tmp_path)
    home = tmp_path / "codex-home"
    home.mkdir()
    script = [("exec_command", {"cmd": "seq 1 30"}), "All done."]
    env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": SECRET}
    command = [codex, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--json", "Count"]

    def built_in(origin):
        # docs/proxy.md: the built-in provider, its base URL set in config.toml (it does not read OPENAI_BASE_URL)
        (home / "config.toml").write_text(f'model = "gpt-5.1-codex"\nopenai_base_url = "{origin}/v1"\n')

    out, exchanges, received = run_session(ScriptedResponses, script, None, command, env, tmp_path, built_in)
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [e["item"]["text"] for e in events if e.get("type") == "item.completed"
            and e["item"].get("type") == "agent_message"] == ["All done."], out.stdout[-2000:]
    upgrades = [e for e in exchanges if e["method"] == "GET"]
    assert [(e["path"], e["status"]) for e in upgrades] == [("/v1/responses", 426)], upgrades
    posts = [e for e in exchanges if e["method"] == "POST"]
    assert len(posts) == len(received) == 2
    # the WebSocket was tried first, and once: every request after it went over HTTP
    assert exchanges.index(upgrades[0]) == 0
    assert "Reconnecting" not in out.stderr


# the test certificates of the proxy's TLS (`crates/ctxfit-proxy/tests/tls/make.sh`): a CA, and one it signed for
# 127.0.0.1
TLS = REPO / "crates" / "ctxfit-proxy" / "tests" / "tls"
ACCOUNT = "acct-ctxfit-test"


class ScriptedChatGPT(ScriptedResponses):
    """ChatGPT's backend as Codex CLI signed in with ChatGPT uses it: the account's workspace routing (no
    constraint: the base URL's own origin), then the Responses API at `/backend-api/codex/responses`; anything
    else it asks for (models, plugins, analytics) is not there."""

    received = []

    def do_GET(self):
        if self.path.startswith("/backend-api/wham/accounts/check"):
            return self.send_json(200, {"accounts": [{"id": ACCOUNT, "workspace_backend_origin": "NO_CONSTRAINT",
                                                      "account_routing_override": "NO_CONSTRAINT"}],
                                        "account_ordering": [ACCOUNT]})
        return super().do_GET()


def chatgpt_sign_in(home):
    """What `codex login` leaves for a ChatGPT account (`auth.json`), with tokens that no server has signed and
    that expire in 2100: Codex reads their claims, and never refreshes them. Returns the access token."""
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    def token(claims):
        return f'{part({"alg": "none", "typ": "JWT"})}.{part(claims)}.unsigned'

    claims = {"exp": 4102444800, "https://api.openai.com/auth": {
        "chatgpt_plan_type": "plus", "chatgpt_account_id": ACCOUNT, "chatgpt_user_id": "user-ctxfit-test"}}
    (home / "auth.json").write_text(json.dumps({
        "OPENAI_API_KEY": None,
        "tokens": {"id_token": token({"email": "test@example.com", **claims}), "access_token": token(claims),
                   "refresh_token": "never-used", "account_id": ACCOUNT},
        "last_refresh": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }))
    return token(claims)


def test_codex_cli_signed_in_with_chatgpt_through_the_proxy_over_tls(tmp_path):
    """docs/proxy.md: Codex CLI signed in with ChatGPT sends only to an `https://` base URL, and compresses each
    request with zstd. Through the proxy over TLS (its certificate's CA given to Codex), every request is inflated,
    compacted as one conversation and sent to ChatGPT's backend uncompressed; nothing goes to the other APIs."""
    codex = client("codex")
    project(tmp_path)
    home = tmp_path / "codex-home"
    home.mkdir()
    access_token = chatgpt_sign_in(home)
    ScriptedChatGPT.received = []
    ScriptedChatGPT.heads = []
    ScriptedChatGPT.script = [("exec_command", {"cmd": "seq 1 3000"}), ("exec_command", {"cmd": "seq 1 20"}),
                              "All done."]
    ScriptedChatGPT.pause_before = None
    httpd, upstream = serve(ScriptedChatGPT)
    proxy, port, lines = start_proxy(NOWHERE, NOWHERE, "--upstream-chatgpt", upstream,
                                     "--tls-cert", str(TLS / "localhost.pem"), "--tls-key", str(TLS / "localhost-key.pem"))
    origin = f"https://127.0.0.1:{port}"
    (home / "config.toml").write_text(f'model = "gpt-5.1-codex"\nopenai_base_url = "{origin}/backend-api/codex"\n'
                                      f'chatgpt_base_url = "{origin}/backend-api/"\n')
    env = {**os.environ, "CODEX_HOME": str(home), "CODEX_CA_CERTIFICATE": str(TLS / "ca.pem")}
    env.pop("OPENAI_API_KEY", None)
    try:
        out = subprocess.run([codex, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--json",
                              "Count"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
                             stdin=subprocess.DEVNULL)
        context = ssl.create_default_context(cafile=str(TLS / "ca.pem"))
        with urllib.request.urlopen(f"{origin}/ctxfit/stats", timeout=10, context=context) as answer:
            stats = json.load(answer)
    finally:
        proxy.terminate()
        proxy.wait(10)
        httpd.shutdown()
        httpd.server_close()
    assert out.returncode == 0, out.stderr[-3000:]
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [e["item"]["text"] for e in events if e.get("type") == "item.completed"
            and e["item"].get("type") == "agent_message"] == ["All done."], out.stdout[-2000:]
    # the three model requests reached ChatGPT's backend as JSON (the upstream parsed each), from one conversation
    requests = [body for path, _, body in ScriptedChatGPT.received if path == "/backend-api/codex/responses"]
    assert len(requests) == 3, [path for path, _, _ in ScriptedChatGPT.received]
    responses = stats["apis"]["openai-responses"]
    assert (responses["requests"], responses["compacted"], responses["inflated"]) == (3, 3, 3), stats
    assert stats["conversations"] == 1, stats
    # the long output, sent whole while it was the newest, went as an excerpt of its own lines once stale
    def outputs(request):
        return [i["output"] for i in request["input"] if i.get("type") == "function_call_output"]
    whole, cut = outputs(requests[1])[0], outputs(requests[2])[0]
    assert "lines omitted" in cut and len(cut) < len(whole) / 2, cut
    assert cut.splitlines()[:8] == whole.splitlines()[:8] and cut.splitlines()[-6:-2] == whole.splitlines()[-4:]
    assert responses["tokens_saved"] > 0
    # nothing the proxy printed holds the client's credentials
    assert not any(access_token in line for line in lines)
