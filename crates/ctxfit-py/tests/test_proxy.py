"""`ctxfit proxy` with the official anthropic and openai SDKs, against a stand-in upstream on 127.0.0.1.

The stand-in records what it receives and answers in the APIs' shapes, server-sent events included; a streamed
answer sends its first event and then waits until the test has received it, so a proxy that buffered would
never deliver it.
"""

import json
import os
import re
import subprocess
import threading
import urllib.request
from http.server import ThreadingHTTPServer

import pytest

import ctxfit
from conftest import REPO, session_files
from loopback import JsonAnswers

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")


def ctxfit_binary():
    for profile in ("release", "debug"):
        exe = REPO / "target" / profile / "ctxfit"
        if exe.is_file():
            return exe
    if os.environ.get("CTXFIT_REQUIRE_CORPUS") == "1":
        pytest.fail("the ctxfit binary is not built (cargo build -p ctxfit-cli)")
    pytest.skip("the ctxfit binary is not built: the proxy tests are skipped")


class Upstream(JsonAnswers):
    received = []
    first_event_seen = threading.Event()

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        body = json.loads(raw)
        Upstream.received.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "raw": raw, "body": body})
        if body.get("model") == "silent":
            # an upstream that stops answering (longer than the proxy's --upstream-timeout in the test)
            import time
            time.sleep(3)
            return self.send_json(200, {"type": "message"})
        if body.get("model") == "overloaded":
            return self.send_json(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
        # the API by the end of the path, as a provider that puts it under a base path of its own serves it
        path = self.path.split("?")[0]
        if str(body.get("model", "")).startswith("window-"):
            return self.model_with_a_window(path, raw, int(body["model"][7:]))
        if path.endswith("/v1/messages/count_tokens"):
            return self.send_json(200, {"input_tokens": len(raw) // 4})
        if path.endswith("/v1/messages"):
            if body.get("stream"):
                return self.anthropic_stream()
            # a model named usage-N reports N input tokens (N - 100 of them read from the cache)
            reported = int(body["model"][6:]) if body["model"].startswith("usage-") else 110
            return self.send_json(200, {
                "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 100, "cache_read_input_tokens": reported - 100, "output_tokens": 1},
            })
        if path.endswith("/chat/completions"):
            if body.get("stream"):
                return self.openai_stream()
            return self.send_json(200, {
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
            })
        self.send_json(404, {"error": "no such path"})

    def model_with_a_window(self, path, raw, window):
        """A model whose context window is `window` tokens of four bytes of the body: a longer request is refused
        as the API refuses it, the others answered with their usage."""
        tokens = len(raw) // 4
        anthropic_api = path.endswith("/v1/messages")
        if tokens > window:
            if anthropic_api:
                return self.send_json(400, {"type": "error", "error": {
                    "type": "invalid_request_error", "message": f"prompt is too long: {tokens} tokens > {window} maximum"}})
            return self.send_json(400, {"error": {
                "message": f"This model's maximum context length is {window} tokens. However, your messages resulted in "
                           f"{tokens} tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        if anthropic_api:
            return self.send_json(200, {
                "id": "msg_w", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": tokens, "output_tokens": 1}})
        return self.send_json(200, {
            "id": "chatcmpl-w", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}})

    def sse(self, events):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for n, (name, data) in enumerate(events):
            text = (f"event: {name}\n" if name else "") + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
            chunk = text.encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
            if n == 0:
                # the rest waits until the client has the first event: a buffering proxy never delivers it
                assert Upstream.first_event_seen.wait(20), "the first event never reached the client"
        self.wfile.write(b"0\r\n\r\n")

    def anthropic_stream(self):
        msg = {"id": "msg_s", "type": "message", "role": "assistant", "model": "m", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 0}}
        self.sse([
            ("message_start", {"type": "message_start", "message": msg}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "streamed"}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 1}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    def openai_stream(self):
        chunk = lambda delta, finish=None: {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",  # noqa: E731
                                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        self.sse([(None, chunk({"role": "assistant", "content": ""})), (None, chunk({"content": "streamed"})),
                  (None, chunk({}, "stop")), (None, "[DONE]")])


@pytest.fixture(scope="module")
def upstream():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def start_proxy(upstream, *extra):
    exe = ctxfit_binary()
    p = subprocess.Popen(
        [str(exe), "proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", upstream, "--upstream-openai", upstream,
         *extra],
        stderr=subprocess.PIPE, text=True,
    )
    line = p.stderr.readline()
    m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    assert m, line
    lines = []
    threading.Thread(target=lambda: lines.extend(p.stderr), daemon=True).start()
    return p, m.group(1), lines


def stop_proxy(p, lines):
    p.terminate()
    p.wait(10)
    # nothing the proxy printed holds a credential
    assert not any("sk-test-secret" in line for line in lines), lines


@pytest.fixture(scope="module")
def proxy(upstream):
    p, url, lines = start_proxy(upstream)
    yield url
    stop_proxy(p, lines)


@pytest.fixture(autouse=True)
def fresh():
    Upstream.received.clear()
    Upstream.first_event_seen.clear()


def message_starts(raw):
    """Byte offsets at which each message of a forwarded body starts, and where the last one ends."""
    text = raw.decode()
    at = text.index('"messages":[') + len('"messages":[')
    decoder, starts = json.JSONDecoder(), []
    while text[at] != "]":
        starts.append(len(text[:at].encode()))
        _, at = decoder.raw_decode(text, at)
        end = len(text[:at].encode())
        while text[at] in ", \n\r\t":
            at += 1
    return starts + [end]


def requests_of(messages):
    for i, m in enumerate(messages):
        if i > 0 and m["role"] == "assistant":
            yield messages[:i]


def long_session(corpus):
    for f in session_files(corpus / "trajectories" / "claude-code"):
        s = ctxfit.load_sessions(f)[0]
        if len(s["messages"]) > 30 and s["format"] == "anthropic":
            return s
    pytest.fail("no long Claude Code session in the corpus")


def test_an_agent_on_the_anthropic_sdk_gets_the_librarys_compaction(corpus, proxy, upstream):
    s = long_session(corpus)
    client = anthropic.Anthropic(base_url=proxy, api_key="sk-test-secret", max_retries=0)
    library = ctxfit.Compactor("smart")
    sent = 0
    for history in requests_of(s["messages"]):
        raw = client.messages.with_raw_response.create(model="m", max_tokens=16, system="You are a test agent.", messages=history)
        assert raw.parse().content[0].text == "ok"
        got = Upstream.received[-1]["body"]
        expected = library.compact(history, system="You are a test agent.")
        assert got["messages"] == json.loads(json.dumps(expected, default=str))
        headers = Upstream.received[-1]["headers"]
        assert "sk-test-secret" in headers.get("x-api-key", "") + headers.get("authorization", "")
        assert int(raw.headers["x-ctxfit-tokens-before"]) >= int(raw.headers["x-ctxfit-tokens-after"])
        sent += 1
    assert sent > 10
    # from one request to the next, the bytes sent before are sent again up to the first message compaction changed
    bodies = [r for r in Upstream.received if r["path"] == "/v1/messages"][-sent:]
    checked = 0
    for before, after in zip(bodies, bodies[1:]):
        old, new = before["body"]["messages"], after["body"]["messages"]
        j = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), len(old))
        if j == 0:
            continue
        cut = message_starts(before["raw"])[j]
        assert after["raw"][:cut] == before["raw"][:cut]
        checked += 1
    assert checked > 10
    last = Upstream.received[-1]["raw"]
    assert len(last) < len(json.dumps(s["messages"]))
    stats = json.load(urllib.request.urlopen(proxy + "/ctxfit/stats"))
    assert stats["apis"]["anthropic-messages"]["requests"] >= sent
    assert stats["apis"]["anthropic-messages"]["tokens_saved"] > 0
    metrics = urllib.request.urlopen(proxy + "/metrics").read().decode()
    assert re.search(r'ctxfit_proxy_tokens_saved_total\{api="anthropic-messages"\} [1-9]', metrics), metrics
    # per conversation: its requests, what it saved in tokens and in cost, the cut results fetched again
    mine = [c for c in stats["per_conversation"] if c["requests"] >= sent]
    assert len(mine) == 1 and mine[0]["tokens_saved"] > 0 and mine[0]["refetches"] >= 0, stats["per_conversation"]
    label = f'profile="smart",conversation="{mine[0]["id"]}"'
    assert re.search(r"ctxfit_proxy_conversation_tokens_saved\{" + re.escape(label) + r"\} [1-9]", metrics), metrics
    assert re.search(r"ctxfit_proxy_conversation_refetches\{" + re.escape(label) + r"\} \d+", metrics)
    assert re.search(r"^ctxfit_proxy_refetches \d+$", metrics, re.M)
    # a restarted proxy meets the conversation at its last request and forwards the same bytes
    p, restarted, lines = start_proxy(upstream)
    try:
        again = anthropic.Anthropic(base_url=restarted, api_key="sk-test-secret", max_retries=0)
        again.messages.create(model="m", max_tokens=16, system="You are a test agent.", messages=history)
        assert Upstream.received[-1]["raw"] == last
    finally:
        stop_proxy(p, lines)


def test_a_moving_cache_breakpoint_keeps_one_conversation(corpus, proxy):
    """Claude Code's pattern with the SDK: the breakpoint on the newest message, taken off the one before; a
    newest message that is a string is wrapped in a text block to carry it, and sent as a string again after."""
    s = long_session(corpus)
    client = anthropic.Anthropic(base_url=proxy, api_key="k", max_retries=0)
    # (a system prompt of its own: the same one as a string would make it the conversation the test above sent)
    system = [{"type": "text", "text": "You are a cached test agent.", "cache_control": {"type": "ephemeral"}}]
    conversations, marked, wrapped = set(), 0, 0
    for history in requests_of(s["messages"]):
        history = json.loads(json.dumps(history, default=str))
        if isinstance(history[-1]["content"], str):
            history[-1]["content"] = [{"type": "text", "text": history[-1]["content"]}]
            wrapped += 1
        last = history[-1]["content"]
        if isinstance(last, list) and last:
            last[-1]["cache_control"] = {"type": "ephemeral"}
            marked += 1
        raw = client.messages.with_raw_response.create(model="m", max_tokens=16, system=system, messages=history)
        conversations.add(raw.headers["x-ctxfit-conversation"])
        # the markers forwarded are this request's, on its last message only
        forwarded = Upstream.received[-1]["body"]["messages"]
        where = [i for i, m in enumerate(forwarded) if isinstance(m["content"], list)
                 and any("cache_control" in b for b in m["content"])]
        assert where == ([len(history) - 1] if isinstance(last, list) and last else [])
    assert marked > 10 and wrapped >= 1
    assert len(conversations) == 1, conversations


def test_the_identity_cache_changes_nothing_forwarded(corpus, upstream):
    """A conversation's last request kept (`--identity-cache`, on by default) only spares hashing: with none kept,
    the same requests in Claude Code's pattern are the same conversation and forward the same bytes."""
    s = long_session(corpus)
    system = [{"type": "text", "text": "You are an identity test agent.", "cache_control": {"type": "ephemeral"}}]
    forwarded = {}
    for cache in ("16M", "0"):
        p, url, lines = start_proxy(upstream, "--identity-cache", cache)
        try:
            client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
            conversations, bodies = set(), []
            for _, history in zip(range(40), requests_of(s["messages"])):
                history = json.loads(json.dumps(history, default=str))
                if isinstance(history[-1]["content"], str):
                    history[-1]["content"] = [{"type": "text", "text": history[-1]["content"]}]
                if history[-1]["content"]:
                    history[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
                raw = client.messages.with_raw_response.create(model="m", max_tokens=16, system=system,
                                                               messages=history)
                conversations.add(raw.headers["x-ctxfit-conversation"])
                bodies.append(Upstream.received[-1]["body"])
            assert len(conversations) == 1, conversations
            forwarded[cache] = bodies
        finally:
            stop_proxy(p, lines)
    assert len(forwarded["0"]) > 10
    assert forwarded["16M"] == forwarded["0"]
    refused = subprocess.run([str(ctxfit_binary()), "proxy", "--identity-cache", "lots"],
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode != 0 and "identity-cache" in refused.stderr, refused.stderr


def test_a_websocket_upgrade_is_refused_at_once_and_not_forwarded(proxy):
    """Codex CLI opens the Responses API as a WebSocket first: answered 426 at once, so it uses HTTPS."""
    import http.client
    host, port = proxy.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/v1/responses", headers={
        "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Authorization": "Bearer k"})
    r = conn.getresponse()
    body = json.loads(r.read())
    assert r.status == 426
    assert "not over a WebSocket" in body["error"]["message"]
    assert Upstream.received == []
    conn.close()


def test_slow_clients_and_silent_upstreams_are_bounded(upstream):
    """A client that trickles its headers is disconnected; one that stops sending its body gets a 408 and is
    disconnected; an upstream that never answers gets the client a 504."""
    import socket
    import time
    p, url, lines = start_proxy(upstream, "--header-timeout", "1", "--body-timeout", "1", "--upstream-timeout", "1")
    try:
        host, port = url.removeprefix("http://").split(":")
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n")  # and never the rest
        started = time.monotonic()
        data = b""
        while chunk := s.recv(4096):  # (a socket timeout here fails the test: never closed)
            data += chunk
        # closed within the header timeout (and hyper's timer's grain), with a 408 at most
        assert time.monotonic() - started < 5
        assert data == b"" or data.startswith(b"HTTP/1.1 408"), data
        s.close()
        # a body that stops coming: a 408 in the API's shape once it has been silent past --body-timeout, closed
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000\r\n\r\n" + b'{"model": "m", "messages": [')
        started = time.monotonic()
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        s.close()
        assert 0.9 < time.monotonic() - started < 5
        head, _, answer = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408") and b"connection: close" in head.lower(), data
        assert json.loads(answer)["error"] == {
            "type": "invalid_request_error",
            "message": "ctxfit proxy: the request body stopped arriving: nothing for 1 s (972 of 1000 bytes missing)"}
        assert Upstream.received == [] or all(r["body"].get("model") != "m" for r in Upstream.received)
        client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as e:
            client.messages.create(model="silent", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        assert e.value.status_code == 504
        assert "did not begin its answer within 1 s" in str(e.value)
    finally:
        stop_proxy(p, lines)


def broken_upstream(mode):
    """An upstream on a raw socket that begins a streamed answer, then goes `silent`, sends a `broken` chunk, or
    `hangs up`; a request for `model: "whole"` gets a whole answer."""
    import socket
    import time
    server = socket.create_server(("127.0.0.1", 0))
    event = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
             b'"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
             b'"usage":{"input_tokens":1,"output_tokens":0}}}\n\n')

    def serve():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    def answer(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, body = data.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        while len(body) < length:
            body += conn.recv(65536)
        if json.loads(body)["model"] == "whole":
            whole = json.dumps({"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [],
                                 "stop_reason": "end_turn", "stop_sequence": None,
                                 "usage": {"input_tokens": 1, "output_tokens": 0}}).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(whole)).encode() + b"\r\n\r\n" + whole)
            conn.close()
            return
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                     + f"{len(event):x}\r\n".encode() + event + b"\r\n")
        if mode == "silent":
            time.sleep(20)
        elif mode == "broken":
            conn.sendall(b"zz\r\nnot a chunk")
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.parametrize("mode", ["silent", "broken", "hangs up"])
def test_an_answer_cut_short_upstream_reaches_the_client_as_an_error(mode):
    """An upstream that stops in the middle of a streamed answer — silent past --upstream-timeout, a broken chunk,
    a closed connection — leaves the client with an error it can retry, never an answer that looks complete; the
    proxy goes on serving."""
    import time
    upstream = broken_upstream(mode)
    p, url, lines = start_proxy(upstream, "--upstream-timeout", "2")
    try:
        client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        started = time.monotonic()
        with pytest.raises(Exception) as cut:
            with client.messages.stream(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]) as s:
                s.get_final_message()
        # the SDK's connection error, or the HTTP library's under it: the answer's body was cut short
        assert isinstance(cut.value, anthropic.APIConnectionError) or "incomplete chunked read" in str(cut.value), cut
        assert time.monotonic() - started < 10
        whole = client.messages.create(model="whole", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        assert whole.stop_reason == "end_turn"
    finally:
        stop_proxy(p, lines)


def test_streams_are_relayed_as_they_arrive(proxy):
    client = anthropic.Anthropic(base_url=proxy, api_key="k", max_retries=0)
    with client.messages.stream(model="m", max_tokens=16, messages=[{"role": "user", "content": "hi"}]) as stream:
        events = iter(stream)
        first = next(events)
        assert first.type == "message_start"
        Upstream.first_event_seen.set()
        assert stream.get_final_text() == "streamed"

    Upstream.first_event_seen.clear()
    oa = openai.OpenAI(base_url=proxy + "/v1", api_key="k", max_retries=0)
    chunks = oa.chat.completions.create(model="m", stream=True, messages=[{"role": "user", "content": "hi"}])
    first = next(iter(chunks))
    assert first.choices[0].delta.role == "assistant"
    Upstream.first_event_seen.set()
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "streamed"


def test_openai_chat_goes_through_and_conversations_stay_apart(proxy):
    oa = openai.OpenAI(base_url=proxy + "/v1", api_key="k", max_retries=0)
    system = {"role": "system", "content": "The same system prompt."}
    ids = []
    for question in ("first conversation", "second conversation"):
        raw = oa.chat.completions.with_raw_response.create(model="m", messages=[system, {"role": "user", "content": question}])
        assert raw.parse().choices[0].message.content == "ok"
        ids.append(raw.headers["x-ctxfit-conversation"])
    assert ids[0] != ids[1]
    # the first continues under its own id
    history = [system, {"role": "user", "content": "first conversation"}, {"role": "assistant", "content": "ok"},
               {"role": "user", "content": "more"}]
    raw = oa.chat.completions.with_raw_response.create(model="m", messages=history)
    assert raw.headers["x-ctxfit-conversation"] == ids[0]


def test_a_providers_own_base_path_is_compacted_there(proxy):
    # OpenRouter's /api/v1, Azure's deployments, an Anthropic-compatible endpoint's /api/anthropic: the SDKs
    # append the API's path to the base URL given, and the proxy sends each request on to that same path
    clients = [
        ("openai-chat", "/api/v1/chat/completions",
         lambda: openai.OpenAI(base_url=proxy + "/api/v1", api_key="k", max_retries=0)),
        ("openai-chat", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
         lambda: openai.AzureOpenAI(azure_endpoint=proxy, api_version="2024-10-21", api_key="k", max_retries=0)),
    ]
    for api, path, client in clients:
        raw = client().chat.completions.with_raw_response.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert raw.parse().choices[0].message.content == "ok"
        assert raw.headers.get("x-ctxfit-conversation"), path
        assert Upstream.received[-1]["path"] == path
    ac = anthropic.Anthropic(base_url=proxy + "/api/anthropic", api_key="k", max_retries=0)
    raw = ac.messages.with_raw_response.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert raw.parse().content[0].text == "ok"
    assert raw.headers.get("x-ctxfit-conversation")
    assert Upstream.received[-1]["path"] == "/api/anthropic/v1/messages"
    assert ac.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}]).input_tokens > 0
    assert Upstream.received[-1]["path"] == "/api/anthropic/v1/messages/count_tokens"


def test_bypass_forwards_the_clients_bytes(proxy, upstream):
    client = anthropic.Anthropic(base_url=proxy, api_key="k", max_retries=0, default_headers={"x-ctxfit-bypass": "1"})
    direct = anthropic.Anthropic(base_url=upstream, api_key="k", max_retries=0)
    messages = [{"role": "user", "content": "x " * 1000}]
    client.messages.create(model="m", max_tokens=16, messages=messages)
    direct.messages.create(model="m", max_tokens=16, messages=messages)
    through, straight = Upstream.received[-2], Upstream.received[-1]
    assert through["raw"] == straight["raw"]
    assert not any(k.lower().startswith("x-ctxfit-") for k in through["headers"])


def test_errors_keep_the_apis_shape(proxy):
    client = anthropic.Anthropic(base_url=proxy, api_key="k", max_retries=0)
    with pytest.raises(anthropic.RateLimitError, match="slow down"):
        client.messages.create(model="overloaded", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    bad = urllib.request.Request(proxy + "/v1/messages", data=b'{"messages": [\n {"role": }]}', method="POST",
                                 headers={"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(bad)
    assert e.value.code == 400
    err = json.loads(e.value.read())
    assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
    assert "line 2" in err["error"]["message"]
    bad_openai = urllib.request.Request(proxy + "/v1/chat/completions", data=b'{"messages": 5}', method="POST",
                                        headers={"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(bad_openai)
    assert e.value.code == 400
    assert json.loads(e.value.read())["error"]["type"] == "invalid_request_error"
    # the messages written twice: the proxy cannot know which of them the provider would read
    received = len(Upstream.received)
    for path, key in (("/v1/messages", "messages"), ("/v1/chat/completions", "messages"), ("/v1/responses", "input")):
        twice = f'{{"model":"m","{key}":[{{"role":"user","content":"a"}}],"{key}":[]}}'.encode()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(urllib.request.Request(proxy + path, data=twice, method="POST",
                                                          headers={"content-type": "application/json"}))
        assert e.value.code == 400, path
        assert f"`{key}` twice" in e.value.read().decode(), path
    assert len(Upstream.received) == received, "a body refused was forwarded"


def test_count_tokens_counts_the_request_as_it_would_be_sent(corpus, proxy):
    s = long_session(corpus)
    client = anthropic.Anthropic(base_url=proxy, api_key="k", max_retries=0)
    counted = client.messages.count_tokens(model="m", messages=s["messages"])
    got = Upstream.received[-1]
    assert got["path"] == "/v1/messages/count_tokens"
    # what the conversation would send: the library's live loop over its requests, then the whole history
    library = ctxfit.Compactor("smart")
    for history in requests_of(s["messages"]):
        library.compact(history)
    assert got["body"]["messages"] == library.compact(s["messages"])
    assert len(got["raw"]) < len(json.dumps(s["messages"]))
    assert counted.input_tokens == len(got["raw"]) // 4
    stats = json.load(urllib.request.urlopen(proxy + "/ctxfit/stats"))
    before = stats["conversations"]
    client.messages.count_tokens(model="m", messages=s["messages"])
    assert json.load(urllib.request.urlopen(proxy + "/ctxfit/stats"))["conversations"] == before


def test_memory_is_held_under_max_memory(upstream):
    """Under --max-memory the conversations used least recently are forgotten to make room; a request that would
    need more than the whole limit is answered 413 (no retry makes it fit), one whose body outgrows the room left as
    it arrives 503, overloaded, with retry-after; the proxy serves on."""
    import httpx

    p, url, lines = start_proxy(upstream, "--max-memory", "150M", "--max-body", str(300 << 20))
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json"}

    def body(name, size):
        messages = [{"role": "user", "content": f"conversation {name}"}]
        for i in range(10):
            messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"cat f{i}"}}]})
            text = "\n".join(f"{name} {i} {k}: " + "x" * 60 for k in range(size // 10 // 80))
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": text}]})
        return json.dumps({"model": "m", "max_tokens": 5, "messages": messages})

    try:
        for name in "abcdef":
            r = httpx.post(url + "/v1/messages", content=body(name, 15_000_000), headers=headers, timeout=60)
            assert r.status_code == 200, r.text
            stats = httpx.get(url + "/ctxfit/stats").json()
            assert stats["memory"]["in_use"] <= 150 << 20, stats
        # six conversations of 15 MB do not fit in 150 MiB: the oldest were forgotten
        assert stats["conversations"] < 6, stats
        # 50 MB takes about 200 MiB to compact: more than the whole limit, so not "retry later" but too large, and
        # the conversations held are not forgotten for it
        r = httpx.post(url + "/v1/messages", content=body("huge", 50_000_000), headers=headers, timeout=60)
        assert r.status_code == 413 and "retry-after" not in r.headers, r.text
        assert r.json()["error"]["type"] == "request_too_large"
        assert "more than the proxy's whole limit of 150 MiB (--max-memory)" in r.json()["error"]["message"]
        assert httpx.get(url + "/ctxfit/stats").json()["conversations"] == stats["conversations"]
        # 40 MB would fit were nothing else held: room is made, and what is still missing is "retry later"
        r = httpx.post(url + "/v1/messages", content=body("big", 40_000_000), headers=headers, timeout=60)
        assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
        assert r.json()["error"]["type"] == "overloaded_error"
        assert "memory limit" in r.json()["error"]["message"]
        # a body of many small messages takes far more heap per byte than one of long results: foreseen from its
        # shape (21 MB of 200,000 messages took 680 MB to compact), refused before the compaction begins
        tiny = [{"role": "user", "content": "go"}]
        for i in range(50_000):
            tiny.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls"}}]})
            tiny.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "a"}]})
        r = httpx.post(url + "/v1/messages", content=json.dumps({"model": "m", "max_tokens": 5, "messages": tiny}),
                       headers=headers, timeout=60)
        assert r.status_code == 413 and "whole limit" in r.json()["error"]["message"], r.text
        assert httpx.get(url + "/ctxfit/stats").json()["memory"]["in_use"] <= 150 << 20
        # a body of no stated size is counted as it arrives: refused before its end, not after
        import socket
        host, port = url.removeprefix("http://").split(":")
        s = socket.create_connection((host, int(port)), timeout=30)
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: k\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        piece = b"x" * 1_000_000
        sent = 0
        try:
            for _ in range(200):  # 200 MB: more than the whole cap
                s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                sent += 1
        except OSError:
            pass  # the proxy stopped reading: its answer is waiting
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        s.close()
        assert sent < 200, "the whole body was read"
        head, _, answer = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 5" in head, data
        assert "reached its memory limit while this request's body arrived" in json.loads(answer)["error"]["message"]
        r = httpx.post(url + "/v1/messages", content=body("small", 10_000), headers=headers, timeout=60)
        assert r.status_code == 200
        assert "ctxfit_proxy_memory_bytes " in httpx.get(url + "/metrics").text
    finally:
        stop_proxy(p, lines)


