"""PGO profiles: one `ProfileTool` per kind of profile (gcc, clang; BOLT in bolt.py).

A tool knows where raw files land and how they are named, the flags that make and use them,
how to send an instrumented program's files elsewhere, how to merge them, what digest an
optimized build depends on, how to prove the build used them, and per-function weights for
`pgolab profile-check`. Build code asks the variant's tool; it never switches on a compiler.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from . import elf
from .errors import PgolabError
from .runner import Runner

# clang reads this name inside a -fprofile-use directory by default (MySQL relies on it).
MERGED_PROFILE = "default.profdata"


@dataclass
class RawProfileStats:
    files: int
    bytes: int

    def describe(self) -> str:
        return f"{self.files} raw profile files, {self.bytes / 1024:.0f} KiB"


@dataclass
class ConsumptionCheck:
    method: str
    objects: int
    with_profile: int
    mismatched: int

    def describe(self) -> str:
        return (f"{self.with_profile} of {self.objects} objects compiled with profile data "
                f"({self.mismatched} mismatch warnings); checked by {self.method}")

    def as_dict(self) -> dict:
        return asdict(self)


class ProfileTool(Protocol):
    name: str
    raw_pattern: str
    weights_method: str   # how function_weights counts, for reports

    def generate_flags(self, profile_dir: Path, build_dir: Path) -> list[str]: ...
    def use_flags(self, profile_dir: Path, build_dir: Path) -> list[str]: ...
    def redirect_env(self, compiled_dir: Path, target_dir: Path) -> dict[str, str]: ...
    def merge(self, profile_dir: Path, runner: Runner, first: Path | None = None) -> dict:
        """The raw files in profile_dir into the profile a build reads; `first`: the profile folder
        a context-sensitive training's counters complete."""
    def digest(self, profile_dir: Path) -> str: ...
    def check_used(self, build_dir: Path, profile_dir: Path, build_log: Path) -> ConsumptionCheck: ...
    def function_weights(self, profile_dir: Path, build_dir: Path, runner: Runner,
                         scratch: Path) -> dict[str, int]: ...
    def overlap_figure(self, training: Path, benchmark: Path, runner: Runner) -> str | None: ...


def files_digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def raw_stats(profile_dir: Path, tool: ProfileTool) -> RawProfileStats:
    files = [p for p in profile_dir.rglob(tool.raw_pattern) if p.is_file()]
    return RawProfileStats(len(files), sum(p.stat().st_size for p in files))


def require_raw_profiles(profile_dir: Path, tool: ProfileTool, error_log: Path | None = None) -> RawProfileStats:
    stats = raw_stats(profile_dir, tool)
    if stats.files == 0 or stats.bytes == 0:
        raise PgolabError(
            f"the training run wrote no profile ({stats.describe()} in {profile_dir})",
            log=error_log,
            hint="the server must exit through its own shutdown; check that it was not killed, "
                 "that the profile directory is writable by the server's user, and the error log")
    return stats


def require_used(check: ConsumptionCheck, build_log: Path) -> ConsumptionCheck:
    if check.objects == 0 or check.with_profile == 0:
        raise PgolabError(f"the optimized build did not use the profile: {check.describe()}",
                          log=build_log,
                          hint="the instrumented and optimized builds must come from the same source and flags; "
                               "delete the variant's folder and build again")
    return check


SEAL = ".merged-digest"


def raw_digest(profile_dir: Path, tool: ProfileTool) -> str:
    files = sorted(p for p in profile_dir.rglob(tool.raw_pattern) if p.is_file())
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(profile_dir)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def seal(profile_dir: Path, tool: ProfileTool) -> str:
    """Called by a merge: the raw files as merged. Counters written later are detected."""
    digest = raw_digest(profile_dir, tool)
    (profile_dir / SEAL).write_text(digest + "\n")
    return digest


