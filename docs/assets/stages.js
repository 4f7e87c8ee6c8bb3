/* stages.js: the stage panels, one stage of the loop alone (the tokenizer, the sampling rules, the
   model's files), live from the demo server or from a recording of what the server answered. It
   asks the server through api.js and draws with dom.js's helpers. Leaves out: the loop panels
   (panel.js).

   A chapter embeds:  <div class="agentloop-stage" data-stage="tokens" data-replay="runs/a.json runs/b.json"></div>
   Attributes:
     data-stage     "tokens" (ch. 4), "sampling" (ch. 9), "specs" and "models" (ch. 3)
     data-replay    the recordings, space-separated, each relative to the chapter's Markdown file (as panel.js's
                    data-replay is written). A recording is the JSON body the demo server answered; next to it,
                    <name>.spec.json is the request it was recorded from (docs/chapters/runs/), read for the
                    model's name and the request's body.
     data-temperature, data-top-k, data-top-p   (sampling) where the sliders start
   The API is in docs/assets/README-panel.md ("One stage alone", GET /api/status, GET /api/models). */

import { getJSON, MAKE_LIVE_URL, pageToken, postJSON, probeServer } from "./api.js";
import { codeText, el, fmtBytes, fmtInt, fmtP, markdownDir, onEveryPage, statusBar } from "./dom.js";
import { onLang, pick, t } from "./i18n.js";

const TOP_N = 50; // the most /api/next-token lists

// Whitespace a piece or a text may hold, made visible.
function visible(s) {
  return String(s)
    .replace(/\\/g, "\\\\")
    .replace(/\n/g, "\\n")
    .replace(/\r/g, "\\r")
    .replace(/\t/g, "\\t")
    .replace(/ /g, "␣");
}

function recordingURL(path) {
  return /^[a-z]+:|^\//.test(path)
    ? new URL(path, location.href).href
    : new URL(path, markdownDir()).href;
}

function specPath(path) {
  return path.replace(/\.json$/, ".spec.json");
}

async function fetchJSON(url) {
  try {
    const r = await fetch(url, { cache: "no-cache", headers: { Accept: "application/json" } });
    if (!r.ok) return { ok: false, why: `HTTP ${r.status}` };
    return { ok: true, data: await r.json() };
  } catch (err) {
    return { ok: false, why: String(err.message || err) };
  }
}

// What a refused request says (the server's `error` event, in the reader's language), for a
// panel's body.
function refusalText(err) {
  const m = err && err.event && err.event.message;
  return m && m.en ? pick(m) : String((err && err.message) || err);
}

function familyOf(name) {
  const s = String(name || "").toLowerCase();
  if (s.includes("gemma")) return "gemma4";
  if (s.includes("qwen")) return "qwen3_5";
  return null;
}

// Bytes of a token, from its piece as the vocabulary spells it.

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

