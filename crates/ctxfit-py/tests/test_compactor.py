"""ctxfit.Compactor: the live loop, called before every request, on real sessions and on written ones."""

import copy
import warnings

from pathlib import Path

import pytest

import ctxfit
from conftest import session_files


def requests_of(messages):
    """The histories a live agent sends: the messages before each assistant message, then all of them."""
    for i, m in enumerate(messages):
        if i > 0 and m.get("role") == "assistant":
            yield messages[:i]
    yield messages


def anthropic_pairs_ok(request):
    """Every tool_result answers a tool_use of the message before it, every answered tool_use is answered."""
    for i, m in enumerate(request):
        blocks = m["content"] if isinstance(m.get("content"), list) else []
        results = [b["tool_use_id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if not results:
            continue
        prev = request[i - 1]["content"] if i > 0 and isinstance(request[i - 1].get("content"), list) else []
        uses = {b["id"] for b in prev if isinstance(b, dict) and b.get("type") == "tool_use"}
        missing = [r for r in results if r not in uses]
        assert not missing, f"message {i}: results {missing} answer no call of message {i - 1}"
    return True


def openai_pairs_ok(request):
    """Every `tool` message answers a call of the assistant message before its run of results."""
    calls = set()
    for i, m in enumerate(request):
        if m.get("role") == "assistant":
            calls = {c["id"] for c in m.get("tool_calls") or []}
        elif m.get("role") == "tool":
            assert m["tool_call_id"] in calls, f"message {i}: result {m['tool_call_id']} answers no call"
    return True


def short(text):
    return [{"role": "user", "content": text}]


def tool_turn(i, output, name="Bash", command="ls -R"):
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": name, "input": {"command": command}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}]},
    ]


def listing(n):
    return "\n".join(f"src/module_{k}/file_{k}.py" for k in range(n))


def written_session(turns=6):
    messages = short("List the tree, then summarise it.")
    for i in range(turns):
        messages += tool_turn(i, listing(1000 + i))
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
    return messages


def test_compacts_stale_results_and_keeps_the_callers_objects():
    messages = written_session()
    before = copy.deepcopy(messages)
    compactor = ctxfit.Compactor("smart")
    for history in requests_of(messages):
        request = compactor.compact(history)
    assert messages == before, "the input was changed"
    assert compactor.last_report["tokens_after"] < compactor.last_report["tokens_before"]
    assert anthropic_pairs_ok(request)
    changed = [i for i, (a, b) in enumerate(zip(messages, request)) if a is not b]
    assert changed, "nothing was compacted"
    for i, (a, b) in enumerate(zip(messages, request)):
        if i not in changed:
            assert a is b, f"message {i} is unchanged but not the caller's object"
        else:
            text = b["content"][0]["content"]
            text = text if isinstance(text, str) else text[0]["text"]
            assert len(text) < len(a["content"][0]["content"])
    # the same history again: the same answer, the changed messages' dicts reused
    again = compactor.compact(messages)
    assert all(x is y for x, y in zip(again, request))


def test_a_rebuilt_list_reads_as_the_same_conversation():
    messages = written_session()
    live = ctxfit.Compactor("smart")
    rebuilt = ctxfit.Compactor("smart")
    for history in requests_of(messages):
        a = live.compact(history)
        b = rebuilt.compact(copy.deepcopy(history))
    assert a == b
    assert len(rebuilt) == len(messages)


def test_the_answer_may_be_the_history_the_caller_keeps():
    # some loops keep the compacted list and append to it
    messages = written_session(turns=3)
    compactor = ctxfit.Compactor("smart")
    history = []
    expected = ctxfit.Compactor("smart")
    for m in messages:
        history.append(m)
        if m["role"] == "assistant":
            history = compactor.compact(history[:-1]) + [m]
            reference = expected.compact(messages[: len(history) - 1])
            assert history[:-1] == reference
    assert len(compactor) == len(messages) - 1


def markers(request):
    """Where a request's `cache_control` breakpoints are: (message, block) pairs."""
    return [
        (i, j)
        for i, m in enumerate(request)
        if isinstance(m["content"], list)
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]


def unmarked(request):
    return [
        {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
        if isinstance(m["content"], list)
        else m
        for m in request
    ]


@pytest.mark.parametrize("how", ["in place", "on copies"])
def test_breakpoints_the_caller_moves_are_sent_where_it_put_them(how):
    # Anthropic's computer-use loop marks the last three user messages and takes the marker off the fourth in
    # place; other loops mark a copy of the newest. A message compaction changed follows the caller's markers
    # (a marker kept from when it was read would pile up past Anthropic's four), and the conversation goes on.
    messages = short("List the tree, then summarise it.")
    for i in range(12):
        messages += tool_turn(i, listing(1000 + i))
    compactor, plain = ctxfit.Compactor("seed-002"), ctxfit.Compactor("seed-002")
    history, previous, reused = [], None, 0
    for m in messages:
        history.append(m if how == "on copies" else copy.deepcopy(m))
        if m["role"] != "user":
            continue
        if how == "in place":
            users = [u for u in history if u["role"] == "user" and isinstance(u["content"], list)]
            for k, u in enumerate(reversed(users)):
                if k < 3:
                    u["content"][-1]["cache_control"] = {"type": "ephemeral"}
                else:
                    u["content"][-1].pop("cache_control", None)
            sent = history
        else:
            last, sent = history[-1], history
            if isinstance(last["content"], list):
                block = {**last["content"][-1], "cache_control": {"type": "ephemeral"}}
                sent = history[:-1] + [{**last, "content": [*last["content"][:-1], block]}]
        request = compactor.compact(sent)
        assert markers(request) == markers(sent)
        assert unmarked(request) == plain.compact(unmarked(sent))
        # not a new conversation at every call: a cut message whose markers stayed is the dict sent before
        if previous:
            kept = [i for i in cut if marks[i] == markers([sent[i]])]
            assert all(request[i] is previous[i] for i in kept)
            reused += len(kept)
        previous, marks = request, [markers([x]) for x in sent]
        cut = [i for i, (a, b) in enumerate(zip(sent, request)) if a is not b]
    assert reused and len(compactor) == len(messages)
    assert sum(1 for a, b in zip(sent, request) if a is not b) >= 8, "nothing was compacted"


def test_breakpoints_moved_on_the_answer_the_caller_keeps():
    # a loop that keeps the compacted list as its history moves the markers on the compactor's own dicts
    def mark_last_three(history):
        left = 3
        for m in reversed(history):
            if m["role"] == "user" and isinstance(m["content"], list):
                if not left:
                    m["content"][-1].pop("cache_control", None)
                    break
                left -= 1
                m["content"][-1]["cache_control"] = {"type": "ephemeral"}

    compactor, plain = ctxfit.Compactor("seed-002"), ctxfit.Compactor("seed-002")
    history, reference = short("List the tree."), short("List the tree.")
    for i in range(15):
        history += tool_turn(i, listing(1000 + i))
        reference += tool_turn(i, listing(1000 + i))
        mark_last_three(history)
        history = compactor.compact(history)
        assert len(markers(history)) == min(i + 1, 3)
        assert unmarked(history) == plain.compact(reference)
    assert len(compactor) == len(reference) and history != reference


def test_a_rewritten_history_starts_over():
    messages = written_session()
    compactor = ctxfit.Compactor("smart")
    compactor.compact(messages)
    assert len(compactor) == len(messages)
    other = short("Something else entirely.")
    assert compactor.compact(other) == other
    assert len(compactor) == 1


def test_malformed_messages_are_refused_and_lose_nothing():
    messages = written_session(turns=2)
    compactor = ctxfit.Compactor("smart")
    good = compactor.compact(messages)
    with pytest.raises(ctxfit.CtxfitError, match=r"messages\[6\]"):
        compactor.compact(messages + [{"content": "no role"}])
    with pytest.raises(TypeError, match=r"messages\[6\]\.content\[0\]: cannot send an object of type object"):
        compactor.compact(messages + [{"role": "user", "content": [object()]}])
    with pytest.raises(ValueError, match=r"messages\[6\]\.temperature: NaN is not a JSON number"):
        compactor.compact(messages + [{"role": "user", "content": "x", "temperature": float("nan")}])
    # a lone surrogate, an integer Python will not write out, a list that holds itself: each named at its place
    with pytest.raises(ValueError, match=r"messages\[6\]\.content: a string JSON cannot hold: a lone surrogate .* U\+FFFD"):
        compactor.compact(messages + [{"role": "user", "content": "a\ud800b"}])
    with pytest.raises(ValueError, match=r"messages\[6\]\.n: an integer Python will not write"):
        compactor.compact(messages + [{"role": "user", "content": "x", "n": 10**5000}])
    itself = []
    itself.append(itself)
    # (the path's middle left out: the message stays a line)
    with pytest.raises(ValueError, match=r"^messages\[6\]\.content(\[0\])+…(\[0\])+: nested more than 256 levels deep$") as e:
        compactor.compact(messages + [{"role": "user", "content": itself}])
    assert len(str(e.value)) < 200
    deep = {}
    for _ in range(1000):
        deep = {"key.with[odd]": deep}
    with pytest.raises(ValueError, match=r"^messages\[6\]\.meta\.key\.with\[odd\].*….*: nested more than 256") as e:
        compactor.compact(messages + [{"role": "user", "content": "x", "meta": deep}])
    assert len(str(e.value)) < 200
    assert len(compactor) == len(messages)
    assert compactor.compact(messages) == good


def test_sdk_objects_are_read_through_model_dump():
    class Block:
        """What `anthropic.types.ToolUseBlock` offers the compactor."""

        def __init__(self, **fields):
            self.fields = fields

        def model_dump(self, mode="python", exclude_none=False):
            assert mode == "json" and exclude_none
            return dict(self.fields)

    messages = short("go")
    for i in range(4):
        messages.append({"role": "assistant", "content": [Block(type="tool_use", id=f"t{i}", name="Bash", input={"command": "ls -R"})]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": listing(500)}]})
    messages.append({"role": "assistant", "content": [Block(type="text", text="ok")]})
    request = ctxfit.Compactor("smart").compact(messages)
    assert request[1] is messages[1], "an unchanged message with SDK objects is sent as it is"
    assert request[2] is not messages[2]
    assert ctxfit.count_tokens(request) < ctxfit.count_tokens(messages)


def test_openai_chat_is_detected_when_the_first_call_appears():
    messages = [{"role": "user", "content": "list the files"}]
    compactor = ctxfit.Compactor("smart")
    compactor.compact(messages)
    assert compactor.format == "anthropic"  # plain text reads the same in every format
    for i in range(5):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls -R"}'}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": listing(500)})
        request = compactor.compact(messages)
        assert compactor.format == "openai"
        assert openai_pairs_ok(request)
    assert ctxfit.count_tokens(request) < ctxfit.count_tokens(messages)
    assert compactor.last_report["compacted_total"] >= 4


def test_what_reads_but_is_probably_wrong_is_warned_once():
    # a hand-built agent loop that forgot the tool message's id: kept whole, never compacted — said, not passed over
    compactor = ctxfit.Compactor("smart")
    messages = [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]},
        {"role": "tool", "content": "a.py\nb.py"},
    ]
    with pytest.warns(UserWarning, match=r"message 2: a `tool` message without a `tool_call_id` string answers no call"):
        assert compactor.compact(messages) == messages
    # each message is judged once: the next call, with only a well-formed message more, says nothing
    messages.append({"role": "assistant", "content": "done"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compactor.compact(messages)



def test_content_items_that_are_not_blocks_are_warned_and_kept():
    compactor = ctxfit.Compactor("smart")
    messages = [{"role": "user", "content": [1, 2]}]
    with pytest.warns(UserWarning, match=r"message 0: content item 0 is a number, not a block"):
        assert compactor.compact(messages) == messages

def test_request_budget_guard():
    policy = 'default_profile = "tight"\n[profiles.tight]\nextends = "smart"\nrequest_budget = 50\nwarning_threshold = 1\n'
    compactor = ctxfit.Compactor(policy=policy)
    assert compactor.profile == "tight"
    compactor.compact(short("hello"))
    with pytest.warns(UserWarning, match="above the warning threshold of 1"):
        assert compactor.check_request() > 0
    compactor.compact(short("word " * 400))
    with pytest.raises(ctxfit.PromptTooLarge, match=r"Prompt too large: \d+ tokens exceeds budget of 50") as e:
        compactor.check_request()
    assert e.value.budget == 50 and e.value.tokens > 50
    assert isinstance(e.value, ctxfit.CtxfitError)


def test_settings_toml_is_a_policy_python_reads_back():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    for profile in ctxfit.profiles():
        text = ctxfit.Compactor(profile).settings_toml
        settings = tomllib.loads(text)["profiles"][profile]
        # the same profile, written back as a policy, gives the same TOML
        assert ctxfit.Compactor(profile, policy=text).settings_toml == text
        if profile == "seed-000":
            assert settings["rules"][0]["params"]["chars"] == 500
        if profile == "smart":
            assert settings["cache_write_premium"] == 11.5


def test_the_profile_when_none_is_named():
    # as in the CLI, the replay and the proxy: the policy's default profile, else its only one, else smart
    assert ctxfit.Compactor().profile == "smart"
    one = '[profiles.mine]\nextends = "smart"\nrequest_budget = 150000\n'
    assert ctxfit.Compactor(policy=one).profile == "mine"
    assert "request_budget = 150000" in ctxfit.Compactor(policy=one).settings_toml
    two = one + '[profiles.other]\nextends = "seed-002"\n'
    with pytest.raises(ctxfit.CtxfitError, match=r"several \(mine, other\) and no `default_profile`"):
        ctxfit.Compactor(policy=two)
    assert ctxfit.Compactor("other", policy=two).profile == "other"
    assert ctxfit.Compactor(policy='default_profile = "other"\n' + two).profile == "other"


def test_unknown_names_are_refused_clearly():
    with pytest.raises(ctxfit.CtxfitError, match="no-such-profile"):
        ctxfit.Compactor("no-such-profile")
    with pytest.raises(ValueError, match="unknown estimator `nope`"):
        ctxfit.Compactor("smart", estimator="nope")
    with pytest.raises(OSError, match="no such policy file"):
        ctxfit.Compactor(policy="missing.toml")
    with pytest.raises(ctxfit.CtxfitError, match=r"<policy>:1:"):
        ctxfit.Compactor(policy="default_profile = [")
    # a folder or a device given as the policy: named, and read no further than a policy could be long
    with pytest.raises(IsADirectoryError, match="a folder, not a policy file"):
        ctxfit.Compactor(policy=str(Path(__file__).parent))
    with pytest.raises(OSError, match=r"/dev/zero: cannot read: more than 1048576 bytes"):
        ctxfit.Compactor(policy="/dev/zero")


def test_every_profile_keeps_pairs_valid_on_real_sessions(corpus):
    files = session_files(corpus / "trajectories" / "claude-code")[:4] + session_files(corpus / "trajectories" / "swe-agent")
    assert files
    for path in files:
        for s in ctxfit.load_sessions(path):
            check = anthropic_pairs_ok if s["format"] == "anthropic" else openai_pairs_ok
            for profile in ctxfit.profiles():
                compactor = ctxfit.Compactor(profile, format=s["format"])
                before = copy.deepcopy(s["messages"])
                for history in requests_of(s["messages"]):
                    request = compactor.compact(history, system=s["system"])
                    check(request)
                assert s["messages"] == before, f"{path.name}: {profile} changed its input"


def test_a_restarted_agent_sends_the_same_bytes(tmp_path):
    messages = written_session(turns=8)
    points = [i for i, m in enumerate(messages) if i > 0 and m["role"] == "assistant"]
    half = points[len(points) // 2]
    through = ctxfit.Compactor("smart")
    for i in points:
        expected = through.compact(messages[:i])
    first = ctxfit.Compactor("smart")
    for i in points:
        if i > half:
            break
        first.compact(messages[:i])
    saved = tmp_path / "state.json"
    import json

    saved.write_text(json.dumps(first.save()))
    second = ctxfit.Compactor("smart")
    second.restore(json.loads(saved.read_text()))
    for i in points:
        if i > half:
            got = second.compact(messages[:i])
    assert got == expected
    with pytest.raises(ctxfit.CtxfitError, match="profile `smart`, this compactor runs `seed-002`"):
        ctxfit.Compactor("seed-002").restore(first.save())
    with pytest.raises(ctxfit.CtxfitError, match="not a saved compactor state"):
        ctxfit.Compactor("smart").restore({"version": 1})


def test_a_restart_keeps_the_cuts_waiting_for_their_turn(corpus):
    # under smart's payback rule, small cuts wait for a request where they pay for their cache write; a state
    # saved while some wait carries them, and the restored compactor makes them when the uninterrupted one does
    checked = 0
    for path in session_files(corpus / "trajectories" / "openhands"):
        for s in ctxfit.load_sessions(path):
            requests = list(requests_of(s["messages"]))
            through = ctxfit.Compactor("smart", format=s["format"])
            sent, saves = [], []
            for k, history in enumerate(requests):
                sent.append(through.compact(history, system=s["system"]))
                state = through.save()
                if state.get("held"):
                    saves.append((k, state))
            for k, state in saves:
                restored = ctxfit.Compactor("smart", format=s["format"])
                restored.restore(state)
                for m in range(k + 1, len(requests)):
                    assert restored.compact(requests[m], system=s["system"]) == sent[m], f"{path.name}: {k} → {m}"
                checked += 1
    assert checked > 0


TOOLS = [
    {"name": f"tool_{k}", "description": "Runs a step of the build. " * 40,
     "input_schema": {"type": "object", "properties": {f"arg_{j}": {"type": "string", "description": "An argument. " * 5} for j in range(8)}}}
    for k in range(12)
]


def test_the_tools_count_against_the_budget_as_the_system_prompt_does():
    # files read whole, which `smart` keeps: only the budget cuts them
    messages = short("Fix the bug.")
    for i in range(12):
        read = "\n".join(f"line {k} of module_{i}.py: value_{k} = compute(value_{k - 1}, {i})" for k in range(400))
        messages += tool_turn(i, read)
    policy = '[profiles.tight]\nextends = "smart"\nrequest_budget = 40000\n'
    many = TOOLS * 3  # an agent with many MCP tools: about 19k tokens of definitions
    after = {}
    for tools in (None, many):
        compactor = ctxfit.Compactor("tight", policy=policy)
        for history in requests_of(messages):
            compactor.compact(history, tools=tools)
        report = compactor.last_report
        after[tools is not None] = (report["tokens_before"], report["tokens_after"])
        assert report["tokens_after"] <= 40000
        assert compactor.check_request() == report["tokens_after"]
    # the tools are in the request's count, and the budget cut further to hold it: not counting them, the
    # request sent would have been above it
    tool_tokens = after[True][0] - after[False][0]
    assert tool_tokens > 15000, after
    assert after[False][1] + tool_tokens > 40000, after
    assert after[True][1] - tool_tokens < after[False][1], after
    # the same tools in any format's spelling count the same
    openai_spelling = [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}} for t in TOOLS]
    c = ctxfit.Compactor("smart")
    c.compact(messages[:3], tools=openai_spelling)
    d = ctxfit.Compactor("smart")
    d.compact(messages[:3], tools=TOOLS)
    assert c.last_report["tokens_before"] == d.last_report["tokens_before"]
    with pytest.raises(ctxfit.CtxfitError, match=r"tools\[1\]"):
        ctxfit.Compactor("smart").compact(messages[:3], tools=[TOOLS[0], "read"])
    with pytest.raises(ctxfit.CtxfitError, match="tools"):
        ctxfit.Compactor("smart").compact(messages[:3], tools={"name": "read"})


def test_a_restart_with_a_system_prompt_and_tools_keeps_the_decisions(corpus):
    # the restarted agent passes its system prompt and tools on its first call: that call takes them in, and
    # the decisions restored stand (they are not made anew as for a new conversation)
    checked = 0
    for path in session_files(corpus / "trajectories" / "openhands"):
        for s in ctxfit.load_sessions(path):
            requests = list(requests_of(s["messages"]))
            system = s["system"] or "You are a careful engineer."
            through = ctxfit.Compactor("smart", format=s["format"])
            sent, saves = [], []
            for k, history in enumerate(requests):
                sent.append(through.compact(history, system=system, tools=TOOLS))
                state = through.save()
                if state.get("held"):
                    saves.append((k, state))
            for k, state in saves[:3]:
                restored = ctxfit.Compactor("smart", format=s["format"])
                restored.restore(state)
                for m in range(k + 1, len(requests)):
                    got = restored.compact(requests[m], system=system, tools=TOOLS)
                    assert got == sent[m], f"{path.name}: {k} → {m}"
                checked += 1
    assert checked > 0


def test_a_waiting_cut_is_made_once_the_cache_has_expired():
    # a numbered read whose only cut is its number column: too small to pay for rewriting the cached tail early in
    # a conversation, so `smart` keeps it waiting — until the agent pauses longer than the cache lives
    read = "\n".join(f"{i:>6}→    let value_{i} = compute(input, {i});" for i in range(1, 401))
    messages = short("Fix the bug.")
    messages += [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "r0", "name": "Read", "input": {"file_path": "src/lib.rs"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r0", "content": read}]},
    ]
    for i in range(1, 6):
        messages += tool_turn(i, "clean", command="git status")

    def run(pause, **kwargs):
        compactor = ctxfit.Compactor("smart")
        t = 1_700_000_000.0
        sent = None
        for k, request in enumerate(requests_of(messages)):
            t += pause if k == 4 else 1.0
            sent = compactor.compact(request, sent_at=t, **kwargs)
        return sent

    warm = run(60.0)
    assert warm[2]["content"][0]["content"] == read
    cold = run(400.0)
    assert cold[2]["content"][0]["content"].startswith("[lines 1–400; numbers dropped, count from 1]\n")
    # a request that asks for a cache of a day (OpenAI's `prompt_cache_retention="24h"`) still has it
    assert run(400.0, cache_ttl=86_400)[2]["content"][0]["content"] == read
    assert run(400.0, cache_ttl=0)[2]["content"][0]["content"] == read
    # and one that asks for a minute has lost it sooner
    assert run(90.0, cache_ttl=60)[2]["content"][0]["content"] != read
    with pytest.raises(ValueError, match="sent_at"):
        ctxfit.Compactor("smart").compact(messages, sent_at=-1.0)


def test_wrong_arguments_and_a_second_thread_get_words_that_say_what_to_do():
    import threading

    compactor = ctxfit.Compactor("smart")
    with pytest.raises(ctxfit.CtxfitError, match=r"list of messages .*not the request dict"):
        compactor.compact({"model": "m", "messages": []})
    with pytest.raises(ctxfit.CtxfitError, match="not a string"):
        compactor.compact('[{"role": "user", "content": "hi"}]')
    with pytest.raises(TypeError, match="takes the list of messages, got NoneType"):
        compactor.compact(None)
    with pytest.raises(TypeError, match="takes the list of messages, got int"):
        compactor.compact(7)
    with pytest.raises(TypeError, match=r"count_tokens\(\) takes the list of messages, got NoneType"):
        ctxfit.count_tokens(None)
    with pytest.raises(TypeError, match=r"convert_messages\(\) takes the list of messages, got int"):
        ctxfit.convert_messages(5, "openai")
    # a string or a request dict iterates, but as characters and keys: said, not read as broken messages
    with pytest.raises(ctxfit.CtxfitError, match=r"count_tokens\(\) takes the list of messages, not a string"):
        ctxfit.count_tokens("hello world")
    with pytest.raises(ctxfit.CtxfitError, match=r"convert_messages\(\) .*not the request dict"):
        ctxfit.convert_messages({"model": "m", "messages": []}, "openai")
    # a set iterates too, in an order of its own
    with pytest.raises(ctxfit.CtxfitError, match=r"compact\(\) takes the list of messages, not a set"):
        compactor.compact({"a", "b"})
    with pytest.raises(ctxfit.CtxfitError, match=r"count_tokens\(\) takes the list of messages, not a set"):
        ctxfit.count_tokens(frozenset())
    with pytest.raises(TypeError, match=r"replay\(\) takes a path or a list of paths, got NoneType"):
        ctxfit.replay(None, "smart")
    with pytest.raises(ValueError, match="input_tokens must be a whole number, 0 or more: got -1"):
        compactor.compact([{"role": "user", "content": "hi"}], input_tokens=-1)
    assert compactor.compact.__doc__ and "messages" in compactor.compact.__doc__
    # one Compactor shared by threads: the one that finds it busy is told why, not "Already borrowed". (Made
    # certain rather than left to timing: a message read through its `model_dump`, as an SDK's is, has another
    # thread call the same Compactor while this call holds it.)
    errors = []

    def second_thread():
        try:
            compactor.compact([{"role": "user", "content": "hi"}])
        except RuntimeError as e:
            errors.append(str(e))

    class ReadWhileBusy:
        def model_dump(self, **_):
            other = threading.Thread(target=second_thread)
            other.start()
            other.join()
            return {"role": "user", "content": "hi"}

    compactor.compact([ReadWhileBusy()])
    assert errors and all("in use by another thread" in e for e in errors), errors[:3]


def test_number_arguments_are_named_in_their_errors():
    # pyo3's own conversions say "can't convert negative int to unsigned" or "must be real number, not str",
    # naming neither the argument nor what it takes
    hi = [{"role": "user", "content": "hi"}]
    cases = [
        (lambda: ctxfit.Compactor("smart").compact(hi, cache_ttl=-1),
         ValueError, r"^cache_ttl must be a whole number, 0 or more: got -1$"),
        (lambda: ctxfit.Compactor("smart").compact(hi, cache_ttl=10**30),
         ValueError, r"^cache_ttl is too large: got 10{30} \(at most 18446744073709551615\)$"),
        (lambda: ctxfit.Compactor("smart").compact(hi, input_tokens=-(10**60)),
         ValueError, r"^input_tokens must be .*: got -10{18}… \(62 characters\)$"),
        (lambda: ctxfit.Compactor("smart").compact(hi, input_tokens=1.5),
         TypeError, r"^input_tokens must be a whole number \(int\), got float$"),
        (lambda: ctxfit.Compactor("smart").compact(hi, input_tokens=True),
         TypeError, r"^input_tokens must be a whole number \(int\), got bool$"),
        (lambda: ctxfit.Compactor("smart").compact(hi, sent_at="now"),
         TypeError, r"^sent_at must be a number \(int or float\), got str$"),
        (lambda: ctxfit.PageTool(max_chars=0), ValueError, r"^max_chars must be a whole number, 1 or more: got 0$"),
        (lambda: ctxfit.PageTool(cache_pages=-3), ValueError, r"^cache_pages must be .*: got -3$"),
        (lambda: ctxfit.PageTool(max_bytes=2**64), ValueError, r"^max_bytes is too large"),
        (lambda: ctxfit.PageTool(cache_seconds=1e300), ValueError, r"^cache_seconds must be a number of seconds"),
        (lambda: ctxfit.PageTool(timeout=float("nan")), ValueError, r"^timeout must be a number of seconds"),
        (lambda: ctxfit.PageTool(timeout="30"), TypeError, r"^timeout must be a number \(int or float\), got str$"),
        (lambda: ctxfit.fetch_webpage_markdown("http://127.0.0.1:9/", chunk=-1), ValueError, r"^chunk must be"),
        (lambda: ctxfit.fetch_webpage_markdown("http://127.0.0.1:9/", timeout=1e300), ValueError, r"^timeout"),
        (lambda: ctxfit.replay([], "smart", cache_ttl=-5), ValueError, r"^cache_ttl must be"),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind, match=message):
            call()
    # what is in range still works: an int where a float is taken, 0 where 0 means "not set"
    assert ctxfit.Compactor("smart").compact(hi, sent_at=5, cache_ttl=0, input_tokens=0) == hi
    assert "max_chars=5000" in repr(ctxfit.PageTool(timeout=2, cache_seconds=0))


def test_a_system_prompt_is_read_as_the_request_field_is():
    # a string or a list of blocks, as Anthropic's `system`; a number or an object is refused by name, and a
    # refused call leaves the conversation as it was
    hi = [{"role": "user", "content": "hi"}]
    for bad, found in [(5, "a number"), ({"text": "x"}, "an object"), (True, "a boolean")]:
        with pytest.raises(ctxfit.CtxfitError, match=f"^system: expected a string, a list of blocks or null, found {found}$"):
            ctxfit.count_tokens(hi, system=bad)
    compactor = ctxfit.Compactor("smart")
    assert compactor.compact(hi, system="Be terse.") == hi
    before = compactor.last_report["tokens_before"]
    with pytest.raises(ctxfit.CtxfitError, match="^system: "):
        compactor.compact(hi + [{"role": "assistant", "content": "ok"}], system=7)
    assert compactor.compact(hi, system="Be terse.") == hi
    assert compactor.last_report["tokens_before"] == before > ctxfit.count_tokens(hi)
    blocks = [{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}]
    assert ctxfit.count_tokens(hi, system=blocks) > ctxfit.count_tokens(hi)


def test_a_format_the_messages_contradict_is_warned_about_once():
    import warnings

    anthropic = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "a.rs"}]},
    ]
    compactor = ctxfit.Compactor("smart", format="openai")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compactor.compact(anthropic[:1])  # plain text: nothing says which format yet
        compactor.compact(anthropic)
        compactor.compact(anthropic + [{"role": "assistant", "content": "done"}])
        ctxfit.Compactor("smart", format="anthropic").compact(anthropic)  # as named: nothing to say
        ctxfit.convert_messages(anthropic, "openai", source="openai")
    said = [str(w.message) for w in caught]
    assert said == [
        'Compactor(format="openai"): the messages read as anthropic — their tool calls and results will not be '
        "recognised, nor compacted; leave format out to detect it",
        'convert_messages(source="openai"): the messages read as anthropic — their tool calls and results will not '
        "be recognised; leave source out to detect it",
    ], said


