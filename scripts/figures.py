"""Draw the book's figures into docs/assets/figures/, from the code's own data where a figure shows data.

    python scripts/figures.py            # write every figure
    python scripts/figures.py --check    # exit 1, naming them, if any file differs from what would be drawn

Where a figure shows numbers or tokens, they come from the same place the chapter's text does: a recorded run
beside the chapter (docs/chapters/runs/), the trained tiny model's tokenizer and weights (models/agent-qwen3_5),
`sample()` itself, the families' and the sandbox's own constants. The diagrams without data name the code's
objects. tests/test_figures.py runs `--check`'s comparison, so a figure cannot drift from the code silently.
Each figure is one function returning a `Figure`; drawing follows nothing but scripts/svg.py.

Every figure is drawn in each of LANGUAGES: `NAME.svg` in English, `NAME.zh-Hant.svg` for the Traditional
Chinese edition and `NAME.zh-Hans.svg` for the Simplified (its labels the zh-Hant ones through agentloop/zh_hans.py),
on the same shapes; only the labels passed through `tr()` differ (scripts/figures_zh.py holds them), drawn in the
book's shipped CJK font (the SC subset first for zh-Hans).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentloop import zh_hans  # noqa: E402
from scripts.figures_zh import ZH  # noqa: E402
from scripts.svg import SMALL, TEXT, Figure, text_width  # noqa: E402

OUT = ROOT / "docs" / "assets" / "figures"
RUNS = ROOT / "docs" / "chapters" / "runs"
MODEL = ROOT / "models" / "agent-qwen3_5"
W = 760  # every figure's width in px: the book never draws one wider (docs/assets/figures.css)
LANGUAGES = (
    "en",
    "zh-Hant",
    "zh-Hans",
)  # the editions of the book; the first is the English, NAME.svg
# zh-Hans: each zh-Hant label through the conversion the zh-Hans edition is made by (agentloop/zh_hans.py).
TRANSLATIONS = {
    "zh-Hant": ZH,
    "zh-Hans": {english: zh_hans.convert(zh) for english, zh in ZH.items()},
}
_language = "en"  # the language draw() is drawing in: tr() reads it


def tr(english: str, **values) -> str:
    """A label in the language being drawn: the English itself, or its translation, each filled with `values`.
    A label with no translation is an error, so a figure is never drawn half in English."""
    text = english
    if _language != "en":
        table = TRANSLATIONS[_language]
        if english not in table:
            raise KeyError(f"no {_language} label for {english!r}: add it to scripts/figures_zh.py")
        text = table[english]
    return text.format(**values) if values else text


def file_name(name: str, language: str) -> str:
    """tool.svg for the English, tool.zh-Hant.svg beside it for another edition."""
    return f"{name}.svg" if language == "en" else f"{name}.{language}.svg"


def events(name: str) -> list[dict]:
    lines = (RUNS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def of(evs: list[dict], kind: str, step: int | None = None) -> list[dict]:
    return [e for e in evs if e["type"] == kind and (step is None or e.get("step") == step)]


def shown(piece_or_text: str) -> str:
    """A token as a label: spaces and newlines visible, as the panels draw them."""
    return piece_or_text.replace("\n", "\u21b5").replace(" ", "\u2423") or "\u00b7"


def token_row(fig: Figure, x: float, y: float, labels: list[str], hues: list[str], h=28, gap=4):
    """Token boxes left to right from (x, y); returns the x after the last."""
    for label, hue in zip(labels, hues):
        w = text_width(label, TEXT, mono=True) + 12
        fig.rect(x, y, w, h, hue, r=4)
        fig.text(x + w / 2, y + h / 2 + 5, label, cls="mono", anchor="middle")
        x += w + gap
    return x


# -- 1. the loop --------------------------------------------------------------------------------------------------


def loop() -> Figure:
    fig = Figure(
        "loop",
        W,
        300,
        tr("The agent loop: render, generate, parse, then validate, ask and run a tool"),
    )
    y, h, bw = 40, 54, 132
    xs = [8, 164, 320, 476]
    labels = [
        (tr("question"), "self.messages"),
        (tr("render"), "context"),
        (tr("generate"), "prefill, token"),
        (tr("parse"), "model_end"),
    ]
    hues = ["e", "a", "a", "a"]
    for x, (label, sub), hue in zip(xs, labels, hues):
        fig.box(x, y, bw, h, label, hue, sub=sub)
    for a, b in zip(xs, xs[1:]):
        fig.arrow([(a + bw, y + h / 2), (b - 2, y + h / 2)])
    # The tool's way round: down from parse, left along the bottom, up into render.
    y2 = 190
    tools = [
        (476, tr("validate"), "tool_call"),
        (320, tr("permission"), "permission, decision"),
        (164, tr("run the tool"), "tool_result"),
    ]
    for x, label, sub in tools:
        fig.box(x, y2, bw, h, label, "b", sub=sub)
    fig.arrow([(xs[3] + bw / 2, y + h), (xs[3] + bw / 2, y2 - 2)], tr("a tool call"), at=0.5, dy=4)
    fig.arrow([(476, y2 + h / 2), (320 + bw + 2, y2 + h / 2)])
    fig.arrow([(320, y2 + h / 2), (164 + bw + 2, y2 + h / 2)])
    fig.arrow([(164 + bw / 2, y2), (164 + bw / 2, y + h + 2)])
    fig.text(164 + bw / 2 - 8, 150, tr("result appended:"), size=SMALL, anchor="end")
    fig.text(164 + bw / 2 - 8, 166, tr("the next step"), size=SMALL, anchor="end")
    # No call: right out of parse and down into the final answer, beside validate, so that its label has a
    # segment of its own (in the row, the 12 px between parse and the answer were narrower than "no call").
    fig.box(W - 140, y2, 132, h, tr("final answer"), "c", sub="run_end")
    turn = W - 140 + 132 / 2
    fig.arrow([(xs[3] + bw, y + h / 2), (turn, y + h / 2), (turn, y2 - 2)], tr("no call"), dy=-6)
    fig.text(
        14,
        284,
        tr(
            "Blue: the model's side of a step. Orange: the harness's checks. "
            "Under each box, the events it sends."
        ),
        size=SMALL,
        cls="muted",
    )
    return fig


# -- 2. what a family knows -----------------------------------------------------------------------------------------


def families() -> Figure:
    from agentloop.model_families import FAMILIES

    rows = [
        (tr("stop pieces"), lambda f: list(f.stop_pieces)),
        (tr("thinking opens with"), lambda f: [f.thought_prefix]),
        (
            tr("channel switches"),
            lambda f: [f"{k} \u2192 {v}" for k, v in f.channel_switch.items()],
        ),
        (tr("thinking kept under"), lambda f: [f.thinking_key]),
    ]
    fams = [FAMILIES["gemma4"], FAMILIES["qwen3_5"]]
    line = 19
    cells = [[fn(f) for f in fams] for _, fn in rows]

    def wrap(items: list[str], width: int) -> list[str]:
        out, cur = [], ""
        for item in (shown(i) if "\u2192" not in i else i.replace("\n", "\u21b5") for i in items):
            if cur and text_width(cur + "   " + item, SMALL, mono=True) > width:
                out.append(cur)
                cur = item
            else:
                cur = f"{cur}   {item}" if cur else item
        return [*out, cur]

    col_x, col_w = [150, 455], 295
    wrapped = [[wrap(c, col_w - 16) for c in row] for row in cells]
    heights = [max(len(c) for c in row) * line + 14 for row in wrapped]
    fig = Figure(
        "families", W, 58 + sum(heights) + 30, tr("What a family knows, for Gemma 4 and Qwen3.5")
    )
    for x, f, hue in zip(col_x, fams, ["a", "b"]):
        fig.box(x, 8, col_w, 36, f"{f.key}  (Family)", hue)
    y = 54
    for (label, _), row, hgt in zip(rows, wrapped, heights):
        fig.text(8, y + 22, label, cls="bold", size=SMALL)
        for x, lines, hue in zip(col_x, row, ["a", "b"]):
            fig.rect(x, y, col_w, hgt - 4, hue, r=4, opacity=0.5)
            for i, text in enumerate(lines):
                fig.text(x + 8, y + 20 + i * line, text, size=SMALL, cls="mono")
        y += hgt
    fig.note(
        y + 18,
        tr("Read from agentloop/model_families: the loop asks the family, never the model's name."),
    )
    return fig


# -- 3. the model folder ------------------------------------------------------------------------------------------


def model_folder() -> Figure:
    readers = {
        "config.json": tr("family registry + transformers: the architecture"),
        "model.safetensors": tr("transformers: the weights"),
        "tokenizer.json": tr("AutoTokenizer: vocabulary and merges"),
        "tokenizer_config.json": tr("AutoTokenizer: the tokens' roles"),
        "chat_template.jinja": tr("render(): prompt from messages"),
        "generation_config.json": tr("stop tokens and recommended sampling"),
        "preprocessor_config.json": tr("the image processor"),
        "video_preprocessor_config.json": tr("the video processor"),
        "examples.json": tr("/api/status: the live panel's example questions"),
        "README.md": tr("people: the model card"),
        "training.json": tr("people: the training recipe"),
    }
    files = sorted(p for p in MODEL.iterdir() if p.is_file())
    fig = Figure(
        "model-folder",
        W,
        40 + 32 * len(files) + 20,
        tr("The files of models/{name} and who reads each", name=MODEL.name),
    )
    fig.text(8, 22, f"models/{MODEL.name}/", cls="bold mono")
    for i, p in enumerate(files):
        y = 36 + i * 32
        size = p.stat().st_size
        human = (
            f"{size / 1e6:.1f} MB"
            if size >= 1e6
            else f"{size / 1e3:.1f} kB"
            if size >= 1e3
            else f"{size} B"
        )
        hue = (
            "a"
            if p.suffix in (".json", ".jinja", ".safetensors") and "README" not in p.name
            else "e"
        )
        fig.rect(8, y, 300, 26, hue, r=4)
        fig.text(16, y + 18, p.name, size=SMALL, cls="mono")
        fig.text(300, y + 18, human, size=SMALL, anchor="end", cls="muted")
        fig.arrow([(312, y + 13), (360, y + 13)])
        fig.text(368, y + 18, readers.get(p.name, "—"), size=SMALL)
    missing = [n for n in readers if not (MODEL / n).exists() and n.endswith(".json")]
    if missing:
        fig.note(
            40 + 32 * len(files) + 10,
            tr("Not in this folder: {names} (the family supplies it).", names=", ".join(missing)),
        )
    return fig


# -- 4. BPE merges on a word ----------------------------------------------------------------------------------------

BPE_WORD = "print"  # the word the running question's call starts with: print(48213 * 9127)


def bpe_steps(word: str) -> list[tuple[list[str], tuple[str, str] | None, int | None]]:
    """Byte-level BPE on one word, as the tokenizer does it: start from single characters, and merge the pair
    of adjacent pieces whose rule came earliest in training, until no rule applies."""
    tok = json.loads((MODEL / "tokenizer.json").read_text(encoding="utf-8"))
    merges = [
        tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in tok["model"]["merges"]
    ]
    rank = {pair: i for i, pair in enumerate(merges)}
    pieces = list(word)
    steps = [(pieces, None, None)]
    while True:
        pairs = [(rank[p], i) for i, p in enumerate(zip(pieces, pieces[1:])) if p in rank]
        if not pairs:
            return steps
        r, i = min(pairs)
        pieces = [*pieces[:i], pieces[i] + pieces[i + 1], *pieces[i + 2 :]]
        steps.append((pieces, merges[r], r))


def bpe() -> Figure:
    from tokenizers import Tokenizer

    steps = bpe_steps(BPE_WORD)
    n_rules = len(
        json.loads((MODEL / "tokenizer.json").read_text(encoding="utf-8"))["model"]["merges"]
    )
    # The walk above must end where the real tokenizer does, or the figure would teach something false.
    real = Tokenizer.from_file(str(MODEL / "tokenizer.json")).encode(
        BPE_WORD, add_special_tokens=False
    )
    assert real.tokens == steps[-1][0], (real.tokens, steps[-1][0])
    fig = Figure(
        "bpe", W, 40 + 46 * len(steps) + 26, tr("BPE merges on the word {word!r}", word=BPE_WORD)
    )
    fig.text(
        8,
        22,
        tr(
            "\u201c{word}\u201d through the merges of models/{name}/tokenizer.json",
            word=BPE_WORD,
            name=MODEL.name,
        ),
        cls="bold",
    )
    for i, (pieces, pair, r) in enumerate(steps):
        y = 40 + i * 46
        hues = ["a" if pair and p == pair[0] + pair[1] else "e" for p in pieces]
        end = token_row(fig, 8, y, pieces, hues)
        if pair:
            fig.text(
                end + 14,
                y + 19,
                tr(
                    "rule {r} of {n}:  {a} + {b} \u2192 {ab}",
                    r=r,
                    n=n_rules,
                    a=pair[0],
                    b=pair[1],
                    ab=pair[0] + pair[1],
                ),
                size=SMALL,
                cls="mono",
            )
        else:
            fig.text(
                end + 14, y + 19, tr("the characters, one piece each"), size=SMALL, cls="muted"
            )
    ids = ", ".join(str(i) for i in real.ids)
    fig.note(
        40 + 46 * len(steps) + 12,
        tr(
            "No rule joins what is left: {count} token(s), id {ids}. "
            "A rule learned earlier (a lower number) applies first.",
            count=len(real.tokens),
            ids=ids,
        ),
    )
    return fig


# -- 5. a tool: what the model is told --------------------------------------------------------------------------


def tool() -> Figure:
    from agentloop.tools import TOOLS

    t = TOOLS["run_python"]
    fig = Figure(
        "tool",
        W,
        250,
        tr("A Tool's four fields: three go into the prompt, run stays with the harness"),
    )
    fields = [
        ("name", t.name),
        ("description", t.description),
        ("parameters", json.dumps(t.parameters)),
        ("run", tr("a Python function")),
    ]
    for i, (key, value) in enumerate(fields):
        y = 40 + i * 44
        hue = "e" if key == "run" else "a"
        fig.rect(8, y, 420, 36, hue, r=4)
        fig.text(16, y + 23, key, cls="bold mono", size=SMALL)
        clipped = (
            value
            if text_width(value, SMALL, True) < 300
            else value[: int(300 / (SMALL * 0.61)) - 1] + "\u2026"
        )
        fig.text(110, y + 23, clipped, size=SMALL, cls="mono")
    fig.text(8, 26, tr("Tool run_python (agentloop/tools.py)"), cls="bold")
    fig.box(520, 40, 232, 72, "schema()", "a", sub=tr("into the chat template"))
    fig.box(520, 150, 232, 54, tr("the harness"), "b", sub=tr("runs it when approved"))
    for y in (58, 102, 146):
        fig.arrow([(428, y), (518, 76)])
    fig.arrow([(428, 190), (518, 177)])
    fig.text(636, 134, tr("the model sees only the text"), size=SMALL, anchor="middle", cls="muted")
    fig.note(
        236, tr("The model never learns how a tool works, only what its description promises.")
    )
    return fig


# -- 6. a prompt rendered by the template ---------------------------------------------------------------------------


def template() -> Figure:
    evs = events("chapter1")
    prompt = of(evs, "context", 1)[0]["prompt"]
    question = of(evs, "run_start")[0].get("question") or "What is 48213 * 9127?"
    from agentloop.harnesses.simple_harness import SYSTEM_WITH_TOOLS

    lines = prompt.split("\n")
    # The tool section is chapter 5's; here it is folded into one line, up to its closing </IMPORTANT>, after
    # which Qwen3.5's template writes the system text (chapter 6).
    start = next(i for i, line in enumerate(lines) if line.startswith("# Tools"))
    end = next(i for i in range(start, len(lines)) if lines[i] == "</IMPORTANT>")
    fold = tr("\u2026 {n} lines: the tools section (chapter 5) \u2026", n=end - start + 1)
    shown_lines = [*lines[:start], fold, *lines[end + 1 :]]
    while not shown_lines[-1]:
        shown_lines.pop()
    line_h = 22
    fig = Figure(
        "template",
        W,
        120 + line_h * len(shown_lines) + 20,
        tr("The running question's messages rendered by the chat template into one string"),
    )
    msgs = [("system", SYSTEM_WITH_TOOLS), ("user", question)]
    fig.text(8, 22, "self.messages", cls="bold mono")
    for i, (role, content) in enumerate(msgs):
        y = 32 + i * 30
        fig.rect(8, y, 300, 26, "c", r=4)
        short = content if len(content) < 34 else content[:31] + "\u2026"
        fig.text(16, y + 18, f"{role}: {short}", size=SMALL, cls="mono")
    fig.box(360, 40, 190, 46, "chat_template.jinja", "a", sub="render()")
    fig.arrow([(308, 63), (358, 63)])
    fig.arrow([(550, 63), (600, 63), (600, 100)])
    fig.text(610, 70, tr("one string"), size=SMALL)
    y0 = 116
    for i, line in enumerate(shown_lines):
        y = y0 + i * line_h
        x = 8
        # Message text (green) inside what the template wrote (blue).
        parts = []
        rest = line
        for _, content in msgs:
            if content and content in rest:
                a, b = rest.split(content, 1)
                parts += [(a, "a"), (content, "c")]
                rest = b
        parts.append((rest, None if line == fold else "a"))
        for text, hue in parts:
            if not text:
                continue
            label = text
            if len(label) > 84:
                label = label[:81] + "\u2026"
            w = text_width(label, SMALL, mono=True) + 4
            if hue:
                fig.rect(x, y - 14, w, 19, hue, r=2, cls="")
            fig.text(x + 2, y, label, size=SMALL, cls="mono" if hue else "muted")
            x += w
    fig.note(
        y0 + line_h * len(shown_lines) + 6,
        tr("Green: the messages' own text. Blue: what the template wrote around it."),
    )
    return fig


# -- 8a. the KV cache through prefill and decode -------------------------------------------------------------------


def kv_cache() -> Figure:
    evs = events("ch08")
    pre1, pre2 = of(evs, "prefill", 1)[0], of(evs, "prefill", 2)[0]
    n1, out1 = pre1["n_tokens"], of(evs, "model_end", 1)[0]["n_tokens"]
    n2, reused = pre2["n_tokens"], pre2["reused"]
    out2 = of(evs, "model_end", 2)[0]["n_tokens"]
    total = n2 + out2
    scale = (W - 290) / total
    fig = Figure(
        "kv-cache",
        W,
        300,
        tr("The KV cache through step 1's prefill and decode and step 2's prefill"),
    )
    rows = [
        (tr("step 1 prefill"), [(n1, "a", tr("{n} prompt tokens, one pass", n=n1))]),
        (
            tr("step 1 decode"),
            [(n1, "e", tr("cached")), (out1 - 1, "b", tr("+{n}, one pass each", n=out1 - 1))],
        ),
        (
            tr("step 2 prefill"),
            [
                (reused, "e", tr("{n} reused from the cache", n=reused)),
                (n2 - reused, "a", tr("{n} computed", n=n2 - reused)),
            ],
        ),
        (tr("step 2 decode"), [(n2, "e", tr("cached")), (out2 - 1, "b", f"+{out2 - 1}")]),
    ]
    for i, (label, segs) in enumerate(rows):
        y = 30 + i * 56
        fig.text(8, y + 22, label, cls="bold", size=SMALL)
        x = 120
        for n, hue, text in segs:
            w = n * scale
            fig.rect(x, y, w, 32, hue, r=3)
            tx = x + 6 if w > text_width(text, SMALL) + 12 else x + w + 6
            fig.text(tx, y + 21, text, size=SMALL)
            x += w
    fig.note(
        262,
        tr(
            "From chapter 8's recording (ch08.jsonl), widths to scale. Grey: keys and values already "
            "in the cache."
        ),
    )
    fig.note(
        280,
        tr(
            "Blue: computed together in one pass. Orange: one token per pass. A step's last token is "
            "never fed back."
        ),
    )
    return fig


# -- 8b. attention of one token over the prompt ---------------------------------------------------------------------


@functools.cache  # the same forward pass for each language's drawing
def attention_weights():
    """The last prompt position's attention in the full-attention layer of the trained tiny Qwen3.5, averaged over
    its heads, for step 1's prompt of the running question (chapter 1's recording)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    prompt = of(events("chapter1"), "context", 1)[0]["prompt"]
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModelForCausalLM.from_pretrained(
        MODEL, dtype=torch.float32, attn_implementation="eager"
    )
    enc = tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
    ids = torch.tensor([enc.input_ids])
    with torch.inference_mode():
        out = model(ids, output_attentions=True)
    # Only the full-attention layers return weights (a Gated DeltaNet layer has none to give): take the last.
    types = model.config.get_text_config().layer_types
    layer = [i for i, t in enumerate(types) if t == "full_attention"][-1]
    attn = out.attentions[-1]
    weights = [float(w) for w in attn[0, :, -1, :].mean(0)]  # heads averaged: one per position
    pieces = [tokenizer.decode([i]) for i in enc.input_ids]
    starts = [a for a, _ in enc.offset_mapping]
    return prompt, pieces, starts, weights, layer, int(attn.shape[1]), len(types)


