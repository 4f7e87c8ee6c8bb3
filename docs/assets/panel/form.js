/* panel/form.js: a live panel's form. The question box with the model's examples, the attach
   control (folded to its line but in chapter 7) and the chapter's "try this"; the settings folded to
   one line (opening to every field, the harness switch and the tools checklist); the pace, in view
   beside Run; Run, Stop, New conversation, and while a step-by-step run waits, Next and what it
   does. It starts
   from the recording's settings, the server's defaults and what the reader last ran on this page;
   a field the reader set stays theirs (a load or the recording arriving late fills only the others).
   It hands a submitted question and its settings to the run stream.
   Leaves out: the run itself (run-stream.js), the model menu (model-menu.js), and remembering
   settings and listing tools (settings.js), the harness switch (harness.js), files (attach.js), the
   pace's control and words (pace.js). */

import { attachControl } from "../attach.js";
import { el } from "../dom.js";
import { harnessControls } from "../harness.js";
import { lang, pick, pickZh, t } from "../i18n.js";
import { nextNote, PACES, paceControl, paceName } from "../pace.js";
import { rememberedSettings, rememberSettings, toolsChecklist } from "../settings.js";
import { serverStatus } from "../status.js";
import { recordedStart } from "./recording.js";

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
  // Empty: fresh draws each run; a number: the same sampled run every time (chapter 9's is 17).
  { key: "seed", type: "int" },
  // Chapter 14's two limits: a run's wall-clock seconds, and the unreadable calls it may write.
  { key: "time_limit_s", type: "float", step: "1" },
  { key: "max_format_errors", type: "int" },
  { key: "thinking", type: "bool", fallback: false },
  { key: "use_tools", type: "bool", fallback: true },
  { key: "auto_approve", type: "bool", fallback: false },
  // Offered only where the status says the model has a drafter (status.mtp).
  { key: "mtp", type: "bool", fallback: false, needs: "mtp" },
];
// The settings the folded line names by value (the seed only when set); the switches it names when
// they are on, and whether the run asks before each call whichever way it is set.
const NAMED = ["temperature", "top_k", "top_p", "seed"];
const KEYS = new Set(SETTINGS.map((s) => s.key));

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
  follow_up: "ex.follow_up",
};

function button(cls, label, type) {
  const b = el("button", `al-btn ${cls}`, label);
  b.type = type || "button";
  return b;
}

function questionBox(root) {
  const q = el("textarea", "al-question");
  q.name = "question";
  q.rows = 2;
  q.required = true;
  q.placeholder = t("form.placeholder");
  q.value = root.dataset.question || "";
  const label = el("label", "al-field al-field-wide");
  label.append(el("span", null, t("form.question")), q);
  return { label, q };
}

// One setting's field, starting from `value` (a switch without one from its fallback).
function settingField(s, value) {
  const label = el("label", "al-field" + (s.type === "bool" ? " al-check" : ""));
  const input = el("input");
  input.name = s.key;
  if (s.type === "bool") {
    input.type = "checkbox";
    input.checked = typeof value === "boolean" ? value : s.fallback;
    label.append(input, el("span", null, t(`set.${s.key}`)));
  } else {
    input.type = "number";
    input.step = s.step || "1";
    input.min = "0";
    input.placeholder = t("form.server_default");
    if (typeof value === "number") input.value = String(value);
    label.append(el("span", null, t(`set.${s.key}`)), input);
  }
  if (s.needs) label.dataset.needs = s.needs;
  return { label, input };
}

// MTP on a vLLM server (status.mtp_server: {on, says}), or null where the switch is a run's.
function serverSwitch(status, key) {
  const server = key === "mtp" && status ? status.mtp_server : null;
  return server && typeof server === "object" ? server : null;
}

// Beside a switch the server holds: why it is as it is, in the reader's language.
function sayServerSwitch(label, server) {
  let note = label.querySelector(".al-switch-says");
  if (!server) {
    if (note) note.remove();
    return;
  }
  if (!note) {
    note = el("span", "al-note al-switch-says");
    label.append(note);
  }
  note.textContent = server.says && typeof server.says === "object" ? pick(server.says) : "";
  note.lang = lang();
}

