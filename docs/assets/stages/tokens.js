/* stages/tokens.js: chapter 4's stage, text -> tokens, for each tokenizer side by side. Each token
   is a chip with its piece and id; a character split across byte tokens is one group, labelled with
   the character and its bytes. Live, the loaded model tokenizes what the reader types
   (POST tokenize); the recordings show both families' tokenizers on the chapter's examples.
   A token's bytes are read from its piece by its family's spelling (GPT-2's byte alphabet for
   Qwen3.5, ▁ and <0xNN> for Gemma 4). The family is the one the answer names (tokenize's `family`:
   the loaded model's, recorded with it), never guessed from a model's name; without one, no bytes
   are shown. What the reader did is kept across a language switch and drawn again in place: the
   text typed stays in its box (the box is never rebuilt), the example chosen stays chosen, and
   the last answer (the text it was asked for, the tokens, or the refusal) is kept and redrawn
   rather than asked again; a request still pending draws its answer once when it comes.
   Leaves out: the other stages, and decoding (the server's `texts` is the text). */

import { postJSON } from "../api.js";
import { el, fmtInt } from "../dom.js";
import { t } from "../i18n.js";
import { refusalText, Stage, visible } from "./stage.js";

// GPT-2's byte-level alphabet, which Qwen's tokenizer uses: every byte is one printable character.
const BYTE_OF_CHAR = (() => {
  const keep = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const map = new Map();
  for (const b of keep) map.set(String.fromCodePoint(b), b);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!keep.includes(b)) map.set(String.fromCodePoint(256 + n++), b);
  }
  return map;
})();

const UTF8 = new TextEncoder();

// The UTF-8 bytes a token stands for, from its piece as its family's vocabulary spells it; null
// for a control token, which stands for no text of its own, and for a family not known here.
export function tokenBytes(piece, special, family) {
  if (special) return null;
  const s = String(piece);
  if (family === "gemma4") {
    const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(s);
    if (m) return [parseInt(m[1], 16)];
    return Array.from(UTF8.encode(s.replace(/▁/g, " ")));
  }
  if (family === "qwen3_5") {
    const out = [];
    for (const ch of s) {
      if (!BYTE_OF_CHAR.has(ch)) return Array.from(UTF8.encode(s)); // an added token, spelt as itself
      out.push(BYTE_OF_CHAR.get(ch));
    }
    return out;
  }
  return null;
}

function hex(bytes) {
  return bytes.map((b) => b.toString(16).toUpperCase().padStart(2, "0")).join(" ");
}

