/* i18n.js: every string the panels show, in English and Traditional Chinese (and Simplified Chinese,
   generated from the Traditional: i18n-zh-Hans.js), and the reader's choice between them. A panel module writes no words of its own: it asks t("key", {vars}) and gets
   the text in the language chosen, with {name} filled from vars. The choice is remembered in
   localStorage under "agentloop.lang" ("en", "zh-Hant" or "zh-Hans"), and a change is announced on window as
   the "agentloop-lang" event, so every panel on the page draws itself again. Texts that come with
   both languages already (the server's errors and descriptions, {en, zh}, with "zh-Hans" beside zh
   where the server converted it) go through pick().
   Chinese is drawn with the subsetted Noto Sans CJK TC the book ships (docs/assets/fonts/, made by
   scripts/subset_cjk_font.py from these strings), since a browser without CJK fonts would show
   boxes. Leaves out: plural rules beyond "one" and "other", and any
   language but these two.
   The book has the same two editions (edition.js): panels start in the page's language, whatever
   was chosen before. A panel's select switches the panels of this page in place, never the page:
   a page load would end a live run and drop its conversation, so the page's language is the
   header's switch. Both write the one remembered choice, "agentloop.lang". */

import { LANG_KEY, EDITIONS, pageLang } from "./edition.js";
import { ZH_HANS } from "./i18n-zh-Hans.js";

export { LANG_KEY };
export const LANGS = EDITIONS;
export const LANG_NAMES = { en: "English", "zh-Hant": "中文（繁體）", "zh-Hans": "中文（简体）" };

