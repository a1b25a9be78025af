"""``agenthub.server`` (documented: ``agenthub.server:make_app`` for gunicorn) now lives in
``agenthub.apps.server``; this name stays."""

from .apps.server import DEFAULT_PORT, AgentHubApp, load_config, make_app, serve

__all__ = ["make_app", "load_config", "serve", "AgentHubApp", "DEFAULT_PORT"]
