/* stages/specs.js: chapter 3's model facts, what config.json says about a model as GET status
   reports it (demo_server's model_specs): one row a fact, one column a model (the loaded one, live,
   then the recorded ones), and where each fact comes from. The reader picks nothing here; the
   columns are kept, so a language switch draws the table again from them, asking nothing again.
   Leaves out: the other stages, and reading config.json itself (the server does). */

import { getJSON } from "../api.js";
import { el, fmtInt } from "../dom.js";
import { t } from "../i18n.js";
import { Stage } from "./stage.js";

// Each row: its key (its label is the string table's spec.<key>), how to read it from a status,
// and where it comes from (a file's field, or a spec.from_* sentence).
const SPEC_ROWS = [
  ["model", (s) => s.model, "spec.from_name"],
  ["family", (s) => s.family, "config.json model_type → model_families"],
  ["architecture", (s) => s.specs && s.specs.architecture, "config.json architectures"],
  ["model_type", (s) => s.specs && s.specs.model_type, "config.json model_type"],
  ["layers", (s) => s.specs && s.specs.layers, "text_config.num_hidden_layers"],
  [
    "layer_type_counts",
    (s) =>
      s.specs &&
      s.specs.layer_type_counts &&
      Object.entries(s.specs.layer_type_counts)
        .map(([k, v]) => `${v} × ${k}`)
        .join(", "),
    "text_config.layer_types",
  ],
  ["hidden_size", (s) => s.specs && s.specs.hidden_size, "text_config.hidden_size"],
  ["heads", (s) => s.specs && s.specs.heads, "text_config.num_attention_heads"],
  ["kv_heads", (s) => s.specs && s.specs.kv_heads, "text_config.num_key_value_heads"],
  ["head_dim", (s) => s.specs && s.specs.head_dim, "text_config.head_dim"],
  ["vocabulary", (s) => s.specs && s.specs.vocabulary, "text_config.vocab_size"],
  [
    "context_length",
    (s) => s.specs && s.specs.context_length,
    "text_config.max_position_embeddings",
  ],
  ["parameters", (s) => s.specs && s.specs.parameters, "spec.from_counted"],
  ["dtype", (s) => s.dtype, "spec.from_dtype"],
  ["device", (s) => s.device, "pick_device()"],
  ["temperature", (s) => s.defaults && s.defaults.temperature, "spec.from_generation"],
  ["top_p", (s) => s.defaults && s.defaults.top_p, "spec.from_generation"],
  ["top_k", (s) => s.defaults && s.defaults.top_k, "spec.from_generation"],
];

function cell(v) {
  return el(
    "td",
    null,
    v === undefined || v === null ? "—" : typeof v === "number" ? fmtInt(v) : String(v),
  );
}

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
  for (const [key, get, from] of SPEC_ROWS) {
    const tr = el("tr");
    tr.dataset.key = key;
    tr.append(el("th", null, t(`spec.${key}`)));
    for (const c of columns) tr.append(cell(get(c.status || {})));
    tr.append(el("td", "als-from", from.startsWith("spec.") ? t(from) : from));
    tbody.append(tr);
  }
  table.append(thead, tbody);
  return table;
}