def require_sealed(profile_dir: Path, tool: ProfileTool) -> None:
    """Refuse a profile that received counters after its merge (a server of an earlier, killed run
    kept writing). A folder merged before seals existed is sealed as it is now."""
    path = profile_dir / SEAL
    if not path.exists():
        seal(profile_dir, tool)
        return
    if path.read_text().strip() != raw_digest(profile_dir, tool):
        raise PgolabError(f"counters were written to {profile_dir} after its profile was merged",
                          hint="a server of an earlier run kept writing; the training is repeated when you "
                               "run the same command again")


def object_files(build_dir: Path) -> list[Path]:
    return [p.relative_to(build_dir) for p in build_dir.rglob("*.o") if p.is_file()]


def _log_text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _int_after(pattern: str, text: str) -> int:
    m = re.search(pattern, text)
    return int(m.group(1)) if m else 0


def gcda_name(object_rel: Path) -> str:
    """The .gcda file gcc writes for an object, given -fprofile-prefix-path=<build dir>:
    the object's path relative to the build directory, extension dropped, '/' -> '#'."""
    return str(object_rel.with_suffix("")).replace("/", "#") + ".gcda"


class GccProfile:
    """gcc: .gcda files whose absolute paths are compiled in; libgcov merges concurrent writers
    under a lock, so there is no merge step."""

    name = "gcc"
    raw_pattern = "*.gcda"
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

    def digest(self, profile_dir: Path) -> str:
        return files_digest(sorted(profile_dir.glob("*.gcda")))

    def check_used(self, build_dir: Path, profile_dir: Path, build_log: Path) -> ConsumptionCheck:
        """Every object of the optimized build is matched to the .gcda file the instrumented
        build wrote for the same source (gcc reads exactly that file)."""
        objects = object_files(build_dir)
        names = {p.name for p in profile_dir.glob("*.gcda")}
        log_text = _log_text(build_log)
        mismatched = log_text.count("[-Wcoverage-mismatch]") + log_text.count("profile data may be corrupted")
        return ConsumptionCheck("matching each object to its .gcda file", len(objects),
                                sum(1 for o in objects if gcda_name(o) in names), mismatched)

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
    raw_pattern = "*.profraw"
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
        unique per process (%p) and binary (%m): PostgreSQL forks a backend per connection."""
        if not target_dir.is_absolute():
            raise PgolabError(f"internal: profile directory must be absolute: {target_dir}")
        return {"LLVM_PROFILE_FILE": str(target_dir / "raw-%m-%p.profraw")}

    def merge(self, profile_dir: Path, runner: Runner, first: Path | None = None) -> dict:
        raws = sorted(str(p) for p in profile_dir.glob("*.profraw"))
        out = profile_dir / MERGED_PROFILE
        inputs = [*raws, str(first / MERGED_PROFILE)] if first is not None else raws
        runner.run([self.profdata, "merge", "-o", str(out), *inputs], what="llvm-profdata merge")
        show = runner.run([self.profdata, "show", str(out)], what="llvm-profdata show").output
        functions = _int_after(r"Total functions:\s*(\d+)", show)
        max_count = _int_after(r"Maximum function count:\s*(\d+)", show)
        if not functions or not max_count:
            raise PgolabError(f"merged profile {out} holds no counts ({functions} functions, max count {max_count})",
                              log=runner.log_path, hint="the training load did not reach the server's code")
        result = {"merged": str(out), "functions": functions, "max_function_count": max_count}
        if first is not None:
            # --showcs counts only the context-sensitive records: none means the second training's
            # counters were not context-sensitive (the _pgo_csgen build lacked its flag).
            cs_show = runner.run([self.profdata, "show", "--showcs", str(out)], what="llvm-profdata show --showcs")
            result["cs_functions"] = _int_after(r"Total functions:\s*(\d+)", cs_show.output)
            if not result["cs_functions"]:
                raise PgolabError(f"merged profile {out} holds no context-sensitive counts",
                                  log=runner.log_path,
                                  hint="the _pgo_csgen build's compile lacked -fcs-profile-generate: see its build.json")
        return result

    def digest(self, profile_dir: Path) -> str:
        return files_digest([profile_dir / MERGED_PROFILE])

    def check_used(self, build_dir: Path, profile_dir: Path, build_log: Path) -> ConsumptionCheck:
        """Each object is inspected for what only a profile produces (clang_object_used_profile)."""
        objects = object_files(build_dir)
        mismatched = len(re.findall(r"function control flow change detected \(hash mismatch\)",
                                    _log_text(build_log)))
        return ConsumptionCheck("profile-driven .text.hot/.text.unlikely sections or entry-count metadata "
                                "in each object", len(objects),
                                sum(1 for o in objects if clang_object_used_profile(build_dir / o)), mismatched)

    def function_weights(self, profile_dir: Path, build_dir: Path, runner: Runner, scratch: Path) -> dict[str, int]:
        """Function -> sum of its counters, from `llvm-profdata merge --text`."""
        text = runner.run([self.profdata, "merge", "--text", "-o", "-", str(profile_dir / MERGED_PROFILE)],
                          what="llvm-profdata merge --text").output
        weights: dict[str, int] = {}
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() == "# Func Hash:" and i >= 1:
                name = lines[i - 1].strip()
                n = int(lines[i + 3].strip())
                values = lines[i + 5: i + 5 + n]
                weights[name] = weights.get(name, 0) + sum(int(v) for v in values
                                                           if v.strip().lstrip("-").isdigit())
                i += 5 + n
            else:
                i += 1
        return weights

    def overlap_figure(self, training: Path, benchmark: Path, runner: Runner) -> str | None:
        """llvm-profdata's own overlap figure, reported beside pgolab's."""
        out = runner.run([self.profdata, "overlap", str(training / MERGED_PROFILE), str(benchmark / MERGED_PROFILE)],
                         check=False, what="llvm-profdata overlap").output
        m = re.search(r"Edge profile overlap:\s*([0-9.]+%)", out)
        return f"llvm-profdata overlap: edge profile overlap {m.group(1)}" if m else None


# --- comparing two profiles (pgolab profile-check) ------------------------------

@dataclass
class OverlapReport:
    method: str
    overlap: float                 # 0..1: sum over functions of min(share in A, share in B)
    tool_overlap: str | None       # the compiler tool's own figure, where it has one
    functions_benchmark: int
    functions_training: int
    unreached_hot: list[tuple[str, float]]   # benchmark functions the training never ran, with their share

    def describe(self) -> str:
        lines = [f"profile overlap (training vs benchmark): {self.overlap * 100:.1f}% ({self.method})"]
        if self.tool_overlap:
            lines.append(f"  {self.tool_overlap}")
        lines.append(f"  functions run: {self.functions_benchmark} by the benchmark, "
                     f"{self.functions_training} by the training")
        if self.unreached_hot:
            lines.append("  hottest benchmark functions the training did not reach:")
            lines += [f"    {share * 100:6.2f}%  {name}" for name, share in self.unreached_hot]
        else:
            lines.append("  the training reached every function the benchmark ran")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return asdict(self)


def overlap(training: dict[str, int], benchmark: dict[str, int], method: str, top: int = 15,
            tool_overlap: str | None = None) -> OverlapReport:
    t_total = sum(training.values()) or 1
    b_total = sum(benchmark.values()) or 1
    names = set(training) | set(benchmark)
    score = sum(min(training.get(n, 0) / t_total, benchmark.get(n, 0) / b_total) for n in names)
    unreached = sorted(((n, c / b_total) for n, c in benchmark.items() if c and not training.get(n)),
                       key=lambda x: -x[1])[:top]
    return OverlapReport(method, score, tool_overlap, sum(1 for c in benchmark.values() if c),
                         sum(1 for c in training.values() if c), unreached)
