"""An agent loop as programs on the Anthropic SDK write it, against a stand-in for the SDK's client.

The stand-in answers each request with the next recorded assistant message of a real Claude Code session
(content blocks as SDK objects, as `response.content` holds them) and checks every request it receives:
tool_use/tool_result pairs valid, and within the model's context window. The sessions are the corpus's two
largest, and the window is set under their largest uncompacted request, so that sending everything would not
fit it (the test checks that it would not).
"""

import copy
from types import SimpleNamespace

import ctxfit

# the window, as a share of the largest request of the sessions when nothing is cut
WINDOW_SHARE = 0.6


class ContentBlock(SimpleNamespace):
    """Stands for `anthropic.types.TextBlock`, `ToolUseBlock`, ...: a pydantic model with `model_dump`."""

    def model_dump(self, mode="python", exclude_none=False):
        return {k: v for k, v in vars(self).items() if not (exclude_none and v is None)}


class StandInMessages:
    def __init__(self, recorded, window):
        self.recorded = recorded
        self.window = window
        self.requests = 0
        self.peak = 0

    def create(self, *, model, max_tokens, messages, system=None, tools=None):
        check_pairs(messages)
        tokens = ctxfit.count_tokens(messages, system=system)
        assert tokens <= self.window, f"request {self.requests}: {tokens} tokens, above the {self.window:,}-token window"
        self.peak = max(self.peak, tokens)
        content = self.recorded[self.requests]["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        self.requests += 1
        return SimpleNamespace(
            role="assistant",
            content=[ContentBlock(**b) for b in copy.deepcopy(content)],
            usage=SimpleNamespace(input_tokens=tokens, output_tokens=0),
        )


class StandInClient:
    """`anthropic.Anthropic()` as far as an agent loop uses it."""

    def __init__(self, recorded, window):
        self.messages = StandInMessages(recorded, window)


def check_pairs(request):
    answered = set()
    for i, m in enumerate(request):
        content = m["content"] if isinstance(m["content"], list) else []
        blocks = [b.model_dump(mode="json", exclude_none=True) if hasattr(b, "model_dump") else b for b in content]
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        missing = [r for r in results if r not in answered]
        assert not missing, f"message {i}: tool_result for {missing} with no tool_use in the message before"
        answered = set(uses)


def run_agent(client, compactor, recorded, system):
    """The loop: send, append the answer, append the tools' results (here: the recorded ones)."""
    messages = []
    for m in recorded:
        if m["role"] == "assistant":
            if not messages:
                continue
            request = compactor.compact(messages, system=system, input_tokens=None)
            compactor.check_request()
            response = client.messages.create(model="claude-stand-in", max_tokens=4096, messages=request, system=system)
            messages.append({"role": "assistant", "content": response.content})
        else:
            messages.append(m)
    return messages


def test_long_sessions_stay_within_the_window(corpus):
    folder = corpus / "sessions" / "claude-code-entire"
    figures = ctxfit.replay(folder, ["none"])
    peaks = {}
    for s in figures["sessions"]:
        name = s["session"].split(" — ")[0]
        peaks[name] = max(peaks.get(name, 0), max((t["input_tokens"] for t in s["turns"]), default=0))
    chosen = sorted(peaks, key=peaks.get)[-2:]
    window = int(WINDOW_SHARE * min(peaks[name] for name in chosen))
    policy = f'default_profile = "window"\n[profiles.window]\nextends = "smart"\nrequest_budget = {window}\n'
    over = 0
    for path in chosen:
        for s in ctxfit.load_sessions(path):
            recorded = [m for m in s["messages"]]
            answers = [m for m in recorded if m["role"] == "assistant"]
            client = StandInClient(answers[1:] if recorded and recorded[0]["role"] == "assistant" else answers, window)
            compactor = ctxfit.Compactor(policy=policy)
            history = run_agent(client, compactor, recorded, s["system"])
            over += compactor.last_report["tokens_before"] > window
            assert client.messages.requests > 10
            assert client.messages.peak <= window
            assert len(history) == len(recorded) - (recorded[0]["role"] == "assistant")
    # sent whole, the history would not have fit the window
    assert over >= 1
