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
end the stream with the last error.
"""

from typing import Any, Callable, Iterable, Iterator, Optional, Tuple

from .errors import StreamProtocolError, TransportError

__all__ = ["Resumable", "RESUMED"]

#: attribute set on an error raised after the response id was known: the client never retries it by a POST
RESUMED = "_agenthub_resumable_id"


class Resumable(object):
    """Iterate the SSE events of one background response across its connections.

    ``frames``: the first connection's SSE events.  ``cursor_of(sse) -> (id or None, cursor or None,
    terminal)``: the protocol's reading of one event (ValueError: not JSON, a cut inside it).
    ``reconnect(id, cursor) -> SSE events``: the next connection (raises when it cannot be had).
    ``ordered``: cursors are numbers (a replayed event at or before the cursor is dropped).
    """

    __slots__ = ("_frames", "_cursor_of", "_reconnect", "_ordered", "_client", "max_stalls",
                 "resource_id", "cursor", "reconnects", "complete", "error")

    def __init__(self, frames: Iterable[Any], cursor_of: Callable[[Any], Tuple[Optional[str], Any, bool]],
                 reconnect: Callable[[str, Any], Iterable[Any]], ordered: bool = False, client: str = "",
                 max_stalls: int = 3) -> None:
        self._frames = frames
        self._cursor_of = cursor_of
        self._reconnect = reconnect
        self._ordered = ordered
        self._client = client
        self.max_stalls = max_stalls
        self.resource_id = None  # type: Optional[str]
        self.cursor = None  # type: Any  # the last event passed on
        self.reconnects = 0
        self.complete = False  # the terminal event was passed on
        self.error = None  # type: Optional[BaseException]  # the break being resumed (None: a clean end)

    def __iter__(self) -> Iterator[Any]:
        frames = self._frames
        stalls = 0
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
                    if cursor is not None and self.cursor is not None and (
                            cursor <= self.cursor if self._ordered else cursor == self.cursor):
                        continue  # replayed: the caller has it already
                    if resource and self.resource_id is None:
                        self.resource_id = resource
                    progressed = True
                    if cursor is not None:
                        self.cursor = cursor  # (set before the parser has it: it may stop reading at the terminal)
                    if terminal:
                        self.complete = True
                        yield sse
                        return
                    yield sse
            except TransportError as exc:
                if self.resource_id is None:
                    raise
                error = exc
            if self.resource_id is None:
                return  # a clean end before the id: the parser says the stream was cut
            stalls = 0 if progressed else stalls + 1
            if stalls >= self.max_stalls:
                failure = error or StreamProtocolError(
                    "{}: the background response's stream broke {} times without a new event".format(
                        self._client, stalls), client=self._client)
                setattr(failure, RESUMED, self.resource_id)
                raise failure
            self.reconnects += 1
            self.error = error
            try:
                frames = self._reconnect(self.resource_id, self.cursor)
            except Exception as exc:
                setattr(exc, RESUMED, self.resource_id)
                raise
