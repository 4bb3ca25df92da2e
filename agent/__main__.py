"""``python -m agent <command>``.

chat [--user-id ID | --new-user]    text chat with the agent in this terminal (tool calls and scores shown)
dev | start | console | connect     the LiveKit Agents worker, through livekit-agents' CLI
download-files                      fetch plugin model files (nothing needed for the offline defaults)
"""

from __future__ import annotations

import sys

from agent import plugins


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0
    plugins.register()  # on the main thread, before any loop or worker thread exists
    # Each command loads its own stack (the help above loads none of livekit).
    if argv[0] == "chat":
        from agent.chat_cli import main as chat_main

        return chat_main(argv[1:])
    from agent.worker import run_cli

    # argv[0] stays this file's path: click names the program from it ("python -m agent")
    sys.argv = [sys.argv[0], *argv]
    run_cli()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
