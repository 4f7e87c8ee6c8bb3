/* render.js: draws a run's events (the vocabulary in agentloop/events.py) into an element: the
   Renderer, the shared token popover, and the keyboard and pointer inspection of tokens. It knows
   nothing of where the events come from (a recording or the demo server). Leaves out: layout reads
   while drawing, and HTML from event text (everything goes in through textContent). */

import { asText, codeText, el, fmtNum, fmtP, kv, P_BINS, pClass, showPiece, sourceLink } from "./dom.js";
import { lang, pick, t, tableError } from "./i18n.js";
import { fromNodes, kindName, rowsFor, specText } from "./model-facts.js";

// The one shared popover: built once, filled when a token is hovered, focused or clicked.

let popover = null;
let popoverFor = null;

function popoverEl() {
  if (!popover || !document.body.contains(popover)) {
    popover = el("div", "al-popover");
    popover.setAttribute("role", "tooltip");
    popover.id = "al-popover";
    popover.hidden = true;
    document.body.append(popover);
  }
  return popover;
}

function row(table, cells, cls) {
  const tr = el("tr", cls);
  for (const c of cells) tr.append(el("td", null, c));
  table.append(tr);
}

function fillPopover(box, ev, mtp) {
  box.replaceChildren();
  const head = el("div", "al-pop-head");
  head.append(el("code", "al-pop-piece", showPiece(ev.piece)));
  if (ev.special) head.append(el("span", "al-badge", t("tok.special")));
  if (ev.drafted) head.append(el("span", "al-badge", t("tok.drafted")));
  if (ev.forced) head.append(el("span", "al-badge", t("tok.forced")));
  box.append(head);
  const facts = el("table", "al-pop-facts");
  row(facts, ["id", fmtNum(ev.id)]);
  row(facts, [t("pop.channel"), CHANNELS.includes(ev.channel) ? t(`ch.${ev.channel}`) : ev.channel || "—"]);
  row(facts, ["p", fmtP(ev.p)]);
  row(facts, ["logprob", fmtLogprob(ev.logprob)]);
  // A server that tells ranks only inside its top N (vLLM's /v1/completions) sends rank null and
  // rank_beyond N.
  row(facts, [
    t("pop.rank"),
    ev.rank == null && ev.rank_beyond ? t("pop.below", { n: ev.rank_beyond }) : fmtNum(ev.rank),
  ]);
  row(facts, ["p_sampled", fmtP(ev.p_sampled)]);
  row(facts, [
    t("pop.kept"),
    // null: a vLLM server that sends no sampling mask keeps it to itself.
    ev.kept === null ? t("pop.kept_unknown") : ev.kept === undefined ? "—" : t("pop.candidates", { n: fmtNum(ev.kept) }),
  ]);
  box.append(facts);
  const top = Array.isArray(ev.top) ? ev.top : [];
  if (top.length) {
    box.append(el("div", "al-pop-sub", t("pop.top", { n: top.length })));
    box.append(topBars(top, ev.id));
  }
  // MTP: which round guessed this token, or which guess the model turned down in its place.
  if (mtp && mtp.guess !== undefined)
    box.append(el("div", "al-pop-sub al-pop-mtp", t("pop.turned_down", { round: mtp.round, piece: showPiece(mtp.guess) })));
  else if (mtp) box.append(el("div", "al-pop-sub al-pop-mtp", t("pop.kept_guess", mtp)));
  if (ev.src) box.append(el("div", "al-pop-sub", t("pop.sent_by", { src: ev.src })));
}

// The top candidates as bars: each one's probability as a bar's length, the chosen token marked,
// those sampling's rules cut (kept false) faded.
function topBars(top, chosenId) {
  const list = el("div", "al-pop-top");
  list.setAttribute("role", "list");
  top.forEach((c, i) => {
    const item = el("div", "al-pbar-row" + (c.id === chosenId ? " al-chosen" : ""));
    item.setAttribute("role", "listitem");
    if (c.kept === false) item.classList.add("al-cut");
    const bar = el("span", "al-pbar");
    const fill = el("span", "al-pbar-fill");
    fill.style.width = `${(100 * Math.max(0, Math.min(1, Number(c.p) || 0))).toFixed(1)}%`;
    bar.append(fill);
    // null: not known here (a backend that does not hold the logits)
    const kept = c.kept == null ? "" : c.kept ? "" : t("pop.cut");
    item.append(
      el("span", "al-pbar-rank", String(i + 1)),
      el("code", "al-pbar-piece", showPiece(c.piece)),
      bar,
      el("span", "al-pbar-p", fmtP(c.p)),
      el("span", "al-pbar-note", c.id === chosenId ? t("pop.chosen") : kept),
    );
    list.append(item);
  });
  return list;
}

function showPopover(span) {
  const ev = span._al;
  if (!ev) return;
  const box = popoverEl();
  if (popoverFor !== span) fillPopover(box, ev, span._mtp);
  popoverFor = span;
  box.hidden = false;
  span.setAttribute("aria-describedby", box.id);
  // One layout read per hover; the popover is fixed, so it is placed in viewport coordinates.
  const r = span.getBoundingClientRect();
  const w = box.offsetWidth;
  const h = box.offsetHeight;
  let left = Math.min(Math.max(4, r.left), window.innerWidth - w - 4);
  let top = r.bottom + 6;
  if (top + h > window.innerHeight - 4) top = Math.max(4, r.top - h - 6);
  box.style.left = `${left}px`;
  box.style.top = `${top}px`;
}

export function hidePopover() {
  if (popover) popover.hidden = true;
  if (popoverFor) popoverFor.removeAttribute("aria-describedby");
  popoverFor = null;
}

