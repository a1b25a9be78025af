"""Pure helpers shared by the dialect modules (no protocol logic of its own), and ``Protocol``,
the record each wire dialect declares once at the end of its module (where a request goes and how
it is authorised is its host's business: ``agenthub.hosts``)."""

import base64
import binascii
import dataclasses
import json
import logging
import math
import re
from operator import is_ as _is  # (C speed over a whole history)
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from .._redact import named_secrets
from ..answers import error_from_body as _error_from_body
from ..errors import ConfigError, StreamProtocolError, UnsupportedParameterError
from ..media import pdf_url  # noqa: F401  (the dialects import it from here; a Budget's hold reads it too)
from .._jsondepth import FLOOR as _FLOOR, GUARDED as _GUARDED, check as _check_depth
from ..sse import iter_event_data, iter_events, scan_once
from ..stream import Usage, now_ms, with_cache_write  # noqa: F401  (the dialects import them from here)
from ..types import HttpRequest
from ..validate import Snaps, Unseen, count_marks

__all__ = [
    "Protocol",
    "Dialect",
    "Resume",
    "Count",
    "Endpoint",
    "dumps",
    "encode_path_segment",
    "parse_data_uri",
    "data_uri",
    "unsupported",
    "nearest",
    "answer_bytes",
    "answer_mime",
    "embedding_vector",
    "request_headers",
    "apply_extras",
    "deep_merge",
    "check_response_format",
    "stop_sequences",
    "samplers",
    "get_request",
    "model_list_page",
    "payloads",
    "document_payloads",
    "DONE",
]


def _redact_url(url: str) -> str:
    from .._redact import shown_url

    return shown_url(url)


class Endpoint(object):
    """Where and how to send: base URL, key, extra headers, the vendor's quirks (a registry row's
    data) and the model (a host's URL rule may put it in the path: an Azure deployment, Vertex AI).
    A dialect reads the headers and the quirks; the host reads the rest (``agenthub.hosts``)."""

    __slots__ = ("client_type", "base_url", "api_key", "headers", "quirks", "model")

    def __init__(
        self,
        client_type: str,
        base_url: str,
        api_key: Any = None,
        headers: Optional[Mapping[str, str]] = None,
        quirks: Optional[Mapping[str, Any]] = None,
        model: Optional[str] = None,
    ) -> None:
        self.client_type = client_type
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.headers = dict(headers or {})
        self.quirks = dict(quirks or {})
        self.model = model

    def __repr__(self) -> str:  # never show the key
        return "Endpoint(client_type={!r}, base_url={!r}, api_key={})".format(
            self.client_type, _redact_url(self.base_url), "'***'" if self.api_key else None
        )

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state):
        self.model = None  # (a pickle from before the slot)
        for name, value in state.items():
            setattr(self, name, value)


#: the value ``payloads`` yields (as ``(DONE, None)``) for an OpenAI-style ``data: [DONE]`` end marker
DONE = "[DONE]"


def payloads(frames: Iterable[Any]) -> Iterator[Tuple[str, Any]]:
    """SSE events -> ``(event name, value)``, each frame's data decoded once.

    ``value`` is the decoded JSON (a dict for nearly every frame: the parsers skip other JSON
    values), or, for an ``event: error`` frame whose data is not JSON, its text.  Empty
    keep-alives are dropped; an OpenAI-style ``[DONE]`` (a gateway's end marker) is yielded as
    ``(DONE, None)`` and ends the payloads.  Any other data that is not JSON raises the
    decoder's ValueError (the driver reports it as a StreamProtocolError).  A whole JSON
    answer skips this step: ``parse_document`` hands its documents to the same parser as
    ``("message", document)`` pairs."""
    return data_payloads((frame.event, frame.data) for frame in frames)


def data_payloads(pairs: Iterable[Tuple[str, str]]) -> Iterator[Tuple[str, Any]]:
    """``payloads`` over ``(event name, data)`` tuples (``sse.iter_event_data``): what ``Protocol.read``
    hands a dialect's ``parse_payloads``, with no SSEEvent built per event."""
    loads = json.loads  # (the rest of json_loads: its fast path is tried here, its depth measure too)
    scan = scan_once
    check = _check_depth if _GUARDED else None  # (Python < 3.11: see agenthub._jsondepth)
    floor = _FLOOR
    for event, data in pairs:
        try:
            if check is not None and len(data) > floor:  # (a short event cannot nest that deep: no call)
                check(data)
            # json_loads' own fast path, inlined (a call fewer per event): the C scanner over the whole
            # text; anything else (whitespace around it, extra data, an error) goes to json.loads
            try:
                value, end = scan(data, 0)
            except StopIteration:
                value, end = None, -1
            if end == len(data):
                yield event, value
            else:
                yield event, loads(data)
        except ValueError:
            if event == "error":
                yield event, data
                continue
            stripped = data.strip()
            if not stripped:
                continue  # an empty keep-alive
            if stripped.startswith(DONE):
                yield DONE, None
                return
            raise


def document_payloads(documents: Iterable[Any]) -> Iterator[Tuple[str, Any]]:
    """The documents of a whole JSON answer as the pairs ``payloads`` yields for a stream."""
    for document in documents:
        yield "message", document


def _whole(parts: Iterator[Any], client: str) -> Iterator[Any]:
    """The parts of a whole JSON answer: it is complete by nature, so one that does not finish (a
    document holding no answer) is a StreamProtocolError that is not retried, never a cut stream."""
    from ..stream import StreamEnd

    for part in parts:
        yield part
        if part.__class__ is StreamEnd:
            return
    raise StreamProtocolError("{}: a whole JSON answer without its terminal marker (no finish reason): it holds "
                              "no complete answer".format(client or "agenthub"), client=client, retryable=False)


def documents(payload: Any) -> list:
    """A JSON answer as the list of its documents (Gemini's non-SSE form is an array of chunks)."""
    return list(payload) if isinstance(payload, list) else [payload]


