"""Anthropic Messages (``POST /v1/messages``, streamed).  ``build_request`` and ``parse_stream`` are pure.

Request
-------
- ``anthropic-version``: ``api_version(endpoint)``, 2026-10-21 on the routes that take it (the first-party
  API, Foundry, Vertex AI, whose body carries it as ``anthropic_version``, 2023-06-01 there being
  ``vertex-2023-10-16``), 2023-06-01 at gateways and when pinned (quirk ``anthropic_version``, from
  ``AutoLLMClient(..., anthropic_version=...)``).  Under 2026-10-21 ``temperature``, ``top_p`` and ``top_k``
  (``extra_body`` included) and a document in an assistant turn raise UnsupportedParameterError naming the
  pin.  The body always streams.
- ``max_tokens`` is required upstream: unset, it is the model row's ``max_tokens`` (``THINKING_RULES``:
  32000 for current Claude models, their own limit for Claude 3.x, 8192 for other models behind an
  Anthropic-compatible gateway).  An endpoint quirk ``thinking_rule`` (a dict) overrides row fields.
- Thinking is data: ``THINKING_RULES`` maps a model-name pattern to what the model accepts (adaptive
  thinking with ``output_config.effort``, a ``budget_tokens`` budget, or nothing).  A thinking level is
  clamped to the nearest value the model accepts and never raises.  NONE sends the model's "off" form
  (``disabled``, ``between_tools`` on Claude Sonnet 5.5, or no thinking parameter on models that think
  only when asked and refuse ``disabled``, Opus 4.7/4.8); on models that cannot stop thinking it rides
  the lowest effort.  ``thinking_summary`` becomes ``display: summarized / omitted`` on adaptive models; False on
  budget thinking is ``display: "omitted"`` (its thinking is shown summarized by default).
  A thinking budget with tools on the first-party API adds the interleaved-thinking beta header (Claude 4
  models think between tool calls only with it; adaptive thinking does so unasked).
- ``temperature`` (under 2023-06-01): models that removed sampling parameters (Claude 4.7 and later) accept only 1 (then
  omitted) and raise UnsupportedParameterError otherwise; models that still take it reject anything but
  1 while thinking is on, so that combination raises too (never a silent override).
- ``tool_choice``: auto -> auto, required -> any, none -> none, one name -> tool, more -> error.  Forcing
  a tool is incompatible with thinking upstream: a forced choice turns thinking off when the caller did
  not ask for a level and the model can stop thinking; otherwise it raises UnsupportedParameterError.
- ``cache_breakpoint`` on an item or a message (its last item) -> ``cache_control`` on that block (ENHANCE:
  ``"ttl": "1h"``); at most ``MAX_BREAKPOINTS`` (4) a request, the automatic one counted; a mark on thinking or
  on an item that sends no block raises.
- ``prompt_caching``: ENABLE (the default) -> top-level ``cache_control: {"type": "ephemeral"}``
  (automatic caching), ENHANCE -> the same with ``"ttl": "1h"``, DISABLE -> nothing.  An endpoint whose
  quirks set ``automatic_caching: False`` (a gateway that rejects the field) gets nothing for ENABLE and
  an UnsupportedParameterError for ENHANCE.
- ``response_format`` json_schema -> ``output_config.format: {"type": "json_schema", "schema"}`` (beside
  ``output_config.effort``; generally available, no beta header), the schema cut to the subset structured
  outputs take (``structured_schema``: a bound it cannot say moves into the description; a recursive schema,
  an open map, ``Any`` and a request past ``STRUCTURED_LIMITS`` raise; a strict tool's ``input_schema`` is cut
  the same way, ``strict_tool_schema``, what it cannot say raising of ``tools`` naming the tool, the runner
  checking its calls against the whole schema); json_object raises (no schema-less
  JSON mode), as do models without structured outputs (rule ``structured``).  ``top_p`` (refused where
  sampling was removed, below 0.95 while thinking, beside temperature on Claude 4.5 / 4.6);
  ``stop`` -> ``stop_sequences``; ``seed`` raises; ``fast_mode`` -> ``speed: "fast"`` + the
  ``fast-mode-2026-02-01`` beta on ``FAST_MODE_MODELS`` on the first-party API (quirk ``fast_mode``
  decides elsewhere).  ThinkingLevel.MAX -> effort ``max`` (clamped), budget 32768.
- ``mcp_servers`` (the MCP connector, beta ``mcp-client-2025-11-20``): ``mcp_servers: [{"type": "url", "url",
  "name", "authorization_token"?}]`` (from an ``Authorization: Bearer <token>`` header; any other header, and
  ``require_approval``, raise UnsupportedParameterError) and one ``{"type": "mcp_toolset", "mcp_server_name"}``
  tool per server after the function tools (``allowed_tools`` -> ``default_config: {"enabled": false}`` and
  ``configs: {name: {"enabled": true}}``).  Not on hosts that put the version in the body (Vertex AI, Bedrock).
- The key and the URL are the host's (``agenthub.hosts``: ``Authorization: Bearer`` at api.anthropic.com
  under 2026-10-21, else ``x-api-key``, or ``Authorization: Bearer`` at gateways whose row says ``auth: "bearer"``).  Quirks ``version_in_body`` (the version as the
  body's first field, ``anthropic_version``, and no ``anthropic-version`` header) and ``model_in_body:
  False`` (the host puts the model in the URL) are Claude on Vertex AI's (and Bedrock InvokeModel's).
  The first-party API is the quirk ``first_party``, which the anthropic host sets on its own servers
  (``hosts.Host.own_quirks``): the dialect reads no URL.  It turns on the interleaved-thinking and fast-mode
  betas and refuses unsigned thinking in the history (quirks ``interleaved_thinking``, ``fast_mode`` and
  ``replay_unsigned_thinking`` decide elsewhere).

Stream and fidelity
-------------------
Text and thinking stream live.  Everything the next request needs rides in ``fidelity``:

- ``{"signature": s}``: on the thinking item of a signed block (arrives with the block's last delta, so
  ``collect`` seals the block's text with it);
- ``{"redacted_data": d}``: a ``redacted_thinking`` block, replayed byte-exact;
- ``{"server_block": {...}}``: a server tool block (``server_tool_use`` with its input, any
  ``*_tool_result``, the MCP connector's ``mcp_tool_use`` / ``mcp_tool_result``, or a block type this
  module does not know), replayed as it came, its id included;
- ``{"citations": [...]}``: the citations of a text block (that block's text is sent as one item);
- ``{"caller": {...}}``: on a tool_call made from code execution (programmatic tool calling).

Redacted and server blocks are carried by an empty text or thinking item of their own; its kind is
chosen so that ``collect`` never folds it into the text before it, and text of the same kind streamed
right after it joins it: on replay the carried block comes first, then the item's text.  Server blocks
are never tool calls and never change ``finish_reason``.  A compaction block's ``compaction_delta``
pieces are folded into the block it replays.  A cited text block stays a block of its own: plain text
right after it carries ``{"citations": []}`` (and the plain text right before it is sealed with an empty
item carrying the same), so no citation ever spreads over text it did not cite.

Stream quirks handled: complete blocks (and a stop_reason) inside ``message_start.message.content``
(code execution); usage that moves between ``message_start`` and ``message_delta`` (zeros at the start
on gateways, Kimi's cache hit reported as ``input_tokens: 0`` at the end: see ``_merge_usage``); error
payloads without the ``{"type": "error"}`` envelope; ``data: [DONE]`` and empty data lines from
gateways; an error event's ``request_id``.
"""

import base64
import logging
import re
from urllib.parse import quote
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from ..errors import ToolCallArgumentParseError, upstream_error
from ..sse import SSEEvent
from ..stream import Fold, StreamEnd
from ..toolcalls import ToolCallAssembler
from ..typeschema import DATA_KEYWORDS
from ..types import HttpRequest, PromptCaching, ThinkingLevel
from ..validate import cache_marks
from ._common import check_still, NOTES, Encoded, Prior, Resumed, keep, marks_resumed, noting, start
from ._common import (COMPACTION_FORMAT, Count, left_out, media_type, pdf_url, something_to_send, visible_text, DONE, payloads, parse_data_list, Endpoint, Protocol, check_response_format, documents, dumps, get_request,
                      nearest, parse_data_uri, request_headers, stop_sequences, to_int, unsupported,
                      usage, with_cache_write)

__all__ = [
    "build_request",
    "parse_stream",
    "parse_document",
    "map_usage",
    "thinking_rule",
    "thinking_fields",
    "claude_request_rules",
    "ONE_SAMPLER",
    "FINISH_REASONS",
    "THINKING_RULES",
    "ANTHROPIC_VERSION",
    "LEGACY_ANTHROPIC_VERSION",
    "ANTHROPIC_VERSIONS",
    "api_version",
    "INTERLEAVED_THINKING_BETA",
    "FAST_MODE_BETA",
    "FAST_MODE_MODELS",
    "DEFAULT_MAX_TOKENS",
    "STRUCTURED_FORMATS",
    "STRUCTURED_LIMITS",
    "structured_schema",
    "structured_limits",
    "strict_tool_schema",
]

logger = noting(logging.getLogger("agenthub"))

