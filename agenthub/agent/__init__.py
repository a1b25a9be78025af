"""The agent wing: tools from Python functions (``tools``), the tool loop run for you (``runner``) and the
hooks around a run and its tool calls (``hooks``).

It composes the public client (``AutoLLMClient.streaming_response``), as ``agenthub.jobs`` does;
``client.run`` and ``client.run_stateful`` are thin methods delegating to ``runner``.
"""

from .hooks import ToolHook
from .journal import JournalError, RunLockedError
from .runner import CallContext, Run, RunResult, call_digest, current_call
from .tools import Tool, tool

__all__ = ["Tool", "tool", "Run", "RunResult", "ToolHook", "call_digest", "current_call", "CallContext", "JournalError",
           "RunLockedError"]
