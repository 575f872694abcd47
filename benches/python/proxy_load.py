"""`ctxfit proxy` under load, against going straight to the same stand-in upstream, in one run.

    cargo build --release -p ctxfit-cli
    pip install ./crates/ctxfit-py httpx     # ctxfit loads the session; httpx is the client
    python benches/python/proxy_load.py [target/release/ctxfit] [../shared/corpus] [--state] [--moving-breakpoint]
        [--wrap-newest] [--head-of-line]

The stand-in (loopback) answers every request at once with a short stream of server-sent events.

* **Added latency**: one conversation of a real long Claude Code session, its last 50 requests (the largest about
  200,000 tokens), each sent straight to the stand-in and then through the proxy; time to the first byte of the
  streamed answer, p50 and p99 of each and of the difference, request by request.
* **Load**: 100 conversations at once (the same session's first 50 requests, each conversation's first message
  made its own), 50 streaming requests each: errors, wall time, time to first byte through the proxy, and the
  proxy's resident memory per conversation.

* **Head of line** (`--head-of-line`, instead of the two above): a conversation's 20 small requests, timed alone
  and then while other conversations' large requests (the session's last request, its tool results repeated to
  ~25 MB; four, one after the other) are compacted: each conversation has its own lock, so the small ones should
  not wait for the large ones.

With `--state`, the proxy runs with `--state` in a temporary directory (its writes are part of what is timed).
With `--moving-breakpoint`, every request is sent as Claude Code sends it: each message's content a list of blocks,
a `cache_control` breakpoint on the newest message and none on the earlier ones (it moves on every request). With
`--wrap-newest`, as the SDK examples send it: messages as the program holds them, the newest wrapped in a block list
to carry the breakpoint (a string wrapped in one request is a string again in the next). Prints one JSON object.
"""

import asyncio
import gzip
import json
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

import ctxfit

EVENTS = b"".join(
    f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
    for name, data in [
        ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                                  "content": [], "model": "m", "usage": {"input_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_stop", {"type": "message_stop"}),
    ]
)


class StandIn(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # headers and events go out in separate writes: without this, delayed acknowledgements add ~40 ms
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(EVENTS)))
        self.end_headers()
        self.wfile.write(EVENTS)

    def log_message(self, *args):
        pass


class StandInServer(ThreadingHTTPServer):
    # the proxy may open a connection per conversation at once: the listen queue holds them all (Python's default, 5)
    request_queue_size = 1024


def requests_of(messages):
    return [messages[:i] for i, m in enumerate(messages) if i > 0 and m["role"] == "assistant"]


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def ttfb(client, url, body):
    t = time.perf_counter()
    async with client.stream("POST", url, content=body, headers={"content-type": "application/json",
                                                                 "x-api-key": "k", "anthropic-version": "2023-06-01"}) as r:
        first, answer = None, b""
        async for chunk in r.aiter_raw():
            if first is None:
                first = time.perf_counter() - t
            if r.status_code != 200:
                answer += chunk
        if r.status_code != 200:
            raise RuntimeError(f"status {r.status_code}: {answer[:300].decode(errors='replace')}")
    return first


MOVING = "--moving-breakpoint" in sys.argv


def as_blocks(message):
    content = message["content"]
    return dict(message, content=[{"type": "text", "text": content}] if isinstance(content, str) else list(content))


def with_breakpoint(history):
    """Claude Code's pattern: every message's content a list of blocks, and a `cache_control` breakpoint on the
    newest message's last block, none before."""
    messages = [as_blocks(m) for m in history]
    last = messages[-1]["content"]
    last[-1] = dict(last[-1], cache_control={"type": "ephemeral"})
    return messages


WRAP = "--wrap-newest" in sys.argv


def with_newest_wrapped(history):
    """The SDK examples' pattern: messages kept as the program holds them (strings stay strings), the newest one
    wrapped in a list of blocks to carry the breakpoint — so the message a request wrapped is a string again in
    the next."""
    messages = list(history)
    last = as_blocks(messages[-1])
    last["content"][-1] = dict(last["content"][-1], cache_control={"type": "ephemeral"})
    messages[-1] = last
    return messages


def body(history, system):
    messages = with_breakpoint(history) if MOVING else with_newest_wrapped(history) if WRAP else history
    return json.dumps({"model": "m", "max_tokens": 16, "stream": True, "system": system, "messages": messages}).encode()


HEAD_OF_LINE = "--head-of-line" in sys.argv


def inflated(history, factor):
    """The history with every tool result's text repeated `factor` times (a large request of one conversation)."""
    def grow(block):
        if block.get("type") != "tool_result":
            return block
        content = block.get("content")
        if isinstance(content, str):
            return dict(block, content=content * factor)
        if isinstance(content, list):
            return dict(block, content=[dict(c, text=c["text"] * factor) if c.get("type") == "text" else c for c in content])
        return block
    return [dict(m, content=[grow(b) for b in m["content"]]) if isinstance(m["content"], list) else m for m in history]


