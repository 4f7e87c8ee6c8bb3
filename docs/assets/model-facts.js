/* model-facts.js: the one table of what a model is, as the panels show it, read by chapter 3's specs
   panel (stages/specs.js), each run's Model tab (render.js) and the attach control (attach.js).
   - SPEC_ROWS: a row a fact, its key (its label is the string table's spec.<key>), how to read it
     from a GET status answer or a run_start event (both name them alike: model, family, specs,
     device, dtype, defaults; agentloop/model_backends/facts.py makes both), and where it comes from.
   - the kinds of media the server names (image, audio, video, file), by their names in the string table.
   Leaves out: drawing (each panel draws its own table or line), and asking the server. */

import { codeText, el, fmtInt } from "./dom.js";
import { t } from "./i18n.js";

const specs = (s) => s.specs || {};

// Each row's `from` is a file's field (drawn as code) or a spec.from_* sentence, whose {name} parts
// are the row's `codes`. `vllm`, where it differs on a vLLM server: another source, or null where the
// server keeps the fact to itself (the weights, and so their count, device and precision, are the
// server's).
export const SPEC_ROWS = [
  { key: "model", get: (s) => s.model, from: "spec.from_name" },
  { key: "family", get: (s) => s.family, from: "config.json model_type → model_families" },
  { key: "architecture", get: (s) => specs(s).architecture, from: "config.json architectures" },
  { key: "model_type", get: (s) => specs(s).model_type, from: "config.json model_type" },
  { key: "layers", get: (s) => specs(s).layers, from: "text_config.num_hidden_layers" },
  {
    key: "layer_type_counts",
    get: (s) =>
      specs(s).layer_type_counts &&
      Object.entries(specs(s).layer_type_counts)
        .map(([k, v]) => `${v} × ${k}`)
        .join(", "),
    from: "text_config.layer_types",
  },
  { key: "hidden_size", get: (s) => specs(s).hidden_size, from: "text_config.hidden_size" },
  { key: "heads", get: (s) => specs(s).heads, from: "text_config.num_attention_heads" },
  { key: "kv_heads", get: (s) => specs(s).kv_heads, from: "text_config.num_key_value_heads" },
  { key: "head_dim", get: (s) => specs(s).head_dim, from: "text_config.head_dim" },
  { key: "vocabulary", get: (s) => specs(s).vocabulary, from: "text_config.vocab_size" },
  {
    key: "context_length",
    get: (s) => specs(s).context_length,
    from: "text_config.max_position_embeddings",
    vllm: "spec.from_max_model_len",
    codes: { flag: "--max-model-len" },
  },
  { key: "parameters", get: (s) => specs(s).parameters, from: "spec.from_counted", vllm: null },
  {
    key: "dtype",
    get: (s) => s.dtype,
    from: "spec.from_dtype",
    vllm: null,
    codes: { files: "bfloat16", code: "precision.choose()" },
  },
  {
    // Why that dtype: a key of agentloop/model_backends/precision.py's WHY, worded in the reader's language.
    key: "precision",
    get: (s) => s.precision && t(`precision.${s.precision}`),
    from: "spec.from_precision",
    vllm: null,
    codes: { flags: "amx_bf16", flags2: "avx512_bf16" },
  },
  { key: "device", get: (s) => s.device, from: "pick_device()", vllm: null },
  ...["temperature", "top_p", "top_k"].map((key) => ({
    key,
    get: (s) => s.defaults && s.defaults[key],
    from: "spec.from_generation",
    codes: { file: "generation_config.json" },
  })),
];

// The rows as they hold for a model run by `backend` (a status's or run_start's): on vLLM without
// the facts the server keeps, and with the server's own source where it has one.
export function rowsFor(backend) {
  if (backend !== "vllm") return SPEC_ROWS;
  return SPEC_ROWS.filter((r) => r.vllm !== null).map((r) => (r.vllm ? { ...r, from: r.vllm } : r));
}

// A row's source as nodes: a file's field as code, a sentence in the reader's language with its
// code parts as code.
export function fromNodes(row) {
  return row.from.startsWith("spec.") ? codeText(t(row.from), row.codes || {}) : [el("code", null, row.from)];
}

// A fact as a cell shows it: a number with its thousands, a dash for one not known.
export function specText(v) {
  return v === undefined || v === null ? "—" : typeof v === "number" ? fmtInt(v) : String(v);
}

// The kinds of file the server names, and their names in the string table.
const KINDS = {
  image: "attach.kind_image",
  audio: "attach.kind_audio",
  video: "attach.kind_video",
  file: "attach.kind_file",
};

// A kind's name in the reader's language (an unknown kind as a plain file).
export function kindName(kind) {
  return t(KINDS[kind] || KINDS.file);
}
