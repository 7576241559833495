import ast
from pathlib import Path

import pytest

from conftest import ROOT

MODULES = sorted((ROOT / "diagnostics").rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_diagnostics_never_imports_streamlit(path: Path):
    tree = ast.parse(path.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert "streamlit" not in imported


def test_trust_remote_code_is_never_enabled():
    for path in list((ROOT / "diagnostics").rglob("*.py")) + list((ROOT / "ui").rglob("*.py")):
        assert "trust_remote_code=True" not in path.read_text(), path
