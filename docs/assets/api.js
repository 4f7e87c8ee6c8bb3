/* api.js: the one way the panels reach the demo server. It reads the two meta tags the server puts
   in every page it serves (docs/assets/README-panel.md): the token sent back on each POST, and the
   table of API routes, {route_name: [METHOD, path_template]}, built by the server from its own
   routes. No other file holds a path of the API. A page without the table is the static book: it
   replays only, and nothing here sends a request to /api. Leaves out: retries, and any path the
   server did not list. */

import { t, tableError } from "./i18n.js";

export const TOKEN_HEADER = "X-Agentloop-Token"; // required on every POST
const TOKEN_META = "agentloop-token"; // <meta name="agentloop-token" content="...">
// <meta name="agentloop-api" content='{"status": ["GET", "/api/status"], ...}'>
const API_META = "agentloop-api";
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);
export const MAKE_LIVE_URL = "http://127.0.0.1:8000/"; // where `make serve` puts the demo server

function metaContent(name) {
  const meta = document.querySelector(`meta[name="${name}"]`);
  return meta && meta.content ? meta.content : null;
}

export function pageToken() {
  return metaContent(TOKEN_META);
}

// The route table, or null on a static page (no meta, or one that is not an object of [method,
// path] pairs).
function routes() {
  const text = metaContent(API_META);
  if (!text) return null;
  try {
    const table = JSON.parse(text);
    return table && typeof table === "object" && !Array.isArray(table) ? table : null;
  } catch (_) {
    return null;
  }
}

// The path of a named route, its {placeholders} filled from params; an Error names a route the
// server lacks.
export function url(name, params) {
  const table = routes();
  const route = table && table[name];
  if (!Array.isArray(route) || typeof route[1] !== "string") {
    throw new Error(t("api.no_route", { name: JSON.stringify(name) }));
  }
  return route[1].replace(/\{(\w+)(?::\w+)?\}/g, (_, key) =>
    encodeURIComponent(String((params || {})[key])),
  );
}

// One Server-Sent Event's data as an event object; null for anything else (a broken line is
// skipped).
export function parseEvent(data) {
  try {
    const ev = JSON.parse(data);
    return ev && typeof ev === "object" ? ev : null;
  } catch (_) {
    return null;
  }
}



// An Error for a refused request, carrying the server's `error` event: {type: "error", message:
// {en, zh}}.
function refusal(status, data) {
  const message =
    data && data.message && data.message.en
      ? data.message
      : tableError("api.refused", { status }).message;
  const err = new Error(message.en);
  err.status = status;
  err.event = { type: "error", message, detail: data && data.detail };
  return err;
}

export async function getJSON(name, params) {
  const path = url(name, params);
  const r = await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" });
  const type = r.headers.get("content-type") || "";
  const data = type.includes("json") ? await r.json().catch(() => null) : null;
  if (!r.ok) throw refusal(r.status, data);
  if (data === null) throw new Error(t("api.no_json", { path, status: r.status }));
  return data;
}

export async function postJSON(name, params, body) {
  const headers = { "Content-Type": "application/json", Accept: "application/json" };
  const token = pageToken();
  if (token) headers[TOKEN_HEADER] = token;
  const r = await fetch(url(name, params), {
    method: "POST",
    headers,
    body: JSON.stringify(body || {}),
    cache: "no-store",
  });
  const data = await r.json().catch(() => null);
  if (!r.ok) throw refusal(r.status, data);
  return data || {};
}

// A named event stream. The caller closes it in onerror: one whose server is gone reconnects for
// ever.
export function openEvents(name, params) {
  return new EventSource(url(name, params));
}

let probe = null;

// Live or replay, decided once per page for every panel. Live only where the page carries the route
// table and the server's status answers; a static page asks nothing. A server with no model loaded
// (its last load failed: status.ok false) is live too: its panels say so, offer the model menu, and
// run pi's own models, which load nothing here.
export function probeServer() {
  if (probe) return probe;
  probe = (async () => {
    if (location.protocol === "file:") return { mode: "file" };
    if (!routes()) return { mode: "replay", published: !LOOPBACK.has(location.hostname) };
    try {
      const status = await getJSON("status");
      if (status && typeof status === "object") return { mode: "live", status };
    } catch (_) {
      /* no server: replay */
    }
    return { mode: "replay", published: false };
  })();
  return probe;
}