// key -> {en, "zh-Hant"}. A key names where the text is used; {name} is filled from t()'s vars.
export const STRINGS = {
  // the language switch
  "lang.label": { en: "Language", "zh-Hant": "語言" },
  // the header's switch to the other edition (edition.js), asked by panel.js when a live conversation would end
  "edition.leave_en": {
    en: "The English edition is another page: your live conversation on this page would end. Open it anyway?",
    "zh-Hant": "英文版是另一個頁面：這一頁上你的即時對話會結束。仍要開啟嗎？",
  },
  "edition.leave_zh": {
    en: "The Chinese edition is another page: your live conversation on this page would end. Open it anyway?",
    "zh-Hant": "中文版是另一個頁面：這一頁上你的即時對話會結束。仍要開啟嗎？",
  },

  // dom.js
  "bar.looking": { en: "Looking for the demo server…", "zh-Hant": "正在尋找示範伺服器…" },
  "src.title": { en: "The line that sent this event: {where}", "zh-Hant": "送出這個事件的那一行：{where}" },

  // issue 47 (live book, third round): the live panel's two tabs, the settings summary's approval and
  // seed, and what a live panel runs on when its recording ran on something else
  "livetab.live": { en: "Your live run", "zh-Hant": "你的即時執行" },
  "livetab.recorded": { en: "The recorded run", "zh-Hant": "錄下的執行" },
  "livetab.label": { en: "Live or recorded", "zh-Hant": "即時或錄下的" },
  "replay.note_live": {
    en: "This is the run recorded for this panel. Your live conversation, settings and question wait in the other tab.",
    "zh-Hant": "這是這個面板錄下的執行。你的即時對話、設定和問題都留在另一個分頁。",
  },
  "form.approves_itself": { en: "Calls auto-approved", "zh-Hant": "呼叫自動核准" },
  "form.asks_first": { en: "Asks before each call", "zh-Hant": "每次呼叫前先問你" },
  "set.seed": { en: "Seed (empty = fresh draws)", "zh-Hant": "種子（留空 = 每次重新抽樣）" },
  // issue 47, point 9: the pace of a run, live and in a replay (pace.js)
  "pace.label": { en: "Pace", "zh-Hant": "步調" },
  "pace.full": { en: "Full speed", "zh-Hant": "全速" },
  "pace.slow": { en: "Slow", "zh-Hant": "慢速" },
  "pace.step": { en: "Step by step", "zh-Hant": "一步一步" },
  "pace.full_hint": { en: "As fast as the model goes", "zh-Hant": "模型多快就多快" },
  "pace.slow_hint": {
    en: "A short wait before each token: read each one, and press Stop between two",
    "zh-Hant": "每個 token 之前稍等一下：可以逐一閱讀，也來得及在兩個 token 之間按停止",
  },
  "pace.step_hint": {
    en: "The run waits before each stage (the prefill, each token, the parse, a call) until you press Next",
    "zh-Hant": "執行在每個階段（預填、每個 token、解析、呼叫）之前停下，等你按「下一步」",
  },
  "pace.next": { en: "Next", "zh-Hant": "下一步" },
  "pace.run_on": { en: "Full speed from here", "zh-Hant": "接下來全速" },
  "pace.next_prefill": { en: "Next: prefill", "zh-Hant": "下一步：預填" },
  "pace.next_token": { en: "Next: token {n}", "zh-Hant": "下一步：第 {n} 個 token" },
  "pace.next_parse": { en: "Next: the parse", "zh-Hant": "下一步：解析輸出" },
  "pace.next_call": { en: "Next: run {call}", "zh-Hant": "下一步：執行{call}" },
  "pace.pi_own": {
    en: "pi's own models stream text, not tokens: they run at full speed.",
    "zh-Hant": "pi 自己的模型串流的是文字而不是 token：只能全速執行。",
  },
  "run.next_failed": { en: "Could not go on: {err}", "zh-Hant": "無法繼續：{err}" },
  "runs_on.note": {
    en: "Live, this panel runs {model} on {backend}; its recording ran {recorded_model} on {recorded_backend}.",
    "zh-Hant": "即時模式下，這個面板在 {backend} 上執行 {model}；它錄下的執行是在 {recorded_backend} 上執行 {recorded_model}。",
  },

  // badges and the replay
  "badge.replay": { en: "replay", "zh-Hant": "重播" },
  "badge.live": { en: "live", "zh-Hant": "即時" },
  "replay.file": { en: "Opened from a file.", "zh-Hant": "從檔案開啟。" },
  "replay.file_note": {
    en: "A browser does not let a page opened from a file read its recorded run. Serve the built book instead: {http}, or {serve}, then open {url}.",
    "zh-Hant": "瀏覽器不讓從檔案開啟的頁面讀取錄下的執行。請改用伺服器提供建好的書：{http}，或 {serve}，然後開啟 {url}。",
  },
  "replay.note": {
    en: "This is a recorded run. To run it live on your machine: {serve}, then open {url}.",
    "zh-Hant": "這是錄下的執行。要在你的電腦上即時執行：{serve}，然後開啟 {url}。",
  },
  "replay.note_published": {
    en: "This is a recorded run. To run it live on your machine: {serve}, then open {url} (the published book always replays).",
    "zh-Hant": "這是錄下的執行。要在你的電腦上即時執行：{serve}，然後開啟 {url}（發佈的書一律重播）。",
  },
  "replay.none": {
    en: "This panel names no recorded run (data-replay).",
    "zh-Hant": "這個面板沒有指定錄下的執行（data-replay）。",
  },
  "replay.loading": { en: "Loading the recorded run…", "zh-Hant": "正在載入錄下的執行…" },
  "replay.missing_http": {
    en: "Recording missing: {name} was not found (HTTP {status}).",
    "zh-Hant": "找不到錄製檔：{name}（HTTP {status}）。",
  },
  "replay.missing_err": {
    en: "Recording missing: {name} could not be loaded ({err}).",
    "zh-Hant": "錄製檔遺失：無法載入 {name}（{err}）。",
  },
  "replay.bad_line": {
    en: "The recording is not valid JSON Lines: line {line}: {err}",
    "zh-Hant": "錄製檔不是有效的 JSON Lines：第 {line} 行：{err}",
  },
  "replay.play": { en: "Play", "zh-Hant": "播放" },
  "replay.pause": { en: "Pause", "zh-Hant": "暫停" },
  "replay.step": { en: "Step", "zh-Hant": "逐步" },
  "replay.restart": { en: "Restart", "zh-Hant": "重來" },
  "replay.all": { en: "Show all", "zh-Hant": "全部顯示" },
  "replay.speed": { en: "Replay speed", "zh-Hant": "重播速度" },
  "replay.recorded_pace": { en: "1× (recorded pace)", "zh-Hant": "1×（錄製時的速度）" },
  "replay.status": {
    en: "Recorded run: event {pos} of {n} ({state}).",
    "zh-Hant": "錄下的執行：第 {pos} 個事件，共 {n} 個（{state}）。",
  },
  "replay.finished": { en: "finished", "zh-Hant": "已結束" },
  "replay.playing": { en: "playing", "zh-Hant": "播放中" },
  "replay.paused": { en: "paused", "zh-Hant": "已暫停" },
  "replay.ready": { en: "ready", "zh-Hant": "就緒" },

  // the live form
  "live.no_token": {
    en: "This page carries no agentloop-token, so the server may refuse to start a run; open the book from the demo server's own address.",
    "zh-Hant": "這個頁面沒有 agentloop-token，伺服器可能拒絕開始執行；請從示範伺服器自己的位址開啟這本書。",
  },
  "form.question": { en: "Question", "zh-Hant": "問題" },
  "form.placeholder": { en: "Ask a question", "zh-Hant": "問一個問題" },
  "form.server_default": { en: "server default", "zh-Hant": "伺服器預設" },
  "form.settings": { en: "Settings", "zh-Hant": "設定" },
  "form.run": { en: "Run", "zh-Hant": "執行" },
  "form.stop": { en: "Stop", "zh-Hant": "停止" },
  "form.new_conversation": { en: "New conversation", "zh-Hant": "新對話" },
  "form.continuing_one": { en: "continuing: 1 earlier question", "zh-Hant": "接續對話：前面有 1 個問題" },
  "form.continuing": { en: "continuing: {n} earlier questions", "zh-Hant": "接續對話：前面有 {n} 個問題" },
  "form.tools": { en: "Tools the model sees", "zh-Hant": "模型看得到的工具" },
  "form.try": { en: "Try this", "zh-Hant": "試試這個" },
  "form.on": { en: "on", "zh-Hant": "開" },
  "form.off": { en: "off", "zh-Hant": "關" },
  "form.examples": { en: "Example questions:", "zh-Hant": "範例問題：" },
  "set.max_steps": { en: "Max steps", "zh-Hant": "最多步數" },
  "set.max_new_tokens": { en: "Max tokens per step", "zh-Hant": "每步最多 token 數" },
  "set.temperature": { en: "Temperature", "zh-Hant": "溫度" },
  "set.top_p": { en: "Top-p", "zh-Hant": "Top-p" },
  "set.top_k": { en: "Top-k (0 = no limit)", "zh-Hant": "Top-k（0 = 不限）" },
  "set.thinking": { en: "Thinking", "zh-Hant": "思考" },
  "set.use_tools": { en: "Use tools", "zh-Hant": "使用工具" },
  "set.auto_approve": { en: "Auto-approve tool calls", "zh-Hant": "自動核准工具呼叫" },
  "set.mtp": { en: "MTP (a drafter guesses)", "zh-Hant": "MTP（由草稿模型猜測）" },
  "set.time_limit_s": { en: "Time limit (s)", "zh-Hant": "時間上限（秒）" },
  "set.max_format_errors": { en: "Max format errors", "zh-Hant": "最多格式錯誤數" },
  "ex.arithmetic": { en: "arithmetic", "zh-Hant": "算術" },
  "ex.letters": { en: "counting letters", "zh-Hant": "數字母" },
  "ex.length": { en: "a word's length", "zh-Hant": "單字長度" },
  "ex.units": { en: "unit conversion", "zh-Hant": "單位換算" },
  "ex.sorting": { en: "sorting", "zh-Hant": "排序" },
  "ex.dates": { en: "dates", "zh-Hant": "日期" },
  "ex.greeting": { en: "greeting", "zh-Hant": "問候" },
  "ex.file_lines": { en: "lines of a file", "zh-Hant": "檔案行數" },
  "ex.definition": { en: "definitions", "zh-Hant": "定義" },
  "ex.follow_up": { en: "follow-up", "zh-Hant": "後續問題" },
  "turn.asked": { en: "You asked", "zh-Hant": "你問了" },

  // the status line
  "live.following": { en: "Live: {what}", "zh-Hant": "即時：{what}" },
  "live.loading": { en: "Live: loading {model}…", "zh-Hant": "即時：正在載入 {model}…" },
  "live.a_model": { en: "a model", "zh-Hant": "一個模型" },
  "live.vllm": { en: "Live: {who}, on vLLM.", "zh-Hant": "即時：{who}，在 vLLM 上。" },
  "live.vllm_at": { en: "Live: {who}, on vLLM at {where}.", "zh-Hant": "即時：{who}，在 {where} 的 vLLM 上。" },
  "live.here": { en: "Live: {who}, on this machine.", "zh-Hant": "即時：{who}，在這台電腦上。" },
  "live.no_model": {
    en: "Live: no model is loaded; pick one in the model menu.",
    "zh-Hant": "即時：尚未載入模型；請在模型選單中挑一個。",
  },
  "live.answers": { en: "Live: the demo server answers.", "zh-Hant": "即時：示範伺服器有回應。" },
  "live.gone": {
    en: "Live, but the demo server does not answer now (stopped?). Trying again…",
    "zh-Hant": "即時，但示範伺服器現在沒有回應（停止了嗎？）。正在重試…",
  },

  // the model menu and a load
  "menu.summary": { en: "Model: ", "zh-Hant": "模型：" },
  "menu.model": { en: "Model", "zh-Hant": "模型" },
  "menu.model_every_tab": { en: "Model (one for every tab)", "zh-Hant": "模型（所有分頁共用一個）" },
  "menu.backend": { en: "What runs the model", "zh-Hant": "由什麼執行模型" },
  "menu.backend_transformers": { en: "transformers (here)", "zh-Hant": "transformers（在這裡）" },
  "menu.backend_vllm": { en: "vLLM (a server)", "zh-Hant": "vLLM（一個伺服器）" },
  "menu.way_transformers": { en: "transformers (here)", "zh-Hant": "transformers（在這裡）" },
  "menu.way_vllm_docker": { en: "vLLM in Docker", "zh-Hant": "Docker 中的 vLLM" },
  "menu.way_vllm_url": { en: "served by vLLM", "zh-Hant": "由 vLLM 伺服器提供" },
  "menu.way_vllm_local": { en: "vLLM on this machine (.venv-vllm)", "zh-Hant": "這台機器上的 vLLM（.venv-vllm）" },
  "menu.unsupported": { en: "{label} — the book cannot run it", "zh-Hant": "{label}——本書無法執行" },
  "menu.load": { en: "Load", "zh-Hant": "載入" },
  "menu.loading": { en: "Loading…", "zh-Hant": "載入中…" },
  "menu.unavailable": { en: "(the model menu is not available)", "zh-Hant": "（模型選單無法使用）" },
  "menu.no_answer": { en: "GET {path} did not answer: {err}.", "zh-Hant": "GET {path} 沒有回應：{err}。" },
  "menu.no_models": { en: "{path} answered no models", "zh-Hant": "{path} 沒有回傳任何模型" },
  "menu.outside": {
    en: "{model} (loaded from a folder outside the menu)",
    "zh-Hant": "{model}（從選單以外的資料夾載入）",
  },
  "menu.default": { en: "default", "zh-Hant": "預設" },
  "menu.loaded": { en: "loaded", "zh-Hant": "已載入" },
  "menu.none": { en: "none loaded", "zh-Hant": "未載入" },
  "menu.no_model": { en: "No model is loaded.", "zh-Hant": "尚未載入模型。" },
  "menu.not_now": {
    en: "Not now (HTTP 409): {model} was not loaded.",
    "zh-Hant": "現在不行（HTTP 409）：沒有載入 {model}。",
  },
  "menu.not_loaded": { en: "{model} was not loaded.", "zh-Hant": "沒有載入 {model}。" },
  "menu.load_failed": { en: "Could not load {model}: {err}", "zh-Hant": "無法載入 {model}：{err}" },
  "menu.load_error": { en: "Loading {model} failed.", "zh-Hant": "載入 {model} 失敗。" },
  "menu.ready": { en: "{model} is loaded, for every tab.", "zh-Hant": "{model} 已載入，所有分頁共用。" },
  "menu.ready_in": {
    en: "{model} is loaded in {s} s, for every tab.",
    "zh-Hant": "{model} 已在 {s} 秒內載入，所有分頁共用。",
  },
  "model.parameters": { en: "{n} parameters", "zh-Hant": "{n} 個參數" },
  "model.not_downloaded": { en: "not downloaded", "zh-Hant": "尚未下載" },
  "model.default_mark": { en: " · default", "zh-Hant": " · 預設" },
  "list.sep": { en: ", ", "zh-Hant": "、" },
  "kind.tiny": { en: "tiny, random weights", "zh-Hant": "迷你，隨機權重" },
  "kind.trained": { en: "tiny, trained toy", "zh-Hant": "迷你，訓練過的玩具模型" },
  "kind.real": { en: "real", "zh-Hant": "真實模型" },
  "kind.served": { en: "served by vLLM", "zh-Hant": "由 vLLM 提供" },
  "load.the_model": { en: "the model", "zh-Hant": "模型" },
  "load.downloading_short": { en: "downloading {model}… {pct}", "zh-Hant": "正在下載 {model}… {pct}" },
  "load.bytes": { en: "{done} of {total}", "zh-Hant": "{done}／{total}" },
  "load.starting": { en: "starting", "zh-Hant": "開始中" },
  "load.files": { en: ", file {done} of {total}", "zh-Hant": "，檔案 {done}／{total}" },
  "load.downloading": {
    en: "Downloading {model} from the Hugging Face Hub: {bytes}{files}.",
    "zh-Hant": "正在從 Hugging Face Hub 下載 {model}：{bytes}{files}。",
  },
  "load.starting_short": { en: "starting vLLM for {model}…", "zh-Hant": "正在為 {model} 啟動 vLLM…" },
  "load.loading_short": { en: "loading {model}…", "zh-Hant": "正在載入 {model}…" },
  "load.into_memory": { en: "Loading {model} into memory…", "zh-Hant": "正在把 {model} 載入記憶體…" },
  "load.family": {
    en: "{model} is a {family} model; getting its weights…",
    "zh-Hant": "{model} 是 {family} 模型；正在取得權重…",
  },
  "load.loading": { en: "Loading {model}…", "zh-Hant": "正在載入 {model}…" },
  "load.lost": {
    en: "The connection to the demo server was lost during the load.",
    "zh-Hant": "載入期間與示範伺服器的連線中斷了。",
  },

  // the harness switches (harness.js)
  "harness.label": { en: "Harness", "zh-Hant": "執行框架" },
  "harness.simple": { en: "agentloop's own loop", "zh-Hant": "agentloop 自己的迴圈" },
  "harness.pi": { en: "pi (coding agent, RPC)", "zh-Hant": "pi（程式代理，RPC）" },
  "harness.page_model": { en: "this page's model", "zh-Hant": "這個頁面的模型" },
  "harness.pi_model": { en: "The model pi asks", "zh-Hant": "pi 詢問的模型" },
  "harness.pi_tools": { en: "What pi gives the model", "zh-Hant": "pi 給模型的內容" },
  "harness.pi_tools_pi": {
    en: "pi's own prompt and tools (run in the sandbox)",
    "zh-Hant": "pi 自己的提示與工具（在沙箱中執行）",
  },
  "harness.pi_tools_book": { en: "pi with the book's tools", "zh-Hant": "pi 搭配本書的工具" },
  "harness.pi_models_failed": {
    en: "pi's models could not be listed: {err}",
    "zh-Hant": "無法列出 pi 的模型：{err}",
  },

  // a run's errors made in the panel
  "run.start_failed": { en: "Could not start the run: {err}", "zh-Hant": "無法開始執行：{err}" },
  "run.stop_failed": { en: "Could not stop the run: {err}", "zh-Hant": "無法停止執行：{err}" },
  "run.lost": {
    en: "The connection to the demo server was lost.",
    "zh-Hant": "與示範伺服器的連線中斷了。",
  },

  // render.js: the run
  "k.model": { en: "model", "zh-Hant": "模型" },
  "k.family": { en: "family", "zh-Hant": "家族" },
  "k.harness": { en: "harness", "zh-Hant": "執行框架" },
  "k.run": { en: "run", "zh-Hant": "執行" },
  "k.tools": { en: "tools", "zh-Hant": "工具" },
  "k.none": { en: "none", "zh-Hant": "無" },
  "k.settings": { en: "settings", "zh-Hant": "設定" },
  "k.kind": { en: "kind", "zh-Hant": "種類" },
  "k.size": { en: "size", "zh-Hant": "大小" },
  "k.step": { en: "step", "zh-Hant": "步驟" },
  "k.tokens": { en: "tokens", "zh-Hant": "token 數" },
  "tab.steps": { en: "Steps", "zh-Hant": "步驟" },
  "tab.model": { en: "Model", "zh-Hant": "模型" },
  "tab.context": { en: "Context", "zh-Hant": "上下文" },
  "model.th_step": { en: "step", "zh-Hant": "步驟" },
  "model.th_prefill_tokens": { en: "prefill tokens", "zh-Hant": "預填 token 數" },
  "model.th_prefill_ms": { en: "prefill ms", "zh-Hant": "預填毫秒" },
  "model.th_written": { en: "tokens written", "zh-Hant": "寫出的 token 數" },
  "model.th_decode_ms": { en: "decode ms", "zh-Hant": "解碼毫秒" },
  "model.th_tok_s": { en: "tokens/s", "zh-Hant": "token／秒" },
  // render.js: the Model tab's facts of the model (model-facts.js's rows, agentloop/model_backends/facts.py)
  "model.source_run": {
    en: "The model that ran this run, as its {event} tells it:",
    "zh-Hant": "執行這次的模型，依它的 {event} 所述：",
  },
  "model.source_status": {
    en: "This run's {event} predates the model's facts; the server has {model} loaded now, and these are its:",
    "zh-Hant": "這次執行的 {event} 早於模型資料的加入；伺服器現在載入的正是 {model}，以下是它的資料：",
  },
  "model.facts_missing": {
    en: "This run's {event} predates the model's facts (it was recorded before they were added), and {model} is not loaded here: chapter 3's first panel shows what {file} says of the book's models.",
    "zh-Hant": "這次執行的 {event} 早於模型資料的加入（錄製時還沒有這些資料），而這裡沒有載入 {model}：第 3 章的第一個面板列出 {file} 對本書模型的說明。",
  },
  "model.facts_other": {
    en: "This run's {event} predates the model's facts, and the server has {loaded} loaded, not {model}: its facts are not this run's. Chapter 3's first panel shows what {file} says of the book's models.",
    "zh-Hant": "這次執行的 {event} 早於模型資料的加入，而伺服器載入的是 {loaded}，不是 {model}：它的資料不屬於這次執行。第 3 章的第一個面板列出 {file} 對本書模型的說明。",
  },
  "model.facts_pi_own": {
    en: "pi asked one of its own models, {model}: its provider runs it, so its specs are not known here.",
    "zh-Hant": "pi 詢問的是它自己的模型 {model}：由它的供應者執行，所以這裡不知道它的規格。",
  },
  "model.runs_here": {
    en: "Run by transformers, in the loop's own process.",
    "zh-Hant": "由 transformers 在迴圈自己的行程中執行。",
  },
  "model.runs_vllm": {
    en: "Run by a vLLM server, which keeps the weights: no device, precision or parameter count here, and the context length is the server's ({flag}).",
    "zh-Hant": "由 vLLM 伺服器執行，權重留在伺服器：這裡沒有裝置、精度或參數量，上下文長度是伺服器的（{flag}）。",
  },
  "model.reads": { en: "Reads as media: {kinds}", "zh-Hant": "能當作媒體讀取：{kinds}" },
  "model.reads_none": {
    en: "Reads no media: any file is kept as a plain file in /data.",
    "zh-Hant": "不讀任何媒體：檔案都以一般檔案存在 /data。",
  },
  "model.refuses": { en: "Does not read {kind}: {why}", "zh-Hant": "不讀{kind}：{why}" },
  "step.run": { en: "Run", "zh-Hant": "執行" },
  "step.n": { en: "Step {n}", "zh-Hant": "第 {n} 步" },
  "phase.prefill": { en: "prefill", "zh-Hant": "預填" },
  "phase.decode": { en: "decode", "zh-Hant": "解碼" },
  "phase.tool": { en: "tool", "zh-Hant": "工具" },
  "phase.ms": { en: "{phase} {ms} ms", "zh-Hant": "{phase} {ms} 毫秒" },

  // the context
  "ctx.title": { en: "Context", "zh-Hant": "上下文" },
  "ctx.appears": { en: "The context appears when a step starts.", "zh-Hant": "步驟開始時會顯示上下文。" },
  "ctx.of_limit": { en: "{n} of {limit}", "zh-Hant": "{n}／{limit}" },
  "ctx.role_tokens": { en: "{role}: {n} tokens", "zh-Hant": "{role}：{n} 個 token" },
  "ctx.role_tokens_k": { en: "tokens by role", "zh-Hant": "各角色的 token 數" },
  "ctx.roles_k": { en: "messages by role", "zh-Hant": "各角色的訊息數" },
  "ctx.all": { en: "all", "zh-Hant": "全部" },
  "ctx.media": { en: "media tokens", "zh-Hant": "媒體 token" },
  "ctx.new": { en: "new this step", "zh-Hant": "這一步新增" },
  "ctx.chars": { en: "{n} characters", "zh-Hant": "{n} 個字元" },
  "ctx.added": { en: "Added in this step", "zh-Hant": "這一步新增的部分" },
  "ctx.step_added": { en: "What step {step} added", "zh-Hant": "第 {step} 步新增的部分" },
  "role.system": { en: "system", "zh-Hant": "系統" },
  "role.user": { en: "user", "zh-Hant": "使用者" },
  "role.assistant": { en: "assistant", "zh-Hant": "助理" },
  "role.tool": { en: "tool", "zh-Hant": "工具" },
  "req.title": { en: "Request pi sent to the model", "zh-Hant": "pi 送給模型的請求" },
  "prefill.title": { en: "Prefill", "zh-Hant": "預填" },
  "prefill.computed": { en: "computed", "zh-Hant": "已計算" },
  "prefill.encoders_ms": { en: "encoders ms", "zh-Hant": "編碼器毫秒" },
  "prefill.of": { en: "{n} of {total} tokens", "zh-Hant": "{n}／{total} 個 token" },
  "prefill.of_reused": {
    en: "{n} of {total} tokens ({reused} reused)",
    "zh-Hant": "{n}／{total} 個 token（重用 {reused} 個）",
  },

  // tokens
  "legend.p": { en: "p of each token:", "zh-Hant": "每個 token 的機率 p：" },
  "legend.hint": {
    en: "Hover, click or focus a token (then ← →) for its details.",
    "zh-Hant": "把游標移到 token 上、點一下或聚焦（再按 ← →）即可看細節。",
  },
  "legend.drafted": {
    en: "drafted: the drafter's guess, kept by the model (chapter 10)",
    "zh-Hant": "草稿：草稿模型的猜測，模型保留了它（第 10 章）",
  },
  "legend.corrected": {
    en: "the model's own pick where it turned a guess down",
    "zh-Hant": "模型否決一個猜測後自己選的 token",
  },
  "legend.forced": {
    en: "forced: written by the harness, scored by the model",
    "zh-Hant": "強制：由執行框架寫入，由模型評分",
  },
  "stream.label": {
    en: "Generated tokens. Use the arrow keys to inspect each token.",
    "zh-Hant": "生成的 token。用方向鍵逐一檢視每個 token。",
  },
  "tok.special": { en: "special", "zh-Hant": "特殊" },
  "tok.drafted": { en: "drafted", "zh-Hant": "草稿" },
  "tok.forced": { en: "forced", "zh-Hant": "強制" },
  "ch.content": { en: "content", "zh-Hant": "內容" },
  "ch.thought": { en: "thought", "zh-Hant": "思考" },
  "ch.tool_call": { en: "tool_call", "zh-Hant": "工具呼叫" },
  "ch.control": { en: "control", "zh-Hant": "控制" },
  "pop.channel": { en: "channel", "zh-Hant": "頻道" },
  "pop.rank": { en: "rank", "zh-Hant": "名次" },
  "pop.below": { en: "below {n}", "zh-Hant": "{n} 名之後" },
  "pop.kept": { en: "kept", "zh-Hant": "保留" },
  "pop.candidates": { en: "{n} candidates", "zh-Hant": "{n} 個候選" },
  "pop.kept_unknown": { en: "unknown (the server sends no sampling mask)", "zh-Hant": "不知道（伺服器沒有送出取樣遮罩）" },
  "pop.top": { en: "top {n} (the model's own distribution)", "zh-Hant": "前 {n} 名（模型自己的分布）" },
  "pop.chosen": { en: "chosen", "zh-Hant": "選中" },
  "pop.cut": { en: "cut", "zh-Hant": "被排除" },
  "pop.sent_by": { en: "sent by {src}", "zh-Hant": "由 {src} 送出" },
  "pop.turned_down": {
    en: "MTP round {round}: the drafter guessed {piece} here; the model turned it down and picked this.",
    "zh-Hant": "MTP 第 {round} 輪：草稿模型在這裡猜 {piece}；模型否決了它，改選這個。",
  },
  "pop.kept_guess": {
    en: "MTP round {round}: guess {i} of {of}, kept by the model.",
    "zh-Hant": "MTP 第 {round} 輪：{of} 個猜測中的第 {i} 個，模型保留了它。",
  },

  // MTP rounds
  "mtp.summary": {
    en: "MTP: {n} rounds, {kept} of {guessed} guesses kept",
    "zh-Hant": "MTP：{n} 輪，{guessed} 個猜測中保留 {kept} 個",
  },
  "mtp.round": { en: "round {n}", "zh-Hant": "第 {n} 輪" },
  "mtp.kept_of": { en: "{kept} of {n} kept", "zh-Hant": "保留 {kept}／{n}" },
  "mtp.kept": { en: "guessed {piece} (id {id}): kept", "zh-Hant": "猜 {piece}（id {id}）：保留" },
  "mtp.down": {
    en: "guessed {piece} (id {id}): turned down, the model picked another token",
    "zh-Hant": "猜 {piece}（id {id}）：被否決，模型選了別的 token",
  },
  "mtp.restart_on": {
    en: "Switching MTP on restarts the vLLM server this page started: {model} loads again, with speculative decoding, which takes a while.",
    "zh-Hant": "打開 MTP 會重新啟動這個頁面啟動的 vLLM 伺服器：{model} 會以推測解碼重新載入，需要一段時間。",
  },
  "mtp.restart_off": {
    en: "Switching MTP off restarts the vLLM server this page started: {model} loads again, without speculative decoding, which takes a while.",
    "zh-Hant": "關掉 MTP 會重新啟動這個頁面啟動的 vLLM 伺服器：{model} 會不用推測解碼重新載入，需要一段時間。",
  },
  "mtp.restart": { en: "Restart it", "zh-Hant": "重新啟動" },
  "mtp.keep": { en: "Keep it as it is", "zh-Hant": "維持原狀" },
  "mtp.unseen": {
    en: "guessed {piece} (id {id}): never checked, after a guess turned down",
    "zh-Hant": "猜 {piece}（id {id}）：前一個猜測被否決，沒有檢查",
  },

  // the step's end, calls, permissions, results
  "end.model_done": { en: "Model done", "zh-Hant": "模型完成" },
  "end.finish": { en: "finish", "zh-Hant": "結束原因" },
  "end.stop": { en: "stop", "zh-Hant": "停止於" },
  "end.decode_ms": { en: "decode ms", "zh-Hant": "解碼毫秒" },
  "end.mtp": {
    en: "{accepted} of {drafted} guesses kept, {forwards} passes",
    "zh-Hant": "{drafted} 個猜測中保留 {accepted} 個，{forwards} 次前向傳遞",
  },
  "end.per_pass": { en: "tokens per pass", "zh-Hant": "每次前向傳遞的 token 數" },
  "end.usage": { en: "usage", "zh-Hant": "用量" },
  "end.raw": { en: "raw output", "zh-Hant": "原始輸出" },
  "call.title": { en: "Tool call", "zh-Hant": "工具呼叫" },
  "call.name": { en: "step {step}, call {n}", "zh-Hant": "第 {step} 步的第 {n} 個呼叫" },
  "perm.title": { en: "Permission for {call}", "zh-Hant": "{call}的許可" },
  "perm.approve": { en: "Approve", "zh-Hant": "核准" },
  "perm.deny": { en: "Deny", "zh-Hant": "拒絕" },
  "perm.waits": { en: "The run waits for your decision.", "zh-Hant": "執行正在等你決定。" },
  "perm.waiting": { en: "Waiting for the decision…", "zh-Hant": "等待決定…" },
  "perm.sending": { en: "Sending…", "zh-Hant": "送出中…" },
  "perm.not_sent": { en: "Not sent: {err}", "zh-Hant": "沒有送出：{err}" },
  "perm.unanswered": { en: "Not answered: the run ended first.", "zh-Hant": "未回答：執行先結束了。" },
  "perm.approved_auto": {
    en: "Approved automatically (auto-approve)",
    "zh-Hant": "已自動核准（勾選了自動核准）",
  },
  "perm.approved_reader": { en: "Approved by the reader", "zh-Hant": "讀者已核准" },
  "perm.approved_other": { en: "Approved by {by}", "zh-Hant": "由 {by} 核准" },
  "perm.approved_none": { en: "Approved", "zh-Hant": "已核准" },
  "perm.denied_auto": { en: "Denied automatically", "zh-Hant": "已自動拒絕" },
  "perm.denied_reader": { en: "Denied by the reader", "zh-Hant": "讀者已拒絕" },
  "perm.denied_other": { en: "Denied by {by}", "zh-Hant": "由 {by} 拒絕" },
  "perm.denied_none": { en: "Denied", "zh-Hant": "已拒絕" },
  "perm.decision": { en: "Decision", "zh-Hant": "決定" },
  "result.title": { en: "Tool result", "zh-Hant": "工具結果" },
  "result.error": { en: "Tool error", "zh-Hant": "工具錯誤" },
  "run.ended": { en: "Run ended", "zh-Hant": "執行結束" },
  "run.stop_reason": { en: "stop reason", "zh-Hant": "停止原因" },
  "run.steps": { en: "steps", "zh-Hant": "步數" },
  "run.final": { en: "Final answer", "zh-Hant": "最終答案" },
  "error.title": { en: "Error", "zh-Hant": "錯誤" },
  "render.failed": { en: "Cannot draw a {type} event: {err}", "zh-Hant": "無法顯示 {type} 事件：{err}" },
  "error.detail": { en: "detail", "zh-Hant": "細節" },

  // stages.js and stages/: the stage panels
  "st.failed": { en: "This panel failed: {err}", "zh-Hant": "這個面板出錯了：{err}" },
  "st.its_model": { en: "its model", "zh-Hant": "它的模型" },
  "st.live": {
    en: "Live: the demo server on this machine answers, with {model}.",
    "zh-Hant": "即時：這台電腦上的示範伺服器有回應，使用 {model}。",
  },
  "st.no_token": {
    en: "This page carries no agentloop-token, so the server may refuse; open the book from the demo server's own address.",
    "zh-Hant": "這個頁面沒有 agentloop-token，伺服器可能拒絕；請從示範伺服器自己的位址開啟這本書。",
  },
  "st.file_note": {
    en: "A browser does not let a page opened from a file read its recordings. Serve the built book instead: {http}, or {serve}.",
    "zh-Hant": "瀏覽器不讓從檔案開啟的頁面讀取錄製檔。請改用伺服器提供建好的書：{http}，或 {serve}。",
  },
  "st.note": {
    en: "Recorded answers of the demo server. To ask it yourself: {serve}, then open {url}.",
    "zh-Hant": "這是示範伺服器錄下的回答。要自己問它：{serve}，然後開啟 {url}。",
  },
  "st.note_published": {
    en: "Recorded answers of the demo server. To ask it yourself: {serve}, then open {url} (the published book always replays).",
    "zh-Hant": "這是示範伺服器錄下的回答。要自己問它：{serve}，然後開啟 {url}（發佈的書一律重播）。",
  },
  "st.file": {
    en: "Opened from a file: the recordings cannot be read.",
    "zh-Hant": "從檔案開啟：無法讀取錄製檔。",
  },
  "st.none": {
    en: "This panel names no recording (data-replay).",
    "zh-Hant": "這個面板沒有指定錄製檔（data-replay）。",
  },
  "st.loading": { en: "Loading the recordings…", "zh-Hant": "正在載入錄製檔…" },
  "st.missing": { en: "Recording missing: {which}.", "zh-Hant": "錄製檔遺失：{which}。" },
  "st.loaded_one": { en: "1 recording loaded.", "zh-Hant": "已載入 1 個錄製檔。" },
  "st.loaded": { en: "{n} recordings loaded.", "zh-Hant": "已載入 {n} 個錄製檔。" },
  "st.recorded_tiny": { en: "Recorded with the tiny tokenizers", "zh-Hant": "用迷你分詞器錄下的" },
  "st.example_texts": { en: "Example texts", "zh-Hant": "範例文字" },
  "st.text": { en: "Text", "zh-Hant": "文字" },
  "st.text_k": { en: "text", "zh-Hant": "文字" },
  "st.tokenize": { en: "Tokenize", "zh-Hant": "分詞" },
  "st.the_loaded_model": { en: "the loaded model", "zh-Hant": "已載入的模型" },
  "st.chars_bytes": {
    en: "{chars} characters, {bytes} UTF-8 bytes",
    "zh-Hant": "{chars} 個字元，{bytes} 個 UTF-8 位元組",
  },
  "st.n_tokens": { en: "{n} tokens", "zh-Hant": "{n} 個 token" },
  "st.split": { en: "{text} = {n} tokens, {bytes}", "zh-Hant": "{text} = {n} 個 token，{bytes}" },
  "st.joined": { en: "texts joined", "zh-Hant": "文字接起來" },
  "st.no_limit": { en: "0 (no limit)", "zh-Hant": "0（不限）" },
  "st.draw_one": { en: "Draw a token", "zh-Hant": "抽一個 token" },
  "st.draw_many": { en: "Draw 1,000", "zh-Hant": "抽 1,000 次" },
  "st.greedy_one": { en: "greedy: 1 token", "zh-Hant": "貪婪：1 個 token" },
  "st.kept_n": { en: "{n} kept", "zh-Hant": "保留 {n} 個" },
  "st.of_listed": {
    en: " of the {n} most likely tokens listed. The listed tokens hold {mass} of the model's probability (T = 1).",
    "zh-Hant": "，出自列出的 {n} 個最可能的 token。列出的 token 占模型機率的 {mass}（T = 1）。",
  },
  "st.of_listed_vocab": {
    en: " of the {n} most likely tokens listed, of {vocab} in the vocabulary. The listed tokens hold {mass} of the model's probability (T = 1).",
    "zh-Hant": "，出自列出的 {n} 個最可能的 token（詞彙表共 {vocab} 個）。列出的 token 占模型機率的 {mass}（T = 1）。",
  },
  "st.greedy_how": {
    en: "Temperature 0 is greedy decoding: the most likely token every time, the lower id on a tie; top-k and top-p do nothing.",
    "zh-Hant": "溫度 0 就是貪婪解碼：每次都選最可能的 token，平手時選 id 較小的；top-k 和 top-p 不起作用。",
  },
  "st.how": {
    en: "logits ÷ {temp} → top-k keeps {k} → softmax → top-p {p} keeps {kept} → renormalize → draw.",
    "zh-Hant": "logits ÷ {temp} → top-k 保留 {k} → softmax → top-p {p} 保留 {kept} → 重新正規化 → 抽樣。",
  },
  "st.all_listed": { en: "all listed", "zh-Hant": "全部列出的" },
  "st.exact": {
    en: "Exact: with these settings the kept set is what sample() keeps over the whole vocabulary.",
    "zh-Hant": "精確：在這些設定下，保留的集合就是 sample() 在整個詞彙表上保留的。",
  },
  "st.approx": {
    en: "With top-k {k}, the {others} tokens not listed would be candidates too; here the rules run over the {n} listed as if they were the whole vocabulary. Set top-k to {n} or less for the exact set.",
    "zh-Hant": "top-k 為 {k} 時，沒列出的 {others} 個 token 也會是候選；這裡把規則套在列出的 {n} 個上，當成整個詞彙表。把 top-k 設為 {n} 或更小即可得到精確的集合。",
  },
  "st.other": { en: "other", "zh-Hant": "其他" },
  "st.drew": {
    en: "Drew {piece} (id {id}): p_sampled {ps}, the model's p {p}.",
    "zh-Hant": "抽到 {piece}（id {id}）：p_sampled {ps}，模型的 p {p}。",
  },
  "st.draws": {
    en: "{n} draws: the \"draws\" column counts them; each share comes near p_kept.",
    "zh-Hant": "抽了 {n} 次：「抽中次數」欄記下每個的次數；各自的比例會接近 p_kept。",
  },
  "st.th_rank": { en: "rank", "zh-Hant": "名次" },
  "st.th_piece": { en: "piece", "zh-Hant": "片段" },
  "st.th_text": { en: "text", "zh-Hant": "文字" },
  "st.th_id": { en: "id", "zh-Hant": "id" },
  "st.th_p1": { en: "p (T = 1)", "zh-Hant": "p（T = 1）" },
  "st.th_scaled": { en: "after T, top-k", "zh-Hant": "套用 T、top-k 後" },
  "st.th_cum": { en: "cumulative", "zh-Hant": "累計" },
  "st.th_kept": { en: "kept", "zh-Hant": "保留" },
  "st.th_p_kept": { en: "p_kept", "zh-Hant": "p_kept" },
  "st.th_draws": { en: "draws", "zh-Hant": "抽中次數" },
  "st.yes": { en: "yes", "zh-Hant": "是" },
  "st.no": { en: "no", "zh-Hant": "否" },
  "st.no_topk": { en: "no (top-k)", "zh-Hant": "否（top-k）" },
  "st.no_topp": { en: "no (top-p)", "zh-Hant": "否（top-p）" },
  "st.ask": { en: "Ask {model}", "zh-Hant": "問 {model}" },
  "st.check": { en: "Check these settings on the server", "zh-Hant": "在伺服器上檢查這些設定" },
  "st.live_label": { en: "{model} (live)", "zh-Hant": "{model}（即時）" },
  "st.now_shown": {
    en: "The distribution now shown is the loaded model's, for the same conversation.",
    "zh-Hant": "現在顯示的是已載入模型對同一段對話的分布。",
  },
  "st.checked_same": {
    en: "The server's sample() keeps {server} over the whole vocabulary; this panel keeps {kept} of the {n} listed — the same.",
    "zh-Hant": "伺服器的 sample() 在整個詞彙表上保留 {server} 個；這個面板在列出的 {n} 個中保留 {kept} 個——一樣。",
  },
  "st.checked_differ": {
    en: "The server's sample() keeps {server} over the whole vocabulary; this panel keeps {kept} of the {n} listed. They differ only where the panel says its set is not exact (or when the model is not the one that made this distribution).",
    "zh-Hant": "伺服器的 sample() 在整個詞彙表上保留 {server} 個；這個面板在列出的 {n} 個中保留 {kept} 個。只有在面板說它的集合不精確時（或模型不是產生這個分布的那個）才會不同。",
  },
  "st.models_live": {
    en: "Live: the checkpoints in this machine's models/.",
    "zh-Hant": "即時：這台電腦 models/ 裡的檢查點。",
  },
  "st.unknown": { en: "Unknown stage panel {name}.", "zh-Hant": "未知的階段面板 {name}。" },
  "spec.model": { en: "model", "zh-Hant": "模型" },
  "spec.family": { en: "family", "zh-Hant": "家族" },
  "spec.architecture": { en: "architecture", "zh-Hant": "架構" },
  "spec.model_type": { en: "model type", "zh-Hant": "模型類型" },
  "spec.layers": { en: "layers", "zh-Hant": "層數" },
  "spec.layer_type_counts": { en: "layer types", "zh-Hant": "層的種類" },
  "spec.hidden_size": { en: "hidden size", "zh-Hant": "隱藏維度" },
  "spec.heads": { en: "attention heads", "zh-Hant": "注意力頭數" },
  "spec.kv_heads": { en: "key/value heads", "zh-Hant": "鍵／值頭數" },
  "spec.head_dim": { en: "head dim", "zh-Hant": "每頭維度" },
  "spec.vocabulary": { en: "vocabulary", "zh-Hant": "詞彙量" },
  "spec.context_length": { en: "context length", "zh-Hant": "上下文長度" },
  "spec.parameters": { en: "parameters", "zh-Hant": "參數量" },
  "spec.dtype": { en: "precision here", "zh-Hant": "這裡的精度" },
  "spec.precision": { en: "why this precision", "zh-Hant": "為何用這個精度" },
  "spec.device": { en: "device", "zh-Hant": "裝置" },
  "spec.temperature": { en: "temperature", "zh-Hant": "溫度" },
  "spec.top_p": { en: "top-p", "zh-Hant": "top-p" },
  "spec.top_k": { en: "top-k", "zh-Hant": "top-k" },
  "spec.from": { en: "from", "zh-Hant": "來源" },
  "spec.from_name": { en: "the name it was loaded by", "zh-Hant": "載入時用的名稱" },
  "spec.from_counted": { en: "counted in the loaded model", "zh-Hant": "在已載入的模型中計算" },
  "spec.from_max_model_len": { en: "the vLLM server's {flag}", "zh-Hant": "vLLM 伺服器的 {flag}" },
  "spec.from_dtype": { en: "{files} files; {code} picks", "zh-Hant": "檔案為 {files}；由 {code} 選定" },
  "spec.from_precision": {
    en: "the device, the CPU's {flags} or {flags2} flag, the model's size",
    "zh-Hant": "裝置、CPU 的 {flags} 或 {flags2} 旗標、模型大小",
  },
  "precision.gpu": { en: "a GPU computes bfloat16 natively", "zh-Hant": "GPU 原生支援 bfloat16 運算" },
  "precision.cpu_bfloat16": {
    en: "this CPU has bfloat16 instructions (AMX or AVX512-BF16) and the model is of real size: bfloat16, its linear layers packed by oneDNN",
    "zh-Hant": "這個 CPU 有 bfloat16 指令（AMX 或 AVX512-BF16），模型是真實大小：用 bfloat16，線性層由 oneDNN 重排",
  },
  "precision.cpu_float32": {
    en: "this CPU has no bfloat16 instructions (AMX or AVX512-BF16), so float32",
    "zh-Hant": "這個 CPU 沒有 bfloat16 指令（AMX 或 AVX512-BF16），所以用 float32",
  },
  "precision.tiny": {
    en: "a tiny model: float32 keeps its recorded runs' tokens, at no cost in speed",
    "zh-Hant": "迷你模型：用 float32 才能保持錄下的執行中的 token，速度也不受影響",
  },
  "precision.asked": { en: "AGENTLOOP_DTYPE asked for it", "zh-Hant": "由 AGENTLOOP_DTYPE 指定" },
  "spec.from_generation": { en: "{file}, else the family", "zh-Hant": "{file}，否則用家族的設定" },
  "menu.th_model": { en: "model", "zh-Hant": "模型" },
  "menu.th_kind": { en: "kind", "zh-Hant": "種類" },
  "menu.th_family": { en: "family", "zh-Hant": "家族" },
  "menu.th_here": { en: "in models/", "zh-Hant": "在 models/ 中" },
  "menu.th_disk": { en: "on disk", "zh-Hant": "磁碟上" },
  "menu.th_parameters": { en: "parameters (file headers)", "zh-Hant": "參數量（檔案標頭）" },
  "menu.loaded_mark": { en: " (loaded)", "zh-Hant": "（已載入）" },

  // api.js
  "api.no_route": {
    en: "The demo server lists no API route named {name}.",
    "zh-Hant": "示範伺服器沒有列出名為 {name} 的 API 路由。",
  },
  "api.refused": {
    en: "The demo server refused the request (HTTP {status}).",
    "zh-Hant": "示範伺服器拒絕了這個請求（HTTP {status}）。",
  },
  "api.no_json": {
    en: "{path} answered HTTP {status} without JSON",
    "zh-Hant": "{path} 回應了 HTTP {status}，但沒有 JSON",
  },

  // attach.js: files for a question, and the media panel (chapter 7)
  "attach.attach": { en: "Attach files", "zh-Hant": "附加檔案" },
  "attach.drop": {
    en: "Drop an image, a sound or a video here, or",
    "zh-Hant": "把圖片、聲音或影片拖到這裡，或",
  },
  "attach.pick": { en: "pick files", "zh-Hant": "選擇檔案" },
  "attach.remove": { en: "Remove", "zh-Hant": "移除" },
  "attach.cannot": {
    en: "Cannot be attached as media ({plain}) — {list}",
    "zh-Hant": "無法當作媒體附加 ({plain}) — {list}",
  },
  "attach.plain_file": { en: "kept as a plain file in /data", "zh-Hant": "以一般檔案存在 /data" },
  "attach.n_files": { en: "· {n} to send", "zh-Hant": "· {n} 個待送出" },
  "attach.harness_none": {
    en: "{harness} takes no attachments: its questions are sent without files (agentloop's own loop takes them).",
    "zh-Hant": "{harness} 不收附件：送出的問題不帶檔案（agentloop 自己的迴圈才收）。",
  },
  "attach.too_big": {
    en: "{name} is larger than the server takes ({max}).",
    "zh-Hant": "{name} 超過伺服器接受的大小 ({max}).",
  },
  "attach.too_many": { en: "At most 4 files a question.", "zh-Hant": "每個問題最多 4 個檔案。" },
  "attach.frames_kept": { en: "{n} frames kept for the model", "zh-Hant": "{n} 留給模型的影格" },
  "attach.n_tokens": { en: "{n} tokens", "zh-Hant": "{n} 個 token" },
  "attach.refused": { en: "does not read it: {why}", "zh-Hant": "不讀它: {why}" },
  "attach.turn": { en: "The user turn as the model reads it", "zh-Hant": "模型讀到的使用者回合" },
  "attach.recorded": { en: "Recorded examples", "zh-Hant": "錄好的範例" },
  "attach.replay_note": {
    en: "Replaying recorded examples. Serve the book with the demo server (make serve) to drop your own file.",
    "zh-Hant": "正在重播錄好的範例。用示範伺服器（make serve）提供本書，就能拖放自己的檔案。",
  },
  "attach.replay_failed": { en: "Could not replay {path}: {err}", "zh-Hant": "無法重播 {path}：{err}" },
  "attach.expanding": { en: "Expanding the placeholders…", "zh-Hant": "正在展開佔位符…" },
  "attach.kind_image": { en: "image", "zh-Hant": "圖片" },
  "attach.kind_audio": { en: "sound", "zh-Hant": "聲音" },
  "attach.kind_video": { en: "video", "zh-Hant": "影片" },
  "attach.kind_file": { en: "file", "zh-Hant": "檔案" },

  // units (issue 47): a duration's key in a panel's line, in the reader's language
  "k.ms": { en: "ms", "zh-Hant": "毫秒" },
};

