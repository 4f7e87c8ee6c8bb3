"""The `agentloop` command: each subcommand is a small function over the package."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _models_build_tiny(args) -> int:
    from agentloop import tiny_models

    for path in tiny_models.build_all(args.out):
        print(path)
    return 0


def _models_train_tiny(args) -> int:
    from agentloop.paths import MODELS_DIR
    from agentloop.training.distill import DRAFTER_RECIPES, distill_recipe
    from agentloop.training.train import train_recipe

    if args.resume_after and not args.keep_phases:
        print(
            "train-tiny: --resume-after K needs --keep-phases DIR, where the run kept its phases",
            file=sys.stderr,
        )
        return 2
    for family in args.family:
        if not args.drafter_only:
            kept = args.keep_phases and args.keep_phases / family
            try:
                trained = train_recipe(
                    family,
                    MODELS_DIR,
                    args.threads,
                    phases_dir=kept,
                    resume_after=args.resume_after,
                )
            except ValueError as exc:  # a phase to resume from that is not this run's
                print(f"train-tiny: {exc}", file=sys.stderr)
                return 2
            print(trained)
        if family in DRAFTER_RECIPES:  # then its MTP drafter, distilled from the model just trained
            print(distill_recipe(family, MODELS_DIR, threads=args.threads))
    return 0


def _models_eval_tiny(args) -> int:
    from agentloop.training.evaluate import main

    return main(args)


def _sandbox(args) -> int:
    """`agentloop sandbox --folder DIR [--timeout S] -c CODE`: run CODE as run_python would, print
    the result (control characters escaped, as `agentloop run` prints). `agentloop sandbox --check`:
    the table of protections (protections.py)."""
    from pathlib import Path

    from agentloop import sandbox
    from agentloop.sandbox import protections
    from agentloop.terminal import visible

    if args.check:
        return protections.main()
    if args.folder is None or args.code is None:
        print("agentloop sandbox: give --folder DIR and -c CODE, or --check", file=sys.stderr)
        return 2
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    timeout = sandbox.DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    try:
        r = sandbox.run(args.code, folder, timeout=timeout)
    except sandbox.SandboxUnavailable as e:
        print(e, file=sys.stderr)
        return 2
    print(f"--- stdout\n{visible(r.stdout)}" if r.stdout else "--- stdout (empty)")
    print(f"--- stderr\n{visible(r.stderr)}" if r.stderr else "--- stderr (empty)")
    print(
        f"--- exit code {r.exit_code} after {r.ms:.0f} ms" + (f": {r.reason}" if r.reason else "")
    )
    print(f"--- memory of the sandbox as a whole: {r.cgroup}")
    return 0


def _tool(args) -> int:
    """One tool call, as pi's extension makes it: the arguments as JSON in, {output, is_error} as JSON out."""
    import json
    from pathlib import Path

    from agentloop.tools import TOOLS, ToolOutput, validate

    tool = TOOLS.get(args.name)
    try:
        call = json.loads(args.args)
        error = f"unknown tool {args.name!r}" if tool is None else validate(tool, call)
    except json.JSONDecodeError as e:
        error = f"the arguments are not JSON: {e}"
    out = (
        ToolOutput(f"Invalid arguments: {error}", True)
        if error
        else tool.run(call, Path(args.folder))
    )
    print(json.dumps({"output": out.output, "is_error": out.is_error}, ensure_ascii=False))
    return 0


def _pi_op(args) -> int:
    """One operation of pi's own tools in the sandbox, as pi's extension makes it: {op, args} as JSON
    on stdin, the result as JSON on stdout (pi/sandboxed.py)."""
    import json
    from pathlib import Path

    from agentloop.harnesses.pi.sandboxed import run_op

    try:
        request = json.loads(sys.stdin.read())
        result = run_op(str(request["op"]), dict(request["args"]), Path(args.folder))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        result = {"error": f"the operation is not readable: {e}"}
    print(json.dumps(result, ensure_ascii=False))
    return 0


def _run(args) -> int:
    from agentloop import terminal

    return terminal.run(args)


def _vllm_serve(args) -> int:
    from agentloop.model_backends.vllm.local import serve_forever

    return serve_forever(args.model, args.port)


def _vllm_up(args) -> int:
    """`agentloop vllm up MODEL`: vLLM in Docker for MODEL (its start's progress printed), or the
    container already up for it followed; the demo server started afterwards follows it too."""
    from agentloop import paths
    from agentloop.model_backends.vllm import docker

    ref, _ = paths.model_ref(args.model, folders=True)
    served = docker.in_container(ref)[1]
    if docker.running() is not None and docker.serving(args.port) == served:
        print(f"vLLM in Docker already serves {served} at http://127.0.0.1:{args.port}", flush=True)
        return 0
    docker.stop()  # one container of this project: another model's goes first
    for ev in docker.start(ref, args.port, mtp=args.mtp):
        if ev["type"] == "loading":
            print(ev["what"]["en"], flush=True)
    print(f"vLLM in Docker serves {served} at http://127.0.0.1:{args.port}", flush=True)
    return 0


