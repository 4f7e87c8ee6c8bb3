/* panel/model-menu.js: a live panel's model menu and a load's progress. One line, "Model: <model>
   (<family>)", opens to what runs the model (the ways this machine offers, status.ways: transformers
   here, vLLM in Docker, vLLM from .venv-vllm; none to pick with VLLM_URL), what Load will start on
   the chosen way, the models it can run (GET models), the chosen entry's description, and Load; a
   load, started here or in another tab, shows as a progress bar and then its end. It also words the panel's status line from the server's
   status (which model answers, or which one is loading). One model serves every tab: the status and
   the load come from status.js, shared by the page's panels. Leaves out: the form (form.js), and
   asking the server (status.js does, for every panel). */

import { url } from "../api.js";
import { asText, el, fmtBytes, fmtCount, kv } from "../dom.js";
import { lang, pick, t, tableError } from "../i18n.js";
import { serverStatus } from "../status.js";

// An older server's status has no ways: its two backends, without a sentence.
const LEGACY_WAYS = [{ id: "transformers", offered: true }, { id: "vllm", offered: true }];

function wayLabel(id) {
  return id === "vllm" ? t("menu.backend_vllm") : t(`menu.way_${id.replace("-", "_")}`);
}

// The ways to offer: those this machine can run; none with VLLM_URL (the server there is the way).
function offeredWays(s) {
  const ways = Array.isArray(s.ways) ? s.ways : LEGACY_WAYS;
  return ways.filter((w) => w && typeof w.id === "string" && w.offered);
}

// "0.8B, not downloaded", "0.8B, 1.75 GB", "3.7M parameters, 7.48 MB".
function sizeText(m) {
  const parts = [];
  if (m.size) parts.push(String(m.size));
  else if (typeof m.parameters === "number")
    parts.push(t("model.parameters", { n: fmtCount(m.parameters) }));
  if (m.downloaded === false) parts.push(t("model.not_downloaded"));
  else if (typeof m.bytes === "number") parts.push(fmtBytes(m.bytes));
  return parts.join(", ");
}

// With no way to pick (VLLM_URL), each entry names the way it loads on: the server may serve a
// name the book also has (agent-gemma4 served by vLLM, and the book's own on transformers).
function optionLabel(m, noPicker) {
  const kind = m.kind ? t(`kind.${m.kind}`) : null;
  const facts = [m.family, kind, sizeText(m)].filter(Boolean).join(t("list.sep"));
  const way = noPicker ? ` — ${wayLabel(ownWay(m))}` : "";
  return `${m.id} (${facts})${way}${m.default ? t("model.default_mark") : ""}`;
}

// The way an entry loads on when there is none to pick: its own (a served model, VLLM_URL's).
function ownWay(m) {
  return Array.isArray(m.backends) && m.backends.length ? m.backends[0] : m.kind === "served" ? "vllm-url" : "transformers";
}

// An entry's option value, unique in the select: a served model whose name the book's own models
// also have (`twice`: the ids listed twice) apart from the book's; any other by its id.
function entryKey(m, twice) {
  return m.kind === "served" && twice.has(m.id) ? `vllm-url:${m.id}` : m.id;
}

function listedTwice(entries) {
  const seen = new Set();
  const twice = new Set();
  for (const m of entries) (seen.has(m.id) ? twice : seen).add(m.id);
  return twice;
}

function option(value, label) {
  const o = el("option", null, label);
  o.value = value;
  return o;
}

// What a load is doing, from its latest event; `short` for the menu's summary line.
function loadText(load, short) {
  const ev = load.event || {};
  const model = load.model || t("load.the_model");
  if (ev.type === "download") {
    const pct =
      ev.bytes_total > 0 ? Math.floor((100 * (ev.bytes_done || 0)) / ev.bytes_total) : null;
    if (short) return t("load.downloading_short", { model, pct: pct === null ? "" : pct + "%" }).trim();
    const bytes =
      ev.bytes_total > 0
        ? t("load.bytes", { done: fmtBytes(ev.bytes_done || 0), total: fmtBytes(ev.bytes_total) })
        : t("load.starting");
    const files =
      ev.files_total > 0 ? t("load.files", { done: ev.files_done || 0, total: ev.files_total }) : "";
    return t("load.downloading", { model, bytes, files });
  }
  // A vLLM server starting says what it does (compose up, waiting for it to answer).
  if (ev.type === "loading" && ev.what && typeof ev.what === "object")
    return short ? t("load.starting_short", { model }) : pick(ev.what);
  if (ev.type === "loading")
    return short ? t("load.loading_short", { model }) : t("load.into_memory", { model });
  if (ev.type === "family") {
    return short
      ? t("load.loading_short", { model })
      : t("load.family", { model, family: ev.family });
  }
  return short ? t("load.loading_short", { model }) : t("load.loading", { model });
}