// The UTF-8 bytes a token stands for; null for a control token, which stands for no text of its
// own.
function tokenBytes(piece, special, family) {
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

// The sampling rules of agentloop/model_backends/sampling.py, sample(), on the tokens an
// /api/next-token answer lists. Pure functions: the panel draws what they return, and the tests
// call them too.

// The listed tokens, most likely first; equally likely ones lower id first, as sample() orders
// them. Their logprobs stand in for the logits: logprob = logit - log Σ exp(logits), the same shift
// for every token, which the softmaxes below take out again.
function candidates(top) {
  return (top || [])
    .map((c) => ({
      id: c.id,
      piece: c.piece,
      text: c.text,
      p: c.p,
      logit: typeof c.logprob === "number" ? c.logprob : -Infinity,
    }))
    .sort((a, b) => b.logit - a.logit || a.id - b.id);
}

function softmax(xs) {
  const m = Math.max(...xs);
  const e = xs.map((x) => Math.exp(x - m));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
}

// sample()'s rules, in its order. Returns, for every listed token (in order), the probability after
// T and top-k (`scaled`; 0 when top-k cut it), whether it is kept, and its probability among the
// kept (`pKept`).
function applySampling(cands, temperature, topK, topP) {
  const n = cands.length;
  if (!n) return { greedy: temperature <= 0, k: 0, kept: 0, scaled: [], cum: [], pKept: [] };
  if (temperature <= 0) {
    // T <= 0 is greedy: the most likely token, the lower id on a tie.
    const pKept = cands.map((_, i) => (i === 0 ? 1 : 0));
    return { greedy: true, k: n, kept: 1, scaled: pKept.slice(), cum: pKept.slice(), pKept };
  }
  // logits / T, then the top k (0: no limit), then softmax over those.
  const k = topK > 0 ? Math.min(topK, n) : n;
  const probs = softmax(cands.slice(0, k).map((c) => c.logit / temperature));
  // Nucleus: count the tokens whose probability before them, (cumsum - p), is below top_p; at least
  // one.
  const cum = [];
  let sum = 0;
  let kept = 0;
  for (const p of probs) {
    sum += p;
    cum.push(sum);
    if (sum - p < topP) kept++;
  }
  kept = Math.max(1, kept);
  // Renormalize over the kept tokens.
  const z = probs.slice(0, kept).reduce((a, b) => a + b, 0);
  const scaled = cands.map((_, i) => (i < k ? probs[i] : 0));
  const pKept = cands.map((_, i) => (i < kept ? probs[i] / z : 0));
  return {
    greedy: false,
    k,
    kept,
    scaled,
    cum: cands.map((_, i) => (i < k ? cum[i] : null)),
    pKept,
  };
}

// One draw from the kept tokens with their probabilities, as torch.multinomial weighs them; u in
// [0, 1).
function drawIndex(pKept, u) {
  let r = u;
  let last = 0;
  for (let i = 0; i < pKept.length; i++) {
    if (pKept[i] <= 0) continue;
    last = i;
    r -= pKept[i];
    if (r < 0) return i;
  }
  return last;
}

// Whether the panel's kept set is exactly what sample() keeps over the whole vocabulary: when T <=
// 0, or when top-k keeps no more tokens than are listed. Otherwise the unlisted tokens would have
// been candidates too.
function exactOverVocabulary(listed, vocabulary, temperature, topK) {
  if (temperature <= 0) return true;
  if (topK > 0 && topK <= listed) return true;
  return typeof vocabulary === "number" && listed >= vocabulary;
}

// A stage panel: a status bar, a note, and a body the stage fills.

const stages = new Set();

class Stage {
  constructor(root) {
    this.root = root;
    root._alsStage = this;
    root.classList.add(
      "als-panel",
      `als-stage-${(root.dataset.stage || "").replace(/[^a-z_-]/gi, "")}`,
    );
    root.replaceChildren();
    ({ bar: this.bar, badge: this.badge, status: this.status } = statusBar("als", "als-badge"));
    this.note = el("div", "als-note");
    this.body = el("div", "als-body");
    root.append(this.bar, this.note, this.body);
    this.paths = (root.dataset.replay || "").split(/\s+/).filter(Boolean);
    stages.add(this);
    probeServer().then((found) => {
      if (this.destroyed) return;
      this.found = found;
      if (found.mode === "live") {
        this.badge.textContent = t("badge.live");
        this.badge.classList.add("als-live");
      } else {
        this.badge.textContent = t("badge.replay");
      }
      this.explain(found);
      Promise.resolve(this.start(found)).catch((err) => this.fail(t("st.failed", { err })));
    });
  }

  destroy() {
    this.destroyed = true;
    stages.delete(this);
  }

  explain(found) {
    this.note.replaceChildren();
    if (found.mode === "live") {
      const s = found.status || {};
      const model = s.model ? (s.family ? `${s.model} (${s.family})` : s.model) : t("st.its_model");
      this.note.append(t("st.live", { model }));
      if (!pageToken()) this.note.append(" ", t("st.no_token"));
    } else if (found.mode === "file") {
      this.note.append(
        ...codeText(t("st.file_note"), {
          http: "python3 -m http.server -d site 8000",
          serve: "make serve",
        }),
      );
    } else {
      this.note.append(
        ...codeText(t(found.published ? "st.note_published" : "st.note"), {
          serve: "make serve",
          url: MAKE_LIVE_URL,
        }),
      );
    }
  }

  fail(text) {
    this.status.textContent = text;
    this.root.classList.add("als-missing");
  }

  // Every recording of data-replay with the spec it was recorded from: [{path, data, spec}].
  // Missing ones are named in the status line ("Recording missing: …") and left out.
  async loadRecordings() {
    if (this.found && this.found.mode === "file") {
      this.fail(t("st.file"));
      return [];
    }
    if (!this.paths.length) {
      this.fail(t("st.none"));
      return [];
    }
    this.status.textContent = t("st.loading");
    const loaded = await Promise.all(
      this.paths.map(async (path) => {
        const [rec, spec] = await Promise.all([
          fetchJSON(recordingURL(path)),
          fetchJSON(recordingURL(specPath(path))),
        ]);
        return { path, ok: rec.ok, why: rec.why, data: rec.data, spec: spec.ok ? spec.data : null };
      }),
    );
    const missing = loaded.filter((r) => !r.ok);
    if (missing.length) {
      const which = missing.map((r) => `${r.path} (${r.why})`).join(t("list.sep"));
      this.fail(t("st.missing", { which }));
    } else {
      this.status.textContent = t(loaded.length === 1 ? "st.loaded_one" : "st.loaded", {
        n: loaded.length,
      });
    }
    return loaded;
  }

  // The specs alone (the requests), for a live panel that asks the same questions.
  async loadSpecs() {
    return Promise.all(
      this.paths.map(async (path) => {
        const spec = await fetchJSON(recordingURL(specPath(path)));
        return { path, spec: spec.ok ? spec.data : null };
      }),
    );
  }
}

// Chapter 4: text -> tokens, for each tokenizer side by side.

class TokensStage extends Stage {
  async start(found) {
    if (found.mode === "live") this.startLive(found.status || {});
    const recorded = el("div", "als-recorded");
    this.body.append(recorded);
    const loaded = await this.loadRecordings();
    if (found.mode === "live")
      this.status.textContent = t("live.following", { what: this.status.textContent });
    const present = loaded.filter((r) => r.ok);
    if (!present.length) return;
    // Group the recordings by their text: one example, one column per tokenizer.
    const examples = new Map();
    for (const r of present) {
      const text =
        r.spec && r.spec.body && typeof r.spec.body.text === "string"
          ? r.spec.body.text
          : (r.data.texts || []).join("");
      const model = (r.spec && r.spec.model) || r.path.replace(/^.*\//, "").replace(/\.json$/, "");
      if (!examples.has(text)) examples.set(text, []);
      examples.get(text).push({ model, family: familyOf(model), data: r.data });
    }
    if (found.mode === "live")
      recorded.append(el("div", "als-heading", t("st.recorded_tiny")));
    const picker = el("div", "als-examples");
    picker.setAttribute("role", "group");
    picker.setAttribute("aria-label", t("st.example_texts"));
    const shown = el("div", "als-example");
    recorded.append(picker, shown);
    const buttons = [];
    let i = 0;
    for (const [text, columns] of examples) {
      const b = el(
        "button",
        "als-btn als-example-btn",
        visible(text).length > 32 ? visible(text).slice(0, 31) + "…" : visible(text),
      );
      b.type = "button";
      b.title = text;
      b.dataset.index = String(i++);
      b.addEventListener("click", () => {
        for (const other of buttons) other.setAttribute("aria-pressed", String(other === b));
        shown.replaceChildren(renderExample(text, columns));
      });
      buttons.push(b);
      picker.append(b);
    }
    if (buttons.length) buttons[0].click();
  }

  startLive(status) {
    const box = el("div", "als-live-box");
    const label = el("label", "als-field als-wide");
    const input = el("textarea", "als-text");
    input.rows = 2;
    input.value = this.root.dataset.text || "I like 🍣 and 寿司!";
    label.append(el("span", null, t("st.text")), input);
    const go = el("button", "als-btn als-go", t("st.tokenize"));
    go.type = "button";
    const out = el("div", "als-example");
    const run = async () => {
      go.disabled = true;
      try {
        const data = await postJSON("tokenize", null, { text: input.value });
        out.replaceChildren(
          renderExample(input.value, [
            {
              model: status.model || t("st.the_loaded_model"),
              family: status.family || familyOf(status.model),
              data,
            },
          ]),
        );
      } catch (err) {
        out.replaceChildren(el("div", "als-error", refusalText(err)));
      } finally {
        go.disabled = false;
      }
    };
    go.addEventListener("click", run);
    box.append(label, go, out);
    this.body.append(box);
    run();
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
  for (const col of columns) box.append(renderTokens(col.model, col.family, col.data));
  return box;
}

function renderTokens(model, family, data) {
  const ids = data.ids || [];
  const pieces = data.pieces || [];
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
    const bytes = tokenBytes(pieces[i], special[i], family);
    const chip = el("span", "als-tok" + (special[i] ? " als-special" : ""));
    chip.dataset.id = String(ids[i]);
    chip.append(el("span", "als-piece", visible(pieces[i])), el("span", "als-id", String(ids[i])));
    chip.title =
      `id ${ids[i]} · piece ${JSON.stringify(pieces[i])} · text ${JSON.stringify(texts[i])}` +
      (bytes ? ` · bytes ${hex(bytes)}` : "") +
      (special[i] ? ` · ${t("tok.special")}` : "");
    const partial = !special[i] && texts[i] === "";
    if (partial || group) {
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
        const label = el(
          "span",
          "als-split-label",
          t("st.split", { text: visible(texts[i]), n, bytes: hex(groupBytes) }),
        );
        group.append(label);
        group = null;
      }
    } else {
      row.append(chip);
    }
  }
  col.append(row);
  const joined = texts.join("");
  const line = el("div", "als-decoded");
  line.append(el("span", "als-k", t("st.joined")), el("code", null, visible(joined)));
  col.append(line);
  return col;
}

// Chapter 9: the sampling rules on a recorded next-token distribution, with sliders and a draw.

class SamplingStage extends Stage {
  async start(found) {
    this.controls = el("div", "als-controls");
    this.summary = el("div", "als-summary");
    this.table = el("div", "als-dist");
    this.chooser = el("div", "als-examples");
    this.liveBox = el("div", "als-live-box");
    this.body.append(this.chooser, this.liveBox, this.controls, this.summary, this.table);
    this.buildControls();
    const loaded = await this.loadRecordings();
    this.options = loaded
      .filter((r) => r.ok && Array.isArray(r.data.top))
      .map((r) => ({
        label: (r.spec && r.spec.model) || r.path.replace(/^.*\//, ""),
        data: r.data,
        spec: r.spec,
      }));
    if (found.mode === "live") {
      this.status.textContent = t("live.following", { what: this.status.textContent });
      this.startLive(found.status || {}, loaded);
    }
    if (this.options.length > 1) {
      for (const [i, o] of this.options.entries()) {
        const b = el("button", "als-btn als-choice", o.label);
        b.type = "button";
        b.addEventListener("click", () => this.use(i));
        o.button = b;
        this.chooser.append(b);
      }
    }
    if (this.options.length) this.use(0);
    else if (this.askButton) this.askButton.click(); // live, with nothing recorded: ask the server at once
  }

  buildControls() {
    const d = this.root.dataset;
    const num = (v, fallback) =>
      v !== undefined && v !== "" && Number.isFinite(Number(v)) ? Number(v) : fallback;
    this.settings = {
      temperature: num(d.temperature, 1),
      topK: num(d.topK, 0),
      topP: num(d.topP, 1),
    };
    const slider = (key, label, min, max, step) => {
      const wrap = el("label", "als-field");
      const input = el("input", `als-slider als-${key}`);
      input.type = "range";
      input.min = String(min);
      input.max = String(max);
      input.step = String(step);
      input.value = String(this.settings[key]);
      const out = el("output", "als-out");
      const show = () => {
        const v = Number(input.value);
        out.textContent = key === "topK" ? (v === 0 ? t("st.no_limit") : String(v)) : v.toFixed(2);
      };
      input.addEventListener("input", () => {
        this.settings[key] = Number(input.value);
        show();
        this.counts = null;
        this.drawn = null;
        this.update();
      });
      show();
      wrap.append(el("span", null, label), input, out);
      this.controls.append(wrap);
      return input;
    };
    this.inputs = {
      temperature: slider("temperature", t("set.temperature"), 0, 2, 0.05),
      topK: slider("topK", "Top-k", 0, TOP_N, 1),
      topP: slider("topP", "Top-p", 0, 1, 0.01),
    };
    const one = el("button", "als-btn als-draw", t("st.draw_one"));
    const many = el("button", "als-btn als-draw-many", t("st.draw_many"));
    one.type = many.type = "button";
    one.addEventListener("click", () => this.draw(1));
    many.addEventListener("click", () => this.draw(1000));
    const buttons = el("div", "als-buttons");
    buttons.append(one, many);
    this.controls.append(buttons);
  }

  use(i) {
    const o = this.options[i];
    if (!o) return;
    for (const other of this.options)
      if (other.button) other.button.setAttribute("aria-pressed", String(other === o));
    this.current = o;
    this.cands = candidates(o.data.top);
    this.inputs.topK.max = String(Math.max(1, this.cands.length));
    this.counts = null;
    this.drawn = null;
    this.update();
  }

  update() {
    if (!this.current) return;
    const { temperature, topK, topP } = this.settings;
    const data = this.current.data;
    const cands = this.cands;
    const r = applySampling(cands, temperature, topK, topP);
    this.result = r;
    this.root.dataset.kept = String(r.kept);
    const listedMass = cands.reduce((a, c) => a + (typeof c.p === "number" ? c.p : 0), 0);
    const exact = exactOverVocabulary(cands.length, data.vocabulary, temperature, topK);

    this.summary.replaceChildren();
    const line = el("div", "als-summary-line");
    const kept = el(
      "strong",
      "als-kept-count",
      r.greedy ? t("st.greedy_one") : t("st.kept_n", { n: r.kept }),
    );
    line.append(
      kept,
      t(typeof data.vocabulary === "number" ? "st.of_listed_vocab" : "st.of_listed", {
        n: cands.length,
        vocab: fmtInt(data.vocabulary),
        mass: fmtP(listedMass),
      }),
    );
    this.summary.append(line);
    const how = el("div", "als-k");
    if (r.greedy) how.textContent = t("st.greedy_how");
    else
      how.textContent = t("st.how", {
        temp: temperature.toFixed(2),
        k: r.k === cands.length && topK === 0 ? t("st.all_listed") : r.k,
        p: topP.toFixed(2),
        kept: r.kept,
      });
    this.summary.append(how);
    const scope = el("div", "als-scope" + (exact ? " als-exact" : " als-approx"));
    scope.textContent = exact
      ? t("st.exact")
      : t("st.approx", {
          k: topK === 0 ? t("st.no_limit") : topK,
          others:
            typeof data.vocabulary === "number"
              ? fmtInt(data.vocabulary - cands.length)
              : t("st.other"),
          n: cands.length,
        });
    this.summary.append(scope);
    if (this.drawn) {
      const c = cands[this.drawn.index];
      const d = el("div", "als-drawn");
      d.append(
        ...codeText(
          t("st.drew", {
            id: c.id,
            ps: fmtP(r.pKept[this.drawn.index]),
            p: fmtP(c.p),
          }),
          { piece: visible(c.piece) },
        ),
      );
      this.summary.append(d);
    }
    if (this.counts) {
      this.summary.append(el("div", "als-k", t("st.draws", { n: fmtInt(this.counts.total) })));
    }
    this.drawTable(r);
  }

  drawTable(r) {
    const cands = this.cands;
    const table = el("table", "als-table");
    const head = el("tr");
    for (const h of ["rank", "piece", "text", "id", "p1", "scaled", "cum", "kept", "p_kept", "draws"])
      head.append(el("th", null, t(`st.th_${h}`)));
    const thead = el("thead");
    thead.append(head);
    const tbody = el("tbody");
    cands.forEach((c, i) => {
      const tr = el("tr", "als-row" + (r.pKept[i] > 0 ? " als-kept" : " als-cut"));
      tr.dataset.id = String(c.id);
      tr.dataset.kept = String(r.pKept[i] > 0);
      tr.dataset.pKept = String(r.pKept[i]);
      if (this.drawn && this.drawn.index === i) tr.classList.add("als-chosen");
      const why = t(
        r.pKept[i] > 0 ? "st.yes" : r.greedy ? "st.no" : i >= r.k ? "st.no_topk" : "st.no_topp",
      );
      const bar = el("td", "als-barcell");
      const fill = el("span", "als-bar-fill");
      fill.style.width = `${Math.round(r.pKept[i] * 1000) / 10}%`;
      bar.append(fill, el("span", "als-bar-text", fmtP(r.pKept[i])));
      const count = this.counts ? this.counts.byIndex[i] || 0 : null;
      tr.append(
        el("td", null, String(i + 1)),
        el("td", "als-piececell", visible(c.piece)),
        el("td", "als-piececell", typeof c.text === "string" ? JSON.stringify(c.text) : "—"),
        el("td", null, String(c.id)),
        el("td", null, fmtP(c.p)),
        el("td", null, r.greedy ? "—" : fmtP(r.scaled[i])),
        el("td", null, r.greedy || r.cum[i] === null ? "—" : fmtP(r.cum[i])),
        el("td", "als-keptcell", why),
        bar,
        el(
          "td",
          null,
          count === null ? "" : `${count} (${(count / this.counts.total).toFixed(3)})`,
        ),
      );
      tbody.append(tr);
    });
    table.append(thead, tbody);
    this.table.replaceChildren(table);
  }

  draw(n) {
    if (!this.result) return;
    const byIndex = {};
    let last = 0;
    for (let j = 0; j < n; j++) {
      last = drawIndex(this.result.pKept, Math.random());
      byIndex[last] = (byIndex[last] || 0) + 1;
    }
    this.drawn = { index: last };
    this.counts = n > 1 ? { total: n, byIndex } : null;
    this.update();
  }

  // Live: ask the loaded model for the same conversation's distribution, and check a setting on the
  // server.
  startLive(status, loaded) {
    const spec = (loaded.find((r) => r.spec && r.spec.body) || {}).spec;
    const body = spec ? { ...spec.body } : { messages: [{ role: "user", content: "Hello" }] };
    const ask = el(
      "button",
      "als-btn als-ask",
      t("st.ask", { model: status.model || t("st.the_loaded_model") }),
    );
    const check = el("button", "als-btn als-check", t("st.check"));
    ask.type = check.type = "button";
    const out = el("div", "als-k");
    ask.addEventListener("click", async () => {
      ask.disabled = true;
      try {
        const data = await postJSON("next_token", null, {
          ...body,
          temperature: 1,
          top_p: 1,
          top_k: 0,
          top_n: TOP_N,
        });
        this.options.push({
          label: t("st.live_label", { model: status.model || t("badge.live") }),
          data,
          spec: { model: status.model, body },
        });
        const i = this.options.length - 1;
        const b = el("button", "als-btn als-choice", this.options[i].label);
        b.type = "button";
        b.addEventListener("click", () => this.use(i));
        this.options[i].button = b;
        this.chooser.append(b);
        this.use(i);
        out.textContent = t("st.now_shown");
      } catch (err) {
        out.textContent = refusalText(err);
      } finally {
        ask.disabled = false;
      }
    });
    check.addEventListener("click", async () => {
      if (!this.current) return;
      check.disabled = true;
      const { temperature, topK, topP } = this.settings;
      try {
        const b = this.current.spec && this.current.spec.body ? this.current.spec.body : body;
        const data = await postJSON("next_token", null, {
          ...b,
          temperature,
          top_p: topP,
          top_k: topK,
          top_n: TOP_N,
        });
        out.textContent = t(data.kept === this.result.kept ? "st.checked_same" : "st.checked_differ", {
          server: fmtInt(data.kept),
          kept: this.result.kept,
          n: this.cands.length,
        });
      } catch (err) {
        out.textContent = refusalText(err);
      } finally {
        check.disabled = false;
      }
    });
    this.askButton = ask;
    this.liveBox.append(ask, check, out);
  }
}

// Chapter 3: what config.json says about a model, as GET /api/status reports it (demo_server's
// model_specs). Each row: its key (its label is the string table's spec.<key>), how to read it
// from a status, and where it comes from (a file's field, or a spec.from_* sentence).

const SPEC_ROWS = [
  ["model", (s) => s.model, "spec.from_name"],
  ["family", (s) => s.family, "config.json model_type → model_families"],
  [
    "architecture",
    (s) => s.specs && s.specs.architecture,
    "config.json architectures",
  ],
  ["model_type", (s) => s.specs && s.specs.model_type, "config.json model_type"],
  ["layers", (s) => s.specs && s.specs.layers, "text_config.num_hidden_layers"],
  [
    "layer_type_counts",
    (s) =>
      s.specs &&
      s.specs.layer_type_counts &&
      Object.entries(s.specs.layer_type_counts)
        .map(([k, v]) => `${v} × ${k}`)
        .join(", "),
    "text_config.layer_types",
  ],
  ["hidden_size", (s) => s.specs && s.specs.hidden_size, "text_config.hidden_size"],
  ["heads", (s) => s.specs && s.specs.heads, "text_config.num_attention_heads"],
  [
    "kv_heads",
    (s) => s.specs && s.specs.kv_heads,
    "text_config.num_key_value_heads",
  ],
  ["head_dim", (s) => s.specs && s.specs.head_dim, "text_config.head_dim"],
  ["vocabulary", (s) => s.specs && s.specs.vocabulary, "text_config.vocab_size"],
  [
    "context_length",
    (s) => s.specs && s.specs.context_length,
    "text_config.max_position_embeddings",
  ],
  ["parameters", (s) => s.specs && s.specs.parameters, "spec.from_counted"],
  ["dtype", (s) => s.dtype, "spec.from_dtype"],
  ["device", (s) => s.device, "pick_device()"],
  [
    "temperature",
    (s) => s.defaults && s.defaults.temperature,
    "spec.from_generation",
  ],
  [
    "top_p",
    (s) => s.defaults && s.defaults.top_p,
    "spec.from_generation",
  ],
  [
    "top_k",
    (s) => s.defaults && s.defaults.top_k,
    "spec.from_generation",
  ],
];

class SpecsStage extends Stage {
  async start(found) {
    const columns = [];
    if (found.mode === "live") {
      try {
        columns.push({
          label: t("st.live_label", { model: found.status.model || t("st.the_loaded_model") }),
          status: await getJSON("status"),
        });
      } catch (err) {
        this.body.append(el("div", "als-error", refusalText(err)));
      }
    }
    const loaded = await this.loadRecordings();
    for (const r of loaded)
      if (r.ok)
        columns.push({ label: r.data.model || (r.spec && r.spec.model) || r.path, status: r.data });
    if (!columns.length) return;
    const table = el("table", "als-table als-specs");
    const scroller = el("div", "als-scroll");
    scroller.append(table);
    const head = el("tr");
    head.append(el("th", null, ""));
    for (const c of columns) head.append(el("th", null, c.label));
    head.append(el("th", null, t("spec.from")));
    const thead = el("thead");
    thead.append(head);
    const tbody = el("tbody");
    for (const [key, get, from] of SPEC_ROWS) {
      const tr = el("tr");
      tr.dataset.key = key;
      tr.append(el("th", null, t(`spec.${key}`)));
      for (const c of columns) {
        const v = get(c.status || {});
        tr.append(
          el(
            "td",
            null,
            v === undefined || v === null ? "—" : typeof v === "number" ? fmtInt(v) : String(v),
          ),
        );
      }
      tr.append(el("td", "als-from", from.startsWith("spec.") ? t(from) : from));
      tbody.append(tr);
    }
    table.append(thead, tbody);
    this.body.append(scroller);
  }
}

// Chapter 3: the model menu, GET /api/models: the checkpoints in models/ and the real models.
class ModelsStage extends Stage {
  async start(found) {
    let menu = null;
    if (found.mode === "live") {
      try {
        menu = await getJSON("models");
        this.status.textContent = t("st.models_live");
      } catch (err) {
        this.body.append(el("div", "als-error", refusalText(err)));
      }
    }
    if (!menu) {
      const loaded = await this.loadRecordings();
      const r = loaded.find((x) => x.ok);
      if (!r) return;
      menu = r.data;
    }
    const table = el("table", "als-table als-menu");
    const head = el("tr");
    for (const h of ["model", "kind", "family", "here", "disk", "parameters"])
      head.append(el("th", null, t(`menu.th_${h}`)));
    const thead = el("thead");
    thead.append(head);
    const tbody = el("tbody");
    for (const m of menu.models || []) {
      const tr = el("tr", m.current ? "als-chosen" : null);
      tr.append(
        el("td", null, m.id + (m.current ? t("menu.loaded_mark") : "")),
        el("td", null, m.kind),
        el("td", null, m.family),
        el("td", null, t(m.downloaded ? "st.yes" : "st.no")),
        el("td", null, m.bytes === null ? "—" : fmtBytes(m.bytes)),
        el("td", null, m.parameters === null ? "—" : fmtInt(m.parameters)),
      );
      tbody.append(tr);
    }
    table.append(thead, tbody);
    this.body.append(table);
  }
}

// Start every stage panel on the page; Material's instant navigation announces new pages through
// document$.

const KINDS = {
  tokens: TokensStage,
  sampling: SamplingStage,
  specs: SpecsStage,
  models: ModelsStage,
};

function initAll() {
  for (const s of Array.from(stages)) if (!document.body.contains(s.root)) s.destroy();
  for (const root of document.querySelectorAll(".agentloop-stage")) {
    if (root._alsStage) continue;
    const Kind = KINDS[root.dataset.stage];
    if (Kind) new Kind(root);
    else root.textContent = t("st.unknown", { name: JSON.stringify(root.dataset.stage || "") });
  }
}

// The pure parts the tests check against the Python they mirror.
export { recordingURL, tokenBytes };
export const rules = { candidates, applySampling, drawIndex, exactOverVocabulary };

onEveryPage(initAll);
// A language switch draws every stage panel again, from its recordings or the server.
onLang(() => {
  for (const s of Array.from(stages)) {
    s.destroy();
    s.root._alsStage = null;
  }
  initAll();
});
