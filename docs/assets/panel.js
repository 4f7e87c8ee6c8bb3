/* agentloop panels: draw a run's events (the vocabulary in agentloop/events.py), live from the demo server
   or replayed from a recording. Plain JavaScript, no framework, nothing fetched but the page's own origin.

   A chapter embeds:  <div class="agentloop-panel" data-replay="runs/chapter1.jsonl" data-mode="loop"></div>
   Attributes (all optional but data-replay):
     data-replay          the recording (JSON Lines, one event per line); the book's hook makes it page-relative
     data-mode            "loop": the whole run (the only mode so far; stage panels may add others)
     data-show            comma-separated event types to draw, e.g. "token" or "context,prefill"; default all
     data-question        the question the live form starts with
     data-autoplay        "true": start the replay at once
     data-source-pattern  URL of a source line, with {path} and {line}; the hook adds it
   The API the live mode expects from the demo server is in docs/assets/README-panel.md. */
(function () {
  "use strict";

  // The demo server's API, on the page's own origin. Keep in step with docs/assets/README-panel.md.
  const API = {
    status: "/api/status", // GET  -> {ok, model?, family?, harness?, defaults?}
    runs: "/api/runs", // POST {question, settings} -> {run_id}
    events: (runId) => `/api/runs/${encodeURIComponent(runId)}/events`, // GET, Server-Sent Events
    decision: (runId) => `/api/runs/${encodeURIComponent(runId)}/decision`, // POST {call_id, approve}
    stop: (runId) => `/api/runs/${encodeURIComponent(runId)}/stop`, // POST {}
    // GET -> {models: [{id, kind, family, downloaded, bytes, parameters, size, description: {en, zh}, default,
    // current}], current}
    models: "/api/models",
    load: "/api/models/load", // POST {model} -> 202 {ok, load_id, model}; 409 while a run or a load is going
    loadEvents: "/api/models/load/events", // GET, SSE: load_start, family, download*, loading, then ready | error
  };
  const TOKEN_HEADER = "X-Agentloop-Token"; // required on every POST
  const TOKEN_META = "agentloop-token"; // <meta name="agentloop-token" content="..."> the server injects
  const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);
  const MAKE_LIVE_URL = "http://127.0.0.1:8000/";
  // One model serves every tab: a live page asks GET /api/status this often while it is visible, so a switch
  // made in another tab shows here within a few seconds.
  const STATUS_POLL_MS = 3000;
  const MENU_STALE_MS = 10000; // the model menu is asked again when opened after this long

  // Settings the live form sends, as the harness names them. Empty number fields are left out, so the server
  // uses its own defaults (the family's recommended sampling) rather than numbers made up here.
  const SETTINGS = [
    { key: "max_steps", label: "Max steps", type: "int" },
    { key: "max_new_tokens", label: "Max tokens per step", type: "int" },
    { key: "temperature", label: "Temperature", type: "float", step: "0.05" },
    { key: "top_p", label: "Top-p", type: "float", step: "0.05" },
    { key: "top_k", label: "Top-k (0 = no limit)", type: "int" },
    { key: "thinking", label: "Thinking", type: "bool", fallback: false },
    { key: "use_tools", label: "Use tools", type: "bool", fallback: true },
    { key: "auto_approve", label: "Auto-approve tool calls", type: "bool", fallback: false },
    { key: "mtp", label: "MTP (Gemma 4: a drafter guesses)", type: "bool", fallback: false },
  ];

  // Replay pacing at 1x. Tokens take their step's real decode time per token, prefill and tool results their
  // own ms; these are the fallbacks when a recording has no timing for an event.
  const PACE = { token: 20, decision: 600, other: 150, max: 1500 };

  // ---------------------------------------------------------------------------------------------------
  // Small DOM helpers: text always goes in through textContent, never as HTML.

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function kv(parent, key, value, cls) {
    if (value === undefined || value === null || value === "") return;
    const item = el("span", "al-kv" + (cls ? " " + cls : ""));
    item.append(el("span", "al-k", key), el("span", "al-v", value));
    parent.append(item);
  }

  function fmtNum(x, digits) {
    if (x === null || x === undefined || Number.isNaN(x)) return "—";
    if (typeof x !== "number") return String(x);
    if (Number.isInteger(x)) return x.toLocaleString("en");
    return x.toFixed(digits === undefined ? 1 : digits);
  }

  function fmtP(p) {
    if (p === null || p === undefined) return "—";
    if (p !== 0 && p < 0.0001) return p.toExponential(2);
    return p.toFixed(4);
  }

  function showPiece(piece) {
    // JSON quoting shows spaces, newlines and tabs in a piece.
    return piece === null || piece === undefined ? "—" : JSON.stringify(String(piece));
  }

  function asText(value) {
    if (value === null || value === undefined) return "";
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  // The probability scale: six bins, from a likely token (faint) to an unlikely one (strong).
  const P_BINS = [
    { min: 0.9, cls: "al-p5", label: "≥ 0.9" },
    { min: 0.7, cls: "al-p4", label: "0.7–0.9" },
    { min: 0.5, cls: "al-p3", label: "0.5–0.7" },
    { min: 0.3, cls: "al-p2", label: "0.3–0.5" },
    { min: 0.1, cls: "al-p1", label: "0.1–0.3" },
    { min: -1, cls: "al-p0", label: "< 0.1" },
  ];

  function pClass(p) {
    if (typeof p !== "number") return "al-pn";
    for (const bin of P_BINS) if (p >= bin.min) return bin.cls;
    return "al-p0";
  }

  // The site's base URL, from Material's page config; used when a panel has no data-source-pattern.
  function siteBase() {
    const config = document.getElementById("__config");
    if (config) {
      try {
        return new URL(JSON.parse(config.textContent).base + "/", location.href).href;
      } catch (_) {
        /* fall through */
      }
    }
    return new URL("./", location.href).href;
  }

  function sourceLink(src, pattern) {
    // src: "agentloop/harnesses/simple_harness.py:120"
    const m = /^(.+?):(\d+)$/.exec(String(src));
    const path = m ? m[1] : String(src);
    const line = m ? m[2] : "1";
    const tpl = pattern || siteBase() + "source/{path}/#L{line}";
    const a = el("a", "al-src", m ? `${path}:${line}` : path);
    a.href = tpl.replace("{path}", path).replace("{line}", line);
    a.title = "The line that sent this event";
    return a;
  }

  // ---------------------------------------------------------------------------------------------------
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
    row(facts, ["logprob", typeof ev.logprob === "number" ? ev.logprob.toFixed(3) : "—"]);
    row(facts, ["rank", fmtNum(ev.rank)]);
    row(facts, ["p_sampled", fmtP(ev.p_sampled)]);
    row(facts, ["kept", ev.kept === null || ev.kept === undefined ? "—" : `${fmtNum(ev.kept)} candidates`]);
    box.append(facts);
    const top = Array.isArray(ev.top) ? ev.top : [];
    if (top.length) {
      box.append(el("div", "al-pop-sub", `top ${top.length} (the model's own distribution)`));
      const t = el("table", "al-pop-top");
      row(t, ["", "piece", "p", "kept"], "al-pop-th");
      top.forEach((c, i) => {
        row(t, [String(i + 1), showPiece(c.piece), fmtP(c.p), c.kept ? "yes" : "no"],
          c.id === ev.id ? "al-chosen" : null);
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

  function hidePopover() {
    if (popover) popover.hidden = true;
    if (popoverFor) popoverFor.removeAttribute("aria-describedby");
    popoverFor = null;
  }

  // ---------------------------------------------------------------------------------------------------
  // The renderer: one per panel. push() queues events; they are drawn together at the next animation frame,
  // tokens appended through DocumentFragments, nothing read back from layout while drawing.

  class Renderer {
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
      this.root.append(this.header, this.stepsBox, this.endBox);
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
        if (this.show && !this.show.has(ev.type)) continue;
        try {
          this.draw(ev, open);
        } catch (err) {
          this.drawError({ message: { en: `Cannot draw a ${ev.type} event: ${err}`, zh: `無法顯示 ${ev.type} 事件：${err}` } });
        }
      }
      for (const st of open) this.commit(st);
    }

    draw(ev, open) {
      switch (ev.type) {
        case "run_start": return this.drawRunStart(ev);
        case "step_start": return this.step(ev.step, ev);
        case "context": return this.drawContext(ev);
        case "request": return this.drawRequest(ev);
        case "prefill": return this.drawPrefill(ev);
        case "token": return this.drawToken(ev, open);
        case "delta": return this.drawDelta(ev, open);
        case "model_end": return this.drawModelEnd(ev, open);
        case "tool_call": return this.drawToolCall(ev);
        case "permission": return this.drawPermission(ev);
        case "decision": return this.drawDecision(ev);
        case "tool_result": return this.drawToolResult(ev);
        case "run_end": return this.drawRunEnd(ev);
        case "error": return this.drawError(ev);
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
        st = { card, summary, body, stream: null, seg: null, segChannel: null, line: null, spans: [] };
        this.steps.set(key, st);
      }
      if (startEvent && startEvent.src) st.summary.append(" ", sourceLink(startEvent.src, this.sourcePattern));
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
      kv(tools, "tools", Array.isArray(ev.tools) && ev.tools.length ? ev.tools.map((t) => (typeof t === "string" ? t : t.name || JSON.stringify(t))).join(", ") : "none");
      this.header.append(tools);
      if (ev.settings && typeof ev.settings === "object") {
        const s = el("div", "al-run al-settings");
        for (const [k, v] of Object.entries(ev.settings)) kv(s, k, typeof v === "object" ? JSON.stringify(v) : String(v));
        this.header.append(s);
      }
      if (ev.src) this.header.append(sourceLink(ev.src, this.sourcePattern));
    }

    drawContext(ev) {
      const d = el("details", "al-box al-context");
      const s = el("summary", "al-title");
      s.append(el("span", null, "Context"));
      const facts = el("span", "al-facts");
      kv(facts, "tokens", ev.context_length ? `${fmtNum(ev.n_tokens)} / ${fmtNum(ev.context_length)}` : fmtNum(ev.n_tokens));
      if (ev.roles && typeof ev.roles === "object") {
        kv(facts, "roles", Object.entries(ev.roles).map(([r, n]) => `${r} ${n}`).join(", "));
      }
      if (ev.media_tokens) kv(facts, "media tokens", typeof ev.media_tokens === "object" ? JSON.stringify(ev.media_tokens) : fmtNum(ev.media_tokens));
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
      const reused = ev.reused || 0;
      kv(line, "computed", `${fmtNum(ev.n_tokens - reused)} of ${fmtNum(ev.n_tokens)} tokens` +
        (reused ? ` (${fmtNum(reused)} reused)` : ""));
      kv(line, "ms", fmtNum(ev.ms));
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
      this.legendBox.insertBefore(el("span", `al-tok ${cls}`, label), this.legendBox.querySelector(".al-hint"));
    }

    // The output area of a step: channels as segments, tokens as spans inside them.
    stream(st) {
      if (!st.stream) {
        st.stream = el("div", "al-stream");
        st.stream.tabIndex = 0;
        st.stream.setAttribute("aria-label", "Generated tokens. Use the arrow keys to inspect each token.");
        st.stream._alStep = st;
        st.body.append(st.stream);
        this.legend();
      }
      return st.stream;
    }

    // Tokens go into line blocks, one per line of output (a block ends after a token that ends with a
    // newline). Appending to the last line then lays out that line only, not the whole reply, which keeps a
    // long live run cheap frame after frame. New lines wait in `pending`, tokens for a line already in the page
    // in `frag`; commit() puts both in the page once per flush.
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
      // A special token shows its piece; a token that is part of a character split across byte tokens has
      // no text of its own yet and is drawn as a dot by the CSS.
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
        kv(line, "MTP", Object.entries(ev.mtp).map(([k, v]) => `${k} ${v}`).join(", "));
        // The figure drafting is for: tokens per forward pass of the model (1.0 without a drafter).
        if (ev.mtp.forwards > 0) kv(line, "tokens per pass", (ev.n_tokens / ev.mtp.forwards).toFixed(2));
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
      box.append(title, el("pre", "al-pre", asText(ev.args)));
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
      const note = el("span", "al-note-inline", this.onDecision ? "The run waits for your decision." : "Waiting for the decision…");
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
      const text = `${ev.approved ? "Approved" : "Denied"}${ev.by ? " by " + ev.by : ""}`;
      if (p) {
        p.approve.disabled = p.deny.disabled = true;
        (ev.approved ? p.approve : p.deny).classList.add("al-chosen");
        p.note.textContent = text;
        p.box.classList.add(ev.approved ? "al-approved" : "al-denied");
        if (ev.src) p.box.append(sourceLink(ev.src, this.sourcePattern));
        return;
      }
      const line = el("div", "al-line al-decision");
      line.append(el("span", "al-title", "Decision"), el("span", null, `${text} (call ${ev.call_id})`));
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
      const m = ev.message && typeof ev.message === "object" ? ev.message : { en: asText(ev.message) };
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
  function wireTokens(view) {
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

  // ---------------------------------------------------------------------------------------------------
  // Talking to the demo server.

  function pageToken() {
    const meta = document.querySelector(`meta[name="${TOKEN_META}"]`);
    return meta && meta.content ? meta.content : null;
  }

  let statusProbe = null;

  // Live only where a demo server can be: the page's own origin, on this machine (or a page it served).
  function probeServer() {
    if (statusProbe) return statusProbe;
    statusProbe = (async () => {
      if (location.protocol === "file:") return { mode: "file" };
      if (!pageToken() && !LOOPBACK.has(location.hostname)) return { mode: "replay", published: true };
      try {
        const r = await fetch(API.status, { headers: { Accept: "application/json" }, cache: "no-store" });
        const type = r.headers.get("content-type") || "";
        if (r.ok && type.includes("json")) {
          const status = await r.json();
          if (status && status.ok !== false) return { mode: "live", status };
        }
      } catch (_) {
        /* no server: replay */
      }
      return { mode: "replay", published: false };
    })();
    return statusProbe;
  }

  async function postJSON(url, body) {
    const headers = { "Content-Type": "application/json", Accept: "application/json" };
    const token = pageToken();
    if (token) headers[TOKEN_HEADER] = token;
    const r = await fetch(url, { method: "POST", headers, body: JSON.stringify(body || {}), cache: "no-store" });
    let data = null;
    try {
      data = await r.json();
    } catch (_) {
      data = null;
    }
    if (!r.ok) {
      // The server answers a refused request with an `error` event: {type: "error", message: {en, zh}}.
      const message = data && data.message && data.message.en ? data.message : {
        en: `The demo server refused the request (HTTP ${r.status}).`,
        zh: `示範伺服器拒絕了這個請求（HTTP ${r.status}）。`,
      };
      const err = new Error(message.en);
      err.status = r.status;
      err.event = { type: "error", message, detail: data && data.detail };
      throw err;
    }
    return data || {};
  }

  async function getJSON(url) {
    const r = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" });
    const type = r.headers.get("content-type") || "";
    if (!r.ok || !type.includes("json")) throw new Error(`${url} answered HTTP ${r.status}`);
    return r.json();
  }

  function fmtBytes(n) {
    if (typeof n !== "number" || !Number.isFinite(n)) return "—";
    const units = ["B", "kB", "MB", "GB", "TB"];
    let i = 0;
    while (n >= 1000 && i < units.length - 1) {
      n /= 1000;
      i++;
    }
    return i === 0 ? `${n} B` : `${n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)} ${units[i]}`; // 3 digits
  }

  function fmtCount(n) {
    if (typeof n !== "number" || !Number.isFinite(n)) return "—";
    if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
    if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
    if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
    return String(n);
  }

  const KIND_LABEL = { tiny: "tiny, random weights", trained: "tiny, trained toy", real: "real" };

  // "0.8B, not downloaded", "0.8B, 1.75 GB", "3.7M parameters, 7.48 MB".
  function sizeText(m) {
    const parts = [];
    if (m.size) parts.push(String(m.size));
    else if (typeof m.parameters === "number") parts.push(`${fmtCount(m.parameters)} parameters`);
    if (m.downloaded === false) parts.push("not downloaded");
    else if (typeof m.bytes === "number") parts.push(fmtBytes(m.bytes));
    return parts.join(", ");
  }

  function optionLabel(m) {
    const facts = [m.family, KIND_LABEL[m.kind] || m.kind, sizeText(m)].filter(Boolean).join(", ");
    return `${m.id} (${facts})${m.default ? " · default" : ""}`;
  }

  // What a load is doing, from its latest event; `short` for the menu's summary line.
  function loadText(load, short) {
    const ev = load.event || {};
    const model = load.model || "the model";
    if (ev.type === "download") {
      const pct = ev.bytes_total > 0 ? Math.floor((100 * (ev.bytes_done || 0)) / ev.bytes_total) : null;
      if (short) return `downloading ${model}… ${pct === null ? "" : pct + "%"}`.trim();
      const bytes = ev.bytes_total > 0 ? `${fmtBytes(ev.bytes_done || 0)} of ${fmtBytes(ev.bytes_total)}` : "starting";
      const files = ev.files_total > 0 ? `, file ${ev.files_done || 0} of ${ev.files_total}` : "";
      return `Downloading ${model} from the Hugging Face Hub: ${bytes}${files}.`;
    }
    if (ev.type === "loading") return short ? `loading ${model}…` : `Loading ${model} into memory…`;
    if (ev.type === "family") {
      return short ? `loading ${model}…` : `${model} is a ${ev.family} model; getting its weights…`;
    }
    return short ? `loading ${model}…` : `Loading ${model}…`;
  }

  // A refusal or a failure, in English and Chinese, in the model menu.
  function showMessage(box, title, message) {
    const m = message && typeof message === "object" ? message : { en: asText(message) };
    const alert = el("div", "al-model-error");
    alert.setAttribute("role", "alert");
    alert.append(el("div", "al-model-error-title", title));
    if (m.en) {
      const en = el("div", "al-error-text", m.en);
      en.lang = "en";
      alert.append(en);
    }
    if (m.zh) {
      const zh = el("div", "al-error-text", m.zh);
      zh.lang = "zh-Hant";
      alert.append(zh);
    }
    box.replaceChildren(alert);
  }

  // ---------------------------------------------------------------------------------------------------
  // One model for every tab. The page's live panels share one view of the server: the latest GET /api/status,
  // asked every few seconds while the page is visible (a switch made in another tab shows on the next ask),
  // the model menu (GET /api/models, asked once and again when stale), and the load stream, followed while a
  // load is under way, whichever tab started it. Material's instant navigation closes the stream with the
  // panels of the page left behind; the next page's panels pick it up again from its first event.

  const hub = {
    status: null, // the latest /api/status answer
    menu: null, // a promise of the latest /api/models answer
    menuAt: 0,
    source: null, // the load stream, while one is followed
    load: null, // the load as the stream has told it: {model, phase, event, done}
    timer: 0,

    livePanels() {
      return Array.from(panels).filter((p) => p.mode === "live" && !p.destroyed);
    },

    // A live panel joins: the first one brings the status its probe found; asking again at once catches a
    // switch made since (instant navigation keeps the probe's first answer).
    attach(status) {
      if (!this.status && status) this.status = status;
      this.pollSoon(0);
    },

    pollSoon(ms) {
      clearTimeout(this.timer);
      this.timer = 0;
      if (document.visibilityState === "hidden" || !this.livePanels().length) return;
      this.timer = setTimeout(() => this.poll(), ms === undefined ? STATUS_POLL_MS : ms);
    },

    async poll() {
      clearTimeout(this.timer);
      this.timer = 0;
      const seq = (this.seq = (this.seq || 0) + 1);
      let status = null;
      try {
        status = await getJSON(API.status);
      } catch (_) {
        if (seq === this.seq) for (const p of this.livePanels()) p.showGone();
      }
      if (seq !== this.seq) return; // a later ask has answered, or will
      if (status) this.setStatus(status);
      this.pollSoon();
    },

    setStatus(status) {
      const prev = this.status;
      this.status = status;
      if (!prev || prev.model !== status.model) this.menu = null; // sizes and `current` changed
      if (status.loading && !this.source) this.follow();
      // A load this page stopped following (it navigated) and that has ended since: nothing left to show.
      if (!status.loading && !this.source && this.load && !this.load.done) this.load = null;
      for (const p of this.livePanels()) p.applyStatus(status, prev);
    },

    fetchMenu(force) {
      if (force || !this.menu || performance.now() - this.menuAt > MENU_STALE_MS) {
        this.menuAt = performance.now();
        const menu = getJSON(API.models).then((m) => {
          if (!m || !Array.isArray(m.models)) throw new Error(`${API.models} answered no models`);
          return m;
        });
        menu.catch(() => {
          if (this.menu === menu) this.menu = null;
        });
        this.menu = menu;
      }
      return this.menu;
    },

    // POST the switch; the stream then tells every panel how it goes. Throws the server's refusal (409 while a
    // run or a load is going) for the panel that asked to show.
    async loadModel(model) {
      await postJSON(API.load, { model });
      this.loadEvent({ type: "load_start", model });
      this.follow();
    },

    follow() {
      this.closeSource();
      const source = new EventSource(API.loadEvents);
      this.source = source;
      const finish = () => {
        if (this.source === source) this.source = null;
        source.close();
        this.menu = null;
        this.poll(); // the status line, the form's defaults and the menu, at once
      };
      source.onmessage = (e) => {
        const ev = parseEvent(e.data);
        if (!ev) return;
        this.loadEvent(ev);
        if (ev.type === "ready" || ev.type === "error") finish();
      };
      // Closed here too: an EventSource whose server is gone otherwise reconnects for ever.
      source.onerror = () => {
        if (this.source !== source) return;
        if (this.load && !this.load.done) {
          this.loadEvent(errorEvent("The connection to the demo server was lost during the load.",
            "載入期間與示範伺服器的連線中斷了。"));
        }
        finish();
      };
    },

    loadEvent(ev) {
      const model = ev.model || (this.load && this.load.model) || "";
      const done = ev.type === "ready" || ev.type === "error";
      this.load = { model, phase: ev.type, event: ev, done };
      for (const p of this.livePanels()) p.showLoad(this.load);
    },

    closeSource() {
      if (this.source) {
        this.source.close();
        this.source = null;
      }
    },

    stop() {
      clearTimeout(this.timer);
      this.timer = 0;
      this.closeSource();
    },
  };

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") hub.pollSoon(0);
    else {
      clearTimeout(hub.timer);
      hub.timer = 0;
    }
  });

  // ---------------------------------------------------------------------------------------------------
  // A panel: its controls, its renderer, and either a replay or a live run.

  const panels = new Set();

  class Panel {
    constructor(root) {
      this.root = root;
      root._alPanel = this;
      this.timer = 0;
      this.source = null;
      this.runId = null;
      const show = (root.dataset.show || "").split(",").map((s) => s.trim()).filter(Boolean);
      root.classList.add("al-panel", `al-mode-${(root.dataset.mode || "loop").replace(/[^a-z_-]/gi, "")}`);
      root.replaceChildren();
      this.bar = el("div", "al-bar");
      this.badge = el("span", "al-badge al-mode", "…");
      this.status = el("span", "al-status", "Looking for the demo server…");
      this.bar.append(this.badge, this.status);
      this.controls = el("div", "al-controls");
      this.note = el("div", "al-note");
      this.view = el("div", "al-view");
      root.append(this.bar, this.controls, this.note, this.view);
      this.renderer = new Renderer(this.view, {
        show: new Set(show),
        sourcePattern: root.dataset.sourcePattern || null,
      });
      wireTokens(this.view);
      panels.add(this);
      probeServer().then((found) => {
        if (this.destroyed) return;
        if (found.mode === "live") this.startLive(found.status);
        else this.startReplay(found);
      });
    }

    destroy() {
      this.destroyed = true;
      this.closeStream();
      clearTimeout(this.timer);
      this.renderer.reset();
      panels.delete(this);
    }

    closeStream() {
      if (this.source) {
        this.source.close();
        this.source = null;
      }
    }

    // --- replay ---

    replayURL() {
      const value = this.root.dataset.replay;
      return value ? new URL(value, location.href).href : null;
    }

    async startReplay(found) {
      this.mode = "replay";
      this.badge.textContent = "replay";
      this.controls.replaceChildren();
      this.note.replaceChildren();
      this.renderer.onDecision = null;
      if (found.mode === "file") {
        this.status.textContent = "Opened from a file.";
        this.note.append(
          "A browser does not let a page opened from a file read its recorded run. Serve the built book instead: ",
          el("code", null, "python3 -m http.server -d site 8000"), ", or ", el("code", null, "make serve"),
          ", then open ", el("code", null, MAKE_LIVE_URL), ".");
        return;
      }
      this.note.append(
        "This is a recorded run. To run it live on your machine: ", el("code", null, "make serve"),
        ", then open ", el("code", null, MAKE_LIVE_URL),
        found.published ? " (the published book always replays)." : "");
      const url = this.replayURL();
      if (!url) {
        this.status.textContent = "This panel names no recorded run (data-replay).";
        return;
      }
      this.status.textContent = "Loading the recorded run…";
      let text;
      try {
        const r = await fetch(url, { cache: "no-cache" });
        if (!r.ok) {
          this.status.textContent = `Recording missing: ${this.root.dataset.replay} was not found (HTTP ${r.status}).`;
          this.root.classList.add("al-missing");
          return;
        }
        text = await r.text();
      } catch (err) {
        this.status.textContent = `Recording missing: ${this.root.dataset.replay} could not be loaded (${err}).`;
        this.root.classList.add("al-missing");
        return;
      }
      if (this.destroyed) return;
      const events = [];
      const lines = text.split("\n");
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i].trim();
        if (!line) continue;
        try {
          events.push(JSON.parse(line));
        } catch (err) {
          this.status.textContent = `The recording is not valid JSON Lines: line ${i + 1}: ${err.message}`;
          return;
        }
      }
      this.setupReplay(events);
      if (this.root.dataset.autoplay === "true") this.play();
    }

    setupReplay(events) {
      this.events = events;
      this.pos = 0;
      this.playing = false;
      // Per step, the real decode time per token, from that step's model_end.
      this.tokenMs = new Map();
      for (const ev of events) {
        if (ev.type === "model_end" && ev.n_tokens > 0 && typeof ev.decode_ms === "number") {
          this.tokenMs.set(ev.step, ev.decode_ms / ev.n_tokens);
        }
      }
      const play = el("button", "al-btn al-play", "Play");
      const step = el("button", "al-btn al-stepbtn", "Step");
      const restart = el("button", "al-btn al-restart", "Restart");
      const all = el("button", "al-btn al-all", "Show all");
      for (const b of [play, step, restart, all]) b.type = "button";
      const speed = el("select", "al-speed");
      speed.setAttribute("aria-label", "Replay speed");
      for (const [v, label] of [["0.5", "0.5×"], ["1", "1× (recorded pace)"], ["2", "2×"], ["5", "5×"], ["20", "20×"]]) {
        const o = el("option", null, label);
        o.value = v;
        if (v === "1") o.selected = true;
        speed.append(o);
      }
      this.speed = 1;
      speed.addEventListener("change", () => {
        this.speed = Number(speed.value) || 1;
        if (this.playing) {
          clearTimeout(this.timer);
          this.due = performance.now();
          this.tick();
        }
      });
      play.addEventListener("click", () => (this.playing ? this.pause() : this.play()));
      step.addEventListener("click", () => this.stepOnce());
      restart.addEventListener("click", () => this.restart());
      all.addEventListener("click", () => this.showAll());
      this.playBtn = play;
      this.controls.replaceChildren(play, step, restart, all, speed);
      this.updateStatus();
    }

    delayBefore(ev) {
      let ms;
      if (!ev) return 0;
      if (ev.type === "token") ms = this.tokenMs.get(ev.step) ?? PACE.token;
      else if (ev.type === "prefill" || ev.type === "tool_result") ms = typeof ev.ms === "number" ? ev.ms : PACE.other;
      else if (ev.type === "decision") ms = PACE.decision;
      else ms = PACE.other;
      return Math.min(PACE.max, Math.max(0, ms)) / this.speed;
    }

    updateStatus() {
      const n = this.events.length;
      const state = this.pos >= n ? "finished" : this.playing ? "playing" : this.pos ? "paused" : "ready";
      this.status.textContent = `Recorded run: event ${this.pos} of ${n} (${state}).`;
      if (this.playBtn) this.playBtn.textContent = this.playing ? "Pause" : "Play";
    }

    play() {
      if (!this.events) return;
      if (this.pos >= this.events.length) this.restart();
      this.playing = true;
      this.due = performance.now() + this.delayBefore(this.events[this.pos]);
      this.tick();
    }

    // Draw every event whose time has come, then sleep until the next one: the clock, not the timer's
    // resolution, sets the pace, so fast speeds and background tabs catch up in one batch.
    tick() {
      if (!this.playing || this.destroyed) return;
      const now = performance.now();
      const n = this.events.length;
      let drawn = 0;
      while (this.pos < n && this.due <= now) {
        this.renderer.push(this.events[this.pos++]);
        drawn++;
        if (this.pos < n) this.due += this.delayBefore(this.events[this.pos]);
      }
      if (this.pos >= n) {
        this.playing = false;
        this.updateStatus();
        return;
      }
      if (drawn) this.updateStatus();
      this.timer = setTimeout(() => this.tick(), Math.max(0, this.due - now));
    }

    pause() {
      this.playing = false;
      clearTimeout(this.timer);
      this.updateStatus();
    }

    stepOnce() {
      this.pause();
      if (this.pos < this.events.length) {
        this.renderer.push(this.events[this.pos++]);
        this.renderer.flushNow();
      }
      this.updateStatus();
    }

    restart() {
      this.pause();
      this.renderer.reset();
      this.pos = 0;
      this.updateStatus();
    }

    showAll() {
      this.pause();
      this.renderer.pushMany(this.events.slice(this.pos));
      this.pos = this.events.length;
      this.renderer.flushNow();
      this.updateStatus();
    }

    // --- live ---

    startLive(probed) {
      // Instant navigation keeps the first probe's answer: the page's latest status is the hub's.
      const status = hub.status || probed;
      this.mode = "live";
      this.badge.textContent = "live";
      this.note.replaceChildren();
      if (!pageToken()) {
        this.note.append("This page carries no agentloop-token, so the server may refuse to start a run; open the book from the demo server's own address.");
      }
      const defaults = status.defaults && typeof status.defaults === "object" ? status.defaults : {};
      const form = el("form", "al-form");
      const q = el("textarea", "al-question");
      q.name = "question";
      q.rows = 2;
      q.required = true;
      q.placeholder = "Ask a question";
      q.value = this.root.dataset.question || "";
      const qLabel = el("label", "al-field al-field-wide");
      qLabel.append(el("span", null, "Question"), q);
      form.append(qLabel);
      const inputs = {};
      for (const s of SETTINGS) {
        const label = el("label", "al-field" + (s.type === "bool" ? " al-check" : ""));
        const input = el("input");
        input.name = s.key;
        if (s.type === "bool") {
          input.type = "checkbox";
          input.checked = typeof defaults[s.key] === "boolean" ? defaults[s.key] : s.fallback;
          label.append(input, el("span", null, s.label));
        } else {
          input.type = "number";
          input.step = s.step || "1";
          input.min = "0";
          input.placeholder = "server default";
          if (typeof defaults[s.key] === "number") input.value = String(defaults[s.key]);
          label.append(el("span", null, s.label), input);
        }
        inputs[s.key] = input;
        form.append(label);
      }
      this.inputs = inputs;
      const run = el("button", "al-btn al-run", "Run");
      run.type = "submit";
      const stop = el("button", "al-btn al-stop", "Stop");
      stop.type = "button";
      stop.disabled = true;
      const replay = el("button", "al-btn al-show-replay", "Show the recorded run");
      replay.type = "button";
      const buttons = el("div", "al-buttons");
      buttons.append(run, stop);
      if (this.root.dataset.replay) buttons.append(replay);
      form.append(buttons);
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        const settings = {};
        for (const s of SETTINGS) {
          const input = inputs[s.key];
          if (s.type === "bool") settings[s.key] = input.checked;
          else if (input.value !== "") settings[s.key] = s.type === "int" ? parseInt(input.value, 10) : parseFloat(input.value);
        }
        this.startRun(q.value.trim(), settings, run, stop);
      });
      stop.addEventListener("click", () => {
        if (!this.runId) return;
        stop.disabled = true;
        postJSON(API.stop(this.runId), {}).catch((err) => this.renderer.push(err.event || errorEvent(String(err))));
      });
      replay.addEventListener("click", () => {
        this.closeStream();
        this.renderer.reset();
        this.startReplay({ mode: "replay", published: false });
      });
      this.modelMenu = this.buildModelMenu();
      this.controls.replaceChildren(this.modelMenu.details, form);
      this.shown = null;
      this.applyStatus(status, null);
      if (hub.load) this.showLoad(hub.load);
      hub.attach(status);
      this.fillMenu(false);
    }

    // --- live: the model menu ---

    // Compact: a summary naming the model, opening to the select, the entry's description and Load.
    buildModelMenu() {
      const details = el("details", "al-model");
      const summary = el("summary", "al-model-summary");
      const name = el("span", "al-model-name", "…");
      summary.append("Model: ", name);
      const body = el("div", "al-model-body");
      const select = el("select", "al-model-select");
      select.setAttribute("aria-label", "Model");
      const field = el("label", "al-field al-model-field");
      field.append(el("span", null, "Model (one for every tab)"), select);
      const load = el("button", "al-btn al-load", "Load");
      load.type = "button";
      const row = el("div", "al-model-row");
      row.append(field, load);
      const desc = el("div", "al-model-desc");
      const progress = el("div", "al-model-progress");
      progress.hidden = true;
      const bar = el("progress", "al-model-bar");
      bar.max = 1;
      const progressText = el("span", "al-model-progress-text");
      progress.append(bar, progressText);
      const msg = el("div", "al-model-msg");
      msg.setAttribute("role", "status");
      msg.setAttribute("aria-live", "polite");
      body.append(row, desc, progress, msg);
      details.append(summary, body);
      const menu = { details, summary, name, select, load, desc, progress, bar, progressText, msg, entries: [] };
      details.addEventListener("toggle", () => {
        if (details.open) this.fillMenu(false);
      });
      select.addEventListener("change", () => {
        menu.chosen = select.value; // kept across refreshes of the list until the reader picks again
        this.describe();
        this.updateLoadButton();
      });
      load.addEventListener("click", () => this.loadChosen());
      return menu;
    }

    async fillMenu(force) {
      const menu = this.modelMenu;
      let answer;
      try {
        answer = await hub.fetchMenu(force);
      } catch (err) {
        if (this.destroyed || this.modelMenu !== menu) return;
        menu.entries = [];
        menu.select.replaceChildren(el("option", null, "(the model menu is not available)"));
        menu.select.disabled = true;
        menu.desc.replaceChildren(el("div", "al-model-desc-en", `GET ${API.models} did not answer: ${err.message || err}.`));
        this.updateLoadButton();
        return;
      }
      if (this.destroyed || this.modelMenu !== menu) return;
      menu.entries = answer.models.filter((m) => m && typeof m.id === "string");
      const current = (hub.status && hub.status.model) || answer.current || null;
      const options = menu.entries.map((m) => {
        const o = el("option", null, optionLabel(m));
        o.value = m.id;
        return o;
      });
      if (current && !menu.entries.some((m) => m.id === current)) {
        const o = el("option", null, `${current} (loaded from a folder outside the menu)`);
        o.value = current;
        options.unshift(o);
      }
      menu.select.replaceChildren(...options);
      menu.select.disabled = !options.length;
      const want = menu.chosen && options.some((o) => o.value === menu.chosen) ? menu.chosen : current;
      if (want) menu.select.value = want;
      this.describe();
      this.updateLoadButton();
    }

    describe() {
      const menu = this.modelMenu;
      const m = menu.entries.find((e) => e.id === menu.select.value);
      menu.desc.replaceChildren();
      if (!m) return;
      const d = m.description && typeof m.description === "object" ? m.description : {};
      const facts = el("div", "al-model-facts");
      kv(facts, "family", m.family);
      kv(facts, "kind", m.kind);
      kv(facts, "size", sizeText(m));
      if (m.default) facts.append(el("span", "al-badge", "default"));
      if (m.current) facts.append(el("span", "al-badge al-mode", "loaded"));
      menu.desc.append(facts);
      if (d.en) {
        const en = el("div", "al-model-desc-en", d.en);
        en.lang = "en";
        menu.desc.append(en);
      }
      if (d.zh) {
        const zh = el("div", "al-model-desc-zh", d.zh);
        zh.lang = "zh-Hant";
        menu.desc.append(zh);
      }
    }

    updateLoadButton() {
      const menu = this.modelMenu;
      if (!menu) return;
      const s = hub.status || {};
      const chosen = menu.select.value;
      const loading = !!s.loading || !!(hub.load && !hub.load.done);
      menu.load.disabled = menu.select.disabled || !chosen || loading || (chosen === s.model && !loading);
      menu.load.textContent = loading ? "Loading…" : "Load";
    }

    async loadChosen() {
      const menu = this.modelMenu;
      const model = menu.select.value;
      if (!model) return;
      menu.msg.replaceChildren();
      menu.load.disabled = true;
      try {
        await hub.loadModel(model);
      } catch (err) {
        if (this.destroyed || this.modelMenu !== menu) return;
        const ev = err.event || errorEvent(`Could not load ${model}: ${err}`, `無法載入 ${model}：${err}`);
        const title = err.status === 409 ? `Not now (HTTP 409): ${model} was not loaded.` : `${model} was not loaded.`;
        showMessage(menu.msg, title, ev.message);
        this.updateLoadButton();
      }
    }

    // The server's status, on first sight and after each ask: the status line, the summary, the selected model,
    // and (when the model changed, here or in another tab) the form's defaults.
    applyStatus(s, prev) {
      if (this.destroyed || this.mode !== "live" || !this.modelMenu) return;
      const menu = this.modelMenu;
      const who = [s.model, s.family ? `(${s.family})` : null].filter(Boolean).join(" ");
      const following = hub.load && !hub.load.done ? loadText(hub.load, true) : null;
      let line;
      if (following) line = `Live: ${following}`; // the stream's news is the freshest
      else if (s.loading) line = `Live: loading ${s.loading_model || "a model"}…`;
      else if (who) line = `Live: ${who}, on this machine.`;
      else if (s.ok === false || s.model === null) line = "Live: no model is loaded; pick one in the model menu.";
      else line = "Live: the demo server answers.";
      menu.name.textContent = following || (s.loading ? `loading ${s.loading_model || "…"}` : who || "none loaded");
      if (this.shown !== line) {
        this.status.textContent = line;
        this.shown = line;
      }
      this.root.classList.toggle("al-gone", false);
      if (s.error && !s.model && !s.loading) showMessage(menu.msg, "No model is loaded.", s.error);
      if (prev && prev.model !== s.model && s.model) {
        this.applyDefaults(s.defaults);
        menu.chosen = null;
        this.fillMenu(false); // marks the new current model and selects it
      }
      if (!s.loading && hub.load === null) this.hideProgress();
      this.updateLoadButton();
    }

    applyDefaults(defaults) {
      if (!this.inputs || !defaults || typeof defaults !== "object") return;
      for (const s of SETTINGS) {
        const input = this.inputs[s.key];
        if (!input) continue;
        if (s.type === "bool") input.checked = typeof defaults[s.key] === "boolean" ? defaults[s.key] : s.fallback;
        else input.value = typeof defaults[s.key] === "number" ? String(defaults[s.key]) : "";
      }
    }

    showGone() {
      if (this.destroyed || this.mode !== "live") return;
      const line = "Live, but the demo server does not answer now (stopped?). Trying again…";
      this.status.textContent = line;
      this.shown = line;
      this.root.classList.toggle("al-gone", true);
    }

    // The load stream's latest event: a progress bar from download's bytes, "loading…", then ready or error.
    showLoad(load) {
      const menu = this.modelMenu;
      if (this.destroyed || !menu) return;
      const ev = load.event || {};
      if (load.done) {
        this.hideProgress();
        if (ev.type === "ready") {
          const took = typeof ev.ms === "number" ? ` in ${(ev.ms / 1000).toFixed(1)} s` : "";
          menu.msg.replaceChildren(el("div", "al-model-ok", `${load.model} is loaded${took}, for every tab.`));
        } else {
          showMessage(menu.msg, `Loading ${load.model || "the model"} failed.`, ev.message);
        }
        this.updateLoadButton();
        return;
      }
      menu.progress.hidden = false;
      menu.msg.replaceChildren();
      if (ev.type === "download" && ev.bytes_total > 0) {
        menu.bar.max = ev.bytes_total;
        menu.bar.value = Math.min(ev.bytes_done || 0, ev.bytes_total);
      } else if (ev.type === "download" && ev.files_total > 0) {
        menu.bar.max = ev.files_total;
        menu.bar.value = Math.min(ev.files_done || 0, ev.files_total);
      } else {
        menu.bar.removeAttribute("value"); // indeterminate
      }
      menu.progressText.textContent = loadText(load, false);
      menu.name.textContent = loadText(load, true);
      this.shown = `Live: ${loadText(load, true)}`;
      this.status.textContent = this.shown;
      this.root.classList.add("al-loading");
      this.updateLoadButton();
    }

    hideProgress() {
      const menu = this.modelMenu;
      if (!menu) return;
      menu.progress.hidden = true;
      this.root.classList.remove("al-loading");
    }

    async startRun(question, settings, runBtn, stopBtn) {
      if (!question) return;
      this.closeStream();
      this.renderer.reset();
      this.renderer.onDecision = (callId, approve) => postJSON(API.decision(this.runId), { call_id: callId, approve });
      runBtn.disabled = true;
      let started;
      try {
        started = await postJSON(API.runs, { question, settings });
      } catch (err) {
        this.renderer.push(err.event || errorEvent(`Could not start the run: ${err}`, `無法開始執行：${err}`));
        runBtn.disabled = false;
        return;
      }
      if (this.destroyed) return;
      this.runId = started.run_id;
      stopBtn.disabled = false;
      const source = new EventSource(API.events(this.runId));
      this.source = source;
      const finish = () => {
        if (this.source === source) this.source = null;
        source.close();
        runBtn.disabled = false;
        stopBtn.disabled = true;
      };
      source.onmessage = (e) => {
        const ev = parseEvent(e.data);
        if (!ev) return;
        this.renderer.push(ev);
        if (ev.type === "run_end") finish();
      };
      // Closed here: an EventSource whose server is gone otherwise reconnects for ever.
      source.onerror = () => {
        if (this.source !== source) return;
        finish();
        if (!this.renderer.ended) {
          this.renderer.push(errorEvent("The connection to the demo server was lost.", "與示範伺服器的連線中斷了。"));
        }
      };
    }
  }

  // One Server-Sent Event's data as an event object; null for anything else (a broken line is skipped).
  function parseEvent(data) {
    try {
      const ev = JSON.parse(data);
      return ev && typeof ev === "object" ? ev : null;
    } catch (_) {
      return null;
    }
  }

  function errorEvent(en, zh) {
    return { type: "error", message: { en, zh: zh || en } };
  }

  // ---------------------------------------------------------------------------------------------------
  // Start every panel on the page. Material's instant navigation swaps pages without reloading scripts and
  // announces each new page through document$; panels of the page left behind are closed first.

  function initAll() {
    let left = false;
    for (const p of Array.from(panels)) {
      if (!document.body.contains(p.root)) {
        p.destroy();
        left = true;
      }
    }
    if (left) hub.stop(); // the next page's live panels start it again, and follow a load still going
    hidePopover();
    for (const root of document.querySelectorAll(".agentloop-panel")) {
      if (!root._alPanel) new Panel(root);
    }
  }

  window.agentloopPanel = {
    API,
    TOKEN_HEADER,
    TOKEN_META,
    Renderer,
    Panel,
    initAll,
    pageToken,
    probeServer, // live or replay, decided once per page for every panel (stages.js asks here too)
    hub, // the page's shared view of the server: its status, the model menu, the load being followed
    // Draw events into an element with the panel's renderer, synchronously (the bench and the tests use it).
    render(target, events, options) {
      const r = new Renderer(target, options);
      wireTokens(target);
      r.pushMany(events);
      r.flushNow();
      return r;
    },
  };

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(() => initAll());
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", initAll);
  } else {
    initAll();
  }
  window.addEventListener("pagehide", () => {
    for (const p of Array.from(panels)) p.closeStream();
    hub.stop();
  });
  window.addEventListener("pageshow", (e) => {
    if (e.persisted) hub.pollSoon(0); // back from the back-forward cache: ask again at once
  });
})();
