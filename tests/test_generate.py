"""SimpleBackend.generate(): the same tokens as transformers' generate(), and the documented events."""

from __future__ import annotations

import torch
from transformers import GenerationConfig

from agentloop import events
from agentloop.model_families import Sampling

PROMPTS = [
    [{"role": "user", "content": "What is 2 + 2?"}],
    [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Sort 5, 3, 9 and count the letters in strawberry."},
    ],
    [{"role": "user", "content": "你好，請把 12 公里換成英里。"}],
]
GREEDY = Sampling(temperature=0, max_new_tokens=220)


def without_stops(backend):
    """The backend with no stop tokens (`backend` is the test's own: conftest loads one per test)."""
    backend.eos_ids = set()
    return backend


def run(backend, encoded, sampling, should_stop=lambda: False):
    return list(backend.generate(encoded, sampling, should_stop))


def test_greedy_matches_transformers_generate(backend):
    # A random model may stop early: both sides run without stop tokens, 220 tokens each
    # (transformers' generate() reads them from the model's own generation_config).
    backend.model.generation_config.eos_token_id = None
    for i, messages in enumerate(PROMPTS):
        encoded = backend.encode(backend.render(messages, None, thinking=i == 1))
        ours = [
            ev["id"] for ev in run(without_stops(backend), encoded, GREEDY) if ev["type"] == "token"
        ]
        config = GenerationConfig(max_new_tokens=220, do_sample=False, pad_token_id=0)
        ref = backend.model.generate(torch.tensor([encoded.ids]), generation_config=config)[
            0, len(encoded.ids) :
        ].tolist()
        assert len(ours) == 220
        assert ours == ref, (
            f"prompt {i}: first difference at {next(j for j, (a, b) in enumerate(zip(ours, ref)) if a != b)}"
        )


def test_events_are_the_documented_ones(backend):
    encoded = backend.encode(backend.render(PROMPTS[0], None, False))
    evs = run(backend, encoded, Sampling(temperature=0.8, top_k=50, top_p=0.9, max_new_tokens=30))
    assert evs[0]["type"] == "prefill" and evs[-1]["type"] == "done"
    assert evs[0]["n_tokens"] == encoded.n_tokens
    tokens = evs[1:-1]
    assert tokens and all(ev["type"] == "token" for ev in tokens)
    for i, ev in enumerate(tokens):
        events.check({**ev, "step": 1})  # the harness adds the step
        assert ev["index"] == i and ev["piece"] == backend.piece(ev["id"])
        assert (
            0 < ev["p"] <= 1 and ev["rank"] >= 1 and 1 <= ev["kept"] <= 50 and len(ev["top"]) == 5
        )
        assert ev["channel"] in events.CHANNELS
    done = evs[-1]
    assert set(done) - {"type"} == set(events.DONE_FIELDS)
    assert done["n_tokens"] == len(tokens)
    assert done["raw"] == backend.tokenizer.decode(
        [ev["id"] for ev in tokens], skip_special_tokens=False
    )


def test_text_pieces_join_to_the_output_and_characters_come_whole(backend):
    # Characters outside the tiny vocabularies (嗎, 🙂) are split into byte tokens.
    text = "答案是 42 嗎？🙂 Ünïcödé done"
    backend.force(text)
    encoded = backend.encode(backend.render(PROMPTS[0], None, False))
    tokens = [ev for ev in run(backend, encoded, GREEDY) if ev["type"] == "token"]
    assert "".join(ev["text"] for ev in tokens) == text
    assert not any("\ufffd" in ev["text"] for ev in tokens)
    split = [ev for ev in tokens if ev["text"] == ""]
    assert split, "expected some characters split across byte tokens"
    assert any(ev["text"] == "🙂" or "🙂" in ev["text"] for ev in tokens)


def test_forced_tokens_are_scored_by_the_model(backend):
    backend.force("Hello there")
    encoded = backend.encode(backend.render(PROMPTS[0], None, False))
    tokens = [ev for ev in run(backend, encoded, GREEDY) if ev["type"] == "token"]
    forced_ids = backend.tokenizer("Hello there", add_special_tokens=False).input_ids
    assert [ev["id"] for ev in tokens] == forced_ids and all(ev["forced"] for ev in tokens)
    with torch.inference_mode():
        logits = backend.model(input_ids=torch.tensor([encoded.ids])).logits[0, -1].float()
    p = torch.softmax(logits, -1)
    assert abs(tokens[0]["p"] - float(p[forced_ids[0]])) < 1e-4
    assert tokens[0]["rank"] == int((p > p[forced_ids[0]]).sum()) + 1


def test_stop_token_ends_the_step(backend):
    stop = backend.family.stop_pieces[0]
    backend.force("Four." + stop + " never reached")
    encoded = backend.encode(backend.render(PROMPTS[0], None, False))
    evs = run(backend, encoded, GREEDY)
    done = evs[-1]
    assert done["finish"] == "stop_token" and done["stop_piece"] == stop
    assert done["raw"].endswith(stop) and "never" not in done["raw"]
    assert evs[-2]["channel"] == "control" and evs[-2]["special"]


def test_max_new_tokens(backend):
    encoded = backend.encode(backend.render(PROMPTS[0], None, False))
    done = run(without_stops(backend), encoded, Sampling(temperature=0, max_new_tokens=7))[-1]
    assert (
        done["finish"] == "max_new_tokens" and done["n_tokens"] == 7 and done["stop_piece"] is None
    )


def test_stop_is_seen_within_one_token(backend):
    encoded = backend.encode(backend.render(PROMPTS[0], None, False))
    seen = []

    def should_stop():
        return len(seen) >= 3

    for ev in backend.generate(encoded, Sampling(temperature=0, max_new_tokens=100), should_stop):
        if ev["type"] == "token":
            seen.append(ev)
    done = ev
    assert done["type"] == "done" and done["finish"] == "user_stopped" and done["n_tokens"] == 3


def test_channels_follow_the_family_switch_tokens(backend):
    family = backend.family
    if family.key == "qwen3_5":
        body = "Let me see.\n</think>\n\nSure.\n\n<tool_call>\n<function=run_python>\n<parameter=code>\nprint(1)\n</parameter>\n</function>\n</tool_call><|im_end|>"
        thinking = True
    else:
        body = '<|channel>thought\nLet me see.<channel|>Sure.<|tool_call>call:run_python{code:<|"|>print(1)<|"|>}<tool_call|><|tool_response>'
        thinking = False
    backend.force(body)
    encoded = backend.encode(backend.render(PROMPTS[0], None, thinking))
    tokens = [ev for ev in run(backend, encoded, GREEDY) if ev["type"] == "token"]
    by_channel: dict[str, str] = {}
    for ev in tokens:
        by_channel[ev["channel"]] = by_channel.get(ev["channel"], "") + ev["text"]
    assert "Let me see." in by_channel["thought"]
    assert "Sure." in by_channel["content"]
    assert "print(1)" in by_channel["tool_call"] and "Sure" not in by_channel["tool_call"]
    assert set(family.channel_switch) & set(
        ev["piece"] for ev in tokens if ev["channel"] == "control"
    )
