"""Google Cloud credentials for Vertex AI, through ``google-auth`` (the optional extra ``vertex``: ``pip install '.[vertex]'``).

Nothing here is imported by ``import agenthub``: the Vertex route imports this module
when it needs application default credentials, and this module imports google-auth
only inside its functions, so a missing extra is a ConfigError that names it.

``application_default()`` finds credentials the way every Google client does
(``google.auth.default``): the service-account file named by
``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's user credentials
(``gcloud auth application-default login``), or the metadata server on Google
Cloud.  ``service_account_file(path)`` reads one file.  Both return a
``GoogleToken``: a callable that returns a current OAuth access token.  The token
is cached and renewed ``REFRESH_MARGIN`` seconds before it expires, under a lock,
so any number of threads may call it at once and one refresh serves them all; a forked
child gets a lock and an HTTP session of its own.

A token string, or any callable returning one, works as ``api_key`` without this
module and without google-auth.
"""

import datetime
import os
import re
import threading
import time
from typing import Any, Optional, Tuple

from .._forks import renew_lock_after_fork
from .credentials import private_key_reason
from ..errors import AuthenticationError, ConfigError, TransportError, UpstreamError, preview

__all__ = ["SCOPE", "EXTRA", "REFRESH_MARGIN", "GoogleToken", "application_default", "service_account_file"]

#: the OAuth scope Vertex AI takes
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
#: how to install what this module needs
EXTRA = "pip install '.[vertex]' from agenthub's checkout"
#: a token is renewed when it expires within this many seconds (google-auth itself waits until 3m45s)
REFRESH_MARGIN = 300.0
#: seconds allowed for one refresh of the token, all told (connecting, the answer, google-auth's own retries)
TOKEN_TIMEOUT = 30.0
#: a JWT (header.payload.signature, base64url): a service account's signed assertion, which a token endpoint that
#: echoes the request it refused quotes in its error (a bearer credential for the token's lifetime: never shown)
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")


def _google_auth() -> Any:
    """The ``google.auth`` package, or a ConfigError that says how to get it."""
    try:
        import google.auth
        import google.auth.exceptions
        import google.auth.transport.requests  # noqa: F401  (the refresh transport)
    except ImportError:
        raise ConfigError(
            "Vertex AI authenticates with Google application default credentials through google-auth, which is "
            "not installed: {} (or pass an OAuth access token, or a callable returning one, as api_key)".format(EXTRA)
        ) from None
    return google.auth


def application_default(project: Optional[str] = None) -> Tuple["GoogleToken", Optional[str]]:
    """``google.auth.default`` with the cloud-platform scope -> (token callable, project).

    The project is ``project`` when given, else the one the credentials name (None when they
    name none).  No credentials found is a ConfigError with google-auth's own explanation.
    """
    google_auth = _google_auth()
    try:
        credentials, found = google_auth.default(scopes=[SCOPE])
    except google_auth.exceptions.DefaultCredentialsError as exc:
        reason = _reason(exc)
    except (AttributeError, TypeError, ValueError, KeyError, RecursionError) as exc:  # e.g. JSON that is no object
        reason = "the credentials file {} could not be read as credentials (google-auth raised {})".format(
            os.environ.get("GOOGLE_APPLICATION_CREDENTIALS") or "of gcloud's application default login",
            type(exc).__name__)
    else:
        return GoogleToken(credentials, found, source=("default",)), project or found
    raise ConfigError("Vertex AI: no Google credentials: {} (set GOOGLE_APPLICATION_CREDENTIALS to a service-account "
                      "file, run `gcloud auth application-default login`, or pass an access token as api_key)".format(
                          reason))


def _reason(exc: BaseException) -> str:
    """google-auth's own sentence for ``exc`` (its first argument), never the exception it wraps: a file that
    does not decode is quoted whole in a UnicodeDecodeError, private key included."""
    first = exc.args[0] if exc.args and isinstance(exc.args[0], str) else type(exc).__name__
    if private_key_reason(first) is not None or "PRIVATE KEY" in first:
        return type(exc).__name__
    return preview(first, 400)


