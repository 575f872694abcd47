"""The middleware for LangChain 1.x's ``create_agent`` (imported by ``ctxfit.langchain`` on first use: it needs
``langchain>=1``)."""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Dict, Hashable, List, Optional, Sequence, Tuple

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.utils.function_calling import convert_to_openai_tool

from . import Compactor
from ._hooks import _current_thread_id, _retrieval_tool, _Threads


class CompactionMiddleware(AgentMiddleware):
    """Compacts the messages of every model call of a ``create_agent`` agent with ``profile`` (by default the
    ``policy``'s default profile, else its only profile, else ``smart``), one conversation per thread (the run's
    ``thread_id``; the least recently used of more than ``max_threads`` is forgotten). The agent's state keeps the
    whole history; only the model's request is compacted. When the profile sets ``retrieval_tool``, the middleware adds that
    tool to the agent: it gives a cut result back whole, from the thread's own history.

    >>> agent = create_agent(model, tools, middleware=[CompactionMiddleware("smart")])
    """

    def __init__(
        self,
        profile: Optional[str] = None,
        policy: Optional[str] = None,
        agent: Optional[str] = None,
        *,
        max_threads: int = 1024,
    ) -> None:
        super().__init__()
        self._threads = _Threads(lambda: Compactor(profile, policy, agent, format="openai"), "messages", max_threads)
        template = self._threads.template
        self.profile = template.profile
        self.tools = [] if template.retrieval_tool is None else [_retrieval_tool(template, self._compactor_of_run)]
        self._tools_cache: Tuple[Tuple[int, ...], List[Dict[str, Any]]] = ((), [])

    @property
    def threads(self) -> int:
        """How many threads' conversations it keeps."""
        return len(self._threads)

    def _compactor_of_run(self) -> Compactor:
        return self._threads.hook(_current_thread_id()).compactor

    @staticmethod
    def _thread_of(request: ModelRequest) -> Optional[Hashable]:
        info = getattr(request.runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None)
        return thread if thread is not None else _current_thread_id()

    def _tool_dicts(self, tools: Sequence[Any]) -> List[Dict[str, Any]]:
        # converted once per list of tool objects: the same agent sends the same tools with every call
        # (key and dicts are one tuple, swapped whole: threads of the agent read it without a lock)
        key = tuple(id(t) for t in tools)
        cached = self._tools_cache
        if cached[0] != key:
            cached = (key, [convert_to_openai_tool(t) for t in tools])
            self._tools_cache = cached
        return cached[1]

    def _compacted(self, request: ModelRequest) -> ModelRequest:
        hook = self._threads.hook(self._thread_of(request))
        # the system prompt and the tools are sent with every call: they count against the budget
        system = request.system_message.text if request.system_message is not None else None
        tools = self._tool_dicts(request.tools) if request.tools else None
        # (the same messages, or ones converted back from what a rule cut: LangChain's message classes all)
        compacted: List[Any] = hook.compact(request.messages, system=system or None, tools=tools)
        return request.override(messages=compacted)

    def _learned(self, request: ModelRequest, error: Exception) -> bool:
        """Whether ``error`` is the provider's refusal of the call as too long for its model, which the thread's
        conversation learned the window from (:meth:`ctxfit.Compactor.learn_window`)."""
        return self._threads.hook(self._thread_of(request)).compactor.learn_window(error) is not None

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """The call with its messages compacted; refused as too long for the model, the thread learns the
        model's window from the refusal and the call is made once more, compacted again within it."""
        try:
            return handler(self._compacted(request))
        except Exception as error:
            if not self._learned(request, error):
                raise
        return handler(self._compacted(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        try:
            return await handler(self._compacted(request))
        except Exception as error:
            if not self._learned(request, error):
                raise
        return await handler(self._compacted(request))
