"""The figures' labels in Traditional Chinese (zh-Hant), keyed by the English that scripts/figures.py writes.

figures.py draws every figure twice, `NAME.svg` and `NAME.zh-Hant.svg`; in the second each label passed through
its `tr()` is looked up here, and a label missing here stops the drawing (a figure is never half translated).
A `{name}` is filled in by `str.format` with the same values as the English. The words are those of
docs/hooks/terms.zh-Hant.tsv; code identifiers, event names, file names and token texts are never passed to
`tr()`, so they stay as they are. After changing a label, run scripts/figures.py, then
scripts/subset_cjk_font.py: the shipped font must hold every character drawn (tests/test_figures.py checks it).
"""

from __future__ import annotations

ZH = {
    # 1. the loop
    "The agent loop: render, generate, parse, then validate, ask and run a tool": (
        "代理迴圈：渲染、生成、解析，接著驗證、詢問並執行工具"
    ),
    "question": "問題",
    "render": "渲染",
    "generate": "生成",
    "parse": "解析",
    "validate": "驗證",
    "permission": "權限",
    "run the tool": "執行工具",
    "a tool call": "工具呼叫",
    "result appended:": "附上結果：",
    "the next step": "進入下一步",
    "final answer": "最終答案",
    "no call": "沒有呼叫",
    "Blue: the model's side of a step. Orange: the harness's checks. "
    "Under each box, the events it sends.": (
        "藍色：一步之中模型這一側。橘色：執行框架的檢查。每個方塊下方是它送出的事件。"
    ),
    # 2. what a family knows
    "What a family knows, for Gemma 4 and Qwen3.5": "模型家族知道什麼：Gemma 4 與 Qwen3.5",
    "stop pieces": "停止片段",
    "thinking opens with": "思考的開頭",
    "channel switches": "頻道切換",
    "thinking kept under": "思考存放的鍵",
    "Read from agentloop/model_families: the loop asks the family, never the model's name.": (
        "讀自 agentloop/model_families：迴圈問的是家族，從不看模型的名稱。"
    ),
    # 3. the model folder
    "The files of models/{name} and who reads each": "models/{name} 的檔案，以及各由誰讀取",
    "family registry + transformers: the architecture": "家族註冊表 + transformers：架構",
    "transformers: the weights": "transformers：權重",
    "AutoTokenizer: vocabulary and merges": "AutoTokenizer：詞彙表與合併規則",
    "AutoTokenizer: the tokens' roles": "AutoTokenizer：各 token 的角色",
    "render(): prompt from messages": "render()：由訊息產生提示",
    "stop tokens and recommended sampling": "停止 token 與建議的取樣設定",
    "the image processor": "影像處理器",
    "the video processor": "影片處理器",
    "/api/status: the live panel's example questions": "/api/status：即時面板的範例問題",
    "people: the model card": "給人讀：模型卡",
    "people: the training recipe": "給人讀：訓練配方",
    "Not in this folder: {names} (the family supplies it).": "不在此資料夾：{names}（由家族提供）。",
    # 4. BPE
    "BPE merges on the word {word!r}": "BPE 在單字 {word!r} 上的合併",
    "\u201c{word}\u201d through the merges of models/{name}/tokenizer.json": (
        "「{word}」經過 models/{name}/tokenizer.json 的合併規則"
    ),
    "rule {r} of {n}:  {a} + {b} \u2192 {ab}": "第 {r} 條規則（共 {n} 條）：{a} + {b} \u2192 {ab}",
    "the characters, one piece each": "逐個字元，一個字元一個片段",
    "No rule joins what is left: {count} token(s), id {ids}. "
    "A rule learned earlier (a lower number) applies first.": (
        "剩下的片段已沒有規則可合併：{count} 個 token，id {ids}。較早學到的規則（編號較小）先套用。"
    ),
    # 5. a tool
    "A Tool's four fields: three go into the prompt, run stays with the harness": (
        "Tool 的四個欄位：三個進入提示，run 留在執行框架"
    ),
    "a Python function": "一個 Python 函式",
    "Tool run_python (agentloop/tools.py)": "Tool run_python（agentloop/tools.py）",
    "into the chat template": "放進聊天範本",
    "the harness": "執行框架",
    "runs it when approved": "核准後執行它",
    "the model sees only the text": "模型只看得到這些文字",
    "The model never learns how a tool works, only what its description promises.": (
        "模型永遠不知道工具如何運作，只知道它的描述承諾了什麼。"
    ),
    # 6. the template
    "The running question's messages rendered by the chat template into one string": (
        "貫穿全書的問題，其訊息經聊天範本渲染成一個字串"
    ),
    "\u2026 {n} lines: the tools section (chapter 5) \u2026": "\u2026 {n} 行：工具區段（第 5 章）\u2026",
    "one string": "一個字串",
    "Green: the messages' own text. Blue: what the template wrote around it.": (
        "綠色：訊息本身的文字。藍色：範本在它周圍寫入的內容。"
    ),
    # 8a. the KV cache
    "The KV cache through step 1's prefill and decode and step 2's prefill": (
        "KV 快取歷經第 1 步的預填與解碼，以及第 2 步的預填"
    ),
    "step 1 prefill": "第 1 步預填",
    "step 1 decode": "第 1 步解碼",
    "step 2 prefill": "第 2 步預填",
    "step 2 decode": "第 2 步解碼",
    "{n} prompt tokens, one pass": "{n} 個提示 token，一次傳遞",
    "cached": "已快取",
    "+{n}, one pass each": "+{n}，每個一次傳遞",
    "{n} reused from the cache": "{n} 個取自快取",
    "{n} computed": "計算 {n} 個",
    "From chapter 8's recording (ch08.jsonl), widths to scale. Grey: keys and values already "
    "in the cache.": "取自第 8 章的錄製（ch08.jsonl），寬度依比例。灰色：已在快取中的鍵與值。",
    "Blue: computed together in one pass. Orange: one token per pass. A step's last token is "
    "never fed back.": (
        "藍色：在一次傳遞中一起計算。橘色：每次傳遞一個 token。一步的最後一個 token 從不送回模型。"
    ),
    # 8b. attention
    "Attention of the prompt's last token over the whole prompt, from the tiny model": (
        "提示的最後一個 token 對整個提示的注意力，取自小型模型"
    ),
    "system prompt": "系統提示",
    "tools section": "工具區段",
    "turn": "回合開頭",
    "Layer {layer} of {n} (full attention), the prompt's last position, {heads} heads averaged": (
        "第 {layer} 層（共 {n} 層，全注意力），提示的最後位置，{heads} 個注意力頭的平均"
    ),
    "{name}: {share:.0%}": "{name}：{share:.0%}",
    "Each bar is one of the prompt's {n} tokens, its height the weight the last token gives it; "
    "the weights add up to 100%.": (
        "每根長條是提示的 {n} 個 token 之一，高度是最後一個 token 給它的權重；權重總和為 100%。"
    ),
    "Computed by scripts/figures.py with the model's own forward pass over chapter 1's "
    "recorded prompt.": "由 scripts/figures.py 以模型本身對第 1 章錄下的提示做前向傳遞算出。",
    # 9. sampling
    "Softmax, temperature, top-k, top-p and the draw, as bars": (
        "以長條呈現 softmax、溫度、top-k、top-p 與抽取"
    ),
    "\u2192 the draw": "\u2192 抽取",
    "cut": "刪去",
    "drawn": "抽中",
    "kept": "保留",
    "Chapter 9's recorded distribution, its {shown} most likely tokens; sample() kept {kept} "
    "and drew \u201c{drew}\u201d (p_sampled {p:.2f}).": (
        "第 9 章錄下的分布中最可能的 {shown} 個 token；sample() 保留 {kept} 個，"
        "抽中「{drew}」（p_sampled {p:.2f}）。"
    ),
    "Each column is the one before it after one rule.": "每一欄是前一欄再套用一條規則的結果。",
    # 10. MTP
    "One round of MTP drafting: six guesses, checked by one forward pass": (
        "MTP 草稿的一輪：六個猜測，由一次前向傳遞檢查"
    ),
    "drafter's guesses": "草稿模型的猜測",
    "turned down": "被否決",
    "dropped": "捨棄",
    "one forward pass checks all six guesses": "一次前向傳遞檢查全部六個猜測",
    "tokens written": "寫出的 token",
    "From ch10-mtp.jsonl, step 1, round 1: after \u201c{first}\u201d the model kept {kept} of {n} "
    "guesses; at guess {next} its own pick was \u201c{own}\u201d.": (
        "取自 ch10-mtp.jsonl 第 1 步第 1 輪：在「{first}」之後，模型保留了 {n} 個猜測中的 {kept} 個；"
        "在第 {next} 個猜測，它自己選的是「{own}」。"
    ),
    "The recording keeps the tokens written, not the guess turned down: it is drawn as \u201c?\u201d.": (
        "錄製只存下寫出的 token，不存被否決的猜測：圖中畫成「?」。"
    ),
    "Grey: the token picked before the round. Green: kept guesses. Orange: the model's own token.": (
        "灰色：這一輪之前選出的 token。綠色：保留的猜測。橘色：模型自己的 token。"
    ),
    # 11. backends
    "The Backend interface: SimpleBackend in this process, VLLMBackend over HTTP": (
        "Backend 介面：SimpleBackend 在本行程內，VLLMBackend 經由 HTTP"
    ),
    "asks only the Backend": "只問 Backend",
    "transformers, this process": "transformers，本行程",
    "text side here": "文字端在這裡",
    "a server": "一個伺服器",
    "token ids": "token id",
    "tokens, log-probs": "token、對數機率",
    "Both yield the same prefill, token and done events.": "兩者都產生同樣的 prefill、token 與 done 事件。",
    # 12. channels
    "Step 1 of the running question with thinking on, each token in its channel": (
        "開啟思考時，貫穿全書的問題的第 1 步，每個 token 標出所屬頻道"
    ),
    "Step 1 of ch12-thinking-qwen.jsonl, token by token": "ch12-thinking-qwen.jsonl 的第 1 步，逐個 token",
    # 13. the sandbox
    "The walls around the model's code in run_python's sandbox": "run_python 的沙盒中圍住模型程式碼的層層牆",
    "the host: home folders, /etc, the repository, the network, the server's keyring": (
        "主機：家目錄、/etc、本儲存庫、網路、伺服器的金鑰圈"
    ),
    "bubblewrap: new user, PID, network, IPC, UTS, cgroup and mount namespaces": (
        "bubblewrap：新的 user、PID、network、IPC、UTS、cgroup 與 mount 命名空間"
    ),
    "a cgroup: {memory} for all processes, no swap": "一個 cgroup：所有行程合計 {memory}，不用 swap",
    "seccomp: keyctl, io_uring, IP sockets, ptrace, mount, unshare \u2026 refused": (
        "seccomp：拒絕 keyctl、io_uring、IP socket、ptrace、mount、unshare \u2026"
    ),
    "prlimit: {cpu} s CPU, {memory} each, {processes} processes; deadline {deadline:g} s": (
        "prlimit：CPU {cpu} s、每個行程 {memory}、{processes} 個行程；期限 {deadline:g} s"
    ),
    "as nobody, uid 65534": "以 nobody 身分，uid 65534",
    "read-only": "唯讀",
    "the conversation's, {size} at most": "對話的資料夾，最多 {size}",
    "{size} in memory": "{size}，在記憶體中",
    # 14. stops
    "How a step ends (finish reasons) and how a run ends (stop reasons)": (
        "一步如何結束（結束原因），一次執行如何結束（停止原因）"
    ),
    "a step": "一步",
    "generate(): tokens": "generate()：token",
    "a run": "一次執行",
    "run(): steps": "run()：一步步",
    "steps make a run": "多步組成一次執行",
    "FINISH_REASONS and STOP_REASONS, agentloop/events.py": "FINISH_REASONS 與 STOP_REASONS，agentloop/events.py",
    # 15. the checks
    "A tool call's way through validation, the repeat check and permission": (
        "工具呼叫依序通過驗證、重複檢查與權限"
    ),
    "parsed call": "解析出的呼叫",
    "run": "執行",
    "invalid arguments": "引數無效",
    "a repeated call": "重複的呼叫",
    "denied": "已拒絕",
    "error result:": "錯誤結果：",
    "Every call gets one result in the conversation; only an approved, valid, new call runs.": (
        "每個呼叫在對話中都得到一個結果；只有經核准、有效且新的呼叫才會執行。"
    ),
    # 16. pi
    "pi in RPC mode, its extension and the model endpoint, around the same backend": (
        "RPC 模式的 pi、它的擴充功能與模型端點，圍繞同一個後端"
    ),
    "the book's events": "本書的事件",
    "its own loop": "它自己的迴圈",
    "tools, permission": "工具、權限",
    "commands (stdin)": "命令（stdin）",
    "records (stdout)": "紀錄（stdout）",
    "The same model, prompt and tools; pi decides when to call the model again.": (
        "同樣的模型、提示與工具；由 pi 決定何時再呼叫模型。"
    ),
}