async def head_of_line(client, base, reqs, system):
    """A small conversation's requests alone, then beside ~25 MB requests of other conversations."""
    async def smalls(label):
        small = [[dict(h[0], content=f"({label}) " + json.dumps(h[0]["content"]))] + h[1:] for h in reqs[:20]]
        return [await ttfb(client, base + "/v1/messages", body(h, system)) for h in small]

    alone = await smalls("alone")
    big_history = [dict(reqs[-1][0], content="(big) " + json.dumps(reqs[-1][0]["content"]))] + reqs[-1][1:]
    factor = max(1, 25_000_000 // len(body(big_history, system)))
    bigs = []

    async def large(k):
        # each a conversation of its own, so each is compacted whole
        history = [dict(big_history[0], content=f"(big {k}) " + json.dumps(reqs[-1][0]["content"]))] + big_history[1:]
        b = body(inflated(history, factor), system)
        t = time.perf_counter()
        await ttfb(client, base + "/v1/messages", b)
        bigs.append((len(b), time.perf_counter() - t))

    async def larges():
        for k in range(4):
            await large(k)

    # the small conversation's requests start once the first large one is in the proxy; large ones follow
    # each other while they run
    big_task = asyncio.create_task(larges())
    await asyncio.sleep(0.05)
    beside = await smalls("beside")
    await big_task
    return {"large_request_mb": bigs[0][0] / 1e6, "large_requests_s": [round(t, 3) for _, t in bigs],
            "small_alone_ms_p50_max": [percentile(alone, 50) * 1e3, max(alone) * 1e3],
            "small_beside_large_ms_p50_max": [percentile(beside, 50) * 1e3, max(beside) * 1e3],
            "small_requests": len(beside)}


async def run(exe, corpus, conversations=100, state=None):
    """The whole measurement; `conversations` at once in the load phase; `state`: the proxy's `--state` dir."""
    httpd = StandInServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{httpd.server_address[1]}"
    proxy = subprocess.Popen([exe, "proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", upstream]
                             + (["--state", state] if state else []), stderr=subprocess.PIPE, text=True)
    base = re.search(r"(http://127\.0\.0\.1:\d+)", proxy.stderr.readline()).group(1)

    # the session whose largest request is nearest 200,000 tokens
    folder = corpus / "sessions" / "claude-code-entire"
    figures = ctxfit.replay(folder, ["none"])
    peaks = {s["session"]: max((t["input_tokens"] for t in s["turns"]), default=0) for s in figures["sessions"]}
    name = min(peaks, key=lambda n: abs(peaks[n] - 200_000))
    session = ctxfit.load_sessions(name.split(" — ")[0])[0]
    reqs = requests_of(session["messages"])
    system = session["system"] or "You are a coding agent."
    out = {"session": Path(name).name, "largest_request_tokens": peaks[name], "requests_in_session": len(reqs),
           "moving_breakpoint": MOVING, "wrap_newest": WRAP}

    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=200, max_keepalive_connections=200)) as client:
        if HEAD_OF_LINE:
            out.update(await head_of_line(client, base, reqs, system))
            proxy.terminate()
            proxy.wait(10)
            httpd.shutdown()
            return out
        # added latency, request by request, one conversation
        last = reqs[-51:]
        await ttfb(client, base + "/v1/messages", body(last[0], system))  # the proxy meets it mid-way: replay
        direct, through = [], []
        for h in last[1:]:
            b = body(h, system)
            direct.append(await ttfb(client, upstream + "/v1/messages", b))
            through.append(await ttfb(client, base + "/v1/messages", b))
        added = [t - d for t, d in zip(through, direct)]
        out["request_tokens_timed"] = [ctxfit.count_tokens(last[1], system=system), ctxfit.count_tokens(last[-1], system=system)]
        for label, xs in (("direct", direct), ("proxy", through), ("added", added)):
            out[f"{label}_ttfb_ms_p50"] = percentile(xs, 50) * 1e3
            out[f"{label}_ttfb_ms_p99"] = percentile(xs, 99) * 1e3

        # load: 100 conversations × 50 streaming requests
        first50 = reqs[:50]
        rss_before = rss_kib(proxy.pid)
        errors, times = [], []

        async def conversation(c):
            for h in first50:
                h = [dict(h[0], content=f"(conversation {c}) " + json.dumps(h[0]["content"]))] + h[1:]
                try:
                    times.append(await ttfb(client, base + "/v1/messages", body(h, system)))
                except Exception as e:  # noqa: BLE001 - counted and reported
                    errors.append(repr(e))

        t = time.perf_counter()
        await asyncio.gather(*(conversation(c) for c in range(conversations)))
        out["load_wall_s"] = time.perf_counter() - t
        out["load_requests"] = len(times) + len(errors)
        out["load_errors"] = len(errors)
        out["load_error_samples"] = sorted(set(errors))[:5]
        out["load_ttfb_ms_p50"] = percentile(times, 50) * 1e3
        out["load_ttfb_ms_p99"] = percentile(times, 99) * 1e3
        stats = (await client.get(base + "/ctxfit/stats")).json()
        out["conversations"] = stats["conversations"]
        out["proxy_refused"] = stats["apis"]["anthropic-messages"]["refused"]
        out["proxy_rss_mib_before_after"] = [rss_before / 1024, rss_kib(proxy.pid) / 1024]
        out["proxy_rss_kib_per_conversation"] = (rss_kib(proxy.pid) - rss_before) / conversations
        out["tokens_in_out"] = [stats["apis"]["anthropic-messages"]["tokens_in"], stats["apis"]["anthropic-messages"]["tokens_forwarded"]]
        if state:
            out["state"] = stats["state"]
            out["state_file_mib"] = (Path(state) / "ctxfit-proxy.redb").stat().st_size / 2**20
    proxy.terminate()
    proxy.wait(10)
    httpd.shutdown()
    return out


if __name__ == "__main__":
    import tempfile

    args = [a for a in sys.argv[1:] if a not in ("--state", "--moving-breakpoint", "--head-of-line", "--wrap-newest")]
    exe = args[0] if args else "target/release/ctxfit"
    corpus = Path(args[1] if len(args) > 1 else "../shared/corpus")
    with tempfile.TemporaryDirectory() as tmp:
        state = tmp if "--state" in sys.argv else None
        print(json.dumps(asyncio.run(run(exe, corpus, state=state)), indent=1))
