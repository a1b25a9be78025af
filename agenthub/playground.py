"""``agenthub.playground`` (documented: ``PAGE`` and ``CSP``) now lives in ``agenthub.apps.playground``;
this name stays."""

from .apps.playground import CSP, HEADERS, PAGE, SCRIPT, STYLE

__all__ = ["PAGE", "CSP", "HEADERS", "SCRIPT", "STYLE"]
