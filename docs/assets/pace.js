/* pace.js: a run's pace, chosen the same way in the live form and in the replay player: full speed,
   slow (a short wait before each token, to read each one and press Stop between two) or step by step
   (the run waits before each stage, the prefill, each token, the parse and an approved call, until the
   reader presses Next). A live run's waits are the server's own (settings.pace; Reader.hold in
   agentloop/harnesses/base.py): this module draws the choice, says what the run waits to do next, and
   tells a replay where a live run would have waited. Leaves out: sending Next (panel/run-stream.js,
   panel/form.js) and playing a recording (panel/replay.js). */

import { el } from "./dom.js";
import { t } from "./i18n.js";
import { callName } from "./render.js";

export const PACES = ["full", "slow", "step"];
// The wait before each token at "slow": agentloop/harnesses/settings.py's SLOW_S, in ms (a replay at
// that pace waits as long; tests/test_pace_browser.py holds the two equal).
export const SLOW_MS = 300;

const LABELS = { full: "pace.full", slow: "pace.slow", step: "pace.step" };
const HINTS = { full: "pace.full_hint", slow: "pace.slow_hint", step: "pace.step_hint" };
// What a `paused` event's stage says comes next (events.py's PAUSE_STAGES).
const NEXT = {
  prefill: "pace.next_prefill",
  token: "pace.next_token",
  parse: "pace.next_parse",
  call: "pace.next_call",
};

let made = 0; // each control's radios are a group of their own, whatever else the page holds

// A pace's name in the reader's language (the folded settings line says it).
export function paceName(pace) {
  return t(LABELS[pace] || LABELS.full);
}

// What comes when the reader presses Next at a `paused` event (or a replay's stop, shaped alike):
// "Next: token 3" for the token whose index is 2, as the reader counts them.
export function nextNote(stop) {
  if (!stop || !NEXT[stop.stage]) return "";
  return t(NEXT[stop.stage], { n: (Number(stop.index) || 0) + 1, call: callName(stop.call_id) });
}

// The three paces as one row of radio buttons (a keyboard moves between them with the arrows).
// `onChange(pace)` after the reader picks one. limit(why): only full speed, `why` said beside it
// (pi's own models); limit(null) gives the reader's choice back.
export function paceControl(value, onChange) {
  const box = el("fieldset", "al-pace");
  box.append(el("legend", "al-k", t("pace.label")));
  const name = `al-pace-${++made}`;
  const radios = {};
  for (const pace of PACES) {
    const label = el("label", "al-pace-option");
    label.title = t(HINTS[pace]);
    const input = el("input");
    input.type = "radio";
    input.name = name;
    input.value = pace;
    input.checked = pace === (PACES.includes(value) ? value : "full");
    input.addEventListener("change", () => {
      if (input.checked && onChange) onChange(pace);
    });
    label.append(input, el("span", null, t(LABELS[pace])));
    box.append(label);
    radios[pace] = input;
  }
  const why = el("span", "al-pace-why");
  box.append(why);
  let chosen = null; // the reader's pace while only full speed is offered
  const current = () => PACES.find((p) => radios[p].checked) || "full";
  return {
    element: box,
    value: current,
    limit(text) {
      const limited = Boolean(text);
      if (limited && chosen === null) chosen = current();
      if (!limited && chosen !== null) {
        radios[chosen].checked = true;
        chosen = null;
      }
      if (limited) radios.full.checked = true;
      for (const pace of ["slow", "step"]) radios[pace].disabled = limited;
      why.textContent = text || "";
    },
  };
}

// Where a step-by-step replay stops, as a live run at that pace would have waited: before each
// prefill, each token, the parse (the step's model_end, unless the model was stopped) and the result
// of each approved call. Index of the event -> the stop, shaped as a `paused` event. A recorded
// `paused` event is not a stop of its own: it lies right before the one it announced.
export function replayStops(events) {
  const stops = new Map();
  const approved = new Set();
  events.forEach((ev, i) => {
    if (!ev || typeof ev !== "object") return;
    if (ev.type === "prefill") stops.set(i, { stage: "prefill", step: ev.step });
    else if (ev.type === "token") stops.set(i, { stage: "token", step: ev.step, index: ev.index });
    else if (ev.type === "model_end" && ev.finish !== "user_stopped")
      stops.set(i, { stage: "parse", step: ev.step });
    else if (ev.type === "decision" && ev.approved) approved.add(ev.call_id);
    else if (ev.type === "tool_result" && approved.has(ev.call_id))
      stops.set(i, { stage: "call", step: ev.step, call_id: ev.call_id });
  });
  return stops;
}
