"""Wire dialects.  Each module is pure: ``build_request`` plans the HTTP request (a path, headers
without a credential, a body), ``parse_stream`` turns the framed body into content items and a final
StreamEnd, and ``PROTOCOL`` (an ``agenthub.providers._common.Protocol``) at its end declares the
rest: framing, one-document answers, the quirk keys it reads, its embeddings module, its model list
and its demo.  Where a request goes and how it is authorised is a host's (``agenthub.hosts``); a
client type is a row of (dialect, host, quirks) there.

``DIALECTS`` is the index: dialect name -> a ``Dialect`` record of the facts other rooms read without
importing the dialect's module (telemetry's operation name, the tool runner's tool-name rule, the
history converter's opaque marks and tool-call-id rule, the batch API).  A new dialect is its module
plus one ``Dialect`` line here (and its rows in ``agenthub.hosts``); every field is required.
"""

import importlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["Dialect", "DIALECTS", "PROTOCOLS", "dialect", "protocol", "embeddings_protocol", "all_protocols",
           "ANY_ID", "ALL_FAMILIES"]

#: ``call_ids`` of a dialect that sends every tool_call id as it came
ANY_ID = (None, None)  # type: Tuple[Optional[str], Optional[int]]
#: ``reads`` of a dialect that reads every family's marked items (agenthub serve passes them through)
ALL_FAMILIES = "*"


class Dialect(object):
    """What agenthub knows about one wire dialect, besides its module's functions (every field declared):

    ``module``: its module under ``agenthub.providers`` (imported on first use by ``protocol``).
    ``operation``: ``gen_ai.operation.name`` of a call that is no embeddings call (``chat``,
    ``generate_content``).
    ``provider_by_host``: True when other vendors' servers speak this dialect (Chat Completions,
    Responses): at a vendor's own host (a registry ``Route``'s, or a client-type row's
    ``provider_hosts``) that vendor is ``gen_ai.provider.name``; False: the client-type row's always.
    ``tool_names``: (regular expression a tool name must match in full, the rule in words).
    ``call_ids``: (regular expression a tool_call id must match or None, longest id accepted or None);
    ``ANY_ID``: every id goes as it came.  An id outside the rule is rewritten on the way out
    (``agenthub.foreign``).
    ``marks``: ((family, fidelity keys), ...): the keys of ``fidelity`` that mark a thinking /
    inline_thinking / tool_call item as this dialect's own (a family named after the dialect) or as a
    family several dialects share (``claude``: Anthropic's API and Bedrock's Claude both write it; such
    families are checked after every dialect's own).
    ``reads``: the families whose marked items this dialect reads (``ALL_FAMILIES``: every one).
    ``compaction``: the ``fidelity["format"]`` of the compaction items it writes and reads (None: none);
    equal to its Protocol's ``compaction_format``.
    ``batch_api``: the kind of batch request a row of this dialect is (``chat``, ``responses``,
    ``messages``, ``generate``; None: no batch engine takes it); the engine is the host's
    (``agenthub.jobs.backends``).
    ``knows_structured_output``: True when the dialect knows each model's structured-output support itself
    (its ``build_request`` refuses a ``json_schema`` response_format for a model without it, so a plan that
    passes says the model has it: ``agenthub models --supports json_schema``); False: the catalog's sources say.
    ``relays``: True when the other end is an agenthub server, which checks the request against its own
    upstream's rules (tool names, unanswered tool calls): the client checks none of those itself.
    ``answers_required``: True when the API refuses a history where a tool call is not answered before the next
    assistant message (``agenthub.validate.check_tool_pairs``; a Chat Completions host that refuses says so by
    its endpoint quirk ``answers_required`` instead, as some servers of that dialect take such a history).
    ``unique_call_ids``: True when the API takes each tool call id once in a request: a call whose id an earlier
    call took goes out under an id of its own, and so do its results (``agenthub.foreign``).
    ``results_next``: True when the API takes a call's results only in the user turn right after the call, and
    joins no user messages itself: the user messages after a call are sent as one (``agenthub.foreign``).
    """

    __slots__ = ("name", "module", "operation", "provider_by_host", "tool_names", "call_ids", "marks", "reads",
                 "compaction", "batch_api", "knows_structured_output", "relays", "answers_required", "unique_call_ids", "results_next",
                 "_tool_regex", "_id_regex")

    def __init__(self, name: str, module: str, *, operation: str, provider_by_host: bool,
                 tool_names: Tuple[str, str], call_ids: Tuple[Optional[str], Optional[int]],
                 marks: Sequence[Tuple[str, Sequence[str]]], reads: Any, compaction: Optional[str],
                 batch_api: Optional[str], knows_structured_output: bool, relays: bool, answers_required: bool,
                 unique_call_ids: bool, results_next: bool) -> None:
        self.name = name
        self.module = module
        self.operation = operation
        self.provider_by_host = provider_by_host
        self.tool_names = tool_names
        self.call_ids = call_ids
        self.marks = tuple((family, tuple(keys)) for family, keys in marks)
        self.reads = reads if reads == ALL_FAMILIES else tuple(reads)
        self.compaction = compaction
        self.batch_api = batch_api
        self.knows_structured_output = knows_structured_output
        self.relays = relays
        self.answers_required = answers_required
        self.unique_call_ids = unique_call_ids
        self.results_next = results_next
        self._tool_regex = None  # type: Any
        self._id_regex = None  # type: Any

    def tool_name_ok(self, name: str) -> bool:
        """True when ``name`` is a tool name this dialect's wire takes."""
        if self._tool_regex is None:
            import re

            self._tool_regex = re.compile(self.tool_names[0])
        return self._tool_regex.fullmatch(name) is not None

    def call_id_ok(self, tool_call_id: str) -> bool:
        """True when ``tool_call_id`` goes out as it is (else ``agenthub.foreign`` rewrites it)."""
        pattern, longest = self.call_ids
        if longest is not None and len(tool_call_id) > longest:
            return False
        if pattern is None:
            return True
        if self._id_regex is None:
            import re

            self._id_regex = re.compile(pattern)
        return self._id_regex.fullmatch(tool_call_id) is not None

    def __repr__(self) -> str:
        return "Dialect({!r})".format(self.name)


