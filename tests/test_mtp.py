"""MTP drafting (mtp.py, SimpleBackend._drafted) and the drafter's distillation (training/distill.py), on the tiny
checkpoints: drafted decoding writes what plain decoding writes, its counts add up, training shows the drafter
exactly what it sees at run time, and a model without a drafter says so."""

from __future__ import annotations

import pytest
import torch

from agentloop import events as events_module
from agentloop.harnesses.base import run_reporting_errors
from agentloop.harnesses.settings import RunSettings
from agentloop.harnesses.simple_harness import SimpleHarness
from agentloop.model_backends import model_folder
from agentloop.model_backends.mtp import Drafter, kv_layers
from agentloop.model_backends.simple_backend import SimpleBackend
from agentloop.model_families import Sampling, UnsupportedModel
from agentloop.paths import MODELS_DIR
from agentloop.training.distill import columns, masks
from tests.conftest import TINY, load
from tests.fake_hub import ORG

DRAFTER = MODELS_DIR / "tiny-gemma4-assistant"


@pytest.fixture
def gemma():
    """tiny-gemma4 with its drafter, this test's own (tests here replace its guesses, or its precision)."""
    b = load(TINY["gemma4"])
    b.load_drafter()
    return b


def tokens(b, question: str, **sampling) -> tuple[list[int], dict]:
    prompt = b.encode(b.render([{"role": "user", "content": question}], None, False))
    events = list(b.generate(prompt, Sampling(**sampling), lambda: False))
    return [e["id"] for e in events if e["type"] == "token"], events[-1]


def test_the_drafter_is_the_checkpoint_beside_the_model(gemma):
    assert gemma.drafter.folder == DRAFTER
    assert gemma.drafter.n_guesses == 6
    # tiny-gemma4: layers sliding, sliding, full, then two that reuse keys and values: the drafter reads 1 and 2.
    assert kv_layers(gemma.model.config.get_text_config()) == {
        "sliding_attention": 1,
        "full_attention": 2,
    }


@pytest.mark.parametrize("question", ["Compute 67717 + 5255.", "Hello there!"])
def test_greedy_drafted_decoding_writes_what_plain_decoding_writes(gemma, question):
    # 300 tokens: past the sliding window (128), where taking guesses back must also trim the window's cache.
    plain, plain_end = tokens(gemma, question, temperature=0, max_new_tokens=300)
    drafted, end = tokens(gemma, question, temperature=0, max_new_tokens=300, mtp=True)
    assert drafted == plain and end["raw"] == plain_end["raw"]
    assert plain_end["mtp"] is None
    counts = end["mtp"]
    assert counts["drafted"] == 6 * (
        counts["forwards"] - 1
    )  # six guesses a round, none before the prefill's token
    # Every forward pass gives the model's own token, plus the guesses it kept (the last round may be cut short).
    assert end["n_tokens"] in (
        counts["forwards"] + counts["accepted"],
        counts["forwards"] + counts["accepted"] - 1,
    )


def test_kept_guesses_are_marked_drafted(gemma, monkeypatch):
    # A drafter that knows what the model will write, and every other round spoils one guess: rounds are kept
    # whole or cut short, over 300 tokens, past the sliding window.
    question = "Compute 67717 + 5255."
    plain, _ = tokens(gemma, question, temperature=0, max_new_tokens=300)
    prompt = gemma.encode(gemma.render([{"role": "user", "content": question}], None, False))
    rounds = []

    def guess(token_id, hidden, cache):
        i = cache.get_seq_length() - prompt.n_tokens  # token_id is the i-th token written
        guesses = (plain[i + 1 : i + 7] + [0] * 6)[:6]
        k = len(rounds) % 6
        if len(rounds) % 2 and i + 1 + k < len(plain):  # every other round, guess k is wrong
            guesses[k] = 1 if plain[i + 1 + k] != 1 else 2
        rounds.append(guesses)
        return guesses

    monkeypatch.setattr(gemma.drafter, "guess", guess)
    events = list(
        gemma.generate(prompt, Sampling(temperature=0, max_new_tokens=300, mtp=True), lambda: False)
    )
    toks = [e for e in events if e["type"] == "token"]
    assert [e["id"] for e in toks] == plain
    assert [bool(e.get("drafted")) for e in toks[:8]] == [False] + [True] * 6 + [
        False
    ]  # round 1: all kept
    counts = events[-1]["mtp"]
    assert counts["accepted"] == sum(bool(e.get("drafted")) for e in toks) and counts[
        "forwards"
    ] == 1 + len(rounds)
    assert counts["forwards"] < len(plain) / 3
    # Each round is one draft event before its tokens: the guesses, how many the model kept (those
    # tokens, marked drafted), and after them the model's own pick where it turned a guess down.
    drafts = [e for e in events if e["type"] == "draft"]
    assert [[g["id"] for g in d["guessed"]] for d in drafts] == rounds
    turned_down = 0
    for d in drafts:
        events_module.check({**d, "step": 1})
        assert d["guessed"][0]["piece"] == gemma.piece(d["guessed"][0]["id"])
        after = toks[d["index"] : d["index"] + d["kept"] + 1]
        assert [t["id"] for t in after[: d["kept"]]] == [g["id"] for g in d["guessed"]][: d["kept"]]
        assert all(t.get("drafted") for t in after[: d["kept"]])
        if d["kept"] < 6 and len(after) > d["kept"]:
            assert not after[d["kept"]].get("drafted")
            assert after[d["kept"]]["id"] != d["guessed"][d["kept"]]["id"]
            turned_down += 1
    assert turned_down >= 2 and any(d["kept"] == 6 for d in drafts)
    assert sum(d["kept"] for d in drafts) == counts["accepted"]