// The panel's status line for a status: the load being followed (the stream's news is the
// freshest), a load the status reports, the model that answers and where, or that none does.
function statusLine(s) {
  const who = modelName(s);
  const following =
    serverStatus.load && !serverStatus.load.done ? loadText(serverStatus.load, true) : null;
  if (following) return t("live.following", { what: following });
  if (s.loading) return t("live.loading", { model: s.loading_model || t("live.a_model") });
  if (who && s.backend === "vllm") return t(s.where ? "live.vllm_at" : "live.vllm", { who, where: s.where });
  if (who) return t("live.here", { who });
  if (s.ok === false || s.model === null) return t("live.no_model");
  return t("live.answers");
}

// The way the current model runs (an older server's status says only its backend).
function currentWay(s) {
  return s.way || s.backend || "transformers";
}

// "model (family)": the family as the server says it (status.family), never guessed from the name.
function modelName(s) {
  return [s.model, s.family ? `(${s.family})` : null].filter(Boolean).join(" ");
}

// A refusal or a failure in the model menu, in the reader's language (the server sends both).
function showMessage(box, title, message) {
  const m = message && typeof message === "object" ? message : { en: asText(message) };
  const alert = el("div", "al-model-error");
  alert.setAttribute("role", "alert");
  alert.append(el("div", "al-model-error-title", title));
  const text = el("div", "al-error-text", pick(m));
  text.lang = lang();
  alert.append(text);
  box.replaceChildren(alert);
}

// Uses of the panel: root (its al-loading class), menu (whether this is still its menu: a language
// switch draws another), destroyed.
export class ModelMenu {
  constructor(panel) {
    this.panel = panel;
    this.entries = [];
    this.chosen = null; // kept across refreshes of the list until the reader picks again
    this.chosenBackend = null;
    this.build();
  }

  // Compact: a summary naming the model, opening to the select, the entry's description and Load.
  build() {
    this.details = el("details", "al-model");
    const summary = el("summary", "al-model-summary");
    this.name = el("span", "al-model-name", "…");
    summary.append(t("menu.summary"), this.name);
    this.select = el("select", "al-model-select");
    this.select.setAttribute("aria-label", t("menu.model"));
    const field = el("label", "al-field al-model-field");
    field.append(el("span", null, t("menu.model_every_tab")), this.select);
    // What runs the model (chapter 11): the ways this machine offers, filled from the status.
    this.backend = el("select", "al-backend-select");
    this.backend.setAttribute("aria-label", t("menu.backend"));
    const backendField = el("label", "al-field al-backend-field");
    backendField.append(el("span", null, t("menu.backend")), this.backend);
    this.backendField = backendField;
    // What Load will start on the chosen way, said before it is pressed.
    this.says = el("div", "al-note al-backend-says");
    this.load = el("button", "al-btn al-load", t("menu.load"));
    this.load.type = "button";
    const row = el("div", "al-model-row");
    row.append(backendField, field, this.load);
    this.desc = el("div", "al-model-desc");
    const body = el("div", "al-model-body");
    body.append(row, this.says, this.desc, this.buildProgress(), this.buildMessage());
    this.details.append(summary, body);
    // What this panel runs live, where that is not what its recording ran (showRunsOn).
    this.runsOn = el("div", "al-note al-runs-on");
    this.details.addEventListener("toggle", () => {
      if (this.details.open) this.fill(false);
    });
    this.select.addEventListener("change", () => {
      this.chosen = this.select.value;
      this.describe();
      this.updateLoadButton();
    });
    this.backend.addEventListener("change", () => {
      this.chosenBackend = this.backend.value;
      this.fill(false); // the models this backend can run
    });
    this.load.addEventListener("click", () => this.loadChosen());
  }

  buildProgress() {
    this.progress = el("div", "al-model-progress");
    this.progress.hidden = true;
    this.bar = el("progress", "al-model-bar");
    this.bar.max = 1;
    this.progressText = el("span", "al-model-progress-text");
    this.progress.append(this.bar, this.progressText);
    return this.progress;
  }

  buildMessage() {
    this.msg = el("div", "al-model-msg");
    this.msg.setAttribute("role", "status");
    this.msg.setAttribute("aria-live", "polite");
    return this.msg;
  }

  // Whether an answer that comes back now is still this menu's to draw.
  gone() {
    return this.panel.destroyed || this.panel.menu !== this;
  }

