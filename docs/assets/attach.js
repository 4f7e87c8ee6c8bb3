/* attach.js: files for a question (chapter 7). Two pieces, one look:
   - attachControl(root, status): every live loop panel's attach control (drop or pick), with a thumbnail
     for an image, a waveform for a sound and the frames kept for a video. It is folded to one line (open
     where the root has data-attach="true", chapter 7's panels), and that line always says which kinds the
     loaded model cannot read and why, and when the form's harness takes no attachments (since issue 42
     every harness takes them; such a harness's files would not be sent). panel/form.js adds it to every
     live form and calls update(status) when another model is loaded and useHarness(name) when the
     harness switch moves; panel/run-stream.js sends its files with the question and hands it the
     server's answer.
   - the media panel, <div class="agentloop-media" data-replay="runs/a.json runs/b.json"></div>: drop or pick
     a file and see the placeholder tokens it becomes in each family (POST /api/media/expand, live); with no
     server, the recordings (each beside its spec, which names the sample file it sent) replay.
   Its words are the string table's attach.* keys (i18n.js), in the reader's language; the kinds' names are
   model-facts.js's. Leaves out: recording sound or video in the browser, and editing a file before it is
   sent. */

import { pageToken, postJSON, probeServer } from "./api.js";
import { el, fmtBytes, fmtInt, markdownDir, onEveryPage } from "./dom.js";
import { pick, pickZh, t, tableError } from "./i18n.js";
import { kindName } from "./model-facts.js";

// The families' own names, as their makers write them (the server names a family by its key).
const FAMILY_NAMES = { gemma4: "Gemma 4", qwen3_5: "Qwen3.5" };
const MAX_FILES = 4;
const FRAMES_SHOWN = 8;

// -- what a file looks like: a thumbnail, a waveform, frames ------------------------------------------------

function kindOfType(type) {
  const top = String(type || "").split("/")[0];
  return top === "image" || top === "video" ? top : top === "audio" ? "audio" : "file";
}

// A picture of the file: for an image the image (the browser turns it upright by its EXIF, as media.py
// does), for a sound its waveform, for a video its frames at `frames` (seconds; evenly taken if none).
export function preview(blob, kind, frames) {
  const box = el("div", "al-att-preview");
  const source = URL.createObjectURL(blob);
  if (kind === "image") {
    const img = el("img", "al-att-thumb");
    img.alt = "";
    img.src = source;
    box.append(img);
  } else if (kind === "audio") {
    const canvas = el("canvas", "al-att-wave");
    canvas.width = 240;
    canvas.height = 48;
    box.append(canvas);
    drawWaveform(blob, canvas).catch(() => canvas.replaceWith(el("span", "al-note", "—")));
  } else if (kind === "video") {
    const strip = el("div", "al-att-frames");
    box.append(strip);
    drawFrames(source, strip, frames).catch(() => strip.append(el("span", "al-note", "—")));
  }
  return box;
}

async function drawWaveform(blob, canvas) {
  const Context = window.OfflineAudioContext || window.webkitOfflineAudioContext;
  const audio = await new Context(1, 1, 16000).decodeAudioData(await blob.arrayBuffer());
  const samples = audio.getChannelData(0);
  const g = canvas.getContext("2d");
  const { width, height } = canvas;
  g.strokeStyle = getComputedStyle(canvas).color;
  g.beginPath();
  const step = Math.max(1, Math.floor(samples.length / width));
  for (let x = 0; x < width; x++) {
    let lo = 1;
    let hi = -1;
    for (let i = x * step; i < Math.min(samples.length, (x + 1) * step); i++) {
      lo = Math.min(lo, samples[i]);
      hi = Math.max(hi, samples[i]);
    }
    g.moveTo(x + 0.5, ((1 - hi) * height) / 2);
    g.lineTo(x + 0.5, ((1 - lo) * height) / 2 + 1);
  }
  g.stroke();
  canvas.title = `${audio.duration.toFixed(1)} s`;
}