def attention() -> Figure:
    prompt, pieces, starts, weights, layer, heads, n_layers = attention_weights()
    n = len(pieces)
    # The prompt's parts, by where their text starts.
    tools_at = prompt.index("# Tools")
    user_at = prompt.index("<|im_start|>user")
    turn_at = prompt.index("<|im_start|>assistant")
    parts = [
        (tr("system prompt"), 0),
        (tr("tools section"), tools_at),
        (tr("question"), user_at),
        (tr("turn"), turn_at),
    ]
    first_token = [next(i for i, s in enumerate(starts) if s >= at) for _, at in parts] + [n]
    fig = Figure(
        "attention",
        W,
        300,
        tr("Attention of the prompt's last token over the whole prompt, from the tiny model"),
    )
    fig.text(
        8,
        22,
        tr(
            "Layer {layer} of {n} (full attention), the prompt's last position, {heads} heads averaged",
            layer=layer + 1,
            n=n_layers,
            heads=heads,
        ),
        cls="bold",
    )
    x0, x1, base, top = 8, W - 8, 190, 56
    step = (x1 - x0) / n
    biggest = max(weights)
    for i, w in enumerate(weights):
        h = (base - top) * w / biggest
        fig.bar(x0 + i * step, base - h, max(step - 0.3, 0.6), h)
    # The five positions with the most weight, named above their bars, the heaviest first. Neighbours' labels
    # would be drawn over each other: a label that meets one already placed goes up a line at a time, and a
    # thin line joins it to its bar. Labels are drawn last, each on a halo of the page's background, so that a
    # line or a bar passing behind one does not cross its letters.
    best = sorted(range(n), key=lambda i: -weights[i])[:5]
    placed: list[tuple[float, float, float, str]] = []  # left, right, baseline, label
    line = SMALL + 3
    for i in best:
        x = x0 + (i + 0.5) * step
        h = (base - top) * weights[i] / biggest
        label = f"{shown(pieces[i])} {weights[i]:.0%}"
        half = text_width(label, SMALL, mono=True) / 2
        lx = min(max(x, x0 + half), x1 - half)
        y = base - h - 6
        while any(lx - half < b and a < lx + half and abs(y - yb) < line for a, b, yb, _ in placed):
            y -= line
        placed.append((lx - half, lx + half, y, label))
        if y < base - h - 6:
            fig.leader(x, base - h - 1, y + 3)
    for a, b, y, label in placed:
        fig.text((a + b) / 2, y, label, size=SMALL, cls="mono halo", anchor="middle")
    for k, (name, _) in enumerate(parts):
        a, b = first_token[k], first_token[k + 1]
        xa, xb = x0 + a * step, x0 + b * step
        fig.rect(xa, base + 6, max(xb - xa - 1, 2), 10, "abcd"[k], r=2)
        share = sum(weights[a:b])
        label = tr("{name}: {share:.0%}", name=name, share=share)
        anchor = "start" if k == 0 else ("end" if k == len(parts) - 1 else "middle")
        lx = xa if anchor == "start" else (xb if anchor == "end" else (xa + xb) / 2)
        if anchor == "middle":  # a narrow part's label must still fit inside the figure
            half = text_width(label, SMALL) / 2
            lx = min(max(lx, x0 + half), x1 - half)
        fig.text(lx, base + 34 + (k % 2) * 16, label, size=SMALL, anchor=anchor)
    fig.note(
        262,
        tr(
            "Each bar is one of the prompt's {n} tokens, its height the weight the last token gives it; "
            "the weights add up to 100%.",
            n=n,
        ),
    )
    fig.note(
        280,
        tr(
            "Computed by scripts/figures.py with the model's own forward pass over chapter 1's "
            "recorded prompt."
        ),
    )
    return fig


