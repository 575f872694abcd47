"""What the LangGraph hooks and the ``create_agent`` middleware of ``ctxfit.langchain`` share: ``BaseMessage``
lists to wire dicts and back, the hook of one conversation, one conversation per thread, and the retrieval tool as
a LangChain tool. Needs ``langchain-core``."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence

from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.tools import BaseTool, StructuredTool

from . import Compactor


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
        self._lock = threading.Lock()

    def _dicts_of(self, messages: Sequence[BaseMessage]) -> List[Dict[str, Any]]:
        keep = 0
        for old, new in zip(self._seen, messages):
            if old is not new and old != new:
                break
            keep += 1
        if keep < len(self._seen):
            del self._seen[keep:]
            del self._dicts[keep:]
        appended = list(messages[keep:])
        self._seen.extend(appended)
        self._dicts.extend(to_dicts(appended))
        return self._dicts

    def compact(
        self,
        messages: Sequence[BaseMessage],
        system: Optional[str] = None,
        tools: Optional[Sequence[Dict[str, Any]]] = None,
    ) -> List[BaseMessage]:
        """The messages to send instead of ``messages`` (calls from several threads take turns); ``system`` and
        ``tools`` (OpenAI spelling), when the model call has them, count against the profile's budget."""
        # what the provider counted of the previous call (its answer's `usage_metadata`): the budget trigger's,
        # and the rate at which a window learned from a refusal comes to ctxfit's count
        reported = next((_input_tokens(m) for m in reversed(messages) if getattr(m, "type", None) == "ai"), None)
        with self._lock:
            dicts = self._dicts_of(messages)
            by_id = {id(d): m for d, m in zip(dicts, self._seen)}
            request = self.compactor.compact(list(dicts), system=system, tools=tools, input_tokens=reported)
        out: List[BaseMessage] = []
        for d in request:
            original = by_id.get(id(d))
            out.append(original if original is not None else from_dicts([d])[0])
        return out

    def retrieval_tool(self) -> BaseTool:
        """The profile's retrieval tool as a LangChain tool: it answers a handle with the original result, from
        the history this hook has read. Raises ``ValueError`` when the profile has no ``retrieval_tool``."""
        return _retrieval_tool(self.compactor, lambda: self.compactor)

    def __call__(self, state: Any) -> Dict[str, Any]:
        return {"llm_input_messages": self.compact(_messages_of(state, self.messages_key))}


def _input_tokens(message: BaseMessage) -> Optional[int]:
    """The input tokens a model's answer says its call was counted at, when it says (``usage_metadata``)."""
    usage = getattr(message, "usage_metadata", None)
    tokens = usage.get("input_tokens") if isinstance(usage, dict) else None
    return tokens if isinstance(tokens, int) and tokens > 0 else None


def _messages_of(state: Any, key: str) -> Sequence[BaseMessage]:
    return state[key] if isinstance(state, dict) else getattr(state, key)


def _retrieval_tool(compactor: Compactor, of_this_run: Callable[[], Compactor]) -> BaseTool:
    name = compactor.retrieval_tool
    if name is None:
        raise ValueError(
            f"profile `{compactor.profile}` has no retrieval_tool: set it in the policy (docs/config.md)"
        )
    definition = compactor.retrieval_tool_definition("openai")
    assert definition is not None
    description = definition["function"]["description"]

    def retrieve(handle: str) -> str:
        content = of_this_run().retrieve(handle)
        if content is None:
            return f"no tool result has the handle {handle!r}"
        return content if isinstance(content, str) else json.dumps(content)

    return StructuredTool.from_function(func=retrieve, name=name, description=description)


def _current_thread_id() -> Optional[Hashable]:
    """The ``thread_id`` of the LangGraph run this is called from, or ``None`` (no run, or a run without one)."""
    try:
        from langgraph.config import get_config
    except ImportError:
        return None
    try:
        config = get_config()
    except RuntimeError:  # not inside a run
        return None
    thread = (config.get("configurable") or {}).get("thread_id")
    return thread if isinstance(thread, Hashable) else str(thread)


class _Threads:
    """One :class:`CompactingHook` per LangGraph thread, made on first use; past ``max_threads`` the least
    recently used is forgotten (its next call starts a new conversation)."""

    def __init__(self, make: Callable[[], Compactor], messages_key: str, max_threads: int) -> None:
        if max_threads < 1:
            raise ValueError(f"max_threads must be at least 1, not {max_threads}")
        self._make = make
        self._messages_key = messages_key
        self._max = max_threads
        self._hooks: "OrderedDict[Optional[Hashable], CompactingHook]" = OrderedDict()
        self._lock = threading.Lock()
        # made now: a wrong profile or policy fails here, not at the first model call
        self.template = make()

    def hook(self, thread: Optional[Hashable]) -> CompactingHook:
        with self._lock:
            hook = self._hooks.get(thread)
            if hook is None:
                hook = self._hooks[thread] = CompactingHook(self._make(), self._messages_key)
                while len(self._hooks) > self._max:
                    self._hooks.popitem(last=False)
            else:
                self._hooks.move_to_end(thread)
            return hook

    def __len__(self) -> int:
        with self._lock:
            return len(self._hooks)
