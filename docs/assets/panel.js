/* panel.js: the loop panels. Each <div class="agentloop-panel"> becomes a panel that replays a
   recorded run or, on a page the demo server served, runs the loop live. This module composes a
   panel of the parts in panel/, each with its one job:
     panel/replay.js        the replay player (and panel/recording.js, which reads the recording)
     panel/form.js          the live form: question, examples, try-this, settings, buttons
     panel/model-menu.js    the model menu, a load's progress, and the status line's words
     panel/conversation.js  the turns of a live conversation
     panel/run-stream.js    one live run: its POST, its event stream (SSE), Approve/Deny and Stop
     panel/tabs.js          a live panel's two tabs: the reader's live run and the recorded one
   and starts every panel on each page. It draws through render.js, asks the server through api.js,
   and shares the server's status with the other panels through status.js. Leaves out: the stage
   panels (stages.js) and the media panel (attach.js).

   A chapter embeds:  <div class="agentloop-panel" data-replay="runs/chapter1.jsonl" data-mode="loop"></div>
   Attributes (all optional but data-replay):
     data-replay          the recording (JSON Lines, one event per line); the book's hook makes it page-relative
     data-mode            "loop": the whole run (the only mode so far; stage panels may add others)
     data-show            comma-separated event types to draw, e.g. "token" or "context,prefill"; default all
     data-question        the question the live form starts with
     data-autoplay        "true": start the replay at once
     data-try             the chapter's "try this", '{"question": "…", "settings": {…}}'
     data-harness         the harness the live form starts with (chapter 16), its switch kept in view
     data-source-pattern  URL of a source line, with {path} and {line}; the hook adds it
     data-attach          "true": the live form's attach control starts open (chapter 7); every live
                          form has one, folded to its line elsewhere (attach.js)
     data-backend         what ran the recording, "transformers" (default) or "vllm" (chapter 11): a live
                          panel says when it runs on something else
     data-auto-approve    "true": the live form starts with auto-approve on (a chapter not about the
                          permission step); otherwise every live form starts with it off
   The API the live mode expects from the demo server is in docs/assets/README-panel.md. */

import { pageToken, probeServer } from "./api.js";
import { el, onEveryPage, statusBar } from "./dom.js";
import { LEAVE_EVENT } from "./edition.js";
import { onLang, t } from "./i18n.js";
import { hidePopover, Renderer, wireTokens } from "./render.js";
import { serverStatus } from "./status.js";
import { Conversation } from "./panel/conversation.js";
import { LiveForm } from "./panel/form.js";
import { ModelMenu } from "./panel/model-menu.js";
import { ReplayPlayer } from "./panel/replay.js";
import { RunStream } from "./panel/run-stream.js";
import { LiveTabs } from "./panel/tabs.js";

const panels = new Set();

