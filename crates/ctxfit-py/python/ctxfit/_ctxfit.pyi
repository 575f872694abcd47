"""Type stubs of the compiled module ``ctxfit._ctxfit`` (re-exported by ``ctxfit``)."""

from os import PathLike
from typing import Any, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from .types import Report

__version__: str

Message = Dict[str, Any]
WireFormat = Literal["anthropic", "openai", "responses"]
StripLevel = Literal["minimal", "moderate", "aggressive"]
StrPath = Union[str, bytes, "PathLike[str]", "PathLike[bytes]"]

class CtxfitError(ValueError):
    """Input ctxfit cannot use: malformed messages or session files, an unknown profile, a bad policy.

    The message is the one the CLI prints (malformed JSON is named by file, line and column).
    """

class PromptTooLarge(CtxfitError):
    """The compacted request is above the profile's request budget (seed 003's guard).

    >>> try:
    ...     compactor.check_request()
    ... except ctxfit.PromptTooLarge as e:
    ...     print(e.tokens, e.budget)
    """

    tokens: int
    budget: int

class InternalError(RuntimeError):
    """A fault inside ctxfit (a Rust panic, caught at the boundary). Please report it with the input."""

class Compactor:
    """Compacts the message list of one conversation before each model request.

    ``profile`` is a built-in profile (``smart``, the default, ``seed-000``, ``seed-002``, ``mask-last-10``,
    ``keep-last-30``, ``anthropic-clear``) or one of the policy's; ``policy`` is a policy file's path or its
    TOML text, as the CLI's ``--policy`` takes it (then the default profile is the policy's own, else
    ``smart``); ``agent`` applies the policy's ``[agents.NAME]`` overrides. The environment's ``CTXFIT_*`` overrides apply as in the
    CLI. ``format`` fixes the wire format instead of detecting it from the messages.

    >>> compactor = ctxfit.Compactor("smart")
    >>> request = compactor.compact(messages)          # send this instead of `messages`
    >>> compactor.last_report["tokens_after"] <= compactor.last_report["tokens_before"]
    True

    The object keeps the conversation: call ``compact`` with the whole, growing history before every request
    (that is the live loop ``ctxfit replay`` measures). Only what was appended since the previous call is
    converted; messages already read are recognised by identity, else by ``==``. A history whose earlier
    messages changed starts a new conversation (its decisions are made anew).
    """

    def __init__(
        self,
        profile: Optional[str] = None,
        policy: Optional[str] = None,
        agent: Optional[str] = None,
        *,
        estimator: str = "fast",
        format: Optional[WireFormat] = None,
    ) -> None: ...
    @property
    def profile(self) -> str:
        """The profile's name."""
    @property
    def format(self) -> WireFormat:
        """The wire format of the conversation (detected until the first message that tells)."""
    @property
    def settings_toml(self) -> str:
        """The effective profile as TOML (what ``ctxfit policy show`` prints)."""
    def compact(
        self,
        messages: Sequence[Any],
        *,
        input_tokens: Optional[int] = None,
        system: Optional[Union[str, List[Dict[str, Any]]]] = None,
        tools: Optional[Sequence[Mapping[str, Any]]] = None,
        sent_at: Optional[float] = None,
        cache_ttl: Optional[int] = None,
    ) -> List[Any]:
        """The message list to send instead of ``messages`` (Anthropic Messages, OpenAI Chat or Responses dicts,
        or the SDKs' response objects); ``messages`` is never changed.

        Messages the request sends unchanged are your own objects; the ones compaction changed are new dicts.
        ``input_tokens`` are the input tokens the provider reported for the previous request (the budget
        trigger uses them; cache reads and writes included); ``system`` is Anthropic's top-level system prompt
        (a string or a list of blocks, as the request's ``system``; anything else is a ``CtxfitError``),
        counted against the budget. ``tools`` is the request's list of tool definitions, in any of the three
        formats' spellings, counted against the budget likewise — give both, or ``request_budget`` holds for
        the messages alone; a new system prompt or tool list starts a new conversation. ``sent_at`` is when the
        request is sent, in seconds since the Unix epoch (``time.time()``; default: now): after a pause longer
        than the profile's ``cache_ttl`` (five minutes) the provider's cache has expired, and the cuts waiting
        for their turn are made. ``cache_ttl`` is how
        long, in seconds, the provider keeps this request's cache (0: forever), when the request asks for a
        lifetime its messages do not show — 86400 with OpenAI's ``prompt_cache_retention="24h"``; by default
        the messages' Anthropic ``cache_control`` marks say it (3600 for ``"ttl": "1h"``), else the profile's
        ``cache_ttl``. It holds for the later calls too, until another says otherwise.
        """
    @property
    def last_report(self) -> Optional[Report]:
        """The report of the last ``compact`` call (``tokens_before``, ``tokens_after``, ``new_blocks``,
        ``first_changed_message`` — where the prompt cache breaks —, ``held_back``, ...: :class:`ctxfit.types.Report`);
        ``None`` before the first."""
    def learn_window(self, refusal: Union[BaseException, Mapping[str, Any], str]) -> Optional[int]:
        """The provider refused the last request as too long for its model: hold the window its refusal says
        from the next call on — call :meth:`compact` with the same messages again and send what it returns.
        ``refusal``: the SDK's exception (``anthropic.BadRequestError``, ``openai.BadRequestError``), its
        ``body``, the error answer as a dict or its JSON text, or its message. Where the refusal says no numbers
        (the Responses API's), the window is the request before, which the provider took; each later call's
        ``input_tokens`` measures the rate between the provider's count and this one's again. Returns the
        request budget it comes to (this compactor's tokens), or ``None`` when it is no such refusal or teaches
        nothing."""
    def check_request(self) -> int:
        """The token guard on the last request: returns its estimated tokens; a ``UserWarning`` above the
        profile's warning threshold; raises :class:`PromptTooLarge` above its request budget."""
    def save(self) -> Dict[str, Any]:
        """The compactor's decisions as a JSON-ready dict, to keep across a restart of the agent."""
    def restore(self, state: Dict[str, Any]) -> None:
        """Take up the decisions ``save`` gave, before the restarted agent's first ``compact``: for the same
        history it then sends the same bytes as the compactor that saved them. Another profile's state is
        refused (:class:`CtxfitError`)."""
    @property
    def retrieval_tool(self) -> Optional[str]:
        """The profile's retrieval tool (``retrieval_tool`` in the policy), or ``None`` when it has none."""
    def retrieval_tool_definition(self, format: Optional[WireFormat] = None) -> Optional[Dict[str, Any]]:
        """The retrieval tool as a dict for the request's ``tools`` list, in ``format`` (by default the
        conversation's: the compactor's ``format``, ``anthropic`` until messages tell otherwise); ``None`` when the
        profile has no retrieval tool. Every result the profile cuts then ends
        with ``[the full result: call NAME with {"handle":"..."}]``: answer that call with :meth:`retrieve`."""
    def retrieve(self, handle: str) -> Optional[Union[str, List[Dict[str, Any]]]]:
        """The original of the tool result a retrieval handle names (``toolu_01``, or ``toolu_01#1`` for the
        second result with a reused id), byte for byte, from the history read so far: a string, or a list of
        blocks as the wire format writes it. ``None`` when no result has that handle."""
    def reset(self) -> None:
        """Forget the conversation: the next ``compact`` starts a new one."""
    def __len__(self) -> int:
        """Messages read so far."""

