"""The stage panels (docs/assets/stages.js and stages/) in a real browser, on the built book served by a plain static server
(so they replay), with recordings this test makes from the tiny checkpoints through the demo server's own stage
functions: the shapes the server answers.

- Chapter 9: the kept set and p_kept follow the sliders and match sampling.candidates(), the rules sample()
  draws by, run on the same recorded distribution; draws come only from the kept tokens.
- Chapter 4: the tokens panel shows each token's piece and id, and a character split across byte tokens as one
  group with its bytes; the bytes the panel reads from pieces are the tokenizer's.
- A missing recording is named in the panel's status line, as panel.js does for runs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import urljoin

import pytest
import torch

from tests.conftest import english, static_site

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "docs/chapters/runs"


def chapter(stem_prefix: str) -> str:
    (md,) = english((ROOT / "docs/chapters").glob(f"{stem_prefix}-*.md"))
    return md.stem


def replay_paths(html: str, stage: str) -> list[str]:
    """The recordings a stage panel names, relative to the chapter's Markdown file (docs/chapters/)."""
    m = re.search(
        r'<div class="agentloop-stage" data-stage="' + stage + r'" data-replay="([^"]+)"', html
    )
    assert m, f"no {stage} panel"
    return m[1].split()


def current_with(backend):
    """The demo server's one-model holder, with this backend loaded, for its stage functions."""
    from demo_server.model import CurrentModel

    current = CurrentModel(device="cpu")
    current.backend = backend
    return current


# -- fixtures -------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(site):
    """The book (this module's build), served by Python's static file server on 127.0.0.1."""
    with static_site(site) as base:
        yield site, base + "/"


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert not errors, errors


# -- chapter 9: sampling ----------------------------------------------------------------------------------------------


def next_token_recording(backend, family: str) -> dict:
    """A real next-token distribution of the tiny model, as POST /api/next-token answers it, for the chapter's
    request (its spec file), listing the 50 most likely tokens at T = 1 with nothing cut."""
    from demo_server import stages

    spec = json.loads((RUNS / f"ch09-next-token-{family}.spec.json").read_text(encoding="utf-8"))
    body = spec["body"]
    torch.manual_seed(0)
    return stages.next_token(
        current_with(backend),
        body.get("prompt"),
        body.get("messages"),
        body.get("tools"),
        body.get("thinking", False),
        1.0,
        1.0,
        0,
        50,
    )


def python_rules(
    top: list[dict], temperature: float, top_k: int, top_p: float, dtype
) -> tuple[list[int], list[float]]:
    """sample()'s own rules (sampling.candidates) on the listed tokens as the whole vocabulary: the kept ids (most
    likely first) and their probabilities among the kept. The logprobs stand in for the logits (one shared shift,
    which softmax removes)."""
    from agentloop.model_backends.sampling import candidates
    from agentloop.model_families import Sampling

    ranked = sorted(top, key=lambda c: (-c["logprob"], c["id"]))
    logits = torch.tensor([c["logprob"] for c in ranked], dtype=dtype)
    kept, probs = candidates(logits, Sampling(temperature=temperature, top_p=top_p, top_k=top_k))
    p_kept = dict(zip(kept.tolist(), probs.tolist()))
    return [c["id"] for c in ranked[: len(kept)]], [p_kept.get(j, 0.0) for j in range(len(kept))]


def set_slider(pg, name: str, value) -> float:
    """Move a slider as a reader would (its input event), and return the value it settled on."""
    return pg.evaluate(
        """([cls, value]) => {
            const input = document.querySelector(`.als-stage-sampling .${cls}`);
            input.value = String(value);
            input.dispatchEvent(new Event("input", { bubbles: true }));
            return Number(input.value);
        }""",
        [name, value],
    )


def panel_rows(pg) -> list[dict]:
    return pg.evaluate("""() => Array.from(document.querySelectorAll(".als-stage-sampling tr.als-row")).map((tr) => ({
        id: Number(tr.dataset.id), kept: tr.dataset.kept === "true", pKept: Number(tr.dataset.pKept),
        draws: tr.lastElementChild.textContent }))""")


SETTINGS = [  # temperature, top-k, top-p
    (1.0, 50, 1.0),
    (1.0, 10, 1.0),
    (0.7, 0, 0.5),
    (1.5, 20, 0.3),
    (0.0, 5, 0.9),
    (0.4, 50, 0.05),
    (1.0, 0, 0.0),
    (2.0, 0, 0.95),
    (0.25, 30, 0.8),
    (1.0, 1, 1.0),
]


