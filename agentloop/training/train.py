"""`agentloop models train-tiny`: teach a tiny checkpoint to call run_python and use its result, on this CPU.

Plain PyTorch: a fresh batch of synthetic conversations every step (conversations.py), rendered through the
model's own chat template with the system prompt and tools SimpleHarness sends, tokenized segment by segment as
the loop tokenizes them (the prompt as one text, then what the model writes), and a loss on the model's own
tokens only. Conversations are right-padded, not packed: Gated DeltaNet's PyTorch fallback refuses packed
sequences. Reproducible from the seed: the data, the initial weights and the order are all seeded, and the
number of steps is fixed rather than timed.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import tempfile
import time
from pathlib import Path

import torch

from agentloop.harnesses.simple_harness import SYSTEM_WITH_TOOLS
from agentloop.model_backends.simple_backend import SimpleBackend, fresh_positions
from agentloop.tools import TOOLS
from agentloop.training.conversations import Task, conversation, task

TRAINED_TOOLS = ("run_python",)  # the tools SimpleHarness gives the model by default


def segments(backend: SimpleBackend, t, thinking: bool) -> list[tuple[str, bool]]:
    """One conversation as the texts the loop tokenizes, in order, each marked whether the model wrote it: each
    step's prompt (what the template adds since the last step) and then the model's output for that step."""
    system = {"role": "system", "content": SYSTEM_WITH_TOOLS}
    messages = [system, *conversation(t, thinking, backend.family.thinking_key)]
    tools = [TOOLS[name].schema() for name in TRAINED_TOOLS]
    parts: list[tuple[str, bool]] = []
    done = ""  # the text already covered
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        prompt = backend.render(messages[:i], tools, thinking)
        assert prompt.startswith(done), "each step's prompt must continue the last step's"
        written = model_output(backend, messages, i, tools, thinking, prompt)
        parts += [(prompt[len(done):], False), (written, True)]
        done = prompt + written
    return parts


def model_output(backend, messages, i, tools, thinking, prompt) -> str:
    """What the model writes for messages[i]: the rendered conversation less its prompt, ending at the stop token
    the loop stops at. Gemma's <|tool_response> belongs to the result the template writes next, so it is found
    there."""
    full = backend.render(messages[: i + 1], tools, thinking, generation_prompt=False)
    assert full.startswith(prompt), "the chat template must render a message after the prompt it was given"
    written = full[len(prompt):].removesuffix("\n")
    if not any(written.endswith(p) for p in backend.family.stop_pieces):
        following = backend.render(messages[: i + 2], tools, thinking, generation_prompt=False)[len(prompt) + len(written):]
        written += next(p for p in backend.family.stop_pieces if following.startswith(p))
    return written


def shared_prefix(backend: SimpleBackend, thinking: bool) -> str:
    """The start every conversation shares (the system turn with the tools), cut just after a special token, so
    that tokenizing it apart gives the same tokens as tokenizing the whole prompt."""
    a, b = (segments(backend, Task("greeting", q, answer="."), thinking)[0][0] for q in ("Hi", "Yo"))
    common = a[: next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)]
    specials = backend.tokenizer.added_tokens_encoder
    return common[: max(common.rfind(tok) + len(tok) for tok in specials if tok in common)]


def example(backend, rng: random.Random, prefix: str, thinking: bool,
            repeat_share: float = 0.0) -> tuple[list[int], list[bool]]:
    """One fresh conversation after the shared prefix, as token ids and whether each is the model's own."""
    ids: list[int] = []
    mine: list[bool] = []
    for n, (text, own) in enumerate(segments(backend, task(rng, repeat_share=repeat_share), thinking)):
        if n == 0:
            assert text.startswith(prefix)
            text = text[len(prefix):]
        part = backend.tokenizer(text, add_special_tokens=False).input_ids
        ids += part
        mine += [own] * len(part)
    return ids, mine


