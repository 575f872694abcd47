"""The OpenAI Agents SDK (`openai-agents`) with `CompactingInputFilter`: real runs of a real `Agent` through the
SDK's own Responses model and `openai` client, against a scripted Responses API on 127.0.0.1."""

import asyncio
import json
import time

import pytest

pytest.importorskip("agents")

from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool, set_tracing_disabled  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

import ctxfit  # noqa: E402
from ctxfit.openai_agents import CompactingInputFilter  # noqa: E402
from loopback import JsonAnswers, serve  # noqa: E402

set_tracing_disabled(True)

RETRIEVING = 'default_profile = "r"\n[profiles.r]\nextends = "smart"\nretrieval_tool = "ctxfit_retrieve"\n'


class Model(JsonAnswers):
    """A Responses API that lists a package `TURNS` times (`ls -R` through the `bash` tool), asks for the first
    listing back through the retrieval tool when it is offered, then answers. Each task (the first user message)
    has its own script; every request is kept."""

    TURNS = 5
    received = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Model.received.append(body)
        items = body["input"]
        task = next(i["content"] for i in items if i.get("role") == "user")
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        n = len(outputs)
        offered = {t.get("name") for t in body.get("tools", [])}
        rid = f"resp_{len(Model.received)}"
        if n < self.TURNS:
            call = ("bash", {"command": f"ls -R src/{task}_{n}"})
        elif "ctxfit_retrieve" in offered and n == self.TURNS:
            named = next(o["output"] for o in outputs if '{"handle":"' in o["output"])
            call = ("ctxfit_retrieve", {"handle": named.split('{"handle":"')[1].split('"')[0]})
        else:
            call = None
        if call is None:
            out = [{"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": f"{task}: done", "annotations": []}]}]
        else:
            out = [{"type": "function_call", "id": f"fc_{rid}", "call_id": f"call_{task}_{n}", "name": call[0],
                    "arguments": json.dumps(call[1]), "status": "completed"}]
        self.send_json(200, {
            "id": rid, "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": body["model"], "output": out, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 105},
        })


def served(handler):
    """`handler` on 127.0.0.1, as a base URL of the API, for as long as the fixture lives."""
    httpd, origin = serve(handler)
    yield origin + "/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def upstream():
    yield from served(Model)


@pytest.fixture
def model(upstream):
    # a client per test: its connections belong to the event loop of the test's one `asyncio.run`
    return OpenAIResponsesModel("gpt-5", AsyncOpenAI(base_url=upstream, api_key="k", max_retries=0))


@pytest.fixture(autouse=True)
def fresh():
    Model.received.clear()


@function_tool
def bash(command: str) -> str:
    """Run a shell command in the repository and return its output."""
    package = command.split()[-1]
    return "\n".join(f"{package}/module_{i}/file_{j}.py" for i in range(60) for j in range(10))


def sent_for(task):
    return [b for b in Model.received if next(i["content"] for i in b["input"] if i.get("role") == "user") == task]


def output_of(body, call_id):
    return next(i["output"] for i in body["input"] if i.get("call_id") == call_id and "output" in i)


def sticky(sent):
    """Each result is sent whole until it is cut, and the same cut on every request after: a request's cache
    breaks at most where a cut is made."""
    outputs = {}
    for body in sent:
        for i in body["input"]:
            if "output" in i:
                outputs.setdefault(i["call_id"], []).append(i["output"])
    for call_id, seen in outputs.items():
        assert sum(a != b for a, b in zip(seen, seen[1:])) <= 1, call_id
    return outputs


def test_a_run_is_compacted_and_its_items_stay_whole(model):
    compaction = CompactingInputFilter("smart")
    agent = Agent(name="coder", instructions="You are a coding agent.", tools=[bash], model=model)
    result = asyncio.run(Runner.run(agent, "alpha", run_config=RunConfig(call_model_input_filter=compaction)))
    assert result.final_output == "alpha: done"
    sent = sent_for("alpha")
    assert len(sent) == Model.TURNS + 1
    # a stale listing was cut in what the model was sent, honestly marked; the newest result never is
    first = "\n".join(f"src/alpha_0/module_{i}/file_{j}.py" for i in range(60) for j in range(10))
    last = output_of(sent[-1], "call_alpha_0")
    assert last != first and "src/alpha_0/module_0/file_0.py" in last and "omitted" in last, last
    assert output_of(sent[-1], f"call_alpha_{Model.TURNS - 1}").count("\n") == 599
    # the run's own items are the whole history
    outputs = [i["output"] for i in result.to_input_list() if i.get("type") == "function_call_output"]
    assert outputs[0] == first
    report = compaction.last_report
    assert report is not None and report["tokens_after"] < report["tokens_before"]
    sticky(sent)
    assert compaction.conversations == 1


