"""BOLT post-link layout: the `_bolt` axis (instrument, train, merge, optimize).

There are no hardware counters here, so BOLT's profile comes from its own instrumentation:
`llvm-bolt -instrument` writes a copy of the linked server (linked with --emit-relocs) that
counts every branch, the training load runs against it, and the optimized binary is
rewritten from the original with that profile, then installed over it. `bolt_phases` is this
module's entry point; BOLT's profile tool is `profiles.bolt.BoltProfile`.

Every BOLT phase starts from a copy of the server as the compile installed it (final/bolt/input),
taken as the instrument phase starts: the compile knows nothing of BOLT.

Given a folder of profiles (`pgolab matrix --profiles`), the merged profile is kept there as a
profile file whose identity holds the input's digest; a machine that has not instrumented that
input reads the file instead of instrumenting and training (the train and merge phases then take
it as theirs), so a build that compiles to the same binary there is laid out into the same binary.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import profile_file
from ..errors import PgolabError
from ..phases import Phase, Reporter
from ..profiles import files_digest, holds_sealed, seal
from ..profiles.bolt import BoltProfile, fdata_total, function_to_skip, option_to_add, parse_stats
from ..runner import CommandResult, Runner
from ..sources import file_digest
from ..workloads import TrainingSpec
from .context import RunnerFactory, SealedDigest, Serving
from .pgo import train_into


# Functions BOLT may ask to leave alone before pgolab gives up on a binary.
MAX_SKIPPED = 8
# Runs again after llvm-bolt was killed by a signal. It runs on one thread (THREADS in
# profiles/bolt), where no crash was seen; a crash there still gets one more run on the same input.
CRASH_RETRIES = 1


@dataclass
class BoltContext:
    """A `_bolt` build's BOLT phases: their folder, the installed server they rewrite, the training."""

    dir: Path                     # <build>/final/bolt
    installed: Path               # the server binary as installed (bolt-optimize writes over it)
    tool: BoltProfile
    sealed_digest: SealedDigest   # of BOLT's profile, checked (a refusal forgets bolt-train and after)
    state_file: Path              # named in the hint when the input copy is lost
    train: TrainingSpec
    runner: RunnerFactory
    servers: Serving
    reporter: Reporter
    # A folder of profile files (matrix --profiles), and what a BOLT profile of this build is made
    # from, but for its input's digest (ProfileIdentity.bolt_input, known once the compile ran): the
    # merge records it, so a run file can carry the profile (bolt_profile_of) with or without a folder.
    profiles: Path | None = None
    expected: profile_file.ProfileIdentity | None = None


@dataclass
class Adjustments:
    """What llvm-bolt's failures called for: the instrument phase finds them, the optimize phase starts
    with them. Kept in one file of the BOLT folder."""

    skipped: list[str] = field(default_factory=list)   # functions left as they are (--skip-funcs)
    options: list[str] = field(default_factory=list)   # options a failure called for (option_to_add)

    def argv(self) -> list[str]:
        return [*self.options, *([f"--skip-funcs={','.join(self.skipped)}"] if self.skipped else [])]

    def record(self) -> dict:
        return {"skipped_functions": self.skipped, "added_options": self.options}

    def save(self, path: Path) -> None:
        partial = path.with_name(path.name + ".partial")     # (a kill mid-write leaves the last whole one)
        partial.write_text(json.dumps(self.record()))
        partial.replace(path)

    @classmethod
    def load(cls, path: Path) -> "Adjustments":
        try:
            data = json.loads(path.read_text()) if path.exists() else {}
        except ValueError as exc:
            raise PgolabError(f"{path} is not what pgolab wrote: {exc}",
                              hint=f"remove the build's folder {path.parents[2]} and build it again (BOLT "
                                   "instruments and trains anew)") from None
        return cls(list(data.get("skipped_functions", [])), list(data.get("added_options", [])))