// What a run needs from the reader, drawn whatever a panel's data-show leaves out: a permission
// (the run waits for it), its decision, the end, and an error.
const ALWAYS_SHOWN = new Set(["permission", "decision", "run_end", "error"]);
const TAB_EVENTS = new Set(["run_start", "context", "prefill", "model_end", "request"]);
// What a step's timeline draws whatever data-show says: its phases and their ms.
const TIMELINE_EVENTS = new Set(["prefill", "model_end", "tool_result"]);
// The channels of events.py's CHANNELS, each named in the string table (ch.<name>).
const CHANNELS = ["content", "thought", "tool_call", "control"];
// The roles of a conversation in the order the context bar draws them (its colours are
// panel.css's .al-role-<role>); a role not listed here comes after them.
const ROLES = ["system", "user", "assistant", "tool"];

// A call id as the reader says it: "1.0" is step 1's first call, pi's "call_1_0" the same.
export function callName(id) {
  const m = /^(?:call_)?(\d+)[._](\d+)$/.exec(String(id ?? ""));
  return m ? t("call.name", { step: m[1], n: Number(m[2]) + 1 }) : String(id ?? "?");
}

// A role's name in the reader's language (an unknown one as it is).
function roleName(role) {
  return ROLES.includes(role) ? t(`role.${role}`) : role;
}

// The context's tokens by role, as one bar: each role's share of the model's limit, in ROLES'
// order, with a legend of the counts. Without role_tokens (an older recording) one bar of all.
function roleBar(ev) {
  const limit = ev.context_length > 0 ? ev.context_length : ev.n_tokens || 1;
  const meter = el("div", "al-meter");
  const legend = el("div", "al-role-legend");
  const counts =
    ev.role_tokens && typeof ev.role_tokens === "object" ? ev.role_tokens : { all: ev.n_tokens };
  const order = Object.keys(counts).sort(
    (a, b) => (ROLES.indexOf(a) + 1 || 99) - (ROLES.indexOf(b) + 1 || 99),
  );
  for (const role of order) {
    const n = Number(counts[role]) || 0;
    const cls = `al-role-${String(role).replace(/[^a-z_]/gi, "")}`;
    const part = el("div", `al-meter-used ${cls}`);
    part.style.width = `${((100 * Math.min(n, limit)) / limit).toFixed(2)}%`;
    const name = role === "all" ? t("ctx.all") : roleName(role);
    part.title = t("ctx.role_tokens", { role: name, n: fmtNum(n) });
    meter.append(part);
    const item = el("span", "al-role-item");
    item.append(el("span", `al-swatch ${cls}`), `${name} ${fmtNum(n)}`);
    legend.append(item);
  }
  meter.title = t("ctx.of_limit", { n: fmtNum(ev.n_tokens), limit: fmtNum(ev.context_length) });
  return { meter, legend };
}

// A log-probability to 3 decimals; one that rounds to zero reads "0.000", not "-0.000".
function fmtLogprob(x) {
  if (typeof x !== "number") return "—";
  const text = x.toFixed(3);
  return Number(text) === 0 ? "0.000" : text;
}

// A call's arguments, one per line: a string shown as it is (run_python's code with its real line
// breaks and quotes, not a JSON string of "\n" and "\""), anything else as JSON.
function drawArgs(args) {
  if (!args || typeof args !== "object" || Array.isArray(args)) return el("pre", "al-pre", asText(args));
  const box = el("div", "al-args");
  for (const [name, value] of Object.entries(args)) {
    const code = el("code", null, typeof value === "string" ? value : JSON.stringify(value, null, 2));
    const pre = el("pre", "al-pre al-arg-value");
    pre.append(code);
    box.append(el("div", "al-k al-arg-name", name), pre);
  }
  return box;
}

// The reader's question as the turn it is: "You asked", then the words.
export function askedTurn(question) {
  const asked = el("div", "al-asked");
  asked.append(el("span", "al-k", t("turn.asked")), el("div", "al-asked-text", question));
  return asked;
}

// The Model tab's facts of a run's model: from its own run_start when that carries them (every run
// since agentloop/model_backends/facts.py's model_facts went into it); else from the server's status
// when the server has that model loaded now, on what ran the run (a recording made before); else
// none, and the tab says why. Never another model's facts as this run's.
function factsOf(ev, options) {
  if (ev.specs && typeof ev.specs === "object") return { facts: ev, source: "run" };
  if (ev.harness === "pi" && !ev.family) return { facts: null, why: "pi_own" }; // pi's own model
  const status = options.loadedStatus ? options.loadedStatus() : null;
  const ran = ev.backend || options.recordedBackend || "transformers";
  const loaded = status && status.model;
  if (loaded && loaded === ev.model && status.specs && (status.backend || "transformers") === ran)
    return { facts: status, source: "status" };
  return { facts: null, why: loaded ? "other" : "missing", loaded };
}

// The rows of chapter 3's table (model-facts.js) that the line above the table does not already
// name, each with its value (data, as .al-v) and where it comes from; on vLLM, only those the server
// tells.
function specsTable(facts) {
  const table = el("table", "al-spec-table");
  for (const row of rowsFor(facts.backend)) {
    if (row.key === "model" || row.key === "family") continue;
    const tr = el("tr");
    tr.dataset.key = row.key;
    const value = el("td");
    value.append(el("span", "al-v", specText(row.get(facts))));
    const from = el("td", "al-from");
    from.append(...fromNodes(row));
    tr.append(el("th", null, t(`spec.${row.key}`)), value, from);
    table.append(tr);
  }
  return table;
}

