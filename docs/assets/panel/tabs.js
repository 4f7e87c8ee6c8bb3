/* panel/tabs.js: a live panel's two tabs, the reader's live run and the run recorded beside it.
   The recorded tab has its own replay player, controls, note and view, so showing it leaves the
   live side as it is (the conversation's turns, the form's settings and typed question, a run
   still streaming) and the first tab brings it back. A panel without a recording has no tabs.
   Leaves out: playing the recording (replay.js) and the live side's parts (form.js,
   conversation.js, run-stream.js). */

import { el } from "../dom.js";
import { t } from "../i18n.js";
import { Renderer } from "../render.js";
import { ReplayPlayer } from "./replay.js";

const KEYS = ["live", "recorded"];

// The recorded side as the replay player sees a panel: its own badge, status line, controls, note
// and view, the panel's root (its recording) and renderer options.
class RecordedSide {
  constructor(panel) {
    this.panel = panel;
    this.root = panel.root;
    this.rendererOptions = panel.rendererOptions;
    this.element = el("div", "al-recorded");
    this.badge = el("span", "al-badge");
    this.status = el("span", "al-recorded-status");
    const line = el("div", "al-recorded-line");
    line.append(this.badge, " ", this.status);
    this.controls = el("div", "al-controls");
    this.note = el("div", "al-note");
    this.view = el("div", "al-view");
    this.element.append(line, this.controls, this.note, this.view);
    this.renderer = new Renderer(this.view, this.rendererOptions); // the player makes its own
  }

  get destroyed() {
    return this.panel.destroyed;
  }
}

// Uses of the panel: root (data-replay), bar (the tabs go below it), controls, note and view (the
// live side, hidden while the recording is shown), rendererOptions, destroyed.
export class LiveTabs {
  constructor(panel) {
    this.panel = panel;
    this.shown = "live";
    this.side = null; // the recorded side, made the first time it is shown
    this.player = null;
    this.bar = el("div", "al-tabs al-live-tabs");
    this.bar.setAttribute("role", "tablist");
    this.buttons = {};
    for (const key of KEYS) {
      const b = el("button", "al-tab al-live-tab");
      b.type = "button";
      b.setAttribute("role", "tab");
      b.dataset.tab = key;
      b.addEventListener("click", () => this.select(key));
      this.buttons[key] = b;
      this.bar.append(b);
    }
    this.label();
    panel.bar.after(this.bar);
    this.select("live");
  }

  // The tabs' words, in the reader's language.
  label() {
    this.bar.setAttribute("aria-label", t("livetab.label"));
    for (const key of KEYS) this.buttons[key].textContent = t(`livetab.${key}`);
  }

  liveParts() {
    const { controls, note, view } = this.panel;
    return [controls, note, view];
  }

  // One side shown, the other hidden as it stands; the recording is loaded the first time.
  select(key) {
    this.shown = key;
    for (const k of KEYS) this.buttons[k].setAttribute("aria-selected", String(k === key));
    for (const part of this.liveParts()) part.hidden = key !== "live";
    if (key === "recorded") this.showRecording(0);
    else if (this.side) {
      this.player.pause(); // a replay does not go on unseen
      this.side.element.hidden = true;
    }
  }

  showRecording(resumeAt) {
    if (!this.side) {
      this.side = new RecordedSide(this.panel);
      this.panel.root.append(this.side.element);
      this.player = new ReplayPlayer(this.side);
      this.player.start({ mode: "replay", live: true }, resumeAt);
    }
    this.side.element.hidden = false;
  }

  // After a language switch: the tabs' words, and the replay drawn again where it was.
  relabel() {
    this.label();
    this.panel.bar.after(this.bar); // the top line was drawn again
    if (this.player) this.player.start({ mode: "replay", live: true }, this.player.pos);
    this.select(this.shown);
  }

  stop() {
    if (this.player) this.player.stop();
  }
}
