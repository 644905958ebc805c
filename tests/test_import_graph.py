"""scripts/check_imports.py finds what it is for: on a tiny package with a cycle, an upward import
and a module without a layer, each is one line; the allow-list takes a known one out."""

import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import check_imports  # noqa: E402

LAYERS = {"__init__": 0, "low": 0, "mid": 1, "high": 2, "pkg": 1}


def fake_package(root: Path, files: dict[str, str]) -> Path:
    src = root / "fake"
    for name, text in {"__init__.py": "", **files}.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return src


def check(src: Path, allowed=None):
    return check_imports.check(src, "fake", LAYERS, allowed or {})


def test_a_cycle_and_an_upward_import_are_each_reported(tmp_path):
    src = fake_package(tmp_path, {
        "low.py": """
            def later():
                from .high import thing     # upward, and lazily: still counted
        """,
        "mid.py": "from . import pkg\n",
        "high.py": "from fake import low\nthing = 1\n",
        "pkg/__init__.py": "from .inner import x\n",
        "pkg/inner.py": """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from ..mid import y         # a cycle pkg -> pkg.inner -> mid -> pkg, typing only
            x = 1
        """,
    })
    problems, _ = check(src)
    upward = [p for p in problems if p.startswith("upward:")]
    cycles = [p for p in problems if p.startswith("cycle:")]
    assert upward == ["upward: fake.low (layer 0) imports fake.high (layer 2) at fake/low.py:3 (in a function)"]
    assert len(cycles) == 2
    assert any("fake.high -> fake.low" in c and "fake.low -> fake.high (in a function)" in c for c in cycles)
    assert any("fake.pkg.inner -> fake.mid (typing only)" in c and "fake.mid -> fake.pkg" in c for c in cycles)
    assert len(problems) == 3


def test_a_module_without_a_layer_is_named_with_what_to_do(tmp_path):
    src = fake_package(tmp_path, {"low.py": "", "stray.py": "from .low import *\n", "pkg/new.py": ""})
    problems, _ = check(src)
    assert problems == ["unknown: fake.stray has no layer: add 'stray' to LAYERS in scripts/check_imports.py "
                        "(or its package)"]     # pkg/new.py takes its package's layer


def test_an_allowed_import_leaves_the_graph_and_a_stale_allowance_is_noted(tmp_path):
    src = fake_package(tmp_path, {"low.py": "import fake.high\n", "high.py": "from . import low\n", "mid.py": ""})
    assert len(check(src)[0]) == 2
    problems, notes = check(src, {("low", "high"): "being moved", ("mid", "high"): "done already"})
    assert problems == []
    assert notes == ["note: ALLOWED lists mid -> high, which no module imports any more: remove it"]


def test_importing_a_module_of_a_package_counts_its_init_towards_cycles(tmp_path):
    src = fake_package(tmp_path, {"low.py": "", "mid.py": "from .pkg.inner import x\n",
                                  "pkg/__init__.py": "from .. import mid\n", "pkg/inner.py": "x = 1\n"})
    problems, _ = check(src)
    assert problems == ["cycle: fake.mid -> fake.pkg (its package __init__) ; fake.pkg -> fake.mid"]


def test_import_of_the_server_loads_few_modules():
    src = Path(check_imports.__file__).resolve().parent.parent / "src"
    loaded = check_imports.modules_loaded_by("pgolab.server", src)
    assert "pgolab.server" in loaded and "pgolab.targets" not in loaded and "pgolab.build" not in loaded
