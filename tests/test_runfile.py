"""A run that travels (issue 30): exported, imported once or twice, continued on another machine when
its figures are the simulation's, refused there when they are the clock's. Fake measures and
fleets (pure logic): the real parts are the store, the scheduler, the report and the file."""

import gzip
import json
from dataclasses import replace

import pytest

from pgolab import bench, report, runfile
from pgolab.errors import PgolabError
from pgolab.host import Host
from pgolab.measurement import BenchOptions, Sample
from pgolab.measures.cost import CostMeasure
from pgolab.store import Store

from test_measures import SPEED, FakeFleet, FakeQps, fake_targets


class Killed(Exception):
    """Stands for the machine going away mid-run."""


class FakeCostExecutor:
    """Estimated cycles of 1e6 / SPEED[label] (deterministic, as callgrind's are); raises Killed at
    the `stop_after`-th step, as a lost machine would stop the run."""
    mode = "cost"
    concurrency = 1

    def __init__(self, stop_after=None):
        self.steps, self.stop_after = 0, stop_after

    def start_instance(self, micro, instance):
        pass

    def measure(self, micro, step):
        self.steps += 1
        if self.stop_after is not None and self.steps > self.stop_after:
            raise Killed()
        cycles = 1e6 / SPEED[step.label]
        return Sample(step, {"cycles": cycles, "instructions": cycles / 2, "i1_misses": 10.0, "d1_misses": 5.0,
                             "ll_misses": 1.0, "mispredicts": 3.0}, 0.0, detail={"method": "fake"})

    def stop_instance(self):
        pass

    def close(self):
        pass


class FakeCost(CostMeasure):
    def __init__(self, stop_after=None):
        self.stop_after = stop_after

    def executor(self, fleet, options, labels):
        return FakeCostExecutor(self.stop_after)

    def identity(self):
        return {"cost_method": {"fake": True}}


OPTIONS = BenchOptions(suite="quick", modes=("cost",), cost_write_repeats=2)


def run(store, tmp_path, measure, name="travel"):
    return bench.run_bench(store, name, "a", fake_targets(tmp_path), OPTIONS, "pgolab bench (test)",
                           measures=[measure], fleet_factory=FakeFleet)


def another_machine(monkeypatch):
    here = Host.this()
    monkeypatch.setattr(Host, "this", classmethod(lambda cls: replace(here, cpu_id=here.cpu_id + " (another)",
                                                                      hostname="elsewhere")))


def test_a_run_killed_on_one_machine_continues_on_another_from_its_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    first = Store(tmp_path / "first.sqlite")
    with pytest.raises(Killed):
        run(first, tmp_path, FakeCost(stop_after=7))
    assert first.run("travel").status == "failed" and first.sample_count(first.run("travel").id) == 7
    exported = tmp_path / "travel.run.gz"
    assert runfile.export_run(first, "travel", exported).samples == 7

    another_machine(monkeypatch)
    second = Store(tmp_path / "second.sqlite")
    got = runfile.import_run(second, exported)
    assert (got.samples_added, got.samples_in_file) == (7, 7)
    assert runfile.import_run(second, exported).samples_added == 0, "importing twice changes nothing"
    run_id = run(second, tmp_path, FakeCost())               # the same command, on the other machine
    done = second.sample_count(run_id)
    whole = run(Store(tmp_path / "whole.sqlite"), tmp_path, FakeCost(), name="whole")
    assert done == Store(tmp_path / "whole.sqlite").sample_count(whole) > 7
    steps = [s.step for s in second.samples(run_id)]
    assert len({(s.micro, s.instance, s.block, s.label) for s in steps}) == len(steps), "no step measured twice"
    row = next(r for r in report.compute(second, "travel").table("builds").rows if r["build"] == "b")
    assert row["cycles"].value == pytest.approx(1.25)


