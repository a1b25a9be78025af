"""A token in an mcp_servers URL (its query, as hosted MCP servers hand them out, or user:password@) is a
credential like the headers' (issue 37 P01): body_secrets scrubs it, redact_mcp_servers hides it."""

from agenthub._redact import body_secrets, redact_mcp_servers, redact_url_query, scrub_text, url_query_secrets

TOKEN = "qtok-in-the-url-Z9x8C7v6"
URL = "https://mcp.example.com/mcp?token=" + TOKEN + "&region=eu"


def test_url_query_values_and_userinfo_are_secrets():
    found = url_query_secrets("https://user:pa55word-long@mcp.example.com/mcp?token=" + TOKEN + "&x=%2Fenc%2Fvalue1")
    assert TOKEN in found and "pa55word-long" in found and "/enc/value1" in found and "%2Fenc%2Fvalue1" in found
    assert url_query_secrets("https://mcp.example.com/mcp") == []
    assert redact_url_query("https://u:pw@h.example/p?token=" + TOKEN + "&flag") == "https://***@h.example/p?token=***&flag"


def test_body_secrets_take_the_server_urls_of_both_wires():
    responses = {"tools": [{"type": "mcp", "server_label": "docs", "server_url": URL, "headers": {"A": "Bearer hdr-token-123"}}]}
    anthropic = {"mcp_servers": [{"type": "url", "name": "docs", "url": URL, "authorization_token": "anth-token-123"}]}
    for body in (responses, anthropic):
        secrets = body_secrets(body)
        assert TOKEN in secrets
        assert TOKEN not in scrub_text("bad request: " + str(body), secrets)
    import json

    assert TOKEN in body_secrets(json.dumps(anthropic).encode())


def test_redact_mcp_servers_hides_the_url_query():
    shown = redact_mcp_servers([{"url": URL, "name": "docs", "headers": {"Authorization": "Bearer x"}},
                                {"url": "https://plain.example/mcp", "name": "plain"}])
    assert shown == [{"url": "https://mcp.example.com/mcp?token=***&region=***", "name": "docs",
                      "headers": {"Authorization": "***"}},
                     {"url": "https://plain.example/mcp", "name": "plain"}]
    assert TOKEN not in str(shown)


def test_a_redacted_url_keeps_the_slashes_the_caller_wrote():
    """An error names the URL as it was written, query values hidden: ``sqlite:////abs/x.db?wait=5`` is not
    shown as ``sqlite://abs/x.db?wait=***`` (a host ``abs``), nor ``sqlite:///x.db?...`` as ``sqlite:/x.db?...``."""
    assert redact_url_query("sqlite:////abs/runs.db?wait=5") == "sqlite:////abs/runs.db?wait=***"
    assert redact_url_query("sqlite:///runs.db?wait=5&timeout=2") == "sqlite:///runs.db?wait=***&timeout=***"
    assert redact_url_query("file:///x?token=" + TOKEN + "#frag") == "file:///x?token=***#frag"
    assert redact_url_query("https://u:pw@h.example/p?a=1#f?g=2") == "https://***@h.example/p?a=***#f?g=2"
    assert redact_url_query("https://h.example/p#f?token=x") == "https://h.example/p#f?token=x"
    import pytest

    from agenthub import ConfigError, RateLimiter

    with pytest.raises(ConfigError) as caught:
        RateLimiter(rpm=1, store="sqlite:////no-such-folder-d10/runs.db?wait=5")
    assert "'sqlite:////no-such-folder-d10/runs.db?wait=***'" in str(caught.value)
