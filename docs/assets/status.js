/* status.js: the page's one view of the demo server, shared by its live panels (one model serves
   every tab): the latest GET status, asked every few seconds while the page is visible (a switch
   made in another tab shows on the next ask), the model menu (asked once and again when stale), and
   the load stream, followed while a load is under way, whichever tab started it. Material's instant
   navigation closes the stream with the panels of the page left behind; the next page's panels pick
   it up again from its first event. Leaves out: drawing (the panels do), and runs (each panel
   follows its own). */

import { getJSON, openEvents, parseEvent, postJSON, url } from "./api.js";
import { t, tableError } from "./i18n.js";

const STATUS_POLL_MS = 3000; // how often a visible live page asks GET status
const MENU_STALE_MS = 10000; // the model menu is asked again when opened after this long

export const serverStatus = {
  // The live panels that show the status; each has applyStatus, showGone and showLoad.
  panels: new Set(),
  status: null, // the latest /api/status answer
  menu: null, // a promise of the latest /api/models answer
  menuAt: 0,
  source: null, // the load stream, while one is followed
  load: null, // the load as the stream has told it: {model, phase, event, done}
  timer: 0,

  livePanels() {
    return Array.from(this.panels).filter((p) => p.mode === "live" && !p.destroyed);
  },

  // A live panel joins: the first one brings the status its probe found; asking again at once
  // catches a switch made since (instant navigation keeps the probe's first answer).
  attach(panel, status) {
    this.panels.add(panel);
    if (!this.status && status) this.status = status;
    this.pollSoon(0);
  },

  detach(panel) {
    this.panels.delete(panel);
  },

  pollSoon(ms) {
    clearTimeout(this.timer);
    this.timer = 0;
    if (document.visibilityState === "hidden" || !this.livePanels().length) return;
    this.timer = setTimeout(() => this.poll(), ms === undefined ? STATUS_POLL_MS : ms);
  },

  async poll() {
    clearTimeout(this.timer);
    this.timer = 0;
    const seq = (this.seq = (this.seq || 0) + 1);
    let status = null;
    try {
      status = await getJSON("status");
    } catch (_) {
      if (seq === this.seq) for (const p of this.livePanels()) p.showGone();
    }
    if (seq !== this.seq) return; // a later ask has answered, or will
    if (status) this.setStatus(status);
    this.pollSoon();
  },

  setStatus(status) {
    const prev = this.status;
    this.status = status;
    // sizes, `current` and the backends' lists changed
    if (!prev || prev.model !== status.model || prev.backend !== status.backend) this.menu = null;
    if (status.loading && !this.source) this.follow();
    // A load this page stopped following (it navigated) and that has ended since: nothing left to
    // show.
    if (!status.loading && !this.source && this.load && !this.load.done) this.load = null;
    for (const p of this.livePanels()) p.applyStatus(status, prev);
  },

  fetchMenu(force) {
    if (force || !this.menu || performance.now() - this.menuAt > MENU_STALE_MS) {
      this.menuAt = performance.now();
      const menu = getJSON("models").then((m) => {
        if (!m || !Array.isArray(m.models)) throw new Error(t("menu.no_models", { path: url("models") }));
        return m;
      });
      menu.catch(() => {
        if (this.menu === menu) this.menu = null;
      });
      this.menu = menu;
    }
    return this.menu;
  },

  // POST the switch; the stream then tells every panel how it goes. Throws the server's refusal
  // (409 while a run or a load is going) for the panel that asked to show. `mtp` (true or false):
  // the MTP switch of a vLLM server the page started, which restarts it; left out otherwise.
  async loadModel(model, backend, mtp) {
    const body = { model, backend: backend || "transformers" };
    if (typeof mtp === "boolean") body.mtp = mtp;
    await postJSON("load", null, body);
    this.loadEvent({ type: "load_start", model });
    this.follow();
  },

  follow() {
    this.closeSource();
    const source = openEvents("load_events");
    this.source = source;
    const finish = () => {
      if (this.source === source) this.source = null;
      source.close();
      this.menu = null;
      this.poll(); // the status line, the form's defaults and the menu, at once
    };
    source.onmessage = (e) => {
      const ev = parseEvent(e.data);
      if (!ev) return;
      this.loadEvent(ev);
      if (ev.type === "ready" || ev.type === "error") finish();
    };
    // Closed here too: an EventSource whose server is gone otherwise reconnects for ever.
    source.onerror = () => {
      if (this.source !== source) return;
      if (this.load && !this.load.done) {
        this.loadEvent(tableError("load.lost"));
      }
      finish();
    };
  },

  loadEvent(ev) {
    const model = ev.model || (this.load && this.load.model) || "";
    const done = ev.type === "ready" || ev.type === "error";
    this.load = { model, phase: ev.type, event: ev, done };
    for (const p of this.livePanels()) p.showLoad(this.load);
  },

  closeSource() {
    if (this.source) {
      this.source.close();
      this.source = null;
    }
  },

  stop() {
    clearTimeout(this.timer);
    this.timer = 0;
    this.closeSource();
  },
};

document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") serverStatus.pollSoon(0);
  else {
    clearTimeout(serverStatus.timer);
    serverStatus.timer = 0;
  }
});
