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

A request the provider refuses as too long for the model can teach its conversation the model's window and be sent
once more within it, when the filter also wraps the model the runs call — a model name through the run's
provider, or a ``Model`` itself::

    run_config = RunConfig(call_model_input_filter=compaction, model_provider=compaction.model_provider())
    agent = Agent(name="coder", model=compaction.model(OpenAIResponsesModel("gpt-5", client)))

With a policy that sets ``retrieval_tool`` (docs/config.md), every cut result names a tool through which the
model gets the original back; give the agent that tool::

    compaction = CompactingInputFilter(policy="ctxfit.toml")
    agent = Agent(name="coder", tools=[bash, compaction.retrieval_tool()])
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import OrderedDict
from typing import Any, AsyncIterator, Dict, List, Optional, Sequence, Tuple

from ._conversations import ManyConversations, _begins_with

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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Takes ``profile``, ``policy``, ``agent`` and ``max_conversations`` (1,024)."""
        super().__init__(*args, **kwargs)
        # the requests compacted lately, by the list sent (the SDK hands the filter's list to the model as it is):
        # what each was made of, to compact it again if the provider refuses it as too long for its model
        self._made: OrderedDict[int, Tuple[List[Any], List[Any], Optional[str], Optional[Sequence[Any]]]] = (
            OrderedDict()
        )
        self._made_lock = threading.Lock()

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
        read = list(items)
        sent = self._conversations.compact(
            read, system=instructions or None, tools=_tool_dicts(tools) if tools else None
        )
        with self._made_lock:
            self._made[id(sent)] = (sent, read, instructions, tools)
            while len(self._made) > 64:
                self._made.popitem(last=False)
        return sent

    def _request_of(self, sent: Any) -> Optional[Tuple[List[Any], List[Any], Optional[str], Optional[Sequence[Any]]]]:
        """What the request ``sent`` (a list this filter made, or the SDK's copy of it: the same items) was made of,
        or ``None``."""
        if not isinstance(sent, list):
            return None
        with self._made_lock:
            made = self._made.get(id(sent))
            if made is not None and made[0] is sent:
                return made
            for made in reversed(self._made.values()):
                if len(made[0]) == len(sent) and _begins_with(sent, made[0]):
                    return made
        return None

    def _compact_again(self, sent: Any, refusal: BaseException) -> Optional[List[Any]]:
        """The provider refused ``sent``: when as too long for the model, its conversation learns the window and the
        request comes back compacted within it; otherwise ``None``."""
        made = self._request_of(sent)
        if made is None:
            return None
        _, read, instructions, tools = made
        if self._conversations.learn_window(read, refusal) is None:
            return None
        again = self.compact(read, instructions, tools)
        # (the same request again — a run continuing a stored response sends only its new items — would be refused
        # again)
        return None if again == made[0] else again

    def _answered(self, sent: Any, response: Any) -> None:
        """The provider answered ``sent``: the input tokens its usage counts go to the conversation's next request."""
        made = self._request_of(sent)
        usage = getattr(response, "usage", None)
        if made is not None:
            self._conversations.answered(made[1], getattr(usage, "input_tokens", None))

    def model(self, model: Any) -> Any:
        """``model`` (an Agents SDK ``Model``) as runs through this filter should call it: a request the provider
        refuses as too long for the model (``context_length_exceeded``, ``prompt is too long``) teaches its
        conversation the model's window (:meth:`ctxfit.Compactor.learn_window`) and is sent once more, compacted
        again within it — the run goes on where it would stop; each answer's usage keeps the window measured.
        A refused request that no cut brings within the window raises :class:`ctxfit.PromptTooLarge` (the refusal
        its ``__context__``), as under a budget. Every other call and error goes through as it was; so does a
        refusal in a stream that has begun."""
        return _windowed(model, self)

    def model_provider(self, provider: Any = None) -> Any:
        """``RunConfig(model_provider=...)``: the models ``provider`` gives (the SDK's ``MultiProvider`` when
        ``None``: the model names of ``Agent(model="gpt-5")``), each as :meth:`model` wraps it."""
        from agents.models.interface import ModelProvider
        from agents.models.multi_provider import MultiProvider

        inner = provider if provider is not None else MultiProvider()
        wrap = self.model

        class _Provider(ModelProvider):
            def get_model(self, model_name: Optional[str]) -> Any:
                return wrap(inner.get_model(model_name))

            async def aclose(self) -> None:
                close = getattr(inner, "aclose", None)
                if close is not None:
                    await close()

        return _Provider()

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


def _input(args: List[Any], kwargs: Dict[str, Any]) -> Any:
    """A ``Model`` call's ``input``: the keyword, else its second positional argument."""
    return kwargs["input"] if "input" in kwargs else (args[1] if len(args) > 1 else None)


def _with_input(args: List[Any], kwargs: Dict[str, Any], sent: List[Any]) -> None:
    if "input" in kwargs or len(args) < 2:
        kwargs["input"] = sent
    else:
        args[1] = sent


def _windowed(model: Any, compaction: CompactingInputFilter) -> Any:
    """``model`` wrapped so that a refusal as too long for the model is learned and the request sent once more."""
    from agents.models.interface import Model

    class _WindowedModel(Model):
        def __getattr__(self, name: str) -> Any:
            return getattr(model, name)

        def get_retry_advice(self, request: Any) -> Any:
            return model.get_retry_advice(request)

        async def close(self) -> None:
            await model.close()

        async def _cleanup_on_run_end(self, owner: object) -> None:
            cleanup = getattr(model, "_cleanup_on_run_end", None)
            if cleanup is not None:
                await cleanup(owner)

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            call = list(args)
            try:
                response = await model.get_response(*call, **kwargs)
            except Exception as refusal:
                again = compaction._compact_again(_input(call, kwargs), refusal)
                if again is None:
                    raise
                _with_input(call, kwargs, again)
                response = await model.get_response(*call, **kwargs)
            compaction._answered(_input(call, kwargs), response)
            return response

        async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            call = list(args)
            began = False
            try:
                async for event in model.stream_response(*call, **kwargs):
                    began = True
                    _usage_of(event, call, kwargs, compaction)
                    yield event
                return
            except Exception as refusal:
                again = None if began else compaction._compact_again(_input(call, kwargs), refusal)
                if again is None:
                    raise
            _with_input(call, kwargs, again)
            async for event in model.stream_response(*call, **kwargs):
                _usage_of(event, call, kwargs, compaction)
                yield event

    return _WindowedModel()


def _usage_of(event: Any, args: List[Any], kwargs: Dict[str, Any], compaction: CompactingInputFilter) -> None:
    """A stream's completion carries the response's usage: passed on as an answer's is."""
    if getattr(event, "type", None) == "response.completed":
        compaction._answered(_input(args, kwargs), getattr(event, "response", None))