def unfinished_document(client: str, kind: str, status: str, resource_id: Any, path: str) -> Iterator[Any]:
    """A whole answer document (a ``kind``: "response", "interaction") that has not finished (a server that
    ignored ``stream``, or answered a background request at once): a StreamProtocolError naming its status and
    id (``resource_id``: None when it had no usable one; ``path``: where it is retrieved, "/responses/"), not
    retried (sending the request again would start, and bill, another one)."""
    if not isinstance(resource_id, str) or not resource_id or len(resource_id) > 200 or not resource_id.isprintable():
        resource_id = None
    where = ("retrieve it by its id (GET {}{}) once it has finished, or cancel it".format(path, resource_id)
             if resource_id is not None else "the server gave no usable id for it")
    raise StreamProtocolError(
        "{}: the server answered with a whole {} that has not finished (status {!r}, id {!r}): it did not "
        "stream it (a server that ignored stream: true, or one that answers a background request at once), so "
        "there is no answer yet; it is not sent again: {}".format(client, kind, status, resource_id, where),
        client=client, retryable=False, response_status=status, response_id=resource_id)
    yield  # (a generator: raised when the parts are read, as a cut stream is)


class Resume(object):
    """How a dialect resumes a background stream after a cut (``agenthub.resume``) and cancels it:
    ``request(endpoint, resource_id, cursor)``: the GET that continues the stream after ``cursor`` (from
    its start when None); ``cancel(endpoint, resource_id)``: the POST that stops it server-side;
    ``frame_cursor(sse)``: (the resource id when this frame names it, its cursor, terminal?) of one SSE
    event; ``ordered``: cursors are numbers in order (a replayed event at or before the cursor is dropped)."""

    __slots__ = ("request", "cancel", "frame_cursor", "ordered")

    def __init__(self, request: Callable[..., HttpRequest], cancel: Callable[..., HttpRequest],
                 frame_cursor: Callable[[Any], Tuple[Optional[str], Any, bool]], ordered: bool = False) -> None:
        self.request = request
        self.cancel = cancel
        self.frame_cursor = frame_cursor
        self.ordered = ordered

    def __repr__(self) -> str:
        return "Resume(ordered={!r})".format(self.ordered)


class Count(object):
    """How a dialect counts input tokens before sending (``agenthub.providers.counting``):
    ``request(plan, model, quirks, form)``: the count request planned from the streaming plan (None: the
    host has no count endpoint, ``form`` being the client-type row's ``count_tokens``); ``field``: the
    answer's field holding the count."""

    __slots__ = ("request", "field")

    def __init__(self, request: Callable[..., Optional[HttpRequest]], field: str) -> None:
        self.request = request
        self.field = field

    def __repr__(self) -> str:
        return "Count(field={!r})".format(self.field)