def bolt_phases(ctx: BoltContext) -> list[Phase]:
    """The BOLT phases that follow a `_bolt` variant's install (and profile check)."""
    return BoltSteps(ctx).phases()


def keep_bolt_profile(ctx: BoltContext, merged: dict) -> str | None:
    """A BOLT training merged here (`merged`: its bolt-merge record) kept in the folder of profiles, if it
    is not there yet: for one merged before the build was given the folder. None: nothing to keep (no
    folder, an imported profile, or one written to since its merge)."""
    steps = BoltSteps(ctx)
    if merged.get("imported") or not steps.input.exists() \
            or not as_merged(steps.profile_dir, steps.tool, merged):
        return None
    return steps.keep_profile()


def as_merged(profile_dir: Path, tool: BoltProfile, merged: dict) -> bool:
    """Whether BOLT's profile folder holds what its merge (`merged`: its record) sealed: nothing written since."""
    return holds_sealed(profile_dir, tool, merged.get("sealed"))


def bolt_profile_of(build_dir: Path, merged: dict, out: Path) -> profile_file.ProfileIdentity | None:
    """A finished _bolt build's BOLT profile (`merged`: its bolt-merge record) written to `out` as a
    profile file, for a run file to carry (runfile): the file it was read from, where it was imported
    and that file is still here; None where its merge recorded no identity (merged before pgolab
    recorded one) or the profile was written to since its merge."""
    profile_dir = build_dir / "final" / "bolt" / "profile"
    tool = BoltProfile("llvm-bolt", "merge-fdata")     # (only reads the folder: no command runs)
    files = tool.read_files(profile_dir)
    identity = merged.get("profile_identity")
    if identity is None or not files or not as_merged(profile_dir, tool, merged):
        return None
    template = profile_file.ProfileIdentity.from_dict(identity, f"{build_dir}'s BOLT merge record")
    read_from = Path(merged["imported"]) if merged.get("imported") else None
    if read_from is not None and read_from.is_file() and \
            profile_file.read_identity(read_from).profile_digest == files_digest(files):
        # Read from another machine's file: that file, which says where it was trained.
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(read_from, out)
        return profile_file.read_identity(out)
    made_by = (f"{merged['made_by']}, passed on by a machine" if read_from is not None
               else f"{template.trained_build}'s BOLT training")      # (write adds this machine)
    adjustments = Adjustments.load(build_dir / "final" / "bolt" / "adjustments.json").record()
    return profile_file.write_as(out, files, template, made_by, bolt_adjustments=adjustments)


def bolt_failure_hint(returncode: int, otherwise: str) -> str:
    """What to do after llvm-bolt failed: a crash (killed by a signal) is BOLT's own fault."""
    if returncode < 0:
        return (f"llvm-bolt crashed {CRASH_RETRIES + 1} times on this input (a bug in BOLT, its stack in the "
                "log): run the build again (it resumes at this phase), or build the variant with _clang19 (BOLT 19)")
    return otherwise


