// agentloop's one extension for pi (chapter 16), loaded by pi's own loader (jiti: no TypeScript
// install).
//
// It does four things and nothing else:
// 1. reports each request pi sends to its model provider, as a `notify` whose text starts with
// REQUEST_MARK,
//    so PiHarness can show the request as the book's `request` event;
// 2. asks before every tool call with ctx.ui.confirm, which in RPC mode is a question on stdout
// that PiHarness
//    answers with the reader's decision: no tool runs unapproved;
// 3. replaces pi's system prompt with agentloop's (AGENTLOOP_SYSTEM_PROMPT), so the model reads the
// same
// conversation in both harnesses (pi would add a <cwd> section the built-in harness does not have);
// 4. registers agentloop's tools (tools.py), named in AGENTLOOP_TOOLS, so pi offers the model the
// same tools
// the built-in harness does; each call runs `python -I -m agentloop tool`, the same code and sandbox,
// on the conversation's folder (AGENTLOOP_FOLDER), from pi's own working folder. Never from the
// conversation's folder: the model's code writes it, and `python -m` would import a package named
// agentloop from it. -I (isolated) keeps the working folder, PYTHONPATH and the user's site
// packages off sys.path, so the only agentloop is the virtual environment's.
// Left out: pi's TUI (RPC mode has none) and anything that changes what pi sends.

const REQUEST_MARK = "agentloop:request ";
// The built-in harness's words for a denial (simple_harness.py): the model reads the same refusal.
const DENIED =
  "The user denied this tool call. Do not run it again; answer without it or ask what to do.";

type AgentloopTool = { name: string; description: string; parameters: any };

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

  const system = process.env.AGENTLOOP_SYSTEM_PROMPT;
  if (system) pi.on("before_agent_start", () => ({ systemPrompt: system }));

  const tools: AgentloopTool[] = JSON.parse(process.env.AGENTLOOP_TOOLS || "[]");
  const python = process.env.AGENTLOOP_PYTHON || "python3";
  const folder = process.env.AGENTLOOP_FOLDER || "";
  // [quote:tools]
  for (const tool of tools) {
    pi.registerTool({
      name: tool.name,
      label: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      async execute(_id: string, params: any, signal: any, _onUpdate: any, ctx: any) {
        const argv = ["-I", "-m", "agentloop", "tool", tool.name, "--folder", folder,
                      "--args", JSON.stringify(params)];
        const run = await pi.exec(python, argv, { signal, cwd: ctx.cwd });
        let result: { output: string; is_error: boolean };
        try {
          result = JSON.parse(run.stdout);
        } catch {
          const why = `The tool could not run (exit ${run.code}): ${run.stderr}`;
          result = { output: why, is_error: true };
        }
        // pi marks a tool result as an error when execute throws.
        if (result.is_error) throw new Error(result.output);
        return { content: [{ type: "text", text: result.output }], details: {} };
      },
    });
  }
  // [/quote:tools]
}