#: the Anthropic API version sent where the route takes it: the first-party API, Claude on Microsoft Foundry
#: and on Vertex AI (the official SDKs send it since their majors of 2026-10-21)
ANTHROPIC_VERSION = "2026-10-21"
#: the version before it: sent to Anthropic-compatible gateways (whose rows may set the quirk
#: ``anthropic_version``) and when the caller pins it (``AutoLLMClient(..., anthropic_version=...)``)
LEGACY_ANTHROPIC_VERSION = "2023-06-01"
#: the versions agenthub knows the rules of (newest first)
ANTHROPIC_VERSIONS = (ANTHROPIC_VERSION, LEGACY_ANTHROPIC_VERSION)
#: the request fields 2026-10-21 removed (a 400 even at their default values)
REMOVED_SAMPLING = ("temperature", "top_p", "top_k")
#: lets Claude 4 models with a thinking budget think between tool calls (adaptive thinking does it unasked)
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
#: max_tokens sent when the caller sets none (rows may lower it to the model's own output limit)
DEFAULT_MAX_TOKENS = 32000
#: stop_reason -> finish_reason; pause_turn, refusal, model_context_window_exceeded, ... are "unknown"
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_call"}

# -- the per-model rules --------------------------------------------------------------------------------

_EFFORT_ORDER = ("low", "medium", "high", "xhigh", "max")
_NO_XHIGH = ("low", "medium", "high", "max")
_DISABLED = {"type": "disabled"}
#: ``off`` for models that think only when asked and refuse ``disabled``: NONE sends no thinking parameter
_OMIT = {}  # type: Dict[str, Any]
#: budget_tokens per level for models that take a fixed thinking budget (1024 is the API's minimum)
BUDGETS = {"low": 1024, "medium": 4096, "high": 16384, "xhigh": 24576, "max": 32768}
#: tokens of max_tokens a thinking budget leaves for the answer (when max_tokens is small)
ANSWER_ROOM = 4096
#: fast mode (``speed: "fast"`` + the beta header) on the first-party API: Opus 5, Opus 5.5, Fable 5.2 and later
#: (Opus 4.6 / 4.7 / 4.8 had it in research preview; it was removed from them by 2026-11-30)
FAST_MODE_BETA = "fast-mode-2026-02-01"
#: server-side compaction: the beta header and its context_management edit
#: (https://platform.claude.com/docs/en/build-with-claude/compaction; anthropic SDK BetaCompact20260112EditParam)
COMPACTION_BETA = "compact-2026-01-12"
COMPACTION_EDIT = "compact_20260112"
#: the smallest input-token trigger the API takes (the documented minimum; its default is 150000)
COMPACTION_MIN_TRIGGER = 50000
#: the MCP connector (config["mcp_servers"]): ``mcp_servers`` entries + an ``mcp_toolset`` tool per server
#: (anthropic SDK BetaRequestMCPServerURLDefinitionParam, BetaMCPToolsetParam)
MCP_CLIENT_BETA = "mcp-client-2025-11-20"
FAST_MODE_MODELS = re.compile(r"claude-(?:opus-5(?:-5)?|fable-5-[2-9]|fable-(?:[6-9]|\d\d))(?![0-9])")
#: models that take temperature or top_p, never both (Claude 4.5 / 4.6)
ONE_SAMPLER = re.compile(r"claude-(?:opus|sonnet|haiku)-4-[56](?![0-9])")
#: cache breakpoints (cache_control) a request takes, the automatic top-level one included
MAX_BREAKPOINTS = 4
#: the smallest top_p accepted while thinking runs
MIN_TOP_P_THINKING = 0.95

#: A row: ``mode`` "adaptive" (thinking {"type": "adaptive"} + output_config.effort), "budget"
#: (thinking {"type": "enabled", "budget_tokens": n}) or None (no thinking parameter at all);
#: ``efforts`` the effort values accepted; ``off`` the thinking object for NONE (None: the model cannot
#: stop thinking; ``_OMIT``: no thinking parameter at all); ``default_on`` thinking runs when the request
#: says nothing; ``forced_tools`` a tool_choice that forces a tool is accepted (when thinking is off);
#: ``temperature`` a non-default temperature is accepted; ``display`` thinking.display is accepted;
#: ``interleaved`` budget thinking between tool calls needs the interleaved-thinking beta (first-party
#: API only); ``max_tokens`` the default.
_ADAPTIVE_NEW = {"mode": "adaptive", "efforts": _EFFORT_ORDER, "off": _DISABLED, "default_on": True,
                 "forced_tools": True, "temperature": False, "display": True, "max_tokens": DEFAULT_MAX_TOKENS,
                 "structured": True}
_ALWAYS_ON = dict(_ADAPTIVE_NEW, off=None, forced_tools=False)
_BUDGET = {"mode": "budget", "efforts": (), "off": _DISABLED, "default_on": False, "forced_tools": True,
           "temperature": True, "display": False, "max_tokens": DEFAULT_MAX_TOKENS, "interleaved": True,
           "structured": True}
_NO_THINKING = {"mode": None, "efforts": (), "off": None, "default_on": False, "forced_tools": True,
                "temperature": True, "display": False, "max_tokens": 4096, "structured": False}

#: (pattern searched in the lower-cased model name with "." read as "-", row); the first match wins.
THINKING_RULES = (
    # Sonnet 5.5: "disabled" is refused, between_tools is its lowest setting; no forced tool use
    (r"claude-sonnet-5-5", dict(_ADAPTIVE_NEW, off={"type": "between_tools"}, forced_tools=False)),
    # Opus 5.5, Fable 5.x, Mythos 5.x: adaptive thinking always on, no forced tool use
    (r"claude-(?:opus-5-5|fable|mythos-5)", _ALWAYS_ON),
    (r"claude-mythos", dict(_ALWAYS_ON, efforts=_NO_XHIGH)),  # Mythos Preview: no xhigh
    # Haiku 5.5, Opus 5, Sonnet 5: adaptive on by default, can be disabled, sampling parameters removed
    (r"claude-(?:haiku|opus|sonnet)-5(?![0-9])", _ADAPTIVE_NEW),
    # Opus 4.7 / 4.8: adaptive only ("enabled" and "disabled" are both refused), off by default,
    # sampling parameters removed
    (r"claude-opus-4-[78](?![0-9])", dict(_ADAPTIVE_NEW, default_on=False, off=_OMIT)),
    # Opus / Sonnet 4.6: adaptive + effort (no xhigh; budget_tokens deprecated), temperature still accepted
    (r"claude-(?:opus|sonnet)-4-6(?![0-9])", dict(_ADAPTIVE_NEW, efforts=_NO_XHIGH, default_on=False,
                                                  temperature=True)),
    # Claude Opus 4 / Sonnet 4 (4.0): as below, without structured outputs (output_config.format)
    (r"claude-(?:opus|sonnet)-4(?:-0)?(?:-\d{8})?$", dict(_BUDGET, structured=False)),
    # Claude 4.1 / 4.5: a fixed thinking budget is the only mode; interleaved thinking is a beta
    (r"claude-(?:opus|sonnet|haiku)-4(?![0-9])", _BUDGET),
    # Sonnet 3.7: a fixed budget, no interleaved thinking, no structured outputs
    (r"claude-(?:3-7-sonnet|sonnet-3-7)(?![0-9])", dict(_BUDGET, interleaved=False, structured=False)),
    # Claude 3 / 3.5 and older: no thinking at all
    (r"claude-3-5", dict(_NO_THINKING, max_tokens=8192)),
    (r"claude-(?:3|2|instant)", _NO_THINKING),
    # a Claude model newer than this table: assume the current generation's rules
    (r"claude-", dict(_ADAPTIVE_NEW, off=None, forced_tools=True, efforts=("low", "medium", "high", "xhigh"))),
    # anything else behind an Anthropic-compatible endpoint (gateways): the classic budget form, and a
    # max_tokens most of their models accept
    (r"", dict(_BUDGET, max_tokens=8192, interleaved=False)),
)
_COMPILED_RULES = [(re.compile(pattern), row) for pattern, row in THINKING_RULES]


def _name(model: str) -> str:
    return model.lower().replace(".", "-")


def thinking_rule(model: str) -> Dict[str, Any]:
    """The ``THINKING_RULES`` row for ``model``."""
    name = _name(model)
    for regex, row in _COMPILED_RULES:
        if regex.search(name):
            return row
    return _BUDGET  # pragma: no cover - the last row matches everything


def _clamp_effort(wanted: str, accepted: Tuple[str, ...]) -> str:
    """The accepted effort nearest to ``wanted`` (ties go to the cheaper one)."""
    return nearest(wanted, accepted, _EFFORT_ORDER, cheaper_on_tie=True)


# -- request ---------------------------------------------------------------------------------------------

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: what every refusal of the new version's rules says about the old one
PIN_HINT = "or pin the previous version with AutoLLMClient(..., anthropic_version={!r})".format(LEGACY_ANTHROPIC_VERSION)


def api_version(endpoint: Endpoint) -> str:
    """The Anthropic API version a request to ``endpoint`` is built for: the caller's pin (the quirk
    ``anthropic_version``, set by ``AutoLLMClient(..., anthropic_version=...)`` or a registry row, else an
    ``anthropic-version`` the caller put in ``default_headers``), else ``ANTHROPIC_VERSION`` on the routes
    that take it (the first-party API, Microsoft Foundry, Vertex AI) and ``LEGACY_ANTHROPIC_VERSION`` at
    Anthropic-compatible gateways."""
    pinned = endpoint.quirks.get("anthropic_version")
    if pinned:
        return str(pinned)
    for key, value in endpoint.headers.items():
        if key.lower() == "anthropic-version" and value:
            return value
    quirks = endpoint.quirks
    if quirks.get("first_party") or quirks.get("foundry") or quirks.get("version_in_body"):
        return ANTHROPIC_VERSION
    return LEGACY_ANTHROPIC_VERSION


def removed_sampling(version: Optional[str]) -> bool:
    """True when ``version`` is 2026-10-21 or later: temperature, top_p and top_k are refused."""
    return version is not None and bool(_DATE.fullmatch(version)) and version >= ANTHROPIC_VERSION


