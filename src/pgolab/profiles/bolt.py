"""BOLT's profile: .fdata files written by a binary `llvm-bolt -instrument` rewrote, and what
llvm-bolt says of an optimisation that read one (its own statistics prove the profile was used).

BOLT's runtime keeps its counters in memory shared with forked children (PostgreSQL's
backends), so the file each process writes as it exits holds the whole process tree's counts
so far, not its own share: the files of one tree are nested snapshots and adding them would
count the same branches several times. The training server's tree is the only one (the data
directory is initialised by the uninstrumented binary), and its root exits last: its file,
the largest, is the profile.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import PgolabError
from ..runner import Runner
from ..toolchains import LLVM_VERSION, llvm_tool, require, tool
from .base import ConsumptionCheck, int_after, log_text

MERGED_FDATA = "merged.fdata"


def runtime_lib(llvm_version: str, runtime: str = "instr") -> str:
    """Debian's BOLT looks for its runtimes (instrumentation, hugify) under /usr/lib/ and is given a
    path relative to it (an absolute path is appended to /usr/lib/ as well)."""
    return f"llvm-{llvm_version}/lib/libbolt_rt_{runtime}.a"


def function_order(llvm_version: str) -> str:
    """Hot functions together, in call order: hfsort+ was LLVM 16's best; LLVM 18 replaced it by
    cdsort (cache-directed sort; LLVM 19 keeps `hfsort+` as another name for it)."""
    return "hfsort+" if int(llvm_version) < 18 else "cdsort"


# Every llvm-bolt run is single-threaded: llvm-bolt 16 crashed (SIGSEGV) in 2 of 10 -instrument
# runs of one MariaDB server with its default threads and in none of 10 with --no-threads, in about
# the same time on 2 CPUs. Its code does not depend on the thread count (the same bytes at 1, 2, 4 and
# 8 threads); its command line, which it writes into the binary (.note.bolt_info), does:
# docs/results/bolt-crash/.
THREADS = ["--no-threads"]

# The optimisation recipe of BOLT's own documentation for large server binaries (the function order
# is the release's, above):
OPTIMIZE_OPTIONS = [
    "-reorder-blocks=ext-tsp",        # block layout within functions: the I-cache/fall-through model
    "-split-functions",               # cold blocks out of hot functions ...
    "-split-all-cold",                # ... all of them
    "-split-eh",                      # ... including exception landing pads
    "-icf=1",                         # fold functions with identical code (less code to cache)
    "-use-gnu-stack",                 # keep a GNU_STACK header (strip/objcopy, loaders)
    "-dyno-stats",                    # BOLT's before/after figures, kept in the log
    # A profile that matches less than half of the profiled functions belongs to another binary.
    "--stale-threshold=50",
]


# The `_hugify` axis: BOLT links its hugify runtime in, which at start-up asks the kernel for
# transparent huge pages under the hot text. Whether it gets them is the kernel's (the smoke test
# measures it: none on this project's kernel 6.18 without CONFIG_READ_ONLY_THP_FOR_FS). Cost mode
# simulates no TLB.
def hugify_options(llvm_version: str) -> list[str]:
    return ["-hugify", f"--runtime-hugify-lib={runtime_lib(llvm_version, 'hugify')}"]


@dataclass
class BoltStats:
    """What llvm-bolt says of the optimisation, parsed from its output."""

    functions: int                 # functions in the binary
    profiled: int                  # of them with a non-empty profile
    stale: int                     # of them whose profile did not match (stale)
    reordered: int                 # functions whose block layout changed
    ignored_objects: int           # profile entries for objects it could not find
    folded_functions: int          # by ICF
    hot_bytes: int | None          # code of split functions kept in the hot part ...
    cold_bytes: int | None         # ... and moved out to the cold part

    @property
    def matched_share(self) -> float:
        return (self.profiled - self.stale) / self.profiled if self.profiled else 0.0

    def describe(self) -> str:
        return (f"{self.profiled} of {self.functions} functions profiled ({self.matched_share:.1%} of them "
                f"matched, {self.stale} stale), {self.reordered} re-laid out, "
                f"{self.cold_bytes or 0} cold bytes split out, ICF folded {self.folded_functions}")

    def as_dict(self) -> dict:
        return {**asdict(self), "matched_share": round(self.matched_share, 4)}


def parse_stats(output: str) -> BoltStats:
    return BoltStats(
        functions=int_after(r"BOLT-INFO: \d+ out of (\d+) functions in the binary", output),
        profiled=int_after(r"BOLT-INFO: (\d+) out of \d+ functions in the binary", output),
        stale=int_after(r"BOLT-INFO: (\d+) \([\d.]+%\) functions? have invalid \(possibly stale\) profile", output),
        reordered=int_after(r"basic block reordering modified layout of (\d+) functions", output),
        ignored_objects=int_after(r"profile for (\d+) objects was ignored", output),
        folded_functions=int_after(r"ICF folded (\d+) out of", output),
        hot_bytes=int_after(r"splitting separates (\d+) hot bytes", output, None),
        cold_bytes=int_after(r"splitting separates \d+ hot bytes from (\d+) cold bytes", output, None),
    )


class BoltProfile:
    """BOLT's profile tool: .fdata files written by an instrumented binary."""

    name = "bolt"
    raw_pattern = "*.fdata"
    runtime_error = None
    weights_method = "per-function branch and call counts from the .fdata profile"

    def __init__(self, llvm_bolt: str, merge_fdata: str, instrument_calls: bool = True,
                 llvm_version: str = LLVM_VERSION, hugify: bool = False):
        self.llvm_bolt, self.merge_fdata = llvm_bolt, merge_fdata
        self.instrument_calls = instrument_calls
        self.llvm_version = llvm_version
        self.hugify = hugify

    def version(self) -> str | None:
        return tool(llvm_tool("llvm-bolt", self.llvm_version)).version()

    def generate_flags(self, profile_dir: Path, build_dir: Path) -> list[str]:
        """llvm-bolt's instrumentation options. The profile path is compiled into the rewritten
        binary (absolute: the server chdir()s), one file per process."""
        calls = [] if self.instrument_calls else ["--instrument-calls=false"]
        return ["-instrument", *THREADS, *calls, f"--instrumentation-file={profile_dir / 'prof'}",
                "--instrumentation-file-append-pid",
                f"--runtime-instrumentation-lib={runtime_lib(self.llvm_version)}"]

    def use_flags(self, profile_dir: Path, build_dir: Path) -> list[str]:
        return [*THREADS, f"-data={profile_dir / MERGED_FDATA}", OPTIMIZE_OPTIONS[0],
                f"-reorder-functions={function_order(self.llvm_version)}", *OPTIMIZE_OPTIONS[1:],
                *(hugify_options(self.llvm_version) if self.hugify else [])]

    def redirect_env(self, compiled_dir: Path, target_dir: Path) -> dict[str, str]:
        return {}     # no run-time redirection: each training instruments its own copy

    def merge(self, profile_dir: Path, runner: Runner) -> dict:
        files = [p for p in profile_dir.glob("prof.*.fdata") if p.is_file()]
        if not files:
            raise PgolabError(f"the BOLT training wrote no .fdata file in {profile_dir}",
                              hint="the instrumented server must exit through its own shutdown")
        totals = {p: fdata_total(p) for p in files}
        root = max(files, key=lambda p: totals[p])   # see the module docstring: nested snapshots
        if totals[root] == 0:
            raise PgolabError(f"the BOLT profile {root} counts no branches",
                              hint="the training load did not reach the server's code")
        out = profile_dir / MERGED_FDATA
        text = runner.run([self.merge_fdata, str(root)], what="merge-fdata").output
        out.write_text("\n".join(line for line in text.splitlines() if is_fdata_line(line)) + "\n")
        return {"raw_files": len(files), "used_file": root.name, "branch_count": totals[root],
                "merged": str(out)}

    def read_files(self, profile_dir: Path) -> list[Path]:
        """The merged profile llvm-bolt reads (what a folder of profiles keeps)."""
        path = profile_dir / MERGED_FDATA
        return [path] if path.is_file() else []

    def identity_versions(self) -> dict:
        """What a BOLT profile is read by and was instrumented with (a profile file's `compiler`): the
        counts belong to the binary llvm-bolt -instrument wrote, which these decide with the input."""
        where = Path("/")     # the profile's path is this machine's: not part of what was instrumented
        return {"llvm-bolt": self.version(), "instrument": " ".join(
            f for f in self.generate_flags(where, where) if not f.startswith("--instrumentation-file="))}

    def digest(self, profile_dir: Path) -> str:
        path = profile_dir / MERGED_FDATA
        if not path.exists():
            raise PgolabError(f"BOLT profile {path} is missing", hint="run the build again: it retrains")
        return hashlib.sha256(path.read_bytes()).hexdigest()

    def check_used(self, build_dir: Path, profile_dir: Path, build_log: Path) -> ConsumptionCheck:
        stats = parse_stats(log_text(build_log, limit=2_000_000))
        return ConsumptionCheck("llvm-bolt's own statistics (profiled, stale and re-laid-out functions)",
                                stats.functions, stats.profiled - stats.stale, stats.stale)

    def function_weights(self, profile_dir: Path, build_dir: Path, runner: Runner, scratch: Path) -> dict[str, int]:
        """Function -> branch and call counts leaving it, from the merged profile."""
        weights: dict[str, int] = {}
        for line in (profile_dir / MERGED_FDATA).read_text().splitlines():
            parts = line.split()
            if is_fdata_line(line):
                weights[parts[1]] = weights.get(parts[1], 0) + int(parts[-1])
        return weights

    def overlap_figure(self, training: Path, benchmark: Path, runner: Runner) -> str | None:
        return None