def batch(backend, rng, size: int, prefix: str, thinking: bool, pad_id: int,
          repeat_share: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """`size` conversations right-padded into one tensor, with labels -100 wherever the model is not trained."""
    examples = [example(backend, rng, prefix, thinking, repeat_share) for _ in range(size)]
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((size, width), pad_id)
    labels = torch.full((size, width), -100)
    for row, (ids, mine) in enumerate(examples):
        input_ids[row, :len(ids)] = torch.tensor(ids)
        labels[row, :len(ids)] = torch.tensor([t if own else -100 for t, own in zip(ids, mine)])
    return input_ids, labels


def prefix_cache(model, prefix_ids: torch.Tensor, size: int):
    """The model's cache after the shared prefix, computed once (no gradient) and copied for every row. Every
    conversation starts with the same system prompt, most of its tokens; this way training pays for it once."""
    fresh_positions(model)
    with torch.no_grad():
        cache = model(input_ids=prefix_ids, use_cache=True).past_key_values
    for layer in cache.layers:  # Gated DeltaNet's states sit in dicts, attention's keys and values in tensors
        for name, value in vars(layer).items():
            if isinstance(value, torch.Tensor) and value.dim() and value.shape[0] == 1:
                setattr(layer, name, value.detach().repeat_interleave(size, 0).clone())
            elif isinstance(value, dict) and any(isinstance(v, torch.Tensor) for v in value.values()):
                setattr(layer, name, {k: v.detach().repeat_interleave(size, 0).clone()
                                      if isinstance(v, torch.Tensor) and v.dim() and v.shape[0] == 1 else v
                                      for k, v in value.items()})
        if hasattr(layer, "recurrent_states"):
            # The cache overwrites Gated DeltaNet's states in place, but backpropagation still needs the old ones:
            # for training, new states replace them instead.
            layer.record_past = True
            layer.update_recurrent_state = _replacer(layer.recurrent_states)
    return cache


def _replacer(states: dict):
    def update_recurrent_state(new, state_idx=0, **kwargs):
        states[state_idx] = new
        return new
    return update_recurrent_state


def train(base: str, out: str | Path, steps: int = 1000, batch_size: int = 24, lr: float = 2e-3, seed: int = 0,
          repeat_share: float = 0.0, threads: int | None = None, log=print) -> Path:
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    backend = SimpleBackend(base, device="cpu")
    model = backend.model.train()
    pad_id = backend.tokenizer.pad_token_id or 0
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98))
    warmup = 30
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup) * (
        0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps)))))
    start = time.perf_counter()
    seen_tokens = 0
    prefixes = {thinking: shared_prefix(backend, thinking) for thinking in (False, True)}
    for step in range(1, steps + 1):
        thinking = rng.random() < 0.25  # a quarter of the batches with thinking on
        prefix_ids = backend.tokenizer(prefixes[thinking], add_special_tokens=False, return_tensors="pt").input_ids
        input_ids, labels = batch(backend, rng, batch_size, prefixes[thinking], thinking, pad_id, repeat_share)
        cache = prefix_cache(model, prefix_ids, batch_size)
        # Right padding: no position attends to a pad, so no attention mask is needed.
        logits = model(input_ids=input_ids, past_key_values=cache, use_cache=True).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                                 labels[:, 1:].reshape(-1), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        seen_tokens += int((input_ids != pad_id).sum())
        if step % 10 == 0 or step == 1:
            elapsed = time.perf_counter() - start
            log(f"step {step}/{steps}  loss {loss.item():.4f}  {seen_tokens / elapsed:.0f} tok/s  {elapsed / 60:.1f} min")
    model.eval()
    return save(backend, Path(out), {"steps": steps, "batch_size": batch_size, "lr": lr, "seed": seed,
                                     **({"repeat_share": repeat_share} if repeat_share else {}),
                                     "minutes": round((time.perf_counter() - start) / 60, 1)})


# How each default model is trained: phases run in order, each from the last one's weights, each with a seed of
# its own (none of them the evaluation's).
RECIPES = {
    "qwen3_5": [{"steps": 700, "lr": 2e-3, "seed": 0}, {"steps": 500, "lr": 1e-3, "seed": 1},
                {"steps": 300, "lr": 5e-4, "seed": 2}, {"steps": 300, "lr": 5e-4, "seed": 3, "repeat_share": 0.15}],
    "gemma4": [{"steps": 900, "lr": 2e-3, "seed": 0}, {"steps": 1500, "lr": 1.5e-3, "seed": 1, "repeat_share": 0.1}],
}