def service_account_file(path: str) -> "GoogleToken":
    """A token callable for one service-account JSON file (what to pass as ``api_key`` instead of its text)."""
    _google_auth()
    try:
        from google.oauth2 import service_account

        credentials = service_account.Credentials.from_service_account_file(path, scopes=[SCOPE])
    except (OSError, ValueError, KeyError, AttributeError, TypeError, RecursionError) as exc:
        raise ConfigError("cannot read service-account file {!r}: {}".format(path, type(exc).__name__)) from None
    return GoogleToken(credentials, getattr(credentials, "project_id", None), source=("file", path))


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class GoogleToken(object):
    """A callable returning a valid access token from google-auth credentials.

    The token is cached; it is renewed (``credentials.refresh``) when there is none yet
    or it expires within ``margin`` seconds.  One lock guards the check and the
    refresh, so concurrent callers wait for one refresh instead of starting several.
    A refresh that cannot reach the token endpoint is a TransportError (retryable);
    one the endpoint refuses is an AuthenticationError.  ``repr`` shows no token.

    Pickling (a client sent to a process pool) carries where the credentials came from
    (``source``: application default credentials, or a file's path), never the key or the
    token: they are loaded again where the object lands, on its first call.
    """

    def __init__(self, credentials: Any, project: Optional[str] = None, margin: float = REFRESH_MARGIN,
                 source: Optional[Tuple[str, ...]] = None) -> None:
        self.credentials = credentials
        self.project = project
        self.margin = float(margin)
        self.source = source
        self._lock = threading.Lock()
        renew_lock_after_fork(self)  # a forked child gets a fresh lock (a thread may hold this one mid-refresh)
        self._request = None  # type: Any
        self._pid = os.getpid()  # the process self._request (its pooled connections) belongs to
        #: how many times the token was fetched (for tests and logs)
        self.refreshes = 0

    @property
    def quota_project(self) -> Optional[str]:
        """The credentials' quota project (sent as ``x-goog-user-project``, as google-auth's own ``apply`` does)."""
        value = getattr(self.credentials, "quota_project_id", None)
        return value if isinstance(value, str) and value else None

    def __repr__(self) -> str:
        return "GoogleToken({})".format(type(self.credentials).__name__ if self.credentials is not None else
                                        (self.source or ("?",))[0])

    def __getstate__(self) -> Any:  # the lock, the HTTP session, and (with a source) the credentials stay behind
        credentials = None if self.source else self.credentials
        return {"credentials": credentials, "project": self.project, "margin": self.margin, "source": self.source}

    def __setstate__(self, state: Any) -> None:
        self.__init__(state["credentials"], state["project"], state["margin"], state["source"])  # type: ignore[misc]

    def _load(self) -> None:
        source = self.source or ("default",)
        if source[0] == "file":
            self.credentials = service_account_file(source[1]).credentials
        else:
            self.credentials = application_default()[0].credentials

    def _stale(self) -> bool:
        credentials = self.credentials
        if not getattr(credentials, "token", None):
            return True
        expiry = getattr(credentials, "expiry", None)
        if expiry is None:
            return False  # a token without an expiry (google-auth says so) is kept until refused
        now = _utcnow() if expiry.tzinfo is None else datetime.datetime.now(datetime.timezone.utc)
        return (expiry - now).total_seconds() <= self.margin

    def __call__(self) -> str:
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's HTTP session is not its own
                self._request, self._pid = None, os.getpid()
            if self.credentials is None:
                self._load()
            if self._stale():
                self._refresh()
            token = self.credentials.token
        if not isinstance(token, str) or not token:
            raise AuthenticationError("Vertex AI: google-auth returned no access token", client="vertex")
        return token

    def _refresh(self) -> None:
        google_auth = _google_auth()
        if self._request is None:
            import google.auth.transport.requests as transport

            self._request = _TimedRequest(transport.Request())
        request = self._request
        timer = request.begin(TOKEN_TIMEOUT)
        try:
            self.credentials.refresh(request)
        except Exception as exc:
            if request.stopped():
                # the refresh's deadline (its answer trickled, say: each read within the read timeout), or the call
                # it is for was stopped; the error under it (a broken read, or a short answer google-auth could not
                # read) is the cut, not chained
                raise TransportError("Vertex AI: the Google token endpoint did not answer within {:g} s "
                                     "(TOKEN_TIMEOUT)".format(request.seconds) if request.timed_out()
                                     else "Vertex AI: the token's refresh was stopped with the call",
                                     client="vertex", timeout=request.timed_out()) from None
            _refresh_failed(google_auth, exc)
        finally:
            timer.cancel()
            request.end()
        self.refreshes += 1


