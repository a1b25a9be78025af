"""The route loop: one logical call tried on a client's endpoint, then on each fallback in order, while
no event reached the caller (``AutoLLMClient(fallbacks=[...])``; docs/reliability.md, "Failover").

- One deadline per call: ``Timeout.total`` of the client the call was made on bounds every route's
  attempts and backoffs together (a route never starts a deadline of its own).
- An entry whose circuit is open (``agenthub.breaker``) is skipped at once; a failure the entry's own
  attempt loop gave up on moves to the next entry when ``falls_over(error)`` says so; once an event was
  yielded, an error is raised as it is (two entries' events are never joined), and so is one that left a
  background response running upstream (``resume.RUNNING``: a next entry would answer, and bill, it twice).
- The call's hooks run once per call (``on_call_start`` / ``on_call_end``) and on every attempt of
  every route (``before_attempt`` ... ``on_done``, a route's own hooks after them): see
  ``agenthub.attempts``.
- ``call.route`` is the route that answered (set when its first event arrives); ``answered(route)``
  tells the client (its ``last_route``).

This module knows nothing of a client: a route is a ``Route`` (what it is called, its circuit, and how
to run the call's attempts there), built by ``AutoLLMClient``.
"""

import logging
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .attempts import Attempt, AttemptHook, answered, end_call, start_call, start_deadline
from .breaker import breaker_for
from .errors import AgentHubError, ServerError, StreamProtocolError, TransportError, UpstreamError
from .resume import RUNNING

__all__ = ["Route", "run_routes", "unwell", "merge_hooks"]

logger = logging.getLogger("agenthub")


class Route(object):
    """One entry of a failover call: ``info`` ({"model", "client_type", "host"}), ``circuit`` (the
    breaker's key: client type, "host:port", model), ``hooks`` (the hooks its attempts run) and
    ``attempts(call, watch, hooks, deadline)``: the events of the call on this route (its attempt loop,
    ``whole_call=False``; it may raise before the first event, a ConfigError for a request this route's
    dialect cannot send)."""

    __slots__ = ("info", "circuit", "hooks", "attempts")

    def __init__(self, info: Dict[str, Any], circuit: Tuple[str, str, str], hooks: Sequence[AttemptHook],
                 attempts: Callable[[Attempt, Any, Sequence[AttemptHook], Optional[float]], Iterator[Any]]) -> None:
        self.info = info
        self.circuit = circuit
        self.hooks = hooks
        self.attempts = attempts


def merge_hooks(first: Sequence[AttemptHook], then: Sequence[AttemptHook]) -> List[AttemptHook]:
    """``first`` (the call's hooks), then those of ``then`` (a fallback client's own) that do not repeat
    one of them: the same object, or a hook of the same class acting for the same object or the same shared
    account (its ``shares`` attribute: a BudgetHook's budget, a LimiterHook's limiter, and their ``account``: two
    Budgets of one store and key; a fallback named by model shares its primary's budget: one hold per attempt,
    never two)."""
    keys = set(_hook_key(hook) for hook in first)
    merged = list(first)
    for hook in then:
        key = _hook_key(hook)
        if key not in keys:
            keys.add(key)
            merged.append(hook)
    return merged


def _hook_key(hook: Any) -> Any:
    name = getattr(hook, "shares", None)  # (AttemptHook.shares: the attribute naming what it acts for)
    shared = getattr(hook, name, None) if isinstance(name, str) else None
    if shared is None:
        return id(hook)
    account = getattr(shared, "account", None)  # two budgets (limiters) of one shared account are one: held once
    return type(hook), name, id(shared) if account is None else account


def unwell(error: BaseException) -> bool:
    """A failure that says the endpoint is down or overloaded (what fails over and counts against its
    circuit): a retryable status after the retries, a connection failure or a timeout, an in-stream
    error or a cut before any content.  An abort by the caller, a fork, a 400 or a 401 are not."""
    if isinstance(error, TransportError):
        return not (error.__dict__.get("aborted") or error.__dict__.get("forked"))
    if isinstance(error, (UpstreamError, StreamProtocolError)):
        return bool(getattr(error, "retryable", False))
    return False