  // The select from GET models: the entries the chosen backend can run, the current model
  // selected (or the reader's own choice, while it is listed).
  async fill(force) {
    let answer;
    try {
      answer = await serverStatus.fetchMenu(force);
    } catch (err) {
      if (!this.gone()) this.unavailable(err);
      return;
    }
    if (this.gone()) return;
    const s = serverStatus.status || {};
    const kind = this.fillWays(s);
    // An entry without `backends` (an older server) runs on transformers only; with no way to pick
    // (VLLM_URL) every entry is listed, each loaded on its own.
    const backends = (m) => (Array.isArray(m.backends) ? m.backends : ["transformers"]);
    const runs = (m) => kind === null || backends(m).includes(kind);
    this.entries = answer.models.filter((m) => m && typeof m.id === "string" && runs(m));
    this.twice = listedTwice(this.entries);
    const model = kind === null || currentWay(s) === kind ? s.model || answer.current || null : null;
    // With none to pick, the current entry is the one on the way the model runs now.
    const here = model && this.entries.find((m) => m.id === model && (kind !== null || ownWay(m) === currentWay(s)));
    const current = here ? entryKey(here, this.twice) : model;
    // A served model the book cannot run is listed, greyed, and says why when picked.
    const options = this.entries.map((m) => {
      const label = optionLabel(m, kind === null);
      const o = option(entryKey(m, this.twice), m.supported === false ? t("menu.unsupported", { label }) : label);
      o.disabled = m.supported === false;
      return o;
    });
    if (current && !here) options.unshift(option(current, t("menu.outside", { model: current })));
    this.select.replaceChildren(...options);
    this.select.disabled = !options.length;
    const want =
      this.chosen && options.some((o) => o.value === this.chosen) ? this.chosen : current;
    if (want) this.select.value = want;
    this.notice = answer.notice && typeof answer.notice === "object" ? answer.notice : null;
    this.describe();
    this.updateLoadButton();
  }

  // The ways to pick, the chosen one selected; the field hidden when there is none to pick. Returns
  // the chosen way, or null with none to pick.
  fillWays(s) {
    const ways = offeredWays(s);
    this.backendField.hidden = ways.length === 0;
    if (!ways.length) {
      this.says.textContent = "";
      return null;
    }
    const ids = ways.map((w) => w.id);
    if (this.backend.options.length !== ids.length || ids.some((id, i) => this.backend.options[i].value !== id))
      this.backend.replaceChildren(...ways.map((w) => option(w.id, wayLabel(w.id))));
    const want = [this.chosenBackend, currentWay(s)].find((id) => ids.includes(id)) || ids[0];
    this.backend.value = want;
    const says = ways.find((w) => w.id === want).says;
    this.says.textContent = says && typeof says === "object" ? pick(says) : "";
    this.says.lang = lang();
    return want;
  }

  unavailable(err) {
    this.entries = [];
    this.select.replaceChildren(el("option", null, t("menu.unavailable")));
    this.select.disabled = true;
    this.desc.replaceChildren(
      // The error's own full stop goes: the sentence ends with the table's.
      el("div", "al-model-desc-text", t("menu.no_answer", { path: url("models"), err: String(err.message || err).replace(/[.。]+$/, "") })),
    );
    this.updateLoadButton();
  }

  // The selected entry's facts and description (in the reader's language).
  describe() {
    const m = this.chosenEntry();
    this.desc.replaceChildren();
    // The server at VLLM_URL does not answer: said once, above what the menu still offers.
    if (this.notice) {
      const note = el("div", "al-note al-model-notice", pick(this.notice));
      note.lang = lang();
      this.desc.append(note);
    }
    if (!m) return;
    const d = m.description && typeof m.description === "object" ? m.description : {};
    const facts = el("div", "al-model-facts");
    kv(facts, t("k.family"), m.family);
    kv(facts, t("k.kind"), m.kind ? t(`kind.${m.kind}`) : null);
    kv(facts, t("k.size"), sizeText(m));
    if (m.default) facts.append(el("span", "al-badge", t("menu.default")));
    if (m.current) facts.append(el("span", "al-badge al-mode", t("menu.loaded")));
    this.desc.append(facts);
    if (d.en || d.zh) {
      const text = el("div", "al-model-desc-text", pick(d));
      text.lang = lang();
      this.desc.append(text);
    }
    if (m.supported === false && m.why && typeof m.why === "object") {
      const why = el("div", "al-note al-model-why", pick(m.why));
      why.lang = lang();
      this.desc.append(why);
    }
  }

  // Load is offered for another model (or another backend), while nothing loads.
  updateLoadButton() {
    const s = serverStatus.status || {};
    const chosen = this.select.value;
    const entry = this.chosenEntry();
    const loading = !!s.loading || !!(serverStatus.load && !serverStatus.load.done);
    const way = this.backendField.hidden ? (entry ? ownWay(entry) : currentWay(s)) : this.backend.value;
    this.load.disabled =
      this.select.disabled ||
      !chosen ||
      loading ||
      (entry && entry.supported === false) ||
      ((entry ? entry.id : chosen) === s.model && way === currentWay(s));
    this.load.textContent = t(loading ? "menu.loading" : "menu.load");
  }

  // On the chosen way; with none to pick, on the entry's own (a served model on VLLM_URL's server).
  loadChosen() {
    const m = this.chosenEntry();
    const model = m ? m.id : this.select.value;
    const way = this.backendField.hidden ? (m ? ownWay(m) : "transformers") : this.backend.value;
    if (model) this.loadModel(model, way);
  }

  // The menu entry the select shows (its option's value is entryKey's).
  chosenEntry() {
    return this.entries.find((e) => entryKey(e, this.twice || new Set()) === this.select.value);
  }

  // Load `model` (the menu's Load, the form's "try this", or its MTP switch on a vLLM server the
  // page started, `mtp`); a refusal is said under the menu.
  async loadModel(model, backend, mtp) {
    this.msg.replaceChildren();
    this.load.disabled = true;
    try {
      await serverStatus.loadModel(model, backend, mtp);
    } catch (err) {
      if (this.gone()) return;
      const ev = err.event || tableError("menu.load_failed", { model, err });
      const title = t(err.status === 409 ? "menu.not_now" : "menu.not_loaded", { model });
      showMessage(this.msg, title, ev.message);
      this.updateLoadButton();
    }
  }

  // The server's status, on first sight and after each ask: the summary's name and, when no model
  // is there, why. Returns the panel's status line.
  showStatus(s) {
    const following =
      serverStatus.load && !serverStatus.load.done ? loadText(serverStatus.load, true) : null;
    this.name.textContent =
      following ||
      (s.loading
        ? t("load.loading_short", { model: s.loading_model || "…" })
        : modelName(s) || t("menu.none"));
    if (s.error && !s.model && !s.loading) showMessage(this.msg, t("menu.no_model"), s.error);
    return statusLine(s);
  }

  // Under the menu: the model and backend a live run here uses, when they are not those of the
  // recording beside it (chapter 11's vLLM panel on a transformers server, a "Gemma 4" tab while
  // Qwen is loaded); nothing when they match, or before the recording is read.
  showRunsOn(s) {
    const rec = this.panel.recordedRun;
    const backend = (s && s.backend) || "transformers";
    const recordedBackend = (rec && rec.backend) || this.panel.root.dataset.backend || "transformers";
    const differs = rec && s && s.model && (rec.model !== s.model || recordedBackend !== backend);
    const text = differs
      ? t("runs_on.note", {
          model: modelName(s),
          backend: t(`menu.backend_${backend}`),
          recorded_model: modelName(rec),
          recorded_backend: t(`menu.backend_${recordedBackend}`),
        })
      : "";
    if (this.runsOn.textContent !== text) this.runsOn.textContent = text;
  }

  // Another tab switched the model or what runs it: every tab follows, and marks the new current
  // model in the select.
  followSwitch() {
    this.chosenBackend = null;
    this.chosen = null;
    this.fill(false);
  }

  // After a status: the progress bar goes once no load is under way; Load as it now stands.
  settle(s) {
    if (!s.loading && serverStatus.load === null) this.hideProgress();
    this.updateLoadButton();
  }

  // The load stream's latest event: a progress bar from download's bytes, "loading…", then ready or
  // error. Returns the load in short while it goes (for the panel's status line), null once it
  // has ended.
  showLoad(load) {
    const ev = load.event || {};
    if (load.done) {
      this.hideProgress();
      this.showEnd(load, ev);
      this.updateLoadButton();
      return null;
    }
    this.progress.hidden = false;
    this.msg.replaceChildren();
    this.fillBar(ev);
    this.progressText.textContent = loadText(load, false);
    const short = loadText(load, true);
    this.name.textContent = short;
    this.panel.root.classList.add("al-loading");
    this.updateLoadButton();
    return short;
  }

  showEnd(load, ev) {
    if (ev.type === "ready") {
      const key = typeof ev.ms === "number" ? "menu.ready_in" : "menu.ready";
      this.msg.replaceChildren(
        el("div", "al-model-ok", t(key, { model: load.model, s: (ev.ms / 1000).toFixed(1) })),
      );
    } else {
      const model = load.model || t("load.the_model");
      showMessage(this.msg, t("menu.load_error", { model }), ev.message);
    }
  }

  // Download's bytes (or files) done; any other phase is indeterminate.
  fillBar(ev) {
    if (ev.type === "download" && ev.bytes_total > 0) {
      this.bar.max = ev.bytes_total;
      this.bar.value = Math.min(ev.bytes_done || 0, ev.bytes_total);
    } else if (ev.type === "download" && ev.files_total > 0) {
      this.bar.max = ev.files_total;
      this.bar.value = Math.min(ev.files_done || 0, ev.files_total);
    } else {
      this.bar.removeAttribute("value"); // indeterminate
    }
  }

  hideProgress() {
    this.progress.hidden = true;
    this.panel.root.classList.remove("al-loading");
  }
}
