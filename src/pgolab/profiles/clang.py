"""clang's profile: .profraw files merged by llvm-profdata into one indexed profile."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from .. import elf
from ..errors import PgolabError
from ..runner import Runner
from .base import ConsumptionCheck, FunctionOrder, files_digest, int_after, log_text, object_files
from .relocation import Relocation, plan, rewrite

# clang reads this name inside a -fprofile-use directory by default (MySQL relies on it).
MERGED_PROFILE = "default.profdata"


def clang_object_used_profile(path: Path) -> bool:
    """A profile shapes what clang writes: functions the profile calls hot or never run go to
    .text.hot.* / .text.unlikely.* sections (clang does neither without a profile), and ThinLTO
    bitcode carries function_entry_count metadata taken from the profile."""
    head = path.read_bytes()[:4]
    if head == b"BC\xc0\xde":
        return b"function_entry_count" in path.read_bytes()
    return any(n.startswith((".text.hot.", ".text.unlikely.")) for n in elf.section_names(path))


class ClangProfile:
    """clang: a .profraw file per process and binary, merged by llvm-profdata into one indexed profile."""

    name = "clang"
    names_by_file = True       # functions of internal linkage: `<file>:<function>` (relocation.py)
    raw_pattern = "*.profraw"
    runtime_error = "LLVM Profile Error"
    weights_method = "per-function counter sums from llvm-profdata"

    def __init__(self, profdata: str | None):
        self.profdata = profdata      # llvm-profdata; None where nothing is merged (listing flags)

    def generate_flags(self, profile_dir: Path, build_dir: Path) -> list[str]:
        # The file name is set at run time by LLVM_PROFILE_FILE (absolute, %p/%m).
        return [f"-fprofile-generate={profile_dir}"]

    def use_flags(self, profile_dir: Path, build_dir: Path) -> list[str]:
        return [f"-fprofile-use={profile_dir / MERGED_PROFILE}"]

    def redirect_env(self, compiled_dir: Path, target_dir: Path) -> dict[str, str]:
        """LLVM_PROFILE_FILE must be absolute (the server chdir()s into its data directory) and
        unique per binary (%m) and process (%p). A forked PostgreSQL backend keeps the name its
        parent expanded and merges its counters into that file at exit (what %m allows; a
        temporal profile cannot be merged so: build.require_buildable)."""
        if not target_dir.is_absolute():
            raise PgolabError(f"internal: profile directory must be absolute: {target_dir}")
        return {"LLVM_PROFILE_FILE": str(target_dir / "raw-%m-%p.profraw")}

    def merge(self, profile_dir: Path, runner: Runner, first: Path | None = None) -> dict:
        raws = sorted(str(p) for p in profile_dir.glob("*.profraw"))
        out = profile_dir / MERGED_PROFILE
        inputs = [*raws, str(first / MERGED_PROFILE)] if first is not None else raws
        runner.run([self.profdata, "merge", "-o", str(out), *inputs], what="llvm-profdata merge")
        show = runner.run([self.profdata, "show", str(out)], what="llvm-profdata show").output
        functions = int_after(r"Total functions:\s*(\d+)", show)
        max_count = int_after(r"Maximum function count:\s*(\d+)", show)
        if not functions or not max_count:
            raise PgolabError(f"merged profile {out} holds no counts ({functions} functions, max count {max_count})",
                              log=runner.log_path, hint="the training load did not reach the server's code")
        result = {"merged": str(out), "functions": functions, "max_function_count": max_count}
        if first is not None:
            # --showcs counts only the context-sensitive records: none means the second training's
            # counters were not context-sensitive (the _pgo_csgen build lacked its flag).
            cs_show = runner.run([self.profdata, "show", "--showcs", str(out)], what="llvm-profdata show --showcs")
            result["cs_functions"] = int_after(r"Total functions:\s*(\d+)", cs_show.output)
            if not result["cs_functions"]:
                raise PgolabError(f"merged profile {out} holds no context-sensitive counts",
                                  log=runner.log_path,
                                  hint="the _pgo_csgen build's compile lacked -fcs-profile-generate: see its build.json")
        return result

    def read_files(self, profile_dir: Path) -> list[Path]:
        return [profile_dir / MERGED_PROFILE]

    def digest(self, profile_dir: Path) -> str:
        return files_digest(self.read_files(profile_dir))

    def check_used(self, build_dir: Path, profile_dir: Path, build_log: Path) -> ConsumptionCheck:
        """Each object is inspected for what only a profile produces (clang_object_used_profile)."""
        objects = object_files(build_dir)
        # clang warns in every file that compiles a changed function; the profile holds it once.
        mismatched = len(set(re.findall(r"function control flow change detected \(hash mismatch\) (\S+)",
                                        log_text(build_log))))
        return ConsumptionCheck("profile-driven .text.hot/.text.unlikely sections or entry-count metadata "
                                "in each object", len(objects),
                                sum(1 for o in objects if clang_object_used_profile(build_dir / o)), mismatched)

    def profile_functions(self, profile_dir: Path, runner: Runner) -> int:
        show = runner.run([self.profdata, "show", str(profile_dir / MERGED_PROFILE)], what="llvm-profdata show").output
        found = re.search(r"Total functions:\s*(\d+)", show)
        return int(found.group(1)) if found else 0

    def _text(self, profile_dir: Path, runner: Runner) -> str:
        return runner.run([self.profdata, "merge", "--text", "-o", "-", str(profile_dir / MERGED_PROFILE)],
                          what="llvm-profdata merge --text", log_output=False).output

    def relocate(self, profile_dir: Path, tree: Path, recorded_root: str, runner: Runner,
                 build_dir: Path, write: bool = True) -> Relocation:
        """The profile's functions named by a file of another tree renamed to this one's, through the
        profile's text form (see relocation.py); write=False only says what would move."""
        text = self._text(profile_dir, runner)
        moved = plan(function_names(text), tree, recorded_root, build_dir)
        if moved.moves and write:
            with tempfile.TemporaryDirectory(dir=profile_dir.parent) as scratch:
                relocated = Path(scratch) / "relocated.proftext"
                relocated.write_text(rewrite(text, moved))
                runner.run([self.profdata, "merge", "-o", str(profile_dir / MERGED_PROFILE), str(relocated)],
                           what="llvm-profdata merge (relocated names)")
        return moved

    def function_weights(self, profile_dir: Path, build_dir: Path, runner: Runner, scratch: Path) -> dict[str, int]:
        """Function -> sum of its counters, from `llvm-profdata merge --text`."""
        weights: dict[str, int] = {}
        for name, counters in function_records(self._text(profile_dir, runner)):
            weights[name] = weights.get(name, 0) + sum(counters)
        return weights

    def write_function_order(self, profile_dir: Path, out: Path, runner: Runner) -> FunctionOrder:
        """`llvm-profdata order`: the functions of the profile's temporal traces (each process's first
        calls, in time) in an order that keeps each trace's functions close, one name a line after
        `#` comments, as lld's --symbol-ordering-file reads it."""
        merged = str(profile_dir / MERGED_PROFILE)
        runner.run([self.profdata, "order", merged, "-o", str(out)], what="llvm-profdata order")
        names = [line for line in out.read_text().splitlines() if line.strip() and not line.startswith("#")]
        # "Temporal Profile Traces (samples=S seen=N)": S kept of the N processes' traces.
        shown = runner.run([self.profdata, "show", "--temporal-profile-traces", merged],
                           what="llvm-profdata show --temporal-profile-traces", log_output=False).output
        found = re.search(r"Temporal Profile Traces \(samples=(\d+) seen=(\d+)\)", shown)
        if not names or not found:
            raise PgolabError(f"the profile in {profile_dir} holds no temporal traces: no function order",
                              log=runner.log_path, hint="its instrumented build must be an _order one "
                                                        "(-pgo-temporal-instrumentation); build it again")
        return FunctionOrder(out, len(names), int(found.group(1)), int(found.group(2)))

    def overlap_figure(self, training: Path, benchmark: Path, runner: Runner) -> str | None:
        """llvm-profdata's own overlap figure, reported beside pgolab's."""
        out = runner.run([self.profdata, "overlap", str(training / MERGED_PROFILE), str(benchmark / MERGED_PROFILE)],
                         check=False, what="llvm-profdata overlap").output
        m = re.search(r"Edge profile overlap:\s*([0-9.]+%)", out)
        return f"llvm-profdata overlap: edge profile overlap {m.group(1)}" if m else None


def function_records(text: str):
    """(name, counters) of each function of a profile's text form: the name is the line before its
    "# Func Hash:", then the hash, "# Num Counters:", the count, "# Counter Values:" and the counters."""
    lines = text.split("\n")
    i = 1
    while i < len(lines):
        if lines[i].strip() == "# Func Hash:":
            n = int(lines[i + 3].strip())
            values = lines[i + 5: i + 5 + n]
            yield lines[i - 1].strip(), [int(v) for v in values if v.strip().lstrip("-").isdigit()]
            i += 5 + n
        else:
            i += 1


def function_names(text: str) -> list[str]:
    return [name for name, _ in function_records(text)]
