/* panel/recording.js: reads a loop panel's recording, the JSON Lines file its data-replay names
   (one event per line, exactly as the run streamed them). The replay player draws its events; the
   live form starts from its run_start's settings. Leaves out: pacing and drawing (replay.js), and
   the stage panels' recordings (stages/stage.js), which are single JSON answers. */

import { parseEvent } from "../api.js";

// The recording's URL: data-replay, which the book's hook has made page-relative; null without one.
export function replayURL(root) {
  const value = root.dataset.replay;
  return value ? new URL(value, location.href).href : null;
}

// The recording's text, {text}; or {status} when the server refused it, {err} when none answered.
export async function fetchRecording(url) {
  try {
    const r = await fetch(url, { cache: "no-cache" });
    if (!r.ok) return { status: r.status };
    return { text: await r.text() };
  } catch (err) {
    return { err };
  }
}

// JSON Lines to events, {events}; or {line, err} for the first line that is not JSON (blank lines
// are skipped).
export function parseRecording(text) {
  const events = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    try {
      events.push(JSON.parse(line));
    } catch (err) {
      return { line: i + 1, err };
    }
  }
  return { events };
}

// The recorded run's first event, run_start (its model, family and settings), or null.
export async function recordedStart(root) {
  const url = replayURL(root);
  if (!url) return null;
  const got = await fetchRecording(url);
  if (typeof got.text !== "string") return null;
  const first = parseEvent(got.text.split("\n", 1)[0]);
  return first && first.type === "run_start" ? first : null;
}
