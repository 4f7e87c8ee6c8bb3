/* dom.js: small DOM helpers and the formatters every panel uses. Text always goes in through
   textContent, never as HTML. Leaves out: templates, and any state (nothing here remembers anything
   between calls). */

import { editionOf } from "./edition.js";
import { lang, langSwitch, t } from "./i18n.js";

export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

export function kv(parent, key, value, cls) {
  if (value === undefined || value === null || value === "") return;
  const item = el("span", "al-kv" + (cls ? " " + cls : ""));
  if (key !== null && key !== undefined) item.append(el("span", "al-k", key));
  item.append(el("span", "al-v", value));
  parent.append(item);
}

export function fmtNum(x, digits) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  if (typeof x !== "number") return String(x);
  if (Number.isInteger(x)) return x.toLocaleString("en");
  return x.toFixed(digits === undefined ? 1 : digits);
}

// Any number with thousands separators ("151,936"); a dash for anything else.
export function fmtInt(x) {
  return typeof x === "number" && Number.isFinite(x) ? x.toLocaleString("en") : "—";
}

export function fmtP(p) {
  if (typeof p !== "number" || !Number.isFinite(p)) return "—";
  if (p !== 0 && p < 0.0001) return p.toExponential(2);
  return p.toFixed(4);
}

export function showPiece(piece) {
  // JSON quoting shows spaces, newlines and tabs in a piece.
  return piece === null || piece === undefined ? "—" : JSON.stringify(String(piece));
}

export function asText(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

// A sentence of the string table whose {name} parts are commands or addresses: the text around
// them as text, each of them as a <code> element.
export function codeText(text, codes) {
  const parts = [];
  let at = 0;
  for (const m of text.matchAll(/\{(\w+)\}/g)) {
    if (!(m[1] in codes)) continue;
    if (m.index > at) parts.push(text.slice(at, m.index));
    parts.push(el("code", null, codes[m[1]]));
    at = m.index + m[0].length;
  }
  if (at < text.length) parts.push(text.slice(at));
  return parts;
}

// The probability scale: six bins, from a likely token (faint) to an unlikely one (strong).
export const P_BINS = [
  { min: 0.9, cls: "al-p5", label: "≥ 0.9" },
  { min: 0.7, cls: "al-p4", label: "0.7–0.9" },
  { min: 0.5, cls: "al-p3", label: "0.5–0.7" },
  { min: 0.3, cls: "al-p2", label: "0.3–0.5" },
  { min: 0.1, cls: "al-p1", label: "0.1–0.3" },
  { min: -1, cls: "al-p0", label: "< 0.1" },
];

export function pClass(p) {
  if (typeof p !== "number") return "al-pn";
  for (const bin of P_BINS) if (p >= bin.min) return bin.cls;
  return "al-p0";
}

// The site's base URL, from Material's page config; used when a panel has no data-source-pattern.
export function siteBase() {
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

// The folder of the page's Markdown file, as a URL: "chapters/04-tokens/" (directory URLs) and
// "chapters/04-tokens.html" both come from chapters/04-tokens.md, whose folder is "chapters/". Recordings
// named in a page (data-replay) are relative to it. A zh-Hant page (zh-Hant/chapters/04-tokens/) comes
// from chapters/04-tokens.zh-Hant.md, beside the English (a zh-Hans page under zh-Hans/ from the one generated
// from it): the recordings are one set, at the root.
export function markdownDir() {
  const base = siteBase();
  const here = location.href.split("#")[0].split("?")[0];
  let rel = editionOf(here.startsWith(base) ? here.slice(base.length) : "").rest;
  rel = rel.replace(/index\.html$/, "").replace(/\/$/, "");
  return new URL(rel.includes("/") ? rel.slice(0, rel.lastIndexOf("/") + 1) : "", base).href;
}

export function sourceLink(src, pattern) {
  // src: "agentloop/harnesses/simple_harness.py:120"
  const m = /^(.+?):(\d+)$/.exec(String(src));
  const path = m ? m[1] : String(src);
  const line = m ? m[2] : "1";
  const tpl = pattern || siteBase() + "source/{path}/#L{line}";
  // The file's name and line as the link (an event card carries one); the whole path in its title.
  const name = path.split("/").pop();
  const a = el("a", "al-src", m ? `${name}:${line}` : name);
  a.href = tpl.replace("{path}", path).replace("{line}", line);
  a.title = t("src.title", { where: `${path}:${line}` });
  return a;
}

export function fmtBytes(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return "—";
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)} ${units[i]}`; // 3 digits
}

export function fmtCount(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return "—";
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return String(n);
}

// A panel's top line: a badge (replay or live), a status line saying what the panel is doing, and
// the language switch.
export function statusBar(prefix, badgeClass) {
  const bar = el("div", `${prefix}-bar`);
  const badge = el("span", badgeClass, "…");
  const status = el("span", `${prefix}-status`, t("bar.looking"));
  bar.append(badge, status, langSwitch());
  bar.lang = lang(); // the panel's words are in the reader's language; its data keeps its own
  return { bar, badge, status };
}

// Run init on this page and on every later one: Material's instant navigation swaps pages without
// reloading scripts and announces each new page through its document$.
export function onEveryPage(init) {
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(() => init());
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
}
