"""Importers and replay from Python: every family of the corpus, gzipped files, bad files."""

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import ctxfit
from conftest import REPO, session_files


def test_every_family_loads(corpus):
    families = {
        "trajectories/claude-code": "anthropic",
        "trajectories/swe-agent": None,
        "trajectories/openhands": None,
        "trajectories/tau-bench": None,
        "trajectories/letta": None,
        "sessions/codex-agentv": None,
        "sessions/mini-swe-agent": None,
    }
    for family, wire in families.items():
        files = session_files(corpus / family)[:3]
        assert files, family
        for f in files:
            sessions = ctxfit.load_sessions(f)
            for s in sessions:
                assert s["format"] in ("anthropic", "openai", "responses")
                if wire:
                    assert s["format"] == wire
                assert isinstance(s["messages"], list)
            if sessions and sessions[0]["messages"]:
                if len(sessions) > 1:
                    # a file of several sessions: the first, and a word that there are more
                    with pytest.warns(UserWarning, match=r"holds \d+ sessions .*load_session reads the first"):
                        first = ctxfit.load_session(f)
                else:
                    first = ctxfit.load_session(f)
                assert first == sessions[0]["messages"]


def test_several_sessions_in_one_file(corpus):
    path = session_files(corpus / "trajectories" / "tau-bench")[0]
    sessions = ctxfit.load_sessions(path)
    assert len(sessions) > 1
    assert ctxfit.load_session(path, 1) == sessions[1]["messages"]
    with pytest.raises(IndexError, match=f"the file holds {len(sessions)}"):
        ctxfit.load_session(path, len(sessions))
    # counted from the end as a list's index is
    assert ctxfit.load_session(path, -1) == sessions[-1]["messages"]
    assert ctxfit.load_session(path, -len(sessions)) == sessions[0]["messages"]
    with pytest.raises(IndexError, match=f"session {-len(sessions) - 1} asked for"):
        ctxfit.load_session(path, -len(sessions) - 1)


def test_a_list_of_documents_is_a_session_each(tmp_path):
    # what `ctxfit compact` and `ctxfit convert` write for a file of several sessions
    docs = [
        {"messages": [{"role": "user", "content": "one"}]},
        {"messages": [{"role": "user", "content": "two"}, {"role": "assistant", "content": "2"}]},
    ]
    path = tmp_path / "compacted.json"
    path.write_text(json.dumps(docs))
    sessions = ctxfit.load_sessions(path)
    assert [s["name"] for s in sessions] == ["document 1", "document 2"]
    assert ctxfit.load_session(path, 1) == docs[1]["messages"]


