/* stages/models.js: chapter 3's model menu as a table, GET models: the checkpoints in models/ and
   the real models, with their kind, family, whether they are here, their size on disk and their
   parameters; the loaded one marked. Live it asks the server; otherwise it replays the recording.
   The reader picks nothing here; the menu is kept, so a language switch draws the table again
   from it, asking nothing again. Leaves out: loading a model (a live loop panel's menu does,
   panel/model-menu.js). */

import { getJSON } from "../api.js";
import { el, fmtBytes, fmtInt } from "../dom.js";
import { t } from "../i18n.js";
import { Stage } from "./stage.js";

const COLUMNS = ["model", "kind", "family", "here", "disk", "parameters"];

export class ModelsStage extends Stage {
  async start(found) {
    const menu = (found.mode === "live" && (await this.askServer())) || (await this.recorded());
    if (!menu) return;
    const box = el("div");
    this.body.append(box);
    this.inLang(() => box.replaceChildren(menuTable(menu)));
  }

  // GET models from the server, or null (its refusal is shown).
  async askServer() {
    try {
      const menu = await getJSON("models");
      this.say(() => t("st.models_live"));
      return menu;
    } catch (err) {
      this.body.append(this.refusal(err));
      return null;
    }
  }

  // The first recording present, or null.
  async recorded() {
    const loaded = await this.loadRecordings();
    const r = loaded.find((x) => x.ok);
    return r ? r.data : null;
  }
}

function menuTable(menu) {
  const table = el("table", "als-table als-menu");
  const head = el("tr");
  for (const h of COLUMNS) head.append(el("th", null, t(`menu.th_${h}`)));
  const thead = el("thead");
  thead.append(head);
  const tbody = el("tbody");
  for (const m of menu.models || []) {
    const tr = el("tr", m.current ? "als-chosen" : null);
    tr.append(
      el("td", null, m.id + (m.current ? t("menu.loaded_mark") : "")),
      el("td", null, m.kind),
      el("td", null, m.family),
      el("td", null, t(m.downloaded ? "st.yes" : "st.no")),
      el("td", null, m.bytes === null ? "—" : fmtBytes(m.bytes)),
      el("td", null, m.parameters === null ? "—" : fmtInt(m.parameters)),
    );
    tbody.append(tr);
  }
  table.append(thead, tbody);
  return table;
}
