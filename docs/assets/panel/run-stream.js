/* panel/run-stream.js: one live run. It posts the question (with the conversation it continues and
   the attached files), reads the run's event stream (SSE) into the conversation's current turn, and
   answers the reader's Approve/Deny, Stop and, at a step-by-step run's pause, Next. The stream is closed when the server ends it after
   run_end, and on any error: an EventSource whose server is gone would otherwise reconnect for ever. Leaves out: the form that
   asks (form.js), the turns (conversation.js) and drawing an event (render.js). */

import { openEvents, parseEvent, postJSON } from "../api.js";
import { tableError } from "../i18n.js";

// Uses of the panel: conversation, form (its buttons and attach control), renderer, destroyed, and
// runEnded() (a language switch waits for the run to end).
export class RunStream {
  constructor(panel) {
    this.panel = panel;
    this.source = null; // the open event stream, while a run is read
    this.runId = null;
  }

  get streaming() {
    return this.source !== null;
  }

  close() {
    if (this.source) {
      this.source.close();
      this.source = null;
    }
  }

  async start(question, settings) {
    const panel = this.panel;
    if (!question) return;
    this.close();
    const form = panel.form;
    const { turn, element } = panel.conversation.newTurn(question);
    panel.renderer.onDecision = (callId, approve) => this.decide(callId, approve);
    form.running(true);
    const show = (ev) => {
      turn.events.push(ev);
      panel.renderer.push(ev);
      form.paused(ev.type === "paused" ? ev : null); // any other event: the run went on
    };
    let started;
    try {
      const follow = panel.conversation.request();
      const files = await form.attach.request();
      started = await postJSON("start_run", null, { question, settings, ...follow, ...files });
    } catch (err) {
      // An expired or unknown conversation (410, 404): the server says so; the next question starts anew.
      if (err.status === 410 || err.status === 404) panel.conversation.id = null;
      show(err.event || tableError("run.start_failed", { err }));
      form.running(false);
      return;
    }
    if (panel.destroyed) return;
    this.runId = started.run_id;
    form.attach.sent(started.attachments, element);
    panel.conversation.continueAs(started.conversation_id);
    form.stoppable(true);
    this.follow(show, form);
  }

  // Read the run's events into `show` until run_end, or until the stream fails.
  follow(show, form) {
    const source = openEvents("run_events", { run_id: this.runId });
    this.source = source;
    let ended = false;
    const finish = () => {
      if (this.source === source) this.source = null;
      form.running(false);
      form.stoppable(false);
      this.panel.runEnded();
    };
    source.onmessage = (e) => {
      const ev = parseEvent(e.data);
      if (!ev) return;
      show(ev);
      if (ev.type === "run_end") {
        ended = true;
        finish();
      }
    };
    // The server ends the stream after run_end; the EventSource then reports an error and would
    // reconnect, so it is closed here. Closing it at run_end instead would abort a request the
    // server was finishing (net::ERR_ABORTED in the console). Before run_end an error is a lost
    // server: closed too, as one whose server is gone otherwise reconnects for ever.
    source.onerror = () => {
      source.close();
      if (ended || this.source !== source) return;
      finish();
      if (!this.panel.renderer.ended) show(tableError("run.lost"));
    };
  }

  // The reader's answer to a permission.
  decide(callId, approve) {
    return postJSON("decision", { run_id: this.runId }, { call_id: callId, approve });
  }

  // Go on from the stage the run waits before (its `paused` event), at `pace` from here on when given
  // ("full": no more pauses).
  next(pace) {
    if (!this.runId) return;
    postJSON("next_stage", { run_id: this.runId }, pace ? { pace } : {}).catch((err) =>
      this.panel.renderer.push(err.event || tableError("run.next_failed", { err })),
    );
  }

  // Stop the run; the server ends it with run_end.
  stop() {
    if (!this.runId) return;
    this.panel.form.stoppable(false);
    postJSON("stop", { run_id: this.runId }, {}).catch((err) =>
      this.panel.renderer.push(err.event || tableError("run.stop_failed", { err })),
    );
  }
}