// The event types a panel draws (data-show), as the renderer takes them.
function shownTypes(root) {
  return new Set(
    (root.dataset.show || "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  );
}

// A panel: its top line, controls, note and view; a replay or a live form, conversation and run.
// Its parts read and write what is here: `renderer` is the one events go to now (the replay's, or
// the conversation's last turn's).
class Panel {
  constructor(root) {
    this.root = root;
    root._alPanel = this;
    root.classList.add(
      "al-panel",
      `al-mode-${(root.dataset.mode || "loop").replace(/[^a-z_-]/gi, "")}`,
    );
    root.replaceChildren();
    ({ bar: this.bar, badge: this.badge, status: this.status } = statusBar("al", "al-badge al-mode"));
    this.controls = el("div", "al-controls");
    this.note = el("div", "al-note");
    this.view = el("div", "al-view");
    root.append(this.bar, this.controls, this.note, this.view);
    this.rendererOptions = {
      show: shownTypes(root),
      sourcePattern: root.dataset.sourcePattern || null,
      // For a Model tab whose run_start predates the model's facts: the server's, when it has that
      // model loaded now on what ran the recording (null on a static page).
      loadedStatus: () => serverStatus.status,
      recordedBackend: root.dataset.backend || "transformers",
    };
    this.renderer = new Renderer(this.view, this.rendererOptions);
    this.replay = new ReplayPlayer(this);
    this.conversation = new Conversation(this);
    this.run = new RunStream(this);
    this.form = null; // live: its LiveForm
    this.menu = null; // live: its ModelMenu
    this.recorded = null; // live: the settings of the recording beside it (form.js)
    this.recordedRun = null; // live: its run_start (which model it ran: model-menu.js)
    this.tabs = null; // live with a recording: the live run and the recorded one (tabs.js)
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
    if (this.run.streaming) {
      this.relabelPending = true;
      return;
    }
    this.relabelPending = false;
    this.redrawBar();
    if (this.mode === "replay") this.startReplay(this.found || { mode: "replay" }, this.replay.pos);
    else if (this.mode === "live") {
      this.startLive(serverStatus.status || {}, this.form);
      this.conversation.redraw();
    }
  }

  // The top line again (its language switch and words), keeping the badge's look and the status.
  redrawBar() {
    const { badge, status } = this;
    const bar = statusBar("al", "al-badge al-mode");
    this.bar.replaceWith(bar.bar);
    ({ bar: this.bar, badge: this.badge, status: this.status } = bar);
    this.badge.className = badge.className;
    this.status.textContent = status.textContent;
  }

  // A run's stream has closed: a language switch that waited for it is drawn now.
  runEnded() {
    if (this.relabelPending) this.relabel();
  }

  destroy() {
    this.destroyed = true;
    this.run.close();
    this.replay.stop();
    if (this.tabs) this.tabs.stop();
    this.renderer.reset();
    panels.delete(this);
    serverStatus.detach(this);
  }

  startReplay(found, resumeAt) {
    this.mode = "replay";
    this.found = found;
    this.replay.start(found, resumeAt || 0);
  }

  // `previous`: the form to start from (a language switch draws the form again).
  startLive(probed, previous) {
    // Instant navigation keeps the first probe's answer: the page's latest status is the store's.
    const status = serverStatus.status || probed;
    this.mode = "live";
    this.badge.textContent = t("badge.live");
    this.note.replaceChildren();
    if (!pageToken()) this.note.append(t("live.no_token"));
    this.form = new LiveForm(this, status, previous);
    this.menu = new ModelMenu(this);
    this.controls.replaceChildren(this.menu.details, this.menu.runsOn, this.form.element);
    if (this.tabs) this.tabs.relabel();
    else if (this.root.dataset.replay) this.tabs = new LiveTabs(this);
    this.shown = null;
    this.applyStatus(status, null);
    if (serverStatus.load) this.showLoad(serverStatus.load);
    serverStatus.attach(this, status);
    this.menu.fill(false);
  }

  // The form's "New conversation": the next question starts one.
  newConversation() {
    this.run.close();
    this.conversation.end();
  }

  say(line) {
    if (this.shown === line) return;
    this.status.textContent = line;
    this.shown = line;
  }

  // status.js calls these three on every live panel.

  // The server's status, on first sight and after each ask: the status line, the menu, and (when
  // the model changed, here or in another tab) the form's defaults.
  applyStatus(s, prev) {
    if (this.destroyed || this.mode !== "live" || !this.menu) return;
    this.say(this.menu.showStatus(s));
    this.menu.showRunsOn(s);
    this.root.classList.toggle("al-gone", false);
    if (prev && (prev.model !== s.model || prev.backend !== s.backend) && s.model) {
      this.form.modelChanged(s);
      this.menu.followSwitch();
    } else if (prev && JSON.stringify(prev.mtp_server) !== JSON.stringify(s.mtp_server)) {
      this.form.offerSwitches(s); // the server restarted with MTP switched (here or in another tab)
    }
    this.menu.settle(s);
  }

  showGone() {
    if (this.destroyed || this.mode !== "live") return;
    const line = t("live.gone");
    this.status.textContent = line;
    this.shown = line;
    this.root.classList.toggle("al-gone", true);
  }

  showLoad(load) {
    if (this.destroyed || !this.menu) return;
    const short = this.menu.showLoad(load);
    if (short === null) return;
    this.shown = t("live.following", { what: short });
    this.status.textContent = this.shown;
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
// The header's switch to the other edition loads another page, which would end this page's live
// conversations: the reader is asked first, and "Cancel" keeps the page as it is.
window.addEventListener(LEAVE_EVENT, (e) => {
  const held = Array.from(panels).some((p) => !p.destroyed && p.conversation.turns.length > 0);
  const ask = t(e.detail === "en" ? "edition.leave_en" : "edition.leave_zh");
  if (held && !window.confirm(ask)) e.preventDefault();
});
window.addEventListener("pagehide", () => {
  for (const p of Array.from(panels)) p.run.close();
  serverStatus.stop();
});
window.addEventListener("pageshow", (e) => {
  if (e.persisted) serverStatus.pollSoon(0); // back from the back-forward cache: ask again at once
});
