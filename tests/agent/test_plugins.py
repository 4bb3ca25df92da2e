"""livekit plugins are registered on the main thread, once, at process start (agent/plugins.py).

pytest's own process registers them in conftest, which would hide a lazy import
on a worker thread; so each case here runs in a fresh interpreter, and the real
entry points (the CLI, `streamlit run`) are run as subprocesses with a real LLM
configured in tests/agent/test_llm_cli.py and tests/app/test_llm_browser.py.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.app import PROJECT_ROOT


def _python(script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT), **(env or {})},
    )


def test_a_plugin_imported_on_a_thread_fails_which_is_why_we_register_at_start():
    """The bug in issue 8: livekit refuses to register a plugin on any thread but the main one."""
    done = _python("""
        import threading
        result = {}
        def page_thread():
            try:
                import livekit.plugins.openai
            except RuntimeError as exc:
                result["error"] = str(exc)
        thread = threading.Thread(target=page_thread); thread.start(); thread.join()
        print(result.get("error"))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Plugins must be registered on the main thread" in done.stdout


def test_building_a_model_without_registration_says_what_to_do():
    done = _python(
        """
        import threading
        from agent import model_factory as models
        from core.config import reload_settings
        result = {}
        def loop_thread():
            try:
                models.build_llm(reload_settings())
            except Exception as exc:
                result["error"] = f"{type(exc).__name__}: {exc}"
        thread = threading.Thread(target=loop_thread); thread.start(); thread.join()
        print(result.get("error"))
    """,
        env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-x", "LLM_MODEL": "m"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(
        "ConfigurationError: The livekit openai plugin was not loaded when this process started"
    )


def test_the_worker_cli_has_every_plugin_registered():
    """`python -m agent download-files` goes through livekit's CLI, which lists the registered plugins."""
    done = subprocess.run(
        [sys.executable, "-m", "agent", "download-files"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    output = done.stdout + done.stderr
    for package in ("livekit.plugins.openai", "livekit.plugins.silero"):
        assert "Finished downloading files for" in output and package in output
