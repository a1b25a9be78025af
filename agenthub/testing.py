"""Record real calls once, replay them offline in your tests: no key, no network.

::

    from agenthub import AutoLLMClient
    from agenthub.testing import record_session, replay_session

    # once, with a key: every exchange is written to tests/cassettes/weather/
    client = AutoLLMClient("gpt-5.5", session=record_session("tests/cassettes/weather"))

    # in the test suite: the same exchanges answered from the files, through the real
    # transport, SSE framing, parser and tool-call machine
    session = replay_session("tests/cassettes/weather")
    client = AutoLLMClient("gpt-5.5", api_key="unused", session=session)
    ...
    session.cassette.assert_all_played()

A cassette is a folder of numbered exchanges: ``001.json`` holds the request (method, URL without
secret query parameters, JSON body) and the response status and the headers agenthub reads (content
type, retry advice, error type, request id, rate limits); ``001.sse`` (or ``001.body.json`` /
``001.body``) holds the raw response bytes exactly as the reader consumed them (up to where it
stopped reading: its terminal marker, or an early ``break``, which then replays as the same cut; a
connection that broke or timed out there is noted as the response's ``read_error`` and replays as
the same TransportError after the same bytes, so a retry the live call made is made again). No
header of the request is kept, and the values of its credential headers (and the MCP credentials of
its body, and what the caller's ``extra_body`` holds under fields named like a credential, ``{"api_key":
...}``: ``agenthub._redact.is_secret_name``) are scrubbed from everything written, also where the response quotes them in a JSON
string's escapes. Each exchange takes the first number free in the folder, so several recorders
(threads, processes) writing into one folder keep every exchange; ``record_session`` makes or
empties the folder when it starts (a ConfigError when it cannot). A numbered ``.json`` that is not a
whole recording (cut short, another format, a field of the wrong type, its body file missing) is a
CassetteError naming it.

Replay matching: each request is answered by the first unplayed exchange with the same method, URL
and JSON body (compared as JSON: key order, escapes and ``1`` against ``1.0`` do not count, ``true``
against ``1`` does; the request's credentials are scrubbed as recording scrubbed them, so a recorded
``***`` matches). Keys named ``id`` or ending in ``_id`` are not compared (tool-call ids may be
generated afresh on every run); pass ``match_body=False`` to compare method and URL only. A request
no exchange matches raises ReplayMismatchError, naming the request and what differed.
"""

import errno
import json
import os
import re
import stat
import struct
import threading
import zlib
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .answers import _REQUEST_ID_HEADERS, _RETRY_AFTER_HEADERS, _RETRY_AFTER_MS_HEADERS
from .errors import AgentHubError
from ._jsondepth import loads as _json_loads

__all__ = [
    "Cassette",
    "Interaction",
    "ReplayMismatchError",
    "CassetteError",
    "replay_session",
    "record_session",
    "cassette_session",
    "RECORD_ENV",
]

#: ``cassette_session`` records when this environment variable is "1" (and replays otherwise)
RECORD_ENV = "AGENTHUB_RECORD"
#: query parameters whose values are credentials: dropped from recorded and compared URLs
_SECRET_QUERY = re.compile(r"(key|token|secret|sig|signature|auth|password|credential)", re.I)
#: response headers worth keeping: the ones agenthub.answers reads (an error's type, retry delay, retry advice and
#: request id, a gateway's ``llm_provider-`` copies too), and every rate-limit header (what a RateLimiter paces
#: by); the body is stored decoded: no content-encoding or length
_KEPT_HEADERS = ("content-type", "x-should-retry", "x-amzn-errortype") + _RETRY_AFTER_MS_HEADERS \
    + _RETRY_AFTER_HEADERS + _REQUEST_ID_HEADERS
_META = re.compile(r"^(\d{3,})\.json$")
#: the content type of AWS's binary event stream (Bedrock): length-prefixed frames with CRCs
_EVENTSTREAM = "application/vnd.amazon.eventstream"
_FORMAT = 1


class ReplayMismatchError(AgentHubError, AssertionError):
    """A replayed request that no recorded exchange matches (pytest shows it as a failed assertion)."""


