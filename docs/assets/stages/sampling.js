/* stages/sampling.js: chapter 9's stage, the sampling rules on a next-token distribution. Sliders
   for temperature, top-k and top-p; a table of the listed tokens with what the rules do to each
   (scaled, cumulative, kept or cut and why, the probability among the kept); one draw or a
   thousand, from the kept tokens only. The rules are sampling-rules.js's copy of sample()'s (why a
   copy: its header). Recorded distributions replay; live, the loaded model gives its own for the
   same conversation and the server checks the kept count. A language switch redraws the words in
   place (stage.js inLang): the sliders, the distributions (a live one asked for included), the one
   chosen and the draws are the stage's own state, never rebuilt, so all stay as the reader left
   them and nothing is asked again. Leaves out: the other stages, and the random number
   generator's seed (a draw here is the browser's Math.random). */

import { postJSON } from "../api.js";
import { codeText, el, fmtInt, fmtP } from "../dom.js";
import { t } from "../i18n.js";
import { applySampling, candidates, drawIndex, exactOverVocabulary } from "./sampling-rules.js";
import { refusalText, Stage, visible } from "./stage.js";

const TOP_N = 50; // the most /api/next-token lists
const COLUMNS = ["rank", "piece", "text", "id", "p1", "scaled", "cum", "kept", "p_kept", "draws"];

// A data-* number of the panel's root, or the fallback.
function num(v, fallback) {
  return v !== undefined && v !== "" && Number.isFinite(Number(v)) ? Number(v) : fallback;
}

// A button; its words are drawn by the stage (inLang), in the reader's language.
function button(cls) {
  const b = el("button", `als-btn ${cls}`);
  b.type = "button";
  return b;
}

// Why a token is kept or cut, in the table's kept column.
function keptWhy(r, i) {
  if (r.pKept[i] > 0) return t("st.yes");
  if (r.greedy) return t("st.no");
  return t(i >= r.k ? "st.no_topk" : "st.no_topp");
}