# -- 9. sampling as bars ------------------------------------------------------------------------------------------

SAMPLING = {"temperature": 0.8, "top_k": 6, "top_p": 0.8}
SHOWN = 8  # the most likely tokens drawn in each panel


def sampling_stages():
    """Each stage of sample()'s rules on chapter 9's recorded distribution, and sample()'s own kept count and draw
    with the same settings (the recorded log-probabilities stand in for the logits, as the chapter explains)."""
    import torch

    from agentloop.model_backends.sampling import sample
    from agentloop.model_families import Sampling

    rec = json.loads((RUNS / "ch09-next-token-qwen3_5.json").read_text(encoding="utf-8"))
    top = sorted(rec["top"], key=lambda c: (-c["logprob"], c["id"]))
    logits = torch.tensor([c["logprob"] for c in top], dtype=torch.float64)
    labels = [shown(c["text"] or c["piece"]) for c in top]
    T, k, p = SAMPLING["temperature"], SAMPLING["top_k"], SAMPLING["top_p"]
    own = torch.softmax(logits, -1)
    scaled = torch.softmax(logits / T, -1)
    topk = torch.softmax(logits[:k] / T, -1)
    kept = max(1, int(((topk.cumsum(-1) - topk) < p).sum()))
    nucleus = topk[:kept] / topk[:kept].sum()
    torch.manual_seed(0)
    chosen, report = sample(logits, Sampling(temperature=T, top_p=p, top_k=k), lambda i: labels[i])
    assert report["kept"] == kept, (report["kept"], kept)  # the figure's stages are sample()'s
    return labels, [own, scaled, topk, nucleus], chosen, report