def run_routes(call: Attempt, watch: Any, routes: Sequence[Route], *, hooks: Sequence[AttemptHook],
               falls_over: Callable[[BaseException], bool], breaker: Optional[Dict[str, Any]] = None,
               total: Optional[float] = None, answered_by: Optional[Callable[[Dict[str, Any]], None]] = None
               ) -> Iterator[Any]:
    """The events of ``call`` from the first of ``routes`` that answers (see the module docstring).
    ``hooks``: the call's (``on_call_start`` / ``on_call_end`` run once, here); ``breaker``: the
    circuit settings (None: no circuit breaker); ``total``: the call's deadline in seconds (one for all
    routes); ``answered_by(info)``: told which route answered, at its first event."""
    deadline, timer = start_deadline(watch, total)
    last_error = None  # type: Optional[AgentHubError]
    final = None  # type: Optional[AgentHubError]
    try:
        answer = start_call(call, hooks)
        if answer is not None:  # a hook answered the call (a cache hit): no route is tried
            if answered_by is not None and call.route is not None:
                answered_by(call.route)  # the client's last_route says so too
            yield from answered(call, answer)
            return
        for index, route in enumerate(routes):
            info = route.info
            call.routes_left = len(routes) - index - 1
            gate = breaker_for(*route.circuit) if breaker is not None else None
            probe = None if gate is None else gate.admit(breaker["cooldown"])  # type: ignore[index]
            if gate is not None and probe is None:
                logger.info("agenthub fallback: %s (%s, %s) skipped: its circuit is open", info["model"],
                            info["client_type"], info["host"])
                continue
            started = False
            verdict = False
            events = None
            if last_error is not None:  # the id a route that failed before content named (a background response
                call.response_id = call.response_model = None  # that failed upstream) is not this route's answer's
            try:
                events = route.attempts(call, watch, route.hooks, deadline)
                for event in events:
                    if not started:
                        started = verdict = True
                        if gate is not None:
                            gate.success()
                        call.route = info
                        if answered_by is not None:
                            answered_by(info)
                    yield event
                return
            except AgentHubError as exc:
                if gate is not None and not started and unwell(exc) and not exc.__dict__.get("_agenthub_paused"):
                    gate.failure(breaker["failures"])
                    verdict = True
                if started or watch.reason is not None or exc.__dict__.get(RUNNING) or not falls_over(exc):
                    final = exc
                    raise
                logger.info("agenthub fallback: %s (%s, %s) skipped: %s%s", info["model"], info["client_type"],
                            info["host"], type(exc).__name__,
                            "" if getattr(exc, "status", None) is None else " {}".format(exc.status))
                last_error = exc
            finally:
                if events is not None:
                    events.close()  # type: ignore[attr-defined]
                if gate is not None and not verdict:
                    gate.release(probe)  # a probe that ended with no verdict (closed early, a 400): another may go
        if last_error is not None:
            final = last_error
            raise last_error
        cooldown = breaker["cooldown"] if breaker else 0
        final = ServerError("{}: every route is unavailable (their circuits are open after repeated failures; "
                            "they are tried again after their cooldown of {:g}s)".format(call.model, cooldown),
                            client=call.client_type, status=None, error_type="circuit_open", retryable=True,
                            retry_after=cooldown if breaker else None)
        raise final
    except AgentHubError as exc:
        final = exc
        raise
    except BaseException as exc:
        if not isinstance(exc, GeneratorExit):  # (closed by its caller: no failure)
            call.raised = type(exc)
        raise
    finally:
        if timer is not None:
            timer.cancel()
        call.error = final
        end_call(call, hooks)