// The settings the form sends: a switch always, a number unless left empty, nothing of a field the
// loaded model is not offered.
function readSettings(inputs) {
  const settings = {};
  for (const s of SETTINGS) {
    const input = inputs[s.key];
    // not offered, or the server's (a switch of the server is a load, not a run's setting)
    if (input.closest("label").hidden || input.disabled || input.dataset.server) continue;
    if (s.type === "bool") settings[s.key] = input.checked;
    else if (input.value !== "")
      settings[s.key] = s.type === "int" ? parseInt(input.value, 10) : parseFloat(input.value);
  }
  return settings;
}

// The folded line's words: what the next run will use, as the fields stand now, its pace last.
function foldedParts(inputs, pace) {
  const parts = [];
  for (const s of SETTINGS) {
    const input = inputs[s.key];
    if (!input || input.closest("label").hidden || s.key === "auto_approve") continue;
    if (s.type === "bool") {
      if (input.checked) parts.push(t(`set.${s.key}`));
    } else if (NAMED.includes(s.key) && (s.key !== "seed" || input.value !== "")) {
      const name = t(`set.${s.key}`).replace(/\s*[(（].*$/, "");
      parts.push(`${name} ${input.value || t("form.server_default")}`);
    }
  }
  // Whether a call waits for the reader is the switch a reader most needs to see folded.
  parts.push(t(inputs.auto_approve.checked ? "form.approves_itself" : "form.asks_first"));
  parts.push(paceName(pace));
  return parts;
}

// What the chapter asks of its live form over the recording: auto-approve off, so a first Run shows
// the permission step, unless the panel says data-auto-approve="true".
function chapterSettings(root) {
  return { auto_approve: root.dataset.autoApprove === "true" };
}

// The model's examples (its folder's examples.json): its note, and its questions grouped by kind,
// each a button that gives its text (Chinese where given) to `use`. A follow-up ({kind: "follow_up",
// after: {en, zh?}, en, zh?}) reads "first → then" and gives `use` both: the form asks the first
// question when no conversation is going, the follow-up when one is.
function examplesList(ex, use) {
  const out = [];
  if (ex.note) out.push(el("div", "al-examples-note", pick(ex.note)));
  const questions = Array.isArray(ex.questions) ? ex.questions : [];
  if (!questions.length) return out;
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
      const words = (x) => (lang() !== "en" && x.zh ? pickZh(x) : x.en);
      const text = words(q);
      const first = q.after && typeof q.after.en === "string" ? words(q.after) : null;
      const b = button("al-example", first ? `${first} → ${text}` : text);
      b.dataset.kind = kind;
      b.addEventListener("click", () => use(text, first));
      group.append(b);
    }
    list.append(group);
  }
  out.push(list);
  return out;
}

// The chapter's data-try='{"question": "…", "settings": {…}}', or null when there is none.
function trySpec(root) {
  try {
    const spec = root.dataset.try ? JSON.parse(root.dataset.try) : null;
    return spec && typeof spec === "object" ? spec : null;
  } catch {
    return null;
  }
}

