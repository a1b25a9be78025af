"""Background responses (``config["background"]``) on the attempt loop: a stream that breaks after the
response's id arrived continues from a GET that resumes it (``agenthub.resume.Resumable``: one parser
across the connections, so nothing is lost or repeated; never a second POST), each reconnect being the
loop's next attempt (its hooks, retries, deadline, abort, scrubbing; after the first, a backoff through
the loop's abortable ``sleep``); a response whose stream the caller ended before it completed (abort,
close) is cancelled server-side, one an error ended (resuming gave up, say) is left running and its id
logged: what the caller did not stop is never cancelled.  ``agenthub.resume`` stays pure:
this is the glue between it, a dialect's resume functions and the loop.

A response's id is told as soon as its stream names it (``known``; and ``ID_WATCH``, a callable the
reading thread set: a journaled tool run writes the id down there, before any output comes, so a run
resumed after a crash re-attaches to the response instead of paying for it again).  ``resource_id``:
the stream read is a re-attach to that response (a GET from its start, ``agenthub.client``): a cut is
resumed by id even before the replay names it again."""

import contextvars
import logging
from typing import Any, Callable, Iterator, List, Optional, Tuple

from .errors import AgentHubError, UnsupportedParameterError
from .resume import RESUMED, RUNNING, Resumable
from .stream import drive, now_ms

__all__ = ["events", "resume_of", "ID_WATCH", "CANCEL_SECONDS"]

logger = logging.getLogger("agenthub")

#: seconds a cancel of a background response may take, all told (connect, its answer): the abort or close that
#: sends it waits for it, so a server slow to answer holds that caller no longer
CANCEL_SECONDS = 10.0

#: set by a reader (the tool runner of a journaled run, around the first step of a turn's stream): called
#: ``(resource_id, attempt)`` once a background stream names its response or interaction (the attempt:
#: the one on the route that created it); None: nobody asks
ID_WATCH = contextvars.ContextVar("agenthub_background_id_watch", default=None)  # type: contextvars.ContextVar[Any]


def events(protocol: Any, endpoint: Any, client: str, max_line_bytes: int,
           run: Callable[[Callable[..., Iterator[Any]]], Iterator[Any]],
           cancel: Callable[[Any, str], None], sleep: Optional[Callable[[float], Any]] = None,
           known: Optional[Callable[[str], None]] = None, resource_id: Optional[str] = None,
           events_timeout: Optional[float] = None) -> Iterator[Any]:
    """The events of a background response: ``run(read)`` is the attempt loop with ``resumes=True``
    around ``read(body, reopen)``; ``cancel(request, resource_id)`` sends a cancel (never raises);
    ``sleep(seconds)`` waits between reconnects (the loop's abortable wait); ``known(resource_id)`` is
    told the response's id once, as soon as the stream names it; ``resource_id``: the stream is a
    re-attach to that response (its id known from the start); ``events_timeout``: ``Timeout.events`` of
    each connection (``Protocol.frames``)."""
    resume = resume_of(protocol)
    resumables = []  # type: List[Any]  # one per attempt
    opened = []  # type: List[Any]  # the bodies of the reconnects, closed when the call ends

    def read(body: Any, reopen: Callable[[str, Any, Any], Any]) -> Iterator[Any]:
        stamp = [now_ms()]  # the time the bytes being parsed were read, across the reconnects too
        parts, resumable = _parts(protocol, resume, endpoint, client, max_line_bytes, body, reopen, opened, stamp,
                                  sleep, known, resource_id, events_timeout)
        resumables.append(resumable)
        return _marked(drive(parts, client, stamp), resumable)

    answer = run(read)
    failure = None  # type: Optional[AgentHubError]  # an error ended it (not the caller's abort or close)
    try:
        yield from answer
    except AgentHubError as exc:
        if not getattr(exc, "aborted", False):
            failure = exc
        raise
    finally:
        answer.close()  # type: ignore[attr-defined]
        for body in opened:
            body.close()
        resumable = resumables[-1] if resumables else None
        if resumable is not None and resumable.resource_id and not resumable.complete:
            if failure is not None:  # left running: a failover route would start (and bill) a second answer
                failure.__dict__[RUNNING] = resumable.resource_id
            _abandoned(resume, endpoint, client, resumable.resource_id, failure is not None, cancel)