async function drawFrames(source, strip, frames) {
  const video = el("video");
  video.muted = true;
  video.preload = "auto";
  video.src = source;
  await new Promise((ok, fail) => {
    video.onloadeddata = ok;
    video.onerror = fail;
  });
  const times = frames && frames.length ? frames : evenly(video.duration, FRAMES_SHOWN);
  const shown = times.length > FRAMES_SHOWN ? pickEvenly(times, FRAMES_SHOWN) : times;
  for (const time of shown) {
    video.currentTime = Math.min(time, Math.max(0, video.duration - 0.001));
    await new Promise((ok) => (video.onseeked = ok));
    const canvas = el("canvas", "al-att-frame");
    canvas.height = 45;
    canvas.width = Math.max(1, Math.round((45 * video.videoWidth) / Math.max(1, video.videoHeight)));
    canvas.getContext("2d").drawImage(video, 0, 0, canvas.width, canvas.height);
    canvas.title = `${time.toFixed(2)} s`;
    strip.append(canvas);
  }
  if (frames && frames.length)
    strip.append(el("span", "al-note", t("attach.frames_kept", { n: frames.length })));
}

function evenly(duration, n) {
  return Array.from({ length: n }, (_, i) => (duration * i) / n);
}

function pickEvenly(items, n) {
  return Array.from({ length: n }, (_, i) => items[Math.round((i * (items.length - 1)) / (n - 1))]);
}

function base64Of(blob) {
  return new Promise((ok, fail) => {
    const reader = new FileReader();
    reader.onload = () => ok(String(reader.result).split(",", 2)[1] || "");
    reader.onerror = () => fail(reader.error);
    reader.readAsDataURL(blob);
  });
}

// A drop zone with a file picker; `onFiles(files)` gets what was dropped or picked.
function dropZone(onFiles, multiple) {
  const zone = el("div", "al-att-drop");
  const input = el("input");
  input.type = "file";
  input.multiple = multiple;
  input.accept = "image/*,audio/*,video/*,*/*";
  input.hidden = true;
  const choose = el("button", "al-btn al-att-pick", t("attach.pick"));
  choose.type = "button";
  choose.addEventListener("click", () => input.click());
  input.addEventListener("change", () => {
    onFiles(Array.from(input.files || []));
    input.value = "";
  });
  zone.append(el("span", null, t("attach.drop") + " "), choose, input);
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    zone.classList.add("al-att-over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("al-att-over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("al-att-over");
    onFiles(Array.from((e.dataTransfer && e.dataTransfer.files) || []));
  });
  return { zone, input, choose };
}

// -- the loop panel's attach control ----------------------------------------------------------------------

// What the loaded model reads, from a status: the kinds it reads, why it refuses the others, the size
// cap, and the harnesses that take attachments (null: the server does not say, so every one may).
function mediaOf(status) {
  const info = (status && status.media) || {};
  return {
    reads: Array.isArray(info.reads) ? info.reads : [],
    refused: info.refused && typeof info.refused === "object" ? info.refused : {},
    maxBytes: typeof info.max_bytes === "number" ? info.max_bytes : Infinity,
    harnesses: Array.isArray(info.harnesses) ? info.harnesses : null,
  };
}

// The control's folded line: its name, how many files wait, the kinds the model cannot read and why,
// and whether the harness takes files at all. It stays in view folded, so a panel about something
// else still says what a question may carry.
function foldedLine() {
  const summary = el("summary", "al-att-summary");
  const count = el("span", "al-att-count-line");
  const harness = el("div", "al-note al-att-harness");
  const cannot = el("div", "al-note al-att-cannot");
  summary.append(el("span", "al-k", t("attach.attach")), " ", count, harness, cannot);
  return { summary, count, harness, cannot };
}

