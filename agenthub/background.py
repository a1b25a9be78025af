"""Background responses (``config["background"]``) on the attempt loop: a stream that breaks after the
response's id arrived continues from a GET that resumes it (``agenthub.resume.Resumable``: one parser
across the connections, so nothing is lost or repeated; never a second POST), each reconnect being the
loop's next attempt (its hooks, retries, deadline, abort, scrubbing); a response whose stream ended
before it completed (abort, close, an error) is cancelled server-side.  ``agenthub.resume`` stays pure:
this is the glue between it, a dialect's resume functions and the loop."""

import logging
from typing import Any, Callable, Iterator, List, Tuple

from .errors import AgentHubError, UnsupportedParameterError
from .resume import RESUMED, Resumable
from .stream import drive, now_ms

__all__ = ["events", "resume_of"]

logger = logging.getLogger("agenthub")


def events(protocol: Any, endpoint: Any, client: str, max_line_bytes: int,
           run: Callable[[Callable[..., Iterator[Any]]], Iterator[Any]],
           cancel: Callable[[Any, str], None]) -> Iterator[Any]:
    """The events of a background response: ``run(read)`` is the attempt loop with ``resumes=True``
    around ``read(body, reopen)``; ``cancel(request, resource_id)`` sends a cancel (never raises)."""
    resume = resume_of(protocol)
    resumables = []  # type: List[Any]  # one per attempt
    opened = []  # type: List[Any]  # the bodies of the reconnects, closed when the call ends

    def read(body: Any, reopen: Callable[[str, Any, Any], Any]) -> Iterator[Any]:
        stamp = [now_ms()]  # the time the bytes being parsed were read, across the reconnects too
        parts, resumable = _parts(protocol, resume, endpoint, client, max_line_bytes, body, reopen, opened, stamp)
        resumables.append(resumable)
        return _marked(drive(parts, client, stamp), resumable)

    answer = run(read)
    try:
        yield from answer
    finally:
        answer.close()  # type: ignore[attr-defined]
        for body in opened:
            body.close()
        resumable = resumables[-1] if resumables else None
        if resumable is not None and resumable.resource_id and not resumable.complete:
            cancel(resume.cancel(endpoint, resumable.resource_id), resumable.resource_id)


def _parts(protocol: Any, resume: Any, endpoint: Any, client: str, max_line_bytes: int, body: Any,
           reopen: Callable[[str, Any, Any], Any], opened: List[Any], stamp: List[int]) -> Tuple[Iterator[Any], Any]:
    """The parts of a background stream whose connections resume after a cut, and its Resumable: each
    reconnect is the attempt loop's next attempt (``reopen``: the GET that resumes it), read by the same
    parser."""
    if body.open(False):  # one JSON document: complete by nature, nothing to resume
        return protocol.read(body, client, max_line_bytes, stamp=stamp), None

    def reconnect(resource_id: str, cursor: Any) -> Iterator[Any]:
        resumed = reopen(resource_id, resume.request(endpoint, resource_id, cursor), resumable.error)
        opened.append(resumed)
        logger.info("%s: the stream of background response %s broke; resumed after event %s", client,
                    resource_id, cursor)
        return protocol.framing(resumed.iter_chunks(stamp), max_line_bytes)

    frames = protocol.framing(body.iter_chunks(stamp), max_line_bytes)
    resumable = Resumable(frames, resume.frame_cursor, reconnect, ordered=resume.ordered, client=client)
    return protocol.parse_stream(iter(resumable), client), resumable


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