class BoltSteps:
    """The BOLT phases of one build: files under <build>/final/bolt."""

    def __init__(self, ctx: BoltContext):
        self.ctx = ctx
        self.tool = ctx.tool
        self.dir = ctx.dir
        self.input = self.dir / "input"                 # the linked binary, as installed
        self.instrumented = self.dir / "instrumented"
        self.profile_dir = self.dir / "profile"
        self.optimized = self.dir / "optimized"
        # What the instrument phase's failures called for (Adjustments): the optimize phase starts with it.
        self.adjustments_file = self.dir / "adjustments.json"
        # Written when the instrument phase read the profile from a file instead: which, for which input.
        self.imported_file = self.dir / "imported.json"
        self._input_digest: tuple[tuple[int, int, int], str] | None = None

    def run_bolt(self, runner: Runner, argv: list[str], what: str,
                 start: Adjustments) -> tuple[CommandResult, Adjustments]:
        """llvm-bolt, again without each function it asks to skip (at most MAX_SKIPPED): the rest of
        the binary is still laid out; again with the option its failure calls for (option_to_add);
        and again, unchanged, when a signal killed it (CRASH_RETRIES times)."""
        asked, crashes = Adjustments(list(start.skipped), list(start.options)), 0
        while True:
            result = runner.run(argv + asked.argv(), what=what, check=False, cwd=self.dir)
            if result.returncode < 0 and crashes < CRASH_RETRIES:
                crashes += 1
                self.ctx.reporter.message(f"{what} was killed by signal {-result.returncode} (its log has the "
                                          "stack); running it again on the same input")
                continue
            option = option_to_add(result.output) if result.returncode > 0 else None
            if option is not None and option not in asked.options:
                asked.options.append(option)
                self.ctx.reporter.message(f"{what} could not write its output; again with {option}")
                continue
            name = function_to_skip(result.output) if result.returncode > 0 else None
            if name is None or name in asked.skipped or len(asked.skipped) >= MAX_SKIPPED:
                return result, asked
            asked.skipped.append(name)
            self.ctx.reporter.message(f"BOLT cannot rewrite {name}; {what} again, leaving it as it is")

    def keep_input(self) -> None:
        """Every BOLT phase starts from a copy of the server as the compile installed it. The instrument
        phase runs again after every install (the phases chain), so this refreshes the copy; but it
        also runs again alone (a new llvm-bolt), after bolt-optimize installed its output: an installed
        binary equal to that output is BOLT's, and the copy kept before is still the input."""
        if self.optimized.exists() and filecmp.cmp(self.ctx.installed, self.optimized, shallow=False):
            self._require_input()
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.ctx.installed, self.input)

    def instrument(self) -> dict:
        self.keep_input()
        earlier = self.marker()    # what an earlier run of this phase read: the same file again, if it is there
        self.imported_file.unlink(missing_ok=True)
        if (imported := self.import_profile(Path(earlier["file"]) if earlier else None)) is not None:
            return imported
        return self.instrument_input()

    def instrument_input(self) -> dict:
        runner = self.ctx.runner("bolt-instrument")
        result, adjustments = self.run_bolt(runner, [self.tool.llvm_bolt, self.input.name, "-o",
                                                     self.instrumented.name,
                                                     *self.tool.generate_flags(self.profile_dir, self.dir)],
                                            "llvm-bolt -instrument", Adjustments())
        if result.returncode != 0:
            raise PgolabError(f"llvm-bolt -instrument failed (exit {result.returncode})", log=runner.log_path,
                              hint=bolt_failure_hint(result.returncode, "read the log's BOLT-ERROR line; a "
                                                     "build without _bolt is not affected"))
        adjustments.save(self.adjustments_file)
        shutil.copymode(self.input, self.instrumented)
        return {"instrumented_bytes": self.instrumented.stat().st_size, **adjustments.record()}

    def input_digest(self) -> str:
        """The input's digest, read again only when the file changed (keep_input copies it anew): the
        phases and their seals ask for it several times, and the input is the whole server."""
        stat = self.input.stat()
        key = (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size)   # (copy2 keeps the mtime; ctime moves)
        if self._input_digest is None or self._input_digest[0] != key:
            self._input_digest = (key, file_digest(self.input))
        return self._input_digest[1]

    def expected_for_input(self) -> profile_file.ProfileIdentity | None:
        if self.ctx.expected is None:
            return None
        return replace(self.ctx.expected, bolt_input=self.input_digest())

    def import_profile(self, prefer: Path | None) -> dict | None:
        """The profile another machine's BOLT training of this very input and training kept in the folder
        of profiles, unpacked in place of instrumenting and training here; None where there is none (or
        it cannot be read: this machine trains instead). Of several, `prefer` (the one read before)."""
        expected = self.expected_for_input() if self.ctx.profiles is not None else None
        if expected is None:
            return None
        found = profile_file.find(self.ctx.profiles, expected, prefer=prefer)
        problems = list(found.unreadable)
        identity = None
        if found.path is not None:
            try:
                identity = profile_file.unpack(found.path, expected, self.tool, self.profile_dir)
            except PgolabError as exc:     # damaged in transfer: passed over, not fatal
                problems.append(f"{found.path.name}: {exc}")
        for problem in problems:
            self.ctx.reporter.message(f"--profiles: passed over {problem}")
        if identity is None:
            return None
        adjustments = Adjustments(list(identity.bolt_adjustments.get("skipped_functions", [])),
                                  list(identity.bolt_adjustments.get("added_options", [])))
        adjustments.save(self.adjustments_file)
        self.instrumented.unlink(missing_ok=True)
        self.imported_file.write_text(json.dumps({
            "file": str(found.path), "input": expected.bolt_input, "training_digest": expected.training_digest,
            "profile_digest": identity.profile_digest, "made_by": identity.made_by}))
        self.ctx.reporter.message(f"BOLT: profile read from {found.path.name} ({identity.made_by}): "
                                  "no instrumentation or training here")
        return {"imported": str(found.path), "made_by": identity.made_by, **adjustments.record()}

    def marker(self) -> dict | None:
        return json.loads(self.imported_file.read_text()) if self.imported_file.exists() else None

    def imported(self) -> dict | None:
        """What the instrument phase read from a file, if it was for the input and the training as they
        are now (a build without PGO re-runs its BOLT training alone when the training changes), else None."""
        data, expected = self.marker(), self.ctx.expected
        if data is None or expected is None or data.get("training_digest") != expected.training_digest:
            return None
        return data if self.input.exists() and data.get("input") == self.input_digest() else None

    def keep_profile(self) -> str | None:
        """This machine's BOLT training, merged, kept in the folder of profiles (profile_file.keep)."""
        expected = self.expected_for_input() if self.ctx.profiles is not None else None
        files = self.tool.read_files(self.profile_dir)
        if expected is None or not files:
            return None
        adjustments = Adjustments.load(self.adjustments_file).record()
        return profile_file.keep(self.ctx.profiles, expected, files, lambda out: profile_file.write_as(
            out, files, expected, f"{expected.trained_build}'s BOLT training", bolt_adjustments=adjustments))

    def train(self) -> dict:
        if (imported := self.imported()) is not None:
            return {"imported": imported["file"]}
        if not self.instrumented.exists():
            # The instrument phase read a file for another training, and left no instrumented copy.
            self.imported_file.unlink(missing_ok=True)
            self.instrument_input()
        # A server finds its files relative to its own binary: PostgreSQL, configured for one fixed
        # prefix wherever it is built, finds lib/ and share/ beside bin/. So the instrumented copy
        # trains from beside the installed server, and goes when the training ends.
        beside = self.ctx.installed.with_name(f".{self.ctx.installed.name}-bolt-instrumented")
        beside.unlink(missing_ok=True)      # left by a training killed with SIGKILL
        os.link(self.instrumented, beside)  # both live in the build's folder: one file system
        try:
            return train_into(self.ctx, "final", "bolt-train", self.profile_dir, self.tool, server_binary=beside)
        finally:
            beside.unlink(missing_ok=True)

    def merge(self) -> dict:
        if (imported := self.imported()) is not None:
            if files_digest(self.tool.read_files(self.profile_dir)) != imported["profile_digest"]:
                # Written to since it was read (a server of a killed run): read again from the file.
                profile_file.unpack(Path(imported["file"]), replace(self.ctx.expected, bolt_input=imported["input"]),
                                    self.tool, self.profile_dir)
            return {"imported": imported["file"], "made_by": imported["made_by"],
                    "merged_branch_count": self.merged_branch_count(), "sealed": seal(self.profile_dir, self.tool),
                    **self.identity_record()}
        result = self.tool.merge(self.profile_dir, self.ctx.runner("bolt-merge"))
        sealed = seal(self.profile_dir, self.tool)
        if (kept := self.keep_profile()) is not None:
            self.ctx.reporter.message(f"BOLT {kept}")
        # (branch_count is the training's file's; merge-fdata's output, which llvm-bolt reads, counts fewer.)
        return {**result, "merged_branch_count": self.merged_branch_count(), "sealed": sealed, **self.identity_record()}

    def identity_record(self) -> dict:
        """What the merged profile is a profile of (a profile file's identity), for bolt_profile_of."""
        expected = self.expected_for_input() if self.input.exists() else None
        return {"profile_identity": expected.as_dict()} if expected is not None else {}

    def merged_branch_count(self) -> int:
        return sum(fdata_total(f) for f in self.tool.read_files(self.profile_dir))

    def optimize(self) -> dict:
        self._require_input()
        runner = self.ctx.runner("bolt-optimize")
        options = self.optimize_options()
        result, adjustments = self.run_bolt(runner, [self.tool.llvm_bolt, self.input.name, "-o",
                                                     self.optimized.name, *options],
                                            "llvm-bolt optimize", Adjustments.load(self.adjustments_file))
        stats = parse_stats(result.output)
        if result.returncode != 0:
            raise PgolabError(f"llvm-bolt failed (exit {result.returncode}); a stale-profile error means the "
                              "profile does not belong to this binary", log=runner.log_path,
                              hint=bolt_failure_hint(result.returncode, "run the build again: the BOLT training "
                                                     "is repeated when its input changes"))
        if stats.profiled == 0 or stats.reordered == 0:
            imported = self.imported()
            raise PgolabError(f"BOLT did not use the profile: {stats.describe()}", log=runner.log_path,
                              hint=f"the profile read from {imported['file']} does not fit: remove that file and "
                                   "run again" if imported else "the profile must come from this build's "
                                   f"instrumented binary; delete {self.dir} and build again")
        # llvm-bolt 16 left its output at mode 0777 here (under umask 022): the installed server keeps
        # the compile's mode instead.
        shutil.copymode(self.input, self.optimized)
        shutil.copy2(self.optimized, self.ctx.installed)
        self.ctx.reporter.message(f"BOLT: {stats.describe()}")
        # Which BOLT, with which options: releases differ (LLVM 19 orders functions by cdsort).
        return {"stats": stats.as_dict(), "version": self.tool.version(), "options": options, **adjustments.record()}

    def optimize_options(self) -> list[str]:
        """llvm-bolt's options for the layout, its paths relative to the BOLT folder where it runs: it
        writes its command line into the binary (.note.bolt_info), which must not name the pgolab
        home it was built in."""
        return self.tool.use_flags(self.profile_dir.relative_to(self.dir), Path("."))

    def _require_input(self) -> None:
        if not self.input.exists():
            raise PgolabError(f"{self.input} (the binary BOLT starts from) is missing",
                              hint=f"delete {self.ctx.state_file} and build again")

    def phases(self) -> list[Phase]:
        return [
            Phase("bolt-instrument", "BOLT: instrument the linked server",
                  {"options": self.tool.generate_flags(self.profile_dir, self.dir), "version": self.tool.version()},
                  self.instrument),
            Phase("bolt-train", f"BOLT: training run ({self.ctx.train.label})",
                  self.ctx.train.digest_input(), self.train),
            Phase("bolt-merge", "BOLT: merge the .fdata profile", None, self.merge),
            Phase("bolt-optimize", "BOLT: lay out the server with the profile",
                  lambda: {"options": self.optimize_options(),
                           # A refused seal repeats what made the profile: the training, or the import.
                           "profile": self.ctx.sealed_digest(self.profile_dir, self.tool, "bolt-instrument"
                                                             if self.imported() else "bolt-train")},
                  self.optimize),
        ]
