// agentloop's one extension for pi (chapter 16), loaded by pi's own loader (jiti: no TypeScript
// install).
//
// It does these things and nothing else:
// 1. reports each request pi sends to its model provider, as a `notify` whose text starts with
//    REQUEST_MARK, so PiHarness can show the request as the book's `request` event;
// 2. asks before every tool call with ctx.ui.confirm, which in RPC mode is a question on stdout
//    that PiHarness answers with the reader's decision: no tool runs unapproved;
// 3. decides where each tool runs, as AGENTLOOP_PI_TOOLS says:
//    - "pi" (pi's own loop): pi's system prompt and pi's tools, each definition as pi builds it (its
//      description and the lines it adds to the prompt), with pi's pluggable operations pointed at
//      the sandbox: every read, write, listing, search and shell command is `agentloop pi-op`, one
//      sandbox run over the conversation's folder as /data (pi/sandboxed.py). The one change to the
//      prompt is the working folder it names: /data, where the tools run, not pi's own folder;
//    - "book" (pi with the book's tools): agentloop's system prompt (AGENTLOOP_SYSTEM_PROMPT) and
//      tools (tools.py, named in AGENTLOOP_TOOLS), each call `agentloop tool`, so the model reads
//      the same conversation in both harnesses.
// Either way the Python that runs a tool is started from pi's own working folder with -I (isolated:
// neither the working folder nor PYTHONPATH nor the user's site packages is on sys.path) and imports
// agentloop from the project's root (AGENTLOOP_RUNNER). Never from the conversation's folder: the
// model's code writes it, and a package named agentloop there would be imported.
// Left out: pi's TUI (RPC mode has none) and anything that changes what pi sends.

import { spawn } from "node:child_process";
import {
  createBashToolDefinition,
  createEditToolDefinition,
  createFindToolDefinition,
  createGrepToolDefinition,
  createLsToolDefinition,
  createReadToolDefinition,
  createWriteToolDefinition,
} from "@earendil-works/pi-coding-agent";

const REQUEST_MARK = "agentloop:request ";
// The built-in harness's words for a denial (simple_harness.py): the model reads the same refusal.
const DENIED =
  "The user denied this tool call. Do not run it again; answer without it or ask what to do.";
const DATA = "/data"; // the conversation's folder, as the sandbox names it

type AgentloopTool = { name: string; description: string; parameters: any };

const runner: string[] = JSON.parse(process.env.AGENTLOOP_RUNNER || '["python3", "-I", "-m", "agentloop"]');
const folder = process.env.AGENTLOOP_FOLDER || "";

