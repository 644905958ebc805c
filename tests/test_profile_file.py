"""A PGO profile as a file (issue 30): exported with its identity, refused by a build it was not
made for (naming the field), unpacked byte for byte (pure logic on a real gcc profile tool)."""

import tarfile
from pathlib import Path

import pytest

from pgolab import profile_file
from pgolab.errors import PgolabError
from pgolab.profiles import GccProfile
from pgolab.record import BuildRecord, SourceInfo

COMPILER = {"gcc": "12.2.0", "g++": "12.2.0"}


def trained_build(tmp_path: Path) -> BuildRecord:
    build = tmp_path / "builds" / "postgresql-15.18-0123456789" / "rel_pgo_use"
    profile = build / "profile"
    profile.mkdir(parents=True)
    for name, data in (("src#backend#main#main.gcda", b"\x01\x02"), ("src#backend#tcop#postgres.gcda", b"\x03" * 100)):
        (profile / name).write_bytes(data)
    (profile / "ignored.txt").write_text("not part of the profile")
    return BuildRecord(label="rel_pgo_use", variant="rel_pgo_use", description="gcc PGO", server="postgresql",
                       source=SourceInfo("/s", "15.18", "12" * 32, "ab" * 32), toolchain=COMPILER, flags={},
                       server_binary=f"{build}/final/install/bin/postgres", install_dir=f"{build}/final/install",
                       logs=f"{build}/logs", training="mix (150s)", binary_digest="cd" * 32)


def expected(**changes) -> profile_file.ProfileIdentity:
    fields = {"server": "postgresql", "source_digest": "ab" * 32, "instrumented_variant": "rel_pgo_gen",
              "compiler": COMPILER} | changes
    return profile_file.expected_identity(**fields)


def test_an_exported_profile_unpacks_into_another_build_as_it_was(tmp_path):
    record = trained_build(tmp_path)
    out = tmp_path / "exported" / "pg.profile.tgz"
    identity = profile_file.export(record, "rel_pgo_gen", GccProfile(), record.dir / "profile", out)
    assert identity.files == 2 and identity.bytes == 102 and identity.training == "mix (150s)"
    assert sorted(tarfile.open(out).getnames()) == ["pgolab-profile.json", "profile/src#backend#main#main.gcda",
                                                    "profile/src#backend#tcop#postgres.gcda"]
    target = tmp_path / "elsewhere" / "profile"
    target.mkdir(parents=True)
    (target / "stale.gcda").write_bytes(b"an earlier profile")
    got = profile_file.unpack(out, expected(), GccProfile(), target)
    assert got == identity
    assert sorted(p.name for p in target.iterdir()) == ["src#backend#main#main.gcda", "src#backend#tcop#postgres.gcda"]
    assert GccProfile().digest(target) == GccProfile().digest(record.dir / "profile")


@pytest.mark.parametrize("field, value", [("source_digest", "ef" * 32), ("instrumented_variant", "rel_lto_pgo_gen"),
                                          ("compiler", {"gcc": "13.1.0", "g++": "13.1.0"}), ("server", "mariadb")])
def test_a_profile_made_for_another_build_is_refused_naming_the_field(tmp_path, field, value):
    record = trained_build(tmp_path)
    out = tmp_path / "p.tgz"
    profile_file.export(record, "rel_pgo_gen", GccProfile(), record.dir / "profile", out)
    with pytest.raises(PgolabError, match=f"{field} \\(profile: .*, build: .*\\) differ"):
        profile_file.unpack(out, expected(**{field: value}), GccProfile(), tmp_path / "target")


