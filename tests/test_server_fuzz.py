"""Schemathesis against the demo server's own OpenAPI, over real HTTP: whatever the requests, no 5xx and no hang.

A run waits for a permission throughout, so the generated runs and model loads meet the busy server (409) rather
than starting minutes of generation; the one-stage calls (render, tokenize, next-token) run for real.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from demo_server.client import Client
from demo_server.guard import TOKEN_HEADER
from tests.conftest import TINY, demo_server
from tests.test_server import FORCED, SETTINGS

EXAMPLES = 25  # per operation and mode: 12 operations x 2 modes x 25, some seconds


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with demo_server(
        tmp_path_factory.mktemp("book") / "site",
        model=str(TINY["qwen3_5"]),
        allow_forced=True,
        device="cpu",
        orphan_s=3600,
    ) as srv:
        c = Client(srv.url)
        run_id = c.start_run("What is 2**64?", SETTINGS, FORCED["qwen3_5"])
        for e in c.run_events(run_id):
            if e["type"] == "permission":
                break
        srv.token = c.token
        yield srv
        c.post(f"/api/runs/{run_id}/stop")


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_request_makes_the_server_fail_or_hang(server, mode):
    schema = schemathesis.openapi.from_url(f"{server.url}/api/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert (
        len(operations) == 14
    )  # with POST /api/media/expand (chapter 7) and /api/runs/{run_id}/next (the pace)
    statuses: dict[str, set[int]] = {}
    for operation in operations:
        label = f"{operation.method.upper()} {operation.path}"

        @given(case=operation.as_strategy(mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.explicit, Phase.generate],
        )
        def call(case):
            response = case.call_and_validate(
                base_url=server.url,
                headers={TOKEN_HEADER: server.token},
                checks=[not_a_server_error],
                timeout=30,
            )
            # call() runs before the loop moves on, so `label` is this operation's.
            statuses.setdefault(label, set()).add(response.status_code)  # noqa: B023

        try:
            call()
        except Unsatisfiable:
            # Negative mode: an operation without parameters has nothing to get wrong
            assert (
                mode == GenerationMode.NEGATIVE and not operation.body and operation.method == "get"
            ), label
    assert Client(server.url).status()["ok"]  # and the server still serves
    print(mode, statuses)