// `previous`: the control this one replaces (a language switch draws the form again), whose files
// and folding it keeps.
export function attachControl(root, status, previous) {
  // Of the model loaded now: update() follows a switch (here or in another tab), so the folded line
  // and each kept file's note never speak of a model the page no longer runs.
  let { reads, refused, maxBytes, harnesses } = mediaOf(status);
  let harnessName = null; // the form's harness (useHarness); null until the form says
  const taking = () => !harnesses || !harnessName || harnesses.includes(harnessName);
  const box = el("details", "al-field al-field-wide al-attach");
  // Chapter 7's panels are about files: open there (a control drawn again stays as the reader left it).
  box.open = previous ? previous.element.open : root.dataset.attach === "true";
  const line = foldedLine();
  const kept = el("div", "al-att-list");
  const note = el("div", "al-att-note");
  let files = previous ? previous.kept() : [];
  const drawLine = () => {
    const cannot = Object.entries(refused).map(([kind, why]) => `${kindName(kind)}: ${pick(why)}`);
    line.cannot.hidden = !cannot.length;
    line.cannot.textContent = cannot.length
      ? t("attach.cannot", { plain: t("attach.plain_file"), list: cannot.join("; ") })
      : "";
    line.harness.hidden = taking();
    const harness = taking() ? "" : t(`harness.${harnessName}`);
    line.harness.textContent = harness && t("attach.harness_none", { harness });
    // none go with a harness that takes none: the count would say otherwise
    line.count.textContent = files.length && taking() ? t("attach.n_files", { n: files.length }) : "";
    zone.classList.toggle("al-att-off", !taking());
    choose.disabled = !taking();
  };
  const draw = () => {
    kept.replaceChildren();
    for (const file of files) {
      const kind = kindOfType(file.type);
      const item = el("div", "al-att-item");
      item.dataset.kind = kind;
      const name = el("div", "al-att-name", `${file.name} · ${fmtBytes(file.size)}`);
      const remove = el("button", "al-btn al-att-remove", t("attach.remove"));
      remove.type = "button";
      remove.addEventListener("click", () => {
        files = files.filter((f) => f !== file);
        draw();
      });
      item.append(preview(file, kind), name, remove);
      if (kind !== "file" && !reads.includes(kind))
        item.append(el("div", "al-note", t("attach.plain_file")));
      kept.append(item);
    }
    drawLine();
  };
  const { zone, choose } = dropZone((added) => {
    if (!taking()) return; // the folded line says why: this harness takes no files
    note.textContent = "";
    for (const file of added) {
      if (file.size > maxBytes)
        note.textContent = t("attach.too_big", { name: file.name, max: fmtBytes(maxBytes) });
      else if (files.length >= MAX_FILES) note.textContent = t("attach.too_many");
      else files.push(file);
    }
    if (files.length) box.open = true; // the files kept, in view
    draw();
  }, true);
  box.append(line.summary, zone, kept, note);
  draw();
  return {
    element: box,
    // The files waiting to be sent (for the control that replaces this one).
    kept: () => files,
    // Another model is loaded: what it reads, and the notes that depend on it, redrawn.
    update(next) {
      ({ reads, refused, maxBytes, harnesses } = mediaOf(next));
      draw();
    },
    // The form's harness switch moved: a harness that takes no attachments is said so, and its
    // questions go without the files (they stay here for a harness that takes them).
    useHarness(name) {
      harnessName = name || null;
      drawLine();
    },
    // The request's part: {attachments: [{name, data}]}, or nothing without files or for a harness
    // that takes none.
    async request() {
      if (!files.length || !taking()) return {};
      const attachments = [];
      for (const file of files) attachments.push({ name: file.name, data: await base64Of(file) });
      return { attachments };
    },
    // The run started: its files, as the server saved them, go beside the question; the control empties
    // (unless none were sent: the harness takes none).
    sent(saved, turn) {
      if (!taking()) return;
      const mine = files;
      files = [];
      draw();
      if (!turn || !Array.isArray(saved) || !saved.length) return;
      const strip = el("div", "al-att-list al-att-sent");
      saved.forEach((a, i) => {
        const item = el("div", "al-att-item");
        item.dataset.kind = a.kind;
        // A medium kept as a plain file still looks like itself.
        const looks = a.kind === "file" && mine[i] ? kindOfType(mine[i].type) : a.kind;
        if (mine[i]) item.append(preview(mine[i], looks, a.frames));
        item.append(el("div", "al-att-name", `${a.name} · ${kindName(a.kind)}`));
        if (a.why_plain) item.append(el("div", "al-note", pick(a.why_plain)));
        strip.append(item);
      });
      (turn.querySelector(".al-asked") || turn).append(strip);
    },
  };
}

// -- the media panel: placeholder tokens per family ---------------------------------------------------------

