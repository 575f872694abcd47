"""The LangChain / LangGraph bridge, offline with langchain-core."""

import pytest

pytest.importorskip("langchain_core")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402

import ctxfit  # noqa: E402
from ctxfit.langchain import from_dicts, pre_model_hook, to_dicts  # noqa: E402


def conversation(turns=5):
    messages = [SystemMessage("You are a coding agent."), HumanMessage("What is in the tree?")]
    for i in range(turns):
        messages.append(AIMessage("", tool_calls=[{"id": f"c{i}", "name": "bash", "args": {"command": "ls -R"}}]))
        messages.append(ToolMessage("\n".join(f"src/pkg_{i}/mod_{k}.py" for k in range(400)), tool_call_id=f"c{i}"))
    return messages


def test_messages_convert_both_ways():
    messages = conversation(2)
    dicts = to_dicts(messages)
    assert dicts[0] == {"role": "system", "content": "You are a coding agent."}
    assert dicts[2]["tool_calls"][0]["id"] == "c0"
    assert dicts[3]["role"] == "tool" and dicts[3]["tool_call_id"] == "c0"
    back = from_dicts(dicts)
    assert [type(m) for m in back] == [type(m) for m in messages]
    assert back[2].tool_calls[0]["args"] == {"command": "ls -R"}
    assert back[3].content == messages[3].content


def test_the_hook_compacts_what_the_model_sees_and_leaves_the_state():
    hook = pre_model_hook("smart")
    messages = conversation()
    state = {"messages": list(messages)}
    for n in range(3, len(messages) + 1):
        out = hook({"messages": messages[:n]})["llm_input_messages"]
    assert state["messages"] == messages
    assert len(out) == len(messages)
    assert out[0] is messages[0] and out[1] is messages[1]
    shrunk = [i for i, (a, b) in enumerate(zip(messages, out)) if a is not b]
    assert shrunk and all(isinstance(out[i], ToolMessage) for i in shrunk)
    assert all(len(out[i].content) < len(messages[i].content) for i in shrunk)
    assert all(out[i].tool_call_id == messages[i].tool_call_id for i in shrunk)
    before = ctxfit.count_tokens(to_dicts(messages))
    after = ctxfit.count_tokens(to_dicts(out))
    assert after < before


def test_the_hook_uses_the_policy_s_default_profile_else_smart():
    assert pre_model_hook().compactor.profile == "smart"
    mine = 'default_profile = "mine"\n[profiles.mine]\nextends = "seed-002"\n'
    assert pre_model_hook(policy=mine).compactor.profile == "mine"
    assert pre_model_hook("seed-000", policy=mine).compactor.profile == "seed-000"


def test_the_hook_makes_the_retrieval_tool_that_gives_a_cut_result_back():
    policy = 'default_profile = "r"\n[profiles.r]\nextends = "smart"\nretrieval_tool = "ctxfit_retrieve"\n'
    hook = pre_model_hook(policy=policy)
    messages = conversation()
    out = hook({"messages": messages})["llm_input_messages"]
    cut = out[3].content
    assert len(cut) < len(messages[3].content)
    assert cut.endswith('[the full result: call ctxfit_retrieve with {"handle":"c0"}]'), cut[-200:]
    tool = hook.retrieval_tool()
    assert tool.name == "ctxfit_retrieve"
    assert "handle" in tool.args
    assert tool.invoke({"handle": "c0"}) == messages[3].content
    assert tool.invoke({"handle": "c9"}) == "no tool result has the handle 'c9'"
    with pytest.raises(ValueError, match="has no retrieval_tool"):
        pre_model_hook("smart").retrieval_tool()


def test_the_hook_passes_on_what_the_provider_counted_of_the_previous_call():
    """The newest answer's `usage_metadata` is the previous call's count: the budget trigger's, and the rate a
    window learned from a refusal is kept at."""
    hook = pre_model_hook("smart")
    messages = conversation(2)
    hook({"messages": messages})
    report = hook.compactor.last_report
    assert report is not None and not report["input_tokens_reported"]
    messages[-2] = AIMessage("", tool_calls=messages[-2].tool_calls,
                             usage_metadata={"input_tokens": 4321, "output_tokens": 9, "total_tokens": 4330})
    hook({"messages": messages})
    report = hook.compactor.last_report
    assert report is not None and report["input_tokens_reported"] and report["input_tokens"] == 4321
