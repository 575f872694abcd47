"""The retrieval handle from Python: the tool's definition, the handle in every cut result, the original back."""

import json
import re

import ctxfit

POLICY = """
default_profile = "retrieving"
[profiles.retrieving]
extends = "smart"
cache_write_premium = 0
retrieval_tool = "ctxfit_retrieve"
"""


def build_log():
    lines = [f"   Compiling crate-{i} v0.{i}.0 (/work/crates/crate-{i})" for i in range(200)]
    lines.insert(120, "error[E0308]: mismatched types at src/parse.rs:88")
    return "\n".join(lines)


def chat_turn(i, command, output):
    call = {"id": f"call_{i}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{i}", "content": output},
    ]


def test_an_openai_agent_offers_the_tool_and_answers_its_call_with_the_original():
    compactor = ctxfit.Compactor(policy=POLICY)
    assert compactor.retrieval_tool == "ctxfit_retrieve"
    log = build_log()
    messages = [{"role": "user", "content": "Why does the build fail?"}]
    messages += chat_turn(0, "cargo build", log)
    messages += chat_turn(1, "git status", "clean")
    messages.append({"role": "assistant", "content": "Looking at the error."})
    messages.append({"role": "user", "content": "Go on."})
    request = compactor.compact(messages)
    assert compactor.format == "openai"

    tool = compactor.retrieval_tool_definition()
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "ctxfit_retrieve"
    assert tool["function"]["parameters"]["required"] == ["handle"]
    # the same tool in the other formats
    assert compactor.retrieval_tool_definition("anthropic")["input_schema"] == tool["function"]["parameters"]
    assert compactor.retrieval_tool_definition("responses")["name"] == "ctxfit_retrieve"

    cut = request[2]["content"]
    # (of the log's 201 lines: the first 10, the outcome, the last 40)
    assert "error[E0308]: mismatched types" in cut and len(cut) < len(log) / 3
    match = re.search(r'\[the full result: call ctxfit_retrieve with (\{.*\})\]$', cut)
    assert match, cut
    handle = json.loads(match.group(1))["handle"]
    assert handle == "call_0"
    # the caller's own list is untouched, and the original comes back byte for byte
    assert messages[2]["content"] == log
    assert compactor.retrieve(handle) == log
    assert compactor.retrieve("call_9") is None

    # the model calls the tool; its answer is a tool message like any other
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_2", "type": "function", "function": {"name": "ctxfit_retrieve", "arguments": json.dumps({"handle": handle})}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": compactor.retrieve(handle)},
    ]
    request = compactor.compact(messages)
    assert request[-1]["content"] == log


def test_without_the_setting_there_is_no_tool_and_no_handle():
    compactor = ctxfit.Compactor(policy=POLICY.replace('retrieval_tool = "ctxfit_retrieve"', ""))
    assert compactor.retrieval_tool is None
    assert compactor.retrieval_tool_definition() is None
    messages = [{"role": "user", "content": "Why does the build fail?"}]
    messages += chat_turn(0, "cargo build", build_log())
    messages += chat_turn(1, "git status", "clean")
    messages.append({"role": "assistant", "content": "Looking."})
    request = compactor.compact(messages)
    assert len(request[2]["content"]) < len(build_log()) / 3
    assert "the full result" not in request[2]["content"]
    # retrieving needs no setting: the history is the compactor's
    assert compactor.retrieve("call_0") == build_log()
