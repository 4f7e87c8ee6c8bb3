/* panel/replay.js: the replay player. It reads the panel's recording and draws its events at the
   run's own pace (or faster), with Play/Pause, Step (one event), Restart, Show all, a speed, and the
   pace a live run has: full speed, slow (SLOW_MS before each token) or step by step, where Play is
   Next and draws one stage at a time, stopping where a live run at that pace would have waited
   (pace.js's replayStops), with what comes next said beside it. A language switch starts it again
   where it was. Leaves out: the live form and the run stream (a live panel plays its recording in a
   tab of its own, tabs.js), and drawing an event (render.js). */

import { MAKE_LIVE_URL } from "../api.js";
import { codeText, el } from "../dom.js";
import { t } from "../i18n.js";
import { nextNote, paceControl, replayStops, SLOW_MS } from "../pace.js";
import { Renderer } from "../render.js";
import { fetchRecording, parseRecording, replayURL } from "./recording.js";

// Replay pacing at 1x for recordings without t_ms (delayBefore), and the longest wait drawn.
const PACE = { token: 20, decision: 600, max: 1500 };
const SPEEDS = ["0.5", "1", "2", "5", "20"];

// Per step, the real decode time per token, from that step's model_end.
function tokenTimes(events) {
  const ms = new Map();
  for (const ev of events) {
    if (ev.type === "model_end" && ev.n_tokens > 0 && typeof ev.decode_ms === "number") {
      ms.set(ev.step, ev.decode_ms / ev.n_tokens);
    }
  }
  return ms;
}

// What the note under a replay says: beside a live panel, that the live run waits in the other tab
// (never how to start the server the reader already has); else how to run it live.
function noteKey(found) {
  if (found.live) return "replay.note_live";
  return found.published ? "replay.note_published" : "replay.note";
}

function button(cls, label) {
  const b = el("button", `al-btn ${cls}`, label);
  b.type = "button";
  return b;
}

// Uses of the panel: root, badge, status, controls, note, view, renderer (replaced by one that
// draws run_start's question as the reader's turn), rendererOptions, destroyed.
export class ReplayPlayer {
  constructor(panel) {
    this.panel = panel;
    this.events = null;
    this.pos = 0;
    this.playing = false;
    this.speed = 1; // kept across a language switch
    this.pace = "full"; // so is the pace
    this.timer = 0;
  }

  // Load the recording and offer its controls; `resumeAt` events are drawn at once (a language
  // switch resumes where the reader was).
  async start(found, resumeAt) {
    const panel = this.panel;
    this.stop();
    panel.badge.textContent = t("badge.replay");
    panel.renderer.reset();
    panel.renderer = new Renderer(panel.view, { ...panel.rendererOptions, drawQuestion: true });
    panel.controls.replaceChildren();
    panel.note.replaceChildren();
    if (found.mode === "file") {
      this.sayFileNote();
      return;
    }
    panel.note.append(...codeText(t(noteKey(found)), { serve: "make serve", url: MAKE_LIVE_URL }));
    const events = await this.load();
    if (!events || panel.destroyed) return;
    this.setup(events);
    if (resumeAt) {
      panel.renderer.pushMany(events.slice(0, resumeAt));
      this.pos = resumeAt;
      panel.renderer.flushNow();
      this.updateStatus();
    } else if (panel.root.dataset.autoplay === "true") this.play();
  }

  // A page opened from a file cannot read its recording: how to serve the book instead.
  sayFileNote() {
    this.panel.status.textContent = t("replay.file");
    this.panel.note.append(
      ...codeText(t("replay.file_note"), {
        http: "python3 -m http.server -d site 8000",
        serve: "make serve",
        url: MAKE_LIVE_URL,
      }),
    );
  }

  // The recording's events, or null with the reason in the status line.
  async load() {
    const panel = this.panel;
    const url = replayURL(panel.root);
    if (!url) {
      panel.status.textContent = t("replay.none");
      return null;
    }
    panel.status.textContent = t("replay.loading");
    const name = panel.root.dataset.replay;
    const got = await fetchRecording(url);
    if (typeof got.text !== "string") {
      panel.status.textContent =
        got.status !== undefined
          ? t("replay.missing_http", { name, status: got.status })
          : t("replay.missing_err", { name, err: got.err });
      panel.root.classList.add("al-missing");
      return null;
    }
    if (panel.destroyed) return null;
    const parsed = parseRecording(got.text);
    if (!parsed.events) {
      panel.status.textContent = t("replay.bad_line", { line: parsed.line, err: parsed.err.message });
      return null;
    }
    return parsed.events;
  }