def _vllm_down(args) -> int:
    from agentloop.model_backends.vllm import docker

    docker.stop()
    print("vLLM in Docker stopped (models/ and the compile cache stay)", flush=True)
    return 0


def _serve(args) -> int:
    from demo_server.server import serve

    if args.pi_logins:  # read by pi/command.py in every pi this server starts
        import os

        os.environ["AGENTLOOP_PI_LOGINS"] = "1"

    return serve(args.host, args.port, args.model, args.site)


def parser() -> argparse.ArgumentParser:
    from agentloop.harnesses import HARNESSES
    from agentloop.harnesses.settings import RunSettings
    from agentloop.model_backends import BACKENDS
    from agentloop.paths import DEFAULT_MODEL

    # The flags left out get run_settings' merge, whose defaults these help texts show
    d = RunSettings()
    p = argparse.ArgumentParser(prog="agentloop", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    models = sub.add_parser("models", help="build, download and list models").add_subparsers(
        dest="models_command", required=True
    )
    build = models.add_parser(
        "build-tiny", help="build the tiny checkpoints of the real architectures into models/"
    )
    build.add_argument("--out", default=None, help="folder to build into (default: models/)")
    build.set_defaults(func=_models_build_tiny)

    run = sub.add_parser("run", help="ask one question and watch the agent loop in the terminal")
    run.add_argument("question")
    run.add_argument(
        "--model",
        default=None,
        help=f"a name from the model menu, a Hugging Face id or a folder (default: {DEFAULT_MODEL})",
    )
    run.add_argument("--yes", action="store_true", help="approve every tool call without asking")
    run.add_argument("--json", action="store_true", help="print one event a line as JSON")
    run.add_argument(
        "--max-steps", type=int, default=None, help=f"model turns at most (default: {d.max_steps})"
    )
    run.add_argument(
        "--tools",
        default=None,
        help="comma-separated tools the model sees: run_python, list_files, "
        f"read_file (default: {','.join(d.tools)})",
    )
    run.add_argument("--no-tools", action="store_true", help="give the model no tools")
    recommended = "(default: the checkpoint's recommended sampling)"
    run.add_argument("--temperature", type=float, default=None, help=recommended)
    run.add_argument("--top-p", type=float, default=None, help=recommended)
    run.add_argument("--top-k", type=int, default=None, help=recommended)
    run.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help=f"max tokens per step (default: {d.max_new_tokens})",
    )
    run.add_argument(
        "--thinking",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"(default: {d.thinking})",
    )
    run.add_argument(
        "--mtp", action="store_true", help="drafted decoding with the model's MTP drafter (Gemma 4)"
    )
    run.add_argument(
        "--seed", type=int, default=None, help="the sampler's seed: the same sampled run every time"
    )
    run.add_argument(
        "--harness",
        choices=list(HARNESSES),
        default="simple",
        help="the built-in loop, or the pi coding agent in RPC mode (needs `npm ci`)",
    )
    run.add_argument(
        "--pi-model",
        default=None,
        help="with --harness pi: one of pi's own models, provider/id (needs its API key)",
    )
    run.add_argument(
        "--pi-tools",
        choices=["pi", "book"],
        default=None,
        help="with --harness pi: pi's own system prompt and tools, run in the sandbox (pi, the "
        "default), or the book's prompt and tools through pi (book)",
    )
    run.add_argument(
        "--pi-logins",
        action="store_true",
        help="with --pi-model: let pi use the logins and providers you keep in pi (~/.pi/agent's "
        "auth.json and models.json); off: only API keys in the environment",
    )
    run.add_argument(
        "--attach",
        action="append",
        default=[],
        metavar="FILE",
        help="attach a file (repeatable): an image, sound or video the model reads becomes its "
        "placeholder tokens, anything else a plain file in /data",
    )
    run.add_argument(
        "--folder",
        default=None,
        help="the conversation's folder, seen as /data (default: a new one)",
    )
    run.add_argument(
        "--keep",
        action="store_true",
        help="keep the new conversation's folder at the end, and say where (a plain folder: its "
        "quota is checked after each run, not enforced by the kernel)",
    )
    run.add_argument(
        "--backend",
        choices=list(BACKENDS),
        default="transformers",
        help="what runs the model: transformers here, or a vLLM server (--vllm-url)",
    )
    run.add_argument(
        "--vllm-url",
        default=None,
        help="the vLLM server (default: $VLLM_URL, else http://127.0.0.1:8100)",
    )
    run.set_defaults(func=_run)

    tr = models.add_parser(
        "train-tiny",
        help="train the tiny checkpoints to use tools (agent-qwen3_5, agent-gemma4 and its drafter)",
    )
    tr.add_argument(
        "--family", nargs="+", default=["qwen3_5", "gemma4"], choices=["qwen3_5", "gemma4"]
    )
    tr.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's own choice)"
    )
    tr.add_argument(
        "--keep-phases",
        type=Path,
        metavar="DIR",
        help="keep each phase's weights in DIR/<family>/phase-<i>, to measure them with eval-tiny --model",
    )
    tr.add_argument(
        "--resume-after",
        type=int,
        default=0,
        metavar="K",
        help="with --keep-phases: go on with the same run from its kept phase-K (a recipe longer than a session)",
    )
    tr.add_argument(
        "--drafter-only",
        action="store_true",
        help="only distill the MTP drafter (agent-gemma4-assistant) from the trained model",
    )
    tr.set_defaults(func=_models_train_tiny)
    ev = models.add_parser(
        "eval-tiny", help="measure the trained tiny models on held-out questions"
    )
    ev.add_argument("--model", nargs="+", default=["agent-qwen3_5", "agent-gemma4"])
    ev.add_argument("-n", type=int, default=200, help="held-out questions of the trained kinds")
    ev.add_argument(
        "--seed", type=int, default=1_000_003, help="held-out: training uses other seeds"
    )
    ev.add_argument(
        "--sets",
        nargs="+",
        default=None,
        metavar="SET",
        help="only these sets (default: all; names as the output prints them, e.g. 'follow-ups')",
    )
    ev.add_argument(
        "--conversations",
        type=int,
        default=None,
        help="conversations in each conversation set (default: a quarter of -n, at least 10)",
    )
    ev.add_argument("--check", action="store_true", help="exit 1 when a figure misses its target")
    ev.add_argument(
        "--slack", type=float, default=0.0, help="points below the targets that still pass"
    )
    ev.add_argument(
        "--card",
        action="store_true",
        help="write the figures into the model card's Measured section",
    )
    ev.set_defaults(func=_models_eval_tiny)

    sb = sub.add_parser(
        "sandbox", help="run Python code in run_python's sandbox and print the result"
    )
    sb.add_argument(
        "--check", action="store_true", help="print which protections hold on this machine"
    )
    sb.add_argument("--folder", help="the conversation's folder, seen as /data")
    sb.add_argument("--timeout", type=float, default=None, help="wall-clock limit in seconds")
    sb.add_argument("-c", dest="code", help="the code to run")
    sb.set_defaults(func=_sandbox)

    vllm = sub.add_parser("vllm", help="a vLLM server on this machine").add_subparsers(
        dest="vllm_command", required=True
    )
    vs = vllm.add_parser(
        "serve", help="serve a model with vLLM from its own venv (make vllm) on 127.0.0.1"
    )
    vs.add_argument("model", help="a model id or folder (e.g. models/agent-qwen3_5)")
    vs.add_argument("--port", type=int, default=8100)
    vs.set_defaults(func=_vllm_serve)
    vu = vllm.add_parser(
        "up",
        help="start vLLM in Docker (compose/compose.yaml) for a model, fetched into models/ first",
    )
    vu.add_argument("model", help="a model of the menu (agent-qwen3_5) or a Hugging Face id")
    vu.add_argument("--port", type=int, default=8100)
    vu.add_argument("--mtp", action="store_true", help="with speculative decoding (a GPU's vLLM)")
    vu.set_defaults(func=_vllm_up)
    vd = vllm.add_parser("down", help="stop vLLM in Docker (models/ and the compile cache stay)")
    vd.set_defaults(func=_vllm_down)
    tl = sub.add_parser(
        "tool", help="run one of agentloop's tools on a folder (pi's extension calls this)"
    )
    tl.add_argument("name", help="run_python, list_files or read_file")
    tl.add_argument("--folder", required=True, help="the conversation's folder, seen as /data")
    tl.add_argument("--args", required=True, help="the call's arguments as a JSON object")
    tl.set_defaults(func=_tool)
    po = sub.add_parser(
        "pi-op",
        help="run one operation of pi's own tools in the sandbox (pi's extension calls this)",
    )
    po.add_argument("--folder", required=True, help="the conversation's folder, seen as /data")
    po.set_defaults(func=_pi_op)

    srv = sub.add_parser(
        "serve", help="serve the built book with live panels, and the API they call"
    )
    srv.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default: 127.0.0.1, this machine only)",
    )
    srv.add_argument("--port", type=int, default=8000)
    srv.add_argument(
        "--model",
        default=None,
        help=f"a name from the model menu, a Hugging Face id or a folder (default: {DEFAULT_MODEL})",
    )
    srv.add_argument(
        "--site",
        default=None,
        help="the built book to serve (default: site/ of this repository, as `make book` builds it)",
    )
    srv.add_argument(
        "--pi-logins",
        action="store_true",
        help="let pi's own models use the logins and providers you keep in pi (~/.pi/agent's "
        "auth.json and models.json); off: only API keys in the environment",
    )
    srv.set_defaults(func=_serve)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