// One run of agentloop's CLI, `stdin` written to it; its stdout parsed as JSON. Abort kills it.
function agentloop(argv: string[], stdin: string, signal?: AbortSignal): Promise<any> {
  return new Promise((resolve, reject) => {
    const child = spawn(runner[0], [...runner.slice(1), ...argv], { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const onAbort = () => child.kill("SIGKILL");
    signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => err.push(d));
    child.on("error", reject);
    child.on("close", (code: number | null) => {
      signal?.removeEventListener("abort", onAbort);
      if (signal?.aborted) return reject(new Error("aborted"));
      try {
        resolve(JSON.parse(Buffer.concat(out).toString()));
      } catch {
        reject(new Error(`The tool could not run (exit ${code}): ${Buffer.concat(err).toString()}`));
      }
    });
    child.stdin.end(stdin);
  });
}

// pi resolves a relative path against its own working folder, a folder of the project's; the model
// means one in /data, where the tools work. Any other absolute path stays as it is, and is looked up
// in the sandbox, which has nothing of the host's.
const HERE = process.cwd();
const inData = (path: string) =>
  path === HERE ? DATA : path.startsWith(`${HERE}/`) ? DATA + path.slice(HERE.length) : path;

// One sandbox run at a time: pi runs a reply's calls side by side, and the sandbox takes one run
// per folder (as root it lends the folder to the sandbox's user for the run).
let queue: Promise<unknown> = Promise.resolve();
function serial<T>(run: () => Promise<T>): Promise<T> {
  const next = queue.then(run, run);
  queue = next.catch(() => undefined);
  return next;
}

// One operation of pi's tools in the sandbox (pi/sandboxed.py); its {error} thrown, as pi expects.
function op(name: string, args: any, signal?: AbortSignal): Promise<any> {
  for (const key of ["path", "cwd"]) if (typeof args[key] === "string") args[key] = inData(args[key]);
  return serial(async () => {
    const request = JSON.stringify({ op: name, args });
    const result = await agentloop(["pi-op", "--folder", folder], request, signal);
    if (result.error) throw new Error(result.error);
    return result;
  });
}

// [quote:operations]
const readFile = async (path: string) => {
  const r = await op("read", { path });
  if (r.cut) throw new Error(`${path} is larger than pi's tools read here: read part of it with bash`);
  return Buffer.from(r.data, "base64");
};
const writeFile = async (path: string, content: string) => {
  await op("write", { path, data: Buffer.from(content).toString("base64") });
};
const access = (write: boolean) => async (path: string) => {
  if (!(await op("access", { path, write })).ok) throw new Error(`ENOENT: cannot open ${path}`);
};
const exists = async (path: string) => (await op("exists", { path })).ok;
const OPERATIONS: Record<string, any> = {
  read: { readFile, access: access(false) },
  write: { writeFile, mkdir: async (path: string) => void (await op("mkdir", { path })) },
  edit: { readFile, writeFile, access: access(true) },
  bash: {
    async exec(command: string, cwd: string, o: { onData: (d: Buffer) => void; signal?: AbortSignal; timeout?: number }) {
      const r = await op("bash", { command, cwd, timeout: o.timeout }, o.signal);
      o.onData(Buffer.from(r.output));
      if (r.timed_out) throw new Error(`timeout:${o.timeout}`);
      return { exitCode: r.exit_code };
    },
  },
  ls: {
    exists,
    async stat(path: string) {
      if (!(await exists(path))) throw new Error(`ENOENT: no such file or directory ${path}`);
      const dir = (await op("stat", { path })).dir;
      return { isDirectory: () => dir };
    },
    readdir: async (path: string) => (await op("readdir", { path })).names,
  },
  find: {
    exists,
    glob: async (pattern: string, cwd: string, o: { ignore: string[]; limit: number }) =>
      (await op("glob", { pattern, cwd, ignore: o.ignore, limit: o.limit })).paths,
  },
};
// [/quote:operations]

const quoted = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

// grep runs ripgrep on the host whatever its operations say (pi's docs): here it is GNU grep in
// the sandbox, through the same operation as bash, with pi's own definition for the model.
function grepInSandbox() {
  const definition = createGrepToolDefinition(DATA);
  return {
    ...definition,
    async execute(_id: string, p: any, signal: any) {
      const flags = ["-rnI", p.ignoreCase ? "-i" : "", p.literal ? "-F" : "-E",
        p.context ? `-C${Math.floor(p.context)}` : "", p.glob ? `--include=${quoted(p.glob)}` : ""];
      const command = `grep ${flags.filter(Boolean).join(" ")} -e ${quoted(p.pattern)} -- ${quoted(p.path || ".")}` +
        ` | head -n ${Math.floor(p.limit || 100)}`;
      const r = await op("bash", { command, cwd: DATA }, signal);
      return { content: [{ type: "text", text: r.output || "No matches found" }], details: {} };
    },
  };
}

const DEFINITIONS: Record<string, (ops: any) => any> = {
  read: (operations) => createReadToolDefinition(DATA, { operations }),
  bash: (operations) => createBashToolDefinition(DATA, { operations, exposeSessionEnvironment: false }),
  edit: (operations) => createEditToolDefinition(DATA, { operations }),
  write: (operations) => createWriteToolDefinition(DATA, { operations }),
  ls: (operations) => createLsToolDefinition(DATA, { operations }),
  find: (operations) => createFindToolDefinition(DATA, { operations }),
};

export default function (pi: any) {
  // [quote:request]
  pi.on("before_provider_request", (event: any, ctx: any) => {
    ctx.ui.notify(REQUEST_MARK + JSON.stringify(event.payload), "info");
  });
  // [/quote:request]

  // [quote:permission]
  // A gate fails closed: anything but a clear yes blocks the call.
  pi.on("tool_call", async (event: any, ctx: any) => {
    const call = { call_id: event.toolCallId, name: event.toolName, args: event.input };
    const question = JSON.stringify(call);
    const approved = await ctx.ui.confirm("agentloop:permission", question);
    return approved === true ? undefined : { block: true, reason: DENIED };
  });
  // [/quote:permission]

  if (process.env.AGENTLOOP_PI_TOOLS === "pi") {
    // [quote:pi-tools]
    // Every tool pi has, so none runs on the host; pi's --tools picks those the model sees.
    for (const [name, make] of Object.entries(DEFINITIONS)) pi.registerTool(make(OPERATIONS[name]));
    pi.registerTool(grepInSandbox());
    // pi's prompt names its working folder; the tools work in /data.
    pi.on("before_agent_start", (event: any) => {
      event.systemPromptOptions.cwd = DATA;
    });
    // [/quote:pi-tools]
    return;
  }

  const system = process.env.AGENTLOOP_SYSTEM_PROMPT;
  if (system) pi.on("before_agent_start", () => ({ systemPrompt: system }));

  const tools: AgentloopTool[] = JSON.parse(process.env.AGENTLOOP_TOOLS || "[]");
  // [quote:tools]
  for (const tool of tools) {
    pi.registerTool({
      name: tool.name,
      label: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      async execute(_id: string, params: any, signal: any) {
        const argv = ["tool", tool.name, "--folder", folder, "--args", JSON.stringify(params)];
        const result = await serial(() => agentloop(argv, "", signal));
        // pi marks a tool result as an error when execute throws.
        if (result.is_error) throw new Error(result.output);
        return { content: [{ type: "text", text: result.output }], details: {} };
      },
    });
  }
  // [/quote:tools]
}
