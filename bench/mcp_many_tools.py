"""The official SDK's test server (tests/mcp_official_server.py) with 993 more tools of three parameters each (1,000 in all): one
large tools/list answer (about half a megabyte).  Same arguments as that server; used by bench/mcp_cpu.py."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]  # bench/mcp.py is not the mcp package
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import mcp_official_server as oracle  # noqa: E402


def lookup(city: str, days: int, units: str = "metric") -> str:
    """Look up the forecast for a city over a number of days, in metric or imperial units."""
    return "{} {} {}".format(city, days, units)


for number in range(993):  # with its own 7: 1,000 tools (agenthub.mcp.connect's max_tools)
    oracle.app.add_tool(lookup, name="lookup_{:03d}".format(number),
                        description="Tool number {}: looks a forecast up for a city and a number of days.".format(number))

if __name__ == "__main__":
    oracle.main()