class CassetteError(AgentHubError, ValueError):
    """A cassette file that cannot be read as a recording (truncated, not JSON, a field of the wrong type,
    its body file missing); the message names the file."""


class Interaction(object):
    """One recorded exchange.  ``request`` None answers any request (a scripted reply).  ``read_error``: how
    reading the body failed after ``body`` (a broken connection, a timeout: replayed as that failure, after
    those bytes), None when it ended."""

    __slots__ = ("request", "status", "headers", "body", "name", "read_error")

    def __init__(self, request: Optional[Mapping[str, Any]], status: int = 200,
                 headers: Optional[Mapping[str, str]] = None, body: bytes = b"", name: str = "",
                 read_error: Optional[Mapping[str, Any]] = None) -> None:
        self.request = dict(request) if request is not None else None
        self.status = status
        # (None: a scripted SSE reply; a recorded answer that came without a Content-Type keeps none)
        self.headers = dict(headers) if headers is not None else {"Content-Type": "text/event-stream"}
        self.body = bytes(body)
        self.name = name
        self.read_error = dict(read_error) if read_error is not None else None

    def __repr__(self) -> str:
        where = "{} {}".format(self.request.get("method"), self.request.get("url")) if self.request else "any request"
        return "Interaction({}: {} -> {}, {} bytes)".format(self.name or "?", where, self.status, len(self.body))