def test_an_empty_file_holds_no_session(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert ctxfit.load_sessions(empty) == []
    with pytest.raises(IndexError, match="the file holds none"):
        ctxfit.load_session(empty)


def test_other_layouts_of_the_same_agents_load(tmp_path):
    # tau2-bench's results: one session per simulation, as the agent saw it (the simulated user's own tools left out)
    results = {
        "info": {"environment_info": {"policy": "You are an airline agent."}},
        "tasks": [{"id": "3"}],
        "simulations": [{
            "id": "s", "task_id": "3", "trial": 1, "termination_reason": "agent_stop",
            "messages": [
                {"role": "user", "content": "Cancel my booking ABC."},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "name": "get_reservation", "arguments": {"id": "ABC"}, "requestor": "assistant"}]},
                {"role": "tool", "id": "c1", "content": '{"id": "ABC", "status": "booked"}', "requestor": "assistant"},
                {"role": "user", "content": None,
                 "tool_calls": [{"id": "u1", "name": "check_phone", "arguments": {}, "requestor": "user"}]},
                {"role": "tool", "id": "u1", "content": "ok", "requestor": "user"},
                {"role": "assistant", "content": "It is cancelled."},
            ],
        }],
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    (session,) = ctxfit.load_sessions(path)
    assert (session["name"], session["source"], session["format"]) == ("task 3 trial 1", "tau-bench", "openai")
    assert [m["role"] for m in session["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert json.loads(session["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {"id": "ABC"}
    # a Codex CLI rollout of mid 2025, from before each line had its envelope
    rollout = tmp_path / "rollout-2025-08-20.jsonl"
    rollout.write_text("\n".join(json.dumps(line) for line in [
        {"id": "r", "timestamp": "2025-08-20T13:20:47.060Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
        {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.rs"},
    ]))
    (session,) = ctxfit.load_sessions(rollout)
    assert (session["source"], session["format"]) == ("codex", "responses")
    assert [m["type"] for m in session["messages"]] == ["message", "function_call", "function_call_output"]


def test_an_openhands_conversation_kept_one_event_a_file_loads_as_one(tmp_path):
    events = tmp_path / "conversations" / "c1" / "events"
    events.mkdir(parents=True)
    stream = [
        {"kind": "MessageEvent", "id": "u", "source": "user",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": "Fix it"}]}},
        {"kind": "ActionEvent", "id": "a", "source": "agent", "tool_name": "terminal", "tool_call_id": "c1",
         "tool_call": {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}},
         "llm_response_id": "r1"},
        {"kind": "ObservationEvent", "id": "o", "source": "environment", "tool_name": "terminal", "tool_call_id": "c1",
         "observation": {"content": [{"type": "text", "text": "a.py"}]}},
    ]
    for i, event in enumerate(stream):
        (events / f"event-{i:05d}-{event['id']}.json").write_text(json.dumps(event))
    (events.parent / "base_state.json").write_text("{}")
    (session,) = ctxfit.load_sessions(events)
    assert session["source"] == "openhands"
    assert [m["role"] for m in session["messages"]] == ["user", "assistant", "tool"]
    # found by a folder walk as one session, its metadata beside it passed over
    (result,) = ctxfit.replay([tmp_path], "none")["policies"]
    assert result["sessions"] == 1


def test_bad_files_are_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user",\n  "content": "hi"')
    with pytest.raises(ctxfit.CtxfitError, match=r"bad\.json:2:\d+: malformed JSON"):
        ctxfit.load_session(bad)
    not_utf8 = tmp_path / "latin1.json"
    not_utf8.write_bytes(b'[{"role": "user", "content": "caf\xe9"}]')
    with pytest.raises(ctxfit.CtxfitError, match=r"latin1\.json:1:34: not UTF-8 text \(byte 0xe9 at offset 33\)"):
        ctxfit.load_session(not_utf8)
    with pytest.raises(FileNotFoundError):
        ctxfit.load_session(tmp_path / "missing.json")
    # an OSError Python can tell apart, with its errno (not "[Errno 0]")
    with pytest.raises(IsADirectoryError, match=r"^\[Errno 21\] .*: a folder, not a session file"):
        ctxfit.load_session(tmp_path)
    with pytest.raises(NotADirectoryError):
        ctxfit.load_session(bad / "below-a-file.json")
    gz = tmp_path / "chat.json.gz"
    gz.write_bytes(gzip.compress(b'\xef\xbb\xbf[{"role": "user", "content": "hi"}]'))
    assert ctxfit.load_session(gz) == [{"role": "user", "content": "hi"}]


def test_a_live_log_cut_short_in_its_last_line_loads_without_it_and_warns(corpus, tmp_path):
    # a real agent log of the Codex family as it is while still being written: cut inside its last record
    src = session_files(corpus / "sessions" / "codex-agentv")[0]
    data = src.read_bytes()
    lines = (gzip.decompress(data) if src.suffix == ".gz" else data).decode().splitlines()
    kept = len(lines) // 2
    live, head = tmp_path / "live.jsonl", tmp_path / "head.jsonl"
    live.write_text("\n".join(lines[:kept]) + "\n" + lines[kept][: len(lines[kept]) // 2])
    head.write_text("\n".join(lines[:kept]) + "\n")
    with pytest.warns(UserWarning, match=rf"live\.jsonl: line {kept + 1} is cut short \(a log still being written\?\)"):
        messages = ctxfit.load_session(live)
    assert messages and messages == ctxfit.load_session(head)


def test_count_and_convert():
    anthropic = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py\nb.py"}]},
    ]
    openai = ctxfit.convert_messages(anthropic, "openai")
    assert openai[1]["tool_calls"][0]["id"] == "t1"
    assert openai[2] == {"role": "tool", "tool_call_id": "t1", "content": "a.py\nb.py"}
    assert ctxfit.convert_messages(openai, "anthropic") == anthropic
    assert ctxfit.count_tokens(anthropic) == ctxfit.count_tokens(openai)
    assert ctxfit.count_tokens(anthropic, system="You are terse.") > ctxfit.count_tokens(anthropic)
    assert ctxfit.estimate_tokens("hello world", "o200k") == 2


def cli():
    for profile in ("release", "debug"):
        exe = REPO / "target" / profile / "ctxfit"
        if exe.is_file():
            return exe
    return shutil.which("ctxfit")


def test_replay_is_the_clis(corpus):
    folder = corpus / "trajectories" / "swe-agent"
    policies = ["none", "oracle", "smart", "seed-002"]
    doc = ctxfit.replay(folder, policies, prices="anthropic,uncached")
    assert [r["policy"] for r in doc["policies"]] == policies
    rows = {r["policy"]: r for r in doc["policies"]}
    assert rows["oracle"]["input_tokens"] < rows["none"]["input_tokens"]
    assert rows["smart"]["recall"] >= 0.95
    assert set(rows["smart"]["costs"]) == {"anthropic", "uncached"}
    assert rows["smart"]["costlier_sessions"]["anthropic"] == {"costlier": 0, "over_3_percent": 0, "worst": 0.0}
    # where the tokens go: the ctf sessions' `curl` pages cost most, and `smart` cut them
    curl = rows["smart"]["tools"][0]
    assert curl["tool"] == "bash: curl"
    assert curl["input_tokens"] < curl["uncompacted_tokens"] == rows["none"]["tools"][0]["uncompacted_tokens"]
    exe = cli()
    if exe is None:
        if os.environ.get("CTXFIT_REQUIRE_CORPUS") == "1":
            pytest.fail("the ctxfit binary is not built (cargo build -p ctxfit-cli)")
        pytest.skip("the ctxfit binary is not built: the comparison with the CLI is skipped")
    args = [str(exe), "replay", str(folder), "--json", "--prices", "anthropic,uncached"]
    for p in policies:
        args += ["--policy", p]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == doc


def test_a_folder_of_more_sessions_than_a_batch_replays_as_one_file_of_them_all(tmp_path):
    # 40 files of one session each are replayed a batch at a time (never all in memory); the totals are those of
    # one file holding the same 40 conversations
    def conversation(i):
        listing = "".join(f"src/file_{i}_{k}.rs\n" for k in range(40 * (i % 7 + 1)))
        return [
            {"role": "user", "content": f"task {i}: find the parser"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "ls -R"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": listing}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "cat README"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "the parser is in src/file_0_3.rs"}]},
            {"role": "assistant", "content": f"src/file_{i}_1.rs it is"},
        ]

    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(40):
        (folder / f"s{i:02}.json").write_text(json.dumps(conversation(i)))
    (tmp_path / "all.json").write_text(json.dumps([conversation(i) for i in range(40)]))

    def totals(path):
        doc = ctxfit.replay(path, ["none", "smart"])
        return [(r["sessions"], r["turns"], r["input_tokens"], r["recall"]) for r in doc["policies"]]

    batched = totals(folder)
    assert batched[0][0] == 40
    assert batched == totals(tmp_path / "all.json")


def test_replay_refuses_unknown_policies(corpus):
    with pytest.raises(ctxfit.CtxfitError, match="no-such-policy") as e:
        ctxfit.replay(corpus / "trajectories" / "swe-agent", ["no-such-policy"])
    assert "--policy" not in str(e.value), "a flag of the CLI named to a Python caller"
    # no policy at all is a mistake too (None runs every built-in one)
    with pytest.raises(ctxfit.CtxfitError, match="given no policies"):
        ctxfit.replay(corpus / "trajectories" / "swe-agent", [])
    with pytest.raises(ValueError, match="unknown price model `free`"):
        ctxfit.replay(corpus / "trajectories" / "swe-agent", ["none"], prices="free")
    # the same policy twice would add two runs into one row: refused
    with pytest.raises(ctxfit.CtxfitError, match="both run as `smart`"):
        ctxfit.replay(corpus / "trajectories" / "swe-agent", ["smart", "smart"])
    with pytest.raises(TypeError, match="policies: expected a name or a list of names, got int"):
        ctxfit.replay(corpus / "trajectories" / "swe-agent", 3)
    with pytest.raises(ctxfit.CtxfitError, match="given no price models"):
        ctxfit.replay(corpus / "trajectories" / "swe-agent", ["none"], prices=[])
    with pytest.raises(TypeError, match="prices: expected a name or a list of names, got dict"):
        ctxfit.replay(corpus / "trajectories" / "swe-agent", ["none"], prices={"anthropic": 1})
    # nothing to replay is a mistake, said as the CLI says it of an empty folder
    with pytest.raises(ctxfit.CtxfitError, match="given no paths"):
        ctxfit.replay([], ["smart"])


def test_replay_takes_one_policy_as_a_string(corpus):
    doc = ctxfit.replay(corpus / "trajectories" / "swe-agent", "smart")
    assert [row["policy"] for row in doc["policies"]] == ["smart"]
    assert list(doc["prices"]) == ["anthropic"], doc["prices"]


def test_replay_takes_price_models_as_a_list_or_comma_separated(corpus):
    folder = corpus / "trajectories" / "swe-agent"
    listed = ctxfit.replay(folder, "smart", prices=["anthropic", "openai"])
    assert listed["prices"] == ctxfit.replay(folder, "smart", prices="anthropic, openai")["prices"]
    assert list(listed["prices"]) == ["anthropic", "openai"]
    assert set(listed["policies"][0]["costs"]) == {"anthropic", "openai"}


def test_replay_counts_what_a_request_budget_refuses(corpus, tmp_path):
    policy = tmp_path / "tight.toml"
    policy.write_text('[profiles.tight]\nextends = "smart"\nrequest_budget = 100000\n')
    doc = ctxfit.replay(corpus / "sessions" / "claude-code-attio", ["smart", f"{policy}:tight"])
    rows = {r["policy"]: r for r in doc["policies"]}
    assert rows["smart"]["over_request_budget"] == 0
    # the requests above the budget after every cut: what check_request refuses live, turn by turn
    turns = [t for s in doc["sessions"] if s["policy"] != "smart" for t in s["turns"]]
    over = [t for t in turns if t.get("over_request_budget")]
    assert 0 < len(over) == rows[next(p for p in rows if p != "smart")]["over_request_budget"] < len(turns)
    # (counted as billed: what the log leaves out of a request counts against the budget)
    def whole(t):
        return t["input_tokens"] + t.get("unlogged_tokens", 0)

    assert all(whole(t) > 100000 for t in over)
    sent = [whole(t) for t in turns if not t.get("over_request_budget")]
    assert all(n <= 100000 for n in sent)
    # the largest of them: within the budget, where the largest of all (the refused counted as sent) is not
    tight = rows[next(p for p in rows if p != "smart")]
    assert tight["peak_sent_tokens"] == max(sent) <= 100000 < max(whole(t) for t in turns)


def test_surprises_are_said(corpus, tmp_path):
    """A file of several sessions read by load_session, a format forced on a file of another, gzipped HTML: each
    is said, not answered silently."""
    import gzip
    import warnings

    episodes = corpus / "trajectories" / "tau-bench" / "gpt-4o-airline.fixture-0-19.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = ctxfit.load_session(episodes)
    assert first and any("load_sessions reads them all" in str(w.message) for w in caught), caught
    claude = next(p for p in session_files(corpus / "trajectories" / "claude-code") if p.suffix == ".jsonl")
    with pytest.raises(ctxfit.CtxfitError, match="no codex session in the file; it reads as claude-code"):
        ctxfit.load_sessions(claude, format="codex")
    page = b"<html><head><title>T</title></head><body><article><p>Hello, reader.</p></article></body></html>"
    with pytest.raises(ctxfit.CtxfitError, match="the page is gzipped"):
        ctxfit.clean_html(gzip.compress(page))
    with pytest.raises(ctxfit.CtxfitError, match="not a web page: the bytes are a PDF document, not text"):
        ctxfit.clean_html(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj")
    assert "Hello, reader." in ctxfit.clean_html(page)[0]


def test_a_folder_walk_names_what_it_passed_over(corpus, tmp_path):
    # a session, and beside it a FIFO the walk must not open (it would block): named in a warning, not read
    shutil.copy(corpus / "trajectories" / "swe-agent" / "marshmallow-1867.traj", tmp_path / "a.traj")
    os.mkfifo(tmp_path / "b.jsonl")
    with pytest.warns(UserWarning, match=r"b\.jsonl: passed over"):
        report = ctxfit.replay(tmp_path, "smart")
    assert [s["session"] for s in report["sessions"]] == [str(tmp_path / "a.traj")]


def test_file_names_that_are_not_utf8_are_read_by_their_own_bytes(corpus, tmp_path):
    # a Latin-1 name, as os.listdir gives it (its byte as a surrogate): read as that file, not "no such file"
    name = os.fsdecode(b"caf\xe9.traj")
    try:
        shutil.copy(corpus / "trajectories" / "swe-agent" / "marshmallow-1867.traj", tmp_path / name)
    except (OSError, UnicodeEncodeError):
        pytest.skip("the file system refuses names that are not UTF-8")
    (listed,) = os.listdir(tmp_path)
    assert ctxfit.load_session(tmp_path / listed)
    assert len(ctxfit.load_sessions(tmp_path / listed)) == 1
    report = ctxfit.replay(tmp_path, "smart")
    assert report["policies"][0]["sessions"] == 1
    # the same names as bytes, as os.listdir(b"...") gives them: one path each, as open() takes them
    (as_bytes,) = os.listdir(os.fsencode(tmp_path))
    folder = os.fsencode(tmp_path)
    assert len(ctxfit.load_sessions(os.path.join(folder, as_bytes))) == 1
    assert ctxfit.load_session(os.path.join(folder, as_bytes))
    assert ctxfit.replay([os.path.join(folder, as_bytes)], "smart")["policies"][0]["sessions"] == 1
    assert ctxfit.replay(folder, "smart")["policies"][0]["sessions"] == 1
    with pytest.raises(TypeError, match=r"expected a path \(str, bytes or os.PathLike\), got int"):
        ctxfit.load_sessions(3)
    with pytest.raises(TypeError, match="takes a path or a list of paths, got int"):
        ctxfit.replay(3, "smart")


def test_an_input_of_tiny_values_is_refused_before_it_is_read(tmp_path):
    # each JSON value read takes about 80 bytes: 2,000,000 empty objects (6 MB) are refused by name, not read
    (tmp_path / "tiny.jsonl").write_text("{}\n" * 2_000_000)
    with pytest.raises(ctxfit.CtxfitError, match="refused before it is read"):
        ctxfit.load_session(tmp_path / "tiny.jsonl")


def test_half_an_emoji_cut_off_loads_as_u_fffd_and_warns(tmp_path):
    # Python's json reads a lone surrogate escape into a str no UTF-8 can hold; the API refuses it: read as U+FFFD
    chat = tmp_path / "chat.json"
    chat.write_text('{"messages": [{"role": "user", "content": "cut \\ud83d here"}]}')
    with pytest.warns(UserWarning, match=r"chat\.json: line 1, column 48: a lone surrogate escape .* read as U\+FFFD"):
        messages = ctxfit.load_session(chat)
    assert messages == [{"role": "user", "content": "cut \ufffd here"}]


def test_a_key_written_twice_in_one_object_loads_its_last_value_and_warns(tmp_path):
    # what json.loads reads too (the last value), but said: the earlier value is gone
    chat = tmp_path / "chat.json"
    chat.write_text('{"messages": [\n{"role": "user", "content": "hi", "content": "again"}]}')
    with pytest.warns(UserWarning, match=r'chat\.json: line 2, column 35: the key "content" is written twice'):
        messages = ctxfit.load_session(chat)
    assert messages == [{"role": "user", "content": "again"}] == json.loads(chat.read_text())["messages"]
