/* settings.js: the live form's settings remembered per page, and its tools checklist. A reader who
   sets Temperature or picks read_file on one chapter's panel gets the same form back when the page
   is opened again, and a different chapter keeps its own (chapters ask for different things).
   Stored in localStorage under the page's path; where storage is refused (a private window's
   quota, a policy), nothing is remembered and the form starts from the server's defaults.
   Leaves out: the form's other fields (panel/form.js builds them) and any sharing between pages. */

import { el } from "./dom.js";
import { t } from "./i18n.js";

const PREFIX = "agentloop-settings:";

function pageKey() {
  return PREFIX + location.pathname;
}

// The settings last sent from this page's form, or {} when none are kept.
export function rememberedSettings() {
  try {
    const kept = JSON.parse(localStorage.getItem(pageKey()) || "{}");
    return kept && typeof kept === "object" && !Array.isArray(kept) ? kept : {};
  } catch {
    return {};
  }
}

export function rememberSettings(settings) {
  try {
    localStorage.setItem(pageKey(), JSON.stringify(settings));
  } catch {
    // storage refused: the form simply starts from the defaults next time
  }
}

// One checkbox per tool the server offers ({name, description} from GET /api/status), checked for
// the names in `chosen`. `selected()` is the checked names, in the server's order.
export function toolsChecklist(tools, chosen) {
  const box = el("fieldset", "al-field al-field-wide al-tools");
  box.append(el("legend", null, t("form.tools")));
  const checks = [];
  for (const tool of tools) {
    const label = el("label", "al-check");
    label.title = tool.description || "";
    const input = el("input");
    input.type = "checkbox";
    input.name = "tool";
    input.value = tool.name;
    input.checked = chosen.includes(tool.name);
    label.append(input, el("span", null, tool.name));
    box.append(label);
    checks.push(input);
  }
  return { element: box, selected: () => checks.filter((c) => c.checked).map((c) => c.value) };
}
