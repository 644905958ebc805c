"""Rewrite tests/golden/ from the renderers, for a developer to review before committing.

    .venv/bin/python scripts/update_golden.py     # then: git diff tests/golden/

tests/test_report.py only compares with these files; it never writes them, so a renderer change
shows up as a failing test and then as a diff here that someone reads, not as a silent pass.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_report import GOLDEN, RENDERINGS, literal_report  # noqa: E402


def main() -> int:
    GOLDEN.mkdir(exist_ok=True)
    report = literal_report()
    changed = []
    for name, render in sorted(RENDERINGS.items()):
        path = GOLDEN / name
        text = render(report)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(name)
    if not changed:
        print("tests/golden/ is up to date")
        return 0
    print(f"rewrote {', '.join(changed)}; review every line before committing:")
    subprocess.run(["git", "--no-pager", "diff", "--stat", "--", str(GOLDEN)], cwd=ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
