"""Hooks around a tool run and each of its tool calls: the seam the tracer and telemetry use too.

A ``ToolHook`` is any object with one or more of the methods below (subclass ``ToolHook`` to get no-op
defaults for the rest).  Give them as ``client.run(..., hooks=[...])`` / ``run_stateful(..., hooks=[...])``,
or with ``AutoLLMClient(hooks=[...])``: a client's hooks (and the process-wide ones of
``agenthub.attempts.register``) that have ToolHook methods apply to every run of that client too, so one
object may implement both the attempt-loop hook (``agenthub.attempts.AttemptHook``) and this one.  Order:
the client's, the process-wide ones, then the run's own, then the run's trace writer (``config["trace_id"]``).

Per run (``run`` is the ``agenthub.agent.Run``):

- ``on_run_start(run)``: once, when the run is first iterated, before the first request.
- ``around_request(run, proceed)``: each model turn's first step (where its request is sent; retries and
  failover happen inside) runs as ``proceed()``; return what it returns.  Telemetry makes the run's span
  current there, so the turn's call span is its child.  ``proceed()`` runs once (never, or twice: a
  ConfigError); the turn is what it read whatever the hook returns, and its error stands though a hook catches it.
- ``on_turn(run, message)``: a model turn's answer, in ``run.messages`` already, when its ``stop`` event
  arrives and before the caller gets that event (a caller may stop iterating there).
- ``on_results(run, message)``: a turn's results message (every call of it answered), in ``run.messages``
  already, before the next request is sent.
- ``on_run_end(run, error)``: once, when the run ends: finished, stopped (``run.stop``), closed or
  aborted (``error`` None), or raised (``error`` the exception; an ``on_run_start`` that raised too: nothing
  is sent, a journaled run's claim is let go).

Per call (``call`` is the ``tool_call`` item as ``approve`` gets it: ``name``, ``arguments``,
``tool_call_id``):

- ``before_call(call)``: in the run's thread, in call order, before ``approve``/``decisions`` are asked.
  None goes on; anything else is a decision as ``approve`` returns it: ``False`` or a reason (str) denies
  the call (an error result), ``{"arguments": {...}}`` runs it with these arguments, ``True`` runs it
  without asking ``approve``.  The first hook that decides wins.
- ``around_call(run, call, proceed)``: in the thread that runs the tool, around the tool itself
  (``call["arguments"]`` are those it runs with); ``proceed()`` runs it and returns the ``tool_result``
  item, or raises what the tool raised (the runner turns that into the error result afterwards); return
  what ``proceed()`` returns (or a ``tool_result`` item of its own: it gets the call's id; anything else is
  the call's error result, a ConfigError; a failure after ``proceed()`` returned says the tool ran, with
  what it returned).  An ``@tool(idempotent=False)`` call's ``proceed()`` runs it once: a second
  call (a hook that retries) raises ConfigError.  Telemetry opens the ``execute_tool`` span here, so what the tool does (an
  MCP request) nests under it.
- ``after_call(call, result, seconds)``: in the run's thread, in call order, once per call the runner
  answered (ran, denied, refused, timed out): ``result`` is the ``tool_result`` item (``is_error`` True on a
  failure), ``seconds`` how long the tool ran (0.0 when it did not run).

A hook's exception propagates as ``approve``'s does (``around_call``'s becomes the call's error result;
``after_call``'s once the turn's calls that ran are in the run's messages, history and journal, and no
more start; ``on_run_end``'s once every hook heard the end, and never in place of the run's own error:
then it is logged, a warning on the ``agenthub`` logger naming the hook and the exception's type); the
tracer's and telemetry's own hooks never raise (what fails in them is logged).
"""

from typing import Any, Callable, List, Optional, Sequence

from ..errors import ConfigError

__all__ = ["ToolHook", "TOOL_HOOK_METHODS", "is_tool_hook", "tool_hooks"]

#: the methods that make an object a ToolHook (any one of them)
TOOL_HOOK_METHODS = ("on_run_start", "around_request", "on_turn", "before_call", "around_call", "after_call",
                     "on_results", "on_run_end")


class ToolHook(object):
    """No-op defaults for every ToolHook method (see the module docstring)."""

    def on_run_start(self, run: Any) -> None:
        pass

    def around_request(self, run: Any, proceed: Callable[[], Any]) -> Any:
        return proceed()

    def on_turn(self, run: Any, message: Any) -> None:
        pass

    def before_call(self, call: Any) -> Any:
        return None

    def around_call(self, run: Any, call: Any, proceed: Callable[[], Any]) -> Any:
        return proceed()

    def after_call(self, call: Any, result: Any, seconds: float) -> None:
        pass

    def on_results(self, run: Any, message: Any) -> None:
        pass

    def on_run_end(self, run: Any, error: Optional[BaseException]) -> None:
        pass


def is_tool_hook(hook: Any) -> bool:
    return any(callable(getattr(hook, name, None)) for name in TOOL_HOOK_METHODS)


def tool_hooks(client_hooks: Sequence[Any], hooks: Any) -> List[Any]:
    """The hooks of a run: the client's (and process-wide) ones that are ToolHooks, then ``hooks`` (each must
    be one: a ConfigError otherwise)."""
    if hooks is None:
        if not client_hooks:
            return []
        hooks = ()
    if isinstance(hooks, (str, bytes)) or not isinstance(hooks, (list, tuple)):
        raise ConfigError("hooks must be a list of agenthub.agent.ToolHook objects")
    out = [hook for hook in client_hooks if is_tool_hook(hook)]
    for hook in hooks:
        if not is_tool_hook(hook):
            raise ConfigError("each hooks entry of a run must be an agenthub.agent.ToolHook (an object with one of "
                              "{}; got {})".format(", ".join(TOOL_HOOK_METHODS), type(hook).__name__))
        if not any(hook is other for other in out):
            out.append(hook)
    return out
