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

from typing import Any, Callable, Dict, List, Optional, Sequence

from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool

from . import Compactor
from ._hooks import CompactingHook, _current_thread_id, _messages_of, _retrieval_tool, _Threads, from_dicts, to_dicts

__all__ = ["to_dicts", "from_dicts", "CompactingHook", "ThreadedHook", "pre_model_hook", "CompactionMiddleware"]


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
    ``policy``'s default profile, else its only profile, else ``smart``): a :class:`ThreadedHook`, one
    conversation per thread. With a ``compactor`` given, a :class:`CompactingHook` of that one conversation
    (give each thread its own)."""
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
