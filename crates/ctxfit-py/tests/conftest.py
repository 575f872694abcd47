"""Shared fixtures: the corpus of real sessions and pages beside the repository.

Tests that need it are skipped with a note when it is missing (``CTXFIT_CORPUS=DIR`` points at it), and fail
instead under ``CTXFIT_REQUIRE_CORPUS=1``, which CI sets — as the Rust tests do.
"""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def corpus_dir():
    env = os.environ.get("CTXFIT_CORPUS")
    if env:
        return Path(env) if Path(env).is_dir() else None
    d = REPO.parent / "shared" / "corpus"
    return d if d.is_dir() else None


@pytest.fixture(scope="session")
def corpus():
    d = corpus_dir()
    if d is None:
        if os.environ.get("CTXFIT_REQUIRE_CORPUS") == "1":
            pytest.fail("the shared corpus is missing: expected ../shared/corpus beside the repository or CTXFIT_CORPUS=DIR")
        pytest.skip("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS=DIR): tests on real sessions and pages skipped")
    return d


SUFFIXES = (".jsonl", ".json", ".traj", ".af")


def session_files(folder: Path):
    """The session files below a folder (Claude Code's sub-agent `.meta.json` files are not sessions)."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and not p.name.startswith(".")
        and not p.name.endswith(".meta.json")
        and p.name.removesuffix(".gz").endswith(SUFFIXES)
    )
