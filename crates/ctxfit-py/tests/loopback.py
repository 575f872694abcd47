"""Test harness for real clients on 127.0.0.1: a scripted model upstream and a relay that records what crosses it.

`ScriptedAnthropic` answers Claude Code's requests in the Messages API's streamed shape: the main conversation
(the request that offers the client's tools) gets the script's next tool call, chosen by how many tool results the
request holds — a sub-agent's conversation, told by a word of its task, its own script's; anything else (a title, a summary) gets a short text. `ScriptedResponses` does the same for Codex
CLI in the Responses API's shape. Each streamed answer sends its first events, waits `STREAM_GAP` seconds, then
the rest: a relay's arrival times show whether the proxy passed the first events on before the last arrived.

`Relay` sits between a client and the proxy, pipes both ways and keeps the bytes of each direction with their
arrival times, so a test can read the client's own requests and the proxy's answers (their headers included).
"""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STREAM_GAP = 1.0


class JsonAnswers(BaseHTTPRequestHandler):
    """A stand-in server's JSON answers."""

    protocol_version = "HTTP/1.1"  # chunked answers need it

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Scripted(JsonAnswers):
    """Common to both upstreams: what was received, the script, the pause before one step."""

    received = []  # (path, raw body, parsed body)
    heads = []  # the headers of each request received, in the same order
    script = []  # per step: a tool call (name, input) or the final text (a str)
    pause_before = None  # (step, seconds): the upstream waits that long before answering that step
    # (step, margin): that step's main request sets the model's context window — four bytes of body a token — at
    # its own size plus the margin; a later request above it is refused as the API refuses it (each refusal's
    # size kept in `refused`), and usage counts tokens so
    window_at = None
    window = None
    refused = []

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.send_json(404, {"error": {"type": "not_found_error", "message": "no such path"}})

    def read_body(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.loads(raw) if raw else {}
        type(self).received.append((self.path, raw, body))
        type(self).heads.append({k.lower(): v for k, v in self.headers.items()})
        return body

    def past_window(self, main, step):
        """The request's size in tokens, and whether it is past the model's window (`window_at`)."""
        tokens = len(type(self).received[-1][1]) // 4
        if not main or self.window_at is None:
            return tokens, False
        at, margin = self.window_at
        if step == at and type(self).window is None:
            type(self).window = tokens + margin
        elif type(self).window is not None and tokens > type(self).window:
            type(self).refused.append(tokens)
            return tokens, True
        return tokens, False

    def wait_for(self, step):
        if self.pause_before and self.pause_before[0] == step:
            time.sleep(self.pause_before[1])

    def sse(self, first, rest):
        """Server-sent events: `first`, a gap, then `rest` (each a list of (event name or None, data))."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(events):
            for name, data in events:
                text = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
                chunk = text.encode()
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()

        send(first)
        time.sleep(STREAM_GAP)
        send(rest)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class ScriptedAnthropic(Scripted):
    received = []
    heads = []
    sub_script = []  # a sub-agent's: [a word its task holds, then its steps]

    base = ""  # the path the API is served under (a provider's Anthropic-compatible endpoint: "/api/anthropic")

    def do_POST(self):
        body = self.read_body()
        path = self.path[len(self.base):] if self.path.startswith(self.base) else self.path
        if not path.startswith("/v1/messages") or path.startswith("/v1/messages/count_tokens"):
            return self.send_json(200, {"input_tokens": 1000})
        main = len(body.get("tools", [])) > 5
        step = sum(
            1
            for m in body.get("messages", [])
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
        # a sub-agent's conversation: its first message holds the task the main conversation gave it
        first = json.dumps((body.get("messages") or [{}])[0].get("content", ""))
        sub = main and self.sub_script and self.sub_script[0] in first
        script = self.sub_script[1:] if sub else self.script
        action = script[min(step, len(script) - 1)] if main else "A short title"
        if main and not sub:
            self.wait_for(step)
        tokens, past = self.past_window(main and not sub, step)
        if past:
            return self.send_json(400, {"type": "error", "error": {
                "type": "invalid_request_error",
                "message": f"prompt is too long: {tokens} tokens > {type(self).window} maximum"}})
        # one answer's blocks: (the block as it starts, its delta, the block whole)
        if isinstance(action, str):
            blocks = [({"type": "text", "text": ""}, {"type": "text_delta", "text": action},
                       {"type": "text", "text": action})]
            stop = "end_turn"
        else:
            # a tool call, or a list of calls made at once (their ids told apart by a letter when there are several:
            # Claude Code 2.1.332 takes `toolu_00_1` for a part of `toolu_00` and merges their results)
            calls = action if isinstance(action, list) else [action]
            blocks = []
            for k, (name, tool_input) in enumerate(calls):
                block = {"type": "tool_use", "id": f"toolu_{step:02d}" + (chr(96 + k) if k else ""), "name": name,
                         "input": {}}
                blocks.append((block, {"type": "input_json_delta", "partial_json": json.dumps(tool_input)},
                               dict(block, input=tool_input)))
            stop = "tool_use"
        counted = tokens if self.window_at is not None else 1000
        usage = {"input_tokens": counted, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 0}
        msg = {"id": f"msg_{step}", "type": "message", "role": "assistant", "model": body.get("model", "m"),
               "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return self.send_json(200, dict(msg, content=[whole for _, _, whole in blocks], stop_reason=stop,
                                            usage=dict(usage, output_tokens=5)))
        rest = []
        for k, (_, delta, _) in enumerate(blocks):
            if k:
                rest.append(("content_block_start", {"type": "content_block_start", "index": k,
                                                     "content_block": blocks[k][0]}))
            rest += [("content_block_delta", {"type": "content_block_delta", "index": k, "delta": delta}),
                     ("content_block_stop", {"type": "content_block_stop", "index": k})]
        self.sse(
            [("message_start", {"type": "message_start", "message": msg}),
             ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": blocks[0][0]})],
            rest + [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                       "usage": {"output_tokens": 5}}),
                    ("message_stop", {"type": "message_stop"})],
        )


class ScriptedResponses(Scripted):
    received = []
    heads = []

    def do_POST(self):
        body = self.read_body()
        if not self.path.endswith("/responses"):
            return self.send_json(404, {"error": {"message": f"no such path {self.path}", "type": "invalid_request_error"}})
        items = body.get("input", [])
        step = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")
        main = len(body.get("tools", [])) > 0
        action = self.script[min(step, len(self.script) - 1)] if main else "A short title"
        if main:
            self.wait_for(step)
        tokens, past = self.past_window(main, step)
        if past:
            # the Responses API says no numbers
            return self.send_json(400, {"error": {
                "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}})
        rid = f"resp_{step}_{len(type(self).received)}"
        if isinstance(action, str):
            items = [{"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": action, "annotations": []}]}]
        else:
            # a function call, or a list of calls made at once
            calls = action if isinstance(action, list) else [action]
            items = [{"type": "function_call", "id": f"fc_{rid}_{k}", "call_id": f"call_{rid}_{k}", "name": name,
                      "arguments": json.dumps(arguments), "status": "completed"}
                     for k, (name, arguments) in enumerate(calls)]
        response = {"id": rid, "object": "response", "created_at": int(time.time()), "status": "in_progress",
                    "model": body.get("model", "m"), "output": []}
        counted = tokens if self.window_at is not None else 1000
        usage = {"input_tokens": counted, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": counted + 5}
        rest = []
        for k, item in enumerate(items):
            if k:
                rest.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": k,
                                                            "item": dict(item, status="in_progress")}))
            rest.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": k,
                                                       "item": item}))
        self.sse(
            [("response.created", {"type": "response.created", "response": response}),
             ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                             "item": dict(items[0], status="in_progress")})],
            rest + [("response.completed", {"type": "response.completed",
                                            "response": dict(response, status="completed", output=items,
                                                             usage=usage)})],
        )


def serve(handler):
    """Start `handler` on 127.0.0.1 (a free port): the server and its origin."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


class Relay:
    """A TCP relay on 127.0.0.1 to `port`: per connection, what the client sent and what came back, with times."""

    def __init__(self, port):
        self.port = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.origin = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = []  # per connection: [client bytes, [(time, server bytes), ...]]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.port))
            record = [bytearray(), []]
            self.connections.append(record)
            threading.Thread(target=self.pipe, args=(client, upstream, record[0].extend), daemon=True).start()
            # (`record` bound now: a later connection's must not take this one's answers)
            threading.Thread(target=self.pipe, args=(upstream, client,
                                                     lambda b, answers=record[1]: answers.append((time.monotonic(), b))),
                             daemon=True).start()

    @staticmethod
    def pipe(src, dst, keep):
        try:
            while data := src.recv(65536):
                keep(bytes(data))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.listener.close()

    def exchanges(self):
        """Every request the client sent and the answer it got, in order per connection: dicts with `method`,
        `path`, `sent` (the request's headers), `body` (the client's bytes), `status`, `headers` (of the answer;
        both lower-case), `first`, `last` (when the answer's first and last bytes arrived) and `cut` (the
        connection closed before the answer's end)."""
        out = []
        for sent, answers in self.connections:
            data = b"".join(b for _, b in answers)
            ends, at = [], 0
            for t, b in answers:
                at += len(b)
                ends.append((at, t))

            def time_at(offset):
                return next(t for end, t in ends if end > offset)

            pos = 0
            for method, path, asked, body in http_messages(bytes(sent)):
                start = pos
                try:
                    status, headers, _, pos = read_message(data, pos, head=method == "HEAD")
                except (ValueError, IndexError):
                    # part of an answer, or none: the client went away first — it cancelled the request, or it
                    # had read all it wanted (Codex CLI closes the connection at `response.completed`, often
                    # before the stream's last chunk). With the head read, the answer's status and headers count.
                    try:
                        status, headers, _, _ = read_message(data, start, head=True)
                    except (ValueError, IndexError):
                        status, headers = None, {}
                    out.append({"method": method, "path": path, "sent": asked, "body": body, "status": status,
                                "headers": headers, "first": time_at(start) if status else None,
                                "last": ends[-1][1] if status else None, "cut": True})
                    break
                out.append({"method": method, "path": path, "sent": asked, "body": body, "status": status,
                            "headers": headers, "first": time_at(start), "last": time_at(pos - 1), "cut": False})
        return out


def http_messages(data):
    """The HTTP/1.1 requests in `data`, but a last one cut short: (method, path, headers, body)."""
    pos = 0
    while pos < len(data):
        try:
            line, headers, body, pos = read_message(data, pos)
        except (ValueError, IndexError):
            return
        method, path, _ = line.split(" ", 2)
        yield method, path, headers, body


def read_message(data, pos, head=False):
    """One HTTP/1.1 message at `pos`: its first line (or status code, for an answer), headers, body, next position."""
    end = data.index(b"\r\n\r\n", pos)
    lines = data[pos:end].decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in lines[1:])}
    pos = end + 4
    first = lines[0]
    if first.startswith("HTTP/"):
        first = int(first.split(" ")[1])
    if head or first in (204, 304):
        return first, headers, b"", pos
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:  # (a chunk cut short raises ValueError or IndexError)
            eol = data.index(b"\r\n", pos)
            size = int(data[pos:eol].split(b";")[0], 16)
            pos = eol + 2
            if pos + size + 2 > len(data):
                raise ValueError("a chunk is cut short")
            body += data[pos:pos + size]
            pos += size + 2
            if size == 0:
                break
        return first, headers, bytes(body), pos
    size = int(headers.get("content-length", 0))
    if pos + size > len(data):
        raise ValueError("the message is cut short")
    return first, headers, data[pos:pos + size], pos + size