class Cassette(object):
    """Recorded exchanges, in order; thread-safe.

    ``Cassette(folder)`` loads the exchanges stored there (none when the folder is
    absent); ``Cassette(interactions=[...])`` holds them in memory only.
    """

    def __init__(self, folder: Optional[str] = None, interactions: Optional[Sequence[Interaction]] = None,
                 match_body: bool = True) -> None:
        self.folder = folder
        self.match_body = match_body
        self.interactions = list(interactions) if interactions is not None else (
            _load(folder) if folder else [])  # type: List[Interaction]
        self._played = set()  # indexes into interactions (which callers may append to)
        self._requests = 0
        #: every request asked of the replay, in order: {"method", "url", "body"} (assert on what was sent)
        self.requests = []  # type: List[Dict[str, Any]]
        self._lock = threading.Lock()

    # -- replay -------------------------------------------------------------------------------------
    def play(self, method: str, url: str, body: Any, secrets: Sequence[str] = ()
             ) -> Tuple[int, Dict[str, str], bytes, Optional[Dict[str, Any]]]:
        """The recorded answer to this request, ``(status, headers, body, read_error)``; ReplayMismatchError when
        none matches.  ``secrets``: the request's credential values, scrubbed from it as recording scrubs them
        before it is compared (a recorded ``***`` matches whatever credential the replaying request carries)."""
        sent = _json_body(body)
        secrets = _longest_first(secrets)
        wanted = {"method": method.upper(), "url": _scrub_text(clean_url(url), secrets),
                  "body": _scrub_json(sent, secrets)}
        with self._lock:
            self.requests.append({"method": wanted["method"], "url": clean_url(url), "body": sent})
            self._requests += 1
            number = self._requests
            first_unplayed = None
            for i, interaction in enumerate(self.interactions):
                if i in self._played:
                    continue
                if first_unplayed is None:
                    first_unplayed = i
                if interaction.request is None or self._difference(interaction.request, wanted) is None:
                    self._played.add(i)
                    return (interaction.status, dict(interaction.headers), interaction.body,
                            dict(interaction.read_error) if interaction.read_error is not None else None)
            raise ReplayMismatchError(self._mismatch(number, wanted, first_unplayed))

    def _difference(self, recorded: Mapping[str, Any], wanted: Mapping[str, Any]) -> Optional[str]:
        if str(recorded.get("method", "")).upper() != wanted["method"]:
            return "method {} != recorded {}".format(wanted["method"], recorded.get("method"))
        if recorded.get("url") != wanted["url"]:
            return "URL {} != recorded {}".format(wanted["url"], recorded.get("url"))
        if self.match_body:
            return _diff(_comparable(recorded.get("body")), _comparable(wanted["body"]), "body")
        return None

    def _mismatch(self, number: int, wanted: Mapping[str, Any], candidate: Optional[int]) -> str:
        where = self.folder or "memory"
        head = "replay: request #{} ({} {}) matches no recorded exchange in {}".format(
            number, wanted["method"], wanted["url"], where)
        if candidate is None:
            return "{}: all {} recorded exchanges were already played".format(head, len(self.interactions))
        interaction = self.interactions[candidate]
        why = self._difference(interaction.request or {}, wanted)
        return "{}; the next unplayed one ({}) differs: {}".format(head, interaction.name or candidate + 1, why)

    def unplayed(self) -> List[Interaction]:
        with self._lock:
            return [x for i, x in enumerate(self.interactions) if i not in self._played]

    def assert_all_played(self) -> None:
        """Raise ReplayMismatchError when a recorded exchange was never asked for."""
        left = self.unplayed()
        if left:
            raise ReplayMismatchError("replay: {} recorded exchange(s) in {} were never requested: {}".format(
                len(left), self.folder or "memory", ", ".join(x.name or "?" for x in left)))

    # -- recording ----------------------------------------------------------------------------------
    def record(self, method: str, url: str, body: Any, status: int, headers: Mapping[str, str], data: bytes,
               secrets: Sequence[str] = (), read_error: Optional[Mapping[str, Any]] = None) -> Interaction:
        """Keep one exchange (and write it when the cassette has a folder); ``read_error``: how reading its
        body failed after ``data`` (transport.read_failure), None when it ended."""
        secrets = _longest_first(secrets)
        request = {"method": method.upper(), "url": _scrub_text(clean_url(url), secrets),
                   "body": _scrub_json(_json_body(body), secrets)}
        kept = {}
        for name, value in headers.items():
            if _kept_header(name):
                kept[name] = _scrub_text(str(value), secrets)
        forms = [form.encode("utf-8", "surrogatepass") for form in _escaped_forms(secrets)]
        if any(value.lower().startswith(_EVENTSTREAM) for key, value in kept.items() if key.lower() == "content-type"):
            data = _scrub_frames(data, forms)  # (binary frames: each scrubbed inside, its lengths and CRCs made anew)
        else:
            data = _scrub_bytes(data, forms)
        with self._lock:
            number = len(self.interactions) + 1
            if self.folder:  # the first number free on disk (another recorder may write into this folder too)
                number = _claim(self.folder, number)
            interaction = Interaction(request, status, kept, data, "{:03d}".format(number),
                                      _scrub_json(dict(read_error), secrets) if read_error is not None else None)
            self.interactions.append(interaction)
            self._played.add(len(self.interactions) - 1)  # recorded now: not waiting to be replayed
            if self.folder:
                _save(self.folder, interaction)
        return interaction


# -- files ------------------------------------------------------------------------------------------


def _kept_header(name: str) -> bool:
    lower = name.lower()
    bare = lower[len("llm_provider-"):] if lower.startswith("llm_provider-") else lower
    return bare in _KEPT_HEADERS or "ratelimit" in lower


def _body_file(name: str, headers: Mapping[str, str]) -> str:
    kind = ""
    for key, value in headers.items():
        if key.lower() == "content-type":
            kind = value.lower()
    if "event-stream" in kind:
        return name + ".sse"
    if "json" in kind:
        return name + ".body.json"
    return name + ".body"


def _claim(folder: str, number: int) -> int:
    """``number`` or the first one after it whose ``NNN.json`` did not exist, now created empty (exclusively:
    two processes recording into one folder never take the same number and overwrite each other's exchange)."""
    os.makedirs(folder, exist_ok=True)
    while True:
        try:
            os.close(os.open(os.path.join(folder, "{:03d}.json".format(number)), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                             0o644))
            return number
        except FileExistsError:
            number += 1