  setup(events) {
    this.events = events;
    this.pos = 0;
    this.playing = false;
    this.tokenMs = tokenTimes(events);
    this.stops = replayStops(events);
    const play = button("al-play", t("replay.play"));
    const step = button("al-stepbtn", t("replay.step"));
    const restart = button("al-restart", t("replay.restart"));
    const all = button("al-all", t("replay.all"));
    play.addEventListener("click", () => (this.playing ? this.pause() : this.play()));
    step.addEventListener("click", () => this.stepOnce());
    restart.addEventListener("click", () => this.restart());
    all.addEventListener("click", () => this.showAll());
    this.playBtn = play;
    const pace = paceControl(this.pace, (value) => this.setPace(value));
    this.nextSaid = el("span", "al-pace-next");
    this.nextSaid.setAttribute("aria-live", "polite");
    this.panel.controls.replaceChildren(
      play,
      step,
      restart,
      all,
      this.speedSelect(),
      pace.element,
      this.nextSaid,
    );
    this.updateStatus();
  }

  speedSelect() {
    const speed = el("select", "al-speed");
    speed.setAttribute("aria-label", t("replay.speed"));
    for (const v of SPEEDS) {
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
    return speed;
  }

  // How long the run waited before event i: the difference of the two events' t_ms (ms since the
  // run started) where the recording has it, so 1x is the run's own pace. An older recording
  // without t_ms falls back to each token's share of its step's decode time and a prefill's or a
  // tool's own ms; its other events come at once.
  delayBefore(i) {
    const ev = this.events[i];
    const prev = this.events[i - 1];
    if (!ev) return 0;
    if (this.pace === "slow" && ev.type === "token") return SLOW_MS; // whatever the speed
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
    this.panel.status.textContent = t("replay.status", {
      pos: this.pos,
      n,
      state: t(`replay.${state}`),
    });
    const stepping = this.pace === "step";
    if (this.playBtn)
      this.playBtn.textContent = t(
        stepping ? "pace.next" : this.playing ? "replay.pause" : "replay.play",
      );
    if (this.nextSaid)
      this.nextSaid.textContent = stepping && this.pos ? nextNote(this.stops.get(this.pos)) : "";
  }

  // The reader picked a pace: a replay playing stops when it becomes step by step (Play is Next).
  setPace(pace) {
    this.pace = pace;
    if (pace === "step") this.pause();
    else this.updateStatus();
  }

  play() {
    if (!this.events) return;
    if (this.pace === "step") return this.nextStage();
    if (this.pos >= this.events.length) this.restart();
    this.playing = true;
    this.due = performance.now() + this.delayBefore(this.pos);
    this.tick();
  }

  // Draw every event whose time has come, then sleep until the next one: the clock, not the timer's
  // resolution, sets the pace, so fast speeds and background tabs catch up in one batch.
  tick() {
    if (!this.playing || this.panel.destroyed) return;
    const now = performance.now();
    const n = this.events.length;
    let drawn = 0;
    while (this.pos < n && this.due <= now) {
      this.panel.renderer.push(this.events[this.pos++]);
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
    this.stop();
    this.updateStatus();
  }

  // Stopped, without a word in the status line (the panel is leaving the replay, or starting it
  // again).
  stop() {
    this.playing = false;
    clearTimeout(this.timer);
  }

  // Step by step: draw the stage the replay waits before and all that follows it, up to the next
  // place a live run at this pace would have waited (or the end).
  nextStage() {
    this.pause();
    const n = this.events.length;
    if (this.pos >= n) this.restart();
    do this.panel.renderer.push(this.events[this.pos++]);
    while (this.pos < n && !this.stops.has(this.pos));
    this.panel.renderer.flushNow();
    this.updateStatus();
  }

  stepOnce() {
    this.pause();
    if (this.pos < this.events.length) {
      this.panel.renderer.push(this.events[this.pos++]);
      this.panel.renderer.flushNow();
    }
    this.updateStatus();
  }

  restart() {
    this.pause();
    this.panel.renderer.reset();
    this.pos = 0;
    this.updateStatus();
  }

  showAll() {
    this.pause();
    this.panel.renderer.pushMany(this.events.slice(this.pos));
    this.pos = this.events.length;
    this.panel.renderer.flushNow();
    this.updateStatus();
  }
}
