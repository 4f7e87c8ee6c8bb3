/* stages/specs.js: chapter 3's model facts, what config.json says about a model as GET status
   reports it (agentloop/model_backends/facts.py): one row a fact (model-facts.js's SPEC_ROWS, which
   each run's Model tab reads too), one column a model (the loaded one, live, then the recorded
   ones), and where each fact comes from. The reader picks nothing here; the columns are kept, so a
   language switch draws the table again from them, asking nothing again. Leaves out: the other
   stages, and reading config.json itself (the server does). */

import { getJSON } from "../api.js";
import { el } from "../dom.js";
import { t } from "../i18n.js";
import { fromNodes, SPEC_ROWS, specText } from "../model-facts.js";
import { Stage } from "./stage.js";

export class SpecsStage extends Stage {
  async start(found) {
    const columns = [];
    if (found.mode === "live") {
      try {
        columns.push({ live: true, model: found.status.model, status: await getJSON("status") });
      } catch (err) {
        this.body.append(this.refusal(err));
      }
    }
    const loaded = await this.loadRecordings();
    for (const r of loaded)
      if (r.ok)
        columns.push({ label: r.data.model || (r.spec && r.spec.model) || r.path, status: r.data });
    if (!columns.length) return;
    const scroller = el("div", "als-scroll");
    this.body.append(scroller);
    this.inLang(() => scroller.replaceChildren(specsTable(columns)));
  }
}

// A column's heading: the loaded model's, marked live, or the recording's.
function columnLabel(c) {
  return c.live ? t("st.live_label", { model: c.model || t("st.the_loaded_model") }) : c.label;
}

// The facts of each column's status, a row a fact, and where each comes from.
function specsTable(columns) {
  const table = el("table", "als-table als-specs");
  const head = el("tr");
  head.append(el("th", null, ""));
  for (const c of columns) head.append(el("th", null, columnLabel(c)));
  head.append(el("th", null, t("spec.from")));
  const thead = el("thead");
  thead.append(head);
  const tbody = el("tbody");
  for (const row of SPEC_ROWS) {
    const tr = el("tr");
    tr.dataset.key = row.key;
    tr.append(el("th", null, t(`spec.${row.key}`)));
    for (const c of columns) tr.append(el("td", null, specText(row.get(c.status || {}))));
    const from = el("td", "als-from");
    from.append(...fromNodes(row));
    tr.append(from);
    tbody.append(tr);
  }
  table.append(thead, tbody);
  return table;
}