// The recordings grouped by their text: one example, one column per tokenizer, in the order of
// data-replay.
function examplesOf(recordings) {
  const examples = new Map();
  for (const r of recordings) {
    const text =
      r.spec && r.spec.body && typeof r.spec.body.text === "string"
        ? r.spec.body.text
        : (r.data.texts || []).join("");
    const model = (r.spec && r.spec.model) || r.path.replace(/^.*\//, "").replace(/\.json$/, "");
    if (!examples.has(text)) examples.set(text, []);
    examples.get(text).push({ model, data: r.data });
  }
  return examples;
}

// A button's label for an example text: its whitespace visible, cut to 32 characters.
function shortLabel(text) {
  const shown = visible(text);
  return shown.length > 32 ? shown.slice(0, 31) + "…" : shown;
}

export class TokensStage extends Stage {
  async start(found) {
    if (found.mode === "live") this.startLive(found.status || {});
    const recorded = el("div", "als-recorded");
    this.body.append(recorded);
    const loaded = await this.loadRecordings();
    if (found.mode === "live") this.sayLive();
    const present = loaded.filter((r) => r.ok);
    if (!present.length) return;
    if (found.mode === "live") {
      const heading = el("div", "als-heading");
      recorded.append(heading);
      this.inLang(() => {
        heading.textContent = t("st.recorded_tiny");
      });
    }
    this.offerExamples(recorded, examplesOf(present));
  }

  // One button per example text; the first is shown until the reader picks another.
  offerExamples(box, examples) {
    const picker = el("div", "als-examples");
    picker.setAttribute("role", "group");
    const shown = el("div", "als-example");
    box.append(picker, shown);
    this.examples = { list: [...examples], buttons: [], shown, chosen: 0 };
    this.examples.list.forEach(([text], i) => {
      const b = el("button", "als-btn als-example-btn", shortLabel(text));
      b.type = "button";
      b.title = text;
      b.dataset.index = String(i);
      b.addEventListener("click", () => this.showExample(i));
      this.examples.buttons.push(b);
      picker.append(b);
    });
    this.inLang(() => {
      picker.setAttribute("aria-label", t("st.example_texts"));
      this.drawExample();
    });
  }

  // The reader's pick, kept: a language switch shows it again.
  showExample(i) {
    this.examples.chosen = i;
    this.drawExample();
  }

  // The chosen example's tokens, its button pressed.
  drawExample() {
    const { list, buttons, shown, chosen } = this.examples;
    if (!list.length) return;
    buttons.forEach((b, i) => b.setAttribute("aria-pressed", String(i === chosen)));
    shown.replaceChildren(renderExample(...list[chosen]));
  }

  // Live: a text box the loaded model tokenizes, the chapter's text first.
  startLive(status) {
    const box = el("div", "als-live-box");
    const label = el("label", "als-field als-wide");
    const input = el("textarea", "als-text");
    input.rows = 2;
    input.value = this.root.dataset.text || "I like 🍣 and 寿司!";
    const name = el("span");
    label.append(name, input);
    const go = el("button", "als-btn als-go");
    go.type = "button";
    const out = el("div", "als-example");
    this.live = { status, input, go, out, answer: null };
    go.addEventListener("click", () => this.tokenize());
    box.append(label, go, out);
    this.body.append(box);
    this.inLang(() => {
      name.textContent = t("st.text");
      go.textContent = t("st.tokenize");
      this.drawAnswer();
    });
    this.tokenize();
  }

  // The loaded model's tokens for the text in the box. The answer is kept with the text it was
  // asked for (the reader may type on while it comes), so a language switch redraws it as it was.
  async tokenize() {
    const { input, go } = this.live;
    const text = input.value;
    go.disabled = true;
    try {
      this.live.answer = { text, data: await postJSON("tokenize", null, { text }) };
    } catch (err) {
      this.live.answer = { err };
    } finally {
      go.disabled = false;
    }
    this.drawAnswer();
  }

  // The last answer, or its refusal; nothing before the first comes.
  drawAnswer() {
    const { answer, out, status } = this.live;
    if (!answer) return;
    if (answer.err) {
      out.replaceChildren(el("div", "als-error", refusalText(answer.err)));
      return;
    }
    const model = status.model || t("st.the_loaded_model");
    out.replaceChildren(renderExample(answer.text, [{ model, data: answer.data }]));
  }
}

// One text and its tokens under each tokenizer.
function renderExample(text, columns) {
  const box = el("div", "als-columns");
  const head = el("div", "als-textline");
  head.append(el("span", "als-k", t("st.text_k")), el("code", "als-source-text", visible(text)));
  const utf8 = UTF8.encode(text).length;
  head.append(el("span", "als-k", t("st.chars_bytes", { chars: [...text].length, bytes: utf8 })));
  box.append(head);
  for (const col of columns) box.append(renderTokens(col.model, col.data));
  return box;
}

// One token's chip: its piece and id, its facts in the title.
function tokenChip(data, i, bytes) {
  const { ids = [], pieces = [], texts = [], special = [] } = data;
  const chip = el("span", "als-tok" + (special[i] ? " als-special" : ""));
  chip.dataset.id = String(ids[i]);
  chip.append(el("span", "als-piece", visible(pieces[i])), el("span", "als-id", String(ids[i])));
  chip.title =
    `id ${ids[i]} · piece ${JSON.stringify(pieces[i])} · text ${JSON.stringify(texts[i])}` +
    (bytes ? ` · bytes ${hex(bytes)}` : "") +
    (special[i] ? ` · ${t("tok.special")}` : "");
  return chip;
}

// One tokenizer's column: its model, its count, its tokens (a split character's as one group) and
// their texts joined.
function renderTokens(model, data) {
  const ids = data.ids || [];
  const texts = data.texts || [];
  const special = data.special || [];
  const col = el("div", "als-column");
  col.dataset.model = model;
  const title = el("div", "als-col-title");
  title.append(
    el("strong", null, model),
    el("span", "als-k", ` ${t("st.n_tokens", { n: fmtInt(data.n_tokens ?? ids.length) })}`),
  );
  col.append(title);
  const row = el("div", "als-tokens");
  let group = null; // tokens of a character that is still split
  let groupBytes = [];
  for (let i = 0; i < ids.length; i++) {
    const bytes = tokenBytes((data.pieces || [])[i], special[i], data.family);
    const chip = tokenChip(data, i, bytes);
    const partial = !special[i] && texts[i] === "";
    if (!partial && !group) {
      row.append(chip);
      continue;
    }
    if (!group) {
      group = el("span", "als-split");
      group._row = el("span", "als-split-tokens");
      group.append(group._row);
      groupBytes = [];
      row.append(group);
    }
    chip.classList.add("als-part");
    if (bytes) chip.append(el("span", "als-bytes", hex(bytes)));
    group._row.append(chip);
    if (bytes) groupBytes.push(...bytes);
    if (!partial) {
      // This token completes the character: its text comes out whole, once.
      const n = group.querySelectorAll(".als-tok").length;
      group.append(
        el("span", "als-split-label", t("st.split", { text: visible(texts[i]), n, bytes: hex(groupBytes) })),
      );
      group = null;
    }
  }
  col.append(row);
  const line = el("div", "als-decoded");
  line.append(el("span", "als-k", t("st.joined")), el("code", null, visible(texts.join(""))));
  col.append(line);
  return col;
}