// What the model reads of a question's files, and why not each other kind ({en, zh}, the server's).
function mediaLines(media) {
  const box = el("div", "al-model-media");
  const reads = media && Array.isArray(media.reads) ? media.reads : [];
  const refused = media && media.refused && typeof media.refused === "object" ? media.refused : {};
  const kinds = reads.map(kindName).join(", ");
  box.append(el("div", "al-model-reads", kinds ? t("model.reads", { kinds }) : t("model.reads_none")));
  for (const [kind, why] of Object.entries(refused)) {
    const words = t("model.refuses", { kind: kindName(kind), why: pick(why) });
    const line = el("div", "al-model-refused", words);
    line.dataset.kind = kind;
    box.append(line);
  }
  return box;
}

// The top of the Model tab: where the facts come from, what runs the model, its specs, its media.
function modelFactsView(ev, options) {
  const { facts, source, why, loaded } = factsOf(ev, options);
  // The names in the sentences (the event, a file, the models) are drawn as code.
  const codes = { event: "run_start", file: "config.json", model: ev.model, loaded, flag: "--max-model-len" };
  const say = (cls, key) => {
    const line = el("div", cls);
    line.append(...codeText(t(key), codes));
    return line;
  };
  if (!facts) return [say("al-model-nofacts", `model.facts_${why}`)];
  const runs = say("al-model-runs", facts.backend === "vllm" ? "model.runs_vllm" : "model.runs_here");
  return [say("al-model-source", `model.source_${source}`), runs, specsTable(facts), mediaLines(facts.media)];
}

// The seed's two tabs beside the step cards, from the events the run already sends: Model (what
// ran: the model's facts and, per step, its prefill and decode) and Context (the prompt as the model
// last read it, the part its step added marked, and the tokens it used of the model's limit).
// `options`: the renderer's (loadedStatus and recordedBackend, for a run whose start predates the
// model's facts). Left out: the run's attachments themselves (the reader's turn shows them).
class RunTabs {
  constructor(options) {
    this.options = options || {};
    this.bar = el("div", "al-tabs");
    this.bar.setAttribute("role", "tablist");
    this.buttons = {};
    this.panes = {};
    for (const key of ["steps", "model", "context"]) {
      const button = el("button", "al-tab", t(`tab.${key}`));
      button.type = "button";
      button.setAttribute("role", "tab");
      button.dataset.tab = key;
      button.addEventListener("click", () => this.select(key));
      this.bar.append(button);
      this.buttons[key] = button;
      this.panes[key] = el("div", `al-pane al-pane-${key}`);
      this.panes[key].setAttribute("role", "tabpanel");
    }
    this.modelFacts = el("div", "al-run");
    this.modelSpecs = el("div", "al-model-about");
    this.table = el("table", "al-step-table");
    const head = el("tr");
    for (const h of ["step", "prefill_tokens", "prefill_ms", "written", "decode_ms", "tok_s"])
      head.append(el("th", null, t(`model.th_${h}`)));
    this.table.append(head);
    this.rows = new Map();
    this.panes.model.append(this.modelFacts, this.modelSpecs, this.table);
    this.panes.context.append(el("div", "al-note", t("ctx.appears")));
    this.select("steps");
  }

  select(key) {
    this.selected = key; // kept, so a language switch draws the run again on the same tab
    for (const k of Object.keys(this.panes)) {
      this.buttons[k].setAttribute("aria-selected", String(k === key));
      this.panes[k].hidden = k !== key;
    }
  }

  row(step) {
    let cells = this.rows.get(step);
    if (!cells) {
      const tr = el("tr");
      cells = [String(step), "", "", "", "", ""].map((text) => el("td", null, text));
      tr.append(...cells);
      this.table.append(tr);
      this.rows.set(step, cells);
    }
    return cells;
  }

  note(ev) {
    if (ev.type === "run_start") {
      this.modelFacts.replaceChildren();
      kv(this.modelFacts, t("k.model"), ev.model);
      kv(this.modelFacts, t("k.family"), ev.family);
      kv(this.modelFacts, t("k.harness"), ev.harness);
      this.modelSpecs.replaceChildren(...modelFactsView(ev, this.options));
    } else if (ev.type === "prefill") {
      const cells = this.row(ev.step);
      cells[1].textContent = fmtNum(ev.n_tokens);
      cells[2].textContent = fmtNum(ev.ms);
    } else if (ev.type === "model_end") {
      const cells = this.row(ev.step);
      cells[3].textContent = fmtNum(ev.n_tokens);
      cells[4].textContent = fmtNum(ev.decode_ms);
      cells[5].textContent = fmtNum(ev.tok_per_s);
    } else if (ev.type === "context") {
      this.drawContext(ev);
    } else if (ev.type === "request") {
      // pi's request comes before the step's context (this page's model) or alone (pi's own model):
      // kept, and drawn under the context of its step.
      this.request = ev;
      if (this.contextStep !== ev.step) {
        this.panes.context.replaceChildren();
        this.contextStep = null;
      }
      this.panes.context.append(requestView(ev));
    }
  }

  drawContext(ev) {
    const pane = this.panes.context;
    pane.replaceChildren();
    const facts = el("div", "al-run");
    kv(facts, t("k.step"), String(ev.step));
    kv(facts, t("k.tokens"), t("ctx.of_limit", { n: fmtNum(ev.n_tokens), limit: fmtNum(ev.context_length) }));
    const { meter, legend } = roleBar(ev);
    const prompt = String(ev.prompt || "");
    const cut = Math.max(0, Math.min(prompt.length, ev.added_from || 0));
    const pre = el("pre", "al-pre al-context-text");
    const added = el("mark", "al-added", prompt.slice(cut));
    added.title = t("ctx.step_added", { step: ev.step });
    pre.append(prompt.slice(0, cut), added);
    pane.append(facts, meter, legend, pre);
    this.contextStep = ev.step;
    if (this.request && this.request.step === ev.step) pane.append(requestView(this.request));
  }
}

