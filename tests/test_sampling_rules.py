"""The sampling stage's JavaScript copy of sample()'s rules (docs/assets/stages/sampling-rules.js) keeps what
Python's candidates() keeps (agentloop/model_backends/sampling.py), with the same probabilities among the kept.

The copy is run by the pinned Node (node_modules/node), in one process for every case, over a few hundred random
distributions (1 to 300 tokens, flat to sharply peaked, some with zero-probability tokens, some with ties) and
settings drawn from the edges and at random (temperature, top-k, top-p). The panel sees only the listed tokens of
an /api/next-token answer: a listing shorter than the vocabulary keeps what Python keeps over the whole of it
wherever exactOverVocabulary() says so. The one random part, the draw, takes its uniform number as an argument,
so it is checked too: over an even grid of numbers each kept token comes out in proportion to its probability.

A setting whose top-p cut falls within rounding (a token's cumulative probability before it within 1e-9 of top_p:
mostly top-p 1 on a sharp distribution, whose sum rounds to 1 before its tail) could go either way in any two
implementations, and does in a few; those cases are counted, not compared. The same rules are
checked through the panel in a browser, on the tiny models' real distributions, in tests/test_stage_panels.py."""

from __future__ import annotations

import json
import math
import random
import subprocess
from pathlib import Path

import pytest
import torch

from agentloop.model_backends.sampling import candidates
from agentloop.model_families import Sampling

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "docs" / "assets" / "stages" / "sampling-rules.js"
NODE = ROOT / "node_modules" / "node" / "bin" / "node"
LISTED = 20  # the tokens a shortened listing shows (the panel's answers list 50)
GRID = 1000  # uniform numbers for the draw, evenly spaced
RUN = """
import { readFileSync } from "node:fs";
const r = await import(process.argv[1]);
const { dists, cases } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const grid = Number(process.argv[3]);
const out = cases.map(([d, listed, temperature, topK, topP]) => {
  const top = dists[d].slice(0, listed);
  const cands = r.candidates(top);
  const got = r.applySampling(cands, temperature, topK, topP);
  const counts = {};
  for (let i = 0; i < grid; i++) {
    const j = r.drawIndex(got.pKept, (i + 0.5) / grid);
    counts[j] = (counts[j] || 0) + 1;
  }
  return {
    ids: cands.slice(0, got.kept).map((c) => c.id),
    pKept: got.pKept.slice(0, got.kept),
    zeroAfter: got.pKept.slice(got.kept).every((p) => p === 0),
    counts,
    exact: r.exactOverVocabulary(listed, dists[d].length, temperature, topK),
  };
});
process.stdout.write(JSON.stringify(out));
"""


