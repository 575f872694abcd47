"""The shapes of what ctxfit hands back as dicts, for type checkers (``TypedDict``) and readers.

``Compactor.last_report`` is a :class:`Report`; its ``new_blocks`` are :class:`BlockReport` s and its
``held_back`` a :class:`HeldBack` or ``None``. They are plain dicts at run time.
"""

from typing import List, Literal, Optional, TypedDict

__all__ = ["Action", "HoldReason", "BlockReport", "HeldBack", "Report"]

Action = Literal["replaced", "pointer", "input_cleared"]
"""What happened to a block: cut to a shorter version, replaced by a one-line pointer, or its call's input
cleared."""

HoldReason = Literal["min_reclaim_tokens", "min_reclaim_ratio", "cache_write_premium", "regret_bound"]
"""Why cuts the rules chose waited: too few tokens, too small a share of the cached part, not paying back their
cache write yet, or past the regret bound (they wait until the conversation's savings cover them)."""


class BlockReport(TypedDict):
    """One block a ``compact`` call changed."""

    message: int
    block: int
    tool_use_id: str
    tool: str
    rule: str
    action: Action
    chars_before: int
    chars_after: int
    tokens_before: int
    tokens_after: int


class HeldBack(TypedDict):
    """Cuts the rules chose that the reclaim checks held back this request."""

    results: int
    tokens: int
    reason: HoldReason


class Report(TypedDict):
    """What one ``compact`` call did (``Compactor.last_report``)."""

    profile: str
    #: input tokens the trigger looked at; reported by the provider (``input_tokens=``) or estimated
    input_tokens: int
    input_tokens_reported: bool
    triggered: bool
    #: estimated tokens of the history as it is, and of the request as compacted
    tokens_before: int
    tokens_after: int
    #: blocks this call compacted (earlier ones are sticky and counted in ``compacted_total``)
    new_blocks: List[BlockReport]
    compacted_total: int
    #: the first message that differs from the previous request's: where the provider's prompt cache breaks
    first_changed_message: Optional[int]
    dropped_messages: int
    budget: int
    held_back: Optional[HeldBack]
    #: the request came longer after the previous one than the provider's cache lives
    cache_expired: bool
