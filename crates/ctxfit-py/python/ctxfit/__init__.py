"""ctxfit: keep a tool-using LLM agent's conversation inside its token budget.

The package is the Rust crates of ctxfit (the same ones as the ``ctxfit`` CLI), called with the interpreter
released while they work.

Compaction before every model request::

    import anthropic, ctxfit

    client = anthropic.Anthropic()
    compactor = ctxfit.Compactor("smart")
    messages = [{"role": "user", "content": "Fix the failing test in tests/test_io.py"}]
    while True:
        request = compactor.compact(messages)      # what to send instead: stale tool results cut
        compactor.check_request()                  # raises PromptTooLarge above the request budget
        response = client.messages.create(model=MODEL, max_tokens=4096, messages=request, tools=TOOLS)
        messages.append({"role": "assistant", "content": response.content})
        ...                                        # run the tools, append their results to `messages`

``messages`` stays the agent's own, whole history; the compactor remembers what it decided (decisions are
sticky, so the prompt cache keeps working) and reads only what was appended since its previous call.

Also: :func:`estimate_tokens`, :func:`count_tokens`, :func:`convert_messages`, :func:`clean_html`,
:func:`fetch_webpage_markdown` (and :class:`PageTool`, the same as a tool an agent registers), :func:`load_session`, :func:`load_sessions`, :func:`replay`; the LangChain /
LangGraph bridge is :mod:`ctxfit.langchain` (``pip install ctxfit[langchain]``); the OpenAI Agents SDK's input
filter is :mod:`ctxfit.openai_agents`; Pydantic AI's capability is :mod:`ctxfit.pydantic_ai`.
"""

from ._ctxfit import (
    PAGE_TOOL_HINT,
    Compactor,
    CtxfitError,
    InternalError,
    PageTool,
    PromptTooLarge,
    __version__,
    clean_html,
    convert_messages,
    count_tokens,
    estimate_tokens,
    estimators,
    fetch_webpage_markdown,
    load_session,
    load_sessions,
    profiles,
    replay,
)

__all__ = [
    "PAGE_TOOL_HINT",
    "Compactor",
    "CtxfitError",
    "InternalError",
    "PageTool",
    "PromptTooLarge",
    "__version__",
    "clean_html",
    "convert_messages",
    "count_tokens",
    "estimate_tokens",
    "estimators",
    "fetch_webpage_markdown",
    "load_session",
    "load_sessions",
    "profiles",
    "replay",
]
