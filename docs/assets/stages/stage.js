/* stages/stage.js: what the four stage panels share. A Stage is a panel's top line, note and body;
   it probes for the demo server, says in its note where its data comes from (the loaded model, or
   recordings), reads its recordings (each <name>.json beside the <name>.spec.json request it was
   recorded from), and names a missing one in its status line. Also here: how a piece's whitespace
   is made visible, and what a refused request says.
   A language switch redraws a stage's words in place, as the loop panels do (panel.js relabel):
   each part that shows words registers how it draws them from what the stage holds (inLang), and
   the status line keeps how it says what it says (say), so a switch asks the server and the
   recordings nothing again and leaves the reader's text, choices, sliders and draws as they were;
   a request still pending draws its answer once, in the language of the moment it comes.
   Leaves out: each stage's own drawing (tokens.js, sampling.js, specs.js, models.js) and which
   stage a page asks for (stages.js). */

import { MAKE_LIVE_URL, pageToken, probeServer } from "../api.js";
import { codeText, el, markdownDir, statusBar } from "../dom.js";
import { pick, t } from "../i18n.js";

// Whitespace a piece or a text may hold, made visible.
export function visible(s) {
  return String(s)
    .replace(/\\/g, "\\\\")
    .replace(/\n/g, "\\n")
    .replace(/\r/g, "\\r")
    .replace(/\t/g, "\\t")
    .replace(/ /g, "␣");
}

// A recording's URL: relative to the chapter's Markdown file, as data-replay is written.
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
export function refusalText(err) {
  const m = err && err.event && err.event.message;
  return m && m.en ? pick(m) : String((err && err.message) || err);
}

// The page's stage panels.
export const stages = new Set();

// A stage panel: a status bar, a note, and a body the stage fills in start(found).
export class Stage {
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
    this.drawers = []; // each draws some of the panel's words: again after a language switch
    this.saying = null; // what the status line says, in the reader's language (say)
    stages.add(this);
    probeServer().then((found) => {
      if (this.destroyed) return;
      this.found = found;
      if (found.mode === "live") this.badge.classList.add("als-live");
      this.inLang(() => {
        this.badge.textContent = t(found.mode === "live" ? "badge.live" : "badge.replay");
        this.explain(found);
      });
      Promise.resolve(this.start(found)).catch((err) => this.fail(() => t("st.failed", { err })));
    });
  }

  destroy() {
    this.destroyed = true;
    stages.delete(this);
  }

  // draw() writes some of the panel's words from what the stage holds: now, and again after each
  // language switch. It reads the stage's state when it runs, so a later answer is drawn too.
  inLang(draw) {
    this.drawers.push(draw);
    draw();
  }

  // The status line: words() gives it in the reader's language, now and after a switch.
  say(words) {
    this.saying = words;
    this.status.textContent = words();
  }

  // Live: the status line says so before what it said (the recordings beside the live part).
  sayLive() {
    const what = this.saying;
    if (what) this.say(() => t("live.following", { what: what() }));
  }

  // The reader switched language: the top line (its switch too) and every part's words again, in
  // place; nothing is asked or fetched again, and what the reader did stays.
  relabel() {
    if (this.destroyed) return;
    const { badge } = this;
    const bar = statusBar("als", "als-badge");
    this.bar.replaceWith(bar.bar);
    ({ bar: this.bar, badge: this.badge, status: this.status } = bar);
    this.badge.className = badge.className;
    this.badge.textContent = badge.textContent; // "…" until the probe answers
    if (this.saying) this.status.textContent = this.saying();
    for (const draw of this.drawers) draw();
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

  // The status line says what went wrong (words(), as say takes it), and the panel is marked.
  fail(words) {
    this.say(words);
    this.root.classList.add("als-missing");
  }

  // A refused request's words (refusalText), in a box of the panel's body, in the reader's
  // language after a switch too (the server sends both).
  refusal(err) {
    const box = el("div", "als-error");
    this.inLang(() => {
      box.textContent = refusalText(err);
    });
    return box;
  }

  // Every recording of data-replay with the spec it was recorded from: [{path, data, spec}].
  // Missing ones are named in the status line ("Recording missing: …") and left out.
  async loadRecordings() {
    if (this.found && this.found.mode === "file") {
      this.fail(() => t("st.file"));
      return [];
    }
    if (!this.paths.length) {
      this.fail(() => t("st.none"));
      return [];
    }
    this.say(() => t("st.loading"));
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
      const which = () => missing.map((r) => `${r.path} (${r.why})`).join(t("list.sep"));
      this.fail(() => t("st.missing", { which: which() }));
    } else {
      const n = loaded.length;
      this.say(() => t(n === 1 ? "st.loaded_one" : "st.loaded", { n }));
    }
    return loaded;
  }
}