def sampling() -> Figure:
    labels, stages, chosen, report = sampling_stages()
    T, k, p = SAMPLING["temperature"], SAMPLING["top_k"], SAMPLING["top_p"]
    titles = [
        "softmax (T = 1)",
        f"\u2192 \u00f7 T = {T}",
        f"\u2192 top-k = {k}",
        f"\u2192 top-p = {p}",
        tr("\u2192 the draw"),
    ]
    col_w, left = 146, 8
    fig = Figure(
        "sampling",
        W,
        70 + 26 * SHOWN + 40,
        tr("Softmax, temperature, top-k, top-p and the draw, as bars"),
    )
    for c, title in enumerate(titles):
        x = left + c * (col_w + 6)
        fig.text(x, 22, title, cls="bold", size=SMALL)
    for r in range(SHOWN):
        y = 36 + r * 26
        for c in range(5):
            x = left + c * (col_w + 6)
            label = labels[r] if len(labels[r]) <= 7 else labels[r][:6] + "\u2026"
            fig.text(x, y + 15, label, size=SMALL, cls="mono")
            bx, bw = x + 62, col_w - 98
            if c < 4:
                probs = stages[c]
                if r < len(probs):
                    v = float(probs[r])
                    fig.bar(bx, y + 3, bw * v, 16)
                    fig.text(x + col_w - 4, y + 15, f"{v:.2f}", size=SMALL, anchor="end")
                else:
                    fig.text(bx, y + 15, tr("cut"), size=SMALL, cls="muted")
            else:
                if r == chosen:
                    fig.bar(bx, y + 3, 20, 16, cls="bar-b")
                    fig.text(bx + 26, y + 15, tr("drawn"), size=SMALL, cls="bold")
                elif r < report["kept"]:
                    fig.text(bx, y + 15, tr("kept"), size=SMALL, cls="muted")
    fig.note(
        70 + 26 * SHOWN + 4,
        tr(
            "Chapter 9's recorded distribution, its {shown} most likely tokens; sample() kept {kept} "
            "and drew \u201c{drew}\u201d (p_sampled {p:.2f}).",
            shown=SHOWN,
            kept=report["kept"],
            drew=labels[chosen],
            p=report["p_sampled"],
        ),
    )
    fig.note(70 + 26 * SHOWN + 22, tr("Each column is the one before it after one rule."))
    return fig


