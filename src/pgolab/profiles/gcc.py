"""gcc's profile: .gcda files whose paths are compiled into the instrumented build."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from ..errors import PgolabError
from ..runner import Runner
from .base import ConsumptionCheck, FunctionOrder, files_digest, log_text, object_files
from .relocation import Relocation


def gcda_name(object_rel: Path) -> str:
    """The .gcda file gcc writes for an object, given -fprofile-prefix-path=<build dir>:
    the object's path relative to the build directory, extension dropped, '/' -> '#'."""
    return str(object_rel.with_suffix("")).replace("/", "#") + ".gcda"


# gcc warns once per counter kind (arcs, time profiler, ...) of a function whose profile no longer
# matches its code, and drops that function's counts. Every such function has an arcs counter, so
# its arcs warning counts it once per compiled copy: a changed static inline function of a header
# is dropped in each file that compiles it, as its FUNCTION records are counted in each .gcda file.
# (A warning that only its source lines moved keeps the counts: not counted.)
_MISMATCH = re.compile(r"^.*function [‘'`][^’']+[’'] does not match.*\(counter [‘'`]arcs[’'].*\[-Wcoverage-mismatch\]",
                       re.M)


def mismatched_functions(build_log_text: str) -> int:
    """How many compiled functions gcc found changed since their profile was written."""
    return len(_MISMATCH.findall(build_log_text))


class GccProfile:
    """gcc: .gcda files whose absolute paths are compiled in; libgcov merges concurrent writers
    under a lock, so there is no merge step."""

    name = "gcc"
    # A .gcda file is named by its object's path under the build folder (-fprofile-prefix-path), its
    # functions by checksums: nothing in it names the tree, so nothing moves (relocation.py).
    names_by_file = False
    raw_pattern = "*.gcda"
    # libgcov's messages ("profiling:...") were not surveyed: not checked
    runtime_error = None
    weights_method = "per-function entry counts read with gcov"

    def generate_flags(self, profile_dir: Path, build_dir: Path) -> list[str]:
        # Object paths name the .gcda files, so both builds strip their own build directory
        # (-fprofile-prefix-path) and the optimized build, built elsewhere, finds the files.
        # -ftest-coverage adds .gcno files (function names for `pgolab profile-check`);
        # the counters and the code are those of -fprofile-generate alone.
        return [f"-fprofile-generate={profile_dir}", "-fprofile-update=prefer-atomic",
                f"-fprofile-prefix-path={build_dir}", "-ftest-coverage"]

    def use_flags(self, profile_dir: Path, build_dir: Path) -> list[str]:
        # A file generated into the build directory (MariaDB's ma_client_plugin.c) can differ
        # between the two builds; gcc makes that an error by default. As a warning, gcc drops
        # that function's profile and pgolab counts the warnings.
        return [f"-fprofile-use={profile_dir}", "-fprofile-correction", f"-fprofile-prefix-path={build_dir}",
                "-Wno-missing-profile", "-Wno-error=coverage-mismatch"]

    def redirect_env(self, compiled_dir: Path, target_dir: Path) -> dict[str, str]:
        return {"GCOV_PREFIX": str(target_dir), "GCOV_PREFIX_STRIP": str(len(compiled_dir.parts) - 1)}

    def merge(self, profile_dir: Path, runner: Runner, first: Path | None = None) -> dict:
        if first is not None:
            raise PgolabError("internal: gcc has no context-sensitive profile to merge")
        return {"merged": None}     # gcc reads the .gcda files as they are

    def read_files(self, profile_dir: Path) -> list[Path]:
        return sorted(profile_dir.glob("*.gcda"))

    def relocate(self, profile_dir: Path, tree: Path, recorded_root: str, runner: Runner,
                 build_dir: Path, write: bool = True) -> Relocation:
        return Relocation()

    def digest(self, profile_dir: Path) -> str:
        return files_digest(self.read_files(profile_dir))

    def check_used(self, build_dir: Path, profile_dir: Path, build_log: Path) -> ConsumptionCheck:
        """Every object of the optimized build is matched to the .gcda file the instrumented
        build wrote for the same source (gcc reads exactly that file)."""
        objects = object_files(build_dir)
        names = {p.name for p in profile_dir.glob("*.gcda")}
        mismatched = mismatched_functions(log_text(build_log))
        return ConsumptionCheck("matching each object to its .gcda file", len(objects),
                                sum(1 for o in objects if gcda_name(o) in names), mismatched)

    def profile_functions(self, profile_dir: Path, runner: Runner) -> int:
        """The FUNCTION records of every .gcda file (gcov-dump's listing)."""
        files = sorted(profile_dir.glob("*.gcda"))
        count = 0
        for start in range(0, len(files), 200):      # argv of a bounded length
            listing = runner.run(["gcov-dump", *map(str, files[start:start + 200])], what="gcov-dump",
                                 log_output=False).output
            count += sum(1 for line in listing.splitlines() if ":FUNCTION " in line or line.rstrip().endswith(":FUNCTION"))
        return count

    def function_weights(self, profile_dir: Path, build_dir: Path, runner: Runner, scratch: Path) -> dict[str, int]:
        """Function -> entry count, read with gcov from .gcda files and the instrumented build's
        .gcno files (gcc 12's `gcov-tool overlap` reported 0% for two identical profiles here,
        so pgolab reads the counts with gcov itself)."""
        shutil.rmtree(scratch, ignore_errors=True)
        staged = []
        for gcda in profile_dir.glob("*.gcda"):
            rel = Path(gcda.name[:-len(".gcda")].replace("#", "/"))
            gcno = build_dir / (str(rel) + ".gcno")
            if not gcno.exists():
                continue
            dest = scratch / rel.parent
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(gcda, dest / (rel.name + ".gcda"))
            (dest / (rel.name + ".gcno")).symlink_to(gcno)
            staged.append(str(rel) + ".gcda")
        weights: dict[str, int] = {}
        for start in range(0, len(staged), 200):
            out = runner.run(["gcov", "--json-format", "--stdout", *staged[start:start + 200]], cwd=scratch,
                             what="gcov --json-format", check=False).output
            for line in out.splitlines():
                if not line.startswith("{"):
                    continue
                for f in json.loads(line).get("files", []):
                    for fn in f.get("functions", []):
                        name = fn.get("demangled_name") or fn["name"]
                        weights[name] = weights.get(name, 0) + int(fn.get("execution_count", 0))
        shutil.rmtree(scratch, ignore_errors=True)
        if not weights:
            raise PgolabError("no function names for the gcc profile (no .gcno files in the instrumented build)",
                              hint=f"the instrumented build predates profile-check support; delete "
                                   f"{build_dir.parent.parent} and build again")
        return weights

    def overlap_figure(self, training: Path, benchmark: Path, runner: Runner) -> str | None:
        return None     # gcc 12's gcov-tool overlap is not trustworthy (see function_weights)

    def write_function_order(self, profile_dir: Path, out: Path, runner: Runner) -> FunctionOrder:
        raise PgolabError("internal: gcc's profile records no function order (variants.parse refuses gcc's _order)")
