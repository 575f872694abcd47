"""LangChain 1.x's `create_agent` with `CompactionMiddleware`, and LangGraph's `create_react_agent` with the
hook: real graphs, a scripted chat model, one conversation per thread."""

import sys
import threading
from typing import Dict, List

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

import ctxfit  # noqa: E402
from ctxfit._hooks import to_dicts  # noqa: E402
from ctxfit.langchain import CompactionMiddleware, pre_model_hook  # noqa: E402

RETRIEVING = 'default_profile = "r"\n[profiles.r]\nextends = "smart"\nretrieval_tool = "ctxfit_retrieve"\n'


class Scripted(BaseChatModel):
    """Lists a package `turns` times (`ls -R` through the `bash` tool), optionally asks for the first listing
    back through the retrieval tool, then answers. Records, per task (the first human message), what each call
    was sent."""

    turns: int = 5
    retrieve: bool = False
    seen: Dict[str, List[List[BaseMessage]]] = {}

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        task = next(m.content for m in messages if isinstance(m, HumanMessage))
        self.seen.setdefault(task, []).append(list(messages))
        results = [m for m in messages if isinstance(m, ToolMessage)]
        n = len(results)
        if n < self.turns:
            call = {"id": f"{task}-{n}", "name": "bash", "args": {"command": f"ls -R src/{task}_{n}"}}
        elif self.retrieve and n == self.turns:
            # the handle the first cut result names
            named = next(m.content for m in results if 'call ctxfit_retrieve with {"handle":"' in m.content)
            handle = named.split('{"handle":"')[1].split('"')[0]
            call = {"id": f"{task}-r", "name": "ctxfit_retrieve", "args": {"handle": handle}}
        else:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("done"))])
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    package = command.split()[-1]
    return "\n".join(f"{package}/mod_{k}.py" for k in range(400))


def run(agent, task, thread):
    return agent.invoke({"messages": [{"role": "user", "content": task}]}, {"configurable": {"thread_id": thread}})


def test_the_middleware_compacts_what_the_model_sees_and_leaves_the_state():
    model = Scripted(seen={})
    middleware = CompactionMiddleware("smart")
    agent = create_agent(model, [bash], middleware=[middleware], checkpointer=InMemorySaver())
    state = run(agent, "pkg", "t1")["messages"]
    sent = model.seen["pkg"][-1]
    # the state keeps every result whole; the model's last request has the same messages, stale results cut
    assert [type(m) for m in sent] == [type(m) for m in state[:-1]]
    whole = [m for m in state if isinstance(m, ToolMessage)]
    assert all(m.content == bash.invoke({"command": f"ls -R src/pkg_{i}"}) for i, m in enumerate(whole))
    cut = [(a, b) for a, b in zip(state, sent) if a.content != b.content]
    assert cut and all(isinstance(b, ToolMessage) and b.tool_call_id == a.tool_call_id for a, b in cut)
    assert all(len(b.content) < len(a.content) and "[excerpt of a stale result" in b.content for a, b in cut)
    assert middleware.threads == 1 and middleware.tools == []


def test_two_threads_of_one_agent_keep_their_own_conversations():
    # alone, each thread's requests are these
    alone = Scripted(seen={})
    agent = create_agent(alone, [bash], middleware=[CompactionMiddleware("smart")], checkpointer=InMemorySaver())
    for task in ("alpha", "beta"):
        run(agent, task, task)
    # at once, through one middleware, on two Python threads: the same requests, thread by thread
    together = Scripted(seen={})
    middleware = CompactionMiddleware("smart")
    agent = create_agent(together, [bash], middleware=[middleware], checkpointer=InMemorySaver())
    errors = []

    def go(task):
        try:
            run(agent, task, task)
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=go, args=(t,)) for t in ("alpha", "beta")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert middleware.threads == 2
    for task in ("alpha", "beta"):
        contents = lambda seen: [[m.content for m in request] for request in seen[task]]  # noqa: E731
        assert contents(together.seen) == contents(alone.seen), task
        assert any("[excerpt of a stale result" in m.content for m in together.seen[task][-1])


def test_the_least_recently_used_thread_is_forgotten_past_max_threads():
    middleware = CompactionMiddleware("smart", max_threads=2)
    agent = create_agent(Scripted(seen={}, turns=1), [bash], middleware=[middleware], checkpointer=InMemorySaver())
    for thread in ("a", "b", "c"):
        run(agent, "pkg", thread)
    assert middleware.threads == 2
    with pytest.raises(ValueError, match="max_threads must be at least 1"):
        CompactionMiddleware("smart", max_threads=0)


def test_the_middleware_adds_the_retrieval_tool_and_it_gives_the_thread_s_result_back():
    model = Scripted(seen={}, retrieve=True)
    middleware = CompactionMiddleware(policy=RETRIEVING)
    assert [t.name for t in middleware.tools] == ["ctxfit_retrieve"]
    agent = create_agent(model, [bash], middleware=[middleware], checkpointer=InMemorySaver())
    state = run(agent, "pkg", "t1")["messages"]
    # the model asked for the first cut result by its handle, and got the original whole
    call = next(m for m in state if isinstance(m, AIMessage) and m.tool_calls and m.tool_calls[0]["id"] == "pkg-r")
    handle = call.tool_calls[0]["args"]["handle"]
    original = next(m for m in state if isinstance(m, ToolMessage) and m.tool_call_id == handle)
    back = next(m for m in state if isinstance(m, ToolMessage) and m.tool_call_id == "pkg-r")
    assert back.content == original.content and len(back.content) > 8000


