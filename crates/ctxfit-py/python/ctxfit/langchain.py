"""LangChain / LangGraph bridge: ``BaseMessage`` lists to wire dicts and back, a middleware for LangChain 1.x's
``create_agent`` and a ``pre_model_hook`` for LangGraph's ``create_react_agent``.

Needs ``langchain-core`` (``pip install ctxfit[langchain]``); the middleware needs ``langchain>=1``
(``ctxfit[agents]``).

With ``langchain.agents.create_agent``::

    from langchain.agents import create_agent
    from ctxfit.langchain import CompactionMiddleware

    agent = create_agent(model, tools, middleware=[CompactionMiddleware("smart")])

With LangGraph's prebuilt ReAct agent (deprecated in LangGraph 1.x, still served)::

    from langgraph.prebuilt import create_react_agent
    from ctxfit.langchain import pre_model_hook

    agent = create_react_agent(model, tools, pre_model_hook=pre_model_hook("smart"))

Both leave the graph's state (the whole history) alone and hand the model the compacted list, so the agent keeps
everything and sends only what it needs. Both keep one conversation per LangGraph thread (the run's
``thread_id``; runs without one share a conversation), so one agent serves many threads at once, each with its
own decisions; the least recently used of more than ``max_threads`` threads is forgotten.

With a policy that sets ``retrieval_tool`` (docs/config.md), every cut result names a tool through which the
model gets the original back: the middleware adds that tool to the agent itself; with the hook, give it::

    hook = pre_model_hook(policy="ctxfit.toml")
    agent = create_react_agent(model, tools + [hook.retrieval_tool()], pre_model_hook=hook)
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence

from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.tools import BaseTool, StructuredTool

from . import Compactor

__all__ = ["to_dicts", "from_dicts", "CompactingHook", "ThreadedHook", "pre_model_hook", "CompactionMiddleware"]


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
        new = list(messages[keep:])
        self._seen.extend(new)
        self._dicts.extend(to_dicts(new))
        return self._dicts

    def compact(self, messages: Sequence[BaseMessage]) -> List[BaseMessage]:
        """The messages to send instead of ``messages`` (calls from several threads take turns)."""
        with self._lock:
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
        return _retrieval_tool(self.compactor, lambda: self.compactor)

    def __call__(self, state: Any) -> Dict[str, Any]:
        return {"llm_input_messages": self.compact(_messages_of(state, self.messages_key))}


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


class ThreadedHook:
    """A LangGraph ``pre_model_hook`` (``hook(state) -> {"llm_input_messages": [...]}``) that keeps one
    conversation per thread of the graph (the run's ``thread_id``): one hook serves every thread of one agent,
    at once. ``compactor`` and ``compact`` outside a run are the conversation of runs without a thread id."""

    def __init__(
        self, make: Callable[[], Compactor], messages_key: str = "messages", *, max_threads: int = 1024
    ) -> None:
        self._threads = _Threads(make, messages_key, max_threads)
        self.messages_key = messages_key

    @property
    def threads(self) -> int:
        """How many threads' conversations it keeps."""
        return len(self._threads)

    @property
    def compactor(self) -> Compactor:
        """The compactor of the current run's thread (outside a run: of runs without a thread id)."""
        return self._threads.hook(_current_thread_id()).compactor

    def compact(self, messages: Sequence[BaseMessage]) -> List[BaseMessage]:
        """The messages to send instead of ``messages``, in the current run's thread's conversation."""
        return self._threads.hook(_current_thread_id()).compact(messages)

    def retrieval_tool(self) -> BaseTool:
        """The profile's retrieval tool as a LangChain tool: it answers a handle with the original result, from
        the history of the thread it is called in. Raises ``ValueError`` when the profile has no
        ``retrieval_tool``."""
        return _retrieval_tool(self._threads.template, lambda: self.compactor)

    def __call__(self, state: Any) -> Dict[str, Any]:
        return {"llm_input_messages": self.compact(_messages_of(state, self.messages_key))}


def pre_model_hook(
    profile: Optional[str] = None,
    policy: Optional[str] = None,
    agent: Optional[str] = None,
    *,
    compactor: Optional[Compactor] = None,
    max_threads: int = 1024,
) -> Any:
    """A ready ``pre_model_hook`` for ``create_react_agent`` that compacts with ``profile`` (by default the
    ``policy``'s default profile, else ``smart``): a :class:`ThreadedHook`, one conversation per thread. With a
    ``compactor`` given, a :class:`CompactingHook` of that one conversation (give each thread its own)."""
    if compactor is not None:
        return CompactingHook(compactor)
    return ThreadedHook(lambda: Compactor(profile, policy, agent, format="openai"), max_threads=max_threads)


def __getattr__(name: str) -> Any:
    # the middleware needs `langchain` 1.x, which the rest of this module does not
    if name == "CompactionMiddleware":
        try:
            from ._agent_middleware import CompactionMiddleware
        except ImportError as e:
            raise ImportError(
                f"ctxfit.langchain.CompactionMiddleware needs langchain>=1 (pip install 'ctxfit[agents]'): {e}"
            ) from e
        return CompactionMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