def _abandoned(resume: Any, endpoint: Any, client: str, resource_id: str, failed: bool,
               cancel: Callable[[Any, str], None]) -> None:
    """A background response whose stream ended first: cancelled when the caller ended it, else left running."""
    if failed:
        logger.warning("%s: background response %s is left running (not cancelled)", client, resource_id)
        return
    try:
        request = resume.cancel(endpoint, resource_id)
    except AgentHubError as exc:  # an id that is no usable URL segment: nothing is sent
        logger.warning("%s: background response %s was not cancelled: %s", client, resource_id[:40], exc)
        return
    cancel(request, resource_id)


def _parts(protocol: Any, resume: Any, endpoint: Any, client: str, max_line_bytes: int, body: Any,
           reopen: Callable[[str, Any, Any], Any], opened: List[Any], stamp: List[int],
           sleep: Optional[Callable[[float], Any]] = None, known: Optional[Callable[[str], None]] = None,
           resource_id: Optional[str] = None, events_timeout: Optional[float] = None) -> Tuple[Iterator[Any], Any]:
    """The parts of a background stream whose connections resume after a cut, and its Resumable: each
    reconnect is the attempt loop's next attempt (``reopen``: the GET that resumes it), read by the same
    parser.  ``known`` is told the id as soon as a frame names it (``resource_id``: known already)."""
    if body.open(False):  # one JSON document: complete by nature, nothing to resume (a finished response
        return protocol.read(body, client, max_line_bytes, stamp=stamp), None  # re-attached, say)

    def reconnect(resource_id: str, cursor: Any) -> Iterator[Any]:
        resumed = reopen(resource_id, resume.request(endpoint, resource_id, cursor), resumable.error)
        opened.append(resumed)
        logger.info("%s: the stream of background response %s broke; resumed after event %s", client,
                    resource_id, cursor)
        return protocol.frames(resumed.iter_chunks(stamp), max_line_bytes, events_timeout, client)

    frames = protocol.frames(body.iter_chunks(stamp), max_line_bytes, events_timeout, client)
    resumable = Resumable(frames, resume.frame_cursor, reconnect, ordered=resume.ordered, client=client,
                          sleep=sleep)
    if resource_id:
        resumable.resource_id = resource_id  # a re-attach: a cut before the replay names it is resumed too
    if known is None:
        return protocol.parse_stream(iter(resumable), client), resumable
    return protocol.parse_stream(_told(resumable, known), client), resumable


def _told(resumable: Any, known: Callable[[str], None]) -> Iterator[Any]:
    """``resumable``'s frames; ``known(id)`` called once, when the frame that names the id comes (before
    the parser reads it: the id is told before any output of the response)."""
    frames = iter(resumable)
    for sse in frames:
        if resumable.resource_id:
            known(resumable.resource_id)
            yield sse
            break
        yield sse
    else:
        return
    yield from frames


def _marked(events: Iterator[Any], resumable: Any) -> Iterator[Any]:
    """``events``; an error raised once the background response's id was known is marked so that the
    attempt loop never retries it by a second POST."""
    try:
        yield from events
    except AgentHubError as exc:
        if resumable is not None and resumable.resource_id:
            setattr(exc, RESUMED, resumable.resource_id)
        raise


def resume_of(record: Any) -> Any:
    """The protocol record's ``Resume`` (how it resumes and cancels a background stream)."""
    resume = record.resume
    if resume is None:  # pragma: no cover - the record's accepts keeps "background" out
        raise UnsupportedParameterError("{}: background is not available on this protocol".format(record.name),
                                        client=record.name, parameter="background")
    return resume