def distributions(rng: random.Random) -> list[list[float]]:
    """Logits of many shapes: sizes 1 to 300, scales from nearly flat to one token holding almost all, some
    tokens impossible (-inf), and some with ties (a few values repeated)."""
    found = []
    for n in (1, 2, 3, 5, 8, 13, 30, 50, 120, 300):
        for scale in (0.05, 0.5, 1.0, 3.0, 10.0, 40.0):
            for _ in range(3):
                found.append([rng.gauss(0, scale) for _ in range(n)])
        if n >= 3:
            impossible = [rng.gauss(0, 2.0) for _ in range(n)]
            for i in rng.sample(range(n), n // 3):
                impossible[i] = -math.inf
            found.append(impossible)
            found.append([float(rng.choice((0, 1, 1, 2, 3))) for _ in range(n)])  # ties
    return found


def settings(rng: random.Random, n: int) -> list[tuple[float, int, float]]:
    """(temperature, top_k, top_p): the edges (greedy, top-k 0, 1 and beyond the vocabulary, top-p 0 and 1) and
    values at random between them."""
    edges = [
        (0.0, 0, 1.0),
        (0.0, 3, 0.5),
        (1.0, 0, 1.0),
        (1.0, 1, 1.0),
        (1.0, 0, 0.0),
        (0.7, n + 5, 0.9),
        (2.0, 0, 0.95),
        (1e-3, 0, 1.0),
    ]
    drawn = [
        (
            rng.choice((0.1, 0.3, 0.6, 1.0, 1.5, 3.0, rng.uniform(0.01, 4.0))),
            rng.choice((0, 0, 1, 2, 5, 10, 40, rng.randint(0, n + 3))),
            rng.choice((1.0, 0.95, 0.9, 0.5, 0.05, rng.random())),
        )
        for _ in range(24)
    ]
    return edges + drawn


def listing(logits: list[float]) -> list[dict]:
    """The tokens as /api/next-token lists them: most likely first (the lower id first among equals), each with
    its p and its logprob (null where p is 0)."""
    logprobs = torch.log_softmax(torch.tensor(logits, dtype=torch.float64), -1).tolist()
    order = sorted(range(len(logits)), key=lambda i: (-logprobs[i], i))
    return [
        {
            "id": i,
            "piece": f"t{i}",
            "p": math.exp(logprobs[i]),
            "logprob": logprobs[i] if logprobs[i] > -math.inf else None,
        }
        for i in order
    ]


def python_keeps(logits: list[float], temperature: float, top_k: int, top_p: float):
    """candidates() in float64 over the whole vocabulary: the kept ids, their probabilities among the kept, and
    how near the top-p cut came to a kept-or-cut decision (the smallest |cumsum - p - top_p|)."""
    x = torch.tensor(logits, dtype=torch.float64)
    s = Sampling(temperature=temperature, top_p=top_p, top_k=top_k)
    ids, probs = candidates(x, s)
    margin = math.inf
    if temperature > 0:
        scaled = x / temperature
        k = min(top_k, len(logits)) if top_k > 0 else len(logits)
        p = torch.softmax(scaled.sort(descending=True).values[:k], -1)
        # The first token is kept whatever its sum says (at least one): only the others' decisions count.
        margin = float(((p.cumsum(-1) - p)[1:] - top_p).abs().min()) if k > 1 else math.inf
    return ids.tolist(), probs.tolist(), margin


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    assert NODE.exists(), f"{NODE} is missing: run `npm ci` (make setup does)"
    rng = random.Random(46)
    dists = distributions(rng)
    cases = []
    for d, logits in enumerate(dists):
        for temperature, top_k, top_p in settings(rng, len(logits)):
            for listed in {len(logits), min(len(logits), LISTED)}:
                cases.append((d, listed, temperature, top_k, top_p))
    folder = tmp_path_factory.mktemp("rules")
    data = folder / "cases.json"
    data.write_text(json.dumps({"dists": [listing(x) for x in dists], "cases": cases}))
    ran = subprocess.run(
        [str(NODE), "--input-type=module", "-e", RUN, RULES.as_uri(), str(data), str(GRID)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    return dists, cases, json.loads(ran.stdout)


def test_the_copy_keeps_what_candidates_keeps(results):
    dists, cases, got = results
    compared = near_the_cut = 0
    for (d, listed, temperature, top_k, top_p), js in zip(cases, got):
        logits = dists[d]
        case = (d, len(logits), listed, temperature, top_k, top_p)
        assert js["zeroAfter"], case  # what is cut has no probability
        assert sum(js["pKept"]) == pytest.approx(1.0, abs=1e-9), case
        whole = listed == len(logits)
        if not whole and not js["exact"]:
            # The unlisted tokens would have been candidates too: the panel says its set is approximate.
            assert temperature > 0 and (top_k == 0 or top_k > listed), case
            continue
        ids, probs, margin = python_keeps(logits, temperature, top_k, top_p)
        if margin < 1e-9:
            near_the_cut += 1
            continue
        assert len(js["ids"]) == len(ids), case
        tied = len(set(logits)) < len(logits)
        if tied and temperature > 0:
            # Among equal logits torch's sort leaves the order open: the same logits and probabilities are kept.
            assert sorted(logits[i] for i in js["ids"]) == sorted(logits[i] for i in ids), case
            assert sorted(js["pKept"]) == pytest.approx(sorted(probs), abs=1e-9), case
        else:
            assert js["ids"] == ids, case
            assert js["pKept"] == pytest.approx(probs, abs=1e-9), case
        compared += 1
    # Near the cut: mostly top-p 1 on a sharp distribution, whose sum reaches 1.0 before its tail does.
    assert compared > 6000 and near_the_cut < compared / 10, (compared, near_the_cut)


def test_greedy_keeps_the_most_likely_token_the_lower_id_on_a_tie(results):
    dists, cases, got = results
    greedy = [(c, js) for c, js in zip(cases, got) if c[2] <= 0]
    assert len(greedy) > 300
    for (d, _, _, _, _), js in greedy:
        logits = dists[d]
        assert js["ids"] == [logits.index(max(logits))] and js["pKept"] == [1]


def test_a_draw_comes_out_in_proportion_to_its_probability(results):
    _, cases, got = results
    for case, js in zip(cases, got):
        counts = {int(i): n for i, n in js["counts"].items()}
        assert sum(counts.values()) == GRID
        assert set(counts) <= set(range(len(js["ids"]))), case  # only kept tokens are drawn
        for i, p in enumerate(js["pKept"]):
            assert abs(counts.get(i, 0) - GRID * p) <= 1 + 1e-6, (case, i)
