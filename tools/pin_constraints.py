"""Write constraints.txt: the exact version of every package that requirements.txt brings in.

requirements.txt pins what the project imports; their own dependencies were left to float, and a new
release of one (httpx2 2.17, under openai) once turned a fresh install red. `make install` passes this
file to pip with `-c`, so a fresh clone gets the set the tests last passed with.

Run it after changing requirements.txt (`make constraints`); it asks pip to resolve requirements.txt
from the index as a fresh install would (`--dry-run --ignore-installed`) and installs nothing. Like
pip-compile, it keeps the versions already pinned where they still fit (`--upgrade` resolves everything
anew), and keeps torch at the CPU build the Makefile installs first.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements.txt"
CONSTRAINTS = ROOT / "constraints.txt"
HEADER = """\
# Every package a fresh install of requirements.txt brings in, at the version the tests passed with.
# Written by `make constraints` (tools/pin_constraints.py) from requirements.txt; do not edit by hand.
# `make install` passes it to pip with -c: a new release of a dependency's dependency cannot
# change a fresh clone until this file is written again and the tests pass with it.
"""


def resolved(requirements: Path = REQUIREMENTS, keep: Path | None = None) -> dict[str, str] | None:
    """{distribution name: version} of what pip would install into an empty environment, within the
    versions of `keep` when given; None when pip finds no such set."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        pip = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--dry-run",
             "--ignore-installed", "--report", str(report), "torch==2.13.0", "-r", str(requirements),
             *(["-c", str(keep)] if keep else [])],
            capture_output=True,  # pip warns once per package about this machine's extra index folders
            text=True,
        )  # fmt: skip
        if pip.returncode:
            print(pip.stderr.strip().splitlines()[-1] if pip.stderr.strip() else f"pip exit {pip.returncode}")
            return None
        installs = json.loads(report.read_text(encoding="utf-8"))["install"]
    # A local label (torch's "+cpu") names the build, not the release: "==2.13.0" admits the build on disk.
    return {item["metadata"]["name"]: item["metadata"]["version"].split("+")[0] for item in installs}


def render(versions: dict[str, str]) -> str:
    lines = [f"{name}=={version}" for name, version in sorted(versions.items(), key=lambda kv: kv[0].lower())]
    return HEADER + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    upgrade = "--upgrade" in (sys.argv[1:] if argv is None else argv)
    versions = None
    if CONSTRAINTS.exists() and not upgrade:
        versions = resolved(keep=CONSTRAINTS)
        if versions is None:
            print("the pinned versions no longer fit requirements.txt; resolving everything anew")
    if versions is None:
        versions = resolved()
    if versions is None:
        print(f"pip could not resolve {REQUIREMENTS.name}", file=sys.stderr)
        return 1
    CONSTRAINTS.write_text(render(versions), encoding="utf-8")
    print(f"wrote {CONSTRAINTS.name}: {len(versions)} packages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