// pi's request as JSON, its messages one a line, those the step added (from added_from on) marked,
// as the context marks what the step added to the prompt.
function requestText(ev) {
  const payload = ev.payload || {};
  const messages = Array.isArray(payload.messages) ? payload.messages : [];
  const rest = { ...payload };
  delete rest.messages;
  const cut = Math.max(0, Math.min(messages.length, ev.added_from || 0));
  const line = (m) => `  ${JSON.stringify(m)}\n`;
  const pre = el("pre", "al-pre al-request-text");
  pre.append(`${asText(rest)}\nmessages:\n`, messages.slice(0, cut).map(line).join(""));
  if (cut < messages.length) {
    const added = el("mark", "al-added", messages.slice(cut).map(line).join(""));
    added.title = t("ctx.step_added", { step: ev.step });
    pre.append(added);
  }
  return pre;
}

// The request in the Context tab: a heading, then requestText.
function requestView(ev) {
  const box = el("div", "al-context-request");
  box.append(el("div", "al-title", t("req.title")), requestText(ev));
  return box;
}

// The renderer: one per panel. push() queues events; they are drawn together at the next animation
// frame, tokens appended through DocumentFragments, nothing read back from layout while drawing.

export class Renderer {
  constructor(root, options) {
    const o = options || {};
    this.options = o;
    this.root = root;
    this.show = o.show && o.show.size ? o.show : null;
    this.sourcePattern = o.sourcePattern || null;
    this.onDecision = o.onDecision || null;
    this.drawQuestion = Boolean(o.drawQuestion); // a replay draws run_start's question as the reader's turn
    this.queue = [];
    this.frame = 0;
    this.reset();
  }