def _save(folder: str, interaction: Interaction) -> None:
    os.makedirs(folder, exist_ok=True)
    body_file = _body_file(interaction.name, interaction.headers)
    with open(os.path.join(folder, body_file), "wb") as handle:
        handle.write(interaction.body)
    meta = {
        "agenthub_recording": _FORMAT,
        "request": interaction.request,
        "response": {"status": interaction.status, "headers": interaction.headers, "body_file": body_file},
    }
    if interaction.read_error is not None:  # reading failed after the body's bytes: replayed as that failure
        meta["response"]["read_error"] = interaction.read_error
    path = os.path.join(folder, interaction.name + ".json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(meta, handle, ensure_ascii=False, indent=2, sort_keys=False)
        handle.write("\n")
    os.replace(path + ".tmp", path)


def _load(folder: str) -> List[Interaction]:
    if not os.path.isdir(folder):
        return []
    out = []
    for name in sorted(os.listdir(folder), key=lambda n: (len(n), n)):
        match = _META.match(name)
        if match:
            out.append(_load_one(folder, name, match.group(1)))
    return out


def _load_one(folder: str, name: str, number: str) -> Interaction:
    """The exchange ``name`` (``NNN.json``) describes, with its body; CassetteError naming the file when it is
    not one agenthub wrote whole."""
    path = os.path.join(folder, name)

    def bad(why: str) -> CassetteError:
        return CassetteError("replay: {} is not a readable agenthub recording: {}".format(path, why))

    try:
        _regular(path)
        with open(path, "rb") as handle:
            meta = _json_loads(handle.read().decode("utf-8"))
    except OSError as exc:
        raise bad("it cannot be read ({})".format(exc.strerror or type(exc).__name__)) from None
    except (ValueError, RecursionError) as exc:  # (not UTF-8, not JSON, cut short, nested past the parser's depth)
        raise bad("it is not whole JSON ({})".format(type(exc).__name__)) from None
    if not isinstance(meta, dict) or "agenthub_recording" not in meta:
        raise bad("no agenthub_recording format")
    if meta["agenthub_recording"] != _FORMAT:
        raise bad("format {} (this agenthub reads format {}: record it again)".format(
            _short(meta["agenthub_recording"]), _FORMAT))
    request, response = meta.get("request"), meta.get("response")
    if not isinstance(request, dict) or not isinstance(request.get("method"), str) \
            or not isinstance(request.get("url"), str):
        raise bad("its request is not {method, url, body} with method and URL strings")
    if not isinstance(response, dict):
        raise bad("its response is not an object")
    status, headers, body_file = response.get("status", 200), response.get("headers"), response.get("body_file")
    read_error = response.get("read_error")
    if read_error is not None and not isinstance(read_error, dict):
        raise bad("its response read_error is not an object")
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        raise bad("its response status is {} (an HTTP status 100-599 is needed)".format(_short(status)))
    if headers is not None and (not isinstance(headers, dict)
                                or not all(isinstance(v, str) for v in headers.values())):
        raise bad("its response headers are not an object of strings")
    if not isinstance(body_file, str) or not body_file or os.path.basename(body_file) != body_file \
            or body_file in (".", ".."):
        raise bad("its response body_file is {} (a file name in the cassette's folder is needed)".format(
            _short(body_file)))
    try:
        _regular(os.path.join(folder, body_file))
        with open(os.path.join(folder, body_file), "rb") as handle:
            body = handle.read()
    except OSError as exc:
        raise bad("its body file {} cannot be read ({})".format(body_file, exc.strerror or type(exc).__name__)) \
            from None
    return Interaction(request, status, headers, body, number, read_error)


def _regular(path: str) -> None:
    """OSError unless ``path`` is a regular file (a FIFO would block the read forever, a device never end it)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(errno.EINVAL, "not a regular file")


def clear(folder: str) -> None:
    """Remove the exchanges recorded in ``folder`` (only the files this module writes)."""
    if not os.path.isdir(folder):
        return
    for name in os.listdir(folder):
        stem = name.split(".", 1)[0]
        if stem.isdigit() and len(stem) >= 3 and name[len(stem):] in (".json", ".sse", ".body.json", ".body"):
            os.remove(os.path.join(folder, name))


# -- matching helpers ---------------------------------------------------------------------------------


def clean_url(url: str) -> str:
    """``url`` without query parameters that carry credentials (``key=``, ``token=``, ...)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _SECRET_QUERY.search(k)]
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, urlencode(query), ""))