export class SamplingStage extends Stage {
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
      this.sayLive();
      this.startLive(found.status || {}, loaded);
    }
    if (this.options.length > 1) this.options.forEach((o, i) => this.offer(o, i));
    this.inLang(() => this.update()); // the summary and table, from the settings and draws held
    if (this.options.length) this.use(0);
    else if (this.askButton) this.askButton.click(); // live, with nothing recorded: ask the server at once
  }

  // A button that shows option i's distribution.
  offer(o, i) {
    const b = button("als-choice");
    b.addEventListener("click", () => this.use(i));
    o.button = b;
    this.chooser.append(b);
    this.inLang(() => {
      b.textContent = o.live ? t("st.live_label", { model: o.model || t("badge.live") }) : o.label;
    });
  }

  buildControls() {
    const d = this.root.dataset;
    this.settings = {
      temperature: num(d.temperature, 1),
      topK: num(d.topK, 0),
      topP: num(d.topP, 1),
    };
    this.inputs = {
      temperature: this.slider("temperature", () => t("set.temperature"), 0, 2, 0.05),
      topK: this.slider("topK", () => "Top-k", 0, TOP_N, 1),
      topP: this.slider("topP", () => "Top-p", 0, 1, 0.01),
    };
    const one = button("als-draw");
    const many = button("als-draw-many");
    one.addEventListener("click", () => this.draw(1));
    many.addEventListener("click", () => this.draw(1000));
    const buttons = el("div", "als-buttons");
    buttons.append(one, many);
    this.controls.append(buttons);
    this.inLang(() => {
      one.textContent = t("st.draw_one");
      many.textContent = t("st.draw_many");
    });
  }

  // A setting's slider, with its value beside it; moving it draws the table again. `label()` is its
  // name in the reader's language.
  slider(key, label, min, max, step) {
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
    const name = el("span");
    this.inLang(() => {
      name.textContent = label();
      show();
    });
    wrap.append(name, input, out);
    this.controls.append(wrap);
    return input;
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
    const r = applySampling(this.cands, temperature, topK, topP);
    this.result = r;
    this.root.dataset.kept = String(r.kept);
    this.summary.replaceChildren(...this.summaryLines(r));
    this.drawTable(r);
  }

  // What the rules kept, how, whether that is exact over the whole vocabulary, and the draws.
  summaryLines(r) {
    const { temperature, topK, topP } = this.settings;
    const data = this.current.data;
    const cands = this.cands;
    const listedMass = cands.reduce((a, c) => a + (typeof c.p === "number" ? c.p : 0), 0);
    const exact = exactOverVocabulary(cands.length, data.vocabulary, temperature, topK);
    const lines = [];
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
    lines.push(line);
    const how = el("div", "als-k");
    if (r.greedy) how.textContent = t("st.greedy_how");
    else
      how.textContent = t("st.how", {
        temp: temperature.toFixed(2),
        k: r.k === cands.length && topK === 0 ? t("st.all_listed") : r.k,
        p: topP.toFixed(2),
        kept: r.kept,
      });
    lines.push(how);
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
    lines.push(scope);
    if (this.drawn) lines.push(this.drawnLine(r));
    if (this.counts) lines.push(el("div", "als-k", t("st.draws", { n: fmtInt(this.counts.total) })));
    return lines;
  }

  drawnLine(r) {
    const c = this.cands[this.drawn.index];
    const d = el("div", "als-drawn");
    d.append(
      ...codeText(t("st.drew", { id: c.id, ps: fmtP(r.pKept[this.drawn.index]), p: fmtP(c.p) }), {
        piece: visible(c.piece),
      }),
    );
    return d;
  }

  drawTable(r) {
    const table = el("table", "als-table");
    const head = el("tr");
    for (const h of COLUMNS) head.append(el("th", null, t(`st.th_${h}`)));
    const thead = el("thead");
    thead.append(head);
    const tbody = el("tbody");
    this.cands.forEach((c, i) => tbody.append(this.row(r, c, i)));
    table.append(thead, tbody);
    this.table.replaceChildren(table);
  }

  // One listed token's row.
  row(r, c, i) {
    const tr = el("tr", "als-row" + (r.pKept[i] > 0 ? " als-kept" : " als-cut"));
    tr.dataset.id = String(c.id);
    tr.dataset.kept = String(r.pKept[i] > 0);
    tr.dataset.pKept = String(r.pKept[i]);
    if (this.drawn && this.drawn.index === i) tr.classList.add("als-chosen");
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
      el("td", "als-keptcell", keptWhy(r, i)),
      bar,
      el("td", null, count === null ? "" : `${count} (${(count / this.counts.total).toFixed(3)})`),
    );
    return tr;
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
  // server. What the last ask or check said is kept (liveSaid) and said again after a switch.
  startLive(status, loaded) {
    const spec = (loaded.find((r) => r.spec && r.spec.body) || {}).spec;
    const body = spec ? { ...spec.body } : { messages: [{ role: "user", content: "Hello" }] };
    const ask = button("als-ask");
    const check = button("als-check");
    const out = el("div", "als-k");
    ask.addEventListener("click", () => this.askServer(ask, status, body));
    check.addEventListener("click", () => this.checkOnServer(check, body));
    this.askButton = ask;
    this.liveSaid = null;
    this.liveBox.append(ask, check, out);
    this.inLang(() => {
      ask.textContent = t("st.ask", { model: status.model || t("st.the_loaded_model") });
      check.textContent = t("st.check");
      out.textContent = this.liveSaid ? this.liveSaid() : "";
    });
    this.liveOut = out;
  }

  // The line under the live buttons: words() in the reader's language, now and after a switch.
  liveLine(words) {
    this.liveSaid = words;
    this.liveOut.textContent = words();
  }

  // The loaded model's distribution for `body`, at T = 1 with nothing cut, as one more option.
  async askServer(ask, status, body) {
    ask.disabled = true;
    try {
      const data = await postJSON("next_token", null, {
        ...body,
        temperature: 1,
        top_p: 1,
        top_k: 0,
        top_n: TOP_N,
      });
      const model = status.model;
      this.options.push({ live: true, model, data, spec: { model, body } });
      const i = this.options.length - 1;
      this.offer(this.options[i], i);
      this.use(i);
      this.liveLine(() => t("st.now_shown"));
    } catch (err) {
      this.liveLine(() => refusalText(err));
    } finally {
      ask.disabled = false;
    }
  }

  // The server's kept count under the sliders' settings, beside this copy's.
  async checkOnServer(check, body) {
    if (!this.current) return;
    check.disabled = true;
    const { temperature, topK, topP } = this.settings;
    const ours = { kept: this.result.kept, n: this.cands.length };
    try {
      const b = this.current.spec && this.current.spec.body ? this.current.spec.body : body;
      const data = await postJSON("next_token", null, {
        ...b,
        temperature,
        top_p: topP,
        top_k: topK,
        top_n: TOP_N,
      });
      const same = data.kept === ours.kept;
      this.liveLine(() =>
        t(same ? "st.checked_same" : "st.checked_differ", { server: fmtInt(data.kept), ...ours }),
      );
    } catch (err) {
      this.liveLine(() => refusalText(err));
    } finally {
      check.disabled = false;
    }
  }
}
