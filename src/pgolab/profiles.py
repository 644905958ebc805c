"""PGO profiles: where raw files land, counting them, merging, and proving they were used."""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import PgolabError
from .runner import Runner
from .variants import MERGED_PROFILE


def raw_pattern(compiler: str) -> str:
    return "*.gcda" if compiler == "gcc" else "*.profraw"


def runtime_env(compiler: str, profile_dir: Path) -> dict[str, str]:
    """Environment for an instrumented server.

    clang: LLVM_PROFILE_FILE must be absolute (the server chdir()s into its data
    directory) and unique per process (%p) and binary (%m); PostgreSQL forks a
    backend per connection. gcc's .gcda paths are compiled in (absolute, from
    -fprofile-generate=DIR) and libgcov merges concurrent writers under a lock.
    """
    if not profile_dir.is_absolute():
        raise PgolabError(f"internal: profile directory must be absolute: {profile_dir}")
    if compiler == "clang":
        return {"LLVM_PROFILE_FILE": str(profile_dir / "raw-%m-%p.profraw")}
    return {}


@dataclass
class RawProfileStats:
    files: int
    bytes: int

    def describe(self) -> str:
        return f"{self.files} raw profile files, {self.bytes / 1024:.0f} KiB"


def raw_stats(profile_dir: Path, compiler: str) -> RawProfileStats:
    files = [p for p in profile_dir.rglob(raw_pattern(compiler)) if p.is_file()]
    return RawProfileStats(len(files), sum(p.stat().st_size for p in files))


def require_raw_profiles(profile_dir: Path, compiler: str, error_log: Path | None = None) -> RawProfileStats:
    stats = raw_stats(profile_dir, compiler)
    if stats.files == 0 or stats.bytes == 0:
        raise PgolabError(
            f"the training run wrote no profile ({stats.describe()} in {profile_dir})",
            log=error_log,
            hint="the server must exit through its own shutdown; check that it was not killed, "
                 "that the profile directory is writable by the server's user, and the error log")
    return stats


def merge(profile_dir: Path, compiler: str, profdata: str | None, runner: Runner) -> dict:
    """clang: llvm-profdata merge into one indexed profile; gcc reads .gcda files as they are."""
    if compiler == "gcc":
        return {"merged": None}
    raws = sorted(str(p) for p in profile_dir.glob("*.profraw"))
    out = profile_dir / MERGED_PROFILE
    runner.run([profdata, "merge", "-o", str(out), *raws], what="llvm-profdata merge")
    show = runner.run([profdata, "show", str(out)], what="llvm-profdata show").output
    functions = _int_after(r"Total functions:\s*(\d+)", show)
    max_count = _int_after(r"Maximum function count:\s*(\d+)", show)
    if not functions or not max_count:
        raise PgolabError(f"merged profile {out} holds no counts ({functions} functions, max count {max_count})",
                          log=runner.log_path, hint="the training load did not reach the server's code")
    return {"merged": str(out), "functions": functions, "max_function_count": max_count}


def _int_after(pattern: str, text: str) -> int:
    m = re.search(pattern, text)
    return int(m.group(1)) if m else 0


def profile_digest(profile_dir: Path, compiler: str) -> str:
    """What the optimized build depends on: the merged profile, or every .gcda."""
    h = hashlib.sha256()
    files = [profile_dir / MERGED_PROFILE] if compiler == "clang" else sorted(profile_dir.glob("*.gcda"))
    for p in files:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def gcda_name(object_rel: Path) -> str:
    """The .gcda file gcc writes for an object, given -fprofile-prefix-path=<build dir>:
    the object's path relative to the build directory, extension dropped, '/' -> '#'."""
    return str(object_rel.with_suffix("")).replace("/", "#") + ".gcda"


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


def object_files(build_dir: Path) -> list[Path]:
    return [p.relative_to(build_dir) for p in build_dir.rglob("*.o") if p.is_file()]


def elf_section_names(path: Path) -> list[str]:
    """Section names of an ELF64 little-endian object (enough for x86-64 objects)."""
    import struct
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not shoff or shstrndx >= shnum:
        return []
    str_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    names = []
    for i in range(shnum):
        name_off, = struct.unpack_from("<I", data, shoff + i * shentsize)
        end = data.index(b"\0", str_off + name_off)
        names.append(data[str_off + name_off:end].decode(errors="replace"))
    return names


def clang_object_used_profile(path: Path) -> bool:
    """A profile shapes what clang writes: functions the profile calls hot or never run go to
    .text.hot.* / .text.unlikely.* sections (clang does neither without a profile), and ThinLTO
    bitcode carries function_entry_count metadata taken from the profile."""
    head = path.read_bytes()[:4]
    if head == b"BC\xc0\xde":
        return b"function_entry_count" in path.read_bytes()
    return any(n.startswith((".text.hot.", ".text.unlikely.")) for n in elf_section_names(path))