#: tool-name rules per wire (looked up 2026-12): Anthropic ``^[a-zA-Z0-9_-]{1,128}$``; Bedrock Converse
#: toolSpec names ``[a-zA-Z0-9_-]{1,64}``; Gemini FunctionDeclaration: starts with a letter or an underscore,
#: then letters, digits, underscores, dots, colons or dashes, at most 64; OpenAI (and the Chat Completions
#: servers that follow it) ``^[a-zA-Z0-9_-]{1,64}$``
_ANTHROPIC_NAMES = (r"[a-zA-Z0-9_-]{1,128}", "letters, digits, '_' or '-', at most 128")
_BEDROCK_NAMES = (r"[a-zA-Z0-9_-]{1,64}", "letters, digits, '_' or '-', at most 64")
_GEMINI_NAMES = (r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}",
                 "a letter or '_' first, then letters, digits, '_', '.', ':' or '-', at most 64")
_OPENAI_NAMES = (r"[a-zA-Z0-9_-]{1,64}", "letters, digits, '_' or '-', at most 64")

#: dialect name -> its record (a static index: no dialect module is imported to read it).  The wire facts behind
#: the tool-call rules: a call's results only in the user turn right after it (Anthropic: "tool_result blocks must
#: come first" in that message; Gemini: the function response turn right after the function call turn, as the
#: Interactions API's steps are sent; Chat Completions: the tool messages right after the assistant message with
#: 'tool_calls'), while Bedrock joins consecutive user messages and Responses' input items keep their order.  Each
#: id once a request: Claude's "`tool_use` ids must be unique" (a 400 on Anthropic's API and Bedrock's alike), the
#: Responses API's "Duplicate function_call_output for call_id ...", and the Interactions API, whose
#: function_result names its call by ``call_id`` alone.  Every call answered before the next assistant message:
#: Anthropic, Bedrock, Responses, and Gemini (generateContent and Interactions, whose ``requires_action`` wants a
#: function_result per call); Chat Completions hosts differ (OpenAI, Azure, DeepSeek, DashScope, Moonshot refuse:
#: their endpoint quirk ``answers_required``; a local server may take it and is not checked).
DIALECTS = {record.name: record for record in [
    Dialect("openai-chat", "openai_chat", operation="chat", provider_by_host=True, tool_names=_OPENAI_NAMES,
            # Chat Completions takes ids of at most 40 characters; a server's own longer id is marked issued_id
            call_ids=(None, 40),
            marks=[("openai-chat", ("reasoning_field", "reasoning_details", "thinking_blocks", "issued_id"))],
            reads=("openai-chat",), compaction=None, batch_api="chat", knows_structured_output=False, relays=False,
            answers_required=False, unique_call_ids=False, results_next=True),
    # the Responses API refuses a call_id of more than 64 characters ("string too long. Expected a string with
    # maximum length 64", a 400); its own are shorter
    Dialect("openai-responses", "openai_responses", operation="chat", provider_by_host=True,
            tool_names=_OPENAI_NAMES, call_ids=(None, 64),
            marks=[("openai-responses", ("channel", "encrypted_content"))],
            reads=("openai-responses",), compaction="openai", batch_api="responses", knows_structured_output=False,
            relays=False, answers_required=True, unique_call_ids=True, results_next=False),
    Dialect("anthropic", "anthropic", operation="chat", provider_by_host=False, tool_names=_ANTHROPIC_NAMES,
            call_ids=(r"[A-Za-z0-9_-]+", None),
            # a Claude thinking signature: Anthropic's API and Bedrock's Claude both read it
            marks=[("anthropic", ("redacted_data", "server_block")), ("claude", ("signature",))],
            reads=("anthropic", "claude"), compaction="anthropic", batch_api="messages",
            # Claude before 4.1 has no structured outputs: build_request refuses json_schema for it
            knows_structured_output=True, relays=False, answers_required=True, unique_call_ids=True,
            results_next=True),
    Dialect("gemini", "gemini", operation="generate_content", provider_by_host=False, tool_names=_GEMINI_NAMES,
            call_ids=ANY_ID, marks=[("gemini", ("thought_signature",))], reads=("gemini",), compaction=None,
            batch_api="generate", knows_structured_output=False, relays=False, answers_required=True,
            unique_call_ids=False, results_next=True),
    Dialect("gemini-interactions", "gemini_interactions", operation="generate_content", provider_by_host=False,
            tool_names=_GEMINI_NAMES, call_ids=ANY_ID,
            # the empty thinking item naming an answer's interaction
            marks=[("gemini-interactions", ("interaction_id",))], reads=("gemini", "gemini-interactions"),
            compaction=None, batch_api=None, knows_structured_output=False, relays=False, answers_required=True,
            unique_call_ids=True, results_next=True),
    Dialect("bedrock", "bedrock", operation="chat", provider_by_host=False, tool_names=_BEDROCK_NAMES,
            call_ids=(r"[A-Za-z0-9_-]+", 64), marks=[("bedrock", ("redacted_content", "bedrock_block"))],
            reads=("bedrock", "claude"), compaction=None, batch_api=None, knows_structured_output=False,
            relays=False, answers_required=True, unique_call_ids=True, results_next=False),
    # agenthub serve: its upstream's rules apply there; agenthub's own wire takes any name and id
    Dialect("agenthub", "agenthub_server", operation="chat", provider_by_host=False, tool_names=_OPENAI_NAMES,
            call_ids=ANY_ID, marks=[], reads=ALL_FAMILIES, compaction=None, batch_api=None,
            knows_structured_output=False, relays=True, answers_required=False, unique_call_ids=False,
            results_next=False),
]}

#: dialect name -> its module under agenthub.providers (imported on first use): ``DIALECTS``' modules
PROTOCOLS = {name: record.module for name, record in DIALECTS.items()}

_loaded = {}  # type: Dict[str, Any]


def dialect(name: str) -> Dialect:
    """The index record of dialect ``name`` (a KeyError for an unknown one); imports nothing."""
    return DIALECTS[name]


def protocol(name: str) -> Any:
    """The Protocol record of dialect ``name`` (its module is imported on first use)."""
    record = _loaded.get(name)
    if record is None:
        record = _loaded[name] = importlib.import_module("agenthub.providers." + PROTOCOLS[name]).PROTOCOL
    return record


def embeddings_protocol(name: str) -> Any:
    """The Protocol record serving embedding models for dialect ``name`` (None: it has none)."""
    module = protocol(name).embeddings
    if module is None:
        return None
    return importlib.import_module("agenthub.providers." + module).PROTOCOL


def all_protocols() -> List[Any]:
    """Every dialect's record, in table order (imports every module)."""
    return [protocol(name) for name in PROTOCOLS]