def test_a_wrong_profile_fails_when_the_middleware_is_made():
    with pytest.raises(ValueError, match="nope"):
        CompactionMiddleware("nope")


def test_without_langchain_1_the_middleware_says_what_to_install(monkeypatch):
    import ctxfit.langchain

    monkeypatch.delitem(sys.modules, "ctxfit._agent_middleware", raising=False)
    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)
    with pytest.raises(ImportError, match=r"needs langchain>=1 \(pip install 'ctxfit\[agents\]'\)"):
        ctxfit.langchain.CompactionMiddleware


def test_the_react_agent_hook_keeps_one_conversation_per_thread():
    prebuilt = pytest.importorskip("langgraph.prebuilt")
    hook = pre_model_hook("smart")
    alone = Scripted(seen={})
    with pytest.warns(Warning):
        agent = prebuilt.create_react_agent(alone, [bash], pre_model_hook=pre_model_hook("smart"),
                                            checkpointer=InMemorySaver())
    for task in ("alpha", "beta"):
        run(agent, task, task)
    together = Scripted(seen={})
    with pytest.warns(Warning):
        agent = prebuilt.create_react_agent(together, [bash], pre_model_hook=hook, checkpointer=InMemorySaver())
    threads = [threading.Thread(target=run, args=(agent, t, t)) for t in ("alpha", "beta")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert hook.threads == 2
    for task in ("alpha", "beta"):
        assert [[m.content for m in r] for r in together.seen[task]] == [[m.content for m in r] for r in alone.seen[task]]
        assert any("[excerpt of a stale result" in m.content for m in together.seen[task][-1])


def test_the_middleware_compacts_async_runs_as_sync_ones():
    import asyncio

    alone, together = Scripted(seen={}), Scripted(seen={})
    run(create_agent(alone, [bash], middleware=[CompactionMiddleware("smart")], checkpointer=InMemorySaver()),
        "pkg", "t")
    agent = create_agent(together, [bash], middleware=[CompactionMiddleware("smart")], checkpointer=InMemorySaver())
    asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "pkg"}]}, {"configurable": {"thread_id": "t"}}))
    assert [[m.content for m in r] for r in together.seen["pkg"]] == [[m.content for m in r] for r in alone.seen["pkg"]]
    assert any("[excerpt of a stale result" in m.content for m in together.seen["pkg"][-1])


def test_the_middleware_counts_the_system_prompt_and_the_tools_against_the_budget():
    model = Scripted(seen={})
    middleware = CompactionMiddleware("smart")
    prompt = "You are a careful engineer. " * 200
    agent = create_agent(model, [bash], system_prompt=prompt, middleware=[middleware], checkpointer=InMemorySaver())
    state = run(agent, "pre", "t1")["messages"]
    report = middleware._threads.hook("t1").compactor.last_report
    assert report is not None
    # the same messages alone, without the system prompt and the tool
    alone = ctxfit.Compactor("smart", format="openai")
    alone.compact(to_dicts(state[:-1]))
    extra = report["tokens_before"] - alone.last_report["tokens_before"]
    assert extra >= ctxfit.count_tokens([], system=prompt) + 10, (extra, report)


class Windowed(BaseChatModel):
    """Reads 40 files through the `source` tool, then answers; a call whose messages pass its window (tokens of
    four characters) is refused as Anthropic's API refuses it. Records each call's size and whether it was
    refused."""

    window: int = 12_000
    calls: List[tuple] = []

    @property
    def _llm_type(self) -> str:
        return "windowed"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        tokens = sum(len(str(m.content)) for m in messages) // 4
        refused = tokens > self.window
        self.calls.append((tokens, refused))
        if refused:
            raise ValueError(f"Error code: 400 - prompt is too long: {tokens} tokens > {self.window} maximum")
        n = sum(1 for m in messages if isinstance(m, ToolMessage))
        message = AIMessage(content="done") if n >= 40 else AIMessage(
            content="", tool_calls=[{"id": f"read-{n}", "name": "source", "args": {"path": f"src/file_{n}"}}])
        return ChatResult(generations=[ChatGeneration(message=message)])


@tool
def source(path: str) -> str:
    """Read a source file of the project."""
    k = path.rsplit("_", 1)[-1]
    return "".join(f"    let value_{k}_{i} = compute_{i}(input_{k}, {i}); // step {i} of file {k}\n" for i in range(40))


def test_a_call_refused_as_too_long_for_the_model_is_made_again_within_its_window():
    """The refusal teaches the thread its model's window: the call is made again compacted within it, and the
    run goes on to its end — where, without the middleware, it stops."""
    model = Windowed(calls=[])
    agent = create_agent(model, [source], middleware=[CompactionMiddleware("smart")])
    out = agent.invoke({"messages": [HumanMessage("Read the project's files.")]})
    assert out["messages"][-1].content == "done"
    refused = [tokens for tokens, no in model.calls if no]
    sent = [tokens for tokens, no in model.calls if not no]
    assert len(sent) == 41 and max(sent) <= model.window
    assert len(refused) == 1, model.calls
    # the whole history: more than twice the window, kept in the state
    assert sum(len(str(m.content)) for m in out["messages"]) // 4 > 2 * model.window
    with pytest.raises(ValueError, match="prompt is too long"):
        create_agent(Windowed(), [source]).invoke({"messages": [HumanMessage("Read the project's files.")]})
