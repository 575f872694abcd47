"""Pydantic AI (`pydantic-ai`) with `CompactingCapability`: real runs of a real `Agent` — through its OpenAI Chat
model and `openai` client against a scripted Chat Completions API on 127.0.0.1, and through its `FunctionModel`,
which hands a test the messages a request carries."""

import asyncio
import json
import time

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai import messages as m  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

import ctxfit  # noqa: E402
from ctxfit.pydantic_ai import CompactingCapability  # noqa: E402
from loopback import JsonAnswers, serve  # noqa: E402

TURNS = 5
RETRIEVING = 'default_profile = "r"\n[profiles.r]\nextends = "smart"\nretrieval_tool = "ctxfit_retrieve"\n'


def listing(package):
    return "\n".join(f"{package}/module_{i}/file_{j}.py" for i in range(60) for j in range(10))


def bash(command: str) -> str:
    """Run a shell command in the repository and return its output."""
    return listing(command.split()[-1])


class ChatModel(JsonAnswers):
    """A Chat Completions API that lists a package `TURNS` times (`ls -R` through the `bash` tool), then answers;
    every request body is kept."""

    received = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ChatModel.received.append(body)
        n = sum(1 for msg in body["messages"] if msg["role"] == "tool")
        message = {"role": "assistant", "content": "done"}
        if n < TURNS:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{n}", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": f"ls -R src/p_{n}"})}}]}
        self.send_json(200, {
            "id": f"chatcmpl-{len(ChatModel.received)}", "object": "chat.completion", "created": int(time.time()),
            "model": body["model"], "choices": [{"index": 0, "message": message,
                                                 "finish_reason": "tool_calls" if n < TURNS else "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
        })


def scripted(received):
    """A `FunctionModel` that lists a package `TURNS` times per task (the first user prompt), asks for the first
    listing back through the retrieval tool when it is offered, then answers; what each request carried is kept
    in `received`."""

    def answer(messages, info: AgentInfo):
        received.append(messages)
        task = next(p.content for msg in messages for p in msg.parts if isinstance(p, m.UserPromptPart))
        returns = [p for msg in messages for p in msg.parts if isinstance(p, m.ToolReturnPart)]
        n = len(returns)
        if n < TURNS:
            call = m.ToolCallPart("bash", {"command": f"ls -R src/{task}_{n}"}, tool_call_id=f"call_{task}_{n}")
            return m.ModelResponse(parts=[call])
        offered = {t.name for t in info.function_tools}
        if "ctxfit_retrieve" in offered and n == TURNS:
            named = next(p.content for p in returns if '{"handle":"' in p.content)
            handle = named.split('{"handle":"')[1].split('"')[0]
            call = m.ToolCallPart("ctxfit_retrieve", {"handle": handle}, tool_call_id=f"call_{task}_{n}")
            return m.ModelResponse(parts=[call])
        return m.ModelResponse(parts=[m.TextPart(f"{task}: done")])

    return FunctionModel(answer)


def returns_of(messages):
    return {p.tool_call_id: p.content for msg in messages for p in msg.parts if isinstance(p, m.ToolReturnPart)}


def test_a_run_through_the_openai_chat_model_is_sent_compacted_and_its_history_stays_whole():
    httpd, origin = serve(ChatModel)
    ChatModel.received.clear()
    try:
        model = OpenAIChatModel("scripted-chat-model", provider=OpenAIProvider(base_url=origin + "/v1", api_key="k"))
        compaction = CompactingCapability("smart")
        agent = Agent(model, tools=[bash], capabilities=[compaction], instructions="You are a coding agent.")
        result = agent.run_sync("what is in src?")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert result.output == "done"
    assert len(ChatModel.received) == TURNS + 1
    # on the wire: a stale listing cut, honestly marked, each the same from the request that cut it on; the
    # newest result whole
    sent = [{msg["tool_call_id"]: msg["content"] for msg in body["messages"] if msg["role"] == "tool"}
            for body in ChatModel.received]
    last = sent[-1]
    assert last["call_0"] != listing("src/p_0") and "src/p_0/module_0/file_0.py" in last["call_0"]
    assert "omitted" in last["call_0"] and "re-run the command" in last["call_0"]
    assert last[f"call_{TURNS - 1}"] == listing(f"src/p_{TURNS - 1}")
    for call_id in last:
        seen = [s[call_id] for s in sent if call_id in s]
        assert sum(a != b for a, b in zip(seen, seen[1:])) <= 1, call_id
    # the run's history is whole
    assert returns_of(result.all_messages())["call_0"] == listing("src/p_0")
    report = compaction.last_report
    assert report is not None and report["tokens_after"] < report["tokens_before"]


def test_the_next_run_continues_the_conversation_and_concurrent_ones_stay_apart():
    received = []
    compaction = CompactingCapability("smart")
    agent = Agent(scripted(received), tools=[bash], capabilities=[compaction])

    async def runs():
        first = await agent.run("alpha")
        before = returns_of(received[-1])
        await agent.run("and the tests?", message_history=first.all_messages())
        after = returns_of(received[-1])
        both = await asyncio.gather(agent.run("gamma"), agent.run("delta"))
        return before, after, both

    before, after, both = asyncio.run(runs())
    # one conversation across the two runs: a result cut in the first is sent as it was cut in the second
    assert "omitted" in before["call_alpha_0"] and after["call_alpha_0"] == before["call_alpha_0"]
    # and two more, run at once, each with its own decisions
    assert [r.output for r in both] == ["gamma: done", "delta: done"]
    assert compaction.conversations == 3
    for task in ("gamma", "delta"):
        last = [r for r in received if f"call_{task}_0" in returns_of(r)][-1]
        assert "omitted" in returns_of(last)[f"call_{task}_0"]


def test_the_retrieval_tool_gives_a_cut_result_back():
    received = []
    compaction = CompactingCapability(policy=RETRIEVING)
    agent = Agent(scripted(received), tools=[bash, compaction.retrieval_tool()], capabilities=[compaction])
    result = agent.run_sync("epsilon")
    assert result.output == "epsilon: done"
    returned = returns_of(result.all_messages())
    assert returned[f"call_epsilon_{TURNS}"] in [listing(f"src/epsilon_{n}") for n in range(TURNS)]
    assert compaction.retrieve("no-such-handle") is None
    with pytest.raises(ValueError, match="has no retrieval_tool"):
        CompactingCapability("smart").retrieval_tool()


def test_a_request_the_budget_cannot_hold_ends_the_run_unsent():
    received = []
    tight = '[profiles.tight]\nextends = "smart"\nrequest_budget = 3000\n'
    agent = Agent(scripted(received), tools=[bash], capabilities=[CompactingCapability(policy=tight)])
    with pytest.raises(ctxfit.PromptTooLarge) as refused:
        agent.run_sync("zeta")
    assert refused.value.budget == 3000 and refused.value.tokens > 3000
    # the first request went; the one carrying a listing the budget cannot hold never reached the model
    assert len(received) == 1


def test_a_wrong_profile_fails_at_once():
    with pytest.raises(Exception, match="nosuch"):
        CompactingCapability("nosuch")
    with pytest.raises(ValueError, match="max_conversations"):
        CompactingCapability("smart", max_conversations=0)


def test_a_message_is_read_again_when_its_parts_change():
    # Pydantic AI hands the same message objects to request after request, and each is read once; one whose parts
    # are not the ones read is read again
    compaction = CompactingCapability("smart")
    call = m.ModelResponse(parts=[m.ToolCallPart("bash", {"command": "ls -R src"}, tool_call_id="c0")])
    returned = m.ModelRequest(parts=[m.ToolReturnPart("bash", "short", tool_call_id="c0")])
    history = [m.ModelRequest(parts=[m.UserPromptPart("go")]), call, returned]
    compaction.compact_messages(history)
    before = compaction.last_report["tokens_before"]
    assert compaction.compact_messages(history) == history
    assert compaction.last_report["tokens_before"] == before
    returned.parts = [m.ToolReturnPart("bash", listing("src"), tool_call_id="c0")]
    sent = compaction.compact_messages(history + [m.ModelResponse(parts=[m.TextPart("ok")]),
                                                  m.ModelRequest(parts=[m.UserPromptPart("next")])])
    assert compaction.last_report["tokens_before"] > before + 5_000
    # (what is sent of it is the new listing, whole or cut)
    assert sent[2].parts[0].content.startswith("src/module_0/file_0.py")


WINDOW = 12_000  # the scripted model's context window: tokens of four bytes of the request body


def source(path: str) -> str:
    """Read a source file of the project."""
    k = path.rsplit("_", 1)[-1]
    return "".join(f"    let value_{k}_{i} = compute_{i}(input_{k}, {i}); // step {i} of file {k}\n" for i in range(40))


class ChatModelWithAWindow(JsonAnswers):
    """A Chat Completions API that reads 40 files through the `source` tool, then answers; a request longer than
    its window it refuses as the API does. Every request body is kept, and whether it was refused."""

    received = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        body = json.loads(raw)
        tokens = len(raw) // 4
        ChatModelWithAWindow.received.append((tokens, tokens > WINDOW))
        if tokens > WINDOW:
            return self.send_json(400, {"error": {
                "message": f"This model's maximum context length is {WINDOW} tokens. However, your messages "
                           f"resulted in {tokens} tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        n = sum(1 for msg in body["messages"] if msg["role"] == "tool")
        message = {"role": "assistant", "content": "done"}
        if n < 40:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{n}", "type": "function",
                "function": {"name": "source", "arguments": json.dumps({"path": f"src/file_{n}"})}}]}
        self.send_json(200, {
            "id": "chatcmpl-w", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if n < 40 else "stop"}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 5, "total_tokens": tokens + 5},
        })


