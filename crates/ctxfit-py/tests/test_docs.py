"""The examples in the docstrings run as written."""

import doctest

import pytest

import ctxfit


@pytest.mark.parametrize(
    "obj",
    [ctxfit.Compactor, ctxfit.estimate_tokens, ctxfit.count_tokens, ctxfit.convert_messages, ctxfit.clean_html, ctxfit.replay],
    ids=lambda o: o.__name__,
)
def test_docstring_examples(obj):
    assert obj.__doc__, f"{obj.__name__} has no docstring"
    finder = doctest.DocTestFinder(recurse=False)
    tests = finder.find(obj, obj.__name__, globs={"ctxfit": ctxfit})
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0
    assert runner.tries > 0 or obj is ctxfit.replay