// What "try this" will do, in the reader's words: the model, the question, each setting by its label.
function tryWords(spec) {
  const words = [];
  if (typeof spec.model === "string") words.push(spec.model);
  if (typeof spec.question === "string") words.push(`“${spec.question}”`);
  for (const [k, v] of Object.entries(spec.settings || {})) {
    const label = KEYS.has(k) ? t(`set.${k}`).replace(/\s*[(（].*$/, "") : k;
    words.push(typeof v === "boolean" ? `${label} ${t(v ? "form.on" : "form.off")}` : `${label} ${v}`);
  }
  return words;
}

// Uses of the panel: root, conversation (whether there is one to leave), recorded (the recording's
// settings, kept across a language switch), recordedRun and menu (which model the recording ran),
// destroyed, run (start, stop) and newConversation().
export class LiveForm {
  // `previous`: the form this one replaces (a language switch draws the form again), whose
  // question and values it starts from.
  constructor(panel, status, previous) {
    this.panel = panel;
    const root = panel.root;
    const defaults = status.defaults && typeof status.defaults === "object" ? status.defaults : {};
    const form = el("form", "al-form");
    this.element = form;
    const { label, q } = questionBox(root);
    this.question = q;
    form.append(label);
    this.examplesBox = el("div", "al-examples");
    form.append(this.examplesBox);
    this.drawExamples(status);
    // Files for the question, in every live panel; a language switch keeps those picked.
    this.attach = attachControl(root, status, previous && previous.attach);
    form.append(this.attach.element);
    const tryThis = this.tryControl();
    if (tryThis) form.append(tryThis);
    // The fields the reader set (typed, ticked, "try this", or ran with on this page before): a
    // load or the recording fills only the others.
    this.touched = new Set(previous ? previous.touched : Object.keys(rememberedSettings()));
    this.buildSettings(form, status, defaults);
    this.offerSwitches(status);
    if (previous) this.restore(previous.values());
    else this.useRecordedSettings();
    form.append(this.paceRow(previous));
    this.sayFoldedSettings();
    form.append(this.buttons());
    if (previous) q.value = previous.question.value;
  }

  // The settings, folded to one line that names the ones that matter most; it opens to all.
  buildSettings(form, status, defaults) {
    const root = this.panel.root;
    const folded = el("details", "al-form-settings");
    const foldedLine = el("summary", "al-form-settings-line");
    const foldedBody = el("div", "al-form-settings-body"); // a <details> cannot lay out as flex
    folded.append(foldedLine, foldedBody);
    const kept = rememberedSettings(); // this page's last run, over the server's defaults
    const base = { ...defaults, ...chapterSettings(root) };
    const start = (key, type) => (typeof kept[key] === type ? kept[key] : base[key]);
    this.inputs = {};
    for (const s of SETTINGS) {
      const { label, input } = settingField(s, start(s.key, s.type === "bool" ? "boolean" : "number"));
      this.inputs[s.key] = input;
      foldedBody.append(label);
    }
    this.inputs.mtp.addEventListener("change", () => {
      if (this.inputs.mtp.dataset.server) this.switchServer(this.inputs.mtp);
    });
    const harness = harnessControls(root, defaults, status.harnesses);
    // Chapter 16's panels (data-harness) are about the harness: its switch stays in view.
    (root.dataset.harness ? form : foldedBody).append(harness.box);
    // The attach control says when the harness picked takes no files (pi), and then sends none.
    const harnessPicked = () => this.attach.useHarness(harness.values().harness);
    harness.box.addEventListener("change", harnessPicked);
    harnessPicked();
    const offered = Array.isArray(status.tools) ? status.tools : [];
    const chosen = Array.isArray(kept.tools) ? kept.tools : Array.isArray(defaults.tools) ? defaults.tools : [];
    const bookTools = toolsChecklist(offered, chosen);
    // pi with its own tools: the checklist lists pi's (read, bash, edit, write by default).
    const piOffered = Array.isArray(status.pi_tools) ? status.pi_tools : [];
    const piNames = piOffered.map((tool) => tool.name);
    const piChosen = chosen.filter((n) => piNames.includes(n));
    const piTools = toolsChecklist(piOffered, piChosen.length ? piChosen : ["read", "bash", "edit", "write"]);
    const ownTools = () => {
      const h = harness.values();
      return h.harness === "pi" && h.pi_tools === "pi" && piOffered.length > 0;
    };
    const tools = { selected: () => (ownTools() ? piTools : bookTools).selected() };
    const showTools = () => {
      bookTools.element.style.display = ownTools() ? "none" : "";
      piTools.element.style.display = ownTools() ? "" : "none";
    };
    if (offered.length) foldedBody.append(bookTools.element);
    if (piOffered.length) foldedBody.append(piTools.element);
    harness.box.addEventListener("change", showTools);
    showTools();
    form.insertBefore(folded, root.dataset.harness ? harness.box : null);
    this.foldedLine = foldedLine;
    const edited = (e) => {
      if (KEYS.has(e.target.name)) this.touched.add(e.target.name);
      this.offerPace();
      this.sayFoldedSettings();
    };
    form.addEventListener("input", edited);
    form.addEventListener("change", edited);
    // What a submitted question carries besides the fields: the harness's and the tools'.
    this.extraSettings = () => ({
      ...harness.values(),
      ...(offered.length ? { tools: tools.selected() } : {}),
    });
  }

  // The pace, in view above Run: a reader picks it before the run starts. It starts from what the
  // reader last ran with on this page (or the form this one replaces); full speed otherwise. A
  // recording's pace is not suggested: how fast to go is the reader's own choice.
  paceRow(previous) {
    const kept = rememberedSettings().pace;
    const start = previous ? previous.pace.value() : PACES.includes(kept) ? kept : "full";
    this.pace = paceControl(start, () => this.sayFoldedSettings());
    this.offerPace();
    return this.pace.element;
  }

  // pi's own models stream text without tokens: nothing can hold them token by token (the server
  // refuses a pace for them), so only full speed is offered, and the control says why.
  offerPace() {
    if (!this.pace || !this.extraSettings) return;
    const extra = this.extraSettings();
    this.pace.limit(extra.harness === "pi" && extra.pi_model ? t("pace.pi_own") : null);
  }

  // Run, Stop, New conversation (each question after the first continues the conversation, its
  // messages and /data, until this); while a step-by-step run waits, Next, "full speed from here"
  // and what Next does. The recording has a tab of its own (tabs.js).
  buttons() {
    const panel = this.panel;
    const run = button("al-run", t("form.run"), "submit");
    const stop = button("al-stop", t("form.stop"));
    stop.disabled = true;
    const newConversation = button("al-new-conversation", t("form.new_conversation"));
    newConversation.disabled = !panel.conversation.id;
    // Beside New conversation, while a conversation continues: how many questions the next one follows
    // (the model reads them all), so a reader knows a question here is a follow-up.
    const continuing = el("span", "al-continuing");
    continuing.setAttribute("aria-live", "polite");
    this.runBtn = run;
    this.stopBtn = stop;
    this.newConversationBtn = newConversation;
    this.continuing = continuing;
    const row = el("div", "al-buttons");
    row.append(run, stop, this.stepControls(), newConversation, continuing);
    this.canLeave(Boolean(panel.conversation.id), panel.conversation.turns.length);
    this.element.addEventListener("submit", (e) => {
      e.preventDefault();
      const settings = {
        ...readSettings(this.inputs),
        ...this.extraSettings(),
        pace: this.pace.value(),
      };
      rememberSettings(settings);
      panel.run.start(this.question.value.trim(), settings);
    });
    stop.addEventListener("click", () => panel.run.stop());
    newConversation.addEventListener("click", () => {
      panel.newConversation();
      this.question.value = "";
      this.question.focus();
    });
    return row;
  }

  // Next, "full speed from here" and the note of what Next does: shown from a step-by-step run's
  // first pause to its end. Next is never `disabled` (a focused button that is would lose the
  // focus, and a reader stepping with the keyboard presses it again and again): between two pauses
  // it is aria-disabled, and a press then does nothing.
  stepControls() {
    const box = el("span", "al-step-controls");
    box.hidden = true;
    const next = button("al-next", t("pace.next"));
    const runOn = button("al-run-on", t("pace.run_on"));
    const note = el("span", "al-pace-next");
    note.setAttribute("aria-live", "polite");
    box.append(next, runOn, note);
    const go = (pace) => {
      if (next.getAttribute("aria-disabled") === "true") return;
      this.paused(null);
      this.panel.run.next(pace);
      if (pace) box.hidden = true; // no pause comes after this one
    };
    next.addEventListener("click", () => go());
    runOn.addEventListener("click", () => go("full"));
    this.step = { box, next, runOn, note };
    this.paused(null);
    return box;
  }

  // The run's `paused` event (or null: it went on): Next offered, and what it does said.
  paused(ev) {
    const { box, next, runOn, note } = this.step;
    const waiting = Boolean(ev);
    if (waiting && box.hidden) {
      box.hidden = false;
      // The first pause of a run: Next takes the focus from Run (now disabled) or from nowhere.
      const at = document.activeElement;
      if (!at || at === document.body || at === this.runBtn) next.focus();
    }
    next.setAttribute("aria-disabled", String(!waiting));
    runOn.setAttribute("aria-disabled", String(!waiting));
    note.textContent = waiting ? nextNote(ev) : "";
  }

  // The buttons as a run goes: Run while none is going, Stop while one can be stopped, New
  // conversation while there is one to leave; Next only within a run.
  running(on) {
    this.runBtn.disabled = on;
    if (!on && this.step) {
      this.paused(null);
      this.step.box.hidden = true;
    }
  }

  stoppable(on) {
    this.stopBtn.disabled = !on;
  }

  // `earlier`: the questions of the conversation so far, which the next question follows.
  canLeave(on, earlier = 0) {
    this.newConversationBtn.disabled = !on;
    const n = on ? earlier : 0;
    this.continuing.hidden = !n;
    this.continuing.textContent = n
      ? t(n === 1 ? "form.continuing_one" : "form.continuing", { n })
      : "";
  }

  // The line's words changed in place: its elements stay, so a click on it that began before (the
  // recording or a load may change the settings at any moment) still opens the settings.
  sayFoldedSettings() {
    if (!this.foldedLine || !this.inputs) return;
    if (!this.foldedValue) {
      this.foldedValue = el("span", "al-v");
      this.foldedLine.replaceChildren(el("span", "al-k", t("form.settings")), " ", this.foldedValue);
    }
    const text = foldedParts(this.inputs, this.pace ? this.pace.value() : "full").join(" · ");
    if (this.foldedValue.textContent !== text) this.foldedValue.textContent = text;
  }

  // The form's values now, keyed as settings (for drawing the form again).
  values() {
    const values = {};
    for (const s of SETTINGS) {
      const input = this.inputs && this.inputs[s.key];
      if (!input) continue;
      if (s.type === "bool") values[s.key] = input.checked;
      else if (input.value !== "") values[s.key] = Number(input.value);
    }
    return values;
  }

  // Values that are not the reader's (a model's defaults, the recording's): each field the reader
  // has not set takes its value, or is emptied (a switch: its fallback) when they have none.
  suggest(values) {
    this.fill(values, SETTINGS.filter((s) => !this.touched.has(s.key)));
  }

  // Values the reader chose ("try this"): set, and theirs from now on.
  choose(values) {
    const chosen = SETTINGS.filter((s) => values && s.key in values);
    for (const s of chosen) this.touched.add(s.key);
    this.fill(values, chosen);
  }

  // The form as it stood before a language switch drew it again: every field, whoever set it.
  restore(values) {
    this.fill(values, SETTINGS);
  }

  fill(values, which) {
    if (!this.inputs || !values || typeof values !== "object") return;
    for (const s of which) this.setField(s, values[s.key]);
    this.sayFoldedSettings();
  }

  setField(s, value) {
    const input = this.inputs[s.key];
    if (!input) return;
    if (s.type === "bool") input.checked = typeof value === "boolean" ? value : s.fallback;
    else input.value = typeof value === "number" ? String(value) : "";
  }

  // A switch the loaded model cannot use (MTP without a drafter) is not offered, and not sent. On a
  // vLLM server MTP is the server's (status.mtp_server): the switch shows its state and says why;
  // it is not sent with a run. Where the page started that server and it can draft (switchable),
  // the reader may switch it, which restarts the server (switchServer); elsewhere it is disabled.
  offerSwitches(status) {
    for (const label of this.element.querySelectorAll("[data-needs]")) {
      const server = serverSwitch(status, label.dataset.needs);
      const offered = Boolean(status && status[label.dataset.needs]) || server !== null;
      label.hidden = !offered;
      const input = label.querySelector("input");
      if (input) {
        input.disabled = server !== null && !server.switchable;
        if (server) input.dataset.server = "1";
        else delete input.dataset.server;
      }
      if (input && (!offered || server)) input.checked = Boolean(server && server.on);
      sayServerSwitch(label, server);
    }
    this.serverStatus = status;
    this.askRestart(null);
    this.sayFoldedSettings();
  }

  // The reader switched MTP on a vLLM server the page started: nothing happens before the form
  // says the server restarts and the reader agrees (Restart it), or puts the switch back.
  switchServer(input) {
    const status = this.serverStatus || {};
    const server = serverSwitch(status, "mtp");
    if (!server || !server.switchable || input.checked === Boolean(server.on)) {
      this.askRestart(null);
      return;
    }
    this.askRestart({ on: input.checked, model: status.model, way: status.way, input, was: server.on });
  }

  // The confirm under the MTP switch ({on, model, way, input, was}), or none (null).
  askRestart(ask) {
    if (this.restartBox) this.restartBox.remove();
    this.restartBox = null;
    if (!ask) return;
    const box = el("div", "al-note al-switch-confirm");
    box.setAttribute("role", "alert");
    box.lang = lang();
    const text = t(ask.on ? "mtp.restart_on" : "mtp.restart_off", { model: ask.model || "" });
    const go = button("al-switch-restart", t("mtp.restart"));
    const keep = button("al-switch-keep", t("mtp.keep"));
    go.addEventListener("click", () => {
      this.askRestart(null);
      this.panel.menu.loadModel(ask.model, ask.way, ask.on);
    });
    keep.addEventListener("click", () => {
      ask.input.checked = Boolean(ask.was);
      this.askRestart(null);
      this.sayFoldedSettings();
    });
    box.append(el("span", null, text), go, keep);
    ask.input.closest("label").after(box);
    this.restartBox = box;
  }

  // The form starts from the settings of the recording beside it, so "run it live" runs what the
  // replay shows (greedy where it was greedy, thinking where it thought), but with the permission
  // step the chapter asks for (chapterSettings); the server's defaults fill what the recording
  // leaves out, and a field the reader set stays theirs. They go to the panel's form of the moment
  // (a language switch may have drawn another meanwhile).
  async useRecordedSettings() {
    const panel = this.panel;
    const start = await recordedStart(panel.root);
    if (panel.destroyed || !start) return;
    panel.recordedRun = start;
    if (start.settings) panel.recorded = { ...start.settings, ...chapterSettings(panel.root) };
    const status = serverStatus.status || {};
    panel.form.suggest({ ...(status.defaults || {}), ...(panel.recorded || {}) });
    panel.form.offerSwitches(status);
    if (panel.menu) panel.menu.showRunsOn(status);
  }

  // Another model was loaded (here or in another tab): its defaults under the recording's
  // settings in the fields the reader has not set, its switches and its examples.
  modelChanged(status) {
    this.suggest({ ...(status.defaults || {}), ...(this.panel.recorded || {}) });
    this.offerSwitches(status);
    this.drawExamples(status);
    this.attach.update(status);
  }

  // Beside the question box: what the model is (its folder's examples.json note, e.g. that the
  // default is a toy trained for this book) and a few questions of each kind it knows, each a
  // button that fills the box. Nothing when the model has no examples.json.
  drawExamples(status) {
    const ex = status && status.examples;
    this.examplesBox.replaceChildren();
    if (!ex || typeof ex !== "object") return;
    this.examplesBox.append(
      ...examplesList(ex, (text, first) => {
        this.question.value = first && !this.panel.conversation.id ? first : text;
        this.question.focus();
      }),
    );
  }

  // The chapter's "try this" as a control: the button fills the question and the settings it names
  // (the rest stay), and loads the model it names when another one is loaded (chapter 10's drafter
  // is Gemma 4's), as the model menu's Load does; the load keeps these settings, now the reader's.
  tryControl() {
    const spec = trySpec(this.panel.root);
    if (!spec) return null;
    const b = button("al-try", t("form.try"));
    const box = el("div", "al-try-box");
    box.append(b, el("span", "al-try-text", tryWords(spec).join(" · ")));
    b.addEventListener("click", () => {
      if (typeof spec.question === "string") this.question.value = spec.question;
      if (spec.settings) this.choose(spec.settings);
      this.sayFoldedSettings();
      this.question.focus();
      const loaded = serverStatus.status || {};
      if (typeof spec.model === "string" && spec.model !== loaded.model)
        this.panel.menu.loadModel(spec.model, loaded.backend);
    });
    return box;
  }
}