def test_a_compactor_and_the_exceptions_travel_through_pickle():
    import pickle

    messages = written_session(turns=8)
    points = [i for i, m in enumerate(messages) if i > 0 and m["role"] == "assistant"]
    half = points[len(points) // 2]
    through = ctxfit.Compactor("seed-002", estimator="chars4")
    for i in points:
        expected = through.compact(messages[:i])
    first = ctxfit.Compactor("seed-002", estimator="chars4")
    for i in points:
        if i > half:
            break
        first.compact(messages[:i])
    # as multiprocessing sends it: a compactor of the same profile that took up the decisions
    second = pickle.loads(pickle.dumps(first))
    assert (second.profile, second.settings_toml) == (first.profile, first.settings_toml)
    for i in points:
        if i > half:
            got = second.compact(messages[:i])
    assert got == expected
    # a policy given as text travels as its effective profile
    custom = ctxfit.Compactor("mine", policy='[profiles.mine]\nextends = "smart"\nmax_regret = 0.01\n')
    assert pickle.loads(pickle.dumps(custom)).settings_toml == custom.settings_toml
    for e in (ctxfit.CtxfitError("bad"), ctxfit.InternalError("fault")):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and back.args == e.args
    too_large = ctxfit.PromptTooLarge("over")
    too_large.tokens, too_large.budget = 10, 5
    back = pickle.loads(pickle.dumps(too_large))
    assert isinstance(back, ctxfit.CtxfitError) and (back.tokens, back.budget) == (10, 5)
