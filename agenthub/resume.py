"""One unbroken stream out of a background response's connections (pure: the reconnecting is a callable).

OpenAI Responses (``config["background"] = True``) and Gemini's Interactions API keep a background
response server-side and replay its events from any point: ``GET /responses/{id}?stream=true
&starting_after=<sequence_number>`` and ``GET /interactions/{id}?stream=true&last_event_id=<event_id>``.
``Resumable`` wraps the SSE events of the first connection; when that connection breaks after the
response's id is known (a reset, an idle timeout, a body that ends before the terminal event, an
event cut in half), it asks ``reconnect(id, cursor)`` for the events after the last one it passed on
and carries on, so the parser reading it sees one stream: no event lost, none repeated (an event
whose sequence number is not past the last one is dropped).  Once the id is known a reconnect is
always that GET, never a second POST (which would start, and bill, another response).

A cut before the id is known is the ordinary error (the client may retry the POST: nothing was
created that it could resume).  ``reconnect`` does the I/O with the client's retry policy and
deadline and raises when it cannot; ``max_stalls`` reconnects in a row that bring no new event
end the stream with the last error, and so does the ``max_resumes``-th reconnect (a server that
brings one new event per connection is not reconnected to without end).  Reconnects after the first
wait ``resume_delay(n)`` (doubling from RESUME_BACKOFF_BASE up to RESUME_BACKOFF_MAX), through the
caller's ``sleep`` (the client's abortable wait).  Giving up leaves the response running: the error
names its id (the client cancels only what its caller stopped: abort, or closing the stream).

What is dropped as already passed on, at the start of a resumed connection (until its first new event:
within a connection nothing is dropped, so two deltas sharing a sequence number both reach the caller):
with numbered cursors (Responses' ``sequence_number``) an event at or before the last one; with opaque cursors (Interactions' ``event_id``) any event whose id was
passed on before (a server that replays from the start on resume repeats nothing); and events with
no cursor at all, on a connection asked for from the start (no cursor was ever seen), by their index:
the first ``passed`` of them are the ones the caller has.
"""

import re
from typing import Any, Callable, Iterable, Iterator, Optional, Set, Tuple

from .errors import StreamProtocolError, TransportError

__all__ = ["Resumable", "RESUMED", "RUNNING", "MAX_RESUMES", "RESUME_BACKOFF_BASE", "RESUME_BACKOFF_MAX", "resume_delay",
           "resource_segment"]

#: at most this many reconnects for one response (each after a wait of resume_delay)
MAX_RESUMES = 50
#: the wait before the second reconnect (the first goes at once); it doubles up to RESUME_BACKOFF_MAX
RESUME_BACKOFF_BASE = 0.5
RESUME_BACKOFF_MAX = 8.0


def resume_delay(number: int) -> float:
    """Seconds to wait before reconnect ``number`` (1 for the first: at once)."""
    if number <= 1:
        return 0.0
    return min(RESUME_BACKOFF_MAX, RESUME_BACKOFF_BASE * 2 ** min(number - 2, 16))


_DOTS = re.compile(r"\A(?:\.|%2[eE]){1,2}\Z")


def resource_segment(resource_id: str, client: str) -> str:
    """A response or interaction id as one URL path segment (percent-encoded); an id that would leave its
    segment (``.``, ``..``, their percent-encodings, or empty) is a StreamProtocolError: nothing is sent."""
    from urllib.parse import quote

    if not isinstance(resource_id, str) or not resource_id.strip() or _DOTS.match(resource_id.strip()):
        raise StreamProtocolError("{}: the server named its background response {!r}, which is no usable id (in a "
                                  "URL it would reach another resource); it was not resumed or cancelled".format(
                                      client, str(resource_id)[:40]), client=client)
    return quote(resource_id, safe="")

#: attribute set on an error raised after the response id was known: the client never retries it by a POST
RESUMED = "_agenthub_resumable_id"
#: attribute set on an error that ended a background stream whose response it left running (its id): the turn
#: goes on upstream, so no failover route sends it again (that would start, and bill, a second answer)
RUNNING = "_agenthub_running_id"