class Protocol(object):
    """One wire dialect: how a request is planned and how its answer is read.

    Declared once, as ``PROTOCOL = Protocol(...)`` at the end of the dialect's module, and named
    in ``agenthub.providers.PROTOCOLS``.  It holds no key, no base URL and no credential logic:
    those are its host's (``agenthub.hosts``; a client type is a row of dialect, host and quirks).
    The client runs one turn as::

        plan = protocol.build_request(endpoint, model, messages, config)   # pure: a path, a body
        request = host.encode(plan, endpoint)        # per attempt: URL, exact bytes, credential
        body = transport.open_stream(session, request, ...)                # bytes as they arrive
        parts = protocol.read(body, client, max_line_bytes)                # items, then a StreamEnd

    ``name``: the dialect (the client_type of its first-party route).  ``build_request`` returns
    an HttpRequest whose ``url`` is the path under the endpoint (``/chat/completions``,
    ``/v1/messages``, ``/v1beta/models/{model}:streamGenerateContent?alt=sse``) and whose headers
    hold no credential.  ``framing(chunks, max_line_bytes)``: the body's bytes -> the frames
    ``parse_stream`` reads (SSE events by default).  ``parse_payloads(pairs, client)``: ``parse_stream``
    over the decoded payloads it reads (``parse_stream(events)`` being ``parse_payloads(payloads(events))``):
    when given, with the default framing, ``read`` frames the body into ``(event, data)`` tuples and
    decodes those (``data_payloads``), building no SSEEvent per event.  ``parse_document(payload, client)``: a whole
    JSON answer (a server that ignored streaming, or a non-streamed endpoint such as embeddings) ->
    the same parts.  ``quirk_keys``: the registry quirks the module reads.  ``embeddings``: the
    module under ``agenthub.providers`` serving embedding models for this dialect (its own
    ``PROTOCOL``).  ``demo``: ``(model, title)`` for ``agenthub demo`` (recordings under
    ``agenthub/recordings/<module>``).  ``models_request(endpoint, page_token)`` and
    ``parse_models(payload, client) -> (ids, next_token)``: the endpoint's live model list, one
    page at a time (``AutoLLMClient.list_models``; both pure; None: the dialect cannot list models).
    ``error_from_body(status, headers, payload, client)``: the error an error answer names (an HTTP
    error, or an error object in a 2xx JSON answer, then with status None); ``payload`` is the body's
    bytes, or the JSON value already decoded.  Default: ``agenthub.answers.error_from_body``.

    What only some dialects do, declared here too (the client reads nothing else of the module):
    ``accepts``: the config keys only some protocols read (``client.LONGRUN_KEYS``) that this one takes;
    ``chains_turns``: a stateful call is told to ``build_request`` (``stateful=True``: the turns chain
    server-side; ``chain=False`` when the messages before the last answer are not those the client's previous
    stateful call sent, unchanged: the whole history goes); ``stored_answer(message)``: the collected answer of
    such a call, marked stored;
    ``resume``: a ``Resume`` (background streams resumed after a cut and cancelled), None for none;
    ``count``: a ``Count`` (the token-count endpoint), None for none; ``compaction_format``: which
    compaction items it replays (``fidelity["format"]``: "openai", "anthropic"), None for none;
    ``max_inputs``: an embeddings protocol's most inputs in one request (``build_request`` refuses more,
    ``AutoLLMClient.embed`` sends more as several requests), None for no limit;
    ``keepalives``: the names of the SSE events that are the wire's keep-alives, not content (Anthropic's
    ``ping``): they do not restart the ``Timeout.events`` clock.
    """

    __slots__ = ("name", "module", "build_request", "parse_stream", "framing", "parse_document", "quirk_keys",
                 "embeddings", "demo", "models_request", "parse_models", "error_from_body", "parse_payloads",
                 "accepts", "chains_turns", "stored_answer", "resume", "count", "compaction_format", "max_inputs",
                 "keepalives")

    def __init__(
        self,
        name: str,
        module: str,
        build_request: Callable[..., HttpRequest],
        parse_stream: Optional[Callable[..., Iterator[Any]]] = None,
        framing: Callable[[Iterable[bytes], int], Iterator[Any]] = iter_events,
        parse_document: Optional[Callable[[Any, str], Iterator[Any]]] = None,  # required
        quirk_keys: Sequence[str] = (),
        embeddings: Optional[str] = None,
        demo: Optional[Tuple[str, str]] = None,
        models_request: Optional[Callable[["Endpoint", Optional[str]], HttpRequest]] = None,
        parse_models: Optional[Callable[[Any, str], Tuple[List[str], Optional[str]]]] = None,
        error_from_body: Callable[..., Any] = _error_from_body,
        parse_payloads: Optional[Callable[..., Iterator[Any]]] = None,
        accepts: Sequence[str] = (),
        chains_turns: bool = False,
        stored_answer: Optional[Callable[[Any], Any]] = None,
        resume: Optional[Resume] = None,
        count: Optional[Count] = None,
        compaction_format: Optional[str] = None,
        max_inputs: Optional[int] = None,
        keepalives: Sequence[str] = (),
    ) -> None:
        if parse_document is None:
            raise TypeError("a Protocol needs parse_document (a whole JSON answer -> its parts)")
        self.name = name
        self.module = module.rsplit(".", 1)[-1]
        self.build_request = build_request
        self.parse_stream = parse_stream
        self.framing = framing
        self.parse_document = parse_document
        self.quirk_keys = tuple(quirk_keys)
        self.embeddings = embeddings
        self.demo = demo
        self.models_request = models_request
        self.parse_models = parse_models
        self.error_from_body = error_from_body
        self.parse_payloads = parse_payloads
        self.accepts = tuple(accepts)
        self.chains_turns = chains_turns
        self.stored_answer = stored_answer
        self.resume = resume
        self.count = count
        self.compaction_format = compaction_format
        self.max_inputs = max_inputs
        self.keepalives = tuple(keepalives)

    def read(self, body: Any, client: str, max_line_bytes: int, document: bool = False,
             stamp: Optional[List[int]] = None, events_timeout: Optional[float] = None) -> Iterator[Any]:
        """The parts of one answer: ``body`` (a transport.BodyStream) is opened (the request is sent);
        a JSON document goes to ``parse_document``, a stream through ``framing`` to ``parse_stream``.
        ``document``: the request asked for one JSON document (it is read whatever its content type).
        ``stamp``: a one-item list kept at the time the bytes being parsed were read (Unix ms), for
        ``stream.drive`` (``BodyStream.iter_chunks(stamp)``).  ``events_timeout``: ``Timeout.events``
        (``frames``)."""
        if body.open(document):
            if stamp is not None:
                stamp[0] = now_ms()
            return _whole(self.parse_document(body.document, client), client)
        if self.parse_stream is None:  # (its requests ask for a document: open() reads one whatever came)
            raise StreamProtocolError("{}: expected one JSON document, got a stream".format(client), client=client)
        chunks = body.iter_chunks(stamp)
        if self.parse_payloads is not None and self.framing is iter_events:
            return self.parse_payloads(data_payloads(iter_event_data(chunks, max_line_bytes, events_timeout, client,
                                                                     self.keepalives)), client)
        return self.parse_stream(self.frames(chunks, max_line_bytes, events_timeout, client), client)

    def frames(self, chunks: Iterable[bytes], max_line_bytes: int, events_timeout: Optional[float] = None,
               client: str = "") -> Iterator[Any]:
        """``framing`` over ``chunks``; an SSE framing (``iter_events``) ends a body that sends no event for
        ``events_timeout`` seconds, only comments and keep-alives (``Timeout.events``).  Other framings have
        no comments to keep a body alive without events (AWS event-stream) or bound it themselves."""
        if self.framing is iter_events:
            return iter_events(chunks, max_line_bytes, events_timeout, client, self.keepalives)
        return self.framing(chunks, max_line_bytes)

    def __repr__(self) -> str:
        return "Protocol({!r})".format(self.name)


#: the record's other name: a wire dialect
Dialect = Protocol


def encode_path_segment(value: str) -> str:
    """A URI label as botocore encodes it: everything but ``A-Za-z0-9-_.~`` percent-encoded
    (``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` -> ``...-v1%3A0``, an ARN's ``/`` -> ``%2F``)."""
    from urllib.parse import quote

    return quote(value.encode("utf-8"), safe="-_.~")


