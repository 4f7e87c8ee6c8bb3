/* stages.js: the stage panels, one stage of the loop alone, live from the demo server or from a
   recording of what the server answered. This module starts the stage each panel names and, after a
   language switch, has each redraw its words in place (stages/stage.js says how). The stages are
   the modules in stages/, each with its one job:
     stages/stage.js           what they share: top line, note, reading recordings, a refusal's words,
                               their words redrawn in place after a switch
     stages/tokens.js          chapter 4: text -> tokens, per tokenizer
     stages/sampling.js        chapter 9: the sampling rules on a distribution, with sliders and draws
     stages/sampling-rules.js  the rules themselves, sample()'s in JavaScript (why a copy: its header)
     stages/specs.js           chapter 3: what config.json says about a model
     stages/models.js          chapter 3: the model menu as a table
   Leaves out: the loop panels (panel.js).

   A chapter embeds:  <div class="agentloop-stage" data-stage="tokens" data-replay="runs/a.json runs/b.json"></div>
   Attributes:
     data-stage     "tokens" (ch. 4), "sampling" (ch. 9), "specs" and "models" (ch. 3)
     data-replay    the recordings, space-separated, each relative to the chapter's Markdown file (as panel.js's
                    data-replay is written). A recording is the JSON body the demo server answered; next to it,
                    <name>.spec.json is the request it was recorded from (docs/chapters/runs/), read for the
                    model's name and the request's body.
     data-temperature, data-top-k, data-top-p   (sampling) where the sliders start
   The API is in docs/assets/README-panel.md ("One stage alone", GET /api/status, GET /api/models). */

import { onEveryPage } from "./dom.js";
import { onLang, t } from "./i18n.js";
import { ModelsStage } from "./stages/models.js";
import { SamplingStage } from "./stages/sampling.js";
import { SpecsStage } from "./stages/specs.js";
import { stages } from "./stages/stage.js";
import { TokensStage } from "./stages/tokens.js";

const KINDS = {
  tokens: TokensStage,
  sampling: SamplingStage,
  specs: SpecsStage,
  models: ModelsStage,
};

// Start every stage panel on the page; Material's instant navigation announces new pages through
// document$.
function initAll() {
  for (const s of Array.from(stages)) if (!document.body.contains(s.root)) s.destroy();
  for (const root of document.querySelectorAll(".agentloop-stage")) {
    if (root._alsStage) continue;
    const Kind = KINDS[root.dataset.stage];
    if (Kind) new Kind(root);
    else root.textContent = t("st.unknown", { name: JSON.stringify(root.dataset.stage || "") });
  }
}

onEveryPage(initAll);
// A language switch redraws every stage panel's words in place (Stage.relabel): the reader's text,
// choices, sliders and draws stay, and nothing is asked again.
onLang(() => {
  for (const s of Array.from(stages)) s.relabel();
});