def estimate_tokens(text: str, estimator: str = "fast") -> int:
    """Estimated tokens of a text: ``fast`` (default, within a few percent of o200k), ``chars4``, or the exact
    BPE counts ``o200k`` and ``cl100k``.

    >>> ctxfit.estimate_tokens("fn main() { println!(\\"hello\\"); }")
    12
    >>> ctxfit.estimate_tokens("hello world", "o200k")
    2
    """

def count_tokens(
    messages: Sequence[Any],
    *,
    system: Optional[Union[str, List[Dict[str, Any]]]] = None,
    estimator: str = "fast",
) -> int:
    """Estimated input tokens of a message list (any wire format), with its system prompt if given."""

def convert_messages(
    messages: Sequence[Any], to: WireFormat, *, source: Optional[WireFormat] = None
) -> List[Message]:
    """A message list in another wire format; what the target cannot carry is named in a ``UserWarning``.

    >>> ctxfit.convert_messages(anthropic_messages, "openai")
    """

def clean_html(
    html: Union[str, bytes], level: StripLevel = "moderate", base_url: Optional[str] = None
) -> Tuple[str, Dict[str, Any]]:
    """HTML to Markdown: ``(markdown, stats)``.

    ``bytes`` are decoded by the page's declared or sniffed charset. ``stats`` has ``original_size``,
    ``cleaned_size``, ``reduction_percent`` and what the page states about itself: ``title``,
    ``canonical_url``, ``published``, ``author`` (``None`` when it does not).

    >>> md, stats = ctxfit.clean_html("<html><title>T</title><body><nav>menu</nav><p>Text</p></body></html>")
    >>> md, stats["title"]
    ('Text\\n', 'T')
    """