  reset() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.queue = [];
    this.steps = new Map();
    this.permissions = new Map(); // call_id -> {box, buttons, note}
    this.ended = false;
    this.count = 0;
    this.root.replaceChildren();
    this.askedBox = el("div", "al-asked-box"); // a replay's question, as the reader's turn
    this.header = el("div", "al-header");
    this.stepsBox = el("div", "al-steps");
    this.endBox = el("div", "al-end");
    this.tabs = new RunTabs(this.options);
    this.tabs.panes.steps.append(this.stepsBox);
    const { steps, model, context } = this.tabs.panes;
    this.root.append(this.askedBox, this.header, this.tabs.bar, steps, model, context, this.endBox);
    this.legendShown = false;
    this.askedShown = !this.drawQuestion;
    this.slowest = 1; // the longest step's ms so far: every timeline is drawn to its scale
    this.legendMarks = new Set(); // the marks (drafted, forced) the legend explains so far
    if (popoverFor && this.root.contains(popoverFor)) hidePopover();
  }

  push(ev) {
    this.queue.push(ev);
    this.schedule();
  }

  pushMany(events) {
    for (const ev of events) this.queue.push(ev);
    this.schedule();
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flushNow());
  }

  // Draw everything queued now (the bench and the step button call this directly).
  flushNow() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    const queue = this.queue;
    this.queue = [];
    const open = new Set(); // steps whose token fragments must be committed at the end
    for (const ev of queue) {
      this.count++;
      if (!ev || typeof ev !== "object") continue;
      if (TAB_EVENTS.has(ev.type)) this.tabs.note(ev); // the tabs read them whatever data-show says
      if (TIMELINE_EVENTS.has(ev.type)) this.timeline(ev);
      if (this.show && !this.show.has(ev.type) && !ALWAYS_SHOWN.has(ev.type)) continue;
      try {
        this.draw(ev, open);
      } catch (err) {
        this.drawError(tableError("render.failed", { type: ev.type, err }));
      }
    }
    for (const st of open) this.commit(st);
  }

  draw(ev, open) {
    switch (ev.type) {
      case "run_start":
        return this.drawRunStart(ev);
      case "step_start":
        return this.step(ev.step, ev);
      case "context":
        return this.drawContext(ev);
      case "request":
        return this.drawRequest(ev);
      case "prefill":
        return this.drawPrefill(ev);
      case "token":
        return this.drawToken(ev, open);
      case "draft":
        return this.drawDraft(ev);
      case "delta":
        return this.drawDelta(ev, open);
      case "model_end":
        return this.drawModelEnd(ev, open);
      case "tool_call":
        return this.drawToolCall(ev);
      case "permission":
        return this.drawPermission(ev);
      case "decision":
        return this.drawDecision(ev);
      case "tool_result":
        return this.drawToolResult(ev);
      case "run_end":
        return this.drawRunEnd(ev);
      case "error":
        return this.drawError(ev);
      case "paused":
        return; // where the run waits for Next: the live form says what comes next (pace.js)
      default: {
        // A type this panel does not know yet: shown as JSON rather than dropped.
        const box = el("div", "al-box al-unknown");
        box.append(el("div", "al-title", ev.type || "event"), el("pre", "al-pre", asText(ev)));
        this.place(ev, box);
      }
    }
  }

  // The card for a step, made on first use so a filtered panel (data-show) still groups by step.
  step(n, startEvent) {
    const key = n === undefined || n === null ? "-" : String(n);
    let st = this.steps.get(key);
    if (!st) {
      const card = el("details", "al-step");
      card.open = true;
      const summary = el("summary", "al-step-title", key === "-" ? t("step.run") : t("step.n", { n: key }));
      const body = el("div", "al-step-body");
      card.append(summary, body);
      this.stepsBox.append(card);
      st = {
        card,
        summary,
        body,
        stream: null,
        seg: null,
        segChannel: null,
        line: null,
        spans: [],
        phases: {}, // prefill, decode, tool: ms, for the timeline
        timeline: null,
        rounds: null, // MTP: the draft events' box
        turnedDown: new Map(), // token index -> the guess the model turned down there
        roundAt: new Map(), // token index -> [round, guess] for each kept guess
      };
      this.steps.set(key, st);
    }
    if (startEvent && startEvent.src)
      st.summary.append(" ", sourceLink(startEvent.src, this.sourcePattern));
    return st;
  }

  place(ev, node) {
    if (ev.src) node.append(sourceLink(ev.src, this.sourcePattern));
    if (ev.step === undefined || ev.step === null) this.endBox.append(node);
    else this.step(ev.step).body.append(node);
  }

  // The run's facts, and its settings as one line that opens (the names are the harness's own,
  // RunSettings' fields, as the reader would set them in the live form).
  drawRunStart(ev) {
    this.header.replaceChildren();
    if (!this.askedShown && typeof ev.question === "string" && ev.question) {
      this.askedShown = true;
      this.askedBox.replaceChildren(askedTurn(ev.question));
    }
    const line = el("div", "al-run");
    kv(line, t("k.model"), ev.model);
    kv(line, t("k.family"), ev.family);
    kv(line, t("k.harness"), ev.harness);
    kv(line, t("k.run"), ev.run_id);
    kv(
      line,
      t("k.tools"),
      Array.isArray(ev.tools) && ev.tools.length
        ? ev.tools.map((x) => (typeof x === "string" ? x : x.name || JSON.stringify(x))).join(", ")
        : t("k.none"),
    );
    this.header.append(line);
    if (ev.settings && typeof ev.settings === "object") {
      const d = el("details", "al-settings");
      const summary = el("summary", "al-settings-summary");
      const entries = Object.entries(ev.settings).filter(([k]) => k !== "tools");
      // The few a reader looks at first, in the closed line; all of them once it opens.
      const brief = entries
        .filter(([k]) => ["temperature", "top_k", "top_p", "thinking", "max_steps"].includes(k))
        .map(([k, v]) => `${k} ${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
        .join(" · ");
      summary.append(el("span", "al-k", t("k.settings")), " ", el("span", "al-v", brief));
      const s = el("div", "al-run");
      for (const [k, v] of entries) kv(s, k, typeof v === "object" ? JSON.stringify(v) : String(v));
      d.append(summary, s);
      this.header.append(d);
    }
    if (ev.src) this.header.append(sourceLink(ev.src, this.sourcePattern));
  }

  // The prompt this step read, as one line that opens: its tokens by role (a bar, as the Context
  // tab draws it) and how much is new, then the text with the new part marked.
  drawContext(ev) {
    const d = el("details", "al-box al-context");
    const s = el("summary", "al-title al-context-summary");
    s.append(el("span", "al-context-name", t("ctx.title")));
    const facts = el("span", "al-facts");
    kv(
      facts,
      t("k.tokens"),
      ev.context_length
        ? `${fmtNum(ev.n_tokens)} / ${fmtNum(ev.context_length)}`
        : fmtNum(ev.n_tokens),
    );
    const byRole = ev.role_tokens && typeof ev.role_tokens === "object" ? ev.role_tokens : null;
    const roles = byRole || (ev.roles && typeof ev.roles === "object" ? ev.roles : null);
    if (roles) {
      kv(
        facts,
        t(byRole ? "ctx.role_tokens_k" : "ctx.roles_k"),
        Object.entries(roles)
          .map(([r, n]) => `${roleName(r)} ${fmtNum(n)}`)
          .join(", "),
      );
    }
    if (ev.media_tokens && !(typeof ev.media_tokens === "object" && !Object.keys(ev.media_tokens).length))
      kv(
        facts,
        t("ctx.media"),
        typeof ev.media_tokens === "object"
          ? JSON.stringify(ev.media_tokens)
          : fmtNum(ev.media_tokens),
      );
    const prompt = typeof ev.prompt === "string" ? ev.prompt : asText(ev.prompt);
    const from = Math.max(0, Math.min(prompt.length, Number(ev.added_from) || 0));
    kv(facts, t("ctx.new"), t("ctx.chars", { n: fmtNum(prompt.length - from) }));
    if (byRole) s.append(roleBar(ev).meter); // the share of each role, at a glance, in the line
    s.append(facts);
    d.append(s);
    // The prompt can be long: it is put in the page only when the reader opens it.
    d.addEventListener("toggle", () => {
      if (!d.open || d._built) return;
      d._built = true;
      const pre = el("pre", "al-prompt");
      pre.append(document.createTextNode(prompt.slice(0, from)));
      const mark = el("mark", "al-added", prompt.slice(from));
      mark.title = t("ctx.added");
      pre.append(mark);
      d.append(pre);
    });
    this.place(ev, d);
  }

  drawRequest(ev) {
    const d = el("details", "al-box al-request");
    d.append(el("summary", "al-title", t("req.title")));
    d.addEventListener("toggle", () => {
      if (!d.open || d._built) return;
      d._built = true;
      d.append(requestText(ev));
    });
    this.place(ev, d);
  }

  drawPrefill(ev) {
    const line = el("div", "al-line al-prefill");
    line.append(el("span", "al-title", t("prefill.title")));
    // The tokens the cache kept from the last step were not computed again (chapter 8).
    // reused is null where the backend cannot tell (a vLLM server keeps its own prefix cache).
    const reused = ev.reused || 0;
    if (ev.reused === null || ev.reused === undefined) kv(line, t("k.tokens"), fmtNum(ev.n_tokens));
    else
      kv(
        line,
        t("prefill.computed"),
        t(reused ? "prefill.of_reused" : "prefill.of", {
          n: fmtNum(ev.n_tokens - reused),
          total: fmtNum(ev.n_tokens),
          reused: fmtNum(reused),
        }),
      );
    kv(line, t("k.ms"), fmtNum(ev.ms));
    if (typeof ev.encode_ms === "number") kv(line, t("prefill.encoders_ms"), fmtNum(ev.encode_ms)); // media (chapter 7)
    this.place(ev, line);
  }

  legend() {
    if (this.legendShown) return;
    this.legendShown = true;
    const box = el("div", "al-legend");
    box.append(el("span", "al-k", t("legend.p")));
    for (const bin of P_BINS) box.append(el("span", `al-tok ${bin.cls}`, bin.label));
    box.append(el("span", "al-hint", t("legend.hint")));
    this.header.after(box);
    this.legendBox = box;
  }

  // A mark the run uses (drafted, forced) joins the legend the first time a token has it.
  legendMark(cls, label) {
    this.legend();
    if (this.legendMarks.has(cls)) return;
    this.legendMarks.add(cls);
    this.legendBox.insertBefore(
      el("span", `al-tok ${cls}`, label),
      this.legendBox.querySelector(".al-hint"),
    );
  }

  // The output area of a step: channels as segments, tokens as spans inside them.
  stream(st) {
    if (!st.stream) {
      st.stream = el("div", "al-stream");
      st.stream.tabIndex = 0;
      st.stream.setAttribute("aria-label", t("stream.label"));
      st.stream._alStep = st;
      st.body.append(st.stream);
      this.legend();
    }
    return st.stream;
  }

  // Tokens go into line blocks, one per line of output (a block ends after a token that ends with a
  // newline). Appending to the last line then lays out that line only, not the whole reply, which
  // keeps a long live run cheap frame after frame. New lines wait in `pending`, tokens for a line
  // already in the page in `frag`; commit() puts both in the page once per flush.
  segment(st, channel) {
    const ch = channel || "content";
    if (st.seg && st.segChannel === ch) return;
    this.commit(st);
    const seg = el("div", `al-seg al-ch-${ch.replace(/[^a-z_]/gi, "")}`);
    seg.dataset.channel = ch;
    seg.dataset.label = CHANNELS.includes(ch) ? t(`ch.${ch}`) : ch; // drawn by panel.css
    this.stream(st).append(seg);
    st.seg = seg;
    st.segChannel = ch;
    st.frag = document.createDocumentFragment();
    st.pending = document.createDocumentFragment();
    st.line = null;
    st.lineLive = false;
    this.newLine(st);
  }

  newLine(st) {
    if (st.lineLive && st.frag.childNodes.length) st.line.append(st.frag);
    st.line = el("div", "al-l");
    st.lineLive = false;
    st.pending.append(st.line);
  }

  commit(st) {
    if (!st.seg) return;
    if (st.lineLive && st.frag.childNodes.length) st.line.append(st.frag);
    if (st.pending.childNodes.length) {
      st.seg.append(st.pending);
      st.lineLive = true;
    }
  }

  drawToken(ev, open) {
    const st = this.step(ev.step);
    this.segment(st, ev.channel);
    open.add(st);
    const span = document.createElement("span");
    let cls = "al-tok " + pClass(ev.p);
    if (ev.special) cls += " al-special";
    if (ev.drafted) {
      cls += " al-drafted";
      this.legendMark("al-drafted", t("legend.drafted"));
    }
    if (st.turnedDown.has(ev.index)) {
      cls += " al-corrected";
      this.legendMark("al-corrected", t("legend.corrected"));
    }
    if (ev.forced) {
      cls += " al-forced";
      this.legendMark("al-forced", t("legend.forced"));
    }
    span.className = cls;
    // A special token shows its piece; a token that is part of a character split across byte tokens
    // has no text of its own yet and is drawn as a dot by the CSS.
    const text = ev.special ? String(ev.piece ?? "") : ev.text || "";
    span.textContent = text;
    span._al = ev;
    if (st.roundAt.size || st.turnedDown.size)
      span._mtp = st.roundAt.get(ev.index) || st.turnedDown.get(ev.index) || null;
    span._i = st.spans.length;
    st.spans.push(span);
    (st.lineLive ? st.frag : st.line).append(span);
    if (text.endsWith("\n")) this.newLine(st);
  }

  drawDelta(ev, open) {
    const st = this.step(ev.step);
    this.segment(st, ev.channel);
    open.add(st);
    const text = ev.text || "";
    (st.lineLive ? st.frag : st.line).append(document.createTextNode(text));
    if (text.endsWith("\n")) this.newLine(st);
  }

  // An MTP round (chapter 10): the drafter's guesses for the tokens from ev.index on, and how many
  // the model kept. Drawn as a row of a per-step box, each guess a chip: kept ones marked, the one
  // turned down struck through, the rest (never checked) faded. The tokens it produced learn which
  // round made them, for their popovers.
  drawDraft(ev) {
    const st = this.step(ev.step);
    const guessed = Array.isArray(ev.guessed) ? ev.guessed : [];
    const kept = Math.max(0, Math.min(guessed.length, Number(ev.kept) || 0));
    if (!st.rounds) {
      const box = el("details", "al-box al-rounds");
      const summary = el("summary", "al-title");
      const list = el("div", "al-round-list");
      box.append(summary, list);
      st.body.append(box);
      st.rounds = { box, summary, list, n: 0, guessed: 0, kept: 0 };
    }
    const r = st.rounds;
    r.n++;
    r.guessed += guessed.length;
    r.kept += kept;
    r.summary.textContent = t("mtp.summary", { n: r.n, kept: r.kept, guessed: r.guessed });
    const row = el("div", "al-round");
    row.append(el("span", "al-round-n", t("mtp.round", { n: r.n })));
    guessed.forEach((g, i) => {
      const state = i < kept ? "al-guess-kept" : i === kept ? "al-guess-down" : "al-guess-unseen";
      const chip = el("span", `al-guess ${state}`, g.text === undefined ? showPiece(g.piece) : g.text);
      chip.title = t(`mtp.${state.slice(9)}`, { piece: showPiece(g.piece), id: g.id });
      row.append(chip);
      if (i < kept) st.roundAt.set(ev.index + i, { round: r.n, i: i + 1, of: guessed.length });
    });
    if (kept < guessed.length)
      st.turnedDown.set(ev.index + kept, { round: r.n, guess: guessed[kept].piece });
    row.append(el("span", "al-round-kept", t("mtp.kept_of", { kept, n: guessed.length })));
    r.list.append(row);
  }

  // A step's timeline: prefill, decode and each tool call as bars of their ms, on one scale for
  // the whole run (the slowest step fills the width), so steps can be compared at a glance.
  timeline(ev) {
    if (ev.step === undefined || ev.step === null) return;
    const st = this.step(ev.step);
    const phase = ev.type === "prefill" ? "prefill" : ev.type === "model_end" ? "decode" : "tool";
    const ms = Number(ev.type === "model_end" ? ev.decode_ms : ev.ms) || 0;
    st.phases[phase] = (st.phases[phase] || 0) + ms;
    if (!st.timeline) {
      st.timeline = el("div", "al-timeline");
      st.timeline.setAttribute("role", "img");
      st.body.prepend(st.timeline);
    }
    const total = Object.values(st.phases).reduce((a, b) => a + b, 0);
    if (total > this.slowest) {
      this.slowest = total;
      for (const other of this.steps.values()) if (other !== st && other.timeline) this.drawTimeline(other);
    }
    this.drawTimeline(st);
  }

  drawTimeline(st) {
    const parts = [];
    const labels = [];
    for (const phase of ["prefill", "decode", "tool"]) {
      const ms = st.phases[phase];
      if (ms === undefined) continue;
      const bar = el("span", `al-phase al-phase-${phase}`);
      bar.style.width = `${((100 * ms) / this.slowest).toFixed(2)}%`;
      const text = t("phase.ms", { phase: t(`phase.${phase}`), ms: fmtNum(Math.round(ms)) });
      bar.title = text;
      parts.push(bar);
      labels.push(text);
    }
    const track = el("span", "al-phase-track");
    track.append(...parts);
    st.timeline.replaceChildren(track, el("span", "al-phase-text", labels.join(" · ")));
    st.timeline.setAttribute("aria-label", labels.join(", "));
  }

  drawModelEnd(ev, open) {
    const st = this.step(ev.step);
    this.commit(st);
    st.seg = null;
    st.segChannel = null;
    open.delete(st);
    const line = el("div", "al-line al-model-end");
    line.append(el("span", "al-title", t("end.model_done")));
    kv(line, t("end.finish"), ev.finish);
    if (ev.stop_piece) kv(line, t("end.stop"), ev.stop_piece);
    kv(line, t("k.tokens"), fmtNum(ev.n_tokens));
    kv(line, t("end.decode_ms"), fmtNum(ev.decode_ms));
    kv(line, "tok/s", fmtNum(ev.tok_per_s));
    if (ev.mtp && typeof ev.mtp === "object") {
      kv(
        line,
        "MTP",
        t("end.mtp", {
          accepted: fmtNum(ev.mtp.accepted),
          drafted: fmtNum(ev.mtp.drafted),
          forwards: fmtNum(ev.mtp.forwards),
        }),
      );
      // The figure drafting is for: tokens per forward pass of the model (1.0 without a drafter).
      if (ev.mtp.forwards > 0)
        kv(line, t("end.per_pass"), (ev.n_tokens / ev.mtp.forwards).toFixed(2));
    }
    if (ev.usage) kv(line, t("end.usage"), asText(ev.usage).replace(/\s+/g, " "));
    if (ev.raw) {
      const d = el("details", "al-raw");
      d.append(el("summary", null, t("end.raw")));
      d.addEventListener("toggle", () => {
        if (!d.open || d._built) return;
        d._built = true;
        d.append(el("pre", "al-pre", ev.raw));
      });
      line.append(d);
    }
    this.place(ev, line);
  }

  drawToolCall(ev) {
    const box = el("div", "al-box al-tool-call" + (ev.error ? " al-is-error" : ""));
    const title = el("div", "al-title");
    title.append(t("call.title"), " ", el("code", null, ev.name || "?"));
    kv(title, null, callName(ev.call_id), "al-call-id");
    box.append(title, drawArgs(ev.args));
    if (ev.error) box.append(el("div", "al-error-text", asText(ev.error)));
    this.place(ev, box);
  }

  drawPermission(ev) {
    const box = el("div", "al-box al-permission");
    const title = el("div", "al-title");
    title.append(t("perm.title", { call: callName(ev.call_id) }));
    const approve = el("button", "al-btn al-approve", t("perm.approve"));
    const deny = el("button", "al-btn al-deny", t("perm.deny"));
    approve.type = deny.type = "button";
    const note = el("span", "al-note-inline", t(this.onDecision ? "perm.waits" : "perm.waiting"));
    const live = Boolean(this.onDecision);
    approve.disabled = deny.disabled = !live;
    const decide = (yes) => {
      approve.disabled = deny.disabled = true;
      note.textContent = t("perm.sending");
      Promise.resolve(this.onDecision(ev.call_id, yes)).catch((err) => {
        note.textContent = t("perm.not_sent", { err });
        approve.disabled = deny.disabled = false;
      });
    };
    if (live) {
      approve.addEventListener("click", () => decide(true));
      deny.addEventListener("click", () => decide(false));
    }
    const buttons = el("div", "al-buttons");
    buttons.append(approve, deny, note);
    box.append(title, buttons);
    this.permissions.set(ev.call_id, { box, approve, deny, note });
    this.place(ev, box);
  }

  drawDecision(ev) {
    const p = this.permissions.get(ev.call_id);
    const who = ev.by === "auto" ? "auto" : ev.by === "reader" ? "reader" : ev.by ? "other" : "none";
    const text = t(`perm.${ev.approved ? "approved" : "denied"}_${who}`, { by: ev.by });
    if (p) {
      p.approve.disabled = p.deny.disabled = true;
      (ev.approved ? p.approve : p.deny).classList.add("al-chosen");
      p.note.textContent = text;
      p.box.classList.add(ev.approved ? "al-approved" : "al-denied");
      if (ev.src) p.box.append(sourceLink(ev.src, this.sourcePattern));
      return;
    }
    const line = el("div", "al-line al-decision");
    line.append(
      el("span", "al-title", t("perm.decision")),
      el("span", null, `${text} (${callName(ev.call_id)})`),
    );
    this.place(ev, line);
  }

  drawToolResult(ev) {
    const box = el("div", "al-box al-tool-result" + (ev.is_error ? " al-is-error" : ""));
    const title = el("div", "al-title");
    title.append(t(ev.is_error ? "result.error" : "result.title"), " ", el("code", null, ev.name || "?"));
    kv(title, null, callName(ev.call_id), "al-call-id");
    kv(title, t("k.ms"), fmtNum(ev.ms));
    box.append(title, el("pre", "al-pre", asText(ev.output)));
    this.place(ev, box);
  }

  drawRunEnd(ev) {
    this.ended = true;
    // A permission still open when the run ended can no longer be answered: say so, buttons off.
    for (const p of this.permissions.values()) {
      if (p.box.classList.contains("al-approved") || p.box.classList.contains("al-denied")) continue;
      p.approve.disabled = p.deny.disabled = true;
      p.note.textContent = t("perm.unanswered");
      p.box.classList.add("al-unanswered");
    }
    const box = el("div", "al-box al-run-end");
    const title = el("div", "al-title", t("run.ended"));
    kv(title, t("run.stop_reason"), ev.stop_reason);
    kv(title, t("run.steps"), fmtNum(ev.steps));
    kv(title, t("k.ms"), fmtNum(ev.ms));
    box.append(title);
    if (ev.final !== null && ev.final !== undefined && ev.final !== "") {
      box.append(el("div", "al-k", t("run.final")), el("div", "al-final", asText(ev.final)));
    }
    if (ev.src) box.append(sourceLink(ev.src, this.sourcePattern));
    this.endBox.append(box);
  }

  drawError(ev) {
    const box = el("div", "al-box al-error");
    box.setAttribute("role", "alert");
    const m =
      ev.message && typeof ev.message === "object" ? ev.message : { en: asText(ev.message) };
    // The server sends both languages: the one the reader chose is shown.
    const text = el("div", "al-error-text", pick(m));
    text.lang = lang();
    box.append(el("div", "al-title", t("error.title")), text);
    if (ev.detail) {
      const d = el("details", "al-raw");
      d.append(el("summary", null, t("error.detail")), el("pre", "al-pre", asText(ev.detail)));
      box.append(d);
    }
    this.place(ev, box);
  }
}

// Token inspection: one set of listeners per panel, delegated from its view.
export function wireTokens(view) {
  view.addEventListener("mouseover", (e) => {
    const t = e.target;
    if (t && t._al) showPopover(t);
  });
  view.addEventListener("mouseout", (e) => {
    const t = e.target;
    if (!t || !t._al) return;
    // A focused stream keeps showing its active token; otherwise the popover goes with the pointer.
    const stream = t.closest(".al-stream");
    if (stream && stream === document.activeElement && stream._active) showPopover(stream._active);
    else hidePopover();
  });
  view.addEventListener("click", (e) => {
    const t = e.target;
    if (t && t._al) {
      const stream = t.closest(".al-stream");
      if (stream) {
        stream._active = t;
        markActive(t);
        stream.focus({ preventScroll: true });
      }
      showPopover(t);
    }
  });
  view.addEventListener("focusin", (e) => {
    const stream = e.target;
    if (!stream.classList || !stream.classList.contains("al-stream")) return;
    const st = stream._alStep;
    const t = stream._active || (st && st.spans[0]);
    if (t) {
      stream._active = t;
      markActive(t);
      showPopover(t);
    }
  });
  view.addEventListener("focusout", (e) => {
    if (e.target.classList && e.target.classList.contains("al-stream")) {
      hidePopover();
      if (e.target._active) e.target._active.classList.remove("al-active");
    }
  });
  view.addEventListener("keydown", (e) => {
    const stream = e.target;
    if (!stream.classList || !stream.classList.contains("al-stream")) return;
    const st = stream._alStep;
    if (!st || !st.spans.length) return;
    const at = stream._active ? stream._active._i : -1;
    let next = null;
    if (e.key === "ArrowRight") next = st.spans[Math.min(st.spans.length - 1, at + 1)];
    else if (e.key === "ArrowLeft") next = st.spans[Math.max(0, at - 1)];
    else if (e.key === "Home") next = st.spans[0];
    else if (e.key === "End") next = st.spans[st.spans.length - 1];
    else if (e.key === "Escape") return hidePopover();
    if (!next) return;
    e.preventDefault();
    stream._active = next;
    markActive(next);
    next.scrollIntoView({ block: "nearest" });
    showPopover(next);
  });
}

let activeToken = null;
function markActive(span) {
  if (activeToken) activeToken.classList.remove("al-active");
  activeToken = span;
  span.classList.add("al-active");
}

// Draw events into an element with the panel's renderer, synchronously (the bench and the tests use
// it).
export function render(target, events, options) {
  const r = new Renderer(target, options);
  wireTokens(target);
  r.pushMany(events);
  r.flushNow();
  return r;
}