def _compact_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, the same text, with the encoder made
    once (``json.dumps`` with arguments builds a JSONEncoder per call: a few microseconds, paid per tool call
    of the history on every turn).  No cycle check: what reaches it was checked by validate (depth-bounded)."""
    try:
        from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - every CPython has them
        c_make_encoder = None
    if c_make_encoder is None or encode_basestring is None:  # pragma: no cover - PyPy and friends
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    chunks = c_make_encoder(None, json.JSONEncoder().default, encode_basestring, None, ":", ",", False, False, True)
    join = "".join
    return lambda value: join(chunks(value, 0))


_compact = _compact_encoder()


# -- a history sent again: the request body built from where the last call's left off ----------------------
#
# A loop sends its history again with a turn appended, so each step that turns the messages into the request
# body (agenthub.foreign's conversion, each dialect's message -> wire item mapping, the body's JSON) starts
# from what it made of the same head on the client's previous call, when that head is the very same message
# objects, unchanged (validate.CheckedMessages proved it, comparing them to copies taken when checked), and
# what else the step reads (the endpoint's quirks, the model, the config keys it reads: its ``context``) is
# equal.  What a step kept (``CheckedMessages.stash``, one entry per step: the last call's only) is the wire
# items it made, a copy of their containers and their JSON text: the items are taken again only when they
# still equal that copy (nothing changed them through a request body), and the JSON text of each is spliced
# into the body's bytes by ``HttpRequest.content`` (the same bytes ``json.dumps`` makes), when the body's
# list is still those items, unchanged.  A step whose conversion logged anything keeps nothing (its log
# lines come on every call, as they did).

#: how many log calls the dialects' message conversions made (``noting``): a conversion that logged keeps nothing
NOTES = [0]


class _Noting(object):
    """A logger that counts the records asked of it (``NOTES``), whatever its level lets through."""

    __slots__ = ("logger",)

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger

    def _log(self, level: int, *args: Any, **kwargs: Any) -> None:
        NOTES[0] += 1
        self.logger.log(level, *args, **kwargs)

    def debug(self, *args: Any, **kwargs: Any) -> None:
        self._log(logging.DEBUG, *args, **kwargs)

    def info(self, *args: Any, **kwargs: Any) -> None:
        self._log(logging.INFO, *args, **kwargs)

    def warning(self, *args: Any, **kwargs: Any) -> None:
        self._log(logging.WARNING, *args, **kwargs)

    def error(self, *args: Any, **kwargs: Any) -> None:
        self._log(logging.ERROR, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.logger, name)


def noting(logger: logging.Logger) -> Any:
    """``logger`` with its calls counted in ``NOTES`` (the dialects' module logger)."""
    return _Noting(logger)


class Prior(object):
    """One call's view of what the client's previous call kept (``stash``: ``CheckedMessages.stash``) and
    how many leading messages of this call's history are that call's, unchanged (``same``)."""

    __slots__ = ("stash", "same", "head")

    def __init__(self, stash: Dict[str, Any], same: int) -> None:
        self.stash = stash
        self.same = same
        #: how many leading messages the dialect is given are the previous call's, as it was given them
        #: (set by ``foreign.for_dialect_resumed``)
        self.head = 0


class Resumed(object):
    """A step's output list as it is built: the wire items, a copy of each (``snapshot``) and its JSON text
    (None: made at send time), the items taken from the last call first; ``seal``: set by ``keep``, shared with
    what it stashed (``Encoded.seal``)."""

    __slots__ = ("items", "snaps", "texts", "state", "count", "seal")

    def __init__(self, items: List[Any], snaps: Snaps, texts: List[Any], state: Any, count: int) -> None:
        self.items = items
        self.snaps = snaps
        self.texts = texts
        self.state = state  # what the step carries from one message to the next, after the head
        self.count = count  # how many input messages the head covers
        self.seal = None  # type: Optional[Dict[str, bool]]


def resume(prior: Optional[Prior], name: str, context: Any, inputs: Sequence[Any], same: int) -> Optional[Resumed]:
    """Step ``name``'s output for the head of ``inputs`` it converted on the previous call, when that head is
    the same objects and within the first ``same`` (proven unchanged), its ``context`` equal, and its items
    unchanged (compared with their snapshots, unless the body that held them was sent through the library
    alone and they were found unchanged then: ``Encoded``); else None (convert everything)."""
    if prior is None:
        return None
    stash = prior.stash.get(name)
    if stash is None:
        return None
    old_context, old_inputs, items, snaps, texts, state, seal = stash
    count = len(old_inputs)
    if count > same or count > len(inputs) or not all(map(_is, inputs, old_inputs)) or old_context != context:
        return None
    # (taken once: a second call resuming from the same stash compares; dict.pop is one step for threads)
    if seal.pop("sent", None) is not True and not snaps.matches(items):
        return None
    return Resumed(list(items), snaps.head(len(items)), list(texts), state, count)


def keep(prior: Optional[Prior], name: str, context: Any, inputs: Sequence[Any], out: Resumed, noted: int) -> None:
    """Stash step ``name``'s output for ``inputs`` (nothing when a conversion logged since ``noted``)."""
    if prior is None:
        return
    if NOTES[0] != noted:
        prior.stash.pop(name, None)
        return
    items, snaps, texts = out.items, out.snaps, out.texts
    for item in items[len(snaps.roots):]:
        snaps.add(item, wire_copy)
        try:
            texts.append(_compact(item))
        except (TypeError, ValueError, OverflowError, RecursionError):
            texts.append(None)
    out.seal = seal = {}  # type: Dict[str, bool]
    prior.stash[name] = (context, list(inputs), list(items), snaps, texts, out.state, seal)


def start(prior: Optional[Prior], name: str, context: Any, inputs: Sequence[Any], same: int,
          state: Any) -> Resumed:
    """``resume``'s output, or an empty one holding ``state`` (a copy is the caller's to make)."""
    found = resume(prior, name, context, inputs, same)
    return found if found is not None else Resumed([], Snaps(), [], state, 0)


def marks_resumed(prior: Optional[Prior], messages: Sequence[Mapping[str, Any]]) -> int:
    """``validate.count_marks(messages)``, the previous call's count taken for the head it counted."""
    if prior is None:
        return count_marks(messages)
    stash = prior.stash.get("marks")
    count = 0
    if stash is not None and len(stash[0]) <= prior.head and all(map(_is, messages, stash[0])):
        count = len(stash[0])
        total = stash[1] + count_marks(messages[count:])
    else:
        total = count_marks(messages)
    prior.stash["marks"] = (list(messages), total)
    return total


def wire_copy(value: Any, places: Snaps) -> Tuple[Any, bool]:
    """``validate.message_copy`` for a wire item: a copy of its containers holding the same leaves, the places
    of its numbers in ``places``; a leaf of any other type is never taken as unchanged."""
    kind = type(value)
    if kind is str or value is None:
        return value, False
    if kind is int or kind is float or kind is bool:
        return value, True
    if kind is dict:
        out = {}
        held = False
        for key, item in value.items():
            out[key], has = wire_copy(item, places)
            if has:
                places.pin(value, key, item)
                held = True
        return out, held
    if kind is list or kind is tuple:
        made = []
        held = False
        for index, item in enumerate(value):
            copied, has = wire_copy(item, places)
            made.append(copied)
            if has:
                places.pin(value, index, item)
                held = True
        return (made if kind is list else tuple(made)), held
    return _UNSEEN, False  # anything else: never taken as unchanged


_UNSEEN = Unseen()


class Encoded(object):
    """The JSON text of the items of ``body[key]`` (``Resumed``): ``HttpRequest.content`` splices it in.

    ``private``: the client sends the body with no hook on the call (``AutoLLMClient._open``): the body and the
    items it holds are seen by the library alone (never by a hook, never returned as ``plan`` returns its
    request).  The items are compared with their snapshots when the body is encoded (a message changed since
    the call began may share an object with them); found unchanged there, the next call that starts from them
    (``resume``) does not compare them again: after the send only what they share with the messages can
    change, and a message changed since is seen by the check (``validate.CheckedMessages``), which then lets
    the kept items go."""

    __slots__ = ("key", "items", "snaps", "texts", "_seal", "_private")

    def __init__(self, key: str, out: Resumed) -> None:
        self.key = key
        self.items = out.items
        self.snaps = out.snaps
        self.texts = out.texts
        self._seal = out.seal if out.seal is not None else {}  # type: Dict[str, bool]
        self._private = False

    def private(self) -> None:
        """The body goes to its send through the library alone (see the class)."""
        self._private = True

    def content(self, body: Any) -> Optional[bytes]:
        """``body`` as compact UTF-8 JSON, the texts spliced in; None when ``body[key]`` is no longer the
        items they were made of (another list, an item changed or added since): then it is encoded whole."""
        items = self.items
        if type(body) is not dict or body.get(self.key) is not items or len(items) != len(self.texts) \
                or not self.snaps.matches(items) or not all(type(key) is str for key in body):
            return None
        if self._private:
            self._seal.setdefault("sent", True)  # (found unchanged as sent: the next call need not compare)
        texts = self.texts
        if None in texts:
            texts = [_compact(item) if text is None else text for item, text in zip(items, texts)]
        parts = []  # type: List[str]
        for key, value in body.items():
            parts.append("," if parts else "{")
            parts.append(_compact(key))
            if value is items:
                parts.append(":[")
                parts.append(",".join(texts))
                parts.append("]")
            else:
                parts.append(":")
                parts.append(_compact(value))
        parts.append("}" if parts else "{}")
        return "".join(parts).encode("utf-8")


def dumps(value: Any) -> str:
    """Compact JSON text, non-ASCII kept as is (CJK arguments stay readable)."""
    return _compact(value)


_DATA_URI = re.compile(r"^data:([^;,]*)((?:;[^;,]*)*),(.*)$", re.S)


def parse_data_uri(uri: str) -> Optional[Tuple[str, bytes]]:
    """``data:<mime>;base64,<payload>`` -> (mime, bytes); None when ``uri`` is not a data URI.

    A data URI that does not decode is a ConfigError (never a silent empty image).
    """
    if not uri.startswith("data:"):
        return None
    match = _DATA_URI.match(uri)
    if match is None:
        raise ConfigError("malformed data URI (expected data:<mime>;base64,<data>)")
    mime = match.group(1) or "application/octet-stream"
    params = match.group(2).split(";")
    payload = match.group(3)
    if "base64" in params:
        try:
            return mime, base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise ConfigError("data URI with invalid base64 payload ({} characters)".format(len(payload))) from None
    from urllib.parse import unquote_to_bytes

    return mime, unquote_to_bytes(payload)


_B64_URL_SAFE = str.maketrans("-_", "+/", " \t\r\n")


def answer_bytes(value: Any, client: str, what: str = "media") -> bytes:
    """The bytes of a base64 field in a server's answer (an image, speech): standard or URL-safe base64,
    padded or not (what protobuf JSON accepts), line breaks ignored.  Anything else (a character outside
    the alphabet, a length no base64 has, not a string) is a StreamProtocolError, never bytes quietly
    decoded from part of it."""
    if not isinstance(value, str):
        raise StreamProtocolError("{}: the answer's {} data is not a base64 string (got {})".format(
            client, what, type(value).__name__), client=client)
    text = value.translate(_B64_URL_SAFE)
    if len(text) % 4 == 1:
        text = "!"  # no base64 is one character past a group of four
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise StreamProtocolError("{}: the answer's {} data is not base64 ({} characters)".format(
            client, what, len(value)), client=client) from None


def answer_mime(value: Any, default: str = "application/octet-stream") -> str:
    """A MIME type a server's answer names: itself when it is a non-empty string, else ``default``."""
    return value if isinstance(value, str) and value else default


def media_type(mime_type: str) -> str:
    """``mime_type`` as the wires name it: ``image/jpg``, a common misspelling no registry has, is the
    ``image/jpeg`` it means (Claude refuses the other; Bedrock names the format ``jpeg``); any other as it is."""
    return "image/jpeg" if mime_type.lower() == "image/jpg" else mime_type


#: the image types of the OpenAI wires (OpenAI's "Image input requirements": PNG, JPEG, WebP, non-animated GIF),
#: checked at the hosts that run OpenAI's models (quirk ``image_subset``), and of Gemini's (PNG, JPEG, WebP, HEIC,
#: HEIF: its "supported image formats"; GIF is refused)
OPENAI_IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
GEMINI_IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif")
#: the Interactions API's: its image ``mime_type`` is an enum of eight (google-genai's ImageContentMimeType)
INTERACTIONS_IMAGE_TYPES = GEMINI_IMAGE_TYPES + ("image/gif", "image/bmp", "image/tiff")
_IMAGE_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WebP", "image/gif": "GIF",
                "image/heic": "HEIC", "image/heif": "HEIF", "image/bmp": "BMP", "image/tiff": "TIFF"}