// Each key's zh-Hans: its zh-Hant through the book's conversion (scripts/zh_hans_assets.py writes the file;
// tests/test_zh_hans.py fails when it is stale), never written here.
for (const [key, text] of Object.entries(ZH_HANS)) if (STRINGS[key]) STRINGS[key]["zh-Hans"] = text;

let current = null;

// The panels' language: the page's (its edition), until a panel's select changes it on this page.
export function lang() {
  if (current) return current;
  current = pageLang();
  return current;
}

// A new page (Material's instant navigation keeps this module): its panels start in its language.
export function resetToPage() {
  current = null;
  if (typeof document !== "undefined") {
  document.documentElement.dataset.alLang = lang();
  // Subscribed before the panels' modules subscribe (they import this one): their next page's
  // panels start in that page's language.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(() => {
      if (lang() !== pageLang()) resetToPage();
    });
  }
}
}

export function setLang(value) {
  if (!LANGS.includes(value) || value === lang()) return;
  current = value;
  try {
    localStorage.setItem(LANG_KEY, value);
  } catch {
    // not remembered, still switched
  }
  document.documentElement.dataset.alLang = value;
  window.dispatchEvent(new CustomEvent("agentloop-lang", { detail: value }));
}

// The text of `key` in the chosen language, with {name} filled from vars. A key missing from the
// table shows as itself, so a gap is visible rather than blank (the tests check there is none).
export function t(key, vars) {
  return translate(key, vars, lang());
}

