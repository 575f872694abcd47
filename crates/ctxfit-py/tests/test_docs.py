"""The examples in the docstrings run as written."""

import doctest

import pytest

import ctxfit


@pytest.mark.parametrize(
    "obj",
    [ctxfit.Compactor, ctxfit.estimate_tokens, ctxfit.count_tokens, ctxfit.convert_messages, ctxfit.clean_html, ctxfit.replay],
    ids=lambda o: o.__name__,
)
def test_docstring_examples(obj):
    assert obj.__doc__, f"{obj.__name__} has no docstring"
    finder = doctest.DocTestFinder(recurse=False)
    tests = finder.find(obj, obj.__name__, globs={"ctxfit": ctxfit})
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0
    assert runner.tries > 0 or obj is ctxfit.replay


def test_the_type_stubs_name_what_the_module_has():
    """`_ctxfit.pyi` (what editors and type checkers read) and the compiled module list the same functions and
    classes, and the same public methods and properties of each class."""
    import ast
    import pathlib

    import ctxfit._ctxfit as compiled

    def names(body):
        """What a stub's body defines: functions, classes and annotated names (constants, properties)."""
        out = {n.name: n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        out.update({n.target.id: n for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)})
        return out

    stub = ast.parse((pathlib.Path(ctxfit.__file__).parent / "_ctxfit.pyi").read_text())
    defined = names(stub.body)
    public = {n for n in dir(compiled) if not n.startswith("_")}
    stubbed_public = {n for n in defined if not n.startswith("_")}
    assert public == stubbed_public, (public - stubbed_public, stubbed_public - public)
    for name, node in defined.items():
        if isinstance(node, ast.ClassDef) and node.body and not issubclass(getattr(compiled, name), BaseException):
            stubbed = {n for n in names(node.body) if not n.startswith("_")}
            actual = {n for n in dir(getattr(compiled, name)) if not n.startswith("_")}
            assert stubbed == actual, (name, actual - stubbed, stubbed - actual)


# --- the agent loops of docs/python.md, as written, with the official SDKs against a stand-in for the API ---

import http.server  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

from conftest import REPO  # noqa: E402

# what the stand-in model asks for, one command per request, then it answers
COMMANDS = ["seq 1 20000", "seq 1 15000 | sed 's/$/ is a line of output/'", "ls"]