# -- 10. a drafter's round ----------------------------------------------------------------------------------------


def mtp_round() -> Figure:
    evs = events("ch10-mtp")
    tokens = of(evs, "token", 1)
    # Round 1: the prefill's token, then the guesses the model kept, then its own pick where it turned one down.
    first = tokens[0]
    kept = []
    for t in tokens[1:]:
        if not t.get("drafted"):
            own = t
            break
        kept.append(t)
    n_guesses = 6
    fig = Figure(
        "mtp", W, 250, tr("One round of MTP drafting: six guesses, checked by one forward pass")
    )
    label = lambda t: shown(t["text"] or t["piece"])  # noqa: E731
    fig.text(8, 22, tr("drafter's guesses"), cls="bold", size=SMALL)
    x = 140
    xs = []
    for i in range(n_guesses):
        if i < len(kept):
            text, hue, note = label(kept[i]), "c", tr("kept")
        elif i == len(kept):
            text, hue, note = "?", "d", tr("turned down")
        else:
            text, hue, note = "?", "e", tr("dropped")
        w = max(text_width(text, TEXT, True) + 16, 66)
        fig.rect(x, 8, w, 30, hue, r=4)
        fig.text(x + w / 2, 28, text, cls="mono", anchor="middle")
        fig.text(x + w / 2, 54, note, size=SMALL, anchor="middle", cls="muted")
        xs.append((x, w))
        x += w + 6
    fig.box(140, 78, x - 146, 40, tr("one forward pass checks all six guesses"), "a")
    fig.text(8, 150, tr("tokens written"), cls="bold", size=SMALL)
    row = [(label(first), "e")] + [(label(t), "c") for t in kept] + [(label(own), "b")]
    token_row(fig, 140, 132, [r[0] for r in row], [r[1] for r in row], h=30, gap=6)
    fig.text(
        8,
        190,
        tr(
            "From ch10-mtp.jsonl, step 1, round 1: after \u201c{first}\u201d the model kept {kept} of {n} "
            "guesses; at guess {next} its own pick was \u201c{own}\u201d.",
            first=label(first),
            kept=len(kept),
            n=n_guesses,
            next=len(kept) + 1,
            own=label(own),
        ),
        size=SMALL,
    )
    fig.note(
        210,
        tr(
            "The recording keeps the tokens written, not the guess turned down: it is drawn as \u201c?\u201d."
        ),
    )
    fig.note(
        230,
        tr(
            "Grey: the token picked before the round. Green: kept guesses. Orange: the model's own token."
        ),
    )
    return fig