def test_a_folder_of_profiles_gives_each_build_the_file_its_own_training_made(tmp_path):
    """matrix --profiles: a file is chosen only for the build that trained it (a sibling that shares its
    instrumented build and training spec, such as rel_pgo_use_partial, trains its own), by the very
    same training (a replicate's other seed is another training under the same label); an unreadable
    file is passed over and named; of two for one training, the one the build read before."""
    record = trained_build(tmp_path)
    record.training_digest = "11" * 8
    folder = tmp_path / "profiles"
    out = folder / "exporting"
    identity = profile_file.export(record, "rel_pgo_gen", GccProfile(), record.dir / "profile", out)
    assert identity.trained_build == "rel_pgo_use" and identity.training_digest == "11" * 8
    kept = out.replace(folder / profile_file.file_name(identity))
    assert kept.name.startswith("postgresql-15.18-rel_pgo_use-") and kept.name.endswith(profile_file.SUFFIX)
    mine = expected(training_digest="11" * 8, trained_build="rel_pgo_use")
    assert profile_file.find(folder, mine).path == kept
    for other in (expected(training_digest="22" * 8, trained_build="rel_pgo_use"),        # another seed or length
                  expected(training_digest="", trained_build="rel_pgo_use"),              # a training it cannot tell
                  expected(training_digest="11" * 8, trained_build="rel_pgo_use_partial"),   # a sibling's own
                  expected(training_digest="11" * 8, trained_build="rel_pgo_use",
                           instrumented_variant="rel_lto_pgo_gen")):
        assert profile_file.find(folder, other).path is None, other
    assert profile_file.find(tmp_path / "none", mine).path is None
    (folder / f"junk{profile_file.SUFFIX}").write_bytes(b"cut short")
    found = profile_file.find(folder, mine)
    assert found.path == kept and len(found.unreadable) == 1 and found.unreadable[0].startswith("junk")
    # Another file for the same training (another machine's): the first by name, unless the build read the other.
    (record.dir / "profile" / "src#backend#main#main.gcda").write_bytes(b"\x09")
    second = profile_file.export(record, "rel_pgo_gen", GccProfile(), record.dir / "profile", folder / "x")
    second_path = (folder / "x").replace(folder / profile_file.file_name(second))
    first, other = sorted([kept, second_path])
    assert profile_file.find(folder, mine).path == first and profile_file.find(folder, mine).others == 1
    assert profile_file.find(folder, mine, prefer=other).path == other
    # Cut short after its identity: chosen by its identity, refused in one line when unpacked.
    import os
    (record.dir / "profile" / "src#backend#main#main.gcda").write_bytes(os.urandom(256 * 1024))
    whole = profile_file.export(record, "rel_pgo_gen", GccProfile(), record.dir / "profile", tmp_path / "whole.tgz")
    cut = tmp_path / f"cut{profile_file.SUFFIX}"
    cut.write_bytes((tmp_path / "whole.tgz").read_bytes()[:200 * 1024])
    assert profile_file.read_identity(cut) == whole
    with pytest.raises(PgolabError, match="damaged"):
        profile_file.unpack(cut, mine, GccProfile(), tmp_path / "target")
    record.training_digest = None      # a build that read an imported profile says no training of its own
    untold = profile_file.export(record, "rel_pgo_gen", GccProfile(), record.dir / "profile", tmp_path / "u.tgz")
    assert untold.training_digest == ""


def test_a_file_that_is_no_profile_or_from_a_newer_pgolab_says_what_to_do(tmp_path):
    junk = tmp_path / "junk.tgz"
    junk.write_bytes(b"not a tarball")
    with pytest.raises(PgolabError, match="not a pgolab profile file"):
        profile_file.read_identity(junk)
    with pytest.raises(PgolabError, match="upgrade pgolab"):
        profile_file.ProfileIdentity.from_dict({"format": profile_file.FORMAT + 1}, "x")


def test_a_build_without_a_profile_has_nothing_to_export(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path))
    record = trained_build(tmp_path)
    record.variant = record.label = "rel_o2nofp"
    record.save()
    with pytest.raises(PgolabError, match="not a PGO build"):
        profile_file.export_build("rel_o2nofp", None, tmp_path / "p.tgz")