def check_consumed(compiler: str, build_dir: Path, profile_dir: Path, build_log: Path) -> ConsumptionCheck:
    """Prove that the optimized build used the profile; an unused profile is an error.

    gcc: every object of the optimized build is matched to the .gcda file the
    instrumented build wrote for the same source (gcc reads exactly that file).
    clang: each object is inspected for what only a profile produces (see
    clang_object_used_profile).
    """
    objects = object_files(build_dir)
    log_text = build_log.read_text(errors="replace") if build_log.exists() else ""
    if compiler == "gcc":
        names = {p.name for p in profile_dir.glob("*.gcda")}
        matched = sum(1 for o in objects if gcda_name(o) in names)
        mismatched = log_text.count("[-Wcoverage-mismatch]") + log_text.count("profile data may be corrupted")
        check = ConsumptionCheck("matching each object to its .gcda file", len(objects), matched, mismatched)
    else:
        used = sum(1 for o in objects if clang_object_used_profile(build_dir / o))
        mismatched = len(re.findall(r"function control flow change detected \(hash mismatch\)", log_text))
        check = ConsumptionCheck("profile-driven .text.hot/.text.unlikely sections or entry-count metadata "
                                 "in each object", len(objects), used, mismatched)
    if check.objects == 0 or check.with_profile == 0:
        raise PgolabError(f"the optimized build did not use the profile: {check.describe()}",
                          log=build_log,
                          hint="the instrumented and optimized builds must come from the same source and flags; "
                               "delete the variant's folder and build again")
    return check


# --- comparing two profiles (pgolab profile-check) ------------------------------

def redirect_env(compiler: str, compiled_dir: Path, target_dir: Path) -> dict[str, str]:
    """Environment that sends an instrumented server's profile to target_dir instead of the
    directory compiled into it (gcc: GCOV_PREFIX/GCOV_PREFIX_STRIP; clang: LLVM_PROFILE_FILE)."""
    if compiler == "clang":
        return runtime_env("clang", target_dir)
    return {"GCOV_PREFIX": str(target_dir), "GCOV_PREFIX_STRIP": str(len(compiled_dir.parts) - 1)}


def clang_function_weights(profdata: Path, llvm_profdata: str, runner: Runner) -> dict[str, int]:
    """Function -> sum of its counters, from `llvm-profdata merge --text`."""
    text = runner.run([llvm_profdata, "merge", "--text", "-o", "-", str(profdata)],
                      what="llvm-profdata merge --text").output
    weights: dict[str, int] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "# Func Hash:" and i >= 1:
            name = lines[i - 1].strip()
            n = int(lines[i + 3].strip())
            values = lines[i + 5: i + 5 + n]
            weights[name] = weights.get(name, 0) + sum(int(v) for v in values if v.strip().lstrip("-").isdigit())
            i += 5 + n
        else:
            i += 1
    return weights


def gcc_function_weights(profile_dir: Path, build_dir: Path, runner: Runner, scratch: Path) -> dict[str, int]:
    """Function -> entry count, read with gcov from .gcda files and the instrumented
    build's .gcno files (gcc 12's `gcov-tool overlap` reported 0% for two identical
    profiles here, so pgolab reads the counts with gcov itself)."""
    import gzip
    import json
    import shutil as _shutil

    _shutil.rmtree(scratch, ignore_errors=True)
    staged = []
    for gcda in profile_dir.glob("*.gcda"):
        rel = Path(gcda.name[:-len(".gcda")].replace("#", "/"))
        gcno = build_dir / (str(rel) + ".gcno")
        if not gcno.exists():
            continue
        dest = scratch / rel.parent
        dest.mkdir(parents=True, exist_ok=True)
        _shutil.copy(gcda, dest / (rel.name + ".gcda"))
        (dest / (rel.name + ".gcno")).symlink_to(gcno)
        staged.append(str(rel) + ".gcda")
    weights: dict[str, int] = {}
    for start in range(0, len(staged), 200):
        chunk = staged[start:start + 200]
        out = runner.run(["gcov", "--json-format", "--stdout", *chunk], cwd=scratch, what="gcov --json-format",
                         check=False).output
        for line in out.splitlines():
            if not line.startswith("{"):
                continue
            for f in json.loads(line).get("files", []):
                for fn in f.get("functions", []):
                    name = fn.get("demangled_name") or fn["name"]
                    weights[name] = weights.get(name, 0) + int(fn.get("execution_count", 0))
    return weights


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


def llvm_overlap_figure(training: Path, benchmark: Path, llvm_profdata: str, runner: Runner) -> str | None:
    out = runner.run([llvm_profdata, "overlap", str(training), str(benchmark)], check=False,
                     what="llvm-profdata overlap").output
    m = re.search(r"Edge profile overlap:\s*([0-9.]+%)", out)
    return f"llvm-profdata overlap: edge profile overlap {m.group(1)}" if m else None