def check_image_type(client: str, mime_type: str, accepted: Sequence[str], wire: str,
                     parameter: str = "inline_data") -> None:
    """An image (``image/*``) of a type the wire does not take is an UnsupportedParameterError before sending (the
    API's 400 otherwise); ``image/jpg`` is the ``image/jpeg`` it means, parameters (``;charset=``) are no part of
    the type.  Other media are the caller's business."""
    image = mime_type.lower().split(";", 1)[0].strip()
    if image.startswith("image/") and media_type(image) not in accepted:
        names = [_IMAGE_NAMES[kind] for kind in accepted]
        raise unsupported(client, parameter, "of type {} cannot be sent over {} (its images are {} or {})".format(
            mime_type, wire, ", ".join(names[:-1]), names[-1]))


#: how far into an image ``animated`` reads (its header and first frame's blocks: never the whole of a large image)
_ANIMATION_HEAD = 65536
_GIF_LOOPS = (b"NETSCAPE2.0", b"ANIMEXTS1.0")


def animated(data: Any) -> bool:
    """Whether image bytes are an animation, read from their first ``_ANIMATION_HEAD`` bytes alone (whatever type
    they are labelled): a GIF with a looping application extension (NETSCAPE2.0) or a second frame there, a WebP
    whose VP8X header sets the animation flag, a PNG with an ``acTL`` chunk before its image data (APNG)."""
    head = bytes(data[:_ANIMATION_HEAD])
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 13:
        at = 13 + (3 << ((head[10] & 7) + 1) if head[10] & 0x80 else 0)  # (after the global colour table)
        frames = 0
        while at < len(head):
            kind = head[at]
            if kind == 0x21 and at + 1 < len(head):  # an extension: its label, then sub-blocks
                if head[at + 1] == 0xFF and head[at + 3:at + 14] in _GIF_LOOPS:
                    return True
                at += 2
            elif kind == 0x2C and at + 9 < len(head):  # a frame: its descriptor, local colour table, LZW code size
                frames += 1
                if frames > 1:
                    return True
                packed = head[at + 9]
                at += 10 + (3 << ((packed & 7) + 1) if packed & 0x80 else 0) + 1
            else:  # the trailer, or bytes that are no block
                return False
            while at < len(head) and head[at]:  # sub-blocks, each its length then its bytes
                at += head[at] + 1
            at += 1
        return False
    if head[:4] == b"RIFF" and head[8:16] == b"WEBPVP8X" and len(head) > 20:
        return bool(head[20] & 0x02)
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        at = 8
        while at + 8 <= len(head):
            kind = head[at + 4:at + 8]
            if kind == b"acTL":
                return True
            if kind == b"IDAT":
                return False
            at += 12 + int.from_bytes(head[at:at + 4], "big")
    return False


