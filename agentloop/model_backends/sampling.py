"""How each token is picked, shared by every backend that sees the logits (chapter 9).

The model's own distribution comes first (softmax of the raw logits: T = 1, nothing cut off): a token's p, its
rank and the top 5 all come from it. Then the settings (candidates()): T <= 0 is greedy (the most likely token,
the lower id on a tie, as argmax takes it); otherwise logits / T -> keep the top k (0: no limit) -> softmax ->
keep the most likely tokens until their probabilities add up to top_p (at least one) -> renormalize; then
sample() draws one.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from agentloop.model_families import Sampling

TOP_N = 5


def candidates(logits: torch.Tensor, s: Sampling) -> tuple[torch.Tensor, torch.Tensor]:
    """The tokens the settings keep from 1-D `logits`, most likely first, and their probabilities among
    themselves (they add up to 1): what sample() draws from, and the next-token panel's p_kept."""
    if s.temperature <= 0:  # T -> 0 is greedy decoding: the most likely token alone
        return logits.argmax().reshape(1), torch.ones(1)
    scaled = logits / s.temperature
    if s.top_k > 0:
        cand_logits, cand_ids = scaled.topk(min(s.top_k, scaled.numel()))
    else:
        cand_logits, cand_ids = scaled.sort(descending=True)
    cand_probs = torch.softmax(cand_logits, -1)
    # Nucleus: the smallest prefix whose probability reaches top_p; the first token always stays.
    kept = max(1, int(((cand_probs.cumsum(-1) - cand_probs) < s.top_p).sum()))
    return cand_ids[:kept], cand_probs[:kept] / cand_probs[:kept].sum()


def draw(weights: torch.Tensor, generator: torch.Generator | None = None) -> int:
    """One index of `weights`, each as often as its weight: one uniform number u, and the first index whose running
    total passes u of the whole (as the panel's drawIndex does). One random number a draw, however many candidates
    there are: torch.multinomial takes one a candidate, so a seeded run read other numbers wherever `kept` came out
    otherwise, as top-p's float32 cut does on another CPU, and went another way from there."""
    total = weights.double().cumsum(-1)
    u = float(torch.rand((), generator=generator, dtype=torch.float64)) * float(total[-1])
    return min(int((total <= u).sum()), len(weights) - 1)


def sample(
    logits: torch.Tensor,
    s: Sampling,
    piece: Callable[[int], str],
    draft: int | None = None,
    forced: int | None = None,
    generator: torch.Generator | None = None,
) -> tuple[int, dict]:
    """Pick the next token from 1-D `logits` and report the model's distribution and what the settings did to it.

    A `draft` (the MTP drafter's guess) is kept with the probability the settings give it (in greedy decoding:
    when it is the top token); otherwise the pick comes from the other candidates, so each token still comes out
    exactly as often as without a drafter. A `forced` token is taken whatever the settings say (a continuation
    supplied from outside), and reported like any other. `generator`: where the random draws come from (a
    seeded one makes a sampled run the same run every time); None is torch's global one."""
    # [quote:distribution]
    probs = torch.softmax(logits, -1)  # the model's own distribution
    # Equally likely tokens go lowest id first, as argmax (and so generate()) takes them; topk leaves their order open.
    top = sorted(
        zip(*probs.topk(min(TOP_N, probs.numel()))), key=lambda c: (-float(c[0]), int(c[1]))
    )
    # [/quote:distribution]

    # [quote:draw]
    cand_ids, cand_probs = candidates(logits, s)
    kept = len(cand_ids)
    if s.temperature <= 0:  # one candidate: nothing to draw
        chosen, p_sampled = int(cand_ids[0]), 1.0
    else:
        at = (cand_ids == draft).nonzero().flatten() if draft is not None else []
        if len(at) and float(torch.rand((), generator=generator)) < float(cand_probs[at[0]]):
            pick = int(at[0])
        else:
            weights = cand_probs
            if len(at):  # the guess was turned down: draw from the other candidates
                weights = cand_probs.clone()
                weights[at[0]] = 0
            pick = draw(weights, generator)
        chosen, p_sampled = int(cand_ids[pick]), float(cand_probs[pick])
    # [/quote:draw]

    # [quote:forced]
    if forced is not None:
        chosen = forced
        p_sampled = None  # the settings did not pick it
    # [/quote:forced]

    # [quote:report]
    p = float(probs[chosen])
    return chosen, {
        "p": p,
        "logprob": float(torch.log(probs[chosen])) if p > 0 else None,
        "rank": int((probs > probs[chosen]).sum()) + 1,
        "p_sampled": p_sampled,
        "kept": kept,
        # Candidates are a prefix of the tokens sorted by probability, so a rank below `kept` survived.
        "top": [
            {"id": int(i), "piece": piece(int(i)), "p": float(v), "kept": rank < kept}
            for rank, (v, i) in enumerate(top)
        ],
    }
    # [/quote:report]