async function fetchJSON(path) {
  const r = await fetch(new URL(path, markdownDir()).href, { cache: "no-cache" });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

// One family's answer: its model and count, then the turn's tokens, a placeholder repeated as one run.
function drawFamily(family, answer) {
  const box = el("div", "al-box al-att-family");
  box.dataset.family = family;
  const head = el("div", "al-title");
  head.append(el("span", null, `${FAMILY_NAMES[family] || family} · ${answer.model}`));
  box.append(head);
  if (answer.refused) {
    box.append(el("div", "al-note al-att-refused", t("attach.refused", { why: pick(answer.refused) })));
    return box;
  }
  const counts = Object.entries(answer.media_tokens || {}).map(
    ([kind, n]) => `${kindName(kind)} ${fmtInt(n)}`,
  );
  const tokens = t("attach.n_tokens", { n: fmtInt(answer.n_tokens) });
  head.append(el("span", "al-facts", `${tokens} · ${counts.join(", ")}`));
  const turn = el("div", "al-att-tokens");
  turn.setAttribute("aria-label", t("attach.turn"));
  for (const [piece, count] of answer.tokens || []) {
    const chip = el("span", count > 1 ? "al-att-tok al-att-run" : "al-att-tok", piece);
    if (count > 1) chip.append(el("b", "al-att-count", `×${count}`));
    turn.append(chip);
  }
  box.append(turn);
  return box;
}

class MediaPanel {
  constructor(root) {
    this.root = root;
    root._alMedia = this;
    this.bar = el("div", "al-bar");
    this.badge = el("span", "al-badge al-mode", "…");
    this.bar.append(el("strong", null, t("attach.turn")), this.badge);
    this.input = el("div", "al-att-input");
    this.shown = el("div", "al-att-shown");
    this.result = el("div", "al-att-result");
    root.replaceChildren(this.bar, this.input, this.shown, this.result);
    this.start();
  }

  async start() {
    const found = await probeServer();
    this.live = found.mode === "live" && Boolean(pageToken());
    if (this.live) {
      this.badge.textContent = t("badge.live");
      const { zone } = dropZone((files) => files[0] && this.expand(files[0]), false);
      this.input.append(zone);
    } else {
      this.badge.textContent = t("badge.replay");
      this.input.append(el("div", "al-note", t("attach.replay_note")));
    }
    this.offerRecordings();
  }

  // The recorded examples as buttons, each named by the sample file its spec sent and its kind, as the
  // file is named under its preview ("photo.jpg · image"); a recording that cannot be read keeps its id.
  // Each replays its answer, beside that file.
  async offerRecordings() {
    const paths = (this.root.dataset.replay || "").split(/\s+/).filter(Boolean);
    if (!paths.length) return;
    const row = el("div", "al-buttons al-att-examples");
    row.append(el("span", "al-k", t("attach.recorded")));
    const labels = await Promise.all(paths.map((path) => this.recorded(path).catch(() => null)));
    paths.forEach((path, i) => {
      const [answer] = labels[i] || [];
      const label = answer
        ? `${answer.name} · ${kindName(answer.kind)}`
        : path.split("/").pop().replace(/\.json$/, "");
      const button = el("button", "al-btn al-att-example", label);
      button.type = "button";
      button.addEventListener("click", () => this.replay(path));
      row.append(button);
    });
    this.input.append(row);
    if (!this.live) this.replay(paths[0]);
  }

  // A recording and its spec, fetched once for its label and its replays.
  recorded(path) {
    this.recordings = this.recordings || new Map();
    if (!this.recordings.has(path)) {
      const both = Promise.all([fetchJSON(path), fetchJSON(path.replace(/\.json$/, ".spec.json"))]);
      both.catch(() => this.recordings.delete(path));
      this.recordings.set(path, both);
    }
    return this.recordings.get(path);
  }

  async replay(path) {
    try {
      const [answer, spec] = await this.recorded(path);
      const file = spec.body && spec.body.attachment && spec.body.attachment.file;
      const blob = file ? await (await fetch(new URL(`runs/${file}`, markdownDir()).href)).blob() : null;
      this.draw(answer, blob);
    } catch (err) {
      this.error(tableError("attach.replay_failed", { path, err }));
    }
  }

  async expand(file) {
    this.result.replaceChildren(el("div", "al-note", t("attach.expanding")));
    try {
      const attachment = { name: file.name, data: await base64Of(file) };
      this.draw(await postJSON("media_expand", null, { attachment }), file);
    } catch (err) {
      this.error(err.event || { type: "error", message: { en: String(err), zh: String(err) } });
    }
  }

  draw(answer, blob) {
    this.shown.replaceChildren();
    if (blob) {
      const item = el("div", "al-att-item");
      item.append(preview(blob, answer.kind, answer.frames));
      item.append(el("div", "al-att-name", `${answer.name} · ${kindName(answer.kind)}`));
      this.shown.append(item);
    }
    this.result.replaceChildren(
      ...Object.entries(answer.families || {}).map(([family, a]) => drawFamily(family, a)),
    );
  }

  error(event) {
    const box = el("div", "al-error");
    box.append(el("div", null, event.message.en));
    const zh = pickZh(event.message); // the reader's Chinese edition: zh-Hans where the server sent it
    if (zh && zh !== event.message.en) box.append(el("div", null, zh));
    this.result.replaceChildren(box);
  }
}

onEveryPage(() => {
  for (const root of document.querySelectorAll(".agentloop-media")) {
    if (!root._alMedia) new MediaPanel(root);
  }
});