# -- 11. two backends -----------------------------------------------------------------------------------------------


def backends() -> Figure:
    fig = Figure(
        "backends",
        W,
        230,
        tr("The Backend interface: SimpleBackend in this process, VLLMBackend over HTTP"),
    )
    fig.box(8, 20, 200, 50, "SimpleHarness", "e", sub=tr("asks only the Backend"))
    fig.box(270, 20, 220, 50, "Backend", "a", sub="render, encode, piece, generate")
    fig.arrow([(208, 45), (268, 45)])
    fig.box(150, 130, 230, 60, "SimpleBackend", "a", sub=tr("transformers, this process"))
    fig.box(440, 130, 150, 60, "VLLMBackend", "b", sub=tr("text side here"))
    fig.box(640, 130, 112, 60, "vLLM", "b", sub=tr("a server"))
    fig.arrow([(340, 70), (265, 128)])
    fig.arrow([(420, 70), (515, 128)])
    fig.arrow([(590, 150), (638, 150)])
    fig.arrow([(638, 172), (592, 172)])
    # Above the boxes, as the answer's label is below them: the 48 px arrow is shorter than its label.
    fig.text(615, 122, tr("token ids"), size=SMALL, anchor="middle")
    fig.text(615, 208, tr("tokens, log-probs"), size=SMALL, anchor="middle")
    fig.note(222, tr("Both yield the same prefill, token and done events."))
    return fig