def test_one_source_unpacked_twice_is_one_tree_whatever_its_times(tmp_path, monkeypatch):
    """dpkg-source patches files as it unpacks, so two machines' trees differ in modification times:
    a profile's source is named by content."""
    import os
    import shutil

    from pgolab.sources import content_digest, tree_digest
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    one = tmp_path / "one" / "postgresql-15"
    (one / "src").mkdir(parents=True)
    (one / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    (one / "configure").write_text("#!/bin/sh\n")
    other = tmp_path / "other" / "postgresql-15"
    shutil.copytree(one, other)
    os.utime(other / "src" / "main.c", (1_000_000_000, 1_000_000_000))
    assert tree_digest(one) != tree_digest(other)
    assert content_digest(one) == content_digest(other)
    (other / "configure").write_text("#!/bin/sh\nexit 1\n")
    assert content_digest(one) != content_digest(other)


@pytest.mark.parametrize("variant, hint", [("rel_o2nofp", "rel_pgo_use"), ("rel_pgo_gen", "rel_pgo_use"),
                                           ("rel_lto_pgo_use_clang_bolt", "rel_lto_pgo_use_clang")])
def test_profile_make_refuses_a_variant_that_trains_no_profile_of_its_own(tmp_path, variant, hint):
    from pgolab.build import BuildRequest, train_profile
    from pgolab.sources import SourceTree
    from pgolab.variants import parse
    from pgolab.workloads import parse_train
    request = BuildRequest(SourceTree(tmp_path, "postgresql", "15.18"), parse(variant), parse_train("mix", 10))
    with pytest.raises(PgolabError) as err:
        train_profile(request, tmp_path / "p.tgz")
    assert hint in err.value.hint and not (tmp_path / "p.tgz").exists()


def test_bolt_s_profile_is_kept_once_and_read_only_for_the_very_input_it_counted(tmp_path):
    """A _bolt build's BOLT profile in a folder of profiles (stages/bolt): found by the digest of the
    linked binary BOLT instrumented, kept once, never taken for a compiler's profile."""
    from pgolab.profiles.bolt import MERGED_FDATA, BoltProfile
    tool = BoltProfile("llvm-bolt", "merge-fdata")
    profile = tmp_path / "bolt" / "profile"
    profile.mkdir(parents=True)
    assert tool.read_files(profile) == []
    (profile / "prof.123.fdata").write_text("raw, not shipped\n")
    (profile / MERGED_FDATA).write_text("1 main 10 1 main 20 0 7\n")
    template = expected(instrumented_variant="rel_pgo_use_bolt", compiler={"llvm-bolt": "16.0.6", "instrument": "-instrument --no-threads"},
                        training="mix (150s)", training_digest="11" * 8, trained_build="rel_pgo_use_bolt")
    mine = profile_file.ProfileIdentity(**(template.as_dict() | {"bolt_input": "aa" * 32, "source_version": "15.18"}))
    folder = tmp_path / "profiles"
    files = tool.read_files(profile)

    def write_to(out):
        return profile_file.write_as(out, files, mine, "rel_pgo_use_bolt's BOLT training",
                                     bolt_adjustments={"skipped_functions": ["f"], "added_options": []})
    said = profile_file.keep(folder, mine, files, write_to)
    (kept,) = folder.iterdir()
    assert said == f"profile: {kept}" and kept.name.startswith("postgresql-15.18-rel_pgo_use_bolt-")
    assert profile_file.keep(folder, mine, files, write_to) == f"profile: {kept} (kept before)"
    identity = profile_file.find(folder, mine).identity
    assert identity.bolt_input == "aa" * 32 and identity.bolt_adjustments["skipped_functions"] == ["f"]
    assert profile_file.find(folder, profile_file.ProfileIdentity(**(mine.as_dict() | {"bolt_input": "bb" * 32}))).path is None
    # Another machine's training of the same input reached the folder first: that one stays.
    (profile / MERGED_FDATA).write_text("1 main 10 1 main 20 0 8\n")
    assert "not kept" in profile_file.keep(folder, mine, tool.read_files(profile), write_to)
    target = tmp_path / "elsewhere"
    assert profile_file.unpack(kept, mine, tool, target) == identity
    assert [p.name for p in target.iterdir()] == [MERGED_FDATA]
    # Not a compiler's profile: a PGO build finds none in the folder, and one given the file is told what it is.
    assert profile_file.find(folder, expected(training_digest="11" * 8, trained_build="rel_pgo_use_bolt")).path is None
    with pytest.raises(PgolabError, match="BOLT's profile of rel_pgo_use_bolt, not a compiler's"):
        profile_file.unpack(kept, expected(), GccProfile(), tmp_path / "gcc")


def test_a_bolt_profile_read_for_one_training_is_not_taken_for_another(tmp_path):
    """stages/bolt: the instrument phase's import holds for the input and training it was read for; a
    build without PGO whose training changes re-runs its BOLT training alone, and must not lay out with
    the profile read for the old one."""
    import json
    from dataclasses import replace
    from types import SimpleNamespace

    from pgolab.stages.bolt import BoltSteps
    bolt = tmp_path / "final" / "bolt"
    bolt.mkdir(parents=True)
    (bolt / "input").write_bytes(b"\x7fELF the linked server")
    from pgolab.sources import file_digest
    mine = expected(training_digest="11" * 8, trained_build="rel_o2nofp_bolt")
    steps = BoltSteps(SimpleNamespace(dir=bolt, tool=None, profiles=tmp_path / "profiles", expected=mine))
    assert steps.imported() is None
    (bolt / "imported.json").write_text(json.dumps({"file": "f", "input": file_digest(bolt / "input"),
                                                    "training_digest": "11" * 8, "profile_digest": "p", "made_by": "m"}))
    assert steps.imported()["file"] == "f"
    steps.ctx.expected = replace(mine, training_digest="22" * 8)
    assert steps.imported() is None
    steps.ctx.expected = mine
    (bolt / "input").write_bytes(b"\x7fELF another compile")
    assert steps.imported() is None


def test_a_finished_bolt_build_s_profile_is_written_from_what_its_merge_recorded(tmp_path):
    """stages/bolt.bolt_profile_of (what `pgolab export --with-profiles` carries of a _bolt target): the
    profile file has the identity the merge recorded, so another machine's BOLT stage finds it; none
    where the merge recorded no identity, or where counters were written after the merge."""
    import json

    from pgolab.profiles import seal
    from pgolab.profiles.bolt import MERGED_FDATA, BoltProfile
    from pgolab.stages.bolt import bolt_profile_of
    build = tmp_path / "rel_pgo_use_bolt"
    profile = build / "final" / "bolt" / "profile"
    profile.mkdir(parents=True)
    (profile / MERGED_FDATA).write_text("1 main 10 1 main 20 0 7\n")
    (build / "final" / "bolt" / "adjustments.json").write_text(json.dumps({"skipped_functions": ["g"],
                                                                           "added_options": []}))
    template = expected(instrumented_variant="rel_pgo_use_bolt", compiler={"llvm-bolt": "16.0.6", "instrument": "-instrument"},
                        training="mix (150s)", training_digest="11" * 8, trained_build="rel_pgo_use_bolt")
    mine = profile_file.ProfileIdentity(**(template.as_dict() | {"bolt_input": "aa" * 32, "source_version": "15.18"}))
    tool = BoltProfile("llvm-bolt", "merge-fdata")
    merged = {"profile_identity": mine.as_dict(), "sealed": seal(profile, tool)}
    out = tmp_path / "profiles" / "x.profile.tar.gz"
    written = bolt_profile_of(build, merged, out)
    assert written == profile_file.find(out.parent, mine).identity
    assert written.made_by.startswith("rel_pgo_use_bolt's BOLT training on ")
    assert written.bolt_adjustments == {"skipped_functions": ["g"], "added_options": []}
    assert written.profile_digest == profile_file.files_digest([profile / MERGED_FDATA])
    assert bolt_profile_of(build, {"sealed": merged["sealed"]}, tmp_path / "none.tgz") is None
    # Read from another machine's file: that file, as long as it is there.
    imported = {**merged, "imported": str(out), "made_by": written.made_by}
    assert bolt_profile_of(build, imported, tmp_path / "again.tgz") == written
    out.unlink()
    assert bolt_profile_of(build, imported, tmp_path / "again.tgz").made_by.startswith(
        f"{written.made_by}, passed on by a machine on ")
    # What the instrumentation asked for, cut short (a kill mid-write, before writes were atomic): said.
    (build / "final" / "bolt" / "adjustments.json").write_text('{"skipped_functions": ["g"')
    with pytest.raises(PgolabError, match="adjustments.json is not what pgolab wrote") as cut:
        bolt_profile_of(build, merged, tmp_path / "cut.tgz")
    assert cut.value.hint.startswith(f"remove the build's folder {build} and build it again")
    (profile / "prof.77.fdata").write_text("counts written after the merge\n")
    assert bolt_profile_of(build, merged, tmp_path / "stale.tgz") is None
    assert not (tmp_path / "none.tgz").exists() and not (tmp_path / "stale.tgz").exists()


def test_a_build_s_profile_is_exported_only_while_its_folder_holds_what_its_merge_sealed(tmp_path):
    """export_compiled_with (`pgolab profile export`, run files): the folder as the merge sealed it, with
    the training's digest; refused, saying why, once trained again since or with no training recorded."""
    from dataclasses import replace

    from pgolab.profiles import raw_digest
    record = trained_build(tmp_path)
    sealed = replace(record, training_digest="11" * 8,
                     profile={"merge": {"sealed": raw_digest(record.dir / "profile", GccProfile())}})
    identity = profile_file.export_compiled_with(sealed, tmp_path / "p.tgz")
    assert (identity.trained_build, identity.training_digest, identity.files) == ("rel_pgo_use", "11" * 8, 2)
    with pytest.raises(PgolabError, match="records no training of its own"):
        profile_file.export_compiled_with(record, tmp_path / "q.tgz")
    (record.dir / "profile" / "src#backend#main#main.gcda").write_bytes(b"another training")
    with pytest.raises(PgolabError, match=r"the profile it compiled with is no longer in .*\(trained again since\)"):
        profile_file.export_compiled_with(sealed, tmp_path / "q.tgz")
    assert not (tmp_path / "q.tgz").exists()