def doc_blocks():
    text = (REPO / "docs" / "python.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


class StandIn(http.server.BaseHTTPRequestHandler):
    """The Messages and Chat Completions APIs as far as the agent loops use them; checks each request."""

    requests = []
    problems = []
    retrieved = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        StandIn.requests.append((self.path, body))
        if self.path == "/v1/messages":
            answer = self.anthropic(body)
        elif self.path == "/v1/chat/completions":
            answer = self.openai(body)
        elif self.path == "/v1/responses":
            answer = self.responses_api(body)
        else:
            self.send_error(404)
            return
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def anthropic(self, body):
        messages = body["messages"]
        uses = set()
        for i, m in enumerate(messages):
            blocks = m["content"] if isinstance(m["content"], list) else []
            for b in blocks:
                if b.get("type") == "tool_result" and b["tool_use_id"] not in uses:
                    StandIn.problems.append(f"messages[{i}]: result {b['tool_use_id']} answers no call")
            uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        turn = sum(m["role"] == "assistant" for m in messages)
        if turn < len(COMMANDS):
            content = [{"type": "tool_use", "id": f"toolu_{turn}", "name": "bash", "input": {"command": COMMANDS[turn]}}]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": "A stand-in answer."}]
            stop = "end_turn"
        usage = {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": 10,
                 "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        return {"id": f"msg_{turn}", "type": "message", "role": "assistant", "model": body["model"],
                "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}

    def openai(self, body):
        messages = body["messages"]
        calls = set()
        for i, m in enumerate(messages):
            if m["role"] == "assistant":
                calls = {c["id"] for c in m.get("tool_calls") or []}
            elif m["role"] == "tool" and m["tool_call_id"] not in calls:
                StandIn.problems.append(f"messages[{i}]: result {m['tool_call_id']} answers no call")
        turn = sum(m["role"] == "assistant" for m in messages)
        offered = {t["function"]["name"] for t in body.get("tools", [])}
        handles = [h for m in messages if m["role"] == "tool" and isinstance(m["content"], str)
                   for h in re.findall(r'call ctxfit_retrieve with \{"handle":"([^"]+)"\}', m["content"])]
        if turn < len(COMMANDS):
            message = {"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{turn}", "type": "function",
                       "function": {"name": "bash", "arguments": json.dumps({"command": COMMANDS[turn]})}}]}
            finish = "tool_calls"
        elif turn == len(COMMANDS) and "ctxfit_retrieve" in offered and handles:
            # a model that wants back what a cut left out asks for it by the marker's handle
            StandIn.retrieved.append(handles[0])
            message = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_back", "type": "function",
                       "function": {"name": "ctxfit_retrieve", "arguments": json.dumps({"handle": handles[0]})}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": "A stand-in answer."}
            finish = "stop"
        tokens = len(json.dumps(body)) // 4
        return {"id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": tokens, "completion_tokens": 10, "total_tokens": tokens + 10}}

    def responses_api(self, body):
        items = body["input"]
        calls = set()
        for i, item in enumerate(items):
            if item.get("type") == "function_call":
                calls.add(item["call_id"])
            elif item.get("type") == "function_call_output" and item["call_id"] not in calls:
                StandIn.problems.append(f"input[{i}]: result {item['call_id']} answers no call")
        turn = sum(item.get("type") == "function_call" for item in items)
        if turn < len(COMMANDS):
            output = [{"type": "function_call", "id": f"fc_{turn}", "call_id": f"call_{turn}", "name": "bash",
                       "arguments": json.dumps({"command": COMMANDS[turn]}), "status": "completed"}]
        else:
            output = [{"type": "message", "id": f"msg_{turn}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": "A stand-in answer.", "annotations": []}]}]
        tokens = len(json.dumps(body)) // 4
        return {"id": f"resp_{turn}", "object": "response", "created_at": 0, "status": "completed",
                "model": body["model"], "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
                "tools": [], "usage": {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
                                       "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                                       "total_tokens": tokens + 10}}

    def log_message(self, *args):
        pass


@pytest.fixture
def stand_in():
    StandIn.requests, StandIn.problems, StandIn.retrieved = [], [], []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


# each example of docs/python.md, by what marks it, and the packages it needs
EXAMPLES = {
    "anthropic-sdk": ("import anthropic\n", ["anthropic"]),
    "openai-sdk": ("compactor = ctxfit.Compactor(\"smart\")\nmessages: list[dict", ["openai"]),
    "retrieval": ("compactor.retrieval_tool_definition(\"openai\")", ["openai"]),
    "create_agent": ("middleware=[CompactionMiddleware(", ["langchain.agents", "langchain_anthropic"]),
    "create_react_agent": ("pre_model_hook=pre_model_hook(", ["langgraph.prebuilt", "langchain_anthropic"]),
    "openai-agents": ("call_model_input_filter=", ["agents"]),
    "pydantic-ai": ("capabilities=[compaction]", ["pydantic_ai"]),
    "reference": ("ctxfit.estimate_tokens(", []),
}


def example(name):
    mark, needs = EXAMPLES[name]
    for module in needs:
        pytest.importorskip(module)
    [code] = [b for b in doc_blocks() if mark in b]
    return code


def test_every_example_is_one_of_those_run():
    for block in doc_blocks():
        assert sum(mark in block for mark, _ in EXAMPLES.values()) == 1, block[:200]
    assert len(doc_blocks()) == len(EXAMPLES)


def run_example(code, stand_in, cwd):
    # (the Agents SDK's traces go to OpenAI's own servers, whatever the base URL: not from a test)
    env = dict(os.environ, ANTHROPIC_BASE_URL=stand_in, ANTHROPIC_API_KEY="stand-in",
               OPENAI_BASE_URL=stand_in + "/v1", OPENAI_API_KEY="stand-in", OPENAI_AGENTS_DISABLE_TRACING="1")
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    "name",
    ["anthropic-sdk", "openai-sdk", "retrieval", "create_agent", "create_react_agent", "openai-agents", "pydantic-ai"],
)
def test_the_agent_loops_run_as_written(name, stand_in, tmp_path):
    out = run_example(example(name), stand_in, tmp_path)
    assert "A stand-in answer." in out
    assert not StandIn.problems, StandIn.problems
    first_output = "\n".join(str(n) for n in range(1, 20001))
    last = StandIn.requests[-1][1]
    if name == "retrieval":
        # the model asked for the first output back by the handle its cut named, and was given all of it (all
        # the tool returned: its last 100,000 characters), where its own place in the request holds an excerpt
        assert StandIn.retrieved == ["call_0"], StandIn.retrieved
        assert len(StandIn.requests) == len(COMMANDS) + 2
        [first, back] = [m for m in last["messages"] if m.get("tool_call_id") in ("call_0", "call_back")]
        assert back["content"] == (first_output + "\n")[-100_000:]
        assert len(first["content"]) < 10_000 and "ctxfit_retrieve" in first["content"]
        return
    assert len(StandIn.requests) == len(COMMANDS) + 1
    # by the last request, the long outputs the model had answered are cut to excerpts
    assert first_output not in json.dumps(last)
    assert len(json.dumps(last)) < 20_000, len(json.dumps(last))
    if name.endswith("-sdk") or name in ("openai-agents", "pydantic-ai"):
        assert re.search(r"last request: \d+ tokens of history sent as \d+", out)


def test_the_reference_card_runs_as_written(tmp_path):
    out = run_example(example("reference"), "http://127.0.0.1:9", tmp_path).splitlines()
    assert out[:3] == ["# Notes", "", "The [first](https://example.com/a) note."]
    assert out[-2].startswith("False could not fetch http://127.0.0.1/admin: refused to connect"), out[-2]
    assert out[-1] == "4 messages; ['none', 'oracle', 'smart']"


@pytest.mark.parametrize(
    "name", ["anthropic-sdk", "openai-sdk", "retrieval", "reference", "openai-agents", "pydantic-ai"]
)
def test_the_examples_type_check(name, tmp_path):
    """The SDK loops and the reference card pass mypy with the SDKs' types and ctxfit's stubs (`last_report` a
    TypedDict)."""
    api = pytest.importorskip("mypy.api")
    code = example(name)
    program = tmp_path / f"example_{name.replace('-', '_')}.py"
    program.write_text(code)
    out, err, status = api.run([str(program), "--no-error-summary", "--cache-dir", str(tmp_path / ".mypy")])
    assert status == 0, out + err


def test_the_package_type_checks(tmp_path):
    """The package's own Python — the framework bridges beside the stubs — passes mypy against the frameworks'
    types (those installed)."""
    api = pytest.importorskip("mypy.api")
    package = os.path.dirname(ctxfit.__file__)
    out, err, status = api.run([package, "--no-error-summary", "--cache-dir", str(tmp_path / ".mypy")])
    assert status == 0, out + err


def test_the_report_s_typed_dicts_name_its_keys():
    from typing import get_type_hints

    from ctxfit.types import BlockReport, HeldBack, Report

    compactor = ctxfit.Compactor("smart", format="openai")
    assert compactor.last_report is None
    messages = [{"role": "user", "content": "x"}]
    reports = []
    for n in range(6):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{n}", "type": "function",
                         "function": {"name": "bash", "arguments": json.dumps({"command": f"ls -R src/p_{n}"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}",
                         "content": "\n".join(f"src/p_{n}/mod_{k}.py" for k in range(400))})
        compactor.compact(messages)
        reports.append(compactor.last_report)
    assert all(set(r) == set(get_type_hints(Report)) for r in reports)
    blocks = [b for r in reports for b in r["new_blocks"]]
    held = [r["held_back"] for r in reports if r["held_back"] is not None]
    assert blocks and held, "the session cuts and holds back"
    assert all(set(b) == set(get_type_hints(BlockReport)) for b in blocks)
    assert all(set(h) == set(get_type_hints(HeldBack)) for h in held)
