"""The middleware for LangChain 1.x's ``create_agent`` (imported by ``ctxfit.langchain`` on first use: it needs
``langchain>=1``)."""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Hashable, Optional

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse

from . import Compactor
from ._hooks import _current_thread_id, _retrieval_tool, _Threads


class CompactionMiddleware(AgentMiddleware):
    """Compacts the messages of every model call of a ``create_agent`` agent with ``profile`` (by default the
    ``policy``'s default profile, else ``smart``), one conversation per thread (the run's ``thread_id``; the
    least recently used of more than ``max_threads`` is forgotten). The agent's state keeps the whole history;
    only the model's request is compacted. When the profile sets ``retrieval_tool``, the middleware adds that
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

    def _compacted(self, request: ModelRequest) -> ModelRequest:
        hook = self._threads.hook(self._thread_of(request))
        return request.override(messages=hook.compact(request.messages))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        return handler(self._compacted(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        return await handler(self._compacted(request))
