"""AutoLLMClient: registry + a protocol's build_request/parse_stream + transport + history."""

import importlib
import logging
import random
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

from . import registry
from .errors import AgentHubError, ConfigError, TransportError, UpstreamError
from .providers._common import Endpoint
from .sse import iter_events
from .stream import collect, drive
from .types import UniConfig, UniEvent, UniMessage
from .validate import check_config, check_message, check_messages

__all__ = ["AutoLLMClient", "PROTOCOLS"]

logger = logging.getLogger("agenthub")

#: client_type -> protocol module under agenthub.providers (build_request, parse_stream), imported on first use
PROTOCOLS = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
}
#: client_type -> module serving embedding models (build_request -> a non-streamed request, parse_response)
EMBEDDINGS = {"openai-chat": "openai_embeddings", "openai-responses": "openai_embeddings", "gemini": "gemini_embeddings"}

#: retry backoff: full jitter over base * 2**attempt, capped; a server's Retry-After wins up to the cap
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
RETRY_AFTER_CAP = 60.0


def _protocol(client_type: str, embeddings: bool = False) -> Any:
    table = EMBEDDINGS if embeddings else PROTOCOLS
    if client_type not in table:
        raise ConfigError("client_type {!r} does not serve {}".format(
            client_type, "embedding models" if embeddings else "streamed responses"))
    return importlib.import_module("agenthub.providers." + table[client_type])


class AutoLLMClient(object):
    """One model behind one uniform streaming interface.

    ``streaming_response`` is stateless; ``streaming_response_stateful`` keeps this
    instance's history and appends to it only when a stream completed and validated.
    History is per instance: never shared between instances.  Use one instance per
    thread for stateful calls (a call made while another is streaming on the same
    instance raises ConfigError); stateless calls may share an instance.
    """

    def __init__(
        self,
        model: str,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        client_type: Optional[str] = None,
        *,
        timeout: Any = None,
        max_retries: int = 2,
        session: Any = None,
        default_headers: Optional[Mapping[str, str]] = None
    ) -> None:
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ConfigError("max_retries must be an int >= 0")
        if default_headers is not None and not all(
                isinstance(k, str) and isinstance(v, str) for k, v in dict(default_headers).items()):
            raise ConfigError("default_headers must map str to str")
        kind, url, key, quirks = registry.resolve(model, client_type, base_url, api_key)
        #: the model name sent upstream
        self.model = model
        #: the wire protocol in use ("openai-chat", "openai-responses", "anthropic", "gemini")
        self.client_type = kind
        self._protocol = _protocol(kind, bool(quirks.get("embeddings")))
        self._endpoint = Endpoint(kind, url, key, default_headers, quirks)
        #: requests' convention: seconds, or (connect, read) where read is the longest silence
        self.timeout = timeout
        #: retries before the first event reached the caller; 0 disables
        self.max_retries = max_retries
        self._session = session
        self._history = []  # type: List[UniMessage]
        self._busy = False  # a stateful stream is running on this instance

    def __repr__(self) -> str:
        return "AutoLLMClient(model={!r}, client_type={!r}, base_url={!r})".format(
            self.model, self.client_type, self._endpoint.base_url)

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state["_session"] = None  # sessions hold sockets; a new one is made where the client lands
        state["_busy"] = False
        return state

    @property
    def base_url(self) -> str:
        return self._endpoint.base_url

    # -- history ---------------------------------------------------------------------------
    def get_history(self) -> List[UniMessage]:
        return list(self._history)

    def set_history(self, history: List[UniMessage]) -> None:
        check_messages(history) if history else None
        self._history = list(history)

    def clear_history(self) -> None:
        self._history = []

    # -- streaming -------------------------------------------------------------------------
    def streaming_response(self, messages: List[UniMessage], config: Optional[UniConfig] = None) -> Iterator[UniEvent]:
        """Stream one assistant turn for ``messages``; a plain generator of UniEvents.

        Messages and config are checked now (ConfigError before anything is sent);
        the request goes out when iteration starts.
        """
        check_messages(messages)
        cfg = check_config(config)
        request = self._protocol.build_request(self._endpoint, self.model, list(messages), cfg)
        return self._stream(request, cfg, list(messages), None)

    def streaming_response_stateful(self, message: UniMessage, config: Optional[UniConfig] = None) -> Iterator[UniEvent]:
        """Stream one turn after this instance's history; on success, history gains ``message`` and the answer."""
        check_message(message)
        if message["role"] != "user":
            raise ConfigError("streaming_response_stateful takes the next user message")
        cfg = check_config(config)
        if "created_at" not in message:
            message = dict(message)  # type: ignore[assignment]
            message["created_at"] = int(time.time() * 1000)
        messages = self._history + [message]
        request = self._protocol.build_request(self._endpoint, self.model, messages, cfg)
        return self._stream(request, cfg, messages, message)

    def _stream(self, request: Any, config: Dict[str, Any], messages: List[UniMessage],
                stateful: Optional[UniMessage]) -> Iterator[UniEvent]:
        if stateful is not None:
            if self._busy:
                raise ConfigError("a stateful stream is already running on this client")
            self._busy = True
        history_before = list(self._history)
        kept = [] if (stateful is not None or config.get("trace_id")) else None  # type: Optional[List[UniEvent]]
        try:
            for event in self._attempts(request):
                if kept is not None:
                    kept.append(event)
                if event["event_type"] == "stop" and kept is not None:
                    # commit before the stop event is yielded: a caller may stop iterating at it
                    answer = collect(kept)
                    if stateful is not None:
                        self._history = history_before + [stateful, answer]
                    if config.get("trace_id"):
                        self._trace(config, messages + [answer])
                yield event
        finally:
            if stateful is not None:
                self._busy = False

    def _attempts(self, request: Any) -> Iterator[UniEvent]:
        client = self.client_type
        attempt = 0
        while True:
            chunks = None
            delivered = False
            try:
                if request.stream:
                    chunks = _transport().open_stream(self._get_session(), request, self.timeout, client)
                    parts = self._protocol.parse_stream(iter_events(chunks), client)
                else:  # embeddings: one JSON document, same event grammar
                    payload = _transport().fetch_json(self._get_session(), request, self.timeout, client)
                    parts = self._protocol.parse_response(payload, client)
                for event in drive(parts, client):
                    delivered = True
                    yield event
                return
            except (UpstreamError, TransportError) as exc:
                retryable = getattr(exc, "retryable", isinstance(exc, TransportError))
                if delivered or not retryable or attempt >= self.max_retries:
                    raise
                delay = _backoff(attempt, getattr(exc, "retry_after", None))
                attempt += 1
                logger.info("%s: retrying after %s (attempt %d of %d) in %.2fs", client, type(exc).__name__,
                            attempt, self.max_retries, delay)
                if chunks is not None:
                    chunks.close()
                    chunks = None
                time.sleep(delay)
            finally:
                if chunks is not None:
                    chunks.close()

    def _get_session(self) -> Any:
        if self._session is None:
            self._session = _transport().new_session()
        return self._session

    def _trace(self, config: Mapping[str, Any], history: List[UniMessage]) -> None:
        from .tracer import save_trace

        save_trace(config["trace_id"], self.model, history, config)


def _backoff(attempt: int, retry_after: Optional[float]) -> float:
    if retry_after is not None:
        return min(max(0.0, retry_after), RETRY_AFTER_CAP)
    return random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * (2 ** attempt)))


def _transport() -> Any:
    from . import transport  # imported on first use: `import agenthub` stays cheap

    return transport
