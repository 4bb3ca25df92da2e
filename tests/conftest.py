"""Shared fixtures: one throwaway embedded Postgres per test run, migrated and
seeded, and helpers that sign in real anonymous users with real JWTs."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

# Decide settings before anything imports core.config: a private DATA_DIR, the
# embedded database and the embedded issuer, whatever the developer's .env says.
_TEST_DATA_DIR = Path(tempfile.mkdtemp(prefix="mp-test-data-"))
os.environ["DATA_DIR"] = str(_TEST_DATA_DIR)
for _name in ("DATABASE_URL", "SUPABASE_URL", "SUPABASE_ANON_KEY", "SUPABASE_JWT_SECRET", "DEMO_USER_ID",
              "LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET", "OPENAI_API_KEY", "OPENAI_BASE_URL",
              "LLM_MODEL", "EMBEDDING_MODEL"):
    os.environ[_name] = ""
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Every AppTest and browser session signs in from one address ("local"); the throttle's own
# tests set their limits explicitly.
os.environ["ANON_SIGNIN_BURST"] = "100000"
os.environ["ANON_SIGNIN_PER_MINUTE"] = "1000000"

from core import config, db, identity  # noqa: E402

# pytest's process registers the livekit plugins at start, as every entry point does
# (agent/plugins.py); the subprocess tests prove the entry points themselves.
from agent import plugins as _plugins  # noqa: E402

_plugins.register()
from core.db import Scope  # noqa: E402


@pytest.fixture(scope="session")
def database_uri() -> str:
    """Start the test server (deleted at exit), apply the shim and migrations, seed."""
    config.reload_settings()
    uri = db.start_embedded(_TEST_DATA_DIR / "pg", cleanup_mode="delete")
    db.migrate(echo=lambda *_: None)
    from core.seed import seed_all

    seed_all(echo=lambda *_: None)
    yield uri
    db.close_pools()


@pytest.fixture(scope="session", autouse=True)
def _cleanup_data_dir():
    yield
    # the pg/ subdirectory is deleted by pgserver when the last handle exits
    for child in _TEST_DATA_DIR.iterdir():
        if child.name != "pg":
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)


# Registered after pgserver's own exit hook (which deletes pg/), so it runs before it:
# remove the directory once pgserver has finished, whichever order atexit picks.
def _remove_empty_data_dir() -> None:
    try:
        _TEST_DATA_DIR.rmdir()
    except OSError:
        pass  # pg/ still there: pgserver's hook removes it, the empty parent stays in /tmp


atexit.register(_remove_empty_data_dir)


@dataclass
class SignedInUser:
    session: identity.AuthSession
    verified: identity.VerifiedUser
    scope: Scope  # as the user: RLS decides

    @property
    def user_id(self) -> uuid.UUID:
        return self.verified.user_id

    @property
    def service(self) -> Scope:
        return Scope.service(self.user_id)


@pytest.fixture
def new_user(database_uri):
    """Factory: each call signs in a brand-new anonymous user."""

    def make() -> SignedInUser:
        session = identity.sign_in_anonymously()
        verified = identity.verify(session.access_token)
        return SignedInUser(session=session, verified=verified, scope=Scope.for_user(verified))

    return make


@pytest.fixture
def demo_user_id(database_uri) -> uuid.UUID:
    from core.seed import demo_user_file

    return uuid.UUID(demo_user_file().read_text().strip())
