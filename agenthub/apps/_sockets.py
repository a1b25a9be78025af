"""What agenthub's two standard-library HTTP servers (``agenthub serve``'s built-in server and the trace
viewer) do to bound what a client can hold: a connection's reads under a deadline (``DeadlineReader``), and
at most so many connections at once, each on a thread of its own (``ConnectionLimit``)."""

import io
import select
import socket
import socketserver
import threading
import time
from typing import Any, Optional

__all__ = ["DeadlineReader", "ConnectionLimit", "busy_answer", "peer_closed"]


class DeadlineReader(io.RawIOBase):
    """A connection's reading side: each read waits at most ``idle`` seconds, and none goes past ``deadline``
    (monotonic; None: no deadline).  Wrapped in an ``io.BufferedReader``, it is a request handler's ``rfile``."""

    def __init__(self, sock: Any, idle: float) -> None:
        io.RawIOBase.__init__(self)
        self.sock = sock
        self.idle = idle
        self.deadline = None  # type: Optional[float]

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        wait = self.idle
        if self.deadline is not None:
            wait = min(wait, self.deadline - time.monotonic())
            if wait <= 0:
                raise socket.timeout("the request did not arrive in time")
        self.sock.settimeout(wait)
        return self.sock.recv_into(buffer)


class ConnectionLimit(object):
    """A mix-in before ``socketserver.ThreadingMixIn``: at most ``connections`` (a ``threading.BoundedSemaphore``
    the server sets) connections are served at once; one past them gets ``busy`` (an HTTP answer's bytes) in the
    accepting thread, without waiting, and is closed, with no thread made for it.

    A connection's turn is given back once: by its thread when it ends, or by the accepting thread when starting
    that thread failed or was interrupted before the thread took the turn.  (Given back by both, a Ctrl-C landing in
    ``Thread.start`` while the new thread ran became "Semaphore released too many times", a ValueError that
    socketserver reports and serves on: the Ctrl-C was lost and the server never stopped.)"""

    connections = None  # type: Any
    busy = b""

    def _turns(self) -> Any:
        """{id of a request: True} for the turns taken and not handed to a thread yet, and its lock."""
        turns = self.__dict__.get("_agenthub_turns")
        if turns is None:
            turns = self.__dict__.setdefault("_agenthub_turns", ({}, threading.Lock()))
        return turns

    def _take_turn(self, request: Any) -> bool:
        """The turn of ``request``, taken by whoever asks first (its thread, or the accepting thread that made it)."""
        taken, lock = self._turns()
        with lock:
            return taken.pop(id(request), False)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.connections.acquire(False):  # full: refused here, in the accepting thread, without waiting
            try:
                request.setblocking(False)
                request.send(self.busy)  # (a few hundred bytes: they fit in the socket's buffer)
                for _ in range(16):  # what the request sent so far, read and dropped: closed with unread bytes,
                    if not request.recv(65536):  # the socket would reset, and the client might never see the 503
                        break
            except OSError:  # (nothing more to read now)
                pass
            self.shutdown_request(request)  # type: ignore[attr-defined]
            return
        taken, lock = self._turns()
        with lock:
            taken[id(request)] = True
        try:
            socketserver.ThreadingMixIn.process_request(self, request, client_address)  # type: ignore[arg-type]
        except BaseException:  # no thread started, or it has not taken the turn yet: given back here
            if self._take_turn(request):
                self.connections.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        mine = self._take_turn(request)
        try:
            socketserver.ThreadingMixIn.process_request_thread(self, request, client_address)  # type: ignore
        finally:
            if mine:
                self.connections.release()


def busy_answer(body: bytes, content_type: str) -> bytes:
    """The whole HTTP answer a ``ConnectionLimit`` server gives a connection past its limit: a 503 with
    ``Retry-After: 1`` and ``body``, and the connection closed."""
    return (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: %s\r\nContent-Length: %d\r\nRetry-After: 1\r\n"
            b"Cache-Control: no-store\r\nConnection: close\r\n\r\n%s" % (content_type.encode("ascii"), len(body), body))


def peer_closed(sock: Any) -> bool:
    """Whether the other end of ``sock`` closed the connection (or reset it), looked at without waiting: the
    socket is readable and a peek finds its end.  Bytes waiting to be read (a pipelined request) are no end."""
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            if not poller.poll(0):
                return False
        elif not select.select([sock], [], [], 0)[0]:  # pragma: no cover - no poll (Windows)
            return False
        return sock.recv(1, socket.MSG_PEEK) == b""  # (readable: the peek does not wait)
    except (OSError, ValueError):  # reset, or closed under us
        return True
