"""A name or id that ends in a newline is refused where it is checked, as one with any other stray character is:
Python's ``$`` also matches just before a string's last newline, so the checks that ``re.match`` an anchored
pattern let ``"x\\n"`` through (to a URL path, a header or a store key, where it fails later, untyped, or at the
provider).  Each check matches the whole string now."""

import pytest

from agenthub import hosts
from agenthub.errors import ConfigError
from agenthub.hosts import azure, vertex
from agenthub.stores.base import check_key
from agenthub.validate import check_config

VERTEX = hosts.CLIENT_TYPES["vertex"]
FOUNDRY = hosts.CLIENT_TYPES["azure-anthropic"]
AZURE = hosts.CLIENT_TYPES["azure"]

CASES = [
    ("store key", lambda: check_key("team-a\n"), "key must be 1 to 200 printable ASCII characters"),
    ("vertex model", lambda: vertex.configure(VERTEX, "gemini-2.5-flash\n", None, "tok",
                                              {vertex.PROJECT_ENV: "proj-1"}), "is not a Vertex AI model id"),
    ("vertex location", lambda: vertex.configure(VERTEX, "gemini-2.5-flash", None, "tok", {
        vertex.PROJECT_ENV: "proj-1", vertex.LOCATION_ENV: "us-central1\n"}), "is not a Google Cloud location"),
    ("vertex project", lambda: vertex.configure(VERTEX, "gemini-2.5-flash", None, "tok",
                                                {vertex.PROJECT_ENV: "proj-1\n"}), "is not a Google Cloud project id"),
    ("azure api version", lambda: azure.configure(AZURE, "gpt-4o", "https://res.openai.azure.com", "k",
                                                  {azure.VERSION_ENV: "2024-10-21\n"}), "must look like 2024-10-21"),
    ("foundry resource", lambda: azure.configure(FOUNDRY, "claude-sonnet-4-6", None, "k",
                                                 {azure.FOUNDRY_RESOURCE_ENV: "my-res\n"}),
     "must be an Azure resource name"),
    ("mcp server name", lambda: check_config({"mcp_servers": [{"url": "https://mcp.example.com/mcp",
                                                               "name": "tools\n"}]}),
     "['name'] must be 1 to 64 letters"),
]


@pytest.mark.parametrize("check,expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_value_ending_in_a_newline_is_refused_where_it_is_checked(check, expected):
    with pytest.raises(ConfigError) as info:
        check()
    assert expected in str(info.value)
