/* harness.js: chapter 16's switches in a live panel's form. Which loop runs the question (the
   names the server's /api/status lists, from agentloop's HARNESSES registry, each labelled by
   i18n.js's harness.<name>), and for pi which model it asks: this page's, or one of pi's own (GET
   pi_models, asked the first time pi is picked; its message says when pi has no credentials). The
   panel's data-harness picks the first choice; and whose prompt and tools pi gives the model: pi's
   own, run in the sandbox, or the book's (pi_tools; data-pi-tools picks the first choice). Leaves
   out: anything pi-specific beyond the fields the server's RunSettingsIn takes. */

import { getJSON } from "./api.js";
import { el } from "./dom.js";
import { pick, t } from "./i18n.js";

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

// {box: the controls, values(): the settings fields they set}. `names`: the harnesses the server runs.
export function harnessControls(root, defaults, names) {
  const harness = el("select", "al-harness-select");
  harness.name = "harness";
  harness.append(...(names || ["simple"]).map((name) => option(name, t(`harness.${name}`))));
  harness.value = root.dataset.harness || defaults.harness || "simple";
  const model = el("select", "al-pi-model-select");
  model.name = "pi_model";
  model.append(option("", t("harness.page_model")));
  const modelField = field(t("harness.pi_model"), model);
  // What pi gives the model: its own prompt and tools (run in the sandbox), or the book's.
  const piTools = el("select", "al-pi-tools-select");
  piTools.name = "pi_tools";
  piTools.append(option("pi", t("harness.pi_tools_pi")), option("book", t("harness.pi_tools_book")));
  piTools.value = root.dataset.piTools || defaults.pi_tools || "pi";
  const piToolsField = field(t("harness.pi_tools"), piTools);
  const note = el("div", "al-pi-note");
  const box = el("div", "al-harness");
  box.append(field(t("harness.label"), harness), modelField, piToolsField, note);

  let asked = false;
  const askPi = () => {
    asked = true;
    getJSON("pi_models")
      .then((menu) => {
        for (const m of menu.models || []) model.append(option(m.id, `${m.name} (${m.provider})`));
        if (menu.message) note.replaceChildren(el("div", null, pick(menu.message)));
      })
      .catch((err) => note.replaceChildren(t("harness.pi_models_failed", { err: err.message })));
  };
  const sync = () => {
    const pi = harness.value === "pi";
    // .al-field sets its own display, which the hidden attribute alone would not override.
    for (const part of [modelField, piToolsField, note]) part.style.display = pi ? "" : "none";
    if (pi && !asked) askPi();
  };
  harness.addEventListener("change", sync);
  sync();

  const values = () =>
    harness.value === "pi"
      ? { harness: "pi", pi_model: model.value, pi_tools: piTools.value }
      : { harness: harness.value };
  return { box, values };
}