# -- 12. channels of a real output ----------------------------------------------------------------------------------


def channels() -> Figure:
    tokens = of(events("ch12-thinking-qwen"), "token", 1)
    hue = {"thought": "e", "content": "c", "tool_call": "b", "control": "a"}
    fig = Figure(
        "channels",
        W,
        300,
        tr("Step 1 of the running question with thinking on, each token in its channel"),
    )
    fig.text(8, 20, tr("Step 1 of ch12-thinking-qwen.jsonl, token by token"), cls="bold")
    x, y = 8, 34
    for t in tokens:
        label = shown(t["text"]) if t["channel"] != "control" else t["piece"]
        w = text_width(label, SMALL, True) + 8
        if x + w > W - 8:
            x, y = 8, y + 30
        fig.rect(x, y, w, 24, hue[t["channel"]], r=3)
        fig.text(x + w / 2, y + 16, label, size=SMALL, cls="mono", anchor="middle")
        x += w + 2
    y += 44
    x = 8
    for name in ("thought", "control", "content", "tool_call"):
        fig.rect(x, y, 18, 18, hue[name], r=3)
        fig.text(x + 24, y + 14, name, size=SMALL)
        x += 130
    fig.height = y + 30
    return fig


# -- 13. the sandbox's walls ----------------------------------------------------------------------------------------


def sandbox() -> Figure:
    from agentloop.sandbox import DEFAULT_TIMEOUT, Limits

    lim = Limits()
    mib = lambda n: f"{n >> 20} MiB"  # noqa: E731
    fig = Figure("sandbox", W, 380, tr("The walls around the model's code in run_python's sandbox"))
    walls = [
        (
            tr("the host: home folders, /etc, the repository, the network, the server's keyring"),
            "e",
        ),
        (
            tr("bubblewrap: new user, PID, network, IPC, UTS, cgroup and mount namespaces"),
            "a",
        ),
        (
            tr(
                "a cgroup: {memory} for all processes, no swap",
                memory=mib(lim.sandbox_memory_bytes),
            ),
            "b",
        ),
        (
            tr("seccomp: keyctl, io_uring, IP sockets, ptrace, mount, unshare \u2026 refused"),
            "d",
        ),
        (
            tr(
                "prlimit: {cpu} s CPU, {memory} each, {processes} processes; deadline {deadline:g} s",
                cpu=lim.cpu_seconds,
                memory=mib(lim.memory_bytes),
                processes=lim.processes,
                deadline=DEFAULT_TIMEOUT,
            ),
            "c",
        ),
    ]
    for i, (label, hue) in enumerate(walls):
        inset = i * 14
        top = 10 + i * 40
        fig.rect(8 + inset, top, W - 16 - 2 * inset, 360 - i * 50, hue, r=8, opacity=0.5)
        fig.text(20 + inset, top + 24, label, size=SMALL, cls="bold" if i == 0 else "")
    inner_top, inner_left = 10 + 5 * 40, 8 + 5 * 14
    fig.box(
        inner_left + 10,
        inner_top,
        190,
        64,
        "python3 /tmp/main.py",
        "e",
        sub=tr("as nobody, uid 65534"),
        mono=True,
    )
    files = [
        ("/usr", tr("read-only")),
        ("/data", tr("the conversation's, {size} at most", size=mib(lim.data_bytes))),
        ("/tmp", tr("{size} in memory", size=mib(lim.tmp_bytes))),
    ]
    for j, (path, note) in enumerate(files):
        fig.text(inner_left + 230, inner_top + 14 + j * 22, f"{path}", size=SMALL, cls="mono bold")
        fig.text(inner_left + 290, inner_top + 14 + j * 22, note, size=SMALL)
    return fig


# -- 14. steps and stops ------------------------------------------------------------------------------------------


def stops() -> Figure:
    from agentloop.events import FINISH_REASONS, STOP_REASONS

    fig = Figure(
        "stops", W, 230, tr("How a step ends (finish reasons) and how a run ends (stop reasons)")
    )
    fig.box(8, 20, 180, 50, tr("a step"), "a", sub=tr("generate(): tokens"))
    fig.box(8, 140, 180, 50, tr("a run"), "b", sub=tr("run(): steps"))
    for i, reason in enumerate(FINISH_REASONS):
        fig.rect(250 + i * 170, 28, 160, 34, "a", r=4)
        fig.text(330 + i * 170, 50, reason, cls="mono", anchor="middle", size=SMALL)
    fig.arrow([(188, 45), (248, 45)], "model_end", dy=-8)
    for i, reason in enumerate(STOP_REASONS):
        col, row = i % 3, i // 3
        fig.rect(250 + col * 170, 128 + row * 42, 160, 34, "b", r=4)
        fig.text(330 + col * 170, 150 + row * 42, reason, cls="mono", anchor="middle", size=SMALL)
    fig.arrow([(188, 165), (248, 165)], "run_end", dy=-8)
    fig.arrow([(98, 70), (98, 138)], tr("steps make a run"), dy=0)
    fig.text(
        8, 222, tr("FINISH_REASONS and STOP_REASONS, agentloop/events.py"), size=SMALL, cls="muted"
    )
    return fig