// The same in a language named here, whatever the reader chose (errors carry both).
export function translate(key, vars, code) {
  const entry = STRINGS[key];
  const text = entry ? (entry[code] ?? entry.en) : key;
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name) =>
    vars[name] === undefined || vars[name] === null ? whole : String(vars[name]),
  );
}

// An error event from a key of the table, in both languages as the server's errors are ({en, zh}):
// the renderer shows the one the reader chose, and still has the other after a switch.
export function tableError(key, vars) {
  return {
    type: "error",
    message: {
      en: translate(key, vars, "en"),
      zh: translate(key, vars, "zh-Hant"),
      "zh-Hans": translate(key, vars, "zh-Hans"),
    },
  };
}

// A text the server sent in both languages, {en, zh}: the one the reader chose (the other when it
// is missing). The server adds "zh-Hans" (zh converted) to each; a recording made before it has only
// zh, which a zh-Hans reader is shown rather than nothing. A plain string is itself.
export function pick(message) {
  if (!message || typeof message !== "object") return message == null ? "" : String(message);
  const chosen = lang();
  const zh = message.zh || message["zh-Hant"];
  const text = chosen === "en" ? message.en : chosen === "zh-Hans" ? message["zh-Hans"] || zh : zh;
  return text || message.en || zh || "";
}

