/* panel/conversation.js: a live panel's conversation. Each question is a turn, the reader's words
   then the run that answers them, drawn below the turns before it while the server keeps the
   conversation (its id); the turns' events are kept, so a language switch draws them all again.
   Leaves out: starting a run and reading its stream (run-stream.js), and the form's buttons
   (form.js), which it only tells whether there is a conversation to leave. */

import { el } from "../dom.js";
import { askedTurn, Renderer } from "../render.js";

// Uses of the panel: view, renderer (each turn's answer gets its own), rendererOptions, form.
export class Conversation {
  constructor(panel) {
    this.panel = panel;
    this.id = null; // the conversation a follow-up question continues
    this.turns = []; // each question and its events, to draw again
  }

  // The server's id for it, from a started run (a follow-up carries it; null starts anew).
  continueAs(id) {
    this.id = id || null;
    if (this.panel.form) this.panel.form.canLeave(Boolean(this.id), this.turns.length);
  }

  // The request's part: {conversation_id} for a follow-up, nothing for a first question.
  request() {
    return this.id ? { conversation_id: this.id } : {};
  }

  // The panel back to one empty view: the next question starts a new conversation.
  end() {
    const panel = this.panel;
    this.continueAs(null);
    this.turns = [];
    panel.renderer.reset();
    panel.renderer = new Renderer(panel.view, panel.rendererOptions);
  }

  // A question as the turn it is, below the turns before it in the same conversation (a first
  // question clears the view). Returns {turn, element}: the record its events go to, and the
  // turn's element (the attachments' strip goes under it).
  newTurn(question, again) {
    const panel = this.panel;
    if (!this.id && !again) {
      panel.view.replaceChildren();
      this.turns = [];
    }
    const turn = { question, events: [] };
    this.turns.push(turn);
    const element = el("div", "al-turn");
    const answer = el("div", "al-turn-run");
    element.append(askedTurn(question), answer);
    panel.view.append(element);
    panel.renderer = new Renderer(answer, panel.rendererOptions);
    turn.renderer = panel.renderer;
    return { turn, element };
  }

  // The turns drawn again (after a language switch), the last one's renderer kept for the run that
  // may follow.
  redraw() {
    const turns = this.turns;
    this.turns = [];
    this.panel.view.replaceChildren();
    for (const old of turns) {
      const { turn } = this.newTurn(old.question, true);
      turn.events = old.events;
      this.panel.renderer.pushMany(old.events);
      this.panel.renderer.flushNow();
      // On the tab the reader had open (Model, Context), not back on Steps.
      const open = old.renderer && old.renderer.tabs.selected;
      if (open) turn.renderer.tabs.select(open);
    }
  }
}
