"""LangChain / LangGraph bridge: ``BaseMessage`` lists to wire dicts and back, and a ``pre_model_hook``.

Needs ``langchain-core`` (``pip install ctxfit[langchain]``).

With LangGraph's prebuilt ReAct agent::

    from langgraph.prebuilt import create_react_agent
    from ctxfit.langchain import pre_model_hook

    agent = create_react_agent(model, tools, pre_model_hook=pre_model_hook("smart"))

The hook leaves the graph's state (the whole history) alone and hands the model the compacted list
(``llm_input_messages``), so the agent keeps everything and sends only what it needs.

With a policy that sets ``retrieval_tool`` (docs/config.md), every cut result names a tool through which the
model gets the original back; the hook makes that tool::

    hook = pre_model_hook(policy="ctxfit.toml")
    agent = create_react_agent(model, tools + [hook.retrieval_tool()], pre_model_hook=hook)
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Sequence

from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.tools import BaseTool, StructuredTool

from . import Compactor

__all__ = ["to_dicts", "from_dicts", "CompactingHook", "pre_model_hook"]


def to_dicts(messages: Sequence[BaseMessage]) -> List[Dict[str, Any]]:
    """LangChain messages as OpenAI Chat dicts (``tool_calls``, ``role: tool`` results), the wire format
    ctxfit compacts."""
    return [convert_to_openai_messages(m) for m in messages]


def from_dicts(messages: Sequence[Dict[str, Any]]) -> List[BaseMessage]:
    """OpenAI Chat (or Anthropic) dicts as LangChain messages."""
    return list(convert_to_messages(list(messages)))


class CompactingHook:
    """A LangGraph ``pre_model_hook``: ``hook(state) -> {"llm_input_messages": [...]}``.

    One hook serves one conversation (one thread): it keeps a :class:`ctxfit.Compactor` and the dicts of the
    messages it has converted, so each call converts only the messages that are new. Messages the request
    sends unchanged are the state's own objects.
    """

    def __init__(self, compactor: Compactor, messages_key: str = "messages") -> None:
        self.compactor = compactor
        self.messages_key = messages_key
        self._seen: List[BaseMessage] = []
        self._dicts: List[Dict[str, Any]] = []

    def _dicts_of(self, messages: Sequence[BaseMessage]) -> List[Dict[str, Any]]:
        keep = 0
        for old, new in zip(self._seen, messages):
            if old is not new and old != new:
                break
            keep += 1
        if keep < len(self._seen):
            del self._seen[keep:]
            del self._dicts[keep:]
        new = list(messages[keep:])
        self._seen.extend(new)
        self._dicts.extend(to_dicts(new))
        return self._dicts

    def compact(self, messages: Sequence[BaseMessage]) -> List[BaseMessage]:
        """The messages to send instead of ``messages``."""
        dicts = self._dicts_of(messages)
        by_id = {id(d): m for d, m in zip(dicts, self._seen)}
        request = self.compactor.compact(list(dicts))
        out: List[BaseMessage] = []
        for d in request:
            original = by_id.get(id(d))
            out.append(original if original is not None else from_dicts([d])[0])
        return out

    def retrieval_tool(self) -> BaseTool:
        """The profile's retrieval tool as a LangChain tool: it answers a handle with the original result, from
        the history this hook has read. Raises ``ValueError`` when the profile has no ``retrieval_tool``."""
        name = self.compactor.retrieval_tool
        if name is None:
            raise ValueError(
                f"profile `{self.compactor.profile}` has no retrieval_tool: set it in the policy (docs/config.md)"
            )
        description = self.compactor.retrieval_tool_definition("openai")["function"]["description"]

        def retrieve(handle: str) -> str:
            content = self.compactor.retrieve(handle)
            if content is None:
                return f"no tool result has the handle {handle!r}"
            return content if isinstance(content, str) else json.dumps(content)

        return StructuredTool.from_function(func=retrieve, name=name, description=description)

    def __call__(self, state: Any) -> Dict[str, Any]:
        messages = state[self.messages_key] if isinstance(state, dict) else getattr(state, self.messages_key)
        return {"llm_input_messages": self.compact(messages)}


def pre_model_hook(
    profile: Optional[str] = None,
    policy: Optional[str] = None,
    agent: Optional[str] = None,
    *,
    compactor: Optional[Compactor] = None,
) -> Callable[[Any], Dict[str, Any]]:
    """A ready ``pre_model_hook`` for ``create_react_agent`` that compacts with ``profile`` (by default the
    ``policy``'s default profile, else ``smart``), or with the ``compactor`` given."""
    return CompactingHook(compactor or Compactor(profile, policy, agent, format="openai"))