def fetch_webpage_markdown(
    url: str,
    strip_level: StripLevel = "moderate",
    max_chars: int = 5000,
    chunk: Optional[int] = None,
    *,
    timeout: float = 30.0,
    max_bytes: int = 10485760,
    allow_private: bool = False,
    allow_addresses: Optional[Iterable[str]] = None,
) -> Dict[str, Any]:
    """Fetch a page as the agent's page tool: seed 003's result dict (``success``, ``data``, ``tokens_used``,
    ``was_truncated``, ``original_size``, ``is_chunked``, ``chunk_number``, ``total_chunks``, ``message``,
    and ``title``/``canonical_url``/``published``/``author`` when the page states them). Never raises for a
    page that cannot be fetched: ``success`` is false and ``message`` says why.

    Only public addresses are fetched unless ``allow_private`` (loopback, private networks) or
    ``allow_addresses`` (single IPs, e.g. ``["127.0.0.1"]`` for a local test server) say otherwise.
    """

PAGE_TOOL_HINT: str
"""A few sentences for an agent's system prompt: which strip level to choose, what a page costs at each, and how
to read a long page chunk by chunk."""

ToolFormat = Literal["anthropic", "openai-chat", "openai-responses"]

class PageTool:
    """The page tool as an agent registers it. ``definition(format)`` goes into the request's ``tools``; calling
    the tool with the model's input (the ``tool_use`` block's ``input`` dict, or an OpenAI function call's
    ``arguments`` text) fetches the page and returns seed 003's result dict, to ``json.dumps`` into the tool
    result. Input that does not fit the schema (a missing ``url``, an unknown strip level, a ``max_chars`` over
    ``max_chars_limit``, an unknown field) is a result with ``success`` false saying what to fix, never an
    exception. The model chooses the URL, strip level, ``max_chars`` and chunk; the limits and the addresses that
    may be reached are the program's. The last ``cache_pages`` pages are kept ``cache_seconds``, so reading a
    long page chunk by chunk fetches it once.
    """

    name: str
    max_chars_limit: int

    def __init__(
        self,
        strip_level: StripLevel = "moderate",
        max_chars: int = 5000,
        *,
        max_chars_limit: Optional[int] = None,
        timeout: float = 30.0,
        max_bytes: int = 10485760,
        allow_private: bool = False,
        allow_addresses: Optional[Iterable[str]] = None,
        cache_pages: int = 4,
        cache_seconds: float = 300.0,
    ) -> None: ...
    def definition(self, format: ToolFormat = "anthropic") -> Dict[str, Any]:
        """``{"name", "description", "input_schema"}`` for Anthropic; ``{"type": "function", "function": {...}}``
        for OpenAI Chat; ``{"type": "function", "name", "description", "parameters", "strict"}`` for Responses."""
    def __call__(self, input: Union[Mapping[str, Any], str]) -> Dict[str, Any]: ...

def load_session(path: StrPath, index: int = 0, *, format: Optional[str] = None) -> List[Message]:
    """The messages of a recorded session (Claude Code, Codex CLI, Gemini CLI, Copilot CLI, SWE-agent,
    mini-swe-agent, OpenHands, tau-bench and tau2-bench, Letta, or plain Anthropic/OpenAI JSON; gzipped or not) in its wire
    format; ``index`` picks one session of a file that holds several (``-1``: the last)."""

def load_sessions(path: StrPath, *, format: Optional[str] = None) -> List[Dict[str, Any]]:
    """Every session of a file: dicts with ``name``, ``source`` (the importer's format), ``format`` (the wire
    format of ``messages``), ``messages``, ``system`` and ``tools``."""

def replay(
    paths: Union[StrPath, Iterable[StrPath]],
    policies: Union[str, List[str], None] = None,
    *,
    prices: Union[str, List[str], None] = None,
    estimator: str = "fast",
    cache_ttl: int = 300,
) -> Dict[str, Any]:
    """Replay recorded sessions (files or folders) request by request under each policy — ``none``,
    ``oracle`` (evaluation only: it reads the future), built-in profiles, policy files — as ``ctxfit replay
    --json`` does: ``{"prices": ..., "policies": [row per policy], "sessions": [every replay]}``; ``None``: every
    policy built in (an empty list, or no paths, raises ``CtxfitError``). ``prices``
    (default ``anthropic``): ``anthropic``, ``openai``, ``uncached``, ``all``, or several, as a list or
    comma-separated. ``cache_ttl``: seconds the
    provider keeps a cached prefix (0: forever); where a log records times (Claude Code, Codex CLI, mini-swe-agent), a request
    sent longer than that after the one before is written to the cache whole, under every policy."""

def profiles() -> List[str]:
    """The built-in profiles."""

def estimators() -> List[str]:
    """The token estimators."""
