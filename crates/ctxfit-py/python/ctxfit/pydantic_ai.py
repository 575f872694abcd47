"""Pydantic AI bridge: a capability that compacts what each model request of a run is sent.

Works with ``pydantic-ai`` 2 (``pip install ctxfit[pydantic-ai]``)::

    from pydantic_ai import Agent
    from ctxfit.pydantic_ai import CompactingCapability

    agent = Agent("openai:gpt-5-mini", tools=[bash], capabilities=[CompactingCapability("smart")])

Before every model request, the stale tool results of the messages the request is to carry are cut (the
``ToolReturnPart`` s whose content a rule changed are sent with the compacted text instead), with the agent's
instructions and function tools counted against the profile's budget. The run's history —
``result.all_messages()``, what the next run continues — stays whole: only the request is changed. One capability
serves every run of its agent: a request continues the conversation whose last request it begins with (the
longest such), else starts one, and the least recently used of more than ``max_conversations`` is forgotten, so
run after run of one conversation (``message_history=result.all_messages()``) keeps its decisions.

With a policy that sets ``retrieval_tool`` (docs/config.md), every cut result names a tool through which the
model gets the original back; give the agent that tool::

    compaction = CompactingCapability(policy="ctxfit.toml")
    agent = Agent(model, tools=[bash, compaction.retrieval_tool()], capabilities=[compaction])
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Tuple

from pydantic_ai import messages as _m
from pydantic_ai.capabilities import AbstractCapability

from ._conversations import ManyConversations

__all__ = ["CompactingCapability"]


def _text(content: Any) -> str:
    """A user prompt's content as text (what is not text — an image, a file — named by its kind)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(c if isinstance(c, str) else f"[{type(c).__name__}]" for c in content)
    return str(content)


def _returned(part: Any) -> str:
    """A tool return's content as the model is sent it (its own text, else JSON; else as Python shows it)."""
    try:
        return str(part.model_response_str())
    except Exception:  # content Pydantic AI cannot serialize: the model call itself will say so
        return str(part.content)


def _blocks(message: Any) -> Tuple[str, List[Dict[str, Any]], List[Optional[int]]]:
    """A Pydantic AI message as an Anthropic message's role and blocks — what ctxfit's rules read — and, for each
    block, the index of the part it is (``None``: a part with nothing to count)."""
    blocks: List[Dict[str, Any]] = []
    parts: List[Optional[int]] = []
    request = isinstance(message, _m.ModelRequest)
    for i, part in enumerate(message.parts):
        if isinstance(part, _m.ToolReturnPart):
            block: Dict[str, Any] = {"type": "tool_result", "tool_use_id": part.tool_call_id,
                                     "content": _returned(part)}
        elif isinstance(part, _m.RetryPromptPart) and part.tool_name is not None:
            block = {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": part.model_response(),
                     "is_error": True}
        elif isinstance(part, _m.ToolCallPart):
            block = {"type": "tool_use", "id": part.tool_call_id, "name": part.tool_name,
                     "input": part.args_as_dict()}
        elif isinstance(part, _m.UserPromptPart):
            block = {"type": "text", "text": _text(part.content)}
        elif isinstance(part, _m.SystemPromptPart):
            # (the system prompt, wherever the history holds it, is counted as text where it stands)
            block = {"type": "text", "text": part.content}
        elif isinstance(getattr(part, "content", None), str) and part.content:
            # text, thinking, a retry prompt, and the kinds of part this does not know: their text counts
            block = {"type": "text", "text": part.content}
        else:
            continue
        blocks.append(block)
        parts.append(i)
    return ("user" if request else "assistant"), blocks, parts


