"""An agent loop on the official SDKs, the library's `Compactor` in it, through a refusal as too long for the model.

The stand-in model on 127.0.0.1 (`test_proxy.Upstream`, model `window-N`) has a context window of N tokens of four
bytes of the request body: it refuses a longer request as its API does and answers the others with their usage.
The loop compacts before each call; when the call is refused, it hands the SDK's exception to
`Compactor.learn_window`, compacts the same messages again and sends that.
"""

import json

import pytest

import ctxfit
from test_proxy import upstream as model  # noqa: F401  (the stand-in model, a fixture)

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

WINDOW, TURNS = 12_000, 45


def read(k):
    return "".join(f"    let value_{k}_{i} = compute_{i}(input_{k}, {i}); // step {i} of file {k}\n" for i in range(40))


@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_an_agent_loop_learns_its_models_window_from_the_refusal(model, sdk):
    compactor = ctxfit.Compactor("smart")
    refusals, reported, budgets = 0, None, []
    if sdk == "anthropic":
        client = anthropic.Anthropic(base_url=model, api_key="k", max_retries=0)
        refused_as = anthropic.BadRequestError
        system = "You are a test agent."
        tools = [{"name": "Read", "description": "Read a file.",
                  "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]
        messages = [{"role": "user", "content": "Read the project's files."}]

        def call(request):
            answer = client.messages.create(model=f"window-{WINDOW}", max_tokens=8, system=system, tools=tools,
                                            messages=request)
            return answer.usage.input_tokens

        def compact(reported):
            return compactor.compact(messages, system=system, tools=tools, input_tokens=reported)

        def turn(k):
            return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "Read",
                                                       "input": {"file_path": f"/src/f{k}.rs"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": read(k)}]}]
    else:
        client = openai.OpenAI(base_url=model + "/v1", api_key="k", max_retries=0)
        refused_as = openai.BadRequestError
        tools = [{"type": "function", "function": {"name": "Read", "parameters": {
            "type": "object", "properties": {"file_path": {"type": "string"}}}}}]
        messages = [{"role": "system", "content": "You are a test agent."},
                    {"role": "user", "content": "Read the project's files."}]

        def call(request):
            return client.chat.completions.create(model=f"window-{WINDOW}", messages=request, tools=tools).usage.prompt_tokens

        def compact(reported):
            return compactor.compact(messages, tools=tools, input_tokens=reported)

        def turn(k):
            return [{"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{k}", "type": "function",
                     "function": {"name": "Read", "arguments": json.dumps({"file_path": f"/src/f{k}.rs"})}}]},
                    {"role": "tool", "tool_call_id": f"call_{k}", "content": read(k)}]

    for k in range(TURNS):
        try:
            reported = call(compact(reported))
        except refused_as as refusal:
            refusals += 1
            budgets.append(compactor.learn_window(refusal))
            reported = call(compact(None))
        messages += turn(k)
    # sent whole, the last request would be twice the window: one refusal taught it, and each answer's usage
    # kept the budget at the window as the request changed
    assert len(json.dumps(messages)) // 4 > 2 * WINDOW
    assert refusals == 1 and budgets[0] > 0, budgets
    assert compactor.last_report["tokens_after"] < compactor.last_report["tokens_before"] / 2


def test_what_is_not_such_a_refusal_teaches_nothing():
    compactor = ctxfit.Compactor("smart")
    assert compactor.learn_window("prompt is too long: 3000 tokens > 2000 maximum") is None, "no request yet"
    compactor.compact([{"role": "user", "content": "hi " * 2000}])
    for other in ("Rate limit reached", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
                  ValueError("no"), 42):
        assert compactor.learn_window(other) is None
    # the window is learned, but the request is its newest message alone, which nothing may cut: the token
    # guard says so before it is sent again
    budget = compactor.learn_window("prompt is too long: 3000 tokens > 2000 maximum")
    assert budget is not None
    compactor.compact([{"role": "user", "content": "hi " * 2000}])
    with pytest.raises(ctxfit.PromptTooLarge):
        compactor.check_request()


def test_the_window_outlives_a_history_started_over():
    compactor = ctxfit.Compactor("smart")
    history = [{"role": "user", "content": "hi " * 2000}]
    compactor.compact(history)
    compactor.compact(history + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more " * 10}])
    budget = compactor.learn_window("prompt is too long: 9000 tokens > 6000 maximum")
    assert budget is not None
    # the agent rewrites its history (a new task): a new conversation, the same model
    compactor.compact([{"role": "user", "content": "another task " * 3000}])
    with pytest.raises(ctxfit.PromptTooLarge):
        compactor.check_request()
