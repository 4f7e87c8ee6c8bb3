/* stages/stage.js: what the four stage panels share. A Stage is a panel's top line, note and body;
   it probes for the demo server, says in its note where its data comes from (the loaded model, or
   recordings), reads its recordings (each <name>.json beside the <name>.spec.json request it was
   recorded from), and names a missing one in its status line. Also here: how a piece's whitespace
   is made visible, and what a refused request says. Leaves out: each stage's own drawing (tokens.js,
   sampling.js, specs.js, models.js) and which stage a page asks for (stages.js). */

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
}
