"""Compatibility matrix: the test suite against each supported openai line and pydantic release.

    nox -l                 # list the sessions
    nox -s ci              # CI's subset: the newest 1.x and 2.x (the dev venv runs 3.x)
    nox -s openai          # all four openai versions
    nox -s pydantic        # pydantic 2.12.x (ContextVar generic cache) and the newest pydantic
    nox -s "openai(1.66.0)" -- tests/test_sdk_compat.py -q   # one session, chosen tests (default: tests -q)
    nox                    # everything

Each session installs the package from this tree (`pip install .`, not editable: the built wheel is what
is tested), the test dependencies, and then pins openai / pydantic last so nothing upgrades them.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = False

OPENAI_LOWEST = "1.66.0"  # the `instruments` floor in pyproject.toml
OPENAI_NEWEST_1 = "1.109.1"
OPENAI_NEWEST_2 = "2.54.0"
OPENAI_NEWEST_3 = "3.57.0"
OPENAI_VERSIONS = [OPENAI_LOWEST, OPENAI_NEWEST_1, OPENAI_NEWEST_2, OPENAI_NEWEST_3]
CI_VERSIONS = [OPENAI_NEWEST_1, OPENAI_NEWEST_2]
# pydantic 2.11/2.12 keep the generic-type cache in a ContextVar: with openai < 3.16.2 structured outputs leak
# (docs/research/sdk-compat.md section 6), so 2.12.x runs with the newest 2.x (the leak test runs there) and 3.x.
PYDANTIC_2_12 = "2.12.5"
PYDANTIC_CASES = [
    nox.param(PYDANTIC_2_12, OPENAI_NEWEST_2, id="2.12-openai2"),
    nox.param(PYDANTIC_2_12, OPENAI_NEWEST_3, id="2.12-openai3"),
    nox.param(None, OPENAI_NEWEST_3, id="latest"),  # None: the newest pydantic release
]

TEST_DEPS = [
    "pytest",
    "pytest-asyncio",
    "vcrpy",
    "hypothesis",
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp-proto-http",
    "opentelemetry-distro",
    "opentelemetry-proto",
]


def _run_suite(session: nox.Session, openai: str, pydantic: str | None = None) -> None:
    session.install(".")
    session.install(*TEST_DEPS)
    pins = [f"openai=={openai}"]
    if openai.startswith("3."):
        pins.append("httpx2")  # openai 3.x speaks httpx2; 1.x and 2.x must pass without it
    pins.append(f"pydantic=={pydantic}" if pydantic else "pydantic")
    session.install("--upgrade", *pins)
    session.run(
        "python", "-c", "import openai, pydantic; print('openai', openai.__version__, 'pydantic', pydantic.VERSION)"
    )
    session.run("pytest", *(session.posargs or ["tests", "-q"]))


@nox.session
@nox.parametrize("openai", OPENAI_VERSIONS, ids=OPENAI_VERSIONS)
def openai(session: nox.Session, openai: str) -> None:
    """The suite against one openai release, with the newest pydantic."""
    _run_suite(session, openai)


@nox.session
@nox.parametrize(("pydantic", "openai"), PYDANTIC_CASES)
def pydantic(session: nox.Session, pydantic: str | None, openai: str) -> None:
    """The suite with pydantic 2.12.x (newest 2.x and 3.x openai) and with the newest pydantic."""
    _run_suite(session, openai, pydantic)


@nox.session
@nox.parametrize("openai", CI_VERSIONS, ids=CI_VERSIONS)
def ci(session: nox.Session, openai: str) -> None:
    """CI's subset (2 cores, minutes): the newest release of each older major line."""
    _run_suite(session, openai)