def test_the_budget_trigger_uses_the_usage_the_upstream_reported(proxy):
    """seed-000 compacts above 40,000 input tokens: these requests are estimated far below that, so only the
    usage the upstream reported for the previous request (cache reads included) can trigger it."""
    client = anthropic.Anthropic(base_url=proxy, api_key="k", max_retries=0)
    output = "\n".join(f"line {i} of a long tool output" for i in range(150))

    def turn(i):
        return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}]}]

    results = {}
    for reported in (50_000, 1_000):
        history = [{"role": "user", "content": "go"}] + turn(1) + turn(2)
        headers = {"x-ctxfit-profile": "seed-000", "x-ctxfit-session": f"budget-{reported}"}
        client.messages.create(model=f"usage-{reported}", max_tokens=16, messages=history, extra_headers=headers)
        history += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}] + turn(3)
        client.messages.create(model=f"usage-{reported}", max_tokens=16, messages=history, extra_headers=headers)
        results[reported] = Upstream.received[-1]["body"]["messages"][2]["content"][0]["content"]
    assert results[1_000] == output, "below the budget: nothing compacted"
    assert results[50_000].endswith("[truncated for context management]"), results[50_000][-80:]
    assert len(results[50_000]) < 600


@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_an_agent_that_outgrows_its_models_window_never_sees_it_refused(proxy, sdk):
    """A scripted agent loop on the official SDK reads a file of its own at every turn; its history passes the
    model's window (12,000 tokens) a third of the way in. The provider refuses that request; the proxy learns the
    window from the refusal, sends the request again within it, and holds every later one there (each answer's
    usage measuring its count against the provider's): the agent's calls all succeed."""
    window, turns = 12_000, 45
    def read(k):
        return "".join(f"    let value_{k}_{i} = compute_{i}(input_{k}, {i}); // step {i} of file {k}\n" for i in range(40))
    api = "anthropic-messages" if sdk == "anthropic" else "openai-chat"
    before = json.load(urllib.request.urlopen(proxy + "/ctxfit/stats"))["apis"].get(api, {}).get("window_retries", 0)
    if sdk == "anthropic":
        client = anthropic.Anthropic(base_url=proxy, api_key="k", max_retries=0)
        messages = [{"role": "user", "content": f"Read the project's files ({sdk})."}]
        tools = [{"name": "Read", "description": "Read a file.", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]
        for k in range(turns):
            answer = client.messages.create(model=f"window-{window}", max_tokens=8, system="You are a test agent.", tools=tools, messages=messages)
            assert answer.content[0].text == "ok"
            messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "Read", "input": {"file_path": f"/src/f{k}.rs"}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": read(k)}]}]
    else:
        client = openai.OpenAI(base_url=proxy + "/v1", api_key="k", max_retries=0)
        messages = [{"role": "system", "content": "You are a test agent."}, {"role": "user", "content": f"Read the project's files ({sdk})."}]
        tools = [{"type": "function", "function": {"name": "Read", "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}}}}]
        for k in range(turns):
            answer = client.chat.completions.create(model=f"window-{window}", messages=messages, tools=tools)
            assert answer.choices[0].message.content == "ok"
            messages += [{"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{k}", "type": "function",
                          "function": {"name": "Read", "arguments": json.dumps({"file_path": f"/src/f{k}.rs"})}}]},
                         {"role": "tool", "tool_call_id": f"call_{k}", "content": read(k)}]
    sent = [r for r in Upstream.received if r["body"].get("model") == f"window-{window}"]
    refused = [r for r in sent if len(r["raw"]) // 4 > window]
    # sent whole, the last request would be twice the window; the provider refused one, the one that taught it
    assert len(json.dumps(messages)) // 4 > 2 * window
    assert len(refused) == 1 and len(sent) == turns + 1
    stats = json.load(urllib.request.urlopen(proxy + "/ctxfit/stats"))
    assert stats["apis"][api]["window_retries"] == before + 1
    mine = [c for c in stats["per_conversation"] if c.get("window")]
    assert any(c["requests"] == turns for c in mine), stats["per_conversation"]


def test_a_restart_with_state_keeps_decisions_made_on_reported_usage(upstream, tmp_path):
    """Under `--state`, what the budget trigger decided on the upstream's reported usage survives a restart (SIGTERM
    writes out what was answered); a replay of the history, all a proxy without state can do, would not know it."""
    output = "\n".join(f"line {i} of a long tool output" for i in range(150))

    def turn(i):
        return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"s{i}", "name": "Bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"s{i}", "content": output}]}]

    first = [{"role": "user", "content": "go"}] + turn(1) + turn(2)
    second = first + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}] + turn(3)
    third = second + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}]
    args = ("--profile", "seed-000", "--state", str(tmp_path / "state"))

    def send(url, messages):
        client = anthropic.Anthropic(base_url=url, api_key="sk-test-secret", max_retries=0)
        raw = client.messages.with_raw_response.create(model="usage-50000", max_tokens=16, messages=messages)
        return raw.headers["x-ctxfit-conversation"], Upstream.received[-1]["raw"]

    p, url, lines = start_proxy(upstream, *args)
    try:
        conversation, _ = send(url, first)
        _, before = send(url, second)
        stats = json.load(urllib.request.urlopen(url + "/ctxfit/stats"))
        assert stats["state"]["errors"] == 0, stats
    finally:
        stop_proxy(p, lines)
    assert b"[truncated for context management]" in before
    assert (tmp_path / "state" / "ctxfit-proxy.redb").exists()

    p, url, lines = start_proxy(upstream, *args)
    try:
        # the retry of the last request: the same bytes, under the same conversation
        again, retried = send(url, second)
        assert (again, retried) == (conversation, before)
        # and the conversation goes on from the decisions it had
        _, after = send(url, third)
        assert after.startswith(before[:before.index(b'"content":"ok"')])
    finally:
        stop_proxy(p, lines)

    # without the state, a restarted proxy replays the history on estimates alone: not what was sent
    p, url, lines = start_proxy(upstream, "--profile", "seed-000")
    try:
        _, replayed = send(url, second)
        assert replayed != before
        assert b"[truncated for context management]" not in replayed
    finally:
        stop_proxy(p, lines)

    # one state directory, one proxy
    p, url, lines = start_proxy(upstream, *args)
    try:
        refused = subprocess.run([str(ctxfit_binary()), "proxy", "--listen", "127.0.0.1:0", *args],
                                 capture_output=True, text=True, timeout=30)
        assert refused.returncode != 0
        assert "one proxy per state directory" in refused.stderr, refused.stderr
    finally:
        stop_proxy(p, lines)


