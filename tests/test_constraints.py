"""constraints.txt against requirements.txt and the installed environment: every pin of requirements.txt is
the constrained version, and every package requirements.txt brings in (dependencies of dependencies, by
their metadata and markers) is constrained at the version installed. A requirement added without
`make constraints` fails here, before a fresh clone resolves its dependencies to whatever is newest."""

from __future__ import annotations

from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.app import PROJECT_ROOT


def _requirements(path) -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [Requirement(line) for line in lines if line]


def _pins(requirements: list[Requirement]) -> dict[str, str]:
    """{name: version} of `name==version` lines ('' for a line that is not an exact pin)."""
    pins = {}
    for requirement in requirements:
        exact = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        pins[canonicalize_name(requirement.name)] = exact[0] if len(exact) == 1 else ""
    return pins


REQUIRED = _requirements(PROJECT_ROOT / "requirements.txt")
REQUIREMENTS = _pins(REQUIRED)
CONSTRAINTS = _pins(_requirements(PROJECT_ROOT / "constraints.txt"))


def _brought_in(requirements: list[Requirement]) -> set[str]:
    """Every installed distribution reachable from requirements through Requires-Dist, with the extras
    asked for (psycopg[binary] brings psycopg-binary) and the markers of this interpreter."""
    seen: set[tuple[str, str]] = set()
    todo = [(canonicalize_name(r.name), extra) for r in requirements for extra in ("", *r.extras)]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                todo.extend((canonicalize_name(requirement.name), e) for e in ("", *requirement.extras))
    return {name for name, _ in seen}


def test_every_requirement_is_pinned_and_constrained_at_the_same_version():
    assert all(REQUIREMENTS.values()), "requirements.txt pins every package with =="
    differ = {name: (version, CONSTRAINTS.get(name)) for name, version in REQUIREMENTS.items()}
    assert {name: pair for name, pair in differ.items() if pair[0] != pair[1]} == {}


def test_everything_the_requirements_bring_in_is_constrained_at_its_installed_version():
    needed = _brought_in(REQUIRED)
    assert len(needed) > 2 * len(REQUIREMENTS)  # the walk reached the dependencies' dependencies
    unconstrained = sorted(needed - set(CONSTRAINTS))
    assert unconstrained == [], "run `make constraints` after editing requirements.txt"
    installed = {name: metadata.version(name).split("+")[0] for name in needed}
    assert {name: (CONSTRAINTS[name], installed[name]) for name in needed if installed[name] != CONSTRAINTS[name]} == {}