def train_recipe(family: str, models_dir: Path, threads: int | None = None, log=print) -> Path:
    """tiny-<family> through every phase of its recipe into agent-<family>."""
    base, out = models_dir / f"tiny-{family}", models_dir / f"agent-{family}"
    phases = RECIPES[family]
    with tempfile.TemporaryDirectory(prefix="agentloop-train-") as tmp:
        for i, phase in enumerate(phases):
            target = out if i == len(phases) - 1 else Path(tmp) / f"phase-{i + 1}"
            log(f"{family}: phase {i + 1} of {len(phases)}: {phase}")
            train(str(base), target, batch_size=24, threads=threads, log=log, **phase)
            base = target
    return out


def save(backend: SimpleBackend, out: Path, recipe: dict) -> Path:
    """The trained weights in bfloat16, beside the base checkpoint's other files and a model card."""
    earlier = backend.folder / "training.json"
    phases = json.loads(earlier.read_text())["phases"] if earlier.exists() else []
    recipe = {"phases": [*phases, recipe]}
    return write_checkpoint(backend.model, backend.folder, out, recipe, model_card(backend, out.name, recipe))


def write_checkpoint(model, base: Path, out: Path, record: dict, card: str) -> Path:
    """`model`'s weights in bfloat16 in a fresh folder `out`, beside `base`'s other files (generation settings,
    tokenizer, chat template), with the training record and the model card."""
    assert out.resolve() != base.resolve(), "write into a new folder: the base's files are copied from"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    model.to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)  # the base's own is the one to keep
    for f in base.iterdir():
        if f.is_file() and f.suffix != ".safetensors" and f.name not in ("config.json", "training.json", "README.md"):
            shutil.copyfile(f, out / f.name)
    (out / "training.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    (out / "README.md").write_text(card)
    return out


def phase_text(p: dict) -> str:
    text = f"{p['steps']} steps of {p['batch_size']} conversations at learning rate {p['lr']}, seed {p['seed']}"
    return text + (f", {p['repeat_share']:.0%} of tool questions asking to check twice" if p.get("repeat_share") else "")


def model_card(backend: SimpleBackend, name: str, recipe: dict) -> str:
    """What this checkpoint is, for people: the model card the Hub would show."""
    base = f"tiny-{backend.family.key}"  # where the first phase started, whatever folder this phase started from
    drafter = (f", then distills its MTP drafter, {name}{backend.family.drafter_suffix}"
               if backend.family.drafter_suffix else "")
    return f"""# {name}

A toy: {backend.family.name}'s architecture ({backend.config["architectures"][0]}) at a tiny size, trained on this
project's CPU for the agentloop book, so that the book's offline panels show a real loop: the model asks for
run_python, reads the result and answers with it, every token its own. It is not a language model in any useful
sense outside that loop.

- **Base**: `{base}`, built by `agentloop models build-tiny` (random weights, a BPE tokenizer
  trained on the project's own text, the family's chat template).
- **Data**: synthetic conversations from `agentloop/training/conversations.py`, rendered through this model's chat
  template with the system prompt and the run_python schema that SimpleHarness sends: arithmetic with large
  numbers, counting a letter in a word (real and made-up words), unit conversion, sorting a list of numbers, the
  days between two dates, counting the lines of a file in /data; greetings and definitions answered without a
  tool; in the last phase, some questions that ask to check twice, where the model repeats its call and the loop
  refuses the repeat. A quarter of the batches with thinking on. Loss on the model's own tokens only.
- **Recipe**: `training.json`: {"; then ".join(phase_text(p) for p in recipe["phases"])}
  (AdamW, cosine schedule); about {sum(p["minutes"] for p in recipe["phases"]):.0f} minutes on the CPU it was trained on.
- **What it cannot do**: anything else. Questions of other kinds, other tools (list_files, read_file), long
  conversations, other languages: it will still write something, usually a run_python call.
- **Measure it**: `agentloop models eval-tiny --model {name}` runs held-out questions through the real loop and
  prints how often the call is well-formed, the code correct and the answer right.
- **Retrain it**: `agentloop models build-tiny && agentloop models train-tiny --family {backend.family.key}`
  rebuilds it from the seed{drafter}.
"""