def test_a_request_refused_as_too_long_for_the_model_is_attempted_again_within_its_window():
    """The provider's refusal teaches the conversation its model's window: the request is compacted again within
    it and attempted once more, and the run goes on to its end — where, without the capability, it stops."""
    ChatModelWithAWindow.received = []
    httpd, origin = serve(ChatModelWithAWindow)
    try:
        model = OpenAIChatModel("scripted-chat-model", provider=OpenAIProvider(base_url=origin + "/v1", api_key="k"))
        compaction = CompactingCapability("smart")
        agent = Agent(model, tools=[source], capabilities=[compaction])
        result = agent.run_sync("Read the project's files.")
        assert result.output == "done"
        refused = [tokens for tokens, no in ChatModelWithAWindow.received if no]
        assert len(refused) == 1, ChatModelWithAWindow.received
        sent = [tokens for tokens, no in ChatModelWithAWindow.received if not no]
        assert len(sent) == 41 and max(sent) <= WINDOW
        # sent whole, the last request would have been more than twice the window
        assert sum(len(source(f"src/file_{n}")) for n in range(40)) // 4 > 2 * WINDOW
        with pytest.raises(Exception, match="maximum context length"):
            Agent(model, tools=[source]).run_sync("Read the project's files.")
    finally:
        httpd.shutdown()
        httpd.server_close()
