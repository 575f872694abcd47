"""The page tool as an agent registers it: a loop on the official `anthropic` and `openai` SDKs offers
`PageTool`'s definition, a scripted model on 127.0.0.1 calls it, the tool fetches from a local page server, and
the model reads the results the loop hands back.

The scripted model checks, as a model would see them, that the request offers the tool with its schema and the
system prompt's hint, and that each tool result is the tool's JSON.
"""

import gzip
import json
import threading
from http.server import ThreadingHTTPServer

import pytest

import ctxfit
from loopback import JsonAnswers

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")


def long_page():
    parts = "".join(
        f"<h2>Part {i}</h2><p>{f'Sentence {i} of a long page, with words enough to fill it. ' * 8}</p>"
        for i in range(1, 41)
    )
    return f"<html><body><nav>Menu</nav><article><h1>Long</h1>{parts}</article></body></html>"


class Pages(JsonAnswers):
    """The local web: `/long` and a real corpus page at `/corpus`; counts the fetches."""

    fetches = []
    corpus_html = b""

    def do_GET(self):
        type(self).fetches.append(self.path)
        body = {"/long": long_page().encode(), "/corpus": type(self).corpus_html}.get(self.path)
        if body is None:
            self.send_json(404, {"error": "no such page"})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Model(JsonAnswers):
    """A scripted model: per step, a call of the page tool (by how many results the request holds), then text."""

    received = []
    pages = ""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append(body)
        if self.path.endswith("/messages"):
            self.anthropic(body)
        else:
            self.chat(body)

    def script(self, results):
        pages = type(self).pages
        steps = [
            {"url": f"{pages}/long", "strip_level": "aggressive", "max_chars": 1000},
            {"url": f"{pages}/long", "strip_level": "aggressive", "max_chars": 1000, "chunk": 2},
            {"url": f"{pages}/corpus", "strip_level": "aggresive"},
            {"url": f"{pages}/corpus", "strip_level": "aggressive"},
        ]
        return steps[len(results)] if len(results) < len(steps) else None

    def anthropic(self, body):
        (tool,) = body["tools"]
        assert tool["name"] == "fetch_webpage_markdown"
        assert tool["input_schema"]["required"] == ["url"]
        assert "fetch_webpage_markdown" in body["system"]
        results = [
            json.loads(b["content"])
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "tool_result"
        ]
        step = self.script(results)
        usage = {"input_tokens": 10, "output_tokens": 5}
        if step is None:
            content = [{"type": "text", "text": "Done."}]
            stop = "end_turn"
        else:
            content = [{"type": "tool_use", "id": f"toolu_{len(results)}", "name": tool["name"], "input": step}]
            stop = "tool_use"
        self.send_json(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                             "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage})

    def chat(self, body):
        (tool,) = body["tools"]
        assert tool["function"]["name"] == "fetch_webpage_markdown"
        results = [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        step = self.script(results)
        if step is None:
            message = {"role": "assistant", "content": "Done."}
            finish = "stop"
        else:
            call = {"id": f"call_{len(results)}", "type": "function",
                    "function": {"name": tool["function"]["name"], "arguments": json.dumps(step)}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        self.send_json(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                             "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                             "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


def serve(handler):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture()
def servers(corpus):
    Pages.fetches = []
    Pages.corpus_html = gzip.decompress((corpus / "html-readability/pages").glob("*.html.gz").__next__().read_bytes())
    Model.received = []
    pages, model = serve(Pages), serve(Model)
    Model.pages = f"http://127.0.0.1:{pages.server_port}"
    yield f"http://127.0.0.1:{model.server_port}"
    pages.shutdown()
    model.shutdown()


def check(results):
    first, second, mistaken, article = results
    assert first["success"] and first["was_truncated"] and first["total_chunks"] > 1
    assert first["data"].startswith("# Long") and len(first["data"]) <= 1000
    assert second["chunk_number"] == 2 and "Part" in second["data"] and "# Long" not in second["data"]
    assert not mistaken["success"]
    assert '"strip_level" is "aggresive"' in mistaken["message"]
    assert article["success"] and article["tokens_used"] > 0
    # the long page was fetched once for both of its chunks
    assert Pages.fetches == ["/long", "/corpus"]


def test_an_agent_on_the_anthropic_sdk_registers_and_calls_the_page_tool(servers):
    tool = ctxfit.PageTool(allow_addresses=["127.0.0.1"])
    client = anthropic.Anthropic(base_url=servers, api_key="k", max_retries=0)
    messages = [{"role": "user", "content": "What does the long page say?"}]
    results = []
    for _ in range(10):
        response = client.messages.create(model="scripted", max_tokens=1024, system=ctxfit.PAGE_TOOL_HINT,
                                          tools=[tool.definition("anthropic")], messages=messages)
        messages.append({"role": "assistant", "content": response.content})
        calls = [b for b in response.content if b.type == "tool_use"]
        if not calls:
            break
        answers = []
        for call in calls:
            result = tool(call.input)
            results.append(result)
            answers.append({"type": "tool_result", "tool_use_id": call.id, "content": json.dumps(result)})
        messages.append({"role": "user", "content": answers})
    assert response.content[0].text == "Done."
    assert len(Model.received) == 5
    check(results)


def test_an_agent_on_the_openai_sdk_hands_the_tool_its_arguments_text(servers):
    tool = ctxfit.PageTool(allow_addresses=["127.0.0.1"])
    client = openai.OpenAI(base_url=servers + "/v1", api_key="k", max_retries=0)
    messages = [{"role": "system", "content": ctxfit.PAGE_TOOL_HINT},
                {"role": "user", "content": "What does the long page say?"}]
    results = []
    for _ in range(10):
        response = client.chat.completions.create(model="scripted", tools=[tool.definition("openai-chat")],
                                                  messages=messages)
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            result = tool(call.function.arguments)
            results.append(result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    assert message.content == "Done."
    check(results)


def test_the_definitions_and_the_programs_limits():
    tool = ctxfit.PageTool("aggressive", 2000, max_chars_limit=8000, cache_pages=0)
    assert tool.name == "fetch_webpage_markdown"
    schema = tool.definition()["input_schema"]
    assert schema["properties"]["max_chars"]["maximum"] == 8000
    assert "Default: aggressive" in tool.definition("openai-responses")["description"]
    assert tool.definition("openai-chat")["function"]["parameters"] == schema
    with pytest.raises(ValueError, match="openai-responses"):
        tool.definition("gemini")
    too_long = tool({"url": "https://example.com/", "max_chars": 9000})
    assert not too_long["success"] and "between 500 and 8000" in too_long["message"]
    # Python's big integers are named as given, and what the model wrote at length is quoted briefly: the
    # message goes back into its context
    huge = tool({"url": "https://example.com/", "max_chars": 10**40})
    assert "is 1" + "0" * 40 + ": it is between 500 and 8000" in huge["message"]
    for long_input in [{"url": "https://example.invalid/" + "a" * 100_000}, {"url": "x", "y" * 100_000: 1}]:
        failed = tool(long_input)
        assert not failed["success"] and len(failed["message"]) < 700 and "characters)" in failed["message"]
    # the model cannot reach what the program did not allow
    local = tool({"url": "http://127.0.0.1:9/"})
    assert not local["success"] and "loopback" in local["message"]
    with pytest.raises(ValueError, match="timeout"):
        ctxfit.PageTool(timeout=0)
