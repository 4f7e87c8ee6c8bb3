"""The book's recorded runs are re-recorded from the real demo server and must keep their structure.

A change to the loop, the events or the server that changes what a chapter's replay would show fails here, and
`python scripts/record_runs.py` records them afresh. Timings, ids and the tokens a model writes may differ
between two recordings; the order of the events and the fields they carry may not.
"""

from __future__ import annotations

import json
import re

import pytest

from scripts.record_runs import ROOT, RUNS, Recorder, record, specs, structure

SPECS = specs()


@pytest.fixture(scope="module")
def client():
    with Recorder() as c:
        yield c


def committed(name: str, spec: dict):
    path = RUNS / (f"{name}.jsonl" if spec["kind"] == "run" else f"{name}.json")
    assert path.exists(), (
        f"{path.name} was never recorded: run python scripts/record_runs.py {name}"
    )
    text = path.read_text()
    return (
        [json.loads(line) for line in text.splitlines()]
        if spec["kind"] == "run"
        else json.loads(text)
    )


def test_there_are_recordings():
    assert "chapter1" in SPECS and len(SPECS) >= 10


def test_every_recorded_event_links_to_the_line_that_sends_it():
    # A replayed event's card links to its source line (`src`); code that moved since the recording would
    # send the reader to the wrong line, or to a file that is gone.
    stale = set()
    for path in sorted(RUNS.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            src = json.loads(line).get("src")
            if not src:
                continue
            file, number = src.rsplit(":", 1)
            source = ROOT / file
            lines = source.read_text().splitlines() if source.is_file() else []
            if not 0 < int(number) <= len(lines) or "emit" not in lines[int(number) - 1]:
                stale.add(path.stem)
    # scripts/record_runs.py NAME …; chapter 11's pair: scripts/record_backends.py
    assert not stale, f"re-record them: python scripts/record_runs.py {' '.join(sorted(stale))}"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_recording_keeps_its_structure(client, name):
    spec = SPECS[name]
    old = committed(name, spec)
    new = record(spec, client)
    assert structure(new) == structure(old), (
        f"{name} changed: re-record it with python scripts/record_runs.py {name}"
    )
    if spec["kind"] == "run":
        assert new[0]["type"] == "run_start" and new[-1]["type"] == "run_end"
        if spec.get("settings", {}).get("temperature", 1) == 0:  # greedy: the same calls
            calls = lambda evs: [(e["name"], e["args"]) for e in evs if e["type"] == "tool_call"]  # noqa: E731
            assert calls(new) == calls(old)
            if prompts(new) == prompts(old):  # the same tokens in: the same answer out
                assert new[-1]["final"] == old[-1]["final"]
            else:  # only where pi's own prompt names this checkout (see at_checkout)
                assert at_checkout(prompts(new)) == at_checkout(prompts(old)), (
                    f"{name}: the model read another prompt than the recording's"
                )


def prompts(events: list[dict]) -> list[str]:
    """Each step's context: every token the model read."""
    return [e["prompt"] for e in events if e["type"] == "context"]


def at_checkout(texts: list[str]) -> list[str]:
    """The contexts with the folder the project is checked out in left out. pi's own system prompt names
    where npm put pi (…/node_modules/@earendil-works/pi-coding-agent/README.md), so a recording made in one
    checkout and replayed from another (CI clones elsewhere) reads other tokens there; where two of the
    answer's first tokens nearly tie (ch16-pi-own: "I" 0.39 against "4" 0.36), greedy decoding may then word the
    answer differently. The calls, whose tokens are all near-certain, must still be the same."""
    return [re.sub(r"\S*(?=/node_modules/@earendil-works/)", "<checkout>", t) for t in texts]