def test_concurrent_streaming_conversations(proxy):
    """A bounded load test: 20 conversations at once, 10 streaming requests each, every stream whole, every
    conversation its own (`benches/python/proxy_load.py` is the full one: 100 × 50, with latencies)."""
    from concurrent.futures import ThreadPoolExecutor

    Upstream.first_event_seen.set()  # no hand-shake here: streams flow freely
    client = anthropic.Anthropic(base_url=proxy, api_key="k", max_retries=0)
    output = "\n".join(f"row {i}: value" for i in range(200))

    def conversation(c):
        history = [{"role": "user", "content": f"conversation {c}: same system prompt, own question"}]
        ids = set()
        for i in range(10):
            with client.messages.with_streaming_response.create(
                model="m", max_tokens=16, stream=True, system="Shared.", messages=history
            ) as r:
                ids.add(r.headers["x-ctxfit-conversation"])
                text = r.read().decode()
            assert "event: message_stop" in text, text[-200:]
            history += [
                {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{c}-{i}", "name": "Bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{c}-{i}", "content": output}]},
            ]
        assert len(ids) == 1
        return ids.pop()

    with ThreadPoolExecutor(20) as pool:
        ids = list(pool.map(conversation, range(20)))
    assert len(set(ids)) == 20


def test_the_load_test(corpus):
    """benches/python/proxy_load.py as CI runs it: 100 conversations at once, 50 streaming requests each, through
    the proxy to a stand-in — no error (its latencies are benchmark figures, not asserted here)."""
    import asyncio
    import sys

    pytest.importorskip("httpx")
    sys.path.insert(0, str(REPO / "benches" / "python"))
    import proxy_load

    out = asyncio.run(proxy_load.run(str(ctxfit_binary()), corpus))
    why = {k: out[k] for k in ("load_error_samples", "proxy_refused", "load_wall_s")}
    assert out["load_requests"] == 5000 and out["load_errors"] == 0, why
    assert out["conversations"] == 101
    assert out["tokens_in_out"][1] < out["tokens_in_out"][0]