def test_sampling_panel_follows_the_sliders_and_matches_sample(served, page, tiny):
    site, base = served
    html = (site / "chapters" / chapter("09") / "index.html").read_text(encoding="utf-8")
    paths = replay_paths(html, "sampling")
    recordings = {}
    for path in paths:
        family = re.search(r"-(qwen3_5|gemma4)\.json$", path)[1]
        recordings[family] = next_token_recording(tiny(family), family)
        (site / "chapters" / path).write_text(
            json.dumps(recordings[family], ensure_ascii=False), encoding="utf-8"
        )

    page.goto(urljoin(base, f"chapters/{chapter('09')}/"))
    page.wait_for_selector(".als-stage-sampling tr.als-row")
    assert "Recording missing" not in page.locator(".als-stage-sampling .als-status").inner_text()

    checked = 0
    for index, family in enumerate(re.search(r"-(qwen3_5|gemma4)\.json$", p)[1] for p in paths):
        if len(paths) > 1:
            page.locator(".als-stage-sampling .als-choice").nth(index).click()
        top = recordings[family]["top"]
        assert len(panel_rows(page)) == len(top) == 50
        for temperature, top_k, top_p in SETTINGS:
            t = set_slider(page, "als-temperature", temperature)
            k = int(set_slider(page, "als-topK", top_k))
            p = set_slider(page, "als-topP", top_p)
            ids, p_kept = python_rules(top, t, k, p, torch.float32)
            # A setting whose top-p cut falls within float32's rounding of a cumulative sum could go either way;
            # the rules must agree in float64 too for the comparison to mean anything.
            if python_rules(top, t, k, p, torch.float64)[0] != ids:
                continue
            rows = panel_rows(page)
            assert [r["id"] for r in rows if r["kept"]] == ids, (family, t, k, p)
            # The kept are the most likely: a prefix of the rows, in the panel's order too.
            assert [r["kept"] for r in rows] == [True] * len(ids) + [False] * (len(rows) - len(ids))
            assert [r["pKept"] for r in rows[: len(ids)]] == pytest.approx(p_kept, abs=1e-6)
            assert all(r["pKept"] == 0 for r in rows[len(ids) :])
            assert page.locator(".als-stage-sampling").get_attribute("data-kept") == str(len(ids))
            exact = "als-exact" if t <= 0 or 1 <= k <= 50 else "als-approx"
            assert page.locator(f".als-stage-sampling .als-scope.{exact}").count() == 1, (t, k)
            checked += 1

        # Draws come from the kept set only.
        set_slider(page, "als-temperature", 1.0)
        set_slider(page, "als-topK", 3)
        set_slider(page, "als-topP", 1.0)
        page.locator(".als-stage-sampling .als-draw-many").click()
        rows = panel_rows(page)
        counts = [int(r["draws"].split()[0]) if r["draws"] else 0 for r in rows]
        assert (
            sum(counts) == 1000
            and all(c == 0 for c in counts[3:])
            and all(c > 0 for c in counts[:3])
        )
    assert checked >= len(SETTINGS) * len(paths) - 2


def test_sampling_rules_in_js_on_ties_and_greedy(served, page):
    """The mirror's own edge cases, against sample(): equal logits go lowest id first, top-p 0 keeps one."""
    from agentloop.model_backends.sampling import sample
    from agentloop.model_families import Sampling

    _, base = served
    page.goto(urljoin(base, f"chapters/{chapter('09')}/"))
    page.locator(".agentloop-stage .als-badge", has_text="replay").first.wait_for()
    logits = [0.0, 3.0, 1.0, 3.0, 3.0, -1.0]
    top = [{"id": i, "piece": f"t{i}", "p": 0.0, "logprob": v} for i, v in enumerate(logits)]
    for temperature, top_k, top_p in [
        (0.0, 0, 1.0),
        (1.0, 2, 1.0),
        (1.0, 0, 0.0),
        (0.5, 0, 0.9),
        (3.0, 4, 0.6),
    ]:
        got = page.evaluate(
            """async ([top, t, k, p]) => {
            const stages = document.querySelector("script[src$='assets/stages.js']").src;
            const r = await import(new URL("stages/sampling-rules.js", stages).href);
            const c = r.candidates(top);
            const out = r.applySampling(c, t, k, p);
            return { ids: c.slice(0, out.kept).map((x) => x.id), kept: out.kept };
        }""",
            [top, temperature, top_k, top_p],
        )
        _, details = sample(
            torch.tensor(logits), Sampling(temperature=temperature, top_p=top_p, top_k=top_k), str
        )
        assert got["kept"] == details["kept"], (temperature, top_k, top_p)
        order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))
        assert got["ids"] == order[: details["kept"]]
        if temperature <= 0:
            assert got["ids"] == [1]


# -- chapter 4: tokens ------------------------------------------------------------------------------------------------


def visible(s: str) -> str:
    """What stages/stage.js's visible() shows for a piece: whitespace made visible."""
    return (
        s.replace("\\", "\\\\")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
        .replace(" ", "␣")
    )