def _check_removed(client: str, version: str, config: Mapping[str, Any]) -> None:
    """The fields 2026-10-21 removed, asked for in ``config`` or its ``extra_body``: an error before sending
    that says how to pin the old version (never a silent drop)."""
    extra = config.get("extra_body") or {}
    for key in REMOVED_SAMPLING:
        for where, holder in ((key, config), ("extra_body[{!r}]".format(key), extra)):
            if key in holder:
                raise unsupported(client, where, "cannot be sent under Anthropic API version {}, which removed "
                                                  "temperature, top_p and top_k (a 400 even at their default "
                                                  "values): leave it out, {}".format(version, PIN_HINT))


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]], config: Mapping[str, Any],
                  prior: Optional[Prior] = None) -> HttpRequest:
    """``prior``: what the client's previous call kept (``providers._common.Prior``): the messages it converted
    are taken as they were, where they are the head of these, unchanged."""
    client = endpoint.client_type
    quirks = endpoint.quirks
    rule = thinking_rule(model)
    if quirks.get("thinking_rule"):  # a registry row may correct its models' row (keys as in THINKING_RULES)
        rule = dict(rule, **quirks["thinking_rule"])
    for key in ("image_config", "tts_config", "embedding_config"):
        if key in config:
            raise unsupported(client, key, "is not available over the Anthropic Messages API (model {!r})".format(model))
    max_tokens = config.get("max_tokens") or rule["max_tokens"]
    version = api_version(endpoint)
    for key, value in (config.get("extra_headers") or {}).items():
        if key.lower() == "anthropic-version" and value:
            version = value  # this request's own pin (extra_headers win over the plan's headers)
    new_rules = removed_sampling(version)
    if new_rules:
        _check_removed(client, version, config)
    body = {}  # type: Dict[str, Any]
    version_in_body = quirks.get("version_in_body")  # Claude on Vertex AI: the old version under its own name
    if version_in_body:
        body["anthropic_version"] = version_in_body if version == LEGACY_ANTHROPIC_VERSION else version
    if quirks.get("model_in_body", True):  # False: the host puts the model in the URL
        body["model"] = model
    body["max_tokens"] = max_tokens
    if config.get("system_prompt"):
        body["system"] = config["system_prompt"]
    caching = config.get("prompt_caching", PromptCaching.ENABLE)
    automatic = quirks.get("automatic_caching", True) and caching != PromptCaching.DISABLE
    marks = marks_resumed(prior, messages)
    if marks and marks + (1 if automatic else 0) > MAX_BREAKPOINTS:
        raise unsupported(client, "cache_breakpoint", "is set on {} items; the Anthropic API takes at most {} cache "
                                                      "breakpoints a request{}".format(
                                                          marks, MAX_BREAKPOINTS, " and the automatic one of "
                                                          "prompt_caching {} takes one: remove some, or set "
                                                          "prompt_caching DISABLE to place {} of your own".format(
                                                              caching.name, MAX_BREAKPOINTS) if automatic
                                                          else ": remove some"))
    mark = {"type": "ephemeral"}  # type: Dict[str, Any]
    if caching == PromptCaching.ENHANCE:
        mark["ttl"] = "1h"
    wire = _wire_messages(endpoint, messages, version if new_rules else None, mark, prior)
    body["messages"] = something_to_send(client, wire.items)
    if config.get("tools"):
        if any(tool.get("strict") for tool in config["tools"]) and not rule.get("structured", True):
            raise unsupported(client, "tools", "strict tools need structured outputs, which {!r} does not "
                                               "have".format(model))
        body["tools"] = [_tool(client, tool) for tool in config["tools"]]
    servers = config.get("mcp_servers")
    if servers:
        if version_in_body:
            raise unsupported(client, "mcp_servers", "cannot be sent here: the MCP connector is the Anthropic API's "
                                                     "(not Claude on Vertex AI or Bedrock)")
        body["mcp_servers"] = [_mcp_server(client, server) for server in servers]
        body["tools"] = body.get("tools", []) + [_mcp_toolset(server) for server in servers]

    choice = config.get("tool_choice")
    if isinstance(choice, list) and len(choice) > 1:
        raise unsupported(client, "tool_choice", "can force one tool over the Anthropic API, not {}".format(len(choice)))
    thinking, effort, thinking_on, sampling = claude_request_rules(client, model, rule, config, max_tokens, model,
                                                                   "'auto' or 'none'")
    if choice is not None:
        if choice == "required":
            body["tool_choice"] = {"type": "any"}
        elif isinstance(choice, list):
            body["tool_choice"] = {"type": "tool", "name": choice[0]}
        else:
            body["tool_choice"] = {"type": choice}
    if not thinking_taken(client, thinking, body["messages"]):
        thinking, thinking_on = None, False
    if thinking is not None:
        body["thinking"] = thinking
    if effort is not None:
        body["output_config"] = {"effort": effort}

    body.update(sampling)
    stop = stop_sequences(client, config, None)
    if stop is not None:
        body["stop_sequences"] = stop
    if "seed" in config:
        raise unsupported(client, "seed", "cannot be sent: the Anthropic Messages API has no seed")
    response_format = check_response_format(client, config, quirks.get("response_formats"), ("text", "json_schema"))
    strict = [tool["input_schema"] for tool in body.get("tools") or () if tool.get("strict")]
    if response_format is None and strict:
        structured_limits(client, strict, "tools")
    if response_format is not None:
        if not rule.get("structured", True):
            raise unsupported(client, "response_format", "json_schema needs structured outputs, which {!r} does not "
                                                         "have".format(model))
        schema = structured_schema(client, response_format["schema"])
        structured_limits(client, [schema] + strict)
        body["output_config"] = dict(body.get("output_config") or {}, format={"type": "json_schema", "schema": schema})
    first_party = bool(quirks.get("first_party"))  # the host's own servers (hosts.Host.own_quirks), not a gateway
    fast = bool(config.get("fast_mode"))
    if fast:
        allowed = quirks.get("fast_mode")
        if allowed is None:
            allowed = first_party and FAST_MODE_MODELS.search(_name(model)) is not None
        if not allowed:
            raise unsupported(client, "fast_mode", "is not available for {!r} at this endpoint (fast mode: Claude "
                                                   "Opus 5, Opus 5.5, Fable 5.2 and later, on the Anthropic API)".format(model))
        body["speed"] = "fast"

    if quirks.get("automatic_caching", True):
        if caching == PromptCaching.ENABLE:
            body["cache_control"] = {"type": "ephemeral"}
        elif caching == PromptCaching.ENHANCE:
            body["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    elif caching == PromptCaching.ENHANCE and not marks:
        raise unsupported(client, "prompt_caching", "ENHANCE needs automatic caching, which this endpoint does not take "
                                                    "(mark cache breakpoints on items: they take the 1 h TTL)")
    body["stream"] = True

    headers = request_headers(endpoint, **({} if version_in_body else {"anthropic-version": version}))
    interleaved = quirks.get("interleaved_thinking")
    if interleaved is None:  # a beta of the first-party API; gateways may refuse beta names they do not know
        interleaved = first_party
    if interleaved and thinking_on and rule["mode"] == "budget" and rule.get("interleaved") and body.get("tools"):
        _add_beta(headers, INTERLEAVED_THINKING_BETA)  # thinking between tool calls, not only before the first
    if fast:
        _add_beta(headers, FAST_MODE_BETA)
    if servers:
        _add_beta(headers, MCP_CLIENT_BETA)
    if config.get("compaction"):
        threshold = config["compaction"]["threshold"]
        if threshold < COMPACTION_MIN_TRIGGER:
            raise unsupported(client, "compaction", "threshold must be at least {} input tokens on the Anthropic API "
                                                    "(got {})".format(COMPACTION_MIN_TRIGGER, threshold))
        body["context_management"] = {"edits": [
            {"type": COMPACTION_EDIT, "trigger": {"type": "input_tokens", "value": threshold}}]}
        _add_beta(headers, COMPACTION_BETA)
    return HttpRequest("POST", "/v1/messages", headers, body, output_limit=("max_tokens",),
                       encoded=Encoded("messages", wire) if prior is not None else None)


build_request.takes_prior = True  # type: ignore[attr-defined]


def thinking_taken(client: str, thinking: Optional[Mapping[str, Any]], messages: List[Mapping[str, Any]],
                   kind: Any = None) -> bool:
    """Whether Claude takes ``thinking`` with ``messages`` (the wire's).  Enabled thinking is refused when the last
    message holds tool results (a tool turn in progress) and the assistant turn before them (consecutive assistant
    messages are one turn) starts with no thinking block ("When `thinking` is enabled, a final `assistant` message
    must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks) ... To
    avoid this requirement, disable `thinking`", a 400): another provider began that turn, or thinking was off;
    then False, with a warning (the request goes without thinking).  ``kind(block)``: a block's type (Anthropic's
    ``type``; Bedrock's blocks are keyed by it)."""
    if thinking is None or thinking.get("type") != "enabled" or not messages:
        return True
    kind = kind or (lambda block: block.get("type"))
    if messages[-1]["role"] != "user" or not any(
            kind(block) in ("tool_result", "toolResult") for block in messages[-1]["content"]):
        return True
    first = None  # type: Optional[Mapping[str, Any]]
    for message in reversed(messages[:-1]):
        if message["role"] == "assistant":
            first = message
        elif first is not None:
            break
    if first is None or not first["content"] or kind(first["content"][0]) in (
            "thinking", "redacted_thinking", "reasoningContent"):
        return True
    logger.warning("%s: the tool turn in progress began without a thinking block of Claude's (another provider's, "
                   "or thinking was off): this request goes without thinking, as the API requires", client)
    return False


def claude_request_rules(client: str, model: str, rule: Mapping[str, Any], config: Mapping[str, Any], max_tokens: int,
                         name: str, instead: str) -> Tuple[Any, Optional[str], bool, Dict[str, Any]]:
    """Claude's request rules, written once for every wire that carries Claude (the Messages API here, Bedrock
    Converse): forcing a tool against thinking, then temperature and top_p against the model's ``rule`` (a
    ``THINKING_RULES`` row) and against thinking.  ``name``: the Claude model name inside ``model`` (the row and
    ``ONE_SAMPLER`` read it); ``instead``: the tool choices to suggest when the model cannot be forced.
    -> (thinking object or None, effort or None, whether thinking runs, {"temperature", "top_p"} to send)."""
    choice = config.get("tool_choice")
    forced = choice == "required" or isinstance(choice, list)
    if forced and not rule["forced_tools"]:
        raise unsupported(client, "tool_choice", "cannot force a tool call on {!r} (use {})".format(model, instead))
    level = config.get("thinking_level")
    if forced and level is None and rule["default_on"] and rule["off"] is not None:
        level = ThinkingLevel.NONE  # forcing a tool needs thinking off: the caller asked for no level
    thinking, effort, thinking_on = thinking_fields(rule, level, config.get("thinking_summary"), max_tokens)
    if forced and thinking_on:
        raise unsupported(client, "tool_choice", "cannot force a tool call while thinking is on for {!r} "
                                                 "(use tool_choice 'auto', or thinking_level NONE)".format(model))
    sampling = {}  # type: Dict[str, Any]
    if "temperature" in config:
        temperature = config["temperature"]
        if temperature != 1:
            if not rule["temperature"]:
                raise unsupported(client, "temperature", "is not accepted by {!r} (sampling parameters were "
                                                         "removed; only 1 is allowed)".format(model))
            if thinking_on:
                raise unsupported(client, "temperature", "must be 1 (or unset) while thinking is on for {!r}".format(model))
        if rule["temperature"]:
            sampling["temperature"] = temperature  # (where sampling was removed, 1, the only value, is not sent)
    if "top_p" in config:
        top_p = config["top_p"]
        if not rule["temperature"]:
            raise unsupported(client, "top_p", "is not accepted by {!r} (sampling parameters were removed)".format(model))
        if thinking_on and top_p < MIN_TOP_P_THINKING:
            raise unsupported(client, "top_p", "must be at least {} while thinking is on for {!r}".format(
                MIN_TOP_P_THINKING, model))
        if "temperature" in sampling and ONE_SAMPLER.search(_name(name)):
            raise unsupported(client, "top_p", "cannot be sent with temperature to {!r} (one or the other)".format(model))
        sampling["top_p"] = top_p
    return thinking, effort, thinking_on, sampling


def _add_beta(headers: Dict[str, str], beta: str) -> None:
    """Add ``beta`` to the anthropic-beta header, keeping the names a caller already sent."""
    for key, value in headers.items():
        if key.lower() == "anthropic-beta":
            names = [name.strip() for name in value.split(",") if name.strip()]
            if beta not in names:
                headers[key] = ",".join(names + [beta])
            return
    headers["anthropic-beta"] = beta


def thinking_fields(rule: Mapping[str, Any], level: Any, summary: Optional[bool], max_tokens: int):
    """-> (thinking object or None, effort or None, whether thinking runs)."""
    mode = rule["mode"]
    display = None
    if summary is not None and rule["display"]:
        display = "summarized" if summary else "omitted"
    elif summary is False and mode == "budget":
        display = "omitted"  # (budget thinking is shown summarized by default: only hiding it takes the field)
    if mode is None:
        return None, None, False
    if level is None:
        if rule["default_on"] and mode == "adaptive":
            return ({"type": "adaptive", "display": display} if display else None), None, True
        if summary and display and mode == "adaptive":
            # a summary asked for alone on a model that thinks only when asked (Claude 4.6 - 4.8):
            # adaptive thinking with a summarized display, never a silently dropped request
            return {"type": "adaptive", "display": display}, None, True
        return None, None, False
    value = level.value if isinstance(level, ThinkingLevel) else str(level)
    if value == "none":
        if rule["off"] is not None:
            return (dict(rule["off"]) if rule["off"] else None), None, False
        value = "low"  # the model cannot stop thinking: the lightest effort
    if mode == "adaptive":
        thinking = {"type": "adaptive"}  # type: Dict[str, Any]
        if display:
            thinking["display"] = display
        return thinking, _clamp_effort(value, rule["efforts"]), True
    budget = max(1024, min(BUDGETS[value], max_tokens - ANSWER_ROOM))
    if budget >= max_tokens:  # no room for a budget: the nearest the model accepts is no thinking
        return (dict(rule["off"]) if rule["off"] else None), None, False
    thinking = {"type": "enabled", "budget_tokens": budget}
    if display:
        thinking["display"] = display
    return thinking, None, True


def _tool(client: str, tool: Mapping[str, Any]) -> Dict[str, Any]:
    out = {"name": tool["name"]}  # type: Dict[str, Any]
    if tool.get("description"):
        out["description"] = tool["description"]
    out["input_schema"] = strict_tool_schema(client, tool) if tool.get("strict") else (
        tool.get("parameters") or {"type": "object", "properties": {}})
    if tool.get("strict"):
        out["strict"] = True  # (structured outputs: the input is held to input_schema)
    return out


def strict_tool_schema(client: str, tool: Mapping[str, Any]) -> Dict[str, Any]:
    """A strict tool's ``parameters`` cut to the subset structured outputs take, as ``structured_schema`` cuts
    a response schema (what it cannot say at all raises UnsupportedParameterError of ``tools`` naming the tool).
    The bounds that leave the wire are the runner's to check: it holds a strict tool's arguments to the whole
    schema before anything runs (agenthub.agent.runner)."""
    return structured_schema(client, tool.get("parameters") or {"type": "object", "properties": {},
                                                                "additionalProperties": False}, tool["name"])


# -- JSON Schema -> the subset Anthropic's structured outputs take (output_config.format).  The documented
# -- limits (https://platform.claude.com/docs/en/build-with-claude/structured-outputs, "JSON Schema
# -- limitations"): basic types, enum and const of primitive values, anyOf, allOf (not beside a $ref), local
# -- $ref / $defs / definitions, default, required, additionalProperties false on every object, ten string
# -- formats, minItems 0 or 1; no recursive schema, no numeric, string-length or other array bounds, no other
# -- additionalProperties: a 400 otherwise.  A bound the subset cannot say moves into the description (the
# -- model still reads it) and the answer is validated against the whole schema client-side; what cannot be
# -- said at all is an UnsupportedParameterError before sending (typed output then takes its next way).

#: the string formats structured outputs take
STRUCTURED_FORMATS = frozenset(["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6",
                                "uuid"])
#: keywords the subset takes as they are (the ones that hold schemas are converted in turn)
_STRUCTURED_KEEP = frozenset(["type", "description", "title", "default", "required", "enum", "const", "properties",
                              "additionalProperties", "items", "anyOf", "allOf", "$ref", "$defs", "definitions"])
#: keywords that only name or annotate the schema document: left out, nothing is lost
_STRUCTURED_DROP = frozenset(["$schema", "$id", "$comment", "$anchor"])
_PRIMITIVE = (str, int, float, bool, type(None))
#: what the strict schemas of one request (output_config.format and the strict tools) may hold at most, by the
#: same page's "Schema complexity limits": properties left out of ``required``, properties whose schema is an
#: anyOf or a list of types (typed output's strict form makes each optional field one: ``["string", "null"]``)
STRUCTURED_LIMITS = {"optional": 24, "union": 16}


def structured_schema(client: str, schema: Mapping[str, Any], tool: Optional[str] = None) -> Dict[str, Any]:
    """``schema`` as Anthropic's structured outputs take it (a copy; see the comment above).  A keyword outside
    the subset (``minimum``, ``maxLength``, ``pattern``, ``maxItems``, a format it does not know, ``minItems``
    above 1, ``oneOf`` beside ``anyOf``, ...) is written into the node's ``description`` as JSON and left out;
    ``oneOf`` becomes ``anyOf``.  A recursive schema, an object whose ``additionalProperties`` is not false (an
    open map), an ``enum``/``const`` with an object or array value, a ``$ref`` that is not local and an
    ``allOf`` of more than one schema with a ``$ref`` in it and a schema that names no type (``Any``) raise
    UnsupportedParameterError: of ``response_format``, or of ``tools`` naming the strict tool ``tool`` whose
    ``input_schema`` this is."""
    say = ("response_format", "schema: ", "schema") if tool is None else (
        "tools", "strict tool {!r}: ".format(tool), "input_schema")  # (the parameter, whose, the root's name)
    defs = {}  # type: Dict[str, Any]
    for key in ("$defs", "definitions"):
        found = schema.get(key)
        if isinstance(found, Mapping):
            defs.update(("#/{}/{}".format(key, name), sub) for name, sub in found.items())
    _no_cycle(client, schema, defs, say)
    return _structured(client, schema, say[2], say)


def structured_limits(client: str, schemas: Iterable[Any], parameter: str = "response_format") -> None:
    """Raise UnsupportedParameterError (of ``parameter``) when the strict ``schemas`` of one request are past
    ``STRUCTURED_LIMITS`` (a 400 upstream).  A schema under $defs is counted once, however many $refs name it:
    only a request surely past a limit is refused."""
    optional = union = 0
    for schema in schemas:
        for required, sub in _parameters(schema):
            optional += not required
            union += isinstance(sub, Mapping) and ("anyOf" in sub or isinstance(sub.get("type"), list))
    for name, count in (("optional", optional), ("union", union)):
        if count > STRUCTURED_LIMITS[name]:
            what = "properties left out of required" if name == "optional" else (
                "properties with a union type (anyOf or a type list: each optional field of typed output is one)")
            raise unsupported(client, parameter, "{}{} {} across the request's strict schemas: Anthropic's "
                                                 "structured outputs take at most {}".format(
                                                     "schema: " if parameter == "response_format" else "", count,
                                                     what, STRUCTURED_LIMITS[name]))


def _parameters(node: Any) -> Iterator[Tuple[bool, Any]]:
    """(listed in required, schema) of every property in the schema ``node``, $defs included."""
    if isinstance(node, list):
        for child in node:
            for found in _parameters(child):
                yield found
    elif isinstance(node, Mapping):
        props = node.get("properties")
        required = node.get("required") or ()
        for key, child in node.items():
            if key == "properties" and isinstance(props, Mapping):
                for name, sub in props.items():
                    yield name in required, sub
                    for found in _parameters(sub):
                        yield found
            elif key in ("$defs", "definitions") and isinstance(child, Mapping):
                for found in _parameters(list(child.values())):
                    yield found
            elif key not in DATA_KEYWORDS:
                for found in _parameters(child):
                    yield found


def _structured_error(client: str, where: str, why: str, say: Tuple[str, str, str]) -> Exception:
    return unsupported(client, say[0], "{}{} {}: Anthropic's structured outputs take a subset of JSON "
                                       "Schema".format(say[1], where, why))


def _refs(node: Any) -> Iterator[Any]:
    """Every ``$ref`` value in the schema ``node`` (not in its $defs: those are followed by name; what is under
    enum, const, default and examples is data)."""
    if isinstance(node, list):
        for child in node:
            for ref in _refs(child):
                yield ref
    elif isinstance(node, Mapping):
        if "$ref" in node:
            yield node["$ref"]
        for key, child in node.items():
            if key in ("properties", "patternProperties", "dependentSchemas") and isinstance(child, Mapping):
                for ref in _refs(list(child.values())):
                    yield ref
            elif key not in ("$ref", "$defs", "definitions") and key not in DATA_KEYWORDS:
                for ref in _refs(child):
                    yield ref


def _no_cycle(client: str, root: Mapping[str, Any], defs: Mapping[str, Any], say: Tuple[str, str, str]) -> None:
    """Raise when a ``$ref`` reached from the root comes back to a schema it is inside of."""
    state = {}  # type: Dict[str, int]  # 1: being walked, 2: done

    def walk(name: str, node: Any, depth: int) -> None:
        for ref in _refs(node):
            if ref == "#" or state.get(ref) == 1 or depth > 500:
                raise _structured_error(client, say[2], "refers to {!r} from inside it: a recursive schema cannot "
                                                        "be sent".format(ref if ref != "#" else name), say)
            if ref in defs and ref not in state:
                state[ref] = 1
                walk(ref, defs[ref], depth + 1)
                state[ref] = 2

    walk("#", root, 0)
    for name, node in defs.items():  # (one no $ref reaches is sent all the same)
        if name not in state:
            state[name] = 1
            walk(name, node, 1)
            state[name] = 2


def _structured(client: str, schema: Any, where: str, say: Tuple[str, str, str]) -> Dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise _structured_error(client, where, "is {!r}: a schema must be an object".format(schema), say)
    node = dict(schema)
    all_of = node.get("allOf")
    if isinstance(all_of, list) and any(isinstance(arm, Mapping) and "$ref" in arm for arm in all_of):
        if len(all_of) != 1 or "$ref" in node:
            raise _structured_error(client, where + "['allOf']", "has a $ref beside other schemas", say)
        del node["allOf"]
        node = dict(all_of[0], **node)  # (an allOf of one $ref: that $ref, its siblings kept)
    if "oneOf" in node and "anyOf" not in node:
        node["anyOf"] = node.pop("oneOf")  # (looser: the answer is still checked against oneOf)
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    out = {}  # type: Dict[str, Any]
    moved = {}  # type: Dict[str, Any]
    for key, value in node.items():
        at = "{}[{!r}]".format(where, key)
        if key in _STRUCTURED_DROP:
            continue
        if key == "format":
            if value in STRUCTURED_FORMATS and "string" in kinds:
                out[key] = value
            else:
                moved[key] = value
        elif key == "minItems":
            if value in (0, 1) and not isinstance(value, bool):
                out[key] = value
            else:
                moved[key] = value
        elif key not in _STRUCTURED_KEEP:
            moved[key] = value
        elif key == "$ref":
            if not isinstance(value, str) or not value.startswith(("#/$defs/", "#/definitions/")):
                raise _structured_error(client, at, "is {!r}: only a local $ref under $defs is taken".format(value),
                                        say)
            out[key] = value
        elif key in ("properties", "$defs", "definitions"):
            if not isinstance(value, Mapping):
                raise _structured_error(client, at, "is not an object", say)
            out[key] = {name: _structured(client, sub, "{}[{!r}]".format(at, name), say) for name, sub in value.items()}
        elif key in ("anyOf", "allOf"):
            if not isinstance(value, list):
                raise _structured_error(client, at, "is not a list", say)
            out[key] = [_structured(client, arm, "{}[{}]".format(at, i), say) for i, arm in enumerate(value)]
        elif key == "items":
            out[key] = _structured(client, value, at, say)
        elif key == "additionalProperties":
            if value is not False:
                raise _structured_error(client, at, "is {}: only false is taken (an open map cannot be "
                                                    "sent)".format(dumps(value)), say)
            out[key] = False
        elif key == "enum":
            if not isinstance(value, list) or not all(isinstance(v, _PRIMITIVE) for v in value):
                raise _structured_error(client, at, "has a value that is not a string, number, boolean or null", say)
            out[key] = list(value)
        elif key == "const":
            if not isinstance(value, _PRIMITIVE):
                raise _structured_error(client, at, "is not a string, number, boolean or null", say)
            out[key] = value
        else:
            out[key] = value
    if not any(key in out for key in ("type", "anyOf", "allOf", "$ref", "enum", "const")):
        # (the official SDK's transform_schema refuses such a schema too)
        raise _structured_error(client, where, "names no type (Any, or only keywords the subset lacks)", say)
    if "object" in kinds and out.get("additionalProperties") is not False:
        raise _structured_error(client, where, "is an object without additionalProperties false (an open map "
                                               "cannot be sent)", say)
    if moved:
        said = dumps(moved)
        text = out.get("description")
        out["description"] = "{}\n\n{}".format(text, said) if isinstance(text, str) and text else said
    return out


def _mcp_server(client: str, server: Mapping[str, Any]) -> Dict[str, Any]:
    """A ``config["mcp_servers"]`` entry -> an ``mcp_servers`` entry of the MCP connector.  Its one credential
    is ``authorization_token``: an ``Authorization: Bearer <token>`` header becomes it; other headers cannot
    be sent (their values are never named)."""
    if server.get("require_approval") is not None:
        raise unsupported(client, "mcp_servers", "require_approval is OpenAI Responses' alone: the Anthropic MCP "
                                                 "connector calls the tools without asking (leave it out, or allow "
                                                 "only some tools with allowed_tools)")
    wire = {"type": "url", "url": server["url"], "name": server["name"]}  # type: Dict[str, Any]
    for name, value in (server.get("headers") or {}).items():
        scheme, _, token = value.partition(" ")
        if name.lower() != "authorization" or scheme.lower() != "bearer" or not token.strip():
            raise unsupported(client, "mcp_servers", "header {!r} of MCP server {!r} cannot be sent through the "
                                                     "Anthropic MCP connector: it takes one credential, an "
                                                     "'Authorization: Bearer <token>' header".format(
                                                         name if name.lower() != "authorization" else
                                                         "Authorization (not 'Bearer <token>')", server["name"]))
        wire["authorization_token"] = token.strip()
    return wire


def _mcp_toolset(server: Mapping[str, Any]) -> Dict[str, Any]:
    """The ``mcp_toolset`` tool of a server: all its tools, or only ``allowed_tools`` (an allowlist: the
    others disabled by default)."""
    toolset = {"type": "mcp_toolset", "mcp_server_name": server["name"]}  # type: Dict[str, Any]
    if server.get("allowed_tools") is not None:
        toolset["default_config"] = {"enabled": False}
        toolset["configs"] = {name: {"enabled": True} for name in server["allowed_tools"]}
    return toolset


_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _tool_id(tool_call_id: str) -> str:
    """Tool-use ids must match ^[A-Za-z0-9_-]+$: ids from other servers are made to fit (same on both sides)."""
    return _ID_UNSAFE.sub("_", tool_call_id) if _ID_UNSAFE.search(tool_call_id) else tool_call_id


#: the image media types the API takes (its 400 names these four)
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _media_block(endpoint: Endpoint, mime_type: str, data: bytes) -> Dict[str, Any]:
    image = media_type(mime_type.lower().split(";", 1)[0].strip()) if mime_type.startswith("image/") else None
    if image is not None and image not in _IMAGE_TYPES:
        raise unsupported(endpoint.client_type, "inline_data", "of type {} cannot be sent over the Anthropic Messages "
                                                               "API (its images are JPEG, PNG, GIF or WebP)".format(mime_type))
    encoded = base64.b64encode(data).decode("ascii")
    if image is not None:  # ("image/jpg": the JPEG it means)
        check_still(endpoint.client_type, image, data, "the Anthropic Messages API")
        return {"type": "image", "source": {"type": "base64", "media_type": image, "data": encoded}}
    if mime_type == "application/pdf":
        return {"type": "document", "source": {"type": "base64", "media_type": mime_type, "data": encoded}}
    raise unsupported(endpoint.client_type, "inline_data",
                      "of type {} cannot be sent over the Anthropic Messages API".format(mime_type))


def _url_block(endpoint: Endpoint, url: str) -> Dict[str, Any]:
    parsed = parse_data_uri(url)  # a malformed data URI is a ConfigError now, not a 400 later
    if parsed is not None:
        return _media_block(endpoint, parsed[0], parsed[1])
    return {"type": "document" if pdf_url(url) else "image", "source": {"type": "url", "url": url}}


def _messages(endpoint: Endpoint, messages: List[Mapping[str, Any]], new_version: Optional[str] = None,
              mark: Optional[Mapping[str, Any]] = None) -> List[Dict[str, Any]]:
    """``new_version``: the version when it is 2026-10-21 or later (a document in an assistant turn is refused);
    ``mark``: the ``cache_control`` of an item marked ``cache_breakpoint``."""
    return _wire_messages(endpoint, messages, new_version, mark, None).items


def _wire_messages(endpoint: Endpoint, messages: List[Mapping[str, Any]], new_version: Optional[str],
                   mark: Optional[Mapping[str, Any]], prior: Optional[Prior]) -> Resumed:
    """``_messages``, from the previous call's where ``prior`` allows (a message's mapping reads the message,
    the client type, whether unsigned thinking is replayed, the version and the breakpoint's mark)."""
    unsigned = endpoint.quirks.get("replay_unsigned_thinking")
    if unsigned is None:  # the first-party API rejects thinking without its signature
        unsigned = not endpoint.quirks.get("first_party")
    context = (endpoint.client_type, unsigned, new_version, dict(mark) if mark is not None else None)
    noted = NOTES[0]
    made = start(prior, "anthropic", context, messages, prior.head if prior is not None else 0, None)
    out = made.items
    for index in range(made.count, len(messages)):
        message = messages[index]
        if message["role"] == "assistant":
            if new_version:
                _no_document(endpoint.client_type, new_version, message, index)
            content = _assistant(message, unsigned, index, mark, endpoint.client_type)
        else:
            content = _user(endpoint, message, index, mark)
        if content:  # the API refuses empty turns; consecutive same-role turns are joined upstream
            out.append({"role": message["role"], "content": content})
    keep(prior, "anthropic", context, messages, made, noted)
    return made


def _no_document(client: str, version: str, message: Mapping[str, Any], index: int) -> None:
    """2026-10-21 refuses a document block placed directly in an assistant turn (a 400): a PDF item there
    (which the old version took) or a replayed server block of type document is refused before sending."""
    for item in message["content_items"]:
        kind = item["type"]
        pdf = (kind == "inline_data" and item["mime_type"] == "application/pdf") or (
            kind == "image_url" and _url_kind(item["image_url"]) == "document")
        block = (item.get("fidelity") or {}).get("server_block")
        if pdf or (isinstance(block, dict) and block.get("type") == "document"):
            raise unsupported(client, "messages", "hold a document (PDF) in assistant turn messages[{}], which "
                                                  "Anthropic API version {} refuses: send the document in a user "
                                                  "message, {}".format(index, version, PIN_HINT))


def _url_kind(url: str) -> str:
    parsed = parse_data_uri(url)
    if parsed is not None:
        return "document" if parsed[0] == "application/pdf" else "image"
    return "document" if pdf_url(url) else "image"


def _cache_control(client: str, block: Optional[Dict[str, Any]], mark: Mapping[str, Any], where: str) -> None:
    """The cache breakpoint of a marked item on the block it became (the item sent nothing: an error)."""
    if block is None or block.get("type") in ("thinking", "redacted_thinking"):
        raise unsupported(client, "cache_breakpoint", "is set on {}, which sends no block the Anthropic API can "
                                                      "mark (mark another item)".format(where))
    block["cache_control"] = dict(mark)


def _user(endpoint: Endpoint, message: Mapping[str, Any], index: int = 0,
          mark: Optional[Mapping[str, Any]] = None) -> List[Dict[str, Any]]:
    results = []  # type: List[Dict[str, Any]]  # tool results go first in a user turn
    blocks = []  # type: List[Dict[str, Any]]
    marks = cache_marks(message)
    for position, item in enumerate(message["content_items"]):
        kind = item["type"]
        before = (len(results), len(blocks))
        if kind == "text":
            if visible_text(item["text"]):
                blocks.append({"type": "text", "text": item["text"]})
        elif kind == "image_url":
            blocks.append(_url_block(endpoint, item["image_url"]))
        elif kind == "inline_data":
            blocks.append(_media_block(endpoint, item["mime_type"], bytes(item["data"])))
        elif kind == "tool_result":
            result = {"type": "tool_result", "tool_use_id": _tool_id(item["tool_call_id"])}  # type: Dict[str, Any]
            images = item.get("images") or ()
            if images:
                parts = [{"type": "text", "text": item["text"]}] if visible_text(item["text"]) else []
                parts.extend(_url_block(endpoint, url) for url in images)
                result["content"] = parts
            elif visible_text(item["text"]):
                result["content"] = item["text"]
            if item.get("is_error"):
                result["is_error"] = True
            results.append(result)
        else:  # pragma: no cover - validate.check_message keeps other items out of user messages
            left_out(kind, 'the Anthropic API', "user")
        if marks[position]:
            made = results if len(results) > before[0] else blocks if len(blocks) > before[1] else None
            _cache_control(endpoint.client_type, made[-1] if made else None, mark or {"type": "ephemeral"},
                           "messages[{}]['content_items'][{}] (an empty {})".format(index, position, kind))
    return results + blocks


def _assistant(message: Mapping[str, Any], unsigned: bool, index: int = 0,
               mark: Optional[Mapping[str, Any]] = None, client: str = "anthropic") -> List[Dict[str, Any]]:
    blocks = []  # type: List[Dict[str, Any]]
    marks = cache_marks(message)
    for position, item in enumerate(message["content_items"]):
        kind = item["type"]
        fidelity = item.get("fidelity") or {}
        if marks[position] and kind not in ("text", "tool_call"):
            raise unsupported(client, "cache_breakpoint", "is set on messages[{}]['content_items'][{}], a {} item: "
                                                               "the Anthropic API caches up to text, tool calls and "
                                                               "user blocks, not {} (mark another item)".format(
                                                                   index, position, kind, kind))
        before = len(blocks)
        if kind == "text" or kind == "thinking":
            text = item[kind]
            if "redacted_data" in fidelity:
                blocks.append({"type": "redacted_thinking", "data": fidelity["redacted_data"]})
            elif "server_block" in fidelity:
                blocks.append(fidelity["server_block"])
            if kind == "thinking":
                signature = fidelity.get("signature")
                if isinstance(signature, str) and "redacted_data" not in fidelity and "server_block" not in fidelity:
                    blocks.append({"type": "thinking", "thinking": text, "signature": signature})
                elif text and unsigned:
                    blocks.append({"type": "thinking", "thinking": text})
                elif text:
                    logger.debug("unsigned thinking is not replayed to the first-party Anthropic API")
            elif visible_text(text):
                block = {"type": "text", "text": text}  # type: Dict[str, Any]
                if fidelity.get("citations"):
                    block["citations"] = fidelity["citations"]
                blocks.append(block)
        elif kind == "tool_call":
            block = {"type": "tool_use", "id": _tool_id(item["tool_call_id"]), "name": item["name"],
                     "input": item["arguments"]}
            if fidelity.get("caller"):
                block["caller"] = fidelity["caller"]
            blocks.append(block)
        elif kind == "compaction":  # replayed as it came; the API itself ignores every block before it
            block = fidelity.get("block") if fidelity.get(COMPACTION_FORMAT) == "anthropic" else None
            if isinstance(block, dict):
                blocks.append(block)
            else:
                logger.warning("a compaction item without its block is left out")
        else:
            left_out(kind, 'the Anthropic API')
        if marks[position]:
            _cache_control(client, blocks[-1] if len(blocks) > before else None, mark or {"type": "ephemeral"},
                           "messages[{}]['content_items'][{}] (an empty {})".format(index, position, kind))
    return blocks


# -- response --------------------------------------------------------------------------------------------


def map_usage(raw: Mapping[str, Any]) -> Dict[str, Any]:
    """Anthropic usage -> the four buckets: input_tokens excludes cache reads and writes.

    A compacted turn's ``iterations`` list its compaction passes (``type: "compaction"``), whose tokens
    the top-level counts leave out (anthropic SDK ``BetaUsage.iterations``): they are added in, so the
    buckets (and the cost) are the sum of the turn's iterations."""
    prompt = to_int(raw.get("input_tokens"))
    written = to_int(raw.get("cache_creation_input_tokens"))
    if prompt is not None and written:
        prompt += written
    elif prompt is None:
        prompt = written
    cached = to_int(raw.get("cache_read_input_tokens"))
    response = to_int(raw.get("output_tokens"))
    iterations = raw.get("iterations")
    if type(iterations) is list:
        for entry in iterations:
            if type(entry) is not dict or entry.get("type") != "compaction":
                continue
            extra_written = to_int(entry.get("cache_creation_input_tokens"))
            if extra_written is not None:
                written = (written or 0) + extra_written
            extra_prompt = (to_int(entry.get("input_tokens")) or 0) + (extra_written or 0)
            extra_cached = to_int(entry.get("cache_read_input_tokens")) or 0
            extra_response = to_int(entry.get("output_tokens")) or 0
            prompt = (prompt or 0) + extra_prompt
            if extra_cached or cached is not None:
                cached = (cached or 0) + extra_cached
            response = (response or 0) + extra_response
    hour = None  # the 1-hour part of the writes, where the wire splits them by TTL (``cache_creation``)
    split = raw.get("cache_creation")
    if type(split) is dict:
        five, hour = to_int(split.get("ephemeral_5m_input_tokens")), to_int(split.get("ephemeral_1h_input_tokens"))
        if hour is not None and (written is None or (five or 0) + hour != written):
            hour = None  # the split does not add up to the count it splits: the writes count as 5-minute ones
    return with_cache_write(usage(cached, prompt, None, response), written, hour)


_INPUT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation")


def _merge_usage(into: Dict[str, Any], raw: Any) -> None:
    """Counts are cumulative: a later count replaces an earlier one, never added to it.

    The input-side counts (input, cache writes, cache reads) are one snapshot: when a later
    event carries any of them non-zero, all it carries replace the earlier ones, zeros
    included (Kimi reports a full cache hit as ``input_tokens: 0`` beside the cache read, after
    a ``message_start`` that counted the same tokens as input).  A later event whose input-side
    counts are all zero is a placeholder (gateways that only know the output count then) and
    only fills counts never seen.  An output count of 0 never hides an earlier one either.
    """
    if type(raw) is not dict:
        return
    inputs = [(key, raw.get(key)) for key in _INPUT_KEYS]
    snapshot = any(value for key, value in inputs if type(value) is not bool and key != "cache_creation")
    for key, value in inputs:
        if value is not None and (snapshot or into.get(key) is None):
            into[key] = value
    value = raw.get("output_tokens")
    if value is not None and (value or into.get("output_tokens") is None):
        into["output_tokens"] = value
    if type(raw.get("iterations")) is list:  # a compacted turn's passes (cumulative like the rest)
        into["iterations"] = raw["iterations"]


#: fidelity of a plain text block that must not join the cited block before it (and replays as plain text)
_UNCITED = {"citations": []}


def _after_cited(fold: Fold) -> bool:
    """Plain text yielded now would join the cited block still open in ``collect``."""
    return fold.open("text") and bool(fold.fidelity and fold.fidelity.get("citations"))


class _Block(object):
    __slots__ = ("kind", "raw", "buffer", "emitted", "signature", "citations")

    def __init__(self, kind: str, raw: Any = None) -> None:
        self.kind = kind  # "text", "thinking", "redacted", "tool", "server"
        self.raw = raw
        self.buffer = None  # type: Optional[List[str]]  # text held back to be sent as one item
        self.emitted = False
        self.signature = ""
        self.citations = None  # type: Optional[List[Any]]


class _State(object):
    """A stream's blocks, assemblers and what the terminal events said (what the handlers share)."""

    __slots__ = ("client", "tools", "servers", "blocks", "fold", "replayable", "usage", "finish", "done", "message")

    def __init__(self, client: str, tool_id_prefix: Any) -> None:
        self.client = client
        self.replayable = False  # a server-tool block went out: the turn must be sent back even without text
        self.tools = ToolCallAssembler(client, tool_id_prefix)
        self.servers = None  # type: Optional[ToolCallAssembler]  # server tool inputs, assembled the same way
        self.blocks = {}  # type: Dict[Any, _Block]
        self.fold = Fold()
        self.usage = {}  # type: Dict[str, Any]
        self.finish = None  # type: Optional[str]
        self.done = False  # message_stop arrived
        self.message = None  # type: Any  # message_start's message: the answer's id and model


def parse_stream(events: Iterable[SSEEvent], client: str = "anthropic", tool_id_prefix: Any = None) -> Iterator[Any]:
    """SSE events of one Messages stream -> content items, then a StreamEnd.

    Complete when ``message_stop`` arrives, or when a ``message_delta`` carried a stop_reason and the
    body ended cleanly (or a gateway's ``[DONE]`` came instead).  ``ping`` and unknown events are
    skipped; an error event raises UpstreamError.
    """
    return _parse(payloads(events), client, tool_id_prefix)


# -- the handlers: one per event type (_EVENTS) and one per delta type (_DELTAS); each returns the items it owes


def _text_delta(state: _State, block: Optional[_Block], index: Any, delta: Dict[str, Any], field: str) -> Any:
    text = delta[field]
    if block is None or block.kind != field:  # a delta for a block never started
        block = state.blocks[index] = _Block(field)
    if block.buffer is not None:
        block.buffer.append(text)
    elif text and text.__class__ is str:
        item = {"type": field, field: text}
        if not block.emitted:
            block.emitted = True
            if field == "text" and _after_cited(state.fold):
                item["fidelity"] = dict(_UNCITED)
            state.fold.add(item)
        return (item,)
    return ()


def _input_delta(state: _State, block: Optional[_Block], index: Any, delta: Dict[str, Any], field: str) -> Any:
    if block is not None and block.kind == "server":
        if state.servers is not None:
            state.servers.feed(index, None, None, delta.get("partial_json"))
        return ()
    return state.tools.feed_arguments(index, delta.get("partial_json"))


def _signature_delta(state: _State, block: Optional[_Block], index: Any, delta: Dict[str, Any], field: str) -> Any:
    if block is not None:
        signature = delta.get("signature") or ""
        block.signature = signature if signature.startswith(block.signature) else block.signature + signature
    return ()


def _citations_delta(state: _State, block: Optional[_Block], index: Any, delta: Dict[str, Any], field: str) -> Any:
    if block is not None and block.kind == "text":
        if block.buffer is None:
            block.buffer = []  # a cited block is sent as one item carrying its citations
        if block.citations is None:
            block.citations = []
        block.citations.append(delta.get("citation"))
    return ()


def _compaction_delta(state: _State, block: Optional[_Block], index: Any, delta: Dict[str, Any], field: str) -> Any:
    """A compaction block streams its summary in pieces; its opaque payload is the latest one sent."""
    if block is not None and block.kind == "server":
        raw = block.raw
        content = delta.get("content")
        if type(content) is str:
            raw["content"] = (raw.get("content") or "") + content
        encrypted = delta.get("encrypted_content")
        if encrypted is not None:
            raw["encrypted_content"] = encrypted
    return ()


#: delta type -> (handler, the field its text is in)
_DELTAS = {
    "text_delta": (_text_delta, "text"),
    "thinking_delta": (_text_delta, "thinking"),
    "input_json_delta": (_input_delta, None),
    "signature_delta": (_signature_delta, None),
    "citations_delta": (_citations_delta, None),
    "compaction_delta": (_compaction_delta, None),
}
_NO_DELTA = (lambda state, block, index, delta, field: (), None)  # deltas this module does not know


def _block_delta(state: _State, payload: Dict[str, Any]) -> Any:
    delta = payload["delta"]
    index = payload.get("index")
    handler, field = _DELTAS.get(delta.get("type"), _NO_DELTA)
    return handler(state, state.blocks.get(index), index, delta, field)


def _block_start(state: _State, payload: Dict[str, Any]) -> Any:
    return _start_block(state, payload.get("index"), payload["content_block"])


def _block_stop(state: _State, payload: Dict[str, Any]) -> Any:
    block = state.blocks.pop(payload.get("index"), None)
    return () if block is None else _close_block(block, payload.get("index"), state)


def _message_delta(state: _State, payload: Dict[str, Any]) -> Any:
    delta = payload.get("delta")
    if type(delta) is dict and delta.get("stop_reason"):
        state.finish = FINISH_REASONS.get(delta["stop_reason"], "unknown")
    _merge_usage(state.usage, payload.get("usage"))
    return ()


def _message_start(state: _State, payload: Dict[str, Any]) -> Any:
    message = payload.get("message")
    if type(message) is not dict:
        return ()
    state.message = message
    _merge_usage(state.usage, message.get("usage"))
    items = []  # type: List[Dict[str, Any]]
    content = message.get("content")
    if content and type(content) is list:
        # complete blocks sent with the message (seen with code execution, and a whole answer read as a
        # stream): each one is a block started and stopped at once
        for position, start in enumerate(content):
            if type(start) is dict:
                key = ("message_start", position)
                items.extend(_start_block(state, key, start))
                block = state.blocks.pop(key, None)
                if block is not None:
                    items.extend(_close_block(block, key, state))
    reason = message.get("stop_reason")
    if reason and type(reason) is str and state.finish is None:
        state.finish = FINISH_REASONS.get(reason, "unknown")
    return items


def _message_stop(state: _State, payload: Dict[str, Any]) -> Any:
    state.done = True
    return ()


def _error(state: _State, payload: Any) -> Any:
    raise upstream_error(state.client, payload, request_id=_request_id(payload))


def _ping(state: _State, payload: Dict[str, Any]) -> Any:
    return ()


#: event ``type`` -> handler(state, payload) -> the items it owes (h11-style: the grammar is this table)
_EVENTS = {
    "content_block_delta": _block_delta,
    "content_block_start": _block_start,
    "content_block_stop": _block_stop,
    "message_delta": _message_delta,
    "message_start": _message_start,
    "message_stop": _message_stop,
    "ping": _ping,
    "error": _error,
}


def _unknown(state: _State, payload: Dict[str, Any]) -> Any:
    """An event this module does not know: nothing to do, unless it is an error by its name."""
    kind = payload.get("type")
    if type(kind) is str and kind.endswith("_error") and "message" in payload:
        _error(state, payload)
    return ()


def _parse(pairs: Iterable[Any], client: str = "anthropic", tool_id_prefix: Any = None) -> Iterator[Any]:
    """``parse_stream`` over decoded payloads: ``(event, payload)`` pairs (see ``_common.payloads``)."""
    state = _State(client, tool_id_prefix)
    handlers = _EVENTS
    unknown = _unknown
    blocks = state.blocks
    fragment = state.tools.fragment
    for event, payload in pairs:
        if event == "error":
            _error(state, payload)
        if payload.__class__ is not dict:  # (not type(payload): a builtin call costs three times more on 3.8)
            if event is DONE:  # an OpenAI-style end marker from a gateway: the end of the body
                break
            continue
        kind = payload.get("type")
        if kind == "content_block_delta":
            # the row nearly every event takes, inlined: more text of a block already under way (the
            # table's _text_delta gives the same)
            delta = payload["delta"]
            dkind = delta.get("type")
            if dkind == "text_delta":
                block = blocks.get(payload.get("index"))
                if block is not None and block.emitted and block.buffer is None and block.kind == "text":
                    text = delta["text"]
                    if text and text.__class__ is str:
                        yield {"type": "text", "text": text}
                    continue
            elif dkind == "input_json_delta":
                # the row nearly every tool-call event takes, inlined: an argument fragment of a client
                # tool call (the table's _block_delta and _input_delta give the same, three calls more)
                index = payload.get("index")
                block = blocks.get(index)
                if block is None or block.kind != "server":
                    text = delta.get("partial_json")
                    item = fragment(index, text)
                    if item is not None:
                        yield item
                    else:
                        yield from state.tools.feed_arguments(index, text)
                    continue
        items = handlers.get(kind, unknown)(state, payload)
        if items:
            yield from items
        if state.done:
            break
    if not state.done and state.finish is None:
        return  # cut before its terminal marker: the driver raises StreamProtocolError
    for index in sorted(blocks, key=_block_order):
        yield from _close_block(blocks[index], index, state)
    yield from state.tools.finish()
    raw_usage = state.usage
    message = state.message or {}
    yield StreamEnd(map_usage(raw_usage) if raw_usage else None, state.finish, state.replayable,
                    message.get("id"), message.get("model"))


def parse_document(payload: Any, client: str = "anthropic", tool_id_prefix: Any = None) -> Iterator[Any]:
    """A whole Messages answer (``{"type": "message", "content": [...], "stop_reason", "usage"}``: a
    gateway that ignored ``stream: true``) -> the same parts its stream gives: it is read as a
    ``message_start`` carrying the complete blocks, then ``message_stop``.  An error document raises
    the UpstreamError it names; other documents (a JSON array of stream events) are read as events."""
    pairs = []  # type: List[Any]
    for doc in documents(payload):
        if type(doc) is dict and doc.get("type") == "error":
            raise upstream_error(client, doc, request_id=_request_id(doc))
        if type(doc) is dict and (doc.get("type") == "message" or (
                doc.get("type") is None and type(doc.get("content")) is list and doc.get("role") == "assistant")):
            pairs.append(("message", {"type": "message_start", "message": doc}))
            pairs.append(("message", {"type": "message_stop"}))
        else:
            pairs.append(("message", doc))
    return _parse(pairs, client, tool_id_prefix)


def _block_order(index: Any) -> Tuple[bool, int]:
    return type(index) is not int, index if type(index) is int else 0


def _start_block(state: _State, index: Any, start: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The items a ``content_block_start`` owes at once (its block is kept in ``state.blocks``)."""
    blocks = state.blocks
    fold = state.fold
    bkind = start.get("type")
    if bkind == "text" or bkind == "thinking":
        block = blocks[index] = _Block(bkind)
        if bkind == "thinking":
            block.signature = start.get("signature") or ""
            if fold.carrying("thinking"):
                block.buffer = []  # its text would join the open carrier: hold it until its signature
        elif type(start.get("citations")) is list:  # a block that may be cited: sent as one item
            block.buffer = []
            if start["citations"]:
                block.citations = list(start["citations"])
        text = start.get(bkind)
        if text and type(text) is str:
            if block.buffer is not None:
                block.buffer.append(text)
            else:
                block.emitted = True
                item = {"type": bkind, bkind: text}  # type: Dict[str, Any]
                if bkind == "text" and _after_cited(fold):
                    item["fidelity"] = dict(_UNCITED)
                fold.add(item)
                return [item]
        return []
    if bkind == "tool_use":
        blocks[index] = _Block("tool")
        caller = start.get("caller")
        fidelity = {"caller": caller} if type(caller) is dict and caller.get("type") != "direct" else None
        seed = start.get("input")  # usually {}; complete on relays that send whole calls (some as JSON text)
        return state.tools.feed(index, start.get("id"), start.get("name"), None, fidelity,
                                (seed if type(seed) is str else dumps(seed)) if seed else None)
    if bkind == "redacted_thinking":
        blocks[index] = _Block("redacted", start)
        return []
    if type(bkind) is not str or not bkind:  # (no block the API sends: kept, it could never go back, and the next
        logger.debug("a content block with no type is left out")  # turn refused the whole history)
        return []
    # server_tool_use, *_tool_result, compaction, fallback, and block types this module does not know
    blocks[index] = _Block("server", dict(start))
    if type(start.get("input")) is dict:
        if state.servers is None:
            state.servers = ToolCallAssembler(state.client, "srv_")
        seed = start["input"]
        state.servers.feed(index, start.get("id") or str(index), start.get("name") or bkind, None, None,
                           dumps(seed) if seed else None)
    return []


def _close_block(block: _Block, index: Any, state: _State) -> List[Dict[str, Any]]:
    """The items a finished content block still owes."""
    kind = block.kind
    fold = state.fold
    if kind == "tool":
        items = state.tools.close(index)
        for item in items:
            fold.add(item)
        return items
    if kind == "text" or kind == "thinking":
        fidelity = None  # type: Optional[Dict[str, Any]]
        cited = False
        if kind == "thinking" and block.signature:
            fidelity = {"signature": block.signature}
        elif block.citations:
            fidelity = {"citations": block.citations}
            cited = True
        text = "".join(block.buffer) if block.buffer else ""
        if not text and fidelity is None:
            return []
        out = []  # type: List[Dict[str, Any]]
        if kind == "text":
            if cited and not block.emitted and fold.plain("text"):
                # the plain text before it is done: seal it so the cited block stays a block of its own
                out.append({"type": "text", "text": "", "fidelity": dict(_UNCITED)})
                fold.add(out[-1])
            elif not cited and not block.emitted and _after_cited(fold):
                fidelity = dict(_UNCITED)
        item = {"type": kind, kind: text}  # type: Dict[str, Any]
        if fidelity is not None:
            item["fidelity"] = fidelity
        fold.add(item)
        out.append(item)
        return out
    if kind == "redacted":
        fidelity = {"redacted_data": block.raw.get("data")}
        natural = "thinking"
    elif block.raw.get("type") == "compaction":  # the server's compaction: an opaque item of its own
        item = {"type": "compaction", "fidelity": {COMPACTION_FORMAT: "anthropic", "block": block.raw}}
        fold.add(item)  # collect holds nothing open after it
        state.replayable = True
        return [item]
    else:
        raw = block.raw
        servers = state.servers
        if servers is not None and "input" in raw:
            try:
                items = servers.close(index)
            except ToolCallArgumentParseError:  # cut off (max_tokens): it cannot be replayed, and is no tool call
                logger.debug("a %s block with unreadable input is left out", raw.get("type"))
                return []
            for item in items:
                if item["type"] == "tool_call":
                    raw["input"] = item["arguments"]
        fidelity = {"server_block": raw}
        natural = "text"
        state.replayable = True
    own = fold.own_kind(natural)
    item = {"type": own, own: "", "fidelity": fidelity}
    fold.add(item)
    return [item]


def _request_id(payload: Any) -> Optional[str]:
    if type(payload) is dict and isinstance(payload.get("request_id"), str):
        return payload["request_id"]
    return None


# -- the endpoint's model list ------------------------------------------------------------------

#: models asked for per page of GET /v1/models (the API's largest page)
MODELS_PAGE_SIZE = 1000


def models_request(endpoint: Endpoint, page_token: Optional[str] = None) -> HttpRequest:
    """``GET {base_url}/v1/models?limit=1000`` (then ``&after_id=<last id>`` while ``has_more``)."""
    path = "/v1/models?limit={}".format(MODELS_PAGE_SIZE)
    if page_token:
        path += "&after_id=" + quote(page_token, safe="")
    return get_request(endpoint, path, **{"anthropic-version": api_version(endpoint)})


# -- token counting (agenthub.providers.counting) ---------------------------------------------------

#: the answer's count field, and the body members POST /v1/messages/count_tokens takes (the SDK's own)
COUNT_FIELD = "input_tokens"
COUNT_KEYS = ("anthropic_version", "model", "messages", "system", "tools", "tool_choice", "thinking", "cache_control",
              "output_config", "speed", "mcp_servers")


def count_request(plan: HttpRequest, model: str, quirks: Mapping[str, Any], form: Any = True) -> Optional[HttpRequest]:
    """``/v1/messages/count_tokens`` for the streaming ``plan`` (None: the host has no count endpoint,
    ``form`` False: the client-type row's ``count_tokens``).
    A host that keeps the model out of the Messages body (Vertex AI) takes it in the count body."""
    from .counting import count_plan, keep

    if form is False:
        return None
    body = keep(plan.body, COUNT_KEYS)
    if quirks.get("model_in_body") is False:
        body["model"] = model
    return count_plan(plan, plan.url.partition("?")[0] + "/count_tokens", body)


PROTOCOL = Protocol(
    "anthropic", __name__, build_request, parse_stream, parse_document=parse_document, parse_payloads=_parse,
    quirk_keys=("anthropic_version", "automatic_caching", "fast_mode", "first_party", "foundry", "interleaved_thinking", "model_in_body", "replay_unsigned_thinking",
                "response_formats", "thinking_rule", "version_in_body"),
    demo=("claude-sonnet-4-6", "Anthropic Messages"), models_request=models_request, parse_models=parse_data_list,
    accepts=("compaction", "mcp_servers"), count=Count(count_request, COUNT_FIELD), compaction_format="anthropic",
    keepalives=("ping",),
)
