"""A store URL's password never reaches a store's error, whatever the server answers."""
import socket
import threading

import pytest

from agenthub.stores import StoreError, open_store

PASSWORD = "LEAKPW-store-1234567"


def _echoing_server():
    """A Redis stand-in on 127.0.0.1 that refuses AUTH as Redis refuses an unknown (renamed) command: its
    reply echoes the first argument, the password."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve():
        conns = []
        try:
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                except socket.timeout:
                    continue
                conns.append(conn)
                conn.settimeout(5)
                data = b""
                while True:  # (redis-py says HELLO ... AUTH first, then AUTH alone: each refused so)
                    try:
                        chunk = conn.recv(65536)
                    except OSError:
                        break
                    if not chunk:
                        break
                    data += chunk
                    if data.endswith(PASSWORD.encode() + b"\r\n"):
                        conn.sendall(b"-ERR unknown command '" + data.split(b"\r\n")[2] + b"', with args "
                                     b"beginning with: '" + PASSWORD.encode() + b"' \r\n")
                        data = b""
        finally:
            for conn in conns:
                conn.close()

    thread = threading.Thread(target=serve)
    thread.start()

    def close():
        stop.set()
        thread.join()
        server.close()
    return server.getsockname()[1], close


def _shown(error):
    """All an error shows: its text, its repr, and what a traceback prints of its chain."""
    import traceback

    return "".join(traceback.format_exception(type(error), error, error.__traceback__)) + repr(error)


def test_redis_error_reply_echoing_the_password_is_scrubbed():
    pytest.importorskip("redis")
    port, close = _echoing_server()
    try:
        with pytest.raises(StoreError) as info:
            open_store("redis://:{}@127.0.0.1:{}/0".format(PASSWORD, port))
    finally:
        close()
    assert str(info.value) == (
        "store 'redis://***@127.0.0.1:{}/0' refused the operation (unknown command 'AUTH', with args beginning "
        "with: '***' ): nothing was done".format(port))
    assert PASSWORD not in _shown(info.value)