# -- 15. the three checks -------------------------------------------------------------------------------------------


def checks() -> Figure:
    fig = Figure(
        "checks",
        W,
        200,
        tr("A tool call's way through validation, the repeat check and permission"),
    )
    steps = [
        (tr("parsed call"), "e"),
        ("validate()", "a"),
        ("in seen?", "a"),
        ("reader.ask()", "b"),
        (tr("run"), "c"),
    ]
    refusals = ["", tr("invalid arguments"), tr("a repeated call"), tr("denied"), ""]
    for i, ((label, hue), refusal) in enumerate(zip(steps, refusals)):
        x = 8 + i * 152
        fig.box(x, 30, 128, 46, label, hue, mono=label.endswith(")"))
        if i:
            fig.arrow([(x - 24, 53), (x - 2, 53)])
        if refusal:
            fig.arrow([(x + 64, 76), (x + 64, 118)], dash=True)
            fig.rect(x - 6, 120, 140, 42, "d", r=4)
            fig.text(x + 64, 138, tr("error result:"), size=SMALL, anchor="middle")
            fig.text(x + 64, 154, refusal, size=SMALL, anchor="middle", cls="bold")
    fig.note(
        190,
        tr(
            "Every call gets one result in the conversation; only an approved, valid, new call runs."
        ),
    )
    return fig


# -- 16. pi around the same model -----------------------------------------------------------------------------------


def pi() -> Figure:
    fig = Figure(
        "pi",
        W,
        240,
        tr("pi in RPC mode, its extension and the model endpoint, around the same backend"),
    )
    fig.box(8, 20, 170, 56, "PiHarness", "e", sub=tr("the book's events"))
    fig.box(290, 20, 180, 56, "pi --mode rpc", "b", sub=tr("its own loop"))
    fig.box(580, 20, 172, 56, "pi/extension.ts", "b", sub=tr("tools, permission"), mono=True)
    fig.box(290, 150, 180, 56, "ModelEndpoint", "a", sub="/v1/chat/completions")
    fig.box(580, 150, 172, 56, "Backend", "a", sub="render, generate")
    fig.arrow([(178, 40), (288, 40)], tr("commands (stdin)"), at=0.45, dy=-10)  # clear of the head
    fig.arrow([(288, 60), (180, 60)])
    fig.text(233, 92, tr("records (stdout)"), size=SMALL, anchor="middle")
    fig.arrow([(470, 48), (578, 48)])
    fig.arrow([(380, 76), (380, 148)], "HTTP", dy=0)
    fig.arrow([(470, 178), (578, 178)])
    fig.arrow([(290, 178), (120, 178), (120, 78)])
    fig.text(200, 198, "context, prefill, token", size=SMALL, anchor="middle")
    fig.note(232, tr("The same model, prompt and tools; pi decides when to call the model again."))
    return fig


FIGURES = {
    "loop": loop,
    "families": families,
    "model-folder": model_folder,
    "bpe": bpe,
    "tool": tool,
    "template": template,
    "kv-cache": kv_cache,
    "attention": attention,
    "sampling": sampling,
    "mtp": mtp_round,
    "backends": backends,
    "channels": channels,
    "sandbox": sandbox,
    "stops": stops,
    "checks": checks,
    "pi": pi,
}


def draw(name: str, language: str = "en") -> str:
    global _language
    _language = language
    try:
        fig = FIGURES[name]()
    finally:
        _language = "en"
    fig.language = language
    return fig.svg()


# A hand-drawn figure's words: its <title> and <text> elements' contents.
WORDS = re.compile(r"(<(title|text)\b[^>]*>)([^<]*)(</\2>)")


def hand_drawn_in_zh_hans(svg: str) -> str:
    """A hand-drawn figure's zh-Hans drawing (NAME.zh-Hans.svg) from its zh-Hant one: the same shapes, its words
    through agentloop/zh_hans.py, in the SC font first."""
    svg = WORDS.sub(lambda m: m[1] + zh_hans.convert(m[3]) + m[4], svg)
    svg = svg.replace('lang="zh-Hant"', 'lang="zh-Hans"', 1)
    return svg.replace("'agentloop CJK',", "'agentloop CJK SC', 'agentloop CJK',", 1)


def hand_drawn() -> list[str]:
    """The figures drawn by hand (NAME.zh-Hant.svg written beside NAME.svg, no function here)."""
    return sorted(
        p.name.removesuffix(".zh-Hant.svg")
        for p in OUT.glob("*.zh-Hant.svg")
        if p.name.removesuffix(".zh-Hant.svg") not in FIGURES
    )


def main(argv: list[str]) -> int:
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")] or [*FIGURES, *hand_drawn()]
    stale = []
    OUT.mkdir(parents=True, exist_ok=True)
    for name in names:
        for language in LANGUAGES:
            if name not in FIGURES:
                if language != "zh-Hans":
                    continue  # drawn by hand
                hant = (OUT / file_name(name, "zh-Hant")).read_text(encoding="utf-8")
                svg = hand_drawn_in_zh_hans(hant)
            else:
                svg = draw(name, language)
            path = OUT / file_name(name, language)
            if check:
                if not path.exists() or path.read_text(encoding="utf-8") != svg:
                    stale.append(path.name)
            else:
                path.write_text(svg, encoding="utf-8")
                print(f"drew {path.relative_to(ROOT)}")
    if stale:
        print("stale figures (python scripts/figures.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
