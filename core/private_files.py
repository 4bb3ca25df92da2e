"""Files only this process's user may read: secrets, passwords, spooled transcripts.

Every secret the app generates goes through `secret_file`: created once, atomically
(a second process racing to create it reads the first one's complete value, never a
half-written file), mode 0600 in a directory only its owner can list. A secret found
readable by others is tightened and logged, since it may already have been read.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("memory_playground.files")

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
# Running as root, the embedded server runs as its own system user, which must be able to
# pass through DATA_DIR to reach its data directory (traverse, not list).
TRAVERSABLE_DIR_MODE = 0o711


def private_dir(path: Path, *, traversable: bool = False) -> Path:
    """Create `path` (and parents) if needed and make it owner-only (0700, or 0711 when
    another local account must pass through it). Only tightens a directory we own."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    wanted = TRAVERSABLE_DIR_MODE if traversable else PRIVATE_DIR_MODE
    info = path.stat()
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & ~wanted:
        path.chmod(stat.S_IMODE(info.st_mode) & wanted)
    return path


def write_private(path: Path, data: str | bytes) -> Path:
    """Write a 0600 file atomically (a temp file renamed into place)."""
    path = Path(path)
    private_dir(path.parent, traversable=_parent_is_shared(path))
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(temp, PRIVATE_FILE_MODE)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def _parent_is_shared(path: Path) -> bool:
    # DATA_DIR keeps its traversable mode when it already has it (see TRAVERSABLE_DIR_MODE).
    try:
        return stat.S_IMODE(path.parent.stat().st_mode) == TRAVERSABLE_DIR_MODE
    except FileNotFoundError:
        return False


def tighten(path: Path, what: str) -> None:
    """A secret readable by group or others: make it 0600 and say so once."""
    info = path.stat()
    if stat.S_IMODE(info.st_mode) & 0o077 and info.st_uid == os.geteuid():
        path.chmod(PRIVATE_FILE_MODE)
        log.warning(
            "%s (%s) was readable by other local users (mode %o); it is now 0600. "
            "If others could log in to this machine, delete the file to generate a new one.",
            what,
            path,
            stat.S_IMODE(info.st_mode),
        )


def secret_file(path: Path, *, what: str, generate: Callable[[], str] | None = None, min_length: int = 32) -> str:
    """The secret in `path`, generated on first use. Safe against concurrent creators:
    the value is written to a temp file and published with link(), which fails if
    another process published first; then everyone reads the published file."""
    path = Path(path)
    generate = generate or (lambda: secrets.token_urlsafe(48))
    if not path.exists():
        private_dir(path.parent, traversable=_parent_is_shared(path))
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(generate() + "\n")
            os.chmod(temp, PRIVATE_FILE_MODE)
            # another process may have won the race: its value is complete (link is atomic), keep it
            with contextlib.suppress(FileExistsError):
                os.link(temp, path)
        finally:
            Path(temp).unlink(missing_ok=True)
    tighten(path, what)
    value = path.read_text(encoding="utf-8").strip()
    if len(value) < min_length:
        from core.errors import ConfigurationError

        raise ConfigurationError(
            f"The {what} in {path} is too short; delete the file to generate a new one "
            f"(it has {len(value)} characters, at least {min_length} are needed)."
        )
    return value