def _refresh_failed(google_auth: Any, exc: Exception) -> None:
    """The error of a refresh that failed before its deadline."""
    if isinstance(exc, google_auth.exceptions.TransportError):
        raise TransportError("Vertex AI: cannot reach the Google token endpoint: {}".format(
            preview(str(exc), 300)), client="vertex") from exc
    if isinstance(exc, google_auth.exceptions.RefreshError):
        # (its text quotes the endpoint's answer: an assertion echoed in it is scrubbed, and it is not chained)
        raise AuthenticationError(
            "Vertex AI: the Google token endpoint refused the credentials: {}".format(
                preview(_JWT.sub("***", str(exc)), 300)),
            client="vertex", error_type="refresh_error",
            retryable=bool(getattr(exc, "retryable", False))) from None
    if isinstance(exc, (TypeError, ValueError, KeyError, AttributeError, OverflowError)):
        # a 200 answer google-auth cannot read (not an object, an expiry that is not a number of seconds):
        # the message names the exception only, and it is not chained: its text may quote the answer
        raise UpstreamError("Vertex AI: the Google token endpoint's answer could not be read (google-auth "
                            "raised {})".format(type(exc).__name__), client="vertex", error_type="token_response",
                            retryable=False) from None
    raise exc


class _TimedRequest(object):
    """google-auth's requests transport, each refresh bounded as a whole (``begin``): every call's timeouts are
    clipped to what is left of it, and at its end the connection in use is shut down (a read timeout bounds
    only the silence between bytes: an answer trickled a byte at a time went on past it, and so did google-auth's
    own retries).  Its session's pools are watched as agenthub's own sessions' are."""

    def __init__(self, request: Any) -> None:
        from ..transport import watch_pools  # (see begin)

        self._request = request
        watch_pools(request.session)
        self.watch = None  # type: Any
        self._call = None  # type: Any  # the watch of the call the refresh is for
        self.seconds = TOKEN_TIMEOUT
        self._deadline = 0.0

    def begin(self, seconds: float) -> Any:
        """A refresh begins: its deadline is ``seconds`` away, and it is stopped with the call it is for (the
        abort, the call's deadline: the watch the call's credential is taken under); the timer returned must be
        cancelled, and ``end`` called, after it."""
        from ..transport import Watch, current_watch  # (HTTP's stop switch: the layering's one arrow up)

        self.watch, self.seconds = Watch(), seconds
        self._deadline = time.monotonic() + seconds
        self._call = current_watch()
        if self._call is not None:
            self._call.link(self.watch)
        timer = threading.Timer(seconds, self.watch.stop, ("deadline",))
        timer.daemon = True
        timer.start()
        return timer

    def end(self) -> None:
        if self._call is not None:
            self._call.unlink(self.watch)
            self._call = None

    def timed_out(self) -> bool:
        """Whether the refresh's own deadline has passed."""
        return self.watch is not None and time.monotonic() >= self._deadline

    def stopped(self) -> bool:
        """Whether the refresh was stopped: its own deadline passed, or the call it is for was stopped."""
        return self.watch is not None and (self.watch.reason is not None or time.monotonic() >= self._deadline)

    def __call__(self, url: str, method: str = "GET", body: Any = None, headers: Any = None,
                 timeout: Optional[float] = None, **kwargs: Any) -> Any:
        from ..transport import watching  # (see begin)

        google_auth = _google_auth()
        left = self._deadline - time.monotonic()
        if self.watch is None or self.stopped() or left <= 0:
            raise google_auth.exceptions.TransportError("the refresh's deadline passed")
        limit = min(timeout if timeout is not None else self.seconds, left)
        watch = self.watch

        def read(response: Any, *args: Any, **kw: Any) -> Any:  # its head is in, its body not read yet
            watch.attach(response)  # (the connection may have handed its socket to the response)
            return response

        hooks = dict(kwargs.pop("hooks", None) or {})
        hooks["response"] = list(hooks.get("response") or []) + [read]
        with watching(watch):
            return self._request(url, method=method, body=body, headers=headers, timeout=limit, hooks=hooks,
                                 **kwargs)