def test_the_next_run_continues_the_conversation(model):
    compaction = CompactingInputFilter("smart")
    agent = Agent(name="coder", instructions="You are a coding agent.", tools=[bash], model=model)
    config = RunConfig(call_model_input_filter=compaction)

    async def two_runs():
        first = await Runner.run(agent, "beta", run_config=config)
        before = sent_for("beta")[-1]["input"]
        then = first.to_input_list() + [{"role": "user", "content": "and the tests?"}]
        await Runner.run(agent, then, run_config=config)
        return before, sent_for("beta")[-1]["input"]

    before, after = asyncio.run(two_runs())
    # one conversation: its decisions stand — a result cut in the first run is sent as it was cut, and the
    # second run's first request breaks the cache only where the first run's newest result went stale
    assert compaction.conversations == 1
    assert "omitted" in output_of({"input": before}, "call_beta_0")
    assert output_of({"input": after}, "call_beta_0") == output_of({"input": before}, "call_beta_0")
    assert after[:10] == before[:10]
    sticky(sent_for("beta"))


def test_one_filter_keeps_concurrent_conversations_apart(model):
    compaction = CompactingInputFilter("smart")
    agent = Agent(name="coder", instructions="You are a coding agent.", tools=[bash], model=model)
    config = RunConfig(call_model_input_filter=compaction)

    async def both():
        return await asyncio.gather(*(Runner.run(agent, task, run_config=config) for task in ("gamma", "delta")))

    results = asyncio.run(both())
    assert [r.final_output for r in results] == ["gamma: done", "delta: done"]
    assert compaction.conversations == 2
    for task in ("gamma", "delta"):
        sent = sent_for(task)
        # each conversation's decisions stand: the other's calls never restarted it
        sticky(sent)
        assert "omitted" in output_of(sent[-1], f"call_{task}_0")


def test_the_retrieval_tool_gives_a_cut_result_back(model):
    compaction = CompactingInputFilter(policy=RETRIEVING)
    agent = Agent(name="coder", tools=[bash, compaction.retrieval_tool()], model=model)
    result = asyncio.run(Runner.run(agent, "epsilon", run_config=RunConfig(call_model_input_filter=compaction)))
    assert result.final_output == "epsilon: done"
    retrieved = [i["output"] for i in result.to_input_list()
                 if i.get("type") == "function_call_output" and i["call_id"] == f"call_epsilon_{Model.TURNS}"]
    full = [i["output"] for i in result.to_input_list() if i.get("type") == "function_call_output"]
    assert retrieved and retrieved[0] in full[: Model.TURNS]
    assert compaction.retrieve("no-such-handle") is None
    with pytest.raises(ValueError, match="has no retrieval_tool"):
        CompactingInputFilter("smart").retrieval_tool()


def test_a_request_the_budget_cannot_hold_ends_the_run_unsent(model):
    # a budget the newest result alone outgrows (it is never cut): the run ends with the guard's error, and the
    # request over it is never sent
    tight = '[profiles.tight]\nextends = "smart"\nrequest_budget = 3000\n'
    compaction = CompactingInputFilter(policy=tight)
    agent = Agent(name="coder", instructions="You are a coding agent.", tools=[bash], model=model)
    with pytest.raises(ctxfit.PromptTooLarge) as refused:
        asyncio.run(Runner.run(agent, "zeta", run_config=RunConfig(call_model_input_filter=compaction)))
    assert refused.value.budget == 3000 and refused.value.tokens > 3000
    sent = sent_for("zeta")
    assert len(sent) == 1 and not any("output" in i for i in sent[0]["input"])


def test_a_wrong_profile_fails_at_once():
    with pytest.raises(Exception, match="nosuch"):
        CompactingInputFilter("nosuch")
    with pytest.raises(ValueError, match="max_conversations"):
        CompactingInputFilter("smart", max_conversations=0)