def test_a_wall_clock_run_does_not_continue_on_another_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    first = Store(tmp_path / "first.sqlite")
    bench.run_bench(first, "clock", "a", fake_targets(tmp_path), BenchOptions(suite="quick", instances=1, blocks=2),
                    "test", measures=[FakeQps()], fleet_factory=FakeFleet)
    runfile.export_run(first, "clock", tmp_path / "clock.gz")
    another_machine(monkeypatch)
    second = Store(tmp_path / "second.sqlite")
    runfile.import_run(second, tmp_path / "clock.gz")
    with pytest.raises(PgolabError, match="host.cpu_id"):
        bench.run_bench(second, "clock", "a", fake_targets(tmp_path), BenchOptions(suite="quick", instances=1, blocks=2),
                        "test", measures=[FakeQps()], fleet_factory=FakeFleet)


def test_an_exported_run_reports_as_the_stored_one(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    first = Store(tmp_path / "first.sqlite")
    bench.run_bench(first, "r", "a", fake_targets(tmp_path), BenchOptions(suite="quick", instances=2, blocks=2),
                    "test", measures=[FakeQps()], fleet_factory=FakeFleet)
    runfile.export_run(first, "r", tmp_path / "r.gz")
    second = Store(tmp_path / "second.sqlite")
    runfile.import_run(second, tmp_path / "r.gz")
    assert report.compute(second, "r") == report.compute(first, "r")


def test_a_damaged_or_conflicting_file_is_refused_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store = Store(tmp_path / "s.sqlite")
    run(store, tmp_path, FakeCost())
    path = tmp_path / "r.gz"
    runfile.export_run(store, "travel", path)
    document = json.loads(gzip.open(path, "rt").read())
    document["content"]["samples"] = document["content"]["samples"][:3]      # truncated by hand
    gzip.open(tmp_path / "cut.gz", "wt").write(json.dumps(document))
    other = Store(tmp_path / "other.sqlite")
    with pytest.raises(PgolabError, match="does not match its own digest"):
        runfile.import_run(other, tmp_path / "cut.gz")
    assert other.run("travel") is None, "nothing of a refused file is kept"
    document = json.loads(gzip.open(path, "rt").read())
    document["content"]["run"]["identity"] = json.dumps({"another": "experiment"})
    document["digest"] = runfile._content_digest(document["content"])
    gzip.open(tmp_path / "clash.gz", "wt").write(json.dumps(document))
    with pytest.raises(PgolabError, match="another identity"):
        runfile.import_run(store, tmp_path / "clash.gz")
    (tmp_path / "junk.gz").write_bytes(b"junk")
    with pytest.raises(PgolabError, match="not a pgolab run file"):
        runfile.import_run(store, tmp_path / "junk.gz")
    broken = bytearray(path.read_bytes())
    broken[10] = 0x07      # the first deflate block's type made invalid: zlib's own error, not gzip's
    with pytest.raises(PgolabError, match="not a pgolab run file: Error -3 while decompressing data: invalid block"):
        runfile.decoded(bytes(broken), "a worker's run file", hint="install the same pgolab")


def test_the_profiles_a_run_file_brings_are_a_folder_of_profiles(tmp_path, monkeypatch):
    """`pgolab import` of a file exported --with-profiles: each profile lands where `--profiles` finds it
    for the build that trained it (the matrix or search command run again on this machine)."""
    import base64

    from pgolab import profile_file
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    first = Store(tmp_path / "first.sqlite")
    run(first, tmp_path, FakeCost())
    content = runfile.decoded(runfile.exported(first, "travel")[0], "travel")
    trained = tmp_path / "trained"
    trained.mkdir()
    (trained / "default.profdata").write_bytes(b"counts")
    identity = profile_file.write(tmp_path / "p.tgz", [trained / "default.profdata"], made_by="b's training",
                                  server="postgresql", source_digest="ab" * 32, instrumented_variant="rel_pgo_gen_clang",
                                  compiler={"clang": "16"}, source_version="15.18", training="mix (150s)",
                                  training_digest="11" * 8, trained_build="b")
    content["profiles"] = {"b": base64.b64encode((tmp_path / "p.tgz").read_bytes()).decode()}
    got = runfile.import_content(Store(tmp_path / "second.sqlite"), content)
    (path,) = got.profiles
    expected = profile_file.expected_identity("postgresql", "ab" * 32, "rel_pgo_gen_clang", {"clang": "16"},
                                              training_digest="11" * 8, trained_build="b")
    assert profile_file.find(path.parent, expected).path == path
    assert profile_file.read_identity(path) == identity and path.name == profile_file.file_name(identity)
    assert got.bolt_profiles == [] and [p.name for p in path.parent.iterdir()] == [path.name]
    from dataclasses import replace
    assert "/" not in profile_file.file_name(replace(identity, trained_build="../../x")), "a name stays in its folder"
    # Another training of the same build, in a later file: beside the first, not over it.
    (trained / "default.profdata").write_bytes(b"other counts")
    profile_file.write(tmp_path / "q.tgz", [trained / "default.profdata"], made_by="b's training",
                       server="postgresql", source_digest="ab" * 32, instrumented_variant="rel_pgo_gen_clang",
                       compiler={"clang": "16"}, source_version="15.18", training="mix (150s)",
                       training_digest="22" * 8, trained_build="b")
    content["profiles"] = {"b": base64.b64encode((tmp_path / "q.tgz").read_bytes()).decode()}
    (second,) = runfile.import_content(Store(tmp_path / "second.sqlite"), content).profiles
    assert second != path and sorted(path.parent.iterdir()) == sorted([path, second])
    # A run name that is not a name (a path) is refused before anything is written.
    content["run"]["name"] = "../elsewhere"
    third = Store(tmp_path / "third.sqlite")
    with pytest.raises(PgolabError, match="names its run '../elsewhere', which is not a name"):
        runfile.import_content(third, content)
    assert not (tmp_path / "home" / "elsewhere").exists() and third.runs() == []


def test_a_run_file_says_which_profiles_it_lacks_and_carries_a_profile_a_target_was_compiled_from(tmp_path):
    """runfile._carry (pure logic on build records and files): a target compiled from a file carries that
    file (its identity names the training a folder of profiles is searched by); a _bolt replicate
    carries its twin replicate's profile, written as the twin's own export would be and named after the
    twin in the target's tree, but only while the twin's folder holds what was sealed; a file gone, a
    retrained twin and a BOLT profile not here are named, with what to do."""
    import base64

    from pgolab import profile_file
    from pgolab.profiles import GccProfile, raw_digest
    from pgolab.record import BuildRecord, SourceInfo

    def record(variant, label, **fields):
        build = tmp_path / "builds" / label
        return BuildRecord(label=label, variant=variant, description="", server="postgresql",
                           source=SourceInfo("/s", "15.18", "12" * 32, "ab" * 32), toolchain={"gcc": "12.2.0"},
                           flags={}, server_binary=f"{build}/final/install/bin/postgres",
                           install_dir=f"{build}/final/install", logs=f"{build}/logs", training="mix (10s)",
                           **({"training_digest": "11" * 8} | fields))

    given = tmp_path / "given.profile.tar.gz"
    (tmp_path / "p.gcda").write_bytes(b"counts")
    profile_file.write(given, [tmp_path / "p.gcda"], made_by="m", server="postgresql", source_digest="ab" * 32,
                       instrumented_variant="rel_pgo_gen", compiler={"gcc": "12.2.0"}, training="mix (10s)",
                       training_digest="11" * 8, trained_build="rel_pgo_use", source_version="15.18")
    carried = runfile.Carried()
    imported = {"profile-import": {"file": str(given)}}
    runfile._carry(record("rel_pgo_use_bolt", "rel_pgo_use_bolt", profile=imported), carried, "pg:b")
    assert carried.files == {"pg:rel_pgo_use": base64_of(given)} and carried.left_out == []
    # The same training read by another target: one file. Another training of the same build, read by
    # a third target: the first stays, the third is named.
    runfile._carry(record("rel_pgo_use", "rel_pgo_use", profile=imported), carried, "pg:rel_pgo_use")
    other = tmp_path / "other.profile.tar.gz"
    (tmp_path / "p.gcda").write_bytes(b"other counts")
    profile_file.write(other, [tmp_path / "p.gcda"], made_by="m", server="postgresql", source_digest="ab" * 32,
                       instrumented_variant="rel_pgo_gen", compiler={"gcc": "12.2.0"}, training="mix (10s)",
                       training_digest="22" * 8, trained_build="rel_pgo_use", source_version="15.18")
    runfile._carry(record("rel_pgo_use_bolt", "c", profile={"profile-import": {"file": str(other)}}), carried, "pg:c")
    assert carried.files == {"pg:rel_pgo_use": base64_of(given)} and carried.left_out == [
        "pg:c: the profile pg:rel_pgo_use it compiled with is another training than the one of that name already in "
        "the file: give its build there its own file (pgolab build ... --profile FILE)"]
    # A file written over since the build read it, a file gone, a file of a training no --profiles folder
    # gives this build (another build's): each named, with what to do.
    recorded = {"profile-import": {"file": str(other), "file_digest": "0" * 64}}
    runfile._carry(record("rel_pgo_use", "d", profile=recorded), carried := runfile.Carried(), "d")
    assert carried.files == {} and carried.left_out == [
        f"d: compiled from {other}, which holds another profile since: give its build there the file it was "
        "compiled from (pgolab build ... --profile FILE)"]
    runfile._carry(record("rel_pgo_use", "mine", profile=imported), carried := runfile.Carried(), "mine")
    assert list(carried.files) == ["rel_pgo_use"] and carried.left_out == [
        "mine: compiled from given.profile.tar.gz, a profile of rel_pgo_use's training, which a --profiles folder "
        "does not give this build: give it to its build there with pgolab build ... --profile FILE"]
    given.unlink()
    runfile._carry(record("rel_pgo_use", "x", profile=imported), carried := runfile.Carried(), "x")
    assert carried.left_out == [f"x: compiled from {given}, which is no longer there: give its build there the file "
                                "it was compiled from (pgolab build ... --profile FILE)"] and carried.files == {}
    # A replicate's twin is the same replicate of the twin variant, in the folder beside it; a labelled
    # build's twin is named after the label.
    twin_profile = tmp_path / "builds" / "rel_pgo_use+r2" / "profile"
    twin_profile.mkdir(parents=True)
    (twin_profile / "src#main.gcda").write_bytes(b"counts")
    sealed = {"merge": {"sealed": raw_digest(twin_profile, GccProfile())}}
    bolted = record("rel_pgo_use_bolt", "rel_pgo_use_bolt+r2", profile=sealed, bolt={"bolt-merge": {"sealed": "s"}})
    assert profile_file.profile_owners(bolted) == ["rel_pgo_use+r2", "rel_pgo_use_bolt-rel_pgo_use+r2"]
    assert profile_file.profile_owners(record("rel_pgo_use_bolt", "mine+r2")) == ["mine-rel_pgo_use+r2"]
    runfile._carry(bolted, carried := runfile.Carried(), f"pg:{bolted.label}")
    assert carried.left_out == [f"pg:{bolted.label}: its BOLT profile, not on this machine "
                                f"({tmp_path}/builds/{bolted.label}/final/bolt is missing): export the run on the machine "
                                "that built it, or BOLT trains again there, into another binary"]
    (out,) = [base64.b64decode(carried.files["pg:rel_pgo_use+r2"])]
    (tmp_path / "carried.tgz").write_bytes(out)
    identity = profile_file.read_identity(tmp_path / "carried.tgz")
    assert (identity.trained_build, identity.instrumented_variant, identity.training_digest) == \
        ("rel_pgo_use+r2", "rel_pgo_gen", "11" * 8)
    assert identity.made_by.startswith("rel_pgo_use+r2's training, read by rel_pgo_use_bolt+r2 on ")
    # The twin a target too: its own export of that training differs in bytes (who made it), not in profile.
    runfile._carry(record("rel_pgo_use", "rel_pgo_use+r2", profile=sealed), carried, "pg:rel_pgo_use+r2")
    assert list(carried.files) == ["pg:rel_pgo_use+r2"] and len(carried.left_out) == 1, carried.left_out
    # Trained again since: the folder no longer holds what the build compiled with.
    (twin_profile / "src#main.gcda").write_bytes(b"another training")
    runfile._carry(bolted, carried := runfile.Carried(), bolted.label)
    assert carried.files == {} and carried.left_out[0].startswith(
        "rel_pgo_use_bolt+r2: the profile it compiled with is no longer in ") and \
        carried.left_out[0].endswith("(trained again since): no file makes that binary again: build it anew (pgolab "
                                     "build SOURCE --variant rel_pgo_use_bolt, or the matrix's command) and export that")
    runfile._carry(record("rel_pgo_use", "old", training_digest=None), carried := runfile.Carried(), "old")
    assert carried.left_out == ["old: old records no training of its own (compiled from a profile file, or built "
                                "before pgolab recorded its training's digest): give the file it was compiled from, "
                                "or build it again: pgolab build SOURCE --variant rel_pgo_use"]
    # A damaged BOLT record leaves out that profile alone, named: the compile profile still travels.
    from pgolab.profiles.bolt import BoltProfile
    bolt_dir = tmp_path / "builds" / "rel_pgo_use_bolt+r2" / "final" / "bolt" / "profile"
    bolt_dir.mkdir(parents=True)
    (bolt_dir / "merged.fdata").write_text("counts")
    (twin_profile / "src#main.gcda").write_bytes(b"counts")
    merged = {"sealed": raw_digest(bolt_dir, BoltProfile("llvm-bolt", "merge-fdata")), "profile_identity": {"format": 99}}
    runfile._carry(record("rel_pgo_use_bolt", "rel_pgo_use_bolt+r2", profile=sealed, bolt={"bolt-merge": merged}),
                   carried := runfile.Carried(), "b")
    assert list(carried.files) == ["rel_pgo_use+r2"] and carried.left_out == [
        f"b: {bolt_dir.parent.parent.parent}'s BOLT merge record is a profile file of format 99; this pgolab reads up "
        f"to {profile_file.FORMAT}: upgrade pgolab, or export the profile again with this one"]


def base64_of(path):
    import base64
    return base64.b64encode(path.read_bytes()).decode()


def test_export_and_import_on_the_command_line_say_what_the_file_holds_and_lacks(tmp_path, monkeypatch):
    """`pgolab export --with-profiles` and `pgolab import` through the CLI: the samples, the profiles
    (none for a run of binaries given by path) and, on import, the same run added once."""
    from typer.testing import CliRunner

    from pgolab.cli import app
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    run(Store(tmp_path / "first.sqlite"), tmp_path, FakeCost())
    out = tmp_path / "travel.run.gz"
    exported = CliRunner().invoke(app, ["export", "travel", "--store", str(tmp_path / "first.sqlite"), "-o", str(out),
                                        "--with-profiles"], env={"COLUMNS": "250"})
    assert exported.exit_code == 0, exported.output
    said = exported.output.replace("\n", "")     # (rich wraps a long path where it likes)
    assert f"{out}: run travel, 20 samples" in said and "profiles: none" in said
    for added in ("20 of 20", "0 of 20"):
        imported = CliRunner().invoke(app, ["import", str(out), "--store", str(tmp_path / "second.sqlite")],
                                      env={"COLUMNS": "250"})
        said = imported.output.replace("\n", "")
        assert imported.exit_code == 0 and f"run travel: {added} samples added" in said, imported.output
    missing = CliRunner().invoke(app, ["export", "nothing", "--store", str(tmp_path / "first.sqlite"), "-o", str(out)])
    assert missing.exit_code != 0 and "no stored run 'nothing'" in str(missing.exception)
