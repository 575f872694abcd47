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
from typing import Any, Dict, List, Optional, Sequence

from ._conversations import ManyConversations

__all__ = ["CompactingInputFilter"]


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


class CompactingInputFilter(ManyConversations):
    """``RunConfig(call_model_input_filter=CompactingInputFilter("smart"))``: compacts the input of every model call
    with ``profile`` (by default the ``policy``'s default profile, else its only profile, else ``smart``), one
    :class:`ctxfit.Compactor` per conversation.

    >>> compaction = CompactingInputFilter("smart")
    >>> result = await Runner.run(agent, question, run_config=RunConfig(call_model_input_filter=compaction))
    >>> compaction.last_report["tokens_after"] <= compaction.last_report["tokens_before"]
    True
    """

    _WIRE = "responses"

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
        return self._conversations.compact(
            list(items), system=instructions or None, tools=_tool_dicts(tools) if tools else None
        )

    def __call__(self, data: Any) -> Any:
        """The filter: ``data`` is the SDK's ``CallModelData``; returns its ``ModelInputData`` with the input
        compacted."""
        model_data = data.model_data
        agent = getattr(data, "agent", None)
        tools = getattr(agent, "tools", None)
        compacted = self.compact(model_data.input, model_data.instructions, tools)
        return dataclasses.replace(model_data, input=compacted)

    def retrieval_tool(self) -> Any:
        """The profile's retrieval tool as an Agents SDK ``FunctionTool`` (needs ``openai-agents``): it answers a
        handle with the original result. Raises ``ValueError`` when the profile has no ``retrieval_tool``."""
        from agents import FunctionTool

        definition = self._conversations.retrieval_definition("responses")

        async def invoke(_context: Any, arguments: str) -> str:
            try:
                handle = json.loads(arguments).get("handle")
            except (ValueError, AttributeError):
                handle = None
            return self._conversations.answer(handle)

        return FunctionTool(
            name=definition["name"],
            description=definition.get("description", ""),
            params_json_schema=definition["parameters"],
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )
