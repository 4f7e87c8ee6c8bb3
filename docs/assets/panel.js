/* panel.js: the loop panels. Each <div class="agentloop-panel"> becomes a panel that replays a
   recorded run or, on a page the demo server served, runs the loop live: its question form, its
   run's event stream, the model menu and a load's progress. It draws through render.js, asks the
   server through api.js, and shares the server's status with the other panels through status.js.
   Leaves out: the stage panels (stages.js).

   A chapter embeds:  <div class="agentloop-panel" data-replay="runs/chapter1.jsonl" data-mode="loop"></div>
   Attributes (all optional but data-replay):
     data-replay          the recording (JSON Lines, one event per line); the book's hook makes it page-relative
     data-mode            "loop": the whole run (the only mode so far; stage panels may add others)
     data-show            comma-separated event types to draw, e.g. "token" or "context,prefill"; default all
     data-question        the question the live form starts with
     data-autoplay        "true": start the replay at once
     data-source-pattern  URL of a source line, with {path} and {line}; the hook adds it
     data-attach          "true": the live form takes files for the question (attach.js, chapter 7)
   The API the live mode expects from the demo server is in docs/assets/README-panel.md. */

import {
  MAKE_LIVE_URL,
  openEvents,
  pageToken,
  parseEvent,
  postJSON,
  probeServer,
  url,
} from "./api.js";
import { asText, codeText, el, fmtBytes, fmtCount, kv, onEveryPage, statusBar } from "./dom.js";
import { attachControl } from "./attach.js";
import { harnessControls } from "./harness.js";
import { lang, onLang, pick, t, tableError } from "./i18n.js";
import { askedTurn, hidePopover, Renderer, wireTokens } from "./render.js";
import { rememberedSettings, rememberSettings, toolsChecklist } from "./settings.js";
import { serverStatus } from "./status.js";

// Settings the live form sends, as the harness names them. Empty number fields are left out, so the
// server uses its own defaults (the family's recommended sampling) rather than numbers made up
// here.
// Each label is the string table's "set.<key>".
const SETTINGS = [
  { key: "max_steps", type: "int" },
  { key: "max_new_tokens", type: "int" },
  { key: "temperature", type: "float", step: "0.05" },
  { key: "top_p", type: "float", step: "0.05" },
  { key: "top_k", type: "int" },
  { key: "thinking", type: "bool", fallback: false },
  { key: "use_tools", type: "bool", fallback: true },
  { key: "auto_approve", type: "bool", fallback: false },
  // Offered only where the status says the model has a drafter (status.mtp).
  { key: "mtp", type: "bool", fallback: false, needs: "mtp" },
];

// The kinds of question examples.json may list (the training data's Task kinds), and their names
// in the string table; another kind is shown as it is written.
const KINDS = {
  arithmetic: "ex.arithmetic",
  letters: "ex.letters",
  length: "ex.length",
  units: "ex.units",
  sorting: "ex.sorting",
  dates: "ex.dates",
  file_lines: "ex.file_lines",
  greeting: "ex.greeting",
  definition: "ex.definition",
};

// Replay pacing at 1x for recordings without t_ms (delayBefore), and the longest wait drawn.
const PACE = { token: 20, decision: 600, max: 1500 };


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

function optionLabel(m) {
  const kind = m.kind ? t(`kind.${m.kind}`) : null;
  const facts = [m.family, kind, sizeText(m)].filter(Boolean).join(t("list.sep"));
  return `${m.id} (${facts})${m.default ? t("model.default_mark") : ""}`;
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
  if (ev.type === "loading")
    return short ? t("load.loading_short", { model }) : t("load.into_memory", { model });
  if (ev.type === "family") {
    return short
      ? t("load.loading_short", { model })
      : t("load.family", { model, family: ev.family });
  }
  return short ? t("load.loading_short", { model }) : t("load.loading", { model });
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

// A panel: its controls, its renderer, and either a replay or a live run.

const panels = new Set();

class Panel {
  constructor(root) {
    this.root = root;
    root._alPanel = this;
    this.timer = 0;
    this.source = null;
    this.runId = null;
    const show = (root.dataset.show || "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    root.classList.add(
      "al-panel",
      `al-mode-${(root.dataset.mode || "loop").replace(/[^a-z_-]/gi, "")}`,
    );
    root.replaceChildren();
    ({
      bar: this.bar,
      badge: this.badge,
      status: this.status,
    } = statusBar("al", "al-badge al-mode"));
    this.controls = el("div", "al-controls");
    this.note = el("div", "al-note");
    this.view = el("div", "al-view");
    root.append(this.bar, this.controls, this.note, this.view);
    this.rendererOptions = { show: new Set(show), sourcePattern: root.dataset.sourcePattern || null };
    this.renderer = new Renderer(this.view, this.rendererOptions);
    this.conversationId = null; // live: the conversation a follow-up question continues
    this.turns = []; // live: each question of the conversation and its events, to draw again
    wireTokens(this.view);
    panels.add(this);
    probeServer().then((found) => {
      if (this.destroyed) return;
      if (found.mode === "live") this.startLive(found.status);
      else this.startReplay(found);
    });
  }

  // The reader switched language: everything is drawn again in it, from what the panel holds (a
  // replay's events up to where it was, a conversation's turns). A live run still streaming is
  // drawn again when it ends.
  relabel() {
    if (this.destroyed || !this.mode) return;
    if (this.source) {
      this.relabelPending = true;
      return;
    }
    this.relabelPending = false;
    const badge = this.badge;
    const status = this.status;
    const bar = statusBar("al", "al-badge al-mode");
    this.bar.replaceWith(bar.bar);
    ({ bar: this.bar, badge: this.badge, status: this.status } = bar);
    this.badge.className = badge.className;
    this.status.textContent = status.textContent;
    if (this.mode === "replay") {
      this.resumeAt = this.pos || 0;
      this.startReplay(this.found || { mode: "replay" });
    } else if (this.mode === "live") {
      const question = this.form ? this.form.elements.question.value : null;
      const values = this.form ? this.formValues() : null;
      this.startLive(serverStatus.status || {}, values);
      if (question !== null) this.form.elements.question.value = question;
      this.redrawTurns();
    }
  }

  destroy() {
    this.destroyed = true;
    this.closeStream();
    clearTimeout(this.timer);
    this.renderer.reset();
    panels.delete(this);
    serverStatus.detach(this);
  }

  closeStream() {
    if (this.source) {
      this.source.close();
      this.source = null;
    }
  }

  // --- replay ---

  replayURL() {
    const value = this.root.dataset.replay;
    return value ? new URL(value, location.href).href : null;
  }

  async startReplay(found) {
    this.mode = "replay";
    this.found = found;
    this.badge.textContent = t("badge.replay");
    // A replay draws its run's question as the reader's turn (run_start's question).
    this.renderer.reset();
    this.renderer = new Renderer(this.view, { ...this.rendererOptions, drawQuestion: true });
    this.controls.replaceChildren();
    this.note.replaceChildren();
    this.renderer.onDecision = null;
    if (found.mode === "file") {
      this.status.textContent = t("replay.file");
      this.note.append(
        ...codeText(t("replay.file_note"), {
          http: "python3 -m http.server -d site 8000",
          serve: "make serve",
          url: MAKE_LIVE_URL,
        }),
      );
      return;
    }
    this.note.append(
      ...codeText(t(found.published ? "replay.note_published" : "replay.note"), {
        serve: "make serve",
        url: MAKE_LIVE_URL,
      }),
    );
    const url = this.replayURL();
    if (!url) {
      this.status.textContent = t("replay.none");
      return;
    }
    this.status.textContent = t("replay.loading");
    let text;
    const name = this.root.dataset.replay;
    try {
      const r = await fetch(url, { cache: "no-cache" });
      if (!r.ok) {
        this.status.textContent = t("replay.missing_http", { name, status: r.status });
        this.root.classList.add("al-missing");
        return;
      }
      text = await r.text();
    } catch (err) {
      this.status.textContent = t("replay.missing_err", { name, err });
      this.root.classList.add("al-missing");
      return;
    }
    if (this.destroyed) return;
    const events = [];
    const lines = text.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].trim();
      if (!line) continue;
      try {
        events.push(JSON.parse(line));
      } catch (err) {
        this.status.textContent = t("replay.bad_line", { line: i + 1, err: err.message });
        return;
      }
    }
    this.setupReplay(events);
    const resume = this.resumeAt;
    this.resumeAt = 0;
    if (resume) {
      this.renderer.pushMany(events.slice(0, resume));
      this.pos = resume;
      this.renderer.flushNow();
      this.updateStatus();
    } else if (this.root.dataset.autoplay === "true") this.play();
  }

  setupReplay(events) {
    this.events = events;
    this.pos = 0;
    this.playing = false;
    // Per step, the real decode time per token, from that step's model_end.
    this.tokenMs = new Map();
    for (const ev of events) {
      if (ev.type === "model_end" && ev.n_tokens > 0 && typeof ev.decode_ms === "number") {
        this.tokenMs.set(ev.step, ev.decode_ms / ev.n_tokens);
      }
    }
    const play = el("button", "al-btn al-play", t("replay.play"));
    const step = el("button", "al-btn al-stepbtn", t("replay.step"));
    const restart = el("button", "al-btn al-restart", t("replay.restart"));
    const all = el("button", "al-btn al-all", t("replay.all"));
    for (const b of [play, step, restart, all]) b.type = "button";
    const speed = el("select", "al-speed");
    speed.setAttribute("aria-label", t("replay.speed"));
    for (const v of ["0.5", "1", "2", "5", "20"]) {
      const o = el("option", null, v === "1" ? t("replay.recorded_pace") : `${v}×`);
      o.value = v;
      speed.append(o);
    }
    speed.value = String(this.speed || 1);
    this.speed = Number(speed.value);
    speed.addEventListener("change", () => {
      this.speed = Number(speed.value) || 1;
      if (this.playing) {
        clearTimeout(this.timer);
        this.due = performance.now();
        this.tick();
      }
    });
    play.addEventListener("click", () => (this.playing ? this.pause() : this.play()));
    step.addEventListener("click", () => this.stepOnce());
    restart.addEventListener("click", () => this.restart());
    all.addEventListener("click", () => this.showAll());
    this.playBtn = play;
    this.controls.replaceChildren(play, step, restart, all, speed);
    this.updateStatus();
  }

  // How long the run waited before event i: the difference of the two events' t_ms (ms since the
  // run started) where the recording has it, so 1x is the run's own pace. An older recording
  // without t_ms falls back to each token's share of its step's decode time and a prefill's or a
  // tool's own ms; its other events come at once.
  delayBefore(i) {
    const ev = this.events[i];
    const prev = this.events[i - 1];
    if (!ev) return 0;
    let ms;
    if (prev && typeof ev.t_ms === "number" && typeof prev.t_ms === "number")
      ms = ev.t_ms - prev.t_ms;
    else if (ev.type === "token") ms = this.tokenMs.get(ev.step) ?? PACE.token;
    else if (ev.type === "prefill" || ev.type === "tool_result")
      ms = typeof ev.ms === "number" ? ev.ms : 0;
    else if (ev.type === "decision") ms = PACE.decision;
    else ms = 0;
    return Math.min(PACE.max, Math.max(0, ms)) / this.speed;
  }

  updateStatus() {
    const n = this.events.length;
    const state =
      this.pos >= n ? "finished" : this.playing ? "playing" : this.pos ? "paused" : "ready";
    this.status.textContent = t("replay.status", { pos: this.pos, n, state: t(`replay.${state}`) });
    if (this.playBtn) this.playBtn.textContent = t(this.playing ? "replay.pause" : "replay.play");
  }

  play() {
    if (!this.events) return;
    if (this.pos >= this.events.length) this.restart();
    this.playing = true;
    this.due = performance.now() + this.delayBefore(this.pos);
    this.tick();
  }

  // Draw every event whose time has come, then sleep until the next one: the clock, not the timer's
  // resolution, sets the pace, so fast speeds and background tabs catch up in one batch.
  tick() {
    if (!this.playing || this.destroyed) return;
    const now = performance.now();
    const n = this.events.length;
    let drawn = 0;
    while (this.pos < n && this.due <= now) {
      this.renderer.push(this.events[this.pos++]);
      drawn++;
      if (this.pos < n) this.due += this.delayBefore(this.pos);
    }
    if (this.pos >= n) {
      this.playing = false;
      this.updateStatus();
      return;
    }
    if (drawn) this.updateStatus();
    this.timer = setTimeout(() => this.tick(), Math.max(0, this.due - now));
  }

  pause() {
    this.playing = false;
    clearTimeout(this.timer);
    this.updateStatus();
  }

  stepOnce() {
    this.pause();
    if (this.pos < this.events.length) {
      this.renderer.push(this.events[this.pos++]);
      this.renderer.flushNow();
    }
    this.updateStatus();
  }

  restart() {
    this.pause();
    this.renderer.reset();
    this.pos = 0;
    this.updateStatus();
  }

  showAll() {
    this.pause();
    this.renderer.pushMany(this.events.slice(this.pos));
    this.pos = this.events.length;
    this.renderer.flushNow();
    this.updateStatus();
  }

  // --- live ---

  // `keep`: the form's values to start from (a language switch draws the form again).
  startLive(probed, keep) {
    // Instant navigation keeps the first probe's answer: the page's latest status is the store's.
    const status = serverStatus.status || probed;
    this.mode = "live";
    this.badge.textContent = t("badge.live");
    this.note.replaceChildren();
    if (!pageToken()) this.note.append(t("live.no_token"));
    const defaults = status.defaults && typeof status.defaults === "object" ? status.defaults : {};
    const form = el("form", "al-form");
    const q = el("textarea", "al-question");
    q.name = "question";
    q.rows = 2;
    q.required = true;
    q.placeholder = t("form.placeholder");
    q.value = this.root.dataset.question || "";
    const qLabel = el("label", "al-field al-field-wide");
    qLabel.append(el("span", null, t("form.question")), q);
    form.append(qLabel);
    this.examplesBox = el("div", "al-examples");
    form.append(this.examplesBox);
    this.drawExamples(status);
    this.attach = attachControl(this.root, status); // files for the question, where data-attach="true"
    if (this.attach) form.append(this.attach.element);
    const tryThis = this.tryControl();
    if (tryThis) form.append(tryThis);
    // The settings, folded to one line that names the ones that matter most; it opens to all.
    const folded = el("details", "al-form-settings");
    const foldedLine = el("summary", "al-form-settings-line");
    const foldedBody = el("div", "al-form-settings-body"); // a <details> cannot lay out as flex
    folded.append(foldedLine, foldedBody);
    const inputs = {};
    const kept = rememberedSettings(); // this page's last run, over the server's defaults
    const start = (key, type) => (typeof kept[key] === type ? kept[key] : defaults[key]);
    for (const s of SETTINGS) {
      const label = el("label", "al-field" + (s.type === "bool" ? " al-check" : ""));
      const input = el("input");
      input.name = s.key;
      if (s.type === "bool") {
        input.type = "checkbox";
        const value = start(s.key, "boolean");
        input.checked = typeof value === "boolean" ? value : s.fallback;
        label.append(input, el("span", null, t(`set.${s.key}`)));
      } else {
        input.type = "number";
        input.step = s.step || "1";
        input.min = "0";
        input.placeholder = t("form.server_default");
        if (typeof start(s.key, "number") === "number") input.value = String(start(s.key, "number"));
        label.append(el("span", null, t(`set.${s.key}`)), input);
      }
      inputs[s.key] = input;
      if (s.needs) label.dataset.needs = s.needs;
      foldedBody.append(label);
    }
    this.inputs = inputs;
    const harness = harnessControls(this.root, defaults, status.harnesses);
    // Chapter 16's panels (data-harness) are about the harness: its switch stays in view.
    (this.root.dataset.harness ? form : foldedBody).append(harness.box);
    const offered = Array.isArray(status.tools) ? status.tools : [];
    const tools = toolsChecklist(
      offered,
      Array.isArray(kept.tools) ? kept.tools : Array.isArray(defaults.tools) ? defaults.tools : [],
    );
    if (offered.length) foldedBody.append(tools.element);
    form.insertBefore(folded, this.root.dataset.harness ? harness.box : null);
    this.foldedLine = foldedLine;
    form.addEventListener("input", () => this.sayFoldedSettings());
    form.addEventListener("change", () => this.sayFoldedSettings());
    this.form = form;
    this.offerSwitches(status);
    if (keep) this.applyDefaults(keep);
    else this.useRecordedSettings();
    this.sayFoldedSettings();
    const run = el("button", "al-btn al-run", t("form.run"));
    run.type = "submit";
    const stop = el("button", "al-btn al-stop", t("form.stop"));
    stop.type = "button";
    stop.disabled = true;
    const replay = el("button", "al-btn al-show-replay", t("form.show_replay"));
    replay.type = "button";
    // Each question after the first continues the conversation (its messages and /data) until this.
    const newConversation = el("button", "al-btn al-new-conversation", t("form.new_conversation"));
    newConversation.type = "button";
    newConversation.disabled = !this.conversationId;
    this.newConversationBtn = newConversation;
    const buttons = el("div", "al-buttons");
    buttons.append(run, stop, newConversation);
    if (this.root.dataset.replay) buttons.append(replay);
    form.append(buttons);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const settings = {};
      for (const s of SETTINGS) {
        const input = inputs[s.key];
        if (input.closest("label").hidden) continue; // not offered for this model
        if (s.type === "bool") settings[s.key] = input.checked;
        else if (input.value !== "")
          settings[s.key] = s.type === "int" ? parseInt(input.value, 10) : parseFloat(input.value);
      }
      Object.assign(settings, harness.values());
      if (offered.length) settings.tools = tools.selected();
      rememberSettings(settings);
      this.startRun(q.value.trim(), settings, run, stop);
    });
    stop.addEventListener("click", () => {
      if (!this.runId) return;
      stop.disabled = true;
      postJSON("stop", { run_id: this.runId }, {}).catch((err) =>
        this.renderer.push(err.event || tableError("run.stop_failed", { err })),
      );
    });
    replay.addEventListener("click", () => {
      this.closeStream();
      this.endConversation();
      this.startReplay({ mode: "replay", published: false });
    });
    newConversation.addEventListener("click", () => {
      this.closeStream();
      this.endConversation();
      q.value = "";
      q.focus();
    });
    this.modelMenu = this.buildModelMenu();
    this.controls.replaceChildren(this.modelMenu.details, form);
    this.shown = null;
    this.applyStatus(status, null);
    if (serverStatus.load) this.showLoad(serverStatus.load);
    serverStatus.attach(this, status);
    this.fillMenu(false);
  }

  // The folded settings' line: the sampling and the switches as they stand now.
  sayFoldedSettings() {
    if (!this.foldedLine || !this.inputs) return;
    const parts = [];
    for (const s of SETTINGS) {
      const input = this.inputs[s.key];
      if (!input || input.closest("label").hidden) continue;
      if (s.type === "bool") {
        if (input.checked) parts.push(t(`set.${s.key}`));
      } else if (["temperature", "top_k", "top_p"].includes(s.key)) {
        parts.push(`${t(`set.${s.key}`).replace(/\s*[(（].*$/, "")} ${input.value || t("form.server_default")}`);
      }
    }
    this.foldedLine.replaceChildren(
      el("span", "al-k", t("form.settings")),
      " ",
      el("span", "al-v", parts.join(" · ")),
    );
  }

  // The form's values now, keyed as settings (for drawing the form again).
  formValues() {
    const values = {};
    for (const s of SETTINGS) {
      const input = this.inputs && this.inputs[s.key];
      if (!input) continue;
      if (s.type === "bool") values[s.key] = input.checked;
      else if (input.value !== "") values[s.key] = Number(input.value);
    }
    return values;
  }

  // Beside the question box: what the model is (its folder's examples.json note, e.g. that the
  // default is a toy trained for this book) and a few questions of each kind it knows, each a
  // button that fills the box. Nothing when the model has no examples.json.
  drawExamples(status) {
    const box = this.examplesBox;
    if (!box) return;
    box.replaceChildren();
    const ex = status && status.examples;
    if (!ex || typeof ex !== "object") return;
    if (ex.note) box.append(el("div", "al-examples-note", pick(ex.note)));
    const questions = Array.isArray(ex.questions) ? ex.questions : [];
    if (!questions.length) return;
    const list = el("div", "al-examples-list");
    list.setAttribute("role", "group");
    list.setAttribute("aria-label", t("form.examples"));
    list.append(el("span", "al-k", t("form.examples")));
    const byKind = new Map();
    for (const q of questions) {
      if (!byKind.has(q.kind)) byKind.set(q.kind, []);
      byKind.get(q.kind).push(q);
    }
    for (const [kind, items] of byKind) {
      const group = el("span", "al-example-kind");
      group.append(el("span", "al-example-kind-name", kind in KINDS ? t(KINDS[kind]) : kind));
      for (const q of items) {
        const text = lang() === "zh-Hant" && q.zh ? q.zh : q.en;
        const b = el("button", "al-btn al-example", text);
        b.type = "button";
        b.dataset.kind = kind;
        b.addEventListener("click", () => {
          const box = this.form && this.form.elements.question;
          if (!box) return;
          box.value = text;
          box.focus();
        });
        group.append(b);
      }
      list.append(group);
    }
    box.append(list);
  }

  // The chapter's "try this" as a control: data-try='{"question": "…", "settings": {…}}' on the
  // panel; the button fills the question and the settings it names (the rest stay).
  tryControl() {
    let spec = null;
    try {
      spec = this.root.dataset.try ? JSON.parse(this.root.dataset.try) : null;
    } catch {
      spec = null;
    }
    if (!spec || typeof spec !== "object") return null;
    const b = el("button", "al-btn al-try", t("form.try"));
    b.type = "button";
    const box = el("div", "al-try-box");
    const what = [];
    if (typeof spec.question === "string") what.push(`“${spec.question}”`);
    for (const [k, v] of Object.entries(spec.settings || {})) what.push(`${k} ${JSON.stringify(v)}`);
    box.append(b, el("span", "al-try-text", what.join(" · ")));
    b.addEventListener("click", () => {
      if (typeof spec.question === "string") this.form.elements.question.value = spec.question;
      if (spec.settings) this.applyDefaults({ ...this.formValues(), ...spec.settings });
      this.sayFoldedSettings();
      this.form.elements.question.focus();
    });
    return box;
  }

  // The conversation's turns drawn again (after a language switch), the last one's renderer kept
  // for the run that may follow.
  redrawTurns() {
    const turns = this.turns;
    this.turns = [];
    this.view.replaceChildren();
    for (const turn of turns) {
      this.newTurn(turn.question, true);
      this.turns[this.turns.length - 1].events = turn.events;
      this.renderer.pushMany(turn.events);
      this.renderer.flushNow();
    }
  }

  // --- live: the model menu ---

  // Compact: a summary naming the model, opening to the select, the entry's description and Load.
  buildModelMenu() {
    const details = el("details", "al-model");
    const summary = el("summary", "al-model-summary");
    const name = el("span", "al-model-name", "…");
    summary.append(t("menu.summary"), name);
    const body = el("div", "al-model-body");
    const select = el("select", "al-model-select");
    select.setAttribute("aria-label", t("menu.model"));
    const field = el("label", "al-field al-model-field");
    field.append(el("span", null, t("menu.model_every_tab")), select);
    // What runs the model (chapter 11): transformers in the demo server, or a vLLM server.
    const backend = el("select", "al-backend-select");
    backend.setAttribute("aria-label", t("menu.backend"));
    for (const value of ["transformers", "vllm"]) {
      const o = el("option", null, t(`menu.backend_${value}`));
      o.value = value;
      backend.append(o);
    }
    const backendField = el("label", "al-field al-backend-field");
    backendField.append(el("span", null, t("menu.backend")), backend);
    const load = el("button", "al-btn al-load", t("menu.load"));
    load.type = "button";
    const row = el("div", "al-model-row");
    row.append(backendField, field, load);
    const desc = el("div", "al-model-desc");
    const progress = el("div", "al-model-progress");
    progress.hidden = true;
    const bar = el("progress", "al-model-bar");
    bar.max = 1;
    const progressText = el("span", "al-model-progress-text");
    progress.append(bar, progressText);
    const msg = el("div", "al-model-msg");
    msg.setAttribute("role", "status");
    msg.setAttribute("aria-live", "polite");
    body.append(row, desc, progress, msg);
    details.append(summary, body);
    const menu = {
      details,
      summary,
      name,
      select,
      backend,
      load,
      desc,
      progress,
      bar,
      progressText,
      msg,
      entries: [],
    };
    details.addEventListener("toggle", () => {
      if (details.open) this.fillMenu(false);
    });
    select.addEventListener("change", () => {
      menu.chosen = select.value; // kept across refreshes of the list until the reader picks again
      this.describe();
      this.updateLoadButton();
    });
    backend.addEventListener("change", () => {
      menu.chosenBackend = backend.value;
      this.fillMenu(false); // the models this backend can run
    });
    load.addEventListener("click", () => this.loadChosen());
    return menu;
  }

  async fillMenu(force) {
    const menu = this.modelMenu;
    let answer;
    try {
      answer = await serverStatus.fetchMenu(force);
    } catch (err) {
      if (this.destroyed || this.modelMenu !== menu) return;
      menu.entries = [];
      menu.select.replaceChildren(el("option", null, t("menu.unavailable")));
      menu.select.disabled = true;
      menu.desc.replaceChildren(
        el("div", "al-model-desc-text", t("menu.no_answer", { path: url("models"), err: err.message || err })),
      );
      this.updateLoadButton();
      return;
    }
    if (this.destroyed || this.modelMenu !== menu) return;
    const s = serverStatus.status || {};
    const kind = menu.chosenBackend || s.backend || "transformers";
    menu.backend.value = kind;
    // An entry without `backends` (an older server) runs on transformers only.
    const runs = (m) => (Array.isArray(m.backends) ? m.backends : ["transformers"]).includes(kind);
    menu.entries = answer.models.filter((m) => m && typeof m.id === "string" && runs(m));
    const current =
      (s.backend || "transformers") === kind ? s.model || answer.current || null : null;
    const options = menu.entries.map((m) => {
      const o = el("option", null, optionLabel(m));
      o.value = m.id;
      return o;
    });
    if (current && !menu.entries.some((m) => m.id === current)) {
      const o = el("option", null, t("menu.outside", { model: current }));
      o.value = current;
      options.unshift(o);
    }
    menu.select.replaceChildren(...options);
    menu.select.disabled = !options.length;
    const want =
      menu.chosen && options.some((o) => o.value === menu.chosen) ? menu.chosen : current;
    if (want) menu.select.value = want;
    this.describe();
    this.updateLoadButton();
  }

  describe() {
    const menu = this.modelMenu;
    const m = menu.entries.find((e) => e.id === menu.select.value);
    menu.desc.replaceChildren();
    if (!m) return;
    const d = m.description && typeof m.description === "object" ? m.description : {};
    const facts = el("div", "al-model-facts");
    kv(facts, t("k.family"), m.family);
    kv(facts, t("k.kind"), m.kind ? t(`kind.${m.kind}`) : null);
    kv(facts, t("k.size"), sizeText(m));
    if (m.default) facts.append(el("span", "al-badge", t("menu.default")));
    if (m.current) facts.append(el("span", "al-badge al-mode", t("menu.loaded")));
    menu.desc.append(facts);
    if (d.en || d.zh) {
      const text = el("div", "al-model-desc-text", pick(d));
      text.lang = lang();
      menu.desc.append(text);
    }
  }

  updateLoadButton() {
    const menu = this.modelMenu;
    if (!menu) return;
    const s = serverStatus.status || {};
    const chosen = menu.select.value;
    const loading = !!s.loading || !!(serverStatus.load && !serverStatus.load.done);
    const sameBackend = menu.backend.value === (s.backend || "transformers");
    menu.load.disabled =
      menu.select.disabled || !chosen || loading || (chosen === s.model && sameBackend);
    menu.load.textContent = t(loading ? "menu.loading" : "menu.load");
  }

  async loadChosen() {
    const menu = this.modelMenu;
    const model = menu.select.value;
    if (!model) return;
    menu.msg.replaceChildren();
    menu.load.disabled = true;
    try {
      await serverStatus.loadModel(model, menu.backend.value);
    } catch (err) {
      if (this.destroyed || this.modelMenu !== menu) return;
      const ev = err.event || tableError("menu.load_failed", { model, err });
      const title = t(err.status === 409 ? "menu.not_now" : "menu.not_loaded", { model });
      showMessage(menu.msg, title, ev.message);
      this.updateLoadButton();
    }
  }

  // The server's status, on first sight and after each ask: the status line, the summary, the
  // selected model, and (when the model changed, here or in another tab) the form's defaults.
  applyStatus(s, prev) {
    if (this.destroyed || this.mode !== "live" || !this.modelMenu) return;
    const menu = this.modelMenu;
    const who = [s.model, s.family ? `(${s.family})` : null].filter(Boolean).join(" ");
    const following =
      serverStatus.load && !serverStatus.load.done ? loadText(serverStatus.load, true) : null;
    let line;
    if (following)
      line = t("live.following", { what: following }); // the stream's news is the freshest
    else if (s.loading) line = t("live.loading", { model: s.loading_model || t("live.a_model") });
    else if (who && s.backend === "vllm")
      line = t(s.where ? "live.vllm_at" : "live.vllm", { who, where: s.where });
    else if (who) line = t("live.here", { who });
    else if (s.ok === false || s.model === null) line = t("live.no_model");
    else line = t("live.answers");
    menu.name.textContent =
      following ||
      (s.loading ? t("load.loading_short", { model: s.loading_model || "…" }) : who || t("menu.none"));
    if (this.shown !== line) {
      this.status.textContent = line;
      this.shown = line;
    }
    this.root.classList.toggle("al-gone", false);
    if (s.error && !s.model && !s.loading) showMessage(menu.msg, t("menu.no_model"), s.error);
    if (prev && (prev.model !== s.model || prev.backend !== s.backend) && s.model) {
      menu.chosenBackend = null; // every tab follows the backend another tab picked
      this.applyDefaults({ ...(s.defaults || {}), ...(this.recorded || {}) });
      this.offerSwitches(s);
      this.drawExamples(s);
      menu.chosen = null;
      this.fillMenu(false); // marks the new current model and selects it
    }
    if (!s.loading && serverStatus.load === null) this.hideProgress();
    this.updateLoadButton();
  }

  // A switch the loaded model cannot use (MTP without a drafter) is not offered, and not sent.
  offerSwitches(status) {
    if (!this.form) return;
    for (const label of this.form.querySelectorAll("[data-needs]")) {
      const offered = Boolean(status && status[label.dataset.needs]);
      label.hidden = !offered;
      const input = label.querySelector("input");
      if (!offered && input) input.checked = false;
    }
  }

  // The form starts from the settings of the recording beside it, so "run it live" runs what the
  // replay shows (greedy where it was greedy, thinking where it thought); the server's defaults fill
  // what the recording leaves out, and what the reader last ran on this page wins over both.
  async useRecordedSettings() {
    const url = this.replayURL();
    if (!url) return;
    let first;
    try {
      const r = await fetch(url, { cache: "no-cache" });
      if (!r.ok) return;
      first = parseEvent((await r.text()).split("\n", 1)[0]);
    } catch (_) {
      return; // the form keeps the server's defaults
    }
    if (this.destroyed || !first || first.type !== "run_start" || !first.settings) return;
    this.recorded = first.settings;
    this.applyDefaults({
      ...((serverStatus.status || {}).defaults || {}),
      ...first.settings,
      ...rememberedSettings(),
    });
    this.offerSwitches(serverStatus.status);
  }

  applyDefaults(defaults) {
    if (!this.inputs || !defaults || typeof defaults !== "object") return;
    for (const s of SETTINGS) {
      const input = this.inputs[s.key];
      if (!input) continue;
      if (s.type === "bool")
        input.checked = typeof defaults[s.key] === "boolean" ? defaults[s.key] : s.fallback;
      else input.value = typeof defaults[s.key] === "number" ? String(defaults[s.key]) : "";
    }
    this.sayFoldedSettings();
  }

  showGone() {
    if (this.destroyed || this.mode !== "live") return;
    const line = t("live.gone");
    this.status.textContent = line;
    this.shown = line;
    this.root.classList.toggle("al-gone", true);
  }

  // The load stream's latest event: a progress bar from download's bytes, "loading…", then ready or
  // error.
  showLoad(load) {
    const menu = this.modelMenu;
    if (this.destroyed || !menu) return;
    const ev = load.event || {};
    if (load.done) {
      this.hideProgress();
      if (ev.type === "ready") {
        const key = typeof ev.ms === "number" ? "menu.ready_in" : "menu.ready";
        menu.msg.replaceChildren(
          el("div", "al-model-ok", t(key, { model: load.model, s: (ev.ms / 1000).toFixed(1) })),
        );
      } else {
        showMessage(menu.msg, t("menu.load_error", { model: load.model || t("load.the_model") }), ev.message);
      }
      this.updateLoadButton();
      return;
    }
    menu.progress.hidden = false;
    menu.msg.replaceChildren();
    if (ev.type === "download" && ev.bytes_total > 0) {
      menu.bar.max = ev.bytes_total;
      menu.bar.value = Math.min(ev.bytes_done || 0, ev.bytes_total);
    } else if (ev.type === "download" && ev.files_total > 0) {
      menu.bar.max = ev.files_total;
      menu.bar.value = Math.min(ev.files_done || 0, ev.files_total);
    } else {
      menu.bar.removeAttribute("value"); // indeterminate
    }
    menu.progressText.textContent = loadText(load, false);
    menu.name.textContent = loadText(load, true);
    this.shown = t("live.following", { what: loadText(load, true) });
    this.status.textContent = this.shown;
    this.root.classList.add("al-loading");
    this.updateLoadButton();
  }

  hideProgress() {
    const menu = this.modelMenu;
    if (!menu) return;
    menu.progress.hidden = true;
    this.root.classList.remove("al-loading");
  }

  // The panel back to one empty view: the next question starts a new conversation.
  endConversation() {
    this.conversationId = null;
    this.turns = [];
    if (this.newConversationBtn) this.newConversationBtn.disabled = true;
    this.renderer.reset();
    this.renderer = new Renderer(this.view, this.rendererOptions);
  }

  // A question as the turn it is: the reader's words, then the run that answers them, below the
  // turns before it in the same conversation.
  newTurn(question, again) {
    if (!this.conversationId && !again) {
      this.view.replaceChildren();
      this.turns = [];
    }
    this.turns.push({ question, events: [] });
    const turn = el("div", "al-turn");
    const asked = askedTurn(question);
    const answer = el("div", "al-turn-run");
    turn.append(asked, answer);
    this.view.append(turn);
    this.renderer = new Renderer(answer, this.rendererOptions);
    return turn;
  }

  async startRun(question, settings, runBtn, stopBtn) {
    if (!question) return;
    this.closeStream();
    const asked = this.newTurn(question); // the turn's element: the attachments' strip goes under it
    this.renderer.onDecision = (callId, approve) =>
      postJSON("decision", { run_id: this.runId }, { call_id: callId, approve });
    runBtn.disabled = true;
    const turn = this.turns[this.turns.length - 1];
    const show = (ev) => {
      turn.events.push(ev);
      this.renderer.push(ev);
    };
    let started;
    try {
      const follow = this.conversationId ? { conversation_id: this.conversationId } : {};
      const files = this.attach ? await this.attach.request() : {};
      started = await postJSON("start_run", null, { question, settings, ...follow, ...files });
    } catch (err) {
      // An expired or unknown conversation (410, 404): the server says so; the next question starts anew.
      if (err.status === 410 || err.status === 404) this.conversationId = null;
      show(err.event || tableError("run.start_failed", { err }));
      runBtn.disabled = false;
      return;
    }
    if (this.destroyed) return;
    this.runId = started.run_id;
    if (this.attach) this.attach.sent(started.attachments, asked);
    this.conversationId = started.conversation_id || null;
    this.newConversationBtn.disabled = !this.conversationId;
    stopBtn.disabled = false;
    const source = openEvents("run_events", { run_id: this.runId });
    this.source = source;
    const finish = () => {
      if (this.source === source) this.source = null;
      source.close();
      runBtn.disabled = false;
      stopBtn.disabled = true;
      if (this.relabelPending) this.relabel();
    };
    source.onmessage = (e) => {
      const ev = parseEvent(e.data);
      if (!ev) return;
      show(ev);
      if (ev.type === "run_end") finish();
    };
    // Closed here: an EventSource whose server is gone otherwise reconnects for ever.
    source.onerror = () => {
      if (this.source !== source) return;
      finish();
      if (!this.renderer.ended) show(tableError("run.lost"));
    };
  }
}

// Start every panel on the page. Material's instant navigation swaps pages without reloading
// scripts and announces each new page through document$; panels of the page left behind are closed
// first.

function initAll() {
  let left = false;
  for (const p of Array.from(panels)) {
    if (!document.body.contains(p.root)) {
      p.destroy();
      left = true;
    }
  }
  if (left) serverStatus.stop(); // the next page's live panels start it again, and follow a load still going
  hidePopover();
  for (const root of document.querySelectorAll(".agentloop-panel")) {
    if (!root._alPanel) new Panel(root);
  }
}

onEveryPage(initAll);
onLang(() => {
  hidePopover();
  for (const p of Array.from(panels)) p.relabel();
});
window.addEventListener("pagehide", () => {
  for (const p of Array.from(panels)) p.closeStream();
  serverStatus.stop();
});
window.addEventListener("pageshow", (e) => {
  if (e.persisted) serverStatus.pollSoon(0); // back from the back-forward cache: ask again at once
});
