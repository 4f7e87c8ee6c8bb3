/* render.js: draws a run's events (the vocabulary in agentloop/events.py) into an element: the
   Renderer, the shared token popover, and the keyboard and pointer inspection of tokens. It knows
   nothing of where the events come from (a recording or the demo server). Leaves out: layout reads
   while drawing, and HTML from event text (everything goes in through textContent). */

import { asText, el, fmtNum, fmtP, kv, P_BINS, pClass, showPiece, sourceLink } from "./dom.js";

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

function fillPopover(box, ev) {
  box.replaceChildren();
  const head = el("div", "al-pop-head");
  head.append(el("code", "al-pop-piece", showPiece(ev.piece)));
  if (ev.special) head.append(el("span", "al-badge", "special"));
  if (ev.drafted) head.append(el("span", "al-badge", "drafted"));
  if (ev.forced) head.append(el("span", "al-badge", "forced"));
  box.append(head);
  const facts = el("table", "al-pop-facts");
  row(facts, ["id", fmtNum(ev.id)]);
  row(facts, ["channel", ev.channel || "—"]);
  row(facts, ["p", fmtP(ev.p)]);
  row(facts, ["logprob", fmtLogprob(ev.logprob)]);
  // A server that tells ranks only inside its top N (vLLM's /v1/completions) sends rank null and
  // rank_beyond N.
  row(facts, ["rank", ev.rank == null && ev.rank_beyond ? `below ${ev.rank_beyond}` : fmtNum(ev.rank)]);
  row(facts, ["p_sampled", fmtP(ev.p_sampled)]);
  row(facts, [
    "kept",
    ev.kept === null || ev.kept === undefined ? "—" : `${fmtNum(ev.kept)} candidates`,
  ]);
  box.append(facts);
  const top = Array.isArray(ev.top) ? ev.top : [];
  if (top.length) {
    box.append(el("div", "al-pop-sub", `top ${top.length} (the model's own distribution)`));
    const t = el("table", "al-pop-top");
    row(t, ["", "piece", "p", "kept"], "al-pop-th");
    top.forEach((c, i) => {
      row(
        t,
        // null: not known here (a backend that does not hold the logits)
        [String(i + 1), showPiece(c.piece), fmtP(c.p), c.kept == null ? "—" : c.kept ? "yes" : "no"],
        c.id === ev.id ? "al-chosen" : null,
      );
    });
    box.append(t);
  }
  if (ev.src) box.append(el("div", "al-pop-sub", `sent by ${ev.src}`));
}

