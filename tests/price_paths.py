"""One turn priced on every path agenthub prices a turn on: ``agenthub.cost`` of the answer's usage, a Budget's
settlement, a run's cost_usd, a job row and JobSummary, serve's /v1/metrics and the Budget of serve's client."""

import json

import requests

from server_support import Builtin

from agenthub import AutoLLMClient, Budget, cost, jobs
from agenthub.jobs import read_output
from agenthub.types import to_jsonable

KEY = "server-key-0123456789"


def prices_on_every_path(model, kwargs, config, messages, tmp_path):
    """-> {path: USD} for one turn of ``model`` through a client built with ``kwargs`` (its upstream answering
    every request the same).  A ``config`` with ``extra_body``: the served model's ``default_config`` has it (an
    agenthub server takes none from its callers)."""
    def client(**extra):
        return AutoLLMClient(model, **dict(kwargs, **extra))

    paths = {"cost": cost(model, client().response(messages, config)["usage_metadata"])}
    budget = Budget(5.0)
    client(budget=budget).response(messages, config)
    paths["budget"] = budget.spent_usd
    paths["run"] = client().run(messages, config, tools=[]).result().cost_usd
    rows = tmp_path / "in.jsonl"
    rows.write_text("".join(json.dumps({"id": "r{}".format(n), "model": model, "messages": to_jsonable(messages),
                                        "config": config}) + "\n" for n in range(2)))  # (bytes as {"__bytes__"})
    summary = jobs.run(str(rows), str(tmp_path / "out.jsonl"), workers=1, progress=False,
                       client_factory=lambda *route: client())
    paths["job row"] = read_output(str(tmp_path / "out.jsonl"))[0]["cost_usd"]
    paths["JobSummary / 2"] = summary.cost_usd / 2

    from agenthub.apps.server import make_app

    row = dict(kwargs, id=model, model=model)
    if "extra_body" in config:
        row["default_config"] = {"extra_body": config["extra_body"]}
        config = {key: value for key, value in config.items() if key != "extra_body"}
    with Builtin(make_app({"models": [row], "api_keys": [KEY]})) as site:
        served = Budget(5.0)
        AutoLLMClient(model, client_type="agenthub", base_url=site.url, api_key=KEY, max_retries=0,
                      budget=served).response(messages, config)
        paths["serve client's budget"] = served.spent_usd
        text = requests.get(site.url + "/v1/metrics", headers={"Authorization": "Bearer " + KEY}, timeout=10).text
    line = [entry for entry in text.splitlines()
            if entry.startswith('agenthub_cost_usd_total{model="%s"}' % model)][0]
    paths["serve metrics"] = float(line.split()[-1])
    return paths