def check_still(client: str, mime_type: str, data: Any, wire: str, refused: bool = False,
                parameter: str = "inline_data") -> None:
    """An animated image (``animated``) where the wire takes still images: ``refused`` (OpenAI's hosts: its image
    input is "PNG, JPEG, WEBP, non-animated GIF") an UnsupportedParameterError before sending, as an image type the
    host does not take is; elsewhere a warning (logger ``agenthub``): the model is given one picture of it, not the
    motion, and no error says so."""
    if not mime_type.lower().startswith("image/") or not animated(data):
        return
    if refused:
        raise unsupported(client, parameter, "is an animated image ({}): {} takes still images only (send a frame, "
                                             "or the frames one image each)".format(mime_type, wire))
    _LOGGER.warning("%s: an animated image (%s) is sent to %s, which reads still images: the model may see one "
                    "frame of it only (send the frames one image each to show the motion)", client, mime_type, wire)


def data_uri(mime_type: str, data: bytes) -> str:
    return "data:{};base64,{}".format(media_type(mime_type), base64.b64encode(data).decode("ascii"))


def visible_text(text: str) -> bool:
    """A text block Claude's wires take (Anthropic, Bedrock): not empty nor white space alone (the API's 400:
    "text content blocks must contain non-whitespace text"; an answer may be "\n\n" before a tool call, another
    wire's a lone newline).  Such a text item is not sent, as an empty one is not."""
    return bool(text) and not text.isspace()


def something_to_send(client: str, turns: List[Any]) -> List[Any]:
    """``turns``, the request's messages as the wire has them, when there is one; a ConfigError before sending when
    the messages held nothing the wire takes (empty or white-space texts only: the API's 400 otherwise)."""
    if not turns:
        raise ConfigError("{}: the messages hold nothing this wire takes (every text in them is empty, or white "
                          "space alone on Claude's wires, which it leaves out): nothing was sent".format(client))
    return turns




# -- compaction (OpenAI Responses, Anthropic) -----------------------------------------------------

#: fidelity key of a compaction item: which wire format holds it ("openai" or "anthropic")
COMPACTION_FORMAT = "format"