function showPopover(span) {
  const ev = span._al;
  if (!ev) return;
  const box = popoverEl();
  if (popoverFor !== span) fillPopover(box, ev);
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
const TAB_EVENTS = new Set(["run_start", "context", "prefill", "model_end"]);

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

// The seed's two tabs beside the step cards, from the events the run already sends: Model (what
// ran and, per step, its prefill and decode) and Context (the prompt as the model last read it, the
// part its step added marked, and the tokens it used of the model's limit). Left out: per-role
// token counts (the context event counts messages per role, not tokens) and attachment kinds.
class RunTabs {
  constructor() {
    this.bar = el("div", "al-tabs");
    this.bar.setAttribute("role", "tablist");
    this.buttons = {};
    this.panes = {};
    for (const [key, label] of [
      ["steps", "Steps"],
      ["model", "Model"],
      ["context", "Context"],
    ]) {
      const button = el("button", "al-tab", label);
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
    this.table = el("table", "al-step-table");
    const head = el("tr");
    for (const h of ["step", "prefill tokens", "prefill ms", "tokens written", "decode ms", "tokens/s"])
      head.append(el("th", null, h));
    this.table.append(head);
    this.rows = new Map();
    this.panes.model.append(this.modelFacts, this.table);
    this.panes.context.append(el("div", "al-note", "The context appears when a step starts."));
    this.select("steps");
  }

  select(key) {
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
      kv(this.modelFacts, "model", ev.model);
      kv(this.modelFacts, "family", ev.family);
      kv(this.modelFacts, "harness", ev.harness);
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
    }
  }

  drawContext(ev) {
    const pane = this.panes.context;
    pane.replaceChildren();
    const facts = el("div", "al-run");
    kv(facts, "step", String(ev.step));
    kv(facts, "tokens", `${fmtNum(ev.n_tokens)} of ${fmtNum(ev.context_length)}`);
    const meter = el("div", "al-meter");
    const used = el("div", "al-meter-used");
    const share = ev.context_length > 0 ? Math.min(1, ev.n_tokens / ev.context_length) : 0;
    used.style.width = `${(100 * share).toFixed(2)}%`;
    meter.append(used);
    meter.title = `${ev.n_tokens} of ${ev.context_length} tokens`;
    const prompt = String(ev.prompt || "");
    const cut = Math.max(0, Math.min(prompt.length, ev.added_from || 0));
    const pre = el("pre", "al-pre al-context-text");
    const added = el("mark", "al-added", prompt.slice(cut));
    added.title = `What step ${ev.step} added`;
    pre.append(prompt.slice(0, cut), added);
    pane.append(facts, meter, pre);
  }
}

// The renderer: one per panel. push() queues events; they are drawn together at the next animation
// frame, tokens appended through DocumentFragments, nothing read back from layout while drawing.

export class Renderer {
  constructor(root, options) {
    const o = options || {};
    this.root = root;
    this.show = o.show && o.show.size ? o.show : null;
    this.sourcePattern = o.sourcePattern || null;
    this.onDecision = o.onDecision || null;
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
    this.header = el("div", "al-header");
    this.stepsBox = el("div", "al-steps");
    this.endBox = el("div", "al-end");
    this.tabs = new RunTabs();
    this.tabs.panes.steps.append(this.stepsBox);
    const { steps, model, context } = this.tabs.panes;
    this.root.append(this.header, this.tabs.bar, steps, model, context, this.endBox);
    this.legendShown = false;
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
      if (this.show && !this.show.has(ev.type) && !ALWAYS_SHOWN.has(ev.type)) continue;
      try {
        this.draw(ev, open);
      } catch (err) {
        this.drawError({
          message: {
            en: `Cannot draw a ${ev.type} event: ${err}`,
            zh: `無法顯示 ${ev.type} 事件：${err}`,
          },
        });
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
      const summary = el("summary", "al-step-title", key === "-" ? "Run" : `Step ${key}`);
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

  drawRunStart(ev) {
    this.header.replaceChildren();
    const line = el("div", "al-run");
    kv(line, "model", ev.model);
    kv(line, "family", ev.family);
    kv(line, "harness", ev.harness);
    kv(line, "run", ev.run_id);
    this.header.append(line);
    const tools = el("div", "al-run");
    kv(
      tools,
      "tools",
      Array.isArray(ev.tools) && ev.tools.length
        ? ev.tools.map((t) => (typeof t === "string" ? t : t.name || JSON.stringify(t))).join(", ")
        : "none",
    );
    this.header.append(tools);
    if (ev.settings && typeof ev.settings === "object") {
      const s = el("div", "al-run al-settings");
      for (const [k, v] of Object.entries(ev.settings)) {
        if (k === "tools") continue; // the line above names them
        kv(s, k, typeof v === "object" ? JSON.stringify(v) : String(v));
      }
      this.header.append(s);
    }
    if (ev.src) this.header.append(sourceLink(ev.src, this.sourcePattern));
  }

  drawContext(ev) {
    const d = el("details", "al-box al-context");
    const s = el("summary", "al-title");
    s.append(el("span", null, "Context"));
    const facts = el("span", "al-facts");
    kv(
      facts,
      "tokens",
      ev.context_length
        ? `${fmtNum(ev.n_tokens)} / ${fmtNum(ev.context_length)}`
        : fmtNum(ev.n_tokens),
    );
    if (ev.roles && typeof ev.roles === "object") {
      kv(
        facts,
        "roles",
        Object.entries(ev.roles)
          .map(([r, n]) => `${r} ${n}`)
          .join(", "),
      );
    }
    if (ev.media_tokens && !(typeof ev.media_tokens === "object" && !Object.keys(ev.media_tokens).length))
      kv(
        facts,
        "media tokens",
        typeof ev.media_tokens === "object"
          ? JSON.stringify(ev.media_tokens)
          : fmtNum(ev.media_tokens),
      );
    const prompt = typeof ev.prompt === "string" ? ev.prompt : asText(ev.prompt);
    const from = Math.max(0, Math.min(prompt.length, Number(ev.added_from) || 0));
    kv(facts, "new this step", `${fmtNum(prompt.length - from)} characters`);
    s.append(facts);
    d.append(s);
    // The prompt can be long: it is put in the page only when the reader opens it.
    d.addEventListener("toggle", () => {
      if (!d.open || d._built) return;
      d._built = true;
      const pre = el("pre", "al-prompt");
      pre.append(document.createTextNode(prompt.slice(0, from)));
      const mark = el("mark", "al-added", prompt.slice(from));
      mark.title = "Added in this step";
      pre.append(mark);
      d.append(pre);
    });
    this.place(ev, d);
  }

  drawRequest(ev) {
    const d = el("details", "al-box al-request");
    d.append(el("summary", "al-title", "Request pi sent to the model"));
    d.addEventListener("toggle", () => {
      if (!d.open || d._built) return;
      d._built = true;
      d.append(el("pre", "al-pre", asText(ev.payload)));
    });
    this.place(ev, d);
  }

  drawPrefill(ev) {
    const line = el("div", "al-line al-prefill");
    line.append(el("span", "al-title", "Prefill"));
    // The tokens the cache kept from the last step were not computed again (chapter 8).
    // reused is null where the backend cannot tell (a vLLM server keeps its own prefix cache).
    const reused = ev.reused || 0;
    if (ev.reused === null || ev.reused === undefined) kv(line, "tokens", fmtNum(ev.n_tokens));
    else kv(line, "computed", `${fmtNum(ev.n_tokens - reused)} of ${fmtNum(ev.n_tokens)} tokens` +
      (reused ? ` (${fmtNum(reused)} reused)` : ""));
    kv(line, "ms", fmtNum(ev.ms));
    if (typeof ev.encode_ms === "number") kv(line, "encoders ms", fmtNum(ev.encode_ms)); // media (chapter 7)
    this.place(ev, line);
  }

  legend() {
    if (this.legendShown) return;
    this.legendShown = true;
    const box = el("div", "al-legend");
    box.append(el("span", "al-k", "p of each token:"));
    for (const bin of P_BINS) box.append(el("span", `al-tok ${bin.cls}`, bin.label));
    box.append(el("span", "al-hint", "Hover, click or focus a token (then ← →) for its details."));
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
      st.stream.setAttribute(
        "aria-label",
        "Generated tokens. Use the arrow keys to inspect each token.",
      );
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
      this.legendMark("al-drafted", "drafted: the drafter's guess, kept by the model (chapter 10)");
    }
    if (ev.forced) {
      cls += " al-forced";
      this.legendMark("al-forced", "forced: written by the harness, scored by the model");
    }
    span.className = cls;
    // A special token shows its piece; a token that is part of a character split across byte tokens
    // has no text of its own yet and is drawn as a dot by the CSS.
    const text = ev.special ? String(ev.piece ?? "") : ev.text || "";
    span.textContent = text;
    span._al = ev;
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

  drawModelEnd(ev, open) {
    const st = this.step(ev.step);
    this.commit(st);
    st.seg = null;
    st.segChannel = null;
    open.delete(st);
    const line = el("div", "al-line al-model-end");
    line.append(el("span", "al-title", "Model done"));
    kv(line, "finish", ev.finish);
    if (ev.stop_piece) kv(line, "stop", ev.stop_piece);
    kv(line, "tokens", fmtNum(ev.n_tokens));
    kv(line, "decode ms", fmtNum(ev.decode_ms));
    kv(line, "tok/s", fmtNum(ev.tok_per_s));
    if (ev.mtp && typeof ev.mtp === "object") {
      kv(
        line,
        "MTP",
        Object.entries(ev.mtp)
          .map(([k, v]) => `${k} ${v}`)
          .join(", "),
      );
      // The figure drafting is for: tokens per forward pass of the model (1.0 without a drafter).
      if (ev.mtp.forwards > 0)
        kv(line, "tokens per pass", (ev.n_tokens / ev.mtp.forwards).toFixed(2));
    }
    if (ev.usage) kv(line, "usage", asText(ev.usage).replace(/\s+/g, " "));
    if (ev.raw) {
      const d = el("details", "al-raw");
      d.append(el("summary", null, "raw output"));
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
    title.append("Tool call ", el("code", null, ev.name || "?"));
    kv(title, "id", ev.call_id);
    box.append(title, drawArgs(ev.args));
    if (ev.error) box.append(el("div", "al-error-text", asText(ev.error)));
    this.place(ev, box);
  }

  drawPermission(ev) {
    const box = el("div", "al-box al-permission");
    const title = el("div", "al-title");
    title.append("Permission for call ", el("code", null, ev.call_id));
    const approve = el("button", "al-btn al-approve", "Approve");
    const deny = el("button", "al-btn al-deny", "Deny");
    approve.type = deny.type = "button";
    const note = el(
      "span",
      "al-note-inline",
      this.onDecision ? "The run waits for your decision." : "Waiting for the decision…",
    );
    const live = Boolean(this.onDecision);
    approve.disabled = deny.disabled = !live;
    const decide = (yes) => {
      approve.disabled = deny.disabled = true;
      note.textContent = "Sending…";
      Promise.resolve(this.onDecision(ev.call_id, yes)).catch((err) => {
        note.textContent = `Not sent: ${err}`;
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
    const by = ev.by === "auto" ? " automatically (auto-approve)" : ev.by ? ` by ${ev.by}` : "";
    const text = `${ev.approved ? "Approved" : "Denied"}${by}`;
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
      el("span", "al-title", "Decision"),
      el("span", null, `${text} (call ${ev.call_id})`),
    );
    this.place(ev, line);
  }

  drawToolResult(ev) {
    const box = el("div", "al-box al-tool-result" + (ev.is_error ? " al-is-error" : ""));
    const title = el("div", "al-title");
    title.append(ev.is_error ? "Tool error " : "Tool result ", el("code", null, ev.name || "?"));
    kv(title, "id", ev.call_id);
    kv(title, "ms", fmtNum(ev.ms));
    box.append(title, el("pre", "al-pre", asText(ev.output)));
    this.place(ev, box);
  }

  drawRunEnd(ev) {
    this.ended = true;
    // A permission still open when the run ended can no longer be answered: say so, buttons off.
    for (const p of this.permissions.values()) {
      if (p.box.classList.contains("al-approved") || p.box.classList.contains("al-denied")) continue;
      p.approve.disabled = p.deny.disabled = true;
      p.note.textContent = "Not answered: the run ended first.";
      p.box.classList.add("al-unanswered");
    }
    const box = el("div", "al-box al-run-end");
    const title = el("div", "al-title", "Run ended");
    kv(title, "stop reason", ev.stop_reason);
    kv(title, "steps", fmtNum(ev.steps));
    kv(title, "ms", fmtNum(ev.ms));
    box.append(title);
    if (ev.final !== null && ev.final !== undefined && ev.final !== "") {
      box.append(el("div", "al-k", "Final answer"), el("div", "al-final", asText(ev.final)));
    }
    if (ev.src) box.append(sourceLink(ev.src, this.sourcePattern));
    this.endBox.append(box);
  }

  drawError(ev) {
    const box = el("div", "al-box al-error");
    box.setAttribute("role", "alert");
    const m =
      ev.message && typeof ev.message === "object" ? ev.message : { en: asText(ev.message) };
    const en = el("div", "al-error-text", m.en || "");
    en.lang = "en";
    box.append(el("div", "al-title", "Error"), en);
    if (m.zh) {
      const zh = el("div", "al-error-text", m.zh);
      zh.lang = "zh-Hant";
      box.append(zh);
    }
    if (ev.detail) {
      const d = el("details", "al-raw");
      d.append(el("summary", null, "detail"), el("pre", "al-pre", asText(ev.detail)));
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
