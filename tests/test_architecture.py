"""The architecture holds: the broker runtime (``weir``) imports no Django and no
control-plane app, the control plane reaches the runtime only through its public surface,
and a broker process starts without loading Django.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``) and are checked with
import-linter, which reads the source statically; the last tests run real processes because
what a process imports at start-up is the point.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTROL_PLANE = (
    "controlplane",
    "brokers",
    "topics",
    "groups",
    "mirrors",
    "schemaregistry",
    "dlq",
    "frontend",
    "spark_jobs",
)


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(cwd / "pyproject.toml")],
        cwd=cwd,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_contracts_are_kept() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A copy of the project's contracts over a small tree of the same packages."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    named = [m for c in contracts["contracts"] for m in c.get("forbidden_modules", ())]
    for module in ("weir", *CONTROL_PLANE, *(m for m in named if m.startswith("weir."))):
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):
            package = tmp_path.joinpath(*parts[:depth])
            package.mkdir(exist_ok=True)
            (package / "__init__.py").touch()
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_contract_breaks_when_a_runtime_module_imports_django(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"weir/server.py": "import django\n"})
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "The broker runtime imports no Django and no control-plane app BROKEN" in (result.stdout)
    assert "weir.server -> django" in result.stdout


def test_contract_breaks_when_the_runtime_imports_a_control_plane_app(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"weir/log/__init__.py": "from topics import selectors\n"})
    (tree / "topics" / "selectors.py").write_text("")
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "weir.log -> topics.selectors" in result.stdout


def test_contract_breaks_when_the_control_plane_imports_a_private_room(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "weir/handlers/__init__.py": "",
            "weir/client.py": "",
            "groups/services.py": "from weir import client\nfrom weir.handlers import x\n",
        },
    )
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "only through its public surface BROKEN" in result.stdout
    assert "groups.services -> weir.handlers" in result.stdout
    assert "weir.client" not in result.stdout.split("BROKEN", 1)[1]


def _imported_top_level(code: str, *argv: str) -> set[str]:
    """Top-level packages a fresh interpreter has loaded after running ``code``."""
    probe = code + "\nimport sys\nprint(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    result = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def test_the_whole_runtime_imports_without_django() -> None:
    loaded = _imported_top_level(
        "import pkgutil, importlib, weir\n"
        "for m in pkgutil.walk_packages(weir.__path__, 'weir.'):\n"
        "    importlib.import_module(m.name)"
    )
    assert "weir" in loaded
    assert not loaded & {"django", "rest_framework", "channels", "celery", *CONTROL_PLANE}


def test_runbroker_starts_without_booting_django(tmp_path: Path) -> None:
    """``manage.py runbroker`` hands over to the runtime before Django is imported: with a
    bad flag it stops at argument checking, and by then nothing of Django is loaded."""
    loaded = _imported_top_level(
        "import sys, runpy\n"
        "sys.argv = ['manage.py', 'runbroker', '--broker-id', '-1', '--listen', '127.0.0.1:0',"
        f" '--data-dir', {str(tmp_path)!r}]\n"
        "try:\n"
        "    runpy.run_path('manage.py', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 1, exc.code"
    )
    assert "weir" in loaded
    assert "django" not in loaded