def _same(a: List[Any], b: List[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


class CompactingCapability(ManyConversations, AbstractCapability[Any]):
    """``Agent(..., capabilities=[CompactingCapability("smart")])``: compacts the messages of every model request
    with ``profile`` (by default the ``policy``'s default profile, else its only profile, else ``smart``), one
    :class:`ctxfit.Compactor` per conversation. Raises :class:`ctxfit.PromptTooLarge` (the run ends, nothing sent)
    when a request is still above the profile's ``request_budget`` once every cut is made."""

    _WIRE = "anthropic"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Takes ``profile``, ``policy``, ``agent`` and ``max_conversations`` (1,024), as the Agents SDK filter does."""
        super().__init__(*args, **kwargs)
        # each message of the latest request as read, with its parts (by identity: Pydantic AI hands the same
        # message objects to request after request), so that a request reads only what is new, and the
        # compactor, given the same dicts, looks only at those
        self._read: Dict[int, Tuple[Any, List[Any], Dict[str, Any], List[Optional[int]]]] = {}
        # the requests compacted lately, by their newest message (the attempt's context and list are copies of
        # the request's; its messages are the same objects): what they were made of, to compact one again if the
        # provider refuses it as too long for its model
        self._made: OrderedDict[int, Tuple[Any, Sequence[Any], Optional[str], Optional[Sequence[Any]],
                                           List[Dict[str, Any]]]] = OrderedDict()
        self._wire: List[Dict[str, Any]] = []
        # the requests to attempt again within a window just learned, by newest message: the messages to send
        self._again: Dict[int, Tuple[Any, List[Any]]] = {}

    @classmethod
    def get_serialization_name(cls) -> Optional[str]:
        return None  # it holds compactors, not a spec

    def compact_messages(
        self,
        messages: Sequence[Any],
        instructions: Optional[str] = None,
        tools: Optional[Sequence[Any]] = None,
    ) -> List[Any]:
        """The messages to send instead of ``messages`` (Pydantic AI's ``ModelRequest`` s and ``ModelResponse`` s):
        the same messages, but for the tool returns a rule cut, which are sent with the compacted text.
        ``instructions`` and ``tools`` (``ToolDefinition`` s) are counted against the profile's budget."""
        wire: List[Dict[str, Any]] = []
        where: Dict[Tuple[int, int], Tuple[int, int]] = {}  # (wire message, block) → (message, part)
        read: Dict[int, Tuple[Any, List[Any], Dict[str, Any], List[Optional[int]]]] = {}
        for mi, message in enumerate(messages):
            seen = self._read.get(id(message))
            parts_now = list(message.parts)
            if seen is None or seen[0] is not message or not _same(seen[1], parts_now):
                role, blocks, part_of = _blocks(message)
                seen = (message, parts_now, {"role": role, "content": blocks}, part_of)
            read[id(message)] = seen
            _, _, as_wire, part_of = seen
            blocks = as_wire["content"]
            if not blocks:
                continue
            for bi, part in enumerate(part_of):
                if part is not None:
                    where[(len(wire), bi)] = (mi, part)
            wire.append(as_wire)
        self._read = read
        definitions = [
            {"name": t.name, "description": t.description or "", "input_schema": t.parameters_json_schema}
            for t in tools or ()
        ]
        # what the provider counted of the previous request (the answer to it): the budget trigger's, and the
        # rate at which a window learned comes to ctxfit's count
        reported = next((getattr(getattr(msg, "usage", None), "input_tokens", None) or None
                         for msg in reversed(messages) if getattr(msg, "kind", None) == "response"), None)
        compacted = self._conversations.compact(
            wire, system=instructions or None, tools=definitions or None, input_tokens=reported
        )
        self._wire = wire
        out = list(messages)
        replaced: Dict[int, List[Any]] = {}
        for wi, (sent, original) in enumerate(zip(compacted, wire)):
            if sent is original or sent == original:
                continue
            for bi, (now, was) in enumerate(zip(sent["content"], original["content"])):
                if now == was or was.get("type") != "tool_result" or (wi, bi) not in where:
                    continue
                mi, pi = where[(wi, bi)]
                content = now.get("content")
                text = content if isinstance(content, str) else "\n".join(
                    b.get("text", "") for b in content or () if isinstance(b, dict)
                )
                parts = replaced.setdefault(mi, list(messages[mi].parts))
                parts[pi] = dataclasses.replace(parts[pi], content=text)
        for mi, parts in replaced.items():
            out[mi] = dataclasses.replace(messages[mi], parts=parts)
        return out

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        """Pydantic AI's hook: the request's messages compacted (only this request's: the run's history stays
        whole)."""
        parameters = request_context.model_request_parameters
        instructions = "\n\n".join(
            p.content for p in getattr(parameters, "instruction_parts", None) or () if isinstance(p.content, str)
        )
        tools = getattr(parameters, "function_tools", None)
        original = request_context.messages
        request_context.messages = self.compact_messages(original, instructions or None, tools)
        sent = request_context.messages
        if sent:
            self._made[id(sent[-1])] = (sent[-1], original, instructions or None, tools, self._wire)
        while len(self._made) > 64:
            self._made.popitem(last=False)
        return request_context

    async def on_model_request_error(self, ctx: Any, *, request_context: Any, error: Exception) -> Any:
        """Pydantic AI's hook: a refusal of the request as too long for the model (the provider's 400 saying so)
        teaches its conversation the model's window (:meth:`ctxfit.Compactor.learn_window`), and the request,
        compacted again within it, is attempted once more (``RetryModelRequest``); any other error goes on."""
        from pydantic_ai.exceptions import RetryModelRequest

        sent = request_context.messages
        made = self._made.get(id(sent[-1])) if sent else None
        if made is None or made[0] is not sent[-1] or getattr(request_context, "attempt", 1) > 1:
            raise error
        _, original, instructions, tools, wire = made
        if self._conversations.learn_window(wire, error) is None:
            raise error
        # (the next attempt starts from the request as it was before any attempt: it is given these messages
        # when it is prepared)
        self._again[id(sent[-1])] = (sent[-1], self.compact_messages(original, instructions, tools))
        while len(self._again) > 64:  # (attempts never made: a run cancelled meanwhile)
            self._again.pop(next(iter(self._again)))
        raise RetryModelRequest()

    async def prepare_model_request(self, ctx: Any, request_context: Any) -> Any:
        """Pydantic AI's hook before each attempt: an attempt after a refusal as too long for the model sends the
        request as compacted again within the window the refusal taught."""
        sent = request_context.messages
        again = self._again.pop(id(sent[-1]), None) if sent else None
        if again is not None and again[0] is sent[-1]:
            request_context.messages = again[1]
        return request_context

    def retrieval_tool(self) -> Any:
        """The profile's retrieval tool as a Pydantic AI ``Tool``: it answers a handle with the original result.
        Raises ``ValueError`` when the profile has no ``retrieval_tool``."""
        from pydantic_ai import Tool

        definition = self._conversations.retrieval_definition("anthropic")

        def retrieve(handle: str) -> str:
            return self._conversations.answer(handle)

        return Tool(retrieve, takes_ctx=False, name=definition["name"],
                    description=definition.get("description", ""))