def test_sampled_drafted_decoding_runs_and_counts(gemma):
    torch.manual_seed(0)
    ids, end = tokens(
        gemma, "Hello", temperature=1.0, top_k=64, top_p=0.95, max_new_tokens=60, mtp=True
    )
    assert len(ids) == end["n_tokens"] == 60 and end["mtp"]["forwards"] >= 1


def test_training_shows_the_drafter_what_it_sees_at_run_time(gemma):
    """distill.py runs the drafter on every position at once with masks; mtp.py one position at a time from the
    cache. In float64 the two agree to 1e-9, before and past the sliding window."""
    model = gemma.model.double()
    drafter = Drafter(str(DRAFTER), model, "cpu", torch.float64)
    ids = torch.randint(200, 2000, (1, 200), generator=torch.Generator().manual_seed(0))
    window = model.config.get_text_config().sliding_window
    with torch.no_grad():
        seen = model(
            input_ids=ids,
            use_cache=False,
            output_hidden_states=True,
            return_shared_kv_states=True,
        )
        first = 1
        n = ids.shape[1] - first
        last, hidden = drafter.step(
            columns(ids, first, n, 0),
            seen.hidden_states[-1][:, first - 1 : -1],
            torch.arange(first, ids.shape[1])[None],
            seen.shared_kv_states,
            masks(first, ids.shape[1], window, torch.float64),
        )
        for p in (5, window - 1, window, 150, 199):
            out = model(input_ids=ids[:, :p], use_cache=True, output_hidden_states=True)
            cache = out.past_key_values
            cache.activate_past_recording()
            cache.crop(0)  # as after a round: the sliding window's cache down to window - 1
            one, one_hidden = drafter.step(
                ids[:, p : p + 1],
                out.hidden_states[-1][:, -1:],
                torch.tensor([[p]]),
                drafter.shared(cache),
            )
            assert torch.allclose(one[0, 0], last[0, p - first], rtol=0, atol=1e-9), p
            assert torch.allclose(one_hidden[0, 0], hidden[0, p - first], rtol=0, atol=1e-9), p


def test_a_model_without_a_drafter_says_so(own_tiny):
    qwen = own_tiny("qwen3_5")
    with pytest.raises(ValueError, match="no MTP drafter"):
        qwen.load_drafter()
    events: list[dict] = []
    run_reporting_errors(
        SimpleHarness(qwen, [], "Hi", RunSettings(mtp=True, max_new_tokens=4), events.append)
    )
    assert any(e["type"] == "error" and "drafter" in e["message"]["en"] for e in events)
    assert events[-1]["type"] == "run_end"


def test_the_drafter_downloads_beside_its_model(fake_hub, tmp_path, monkeypatch):
    monkeypatch.setattr(model_folder, "MODELS_DIR", tmp_path / "models")
    b = SimpleBackend(f"{ORG}/tiny-gemma4", device="cpu")
    assert not fake_hub.fetched(f"{ORG}/tiny-gemma4-assistant")
    b.load_drafter()
    assert fake_hub.fetched(f"{ORG}/tiny-gemma4-assistant")
    with pytest.raises(UnsupportedModel, match="not an MTP drafter"):
        model_folder.download_drafter(f"{ORG}/tiny-qwen3_5")
