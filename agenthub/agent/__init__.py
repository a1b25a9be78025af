"""The agent wing: tools from Python functions (``tools``) and the tool loop run for you (``runner``).

It composes the public client (``AutoLLMClient.streaming_response``), as ``agenthub.jobs`` does;
``client.run`` and ``client.run_stateful`` are thin methods delegating to ``runner``.
"""

from .runner import Run, RunResult
from .tools import Tool, tool

__all__ = ["Tool", "tool", "Run", "RunResult"]