def _json_body(body: Any) -> Any:
    if body is None:
        return None
    if isinstance(body, (bytes, bytearray)):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return {"__bytes__": len(body)}
    if isinstance(body, str):
        try:
            return _json_loads(body)
        except ValueError:
            return body
    return body


def _comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if not (k == "id" or k.endswith("_id"))}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _json_type(value: Any) -> type:
    """The JSON type of ``value``: one number type (JSON has one: 1 and 1.0 are the same number), bool apart."""
    return float if type(value) is int else type(value)


def _diff(recorded: Any, wanted: Any, path: str) -> Optional[str]:
    """Where two JSON values first differ, as ``path: got X, recorded Y`` (None when equal)."""
    if isinstance(recorded, dict) and isinstance(wanted, dict):
        for key in list(recorded) + [k for k in wanted if k not in recorded]:
            if key not in wanted:
                return "{}.{} is missing (recorded {})".format(path, key, _short(recorded[key]))
            if key not in recorded:
                return "{}.{} is new ({})".format(path, key, _short(wanted[key]))
            found = _diff(recorded[key], wanted[key], "{}.{}".format(path, key))
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(wanted, list):
        for i, (a, b) in enumerate(zip(recorded, wanted)):
            found = _diff(a, b, "{}[{}]".format(path, i))
            if found:
                return found
        if len(recorded) != len(wanted):
            return "{} has {} items (recorded {})".format(path, len(wanted), len(recorded))
        return None
    if recorded != wanted or _json_type(recorded) is not _json_type(wanted):
        return "{}: {} (recorded {})".format(path, _short(wanted), _short(recorded))
    return None


def _longest_first(secrets: Sequence[str]) -> List[str]:
    """The credential values worth scrubbing (the long enough strings), longest first."""
    return sorted({s for s in secrets if isinstance(s, str) and len(s) >= 8}, key=len, reverse=True)


def _escaped_forms(secrets: Sequence[str]) -> List[str]:
    """Each secret as it may appear in a raw body: as is, and as a JSON string holds it (escaped quotes and
    backslashes, ``\\/`` for ``/``, ``\\uXXXX`` for what is not ASCII); longest first."""
    forms = set()
    for secret in secrets:
        for text in (secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]):
            forms.update((text, text.replace("/", "\\/")))
    return sorted(forms, key=len, reverse=True)


def _scrub_bytes(data: bytes, forms: Sequence[bytes]) -> bytes:
    for form in forms:
        data = data.replace(form, b"***")
    return data


def _scrub_frames(data: bytes, forms: Sequence[bytes]) -> bytes:
    """An AWS event stream with every secret in a frame's payload and string headers as ``***``: a frame that
    holds one is written anew (its lengths and CRCs computed again), so the replay reads whole frames still.
    What follows the last whole frame (a cut) is scrubbed as bytes."""
    out, pos = [], 0
    while len(data) - pos >= 16:
        total, headers_length = struct.unpack(">II", data[pos:pos + 8])
        if total < 16 or headers_length > total - 16 or pos + total > len(data):
            break
        frame = data[pos:pos + total]
        pos += total
        if not any(form in frame for form in forms):
            out.append(frame)
            continue
        headers = _scrub_frame_headers(frame[12:12 + headers_length], forms)
        payload = _scrub_bytes(frame[12 + headers_length:total - 4], forms)
        prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
        prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
        body = prelude + headers + payload
        out.append(body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF))
    out.append(_scrub_bytes(data[pos:], forms))
    return b"".join(out)


#: the sizes of an event-stream header value by type (None: a 2-byte length, then that many bytes)
_HEADER_SIZES = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 6: None, 7: None, 8: 8, 9: 16}