def function_to_skip(output: str) -> str | None:
    """The function llvm-bolt says it cannot rewrite and asks to be skipped, e.g. BOLT 19 on
    PostgreSQL's ExecInterpExpr (its computed gotos): `... in function NAME/1(*2). Consider adding
    this function to --skip-funcs=...`; None if it asks for nothing."""
    match = re.search(r"in function (\S+?)(?:\(\*\d+\))?\. Consider adding this function to --skip-funcs", output)
    return match.group(1) if match else None


# BOLT 19 failed to write out a clang-19 PostgreSQL build (ThinLTO, PGO, -fsplit-machine-functions)
# after its unreachable-code elimination: "Undefined temporary symbol" errors, then "Emission failed",
# in both -instrument and the optimisation; with the elimination off both ran through (CI's matrix
# build of 2026-11-29, reproduced by hand). Other builds keep BOLT's default: it is asked only then.
KEEP_UNREACHABLE = "--eliminate-unreachable=false"


def option_to_add(output: str) -> str | None:
    """The option with which llvm-bolt may write the binary its failed run could not; None if none."""
    if "Undefined temporary symbol" in output and "BOLT-ERROR: Emission failed" in output:
        return KEEP_UNREACHABLE
    return None


def is_fdata_line(line: str) -> bool:
    """`<is sym> <name> <offset> <is sym> <name> <offset> <mispredicts> <count>`"""
    parts = line.split()
    return len(parts) == 8 and parts[-1].isdigit() and parts[0] in ("0", "1", "2")


def fdata_total(path: Path) -> int:
    return sum(int(line.split()[-1]) for line in path.read_text(errors="replace").splitlines()
               if is_fdata_line(line))


def bolt_profile(forks_backends: bool = False, llvm_version: str = LLVM_VERSION, hugify: bool = False) -> BoltProfile:
    """BOLT of the build's LLVM release (gcc builds: the default one). BOLT 16's call profiling (its tables of indirect-call targets live in the memory it shares
    with forked children) made PostgreSQL backends overflow their stack inside BOLT's runtime within
    a second of training (3 training runs of 3 here); without it the same training ran clean. Servers that fork
    a backend per connection are therefore instrumented for branches only: block layout and
    splitting keep their profile, function ordering sees hotness but no call edges."""
    return BoltProfile(require(llvm_tool("llvm-bolt", llvm_version)), require(llvm_tool("merge-fdata", llvm_version)),
                       instrument_calls=not forks_backends, llvm_version=llvm_version, hugify=hugify)