class Resumable(object):
    """Iterate the SSE events of one background response across its connections.

    ``frames``: the first connection's SSE events.  ``cursor_of(sse) -> (id or None, cursor or None,
    terminal)``: the protocol's reading of one event (ValueError: not JSON, a cut inside it).
    ``reconnect(id, cursor) -> SSE events``: the next connection (raises when it cannot be had).
    ``ordered``: cursors are numbers (a replayed event at or before the cursor is dropped).
    """

    __slots__ = ("_frames", "_cursor_of", "_reconnect", "_ordered", "_client", "max_stalls", "max_resumes",
                 "_sleep", "_seen", "resource_id", "cursor", "reconnects", "complete", "error", "passed")

    def __init__(self, frames: Iterable[Any], cursor_of: Callable[[Any], Tuple[Optional[str], Any, bool]],
                 reconnect: Callable[[str, Any], Iterable[Any]], ordered: bool = False, client: str = "",
                 max_stalls: int = 3, max_resumes: int = MAX_RESUMES,
                 sleep: Optional[Callable[[float], Any]] = None) -> None:
        self._frames = frames
        self._cursor_of = cursor_of
        self._reconnect = reconnect
        self._ordered = ordered
        self._client = client
        self.max_stalls = max_stalls
        self.max_resumes = max_resumes
        self._sleep = sleep  # the caller's wait (None: reconnect at once; a test's record)
        self._seen = set()  # type: Set[Any]  # opaque cursors passed on
        self.resource_id = None  # type: Optional[str]
        self.cursor = None  # type: Any  # the last event passed on
        self.reconnects = 0
        self.complete = False  # the terminal event was passed on
        self.error = None  # type: Optional[BaseException]  # the break being resumed (None: a clean end)
        self.passed = 0  # events passed on

    def _give_up(self, failure: BaseException) -> BaseException:
        setattr(failure, RESUMED, self.resource_id)
        return failure

    def __iter__(self) -> Iterator[Any]:
        frames = self._frames
        stalls = 0
        skip = 0  # events of this connection already passed on (a replay from the start without cursors)
        replaying = False  # a resumed connection before its first new event: what it replays is dropped
        while True:
            progressed = False
            error = None  # type: Optional[BaseException]
            try:
                for sse in frames:
                    try:
                        resource, cursor, terminal = self._cursor_of(sse)
                    except ValueError as exc:  # not JSON: an event cut in half
                        if self.resource_id is None:
                            raise StreamProtocolError("{}: a malformed event before the response id was known ({})"
                                                      .format(self._client, exc), client=self._client) from None
                        error = StreamProtocolError("{}: the stream broke inside an event".format(self._client),
                                                    client=self._client)
                        break
                    if not sse.data:
                        continue  # an event line without its data: what a cut leaves
                    if skip:
                        skip -= 1
                        if cursor is None:
                            continue  # replayed from the start, by its index: the caller has it already
                        skip = 0  # cursors from here on: they say what is new
                    if replaying and cursor is not None and (cursor in self._seen if not self._ordered else
                                                             self.cursor is not None and cursor <= self.cursor):
                        continue  # replayed: the caller has it already
                    replaying = False  # (past the replay, a connection's events are its own: two deltas that
                    # share a sequence number, or a number that goes back, are both passed on, never dropped)
                    if resource and self.resource_id is None:
                        self.resource_id = resource
                    progressed = True
                    self.passed += 1
                    if cursor is not None:
                        self.cursor = cursor  # (set before the parser has it: it may stop reading at the terminal)
                        if not self._ordered:
                            self._seen.add(cursor)
                    if terminal:
                        self.complete = True
                        yield sse
                        return
                    yield sse
            except (TransportError, StreamProtocolError) as exc:
                # (a StreamProtocolError of the framing that says the body was cut: one ending inside a character)
                if self.resource_id is None or not (isinstance(exc, TransportError) or exc.truncated):
                    raise
                error = exc
            if self.resource_id is None:
                return  # a clean end before the id: the parser says the stream was cut
            stalls = 0 if progressed else stalls + 1
            if stalls >= self.max_stalls:
                raise self._give_up(error or StreamProtocolError(
                    "{}: the stream of background response {} broke {} times without a new event; it is left "
                    "running".format(self._client, self.resource_id, stalls), client=self._client))
            if self.reconnects >= self.max_resumes:
                raise self._give_up(StreamProtocolError(
                    "{}: the stream of background response {} broke {} times; gave up resuming it (it is left "
                    "running)".format(self._client, self.resource_id, self.reconnects + 1), client=self._client))
            self.reconnects += 1
            self.error = error
            delay = resume_delay(self.reconnects)
            if delay and self._sleep is not None:
                self._sleep(delay)  # (a stop meanwhile: the reconnect raises it)
            skip = self.passed if self.cursor is None else 0  # asked from the start: the first ones are replays
            replaying = True
            try:
                frames = self._reconnect(self.resource_id, self.cursor)
            except Exception as exc:
                raise self._give_up(exc)
