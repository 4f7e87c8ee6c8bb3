/* harness.js: chapter 16's switches in a live panel's form. Which loop runs the question
   (agentloop's own, or pi), and for pi which model it asks: this page's, or one of pi's own (GET
   pi_models, asked the first time pi is picked; its message says when pi has no credentials). The
   panel's data-harness picks the first choice. Leaves out: anything pi-specific beyond the two
   fields the server's RunSettingsIn takes (harness, pi_model). */

import { getJSON } from "./api.js";
import { el } from "./dom.js";

const HARNESSES = [
  ["simple", "agentloop's own loop"],
  ["pi", "pi (coding agent, RPC)"],
];

function option(value, label) {
  const o = el("option", null, label);
  o.value = value;
  return o;
}

function field(label, control) {
  const f = el("label", "al-field");
  f.append(el("span", null, label), control);
  return f;
}

// {box: the controls, values(): the settings fields they set}.
export function harnessControls(root, defaults) {
  const harness = el("select", "al-harness-select");
  harness.name = "harness";
  harness.append(...HARNESSES.map(([value, label]) => option(value, label)));
  harness.value = root.dataset.harness || defaults.harness || "simple";
  const model = el("select", "al-pi-model-select");
  model.name = "pi_model";
  model.append(option("", "this page's model"));
  const modelField = field("The model pi asks", model);
  const note = el("div", "al-pi-note");
  const box = el("div", "al-harness");
  box.append(field("Harness", harness), modelField, note);

  let asked = false;
  const askPi = () => {
    asked = true;
    getJSON("pi_models")
      .then((menu) => {
        for (const m of menu.models || []) model.append(option(m.id, `${m.name} (${m.provider})`));
        if (menu.message) {
          note.replaceChildren(el("div", null, menu.message.en), el("div", null, menu.message.zh));
        }
      })
      .catch((err) => note.replaceChildren(`pi's models could not be listed: ${err.message}`));
  };
  const sync = () => {
    const pi = harness.value === "pi";
    // .al-field sets its own display, which the hidden attribute alone would not override.
    for (const part of [modelField, note]) part.style.display = pi ? "" : "none";
    if (pi && !asked) askPi();
  };
  harness.addEventListener("change", sync);
  sync();

  const values = () =>
    harness.value === "pi" ? { harness: "pi", pi_model: model.value } : { harness: "simple" };
  return { box, values };
}
