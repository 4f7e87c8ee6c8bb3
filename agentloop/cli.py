"""The `agentloop` command: each subcommand is a small function over the package."""

from __future__ import annotations

import argparse
import sys


def _models_build_tiny(args) -> int:
    from agentloop import tiny_models

    for path in tiny_models.build_all(args.out):
        print(path)
    return 0


def _sandbox(args) -> int:
    from agentloop import sandbox

    return sandbox.cli_main(args)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="agentloop", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    models = sub.add_parser("models", help="build, download and list models").add_subparsers(dest="models_command", required=True)
    build = models.add_parser("build-tiny", help="build the tiny checkpoints of the real architectures into models/")
    build.add_argument("--out", default=None, help="folder to build into (default: models/)")
    build.set_defaults(func=_models_build_tiny)

    sb = sub.add_parser("sandbox", help="run Python code in run_python's sandbox and print the result")
    sb.add_argument("--folder", required=True, help="the conversation's folder, seen as /data")
    sb.add_argument("--timeout", type=float, default=None, help="wall-clock limit in seconds")
    sb.add_argument("-c", dest="code", required=True, help="the code to run")
    sb.set_defaults(func=_sandbox)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