def test_tokens_panel_shows_pieces_ids_and_split_characters(served, page, tiny):
    from demo_server import stages

    site, base = served
    html = (site / "chapters" / chapter("04") / "index.html").read_text(encoding="utf-8")
    paths = replay_paths(html, "tokens")
    answers = {}
    for path in paths:
        spec = json.loads(
            (site / "chapters" / path.replace(".json", ".spec.json")).read_text(encoding="utf-8")
        )
        family = spec["model"].split("-", 1)[1]
        answer = stages.tokenize(current_with(tiny(family)), spec["body"]["text"])
        answers[path] = (spec, answer)
        (site / "chapters" / path).write_text(
            json.dumps(answer, ensure_ascii=False), encoding="utf-8"
        )

    page.goto(urljoin(base, f"chapters/{chapter('04')}/"))
    page.wait_for_selector(".als-stage-tokens .als-column")
    assert (
        page.locator(".als-stage-tokens .als-status").inner_text()
        == f"{len(paths)} recordings loaded."
    )
    texts = list(dict.fromkeys(spec["body"]["text"] for spec, _ in answers.values()))
    for i, text in enumerate(texts):
        page.locator(".als-stage-tokens .als-example-btn").nth(i).click()
        columns = page.evaluate("""() => Array.from(document.querySelectorAll(".als-stage-tokens .als-column")).map((c) => ({
            model: c.dataset.model,
            pieces: Array.from(c.querySelectorAll(".als-tok .als-piece")).map((e) => e.textContent),
            ids: Array.from(c.querySelectorAll(".als-tok")).map((e) => Number(e.dataset.id)),
            special: Array.from(c.querySelectorAll(".als-tok")).map((e) => e.classList.contains("als-special")),
            splits: Array.from(c.querySelectorAll(".als-split .als-split-label")).map((e) => e.textContent) }))""")
        expected = [
            (spec["model"], answer)
            for spec, answer in answers.values()
            if spec["body"]["text"] == text
        ]
        assert [c["model"] for c in columns] == [m for m, _ in expected]
        for column, (_, answer) in zip(columns, expected):
            assert column["pieces"] == [visible(p) for p in answer["pieces"]]
            assert column["ids"] == answer["ids"]
            assert column["special"] == answer["special"]
            # Each character split across byte tokens is one group, labelled with the character and its bytes.
            split_chars = []
            pending = 0
            for t, special in zip(answer["texts"], answer["special"]):
                if t == "" and not special:
                    pending += 1
                elif pending:
                    split_chars.append((t, pending + 1))
                    pending = 0
            assert len(column["splits"]) == len(split_chars)
            for label, (t, n) in zip(column["splits"], split_chars):
                assert label.startswith(f"{visible(t)} = {n} tokens, ")
                assert label.endswith(" ".join(f"{b:02X}" for b in t.encode("utf-8")))
    assert any("🍣" in t for t in texts)


def test_token_bytes_match_the_tokenizers(served, page, tiny):
    """The bytes the panel reads from a piece (GPT-2's byte alphabet for Qwen3.5, ▁ and <0xNN> for Gemma 4) are
    the bytes the tokenizer decodes that token to, for every token of both tiny vocabularies that decodes whole."""
    _, base = served
    page.goto(urljoin(base, f"chapters/{chapter('04')}/"))
    page.locator(".agentloop-stage .als-badge", has_text="replay").first.wait_for()
    for family in ("qwen3_5", "gemma4"):
        backend = tiny(family)
        cases = []
        for i in range(len(backend.tokenizer)):
            if i in backend.special_ids:
                continue
            text = backend.tokenizer.decode([i], skip_special_tokens=False)
            if "\ufffd" not in text:
                cases.append((backend.piece(i), list(text.encode("utf-8"))))
        got = page.evaluate(
            """async ([pieces, family]) => {
            const stages = document.querySelector("script[src$='assets/stages.js']").src;
            const { tokenBytes } = await import(new URL("stages/tokens.js", stages).href);
            return pieces.map((p) => tokenBytes(p, false, family));
        }""",
            [[p for p, _ in cases], family],
        )
        wrong = [(p, g, want) for (p, want), g in zip(cases, got) if g != want]
        assert len(cases) > 1000 and not wrong, wrong[:5]


# -- chapter 3, and a missing recording -------------------------------------------------------------------------------


def test_a_missing_recording_is_named_and_the_rest_still_shows(served, page, tiny):
    site, base = served
    html = (site / "chapters" / chapter("03") / "index.html").read_text(encoding="utf-8")
    paths = replay_paths(html, "specs")
    assert len(paths) == 2
    present, gone = paths
    from agentloop.model_backends.facts import model_specs

    backend = tiny("qwen3_5")
    current = current_with(backend)
    current.name, current.specs = "tiny-qwen3_5", model_specs(backend)
    status = current.status()  # what GET /api/status answers with this model loaded
    (site / "chapters" / present).write_text(json.dumps(status), encoding="utf-8")
    missing = site / "chapters" / gone
    if missing.exists():
        shutil.move(missing, missing.with_suffix(".away"))
    try:
        page.goto(urljoin(base, f"chapters/{chapter('03')}/"))
        page.wait_for_selector(".als-stage-specs.als-missing table")
        line = page.locator(".als-stage-specs .als-status").inner_text()
        assert line.startswith("Recording missing:") and gone in line and "HTTP 404" in line
        headers = page.locator(".als-stage-specs th").all_inner_texts()
        assert "tiny-qwen3_5" in headers
        assert (
            page.locator('.als-stage-specs tr[data-key="layer_type_counts"] td').first.inner_text()
            == "3 × linear_attention, 1 × full_attention"
        )
    finally:
        if missing.with_suffix(".away").exists():
            shutil.move(missing.with_suffix(".away"), missing)