def after_compaction(messages: List[Mapping[str, Any]], wire_format: str) -> List[Mapping[str, Any]]:
    """``messages`` from the latest compaction item of ``wire_format`` on: the assistant message holding it
    keeps that item and what follows it, every later message is kept, every earlier one is left out (the
    compaction stands for them).  Unchanged when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] != "assistant":
            continue
        items = message["content_items"]
        for position in range(len(items) - 1, -1, -1):
            item = items[position]
            if item["type"] == "compaction" and (item.get("fidelity") or {}).get(COMPACTION_FORMAT) == wire_format:
                kept = dict(message)
                kept["content_items"] = list(items[position:])
                return [kept] + list(messages[index + 1:])
    return messages


_LOGGER = noting(logging.getLogger("agenthub"))

#: assistant items no wire replays (another protocol's media, Gemini's inline thinking): left out with a warning
UNREPLAYED = ("inline_data", "image_url", "inline_thinking")


def left_out(kind: str, wire: str, role: str = "assistant") -> None:
    """The tail of every message mapping: an item ``wire`` has no place for.  An assistant's media and
    inline thinking are left out with a warning; any other kind raises ConfigError (validate.check_message
    keeps such items out, so that is unreachable from the client)."""
    if role == "assistant" and kind in UNREPLAYED:
        _LOGGER.warning("an assistant %s item cannot be replayed over %s; it is left out", kind, wire)
        return
    raise ConfigError("a {} item cannot be sent in {} {} message".format(kind, "an" if role == "assistant" else "a", role))


def unsupported(client: str, parameter: str, why: str) -> UnsupportedParameterError:
    return UnsupportedParameterError("{}: {} {}".format(client, parameter, why), client=client, parameter=parameter)


def refuse_mcp_servers(client: str, config: Mapping[str, Any]) -> None:
    """``config["mcp_servers"]`` on a protocol whose provider does not connect to MCP servers itself: refused."""
    if config.get("mcp_servers"):
        raise unsupported(client, "mcp_servers", "cannot be sent over this protocol: a provider connects to MCP "
                                                 "servers itself only over OpenAI Responses and the Anthropic "
                                                 "Messages API (elsewhere, connect to the server yourself and pass "
                                                 "its tools)")



def usage(cached: Optional[int], prompt: Optional[int], thoughts: Optional[int], response: Optional[int]) -> Dict[str, Optional[int]]:
    """The four buckets, each a non-negative int, None, or NaN for a count that is none (``_count``)."""
    return {
        "cached_tokens": _count(cached),
        "prompt_tokens": _count(prompt),
        "thoughts_tokens": _count(thoughts),
        "response_tokens": _count(response),
    }


def inclusive_usage(prompt: Any, output: Any, cached: Any, thoughts: Any, total: Any = None) -> Dict[str, Optional[int]]:
    """OpenAI-style counts (prompt includes cached, output includes reasoning) -> the buckets.

    Where ``total == prompt + output + thoughts`` the server's output count already
    excluded reasoning (xAI, some gateways): it is the response count as sent.  A bucket that
    would be negative (more cached than prompt tokens) is no count either (NaN: the usage is unknown).
    """
    prompt, output, cached, thoughts, total = (_count(v) for v in (prompt, output, cached, thoughts, total))
    response = output
    if output is not None and thoughts:
        excludes = total is not None and prompt is not None and total == prompt + output + thoughts
        if not excludes and output >= thoughts:
            response = output - thoughts
    return usage(cached, None if prompt is None else _count(prompt - (cached or 0)), thoughts, response)


#: what a count the server sent that is no token count (negative, a string, a bool, a fraction) becomes: NaN stays
#: NaN through the usage arithmetic, so the bucket it reaches is refused by the stream driver (``checked_usage``:
#: the whole usage unknown, with a warning) instead of being read as 0 or as absent (an answer priced as free)
_NOT_A_COUNT = float("nan")


def _count(value: Any) -> Any:
    """A server's count as the usage arithmetic takes it: an int, None (absent), or ``_NOT_A_COUNT``."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return _NOT_A_COUNT
    return value


def to_int(value: Any) -> Any:
    """``_count``: an int, None, or ``_NOT_A_COUNT``."""
    return _count(value)




def embedding_vector(value: Any, client: str, width: Optional[int] = None) -> List[float]:
    """An embedding answer's vector as the data model holds it: a non-empty list of finite floats (a JSON
    integer becomes its float), ``width`` long when given (the answer's other vectors); anything else a
    server sends (null, a string or list inside, NaN / Infinity, a number no float holds, vectors of
    different lengths) is a StreamProtocolError, never a vector handed on."""
    if not isinstance(value, list) or not value:
        raise StreamProtocolError("{}: the embeddings answer holds a vector that is not a non-empty list of "
                                  "numbers".format(client), client=client)
    if set(map(type, value)) == {float} and all(map(math.isfinite, value)):  # the usual answer, at C speed
        out = value  # type: List[float]
        value = ()
    else:
        out = []
    for number in value:
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise StreamProtocolError("{}: the embeddings answer holds a vector with a {} in it (numbers only)".format(
                client, type(number).__name__), client=client)
        try:
            number = float(number)
        except OverflowError:
            number = float("inf")
        if number != number or number in (float("inf"), float("-inf")):
            raise StreamProtocolError("{}: the embeddings answer holds a vector with a value that is no finite "
                                      "number (NaN, Infinity or too large)".format(client), client=client)
        out.append(number)
    if width is not None and len(out) != width:
        raise StreamProtocolError("{}: the embeddings answer holds vectors of different lengths ({} and {})".format(
            client, width, len(out)), client=client)
    return out


