"""The layout the README describes, checked from the source: pages -> ui -> agent -> core, no import cycle
(imports inside functions included), core free of the layers above it and of Streamlit, agent's public
surface used from outside, and no file in agent/ over 400 lines."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import agent
from tests.support.app import PROJECT_ROOT

PACKAGES = ("agent", "core", "ui", "pages", "bench")
MAX_AGENT_FILE_LINES = 400


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    found = {_module_name(path): path for package in PACKAGES for path in (PROJECT_ROOT / package).rglob("*.py")}
    found["streamlit_app"] = PROJECT_ROOT / "streamlit_app.py"
    found["app_script"] = PROJECT_ROOT / "app_script.py"
    return found


SOURCES = _sources()


def _imported(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """(imported name, line) for every import in the file, at any depth (functions included)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the package
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:  # `from a import b`: module a.b if there is one, else a (resolved below)
                yield f"{base}.{alias.name}", node.lineno


def _project_module(name: str) -> str | None:
    """The project module an imported name lives in (`agent.events.EventBus` -> `agent.events`)."""
    while name:
        if name in SOURCES:
            return name
        name = name.rpartition(".")[0]
    return None


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {module: set() for module in SOURCES}
    for module, path in SOURCES.items():
        for name, _line in _imported(module, path):
            target = _project_module(name)
            if target == "agent" and name.startswith("agent."):  # `from agent import X`: X's own module
                target = _project_module(agent._EXPORTS.get(name.removeprefix("agent."), name)) or target
            if target and target != module:
                graph[module].add(target)
    graph["agent"] |= {_project_module(target) for target in agent._EXPORTS.values()}  # its lazy exports
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_with_imports_inside_functions_counted():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the detector works
    graph = _graph()
    assert graph["agent.session"] >= {"agent.playground_agent", "core.db"}  # the graph sees real edges
    assert _cycles(graph) == []


def test_each_layer_imports_only_the_layers_below_it():
    allowed = {
        "core": {"core"},
        "agent": {"agent", "core"},
        "ui": {"ui", "agent", "core"},
        "pages": {"pages", "ui", "agent", "core"},
        "bench": {"bench", "agent", "core", "tests"},
        "streamlit_app": {"ui"},
        "app_script": {"ui"},
    }
    wrong = []
    for module, path in SOURCES.items():
        layer = module.split(".")[0]
        for name, line in _imported(module, path):
            top = name.split(".")[0]
            if (top in allowed and top not in allowed[layer]) or (top == "tests" and layer != "bench"):
                wrong.append(f"{path.relative_to(PROJECT_ROOT)}:{line} imports {name}")
    assert wrong == []


def test_core_imports_neither_streamlit_nor_livekit_agents():
    wrong = [
        f"{module}:{line} imports {name}"
        for module, path in SOURCES.items()
        if module.startswith("core")
        for name, line in _imported(module, path)
        if name.split(".")[0] == "streamlit" or name.startswith(("livekit.agents", "livekit.plugins"))
    ]
    assert wrong == []


def test_outside_agent_only_its_public_names_are_used():
    """ui/, pages/, bench/ and the entry script import `from agent import <name in agent.__all__>`."""
    wrong = []
    for module, path in SOURCES.items():
        if module.split(".")[0] not in ("ui", "pages", "bench", "streamlit_app", "app_script"):
            continue
        for name, line in _imported(module, path):
            if name.startswith("agent.") and name.removeprefix("agent.") not in agent.__all__:
                wrong.append(f"{path.relative_to(PROJECT_ROOT)}:{line} imports {name}")
    assert wrong == []


def test_agent_exports_what_it_lists():
    assert sorted(agent.__all__) == sorted(agent._EXPORTS)
    for name in agent.__all__:
        assert getattr(agent, name) is not None, name


def test_no_error_is_swallowed_silently():
    """No `except Exception: pass` (or bare `except: pass`): an expected error is named, an unexpected one logged."""
    silent = []
    for path in SOURCES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            broad = isinstance(node, ast.ExceptHandler) and (
                node.type is None
                or (isinstance(node.type, ast.Name) and node.type.id in ("Exception", "BaseException"))
            )
            if broad and all(isinstance(statement, ast.Pass) for statement in node.body):
                silent.append(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}")
    assert silent == []


def test_no_file_in_agent_is_over_400_lines():
    lengths = {
        str(path.relative_to(PROJECT_ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in (PROJECT_ROOT / "agent").rglob("*.py")
    }
    assert {path: n for path, n in lengths.items() if n > MAX_AGENT_FILE_LINES} == {}


# Libraries whose import races another thread, each imported through one module only:
# altair: two scripts importing it (and narwhals' import cycle under it) at once deadlocked (ui/charts.py);
# the component libraries: their import can lose a race in inspect.getmodule on a cold start, and
# ui/components.py tries it again.
ONE_IMPORTER = {
    "ui.charts": {"altair", "narwhals"},
    "ui.components": {"extra_streamlit_components", "streamlit_webrtc"},
}


@pytest.mark.parametrize("importer", sorted(ONE_IMPORTER))
def test_racy_libraries_are_imported_only_through_their_module(importer):
    wrong = [
        f"{module}:{line} imports {name}"
        for module, path in SOURCES.items()
        if module != importer
        for name, line in _imported(module, path)
        if name.split(".")[0] in ONE_IMPORTER[importer]
    ]
    assert wrong == []


def test_fragments_are_made_only_through_ui_fragments():
    """A fragment called straight in the page can lose its output of a page run, and the elements after it
    then move up one place (ui/fragments.py): every fragment goes through `timed_fragment`, which gives it
    a container of the page run's own."""
    wrong = [
        f"{module}:{node.lineno}"
        for module, path in SOURCES.items()
        if module != "ui.fragments"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr == "fragment" and getattr(node.value, "id", None) == "st"
    ]
    assert wrong == []


def _leading_text(node: ast.expr) -> str:
    """The literal start of a string or f-string argument ('' for anything else)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return ""


def test_markdown_headings_carry_no_anchor_links():
    """A Markdown heading gets a link icon that is a Tab stop of its own (six of them on a session's report
    before the first control): headings are section titles here, not places to link to."""
    wrong = [
        f"{module}:{node.lineno}"
        for module, path in SOURCES.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "markdown"
        and node.args
        and _leading_text(node.args[0]).startswith("#")
        and not any(k.arg == "anchors" and getattr(k.value, "value", None) is False for k in node.keywords)
    ]
    assert wrong == []


def test_streamlit_magic_is_off_and_no_page_relies_on_it():
    """Magic parses each page with ast.parse, which CPython 3.11 cannot do beside another thread's parse
    (gh-106905: "AST constructor recursion depth mismatch" on a page's first run). Off, and so no page may
    leave a value in a bare statement for magic to write."""
    import tomllib

    config = tomllib.loads((PROJECT_ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["magicEnabled"] is False
    for path in [
        PROJECT_ROOT / "app_script.py",
        PROJECT_ROOT / "streamlit_app.py",
        *sorted((PROJECT_ROOT / "pages").glob("*.py")),
    ]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Expr) and not isinstance(node.value, (ast.Call, ast.Await, ast.Constant)):
                raise AssertionError(f"{path.name}:{node.lineno} leaves a value for magic: {ast.unparse(node)}")
