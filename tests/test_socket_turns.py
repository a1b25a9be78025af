"""A Ctrl-C that lands in ``Thread.start`` while a connection's thread runs stops the server (agenthub.apps._sockets).

``ConnectionLimit`` gave a connection's turn back in its thread when it ended, and again in the accepting thread when
``process_request`` raised: a KeyboardInterrupt in ``Thread.start`` (its wait for the new thread to run) after the
new thread had served the connection released the BoundedSemaphore twice.  That ValueError ("Semaphore released too
many times") is an Exception, which socketserver reports and serves on: the Ctrl-C was lost and ``agenthub trace
view`` never stopped (CI's 3.11 suite, once, under load).  Both servers (the viewer, ``agenthub serve``) share the
mix-in; the viewer stands for both here."""

import socket
import threading

import pytest

from agenthub.apps import viewer


def test_a_ctrl_c_in_thread_start_reaches_the_server_loop_and_each_turn_is_given_back_once(tmp_path, monkeypatch):
    server, _ = viewer.serve(str(tmp_path))
    client = socket.create_connection(server.server_address, timeout=10)
    try:
        client.sendall("GET / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n".format(
            server.server_address[1]).encode("ascii"))
        real_start = threading.Thread.start
        served = []

        def start(thread):  # the connection's thread runs to its end, then the Ctrl-C lands in its start
            # (its target read before it starts: Thread.run deletes it when it ends, which may be before start returns)
            connection = getattr(thread, "_target", None) == server.process_request_thread
            real_start(thread)
            if connection:
                thread.join(10)
                served.append(not thread.is_alive())
                raise KeyboardInterrupt

        monkeypatch.setattr(threading.Thread, "start", start)
        with pytest.raises(KeyboardInterrupt):
            server._handle_request_noblock()  # (one round of serve_forever's loop: the Ctrl-C goes on up)
        monkeypatch.undo()
        assert served == [True]
        assert client.recv(65536).startswith(b"HTTP/1.0 200 ")  # (the connection was served)
        # every turn is back, given back once: all of them can be taken again, and not one more
        assert [server.connections.acquire(False) for _ in range(viewer.MAX_CONNECTIONS)] == \
            [True] * viewer.MAX_CONNECTIONS
        assert server.connections.acquire(False) is False
    finally:
        client.close()
        server.server_close()
