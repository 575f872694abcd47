"""Many conversations through one object (an agent framework's hook serves every run of an agent): a call continues
the conversation whose last request it begins with — the longest such — else starts one, and past
``max_conversations`` the least recently used is forgotten. Shared by the Agents SDK filter and the Pydantic AI
capability."""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, List, Literal, Optional, Sequence

from . import Compactor
from .types import Report


class _Conversation:
    __slots__ = ("compactor", "last", "reported")

    def __init__(self, compactor: Compactor) -> None:
        self.compactor = compactor
        self.last: Sequence[Any] = ()
        # the input tokens the provider reported for the last request, for the next one to pass on
        self.reported: Optional[int] = None


def _begins_with(items: Sequence[Any], prefix: Sequence[Any]) -> bool:
    return len(prefix) <= len(items) and all(a is b or a == b for a, b in zip(prefix, items))


class Conversations:
    """The compactors of the conversations seen, one each, the least recently used first."""

    def __init__(self, make: Callable[[], Compactor], max_conversations: int) -> None:
        if max_conversations < 1:
            raise ValueError(f"max_conversations must be at least 1, not {max_conversations}")
        self._make = make
        # made now: a wrong profile or policy fails here, not at the first model call
        self.template = make()
        self._max = max_conversations
        self._kept: List[_Conversation] = []
        self.last_report: Optional[Report] = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)

    def _of(self, items: Sequence[Any]) -> _Conversation:
        best: Optional[_Conversation] = None
        for conv in self._kept:
            if (best is None or len(conv.last) > len(best.last)) and _begins_with(items, conv.last):
                best = conv
        return best if best is not None else _Conversation(self._make())

    def compact(self, items: List[Any], **request: Any) -> List[Any]:
        """``items`` compacted by the compactor of the conversation they continue (``request``: what else the
        request holds, as ``Compactor.compact`` takes it). Raises :class:`ctxfit.PromptTooLarge` when the request
        is still above the profile's ``request_budget`` once every cut is made."""
        with self._lock:
            conv = self._of(items)
            if request.get("input_tokens") is None and conv.reported is not None:
                request["input_tokens"] = conv.reported
            conv.reported = None
            compacted = conv.compactor.compact(items, **request)
            conv.last = items
            if conv in self._kept:
                self._kept.remove(conv)
            self._kept.append(conv)
            while len(self._kept) > self._max:
                self._kept.pop(0)
            self.last_report = conv.compactor.last_report
            conv.compactor.check_request()
        return compacted

    def learn_window(self, items: Sequence[Any], refusal: Any) -> Optional[int]:
        """The provider refused the request of ``items`` as too long for its model: the compactor of their
        conversation learns the window (:meth:`ctxfit.Compactor.learn_window`); the budget, or ``None``."""
        with self._lock:
            conv = self._of(items)
            return conv.compactor.learn_window(refusal) if conv in self._kept else None

    def answered(self, items: Sequence[Any], input_tokens: Optional[int]) -> None:
        """The provider answered the request of ``items``, counting ``input_tokens`` of it: the next request of
        their conversation passes them on (the budget trigger's, and the rate a learned window is counted at)."""
        with self._lock:
            conv = self._of(items)
            if conv.last is items and isinstance(input_tokens, int) and input_tokens > 0:
                conv.reported = input_tokens

    def retrieve(self, handle: str) -> Any:
        """The original content of the cut result ``handle`` names, from the conversations kept (the latest
        first), or ``None``."""
        with self._lock:
            compactors = [c.compactor for c in reversed(self._kept)]
        for compactor in compactors:
            found = compactor.retrieve(handle)
            if found is not None:
                return found
        return None

    def retrieval_definition(self, wire: Literal["anthropic", "openai", "responses"]) -> Any:
        """The profile's retrieval tool's definition in ``wire``'s spelling; ``ValueError`` when it has none."""
        if self.template.retrieval_tool is None:
            raise ValueError(
                f"profile `{self.template.profile}` has no retrieval_tool: set it in the policy (docs/config.md)"
            )
        definition = self.template.retrieval_tool_definition(wire)
        assert definition is not None
        return definition

    def answer(self, handle: Any) -> str:
        """What the retrieval tool answers for ``handle``: the original, or why there is none."""
        if not isinstance(handle, str):
            return "give the handle the cut result names, as {\"handle\": \"…\"}"
        content = self.retrieve(handle)
        if content is None:
            return f"no tool result has the handle {handle!r}"
        return content if isinstance(content, str) else json.dumps(content)


class ManyConversations:
    """A framework's hook that compacts with ``profile`` (by default the ``policy``'s default profile, else its
    only profile, else ``smart``) one :class:`ctxfit.Compactor` per conversation, messages in its ``_WIRE``
    format, and what it answers of them."""

    _WIRE: Literal["anthropic", "openai", "responses"]

    def __init__(
        self,
        profile: Optional[str] = None,
        policy: Optional[str] = None,
        agent: Optional[str] = None,
        *,
        max_conversations: int = 1024,
    ) -> None:
        wire = self._WIRE
        self._conversations = Conversations(lambda: Compactor(profile, policy, agent, format=wire), max_conversations)

    @property
    def profile(self) -> str:
        """The profile every conversation is compacted with."""
        return self._conversations.template.profile

    @property
    def conversations(self) -> int:
        """How many conversations it keeps."""
        return len(self._conversations)

    @property
    def last_report(self) -> Optional[Report]:
        """The report of the latest request compacted (``Compactor.last_report``), ``None`` before the first."""
        return self._conversations.last_report

    @property
    def retrieval_tool_name(self) -> Optional[str]:
        """The profile's retrieval tool, or ``None``."""
        return self._conversations.template.retrieval_tool

    def retrieve(self, handle: str) -> Any:
        """The original content of the cut result ``handle`` names, from the conversations kept (the latest
        first), or ``None``."""
        return self._conversations.retrieve(handle)