// The Chinese of a {en, zh} text in the chosen Chinese edition (zh-Hans where the server sent it).
export function pickZh(message) {
  if (!message || typeof message !== "object") return "";
  const zh = message.zh || message["zh-Hant"] || "";
  return lang() === "zh-Hans" ? message["zh-Hans"] || zh : zh;
}

// The lang attribute for text in the chosen language.
export function htmlLang() {
  return lang();
}

// The switch: a small select, English or Chinese, that every panel puts in its top line.
export function langSwitch() {
  const select = document.createElement("select");
  select.className = "al-lang";
  select.setAttribute("aria-label", t("lang.label"));
  for (const value of LANGS) {
    const o = document.createElement("option");
    o.value = value;
    o.lang = value;
    o.textContent = LANG_NAMES[value];
    select.append(o);
  }
  select.value = lang();
  select.addEventListener("change", () => setLang(select.value));
  return select;
}

// fn(lang) after every switch, on this page.
export function onLang(fn) {
  window.addEventListener("agentloop-lang", (e) => fn(e.detail));
}

if (typeof document !== "undefined") {
  document.documentElement.dataset.alLang = lang();
  // Subscribed before the panels' modules subscribe (they import this one): their next page's
  // panels start in that page's language.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(() => {
      if (lang() !== pageLang()) resetToPage();
    });
  }
}
