"""OpenAI Agents SDK bridge: a ``call_model_input_filter`` that compacts what each model call of a run is sent.

Works with ``openai-agents`` (``pip install ctxfit[openai-agents]``), and imports nothing of it until a retrieval
tool is asked for::

    from agents import Agent, RunConfig, Runner
    from ctxfit.openai_agents import CompactingInputFilter

    compaction = CompactingInputFilter("smart")
    result = await Runner.run(agent, question, run_config=RunConfig(call_model_input_filter=compaction))

The run's items — and a session's, and ``result.to_input_list()`` — stay whole; only the model's request is
compacted, with the agent's instructions and function tools counted against the profile's budget. One filter
serves many conversations at once (runs of one agent for many users, run after run of one conversation): a call
continues the conversation whose last request it begins with (the longest such), else starts one, and the least
recently used of more than ``max_conversations`` is forgotten. Requests that continue a stored response
(``previous_response_id``, ``conversation_id``) carry only the new items, so there is nothing stale to cut.

With a policy that sets ``retrieval_tool`` (docs/config.md), every cut result names a tool through which the
model gets the original back; give the agent that tool::

    compaction = CompactingInputFilter(policy="ctxfit.toml")
    agent = Agent(name="coder", tools=[bash, compaction.retrieval_tool()])
"""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import Compactor
from .types import Report

__all__ = ["CompactingInputFilter"]


class _Conversation:
    __slots__ = ("compactor", "last")

    def __init__(self, compactor: Compactor) -> None:
        self.compactor = compactor
        self.last: Sequence[Any] = ()


def _begins_with(items: Sequence[Any], prefix: Sequence[Any]) -> bool:
    return len(prefix) <= len(items) and all(a is b or a == b for a, b in zip(prefix, items))


def _tool_dicts(tools: Sequence[Any]) -> Optional[List[Dict[str, Any]]]:
    """The agent's function tools in the Responses API's spelling (hosted tools have no schema to count); dicts
    as they are."""
    out = [
        t if isinstance(t, dict) else
        {"type": "function", "name": t.name, "description": getattr(t, "description", "") or "",
         "parameters": t.params_json_schema}
        for t in tools
        if isinstance(t, dict)
        or (isinstance(getattr(t, "name", None), str) and isinstance(getattr(t, "params_json_schema", None), dict))
    ]
    return out or None


class CompactingInputFilter:
    """``RunConfig(call_model_input_filter=CompactingInputFilter("smart"))``: compacts the input of every model call
    with ``profile`` (by default the ``policy``'s default profile, else its only profile, else ``smart``), one
    :class:`ctxfit.Compactor` per conversation.

    >>> compaction = CompactingInputFilter("smart")
    >>> result = await Runner.run(agent, question, run_config=RunConfig(call_model_input_filter=compaction))
    >>> compaction.last_report["tokens_after"] <= compaction.last_report["tokens_before"]
    True
    """

    def __init__(
        self,
        profile: Optional[str] = None,
        policy: Optional[str] = None,
        agent: Optional[str] = None,
        *,
        max_conversations: int = 1024,
    ) -> None:
        if max_conversations < 1:
            raise ValueError(f"max_conversations must be at least 1, not {max_conversations}")

        def make() -> Compactor:
            return Compactor(profile, policy, agent, format="responses")

        self._make: Callable[[], Compactor] = make
        # made now: a wrong profile or policy fails here, not at the first model call
        self._template = self._make()
        self.profile: str = self._template.profile
        self._max = max_conversations
        self._conversations: List[_Conversation] = []  # the least recently used first
        self._last_report: Optional[Report] = None
        self._lock = threading.Lock()

    @property
    def conversations(self) -> int:
        """How many conversations it keeps."""
        with self._lock:
            return len(self._conversations)

    @property
    def last_report(self) -> Optional[Report]:
        """The report of the latest call (``Compactor.last_report``), ``None`` before the first."""
        return self._last_report

    def _conversation_of(self, items: Sequence[Any]) -> _Conversation:
        """The conversation ``items`` continue (the longest last request they begin with), else a new one — kept
        once a call of it has gone through."""
        best: Optional[_Conversation] = None
        for conv in self._conversations:
            if (best is None or len(conv.last) > len(best.last)) and _begins_with(items, conv.last):
                best = conv
        return best if best is not None else _Conversation(self._make())

    def _keep(self, conv: _Conversation) -> None:
        if conv in self._conversations:
            self._conversations.remove(conv)
        self._conversations.append(conv)
        while len(self._conversations) > self._max:
            self._conversations.pop(0)

    def compact(
        self,
        items: Sequence[Any],
        instructions: Optional[str] = None,
        tools: Optional[Sequence[Any]] = None,
    ) -> List[Any]:
        """The input items to send instead of ``items`` (Responses API items, as the SDK builds them), with the
        agent's ``instructions`` and ``tools`` (the SDK's tool objects, or dicts in any API's spelling) counted
        against the profile's budget. Raises :class:`ctxfit.PromptTooLarge` when the request is still above the
        profile's ``request_budget`` once every cut is made (the run ends with it, nothing sent)."""
        items = list(items)
        with self._lock:
            conv = self._conversation_of(items)
            compacted = conv.compactor.compact(
                items, system=instructions or None, tools=_tool_dicts(tools) if tools else None
            )
            conv.last = items
            self._keep(conv)
            self._last_report = conv.compactor.last_report
            conv.compactor.check_request()
        return compacted

    def __call__(self, data: Any) -> Any:
        """The filter: ``data`` is the SDK's ``CallModelData``; returns its ``ModelInputData`` with the input
        compacted."""
        model_data = data.model_data
        agent = getattr(data, "agent", None)
        tools = getattr(agent, "tools", None)
        compacted = self.compact(model_data.input, model_data.instructions, tools)
        return dataclasses.replace(model_data, input=compacted)

    @property
    def retrieval_tool_name(self) -> Optional[str]:
        """The profile's retrieval tool, or ``None``."""
        return self._template.retrieval_tool

    def retrieve(self, handle: str) -> Any:
        """The original content of the cut result ``handle`` names, from the conversations kept (the latest
        first), or ``None``."""
        with self._lock:
            compactors = [c.compactor for c in reversed(self._conversations)]
        for compactor in compactors:
            found = compactor.retrieve(handle)
            if found is not None:
                return found
        return None

    def retrieval_tool(self) -> Any:
        """The profile's retrieval tool as an Agents SDK ``FunctionTool`` (needs ``openai-agents``): it answers a
        handle with the original result. Raises ``ValueError`` when the profile has no ``retrieval_tool``."""
        from agents import FunctionTool

        name = self._template.retrieval_tool
        if name is None:
            raise ValueError(f"profile `{self.profile}` has no retrieval_tool: set it in the policy (docs/config.md)")
        definition = self._template.retrieval_tool_definition("responses")
        assert definition is not None

        async def invoke(_context: Any, arguments: str) -> str:
            try:
                handle = json.loads(arguments).get("handle")
            except (ValueError, AttributeError):
                handle = None
            if not isinstance(handle, str):
                return "give the handle the cut result names, as {\"handle\": \"…\"}"
            content = self.retrieve(handle)
            if content is None:
                return f"no tool result has the handle {handle!r}"
            return content if isinstance(content, str) else json.dumps(content)

        return FunctionTool(
            name=name,
            description=definition.get("description", ""),
            params_json_schema=definition["parameters"],
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )
