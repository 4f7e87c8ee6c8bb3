"""sample(): the seed's rules for picking a token, checked on hand-made distributions."""

from __future__ import annotations

import math

import pytest
import torch

from agentloop.model_backends.sampling import sample
from agentloop.model_families import Sampling


def piece(i: int) -> str:
    return f"t{i}"


def logits_of(probs: list[float]) -> torch.Tensor:
    return torch.log(torch.tensor(probs))


def test_greedy_takes_the_lower_id_on_a_tie():
    logits = torch.tensor([0.0, 3.0, 1.0, 3.0, 3.0, -1.0])
    token, details = sample(logits, Sampling(temperature=0), piece)
    assert token == 1
    assert details["rank"] == 1 and details["kept"] == 1 and details["p_sampled"] == 1.0
    assert [c["id"] for c in details["top"][:3]] == [1, 3, 4]
    assert [c["kept"] for c in details["top"]] == [True, False, False, False, False]


def test_p_rank_and_top_come_from_the_models_own_distribution():
    probs = [0.05, 0.4, 0.3, 0.15, 0.06, 0.04]
    torch.manual_seed(0)
    token, details = sample(logits_of(probs), Sampling(temperature=2.0, top_k=3, top_p=1.0), piece)
    assert details["p"] == pytest.approx(probs[token], rel=1e-5)
    assert details["logprob"] == pytest.approx(math.log(probs[token]), rel=1e-5)
    assert details["rank"] == sorted(probs, reverse=True).index(probs[token]) + 1
    assert [c["id"] for c in details["top"]] == [1, 2, 3, 4, 0]
    assert [c["p"] for c in details["top"]] == pytest.approx([0.4, 0.3, 0.15, 0.06, 0.05], rel=1e-5)


def test_top_k_keeps_k():
    probs = [0.4, 0.3, 0.15, 0.1, 0.05]
    _, details = sample(logits_of(probs), Sampling(temperature=1.0, top_k=2, top_p=1.0), piece)
    assert details["kept"] == 2
    assert [c["kept"] for c in details["top"]] == [True, True, False, False, False]


def test_top_p_keeps_the_smallest_prefix_that_reaches_p():
    probs = [0.4, 0.3, 0.15, 0.1, 0.05]
    for top_p, kept in [(0.4, 1), (0.41, 2), (0.7, 2), (0.71, 3), (0.85, 3), (0.86, 4), (1.0, 5)]:
        _, details = sample(
            logits_of(probs), Sampling(temperature=1.0, top_k=0, top_p=top_p), piece
        )
        assert details["kept"] == kept, top_p


def test_at_least_one_token_is_kept():
    for _ in range(20):
        token, details = sample(
            logits_of([0.2, 0.5, 0.3]), Sampling(temperature=1.0, top_p=0.0), piece
        )
        assert token == 1 and details["kept"] == 1 and details["p_sampled"] == pytest.approx(1.0)


def expected(probs, temperature, top_k, top_p):
    """The renormalized distribution the rules give, computed independently in plain Python."""
    scaled = sorted(((math.log(p) / temperature, i) for i, p in enumerate(probs)), reverse=True)
    if top_k:
        scaled = scaled[:top_k]
    z = sum(math.exp(v) for v, _ in scaled)
    cand = [(math.exp(v) / z, i) for v, i in scaled]
    kept, total = [], 0.0
    for p, i in cand:
        if total >= top_p and kept:
            break
        kept.append((p, i))
        total += p
    z = sum(p for p, _ in kept)
    return {i: p / z for p, i in kept}


@pytest.mark.parametrize(
    "temperature,top_k,top_p,draft",
    [(0.7, 4, 0.9, None), (1.3, 0, 0.8, None), (1.0, 5, 1.0, 2), (0.9, 0, 0.95, 0)],
)
def test_sampled_frequencies_match_the_renormalized_distribution(temperature, top_k, top_p, draft):
    probs = [0.3, 0.2, 0.15, 0.12, 0.1, 0.08, 0.05]
    want = expected(probs, temperature, top_k, top_p)
    torch.manual_seed(1234)
    n = 20000
    counts: dict[int, int] = {}
    for _ in range(n):
        token, _ = sample(
            logits_of(probs),
            Sampling(temperature=temperature, top_k=top_k, top_p=top_p),
            piece,
            draft=draft,
        )
        counts[token] = counts.get(token, 0) + 1
    assert set(counts) <= set(want)
    # Chi-square against the expected distribution; 30 is far beyond the 99.9th percentile for these few classes.
    chi2 = sum((counts.get(i, 0) - n * p) ** 2 / (n * p) for i, p in want.items())
    assert chi2 < 30, (counts, want)


def test_forced_token_is_reported_with_the_models_probability():
    probs = [0.5, 0.3, 0.2]
    token, details = sample(logits_of(probs), Sampling(temperature=0), piece, forced=2)
    assert token == 2 and details["rank"] == 3 and details["p"] == pytest.approx(0.2, rel=1e-5)
    assert details["p_sampled"] is None


def test_a_draw_reads_one_random_number_however_many_candidates_are_kept():
    """A seeded run must read the same random numbers on every machine. top-p's float32 cut keeps a slightly
    different count of the least likely tokens on another CPU (chapter 9's run: 1,783 on one, 1,914 on another),
    so a draw that read one number a candidate (torch.multinomial) shifted every later draw."""
    logits = torch.randn(2000, generator=torch.Generator().manual_seed(0))
    after = []
    for top_k in (0, 1500, 40):
        g = torch.Generator().manual_seed(17)
        for _ in range(5):
            sample(logits, Sampling(temperature=1.5, top_k=top_k, top_p=1.0), piece, generator=g)
        after.append(float(torch.rand((), generator=g)))
    assert after[0] == after[1] == after[2]


def test_a_seed_makes_the_draws_the_same_every_time(tiny):
    """With a seed each step draws from its own seeded generator: the same sampled tokens every run, on the
    tiny model at a temperature that draws widely; another seed, other tokens; none, torch's global draws."""
    llm = tiny("qwen3_5")
    encoded = llm.encode(
        llm.render([{"role": "user", "content": "What is 48213 * 9127?"}], None, False)
    )

    def drawn(seed):
        s = Sampling(temperature=1.5, top_k=0, top_p=1.0, max_new_tokens=24, seed=seed)
        return [e["id"] for e in llm.generate(encoded, s, lambda: False) if e["type"] == "token"]

    assert drawn(7) == drawn(7)
    assert drawn(7) != drawn(8)
    torch.manual_seed(0)
    unseeded = drawn(None)
    torch.manual_seed(0)
    assert drawn(None) == unseeded  # no seed: the global generator, as before