def nearest(wanted: str, supported: Sequence[str], order: Sequence[str], cheaper_on_tie: bool = False) -> str:
    """The value of ``supported`` nearest to ``wanted`` along ``order`` (itself when supported).

    Thinking levels are clamped with this everywhere, so a level never raises.  A tie
    goes to the heavier level unless ``cheaper_on_tie``.
    """
    if wanted in supported or not supported:
        return wanted
    rank = {value: i for i, value in enumerate(order)}
    want = rank.get(wanted, len(order) // 2)
    sign = 1 if cheaper_on_tie else -1
    return min(supported, key=lambda value: (abs(rank.get(value, want) - want), sign * rank.get(value, want)))


def request_headers(endpoint: Endpoint, accept: str = "text/event-stream", **extra: str) -> Dict[str, str]:
    """JSON request headers; the caller's ``default_headers`` (endpoint.headers) come last and win.
    No credential: the host adds it per attempt (``agenthub.hosts``)."""
    headers = {"Content-Type": "application/json", "Accept": accept}
    headers.update(extra)
    headers.update(endpoint.headers)
    return headers


# -- agenthub's config additions shared by every protocol -------------------------------------------


def deep_merge(base: Dict[str, Any], extra: Mapping[str, Any]) -> Dict[str, Any]:
    """``base`` with ``extra`` merged in (a new dict; ``base`` is not modified): a dict meets a dict
    key by key, any other value replaces what was there, and None removes the key."""
    out = dict(base)
    for key, value in extra.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(dict(out[key]), value)
        else:
            out[key] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def apply_extras(request: Any, config: Mapping[str, Any]) -> Any:
    """The planned request with ``config["extra_body"]`` deep-merged into its JSON body (last, so it
    can reach nested objects such as Gemini's ``generationConfig``) and ``config["extra_headers"]``
    set on it (a header of the same name, in any case, is replaced).  Called once per call by the
    client, right after ``build_request``; the request is returned unchanged when neither is given."""
    extra_body = config.get("extra_body")
    extra_headers = config.get("extra_headers")
    if not extra_body and not extra_headers:
        return request
    changes = {}  # type: Dict[str, Any]
    if extra_body:
        changes["body"] = deep_merge(dict(request.body or {}), extra_body)
        secrets = named_secrets(extra_body)  # ({"api_key": ...}: scrubbed from errors and recordings)
        if secrets:
            changes["secrets"] = tuple(sorted(set(request.secrets) | set(secrets), key=len, reverse=True))
    if extra_headers:
        headers = {k: v for k, v in dict(request.headers).items()
                   if k.lower() not in {name.lower() for name in extra_headers}}
        headers.update(extra_headers)
        changes["headers"] = headers
    return dataclasses.replace(request, **changes)


def check_response_format(client: str, config: Mapping[str, Any], served: Optional[Sequence[str]],
                          accepted: Sequence[str] = ("text", "json_object", "json_schema")) -> Optional[Dict[str, Any]]:
    """The caller's response_format (None for none or ``text``), after checking that the protocol
    (``accepted``) and the endpoint (``served``: the registry quirk ``response_formats``, the types its
    server honours; None: all the protocol has) take it."""
    wanted = config.get("response_format")
    if not wanted:
        return None
    kind = wanted["type"]
    if kind != "text" and (kind not in accepted or (served is not None and kind not in served)):
        where = "this server" if kind in accepted else "this protocol"
        raise unsupported(client, "response_format", "of type {!r} is not available on {}{}".format(
            kind, where, " (it takes: {})".format(", ".join(served)) if served is not None and kind in accepted else ""))
    return None if kind == "text" else wanted


def stop_sequences(client: str, config: Mapping[str, Any], limit: Optional[int]) -> Optional[List[str]]:
    """config["stop"] (a list, or one string) checked against the protocol's limit."""
    stop = config.get("stop")
    if not stop:
        return None
    if isinstance(stop, str):
        stop = [stop]
    if limit is not None and len(stop) > limit:
        raise unsupported(client, "stop", "takes at most {} sequences here (got {})".format(limit, len(stop)))
    return list(stop)


def samplers(client: str, config: Mapping[str, Any], fields: Mapping[str, Optional[str]],
             stop_limit: Optional[int] = None, why: str = "has no field on this wire") -> Dict[str, Any]:
    """The sampler keys of ``config`` (max_tokens, temperature, top_p, stop, seed) as a wire's fields,
    in the table's order: ``fields`` maps a config key to the wire's name for it; a key mapped to None
    is one the wire cannot carry (UnsupportedParameterError, ``why``, when it is set); a key the table
    leaves out is the caller's own business.  ``stop`` is checked against ``stop_limit``."""
    out = {}  # type: Dict[str, Any]
    for key, name in fields.items():
        if key not in config:
            continue
        if name is None:
            raise unsupported(client, key, why)
        value = stop_sequences(client, config, stop_limit) if key == "stop" else config[key]
        if value is not None:
            out[name] = value
    return out


def get_request(endpoint: Endpoint, path: str, **extra: str) -> HttpRequest:
    """A GET of ``path`` that answers one JSON document (model lists), with the endpoint's headers."""
    headers = request_headers(endpoint, "application/json", **extra)
    headers.pop("Content-Type", None)  # no body
    return HttpRequest("GET", path, headers, None, stream=False)


def parse_data_list(payload: Any, client: str) -> Tuple[List[str], Optional[str]]:
    """``{"data": [{"id": ...}], "has_more": bool, "last_id": ...}`` (OpenAI's and Anthropic's model
    lists) -> (ids in the server's order, the next page's token: the last id while ``has_more``)."""
    ids = model_list_page(payload, client)
    more = isinstance(payload, dict) and payload.get("has_more") is True and ids
    if not more:
        return ids, None
    last = payload.get("last_id")
    if last is not None and not isinstance(last, str):
        raise StreamProtocolError("{}: the model list's last_id is not an id (got a {})".format(
            client, type(last).__name__), client=client)
    return ids, last or ids[-1]


def openai_models_request(endpoint: "Endpoint", page_token: Optional[str] = None) -> HttpRequest:
    """``GET /models`` (OpenAI answers every model at once; a server that pages says
    ``has_more`` and the next page starts ``after`` the last id)."""
    from urllib.parse import quote

    path = "/models"
    if page_token:
        path += "?after=" + quote(page_token, safe="")
    return get_request(endpoint, path)


def model_list_page(payload: Any, client: str, items: str = "data", key: str = "id",
                    prefix: str = "") -> List[str]:
    """The model ids of one page of a model list: ``payload[items]``, a list of objects with ``key``
    (``prefix`` removed).  A page of another shape is a StreamProtocolError, never a silent []."""
    rows = payload.get(items) if isinstance(payload, dict) else None
    if payload == {}:
        rows = []  # an empty list, as protobuf JSON writes it (Gemini leaves empty fields out)
    if not isinstance(rows, list):
        raise StreamProtocolError("{}: the model list has no {!r} list".format(client, items), client=client)
    ids = []  # type: List[str]
    for row in rows:
        value = row.get(key) if isinstance(row, dict) else None
        if not isinstance(value, str) or not value:
            raise StreamProtocolError("{}: a model list entry has no {!r}".format(client, key), client=client)
        ids.append(value[len(prefix):] if prefix and value.startswith(prefix) else value)
    return ids