def _scrub_frame_headers(raw: bytes, forms: Sequence[bytes]) -> bytes:
    """A frame's header block with secrets in its byte and string values as ``***`` (as it was when it holds
    none, or cannot be read)."""
    if not any(form in raw for form in forms):
        return raw
    out, pos = [], 0
    try:
        while pos < len(raw):
            end = pos + 1 + raw[pos]
            kind = raw[end]
            size = _HEADER_SIZES[kind]
            if size is None:
                length = struct.unpack(">H", raw[end + 1:end + 3])[0]
                value = _scrub_bytes(raw[end + 3:end + 3 + length], forms)
                if end + 3 + length > len(raw) or len(value) > 0xFFFF:
                    return raw
                out.append(raw[pos:end + 1] + struct.pack(">H", len(value)) + value)
                pos = end + 3 + length
            else:
                if end + 1 + size > len(raw):
                    return raw
                out.append(raw[pos:end + 1 + size])
                pos = end + 1 + size
    except (IndexError, KeyError, struct.error):
        return raw
    return b"".join(out)


def _scrub_text(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _scrub_json(value: Any, secrets: Sequence[str]) -> Any:
    if not secrets:
        return value
    if isinstance(value, str):
        return _scrub_text(value, secrets)
    if isinstance(value, dict):
        return {k: _scrub_json(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_json(v, secrets) for v in value]
    return value


# -- sessions -----------------------------------------------------------------------------------------


def replay_session(folder_or_cassette: Any, match_body: Optional[bool] = None, chunk_size: Optional[int] = None) -> Any:
    """A requests.Session answering every request from a cassette; pass it as ``AutoLLMClient(session=...)``.

    ``session.cassette`` is the Cassette (``assert_all_played()``).  ``match_body``: compare
    bodies (default: yes; given with a Cassette, it sets the Cassette's).  ``chunk_size``
    serves the recorded bytes in pieces of that size (default 64 KiB; a ConfigError unless a
    whole number >= 1).  A folder that holds no exchange is a ReplayMismatchError at once
    (record it first).
    """
    from . import transport
    from .errors import ConfigError

    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1):
        raise ConfigError("replay_session: chunk_size must be a whole number of bytes >= 1 (or None), not {!r}".format(
            chunk_size))
    if match_body is not None and not isinstance(match_body, bool):
        raise ConfigError("replay_session: match_body must be True or False, not {!r}".format(match_body))
    if isinstance(folder_or_cassette, Cassette):
        cassette = folder_or_cassette
        if match_body is not None:
            cassette.match_body = match_body
    else:
        cassette = Cassette(str(folder_or_cassette), match_body=True if match_body is None else match_body)
        if not cassette.interactions:
            raise ReplayMismatchError("replay: no recorded exchange in {} (record it first: {}=1)".format(
                folder_or_cassette, RECORD_ENV))
    session = transport.replay_session(cassette, chunk_size)
    session.cassette = cassette
    return session


def record_session(folder: str, session: Any = None) -> Any:
    """A requests.Session sending for real and writing every exchange into ``folder`` (emptied first; made
    now: a folder that cannot be is a ConfigError before anything is sent).  ``session``: yours to record
    through (each adapter it has mounted still sends, wrapped by the recorder).  An exchange that cannot be written
    later (disk full) is logged on the ``agenthub`` logger (ERROR); the call itself stands."""
    from . import transport
    from .errors import ConfigError

    try:
        os.makedirs(str(folder), exist_ok=True)
    except (OSError, TypeError, ValueError) as exc:
        raise ConfigError("record_session: the cassette folder {!r} cannot be made ({})".format(
            folder, getattr(exc, "strerror", None) or exc)) from None
    clear(str(folder))
    cassette = Cassette(interactions=[])
    cassette.folder = str(folder)
    session = transport.recording_session(cassette, session)
    session.cassette = cassette
    return session


def cassette_session(folder: str, record: Optional[bool] = None, match_body: Optional[bool] = None) -> Any:
    """Record into ``folder`` when ``record`` is true (default: when $AGENTHUB_RECORD is "1"), else replay it."""
    if record is None:
        record = os.environ.get(RECORD_ENV) == "1"
    return record_session(folder) if record else replay_session(folder, match_body=match_body)
