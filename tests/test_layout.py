import ast
import re
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

MODULES = sorted((ROOT / "diagnostics").rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_diagnostics_never_imports_streamlit(path: Path):
    tree = ast.parse(path.read_text())
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "streamlit" not in imported


def test_trust_remote_code_is_never_enabled():
    for path in list((ROOT / "diagnostics").rglob("*.py")) + list((ROOT / "ui").rglob("*.py")):
        assert "trust_remote_code=True" not in path.read_text(), path


def code_lines(function: ast.FunctionDef) -> int:
    """A function's lines from its `def` to its end, its docstring left out."""
    length = function.end_lineno - function.lineno + 1
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        length -= body[0].end_lineno - body[0].lineno + 1
    return length


def test_no_function_of_the_app_is_longer_than_80_lines():
    """Long functions are where a new check or setting gets lost: every function of diagnostics/, ui/ and the pages
    stays at 80 lines or fewer (its docstring not counted)."""
    paths = [*(ROOT / "diagnostics").rglob("*.py"), *(ROOT / "ui").rglob("*.py"), *(ROOT / "app_pages").rglob("*.py"),
             ROOT / "app.py"]
    long = [(path.name, node.name, code_lines(node)) for path in paths for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and code_lines(node) > 80]
    assert not long, long


def test_no_module_of_the_package_is_longer_than_450_lines():
    """A module past 450 lines holds more than one concern (the layers are folders, a check is a module)."""
    long = {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in MODULES
            if "demo_data" not in path.parts and len(path.read_text().splitlines()) > 450}
    assert long == {}


def test_the_package_imports_nothing_by_name_at_run_time():
    """The runner calls check and unit objects: no module looks a function up by a dotted string."""
    dynamic = [str(path.relative_to(ROOT)) for path in MODULES
               if "import_module(" in path.read_text() or "__import__(" in path.read_text()]
    assert dynamic == []


def ui_imports(path: Path) -> set[str]:
    """The ui modules a ui module imports, at the top or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ui."):
            names.add(node.module.split(".")[1])
        elif isinstance(node, ast.ImportFrom) and node.module == "ui":
            names |= {alias.name for alias in node.names}
    return names - {path.stem}


def test_ui_is_split_by_concern_small_modules_and_no_import_circle():
    modules = {path.stem: path for path in (ROOT / "ui").glob("*.py") if path.stem != "__init__"}
    assert {name: len(path.read_text().splitlines()) for name, path in modules.items()
            if len(path.read_text().splitlines()) > 250} == {}
    graph = {name: ui_imports(path) for name, path in modules.items()}
    seen = set()

    def visit(name, trail):
        assert name not in trail, " -> ".join([*trail, name])
        if name not in seen:
            for imported in sorted(graph.get(name, ())):
                visit(imported, [*trail, name])
            seen.add(name)

    for name in graph:
        visit(name, [])


def test_the_tests_mirror_the_package():
    """Each folder of tests/ is a layer of the package (its tests), or app/ for the Streamlit side, benchmarks/ for
    the benchmark of reported bugs (benchmarks/reported), or fixtures."""
    layers = {path.name for path in (ROOT / "diagnostics").iterdir() if (path / "__init__.py").is_file()}
    folders = {
        path.name for path in (ROOT / "tests").iterdir() if path.is_dir() and not path.name.startswith((".", "_"))
    }
    assert folders - {"data", "scripts"} <= layers | {"app", "benchmarks"}
    assert all(list((ROOT / "tests" / folder).glob("test_*.py")) for folder in folders - {"data", "scripts"})


POINTER = re.compile(r"\b(README(?:\.md)?|docs/[\w.-]+\.md)\b(?:[:,]\s*|'s\s+|\s+section\s+)?(?:\"([^\"\n]{3,80})\")?")


def test_every_pointer_to_a_document_and_its_section_leads_somewhere():
    """A comment or a page that sends the reader to `docs/x.md` (or the README), and to a section of it by name in
    quotes, names a file that exists and a section that is in it (a config file once sent readers to a README section
    that had moved to docs/links-and-rooms.md)."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    texts = [path for path in listed if path.endswith((".py", ".md", ".toml", ".txt", ".ini", ".cfg")) or
             path in ("Dockerfile", ".ci/run")]
    texts.remove("tests/test_layout.py")  # this test's own examples
    broken = []
    for name in texts:
        for target, section in POINTER.findall((ROOT / name).read_text(encoding="utf-8", errors="replace")):
            document = ROOT / ("README.md" if target.startswith("README") else target)
            if not document.is_file():
                broken.append(f"{name}: {target} does not exist")
            elif section and section.replace("\n", " ") not in " ".join(document.read_text().split()):
                broken.append(f"{name}: {target} has no {section!r}")
    assert broken == []
