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
                f"({self.mismatched} reported out of date); checked by {self.method}")

    def as_dict(self) -> dict:
        return asdict(self)


def object_files(build_dir: Path) -> list[Path]:
    return [p.relative_to(build_dir) for p in build_dir.rglob("*.o") if p.is_file()]


def check_consumed(compiler: str, build_dir: Path, profile_dir: Path, build_log: Path) -> ConsumptionCheck:
    """Prove that the optimized build used the profile; an unused profile is an error.

    gcc: every object of the optimized build is matched to the .gcda file the
    instrumented build wrote for the same source (a direct check).
    clang: the build runs with -Wprofile-instr-unprofiled, which names each file
    compiled without profile data; objects minus those warnings used the profile.
    """
    objects = object_files(build_dir)
    log_text = build_log.read_text(errors="replace") if build_log.exists() else ""
    if compiler == "gcc":
        names = {p.name for p in profile_dir.glob("*.gcda")}
        matched = sum(1 for o in objects if gcda_name(o) in names)
        mismatched = log_text.count("coverage mismatch") + log_text.count("profile data may be corrupted")
        check = ConsumptionCheck("matching each object to its .gcda file", len(objects), matched, mismatched)
    else:
        unprofiled = len(set(re.findall(r"no profile data available for file \"([^\"]+)\"", log_text)))
        mismatched = len(re.findall(r"profile data may be out of date", log_text))
        check = ConsumptionCheck("clang -Wprofile-instr-unprofiled warnings in the build log",
                                 len(objects), max(len(objects) - unprofiled, 0), mismatched)
    if check.objects == 0 or check.with_profile == 0:
        raise PgolabError(f"the optimized build did not use the profile: {check.describe()}",
                          log=build_log,
                          hint="the instrumented and optimized builds must come from the same source and flags; "
                               "delete the variant's folder and build again")
    return check
