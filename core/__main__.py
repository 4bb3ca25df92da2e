"""The database command line: `python -m core status|migrate|seed|reset|uri|cleanup`."""

from __future__ import annotations

import argparse
import logging
import sys

from core.config import check_settings, get_settings
from core.db import database_url, migrate, reset, status
from core.errors import DatabaseUnavailable, InvalidInput, PlaygroundError
from core.maintenance import cleanup
from core.seed import seed_all


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="list migrations and whether each is applied")
    sub.add_parser("migrate", help="apply pending migrations (and the local shim when embedded)")
    sub.add_parser("seed", help="load demo knowledge, orders and the demo user (idempotent)")
    reset_parser = sub.add_parser("reset", help="drop all data, re-apply migrations and seed")
    reset_parser.add_argument("--yes", action="store_true", help="required when DATABASE_URL points elsewhere")
    sub.add_parser(
        "uri",
        help="print the owner's connection URI (starts the embedded server if needed; "
        "the password stays in its file in DATA_DIR)",
    )
    cleanup_parser = sub.add_parser(
        "cleanup", help="delete anonymous users idle longer than ANON_USER_RETENTION_DAYS, with everything they own"
    )
    cleanup_parser.add_argument(
        "--days", type=float, default=None, help="idle days before an anonymous user goes (default the setting)"
    )
    return parser


def _cleanup(days: float | None) -> None:
    removed = cleanup(older_than_days=days)
    print(
        f"cleanup: {removed['anonymous_users']} idle anonymous user(s) deleted with their data, "
        f"{removed['session_handoffs']} expired session hand-off(s), "
        f"{removed['turns_embedded']} conversation turn(s) embedded that were stored without an embedding, "
        f"{removed['vector_indexes_built']} heavy user vector index(es) built, "
        f"{removed['vector_indexes_dropped']} dropped"
        + (
            f", {removed['vector_indexes_failed']} could not be built (those users' searches stay exact; "
            "the log says why, and the next cleanup tries again)"
            if removed["vector_indexes_failed"]
            else ""
        )
    )


def _print_status() -> None:
    settings = get_settings()
    where = f"embedded at {settings.data_dir / 'pg'}" if settings.embedded_database else "DATABASE_URL"
    print(f"database: {where}")
    for row in status():
        print(f"  [{'x' if row['applied'] else ' '}] {row['version']}  {row['name']}")


def _reset(confirmed: bool) -> int:
    if not get_settings().embedded_database and not confirmed:
        print("refusing to reset a database given by DATABASE_URL without --yes", file=sys.stderr)
        return 2
    reset()
    migrate()
    seed_all(echo=print)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        check_settings()  # a setting that does not parse: one line naming it, not pydantic's traceback
        if args.command == "uri":
            print(database_url())
        elif args.command == "status":
            _print_status()
        elif args.command == "migrate":
            applied = migrate()
            print(f"{len(applied)} migration(s) applied" if applied else "database is up to date")
        elif args.command == "seed":
            seed_all(echo=print)
        elif args.command == "reset":
            return _reset(args.yes)
        elif args.command == "cleanup":
            _cleanup(args.days)
    except (DatabaseUnavailable, InvalidInput, PlaygroundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