class ShellModel(JsonAnswers):
    """A Responses API that runs the build through the `shell` tool `TURNS` times (`shell_call` items, one
    command each), patches a file once through the `apply_patch` tool, then answers."""

    TURNS = 4
    received = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ShellModel.received.append(body)
        n = sum(1 for i in body["input"] if i.get("type") == "shell_call_output")
        patched = any(i.get("type") == "apply_patch_call_output" for i in body["input"])
        rid = f"resp_{len(ShellModel.received)}"
        if n < self.TURNS:
            out = [{"type": "shell_call", "id": f"sh_{rid}", "call_id": f"call_sh_{n}", "status": "completed",
                    "action": {"commands": ["cargo build"], "timeout_ms": 60000, "max_output_length": None}}]
        elif not patched:
            out = [{"type": "apply_patch_call", "id": f"ap_{rid}", "call_id": "call_ap", "status": "completed",
                    "operation": {"type": "update_file", "path": "src/parse.rs",
                                  "diff": "@@\n-let a: u8 = x;\n+let a: u32 = x;\n"}}]
        else:
            out = [{"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "built", "annotations": []}]}]
        self.send_json(200, {
            "id": rid, "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": body["model"], "output": out, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 105},
        })


def build_log(n):
    lines = [f"   Compiling crate-{i} v0.{i}.{n} (/work/crates/crate-{i})" for i in range(300)]
    lines.insert(200, "error[E0308]: mismatched types at src/parse.rs:88")
    return "\n".join(lines) + "\n"


def test_the_shell_and_apply_patch_tools_items_are_compacted_in_their_own_shape():
    from agents import ApplyPatchTool, ShellCallOutcome, ShellCommandOutput, ShellResult, ShellTool

    runs = []

    def run(request):
        runs.append(request.data.action.commands)
        return ShellResult(output=[ShellCommandOutput(
            stdout="", stderr=build_log(len(runs)), outcome=ShellCallOutcome(type="exit", exit_code=101))])

    class Editor:
        def __init__(self):
            self.done = []

        def update_file(self, operation):
            self.done.append((operation.type, operation.path))
            return "patched src/parse.rs"

        create_file = delete_file = update_file

    editor = Editor()
    httpd, origin = serve(ShellModel)
    try:
        model = OpenAIResponsesModel("gpt-5.1", AsyncOpenAI(base_url=origin + "/v1", api_key="k", max_retries=0))
        agent = Agent(name="builder", model=model, tools=[ShellTool(executor=run), ApplyPatchTool(editor=editor)])
        compaction = CompactingInputFilter("smart")
        result = asyncio.run(Runner.run(agent, "build it", run_config=RunConfig(call_model_input_filter=compaction)))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert result.final_output == "built"
    assert runs == [["cargo build"]] * ShellModel.TURNS and editor.done == [("update_file", "src/parse.rs")]
    last = ShellModel.received[-1]["input"]
    outputs = {i["call_id"]: i for i in last if i.get("type") == "shell_call_output"}
    # a stale build log is sent cut to its first and last lines and its error, as one chunk of stdout with the
    # command's outcome: the shape the API takes (the first waits: its cut would rewrite the cache of the whole
    # conversation before anything was saved)
    for call_id in ("call_sh_1", "call_sh_2"):
        cut = outputs[call_id]["output"]
        assert len(cut) == 1 and cut[0]["stderr"] == "" and cut[0]["outcome"]["exit_code"] == 101, cut
        assert "error[E0308]" in cut[0]["stdout"] and "omitted" in cut[0]["stdout"]
        assert cut[0]["stdout"].count("\n") < 100
    # the newest result is sent whole: the fourth log in the request that answers it
    newest = [i for i in ShellModel.received[4]["input"] if i.get("call_id") == "call_sh_3" and "output" in i]
    assert newest[0]["output"][0]["stderr"] == build_log(4)
    # what the run holds is whole; the call's action is sent as it was; the edit, call and output, is never cut
    whole = [i for i in result.to_input_list() if i.get("type") == "shell_call_output"]
    assert whole[0]["output"][0]["stderr"] == build_log(1)
    assert [i["action"]["commands"] for i in last if i.get("type") == "shell_call"] == [["cargo build"]] * 4
    sent_patch = [i for i in last if i.get("type", "").startswith("apply_patch_call")]
    held_patch = [i for i in result.to_input_list() if i.get("type", "").startswith("apply_patch_call")]
    assert sent_patch == held_patch and len(sent_patch) == 2
    assert compaction.last_report["tokens_after"] < compaction.last_report["tokens_before"]


class ModelWithAWindow(JsonAnswers):
    """A Responses API whose model `window-N` has a context window of N tokens of four bytes of the request body:
    a longer request is refused as the API refuses it (`context_length_exceeded`, no numbers), the others answered
    with their usage — a `read_file` call per turn for `TURNS` turns, then the answer; streamed when asked; the
    same behind the Chat Completions API, whose refusals say the numbers."""

    TURNS = 45
    received = []  # (tokens, refused)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        if not self.path.endswith(("/v1/responses", "/v1/chat/completions")):
            return self.send_json(404, {"error": {"message": "no such path", "type": "invalid_request_error"}})
        body = json.loads(raw)
        tokens, window = len(raw) // 4, int(body["model"][7:].rstrip("n"))
        ModelWithAWindow.received.append((tokens, tokens > window))
        if tokens > window:
            # (`window-Nn`: the refusal says the numbers, as Chat Completions' does)
            numbers = body["model"].endswith("n") or self.path.endswith("/chat/completions")
            said = (f"This model's maximum context length is {window} tokens. However, your messages resulted in "
                    f"{tokens} tokens." if numbers else
                    "Your input exceeds the context window of this model. Please adjust your input and try again.")
            return self.send_json(400, {"error": {
                "message": said, "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}})
        if self.path.endswith("/chat/completions"):
            return self.chat(body, tokens)
        n = sum(1 for i in body["input"] if i.get("type") == "function_call_output")
        rid = f"resp_w{len(ModelWithAWindow.received)}"
        if n < self.TURNS:
            out = [{"type": "function_call", "id": f"fc_{rid}", "call_id": f"call_w_{n}", "name": "read_file",
                    "arguments": json.dumps({"path": f"src/f{n}.rs"}), "status": "completed"}]
        else:
            out = [{"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "done", "annotations": []}]}]
        response = {
            "id": rid, "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": body["model"], "output": out, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens + 5},
        }
        if not body.get("stream"):
            return self.send_json(200, response)
        events = [("response.created", {"type": "response.created", "sequence_number": 0,
                                        "response": {**response, "status": "in_progress", "output": []}}),
                  ("response.completed", {"type": "response.completed", "sequence_number": 1, "response": response})]
        data = "".join(f"event: {name}\ndata: {json.dumps(event)}\n\n" for name, event in events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def chat(self, body, tokens):
        """The same model behind the Chat Completions API (its refusals say the numbers, as that API's do)."""
        n = sum(1 for m in body["messages"] if m.get("role") == "tool")
        if n < self.TURNS:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_c_{n}", "type": "function",
                "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/f{n}.rs"})}}]}
        else:
            message = {"role": "assistant", "content": "done"}
        self.send_json(200, {
            "id": f"chatcmpl-w{n}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if n < self.TURNS else "stop"}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 5, "total_tokens": tokens + 5}})


def read(k):
    return "".join(f"    let value_{k}_{i} = compute_{i}(input_{k}, {i}); // step {i} of file {k}\n" for i in range(40))


@function_tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return read(int(path.split("/f")[1].split(".")[0]))


@pytest.fixture(scope="module")
def windowed():
    yield from served(ModelWithAWindow)


@pytest.mark.parametrize("how", ["model", "provider", "streamed", "chat"])
def test_a_run_that_outgrows_its_models_window_goes_on_within_it(windowed, how):
    """Read 45 files of ~600 tokens each into a 12,000-token window: sent whole, the last request would be twice
    the window. The provider refuses one request; the wrapped model learns the window from it, sends that request
    again compacted within it, and every later one is held there (each answer's usage keeps the rate measured)."""
    ModelWithAWindow.received.clear()
    window = 12_000
    compaction = CompactingInputFilter("smart")
    client = AsyncOpenAI(base_url=windowed, api_key="k", max_retries=0)
    config = RunConfig(call_model_input_filter=compaction)
    if how == "provider":
        from agents import OpenAIProvider

        config = RunConfig(call_model_input_filter=compaction, model_provider=compaction.model_provider(
            OpenAIProvider(openai_client=client, use_responses=True)))
        agent = Agent(name="coder", instructions="You are a coding agent.", tools=[read_file],
                      model=f"window-{window}")
    else:
        from agents import OpenAIChatCompletionsModel

        make = OpenAIChatCompletionsModel if how == "chat" else OpenAIResponsesModel
        agent = Agent(name="coder", instructions="You are a coding agent.", tools=[read_file],
                      model=compaction.model(make(f"window-{window}", client)))

    async def run():
        if how != "streamed":
            return await Runner.run(agent, "Read the project's files.", max_turns=60, run_config=config)
        streamed = Runner.run_streamed(agent, "Read the project's files.", max_turns=60, run_config=config)
        async for _ in streamed.stream_events():
            pass
        return streamed

    result = asyncio.run(run())
    assert result.final_output == "done"
    whole = sum(len(read(k)) for k in range(ModelWithAWindow.TURNS)) // 4
    assert whole > 2 * window
    refused = [tokens for tokens, no in ModelWithAWindow.received if no]
    taken = [tokens for tokens, no in ModelWithAWindow.received if not no]
    assert len(refused) == 1, refused
    assert len(taken) == ModelWithAWindow.TURNS + 1 and max(taken) <= window
    # the run's own items stay whole: only what the model was sent was cut
    outputs = [i["output"] for i in result.to_input_list() if i.get("type") == "function_call_output"]
    assert outputs == [read(k) for k in range(ModelWithAWindow.TURNS)]


def test_without_the_wrapped_model_the_refusal_ends_the_run(windowed):
    """The filter alone cannot send a refused request again: the SDK raises the provider's refusal."""
    import openai

    ModelWithAWindow.received.clear()
    compaction = CompactingInputFilter("smart")
    agent = Agent(name="coder", tools=[read_file], model=OpenAIResponsesModel(
        "window-12000", AsyncOpenAI(base_url=windowed, api_key="k", max_retries=0)))
    with pytest.raises(openai.BadRequestError, match="context window"):
        asyncio.run(Runner.run(agent, "Read the project's files.", max_turns=60,
                               run_config=RunConfig(call_model_input_filter=compaction)))
    # a refused request that no cut brings within the window it taught (its first: nothing stale in it) is not
    # sent twice: the run ends with the guard's error, as under a budget, the provider's refusal its context
    ModelWithAWindow.received.clear()
    tiny = compaction.model(OpenAIResponsesModel("window-10n", AsyncOpenAI(base_url=windowed, api_key="k",
                                                                           max_retries=0)))
    with pytest.raises(ctxfit.PromptTooLarge) as too_large:
        asyncio.run(Runner.run(Agent(name="coder", model=tiny), "hello",
                               run_config=RunConfig(call_model_input_filter=compaction)))
    assert isinstance(too_large.value.__context__, openai.BadRequestError)
    assert len(ModelWithAWindow.received) == 1
    # a window learned that leaves the refused request as it was (a run continuing a stored response sends only
    # its new items, which no cut shortens) does not send it again: it would be refused again
    ModelWithAWindow.received.clear()
    stored = CompactingInputFilter("smart")
    stored._conversations.learn_window = lambda items, refusal: 1_000_000
    with pytest.raises(openai.BadRequestError, match="context window"):
        asyncio.run(Runner.run(Agent(name="coder", model=stored.model(OpenAIResponsesModel(
            "window-10", AsyncOpenAI(base_url=windowed, api_key="k", max_retries=0)))), "hello",
            run_config=RunConfig(call_model_input_filter=stored)))
    assert len(ModelWithAWindow.received) == 1
    # other errors go through the wrapped model as they came
    other = CompactingInputFilter("smart")
    wrapped = other.model(OpenAIResponsesModel("window-12000", AsyncOpenAI(base_url=windowed + "/nowhere",
                                                                           api_key="k", max_retries=0)))
    with pytest.raises(openai.NotFoundError, match="no such path"):
        asyncio.run(Runner.run(Agent(name="coder", model=wrapped), "hello",
                               run_config=RunConfig(call_model_input_filter=other)))
