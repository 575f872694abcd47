"""An agent loop as programs on the Anthropic SDK write it, against a stand-in for the SDK's client.

The stand-in answers each request with the next recorded assistant message of a real Claude Code session
(content blocks as SDK objects, as `response.content` holds them) and checks every request it receives:
tool_use/tool_result pairs valid, and within the model's context window. The sessions are the long ones of the
corpus whose uncompacted requests would not fit that window.
"""

import copy
from types import SimpleNamespace

import ctxfit

WINDOW = 200_000


class ContentBlock(SimpleNamespace):
    """Stands for `anthropic.types.TextBlock`, `ToolUseBlock`, ...: a pydantic model with `model_dump`."""

    def model_dump(self, mode="python", exclude_none=False):
        return {k: v for k, v in vars(self).items() if not (exclude_none and v is None)}


class StandInMessages:
    def __init__(self, recorded):
        self.recorded = recorded
        self.requests = 0
        self.peak = 0

    def create(self, *, model, max_tokens, messages, system=None, tools=None):
        check_pairs(messages)
        tokens = ctxfit.count_tokens(messages, system=system)
        assert tokens <= WINDOW, f"request {self.requests}: {tokens} tokens, above the {WINDOW:,}-token window"
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

    def __init__(self, recorded):
        self.messages = StandInMessages(recorded)


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
        peaks[s["session"]] = max((t["input_tokens"] for t in s["turns"]), default=0)
    too_big = sorted((p, name) for name, p in peaks.items() if p > WINDOW)
    # the sessions whose uncompacted requests overflow the window; the largest two if none do
    chosen = [name for _, name in too_big] or [name for _, name in sorted((p, n) for n, p in peaks.items())[-2:]]
    policy = f'default_profile = "window"\n[profiles.window]\nextends = "smart"\nrequest_budget = {WINDOW}\n'
    for name in chosen:
        path = name.split(" — ")[0]
        sessions = ctxfit.load_sessions(path)
        for s in sessions:
            recorded = [m for m in s["messages"]]
            answers = [m for m in recorded if m["role"] == "assistant"]
            client = StandInClient(answers[1:] if recorded and recorded[0]["role"] == "assistant" else answers)
            compactor = ctxfit.Compactor(policy=policy)
            history = run_agent(client, compactor, recorded, s["system"])
            assert client.messages.requests > 10
            assert client.messages.peak <= WINDOW
            assert len(history) == len(recorded) - (recorded[0]["role"] == "assistant")
