from pathlib import Path

import pytest

from pgolab import variants
from pgolab.errors import PgolabError
from pgolab.toolchains import Toolchain

GCC = Toolchain("gcc", "gcc", "g++", "gcc-ar", "gcc-ranlib", "gcc-nm", None)
CLANG = Toolchain("clang", "clang-16", "clang++-16", "llvm-ar-16", "llvm-ranlib-16", "llvm-nm-16",
                  "llvm-profdata-16")
CLANG19 = Toolchain("clang19", "clang-19", "clang++-19", "llvm-ar-19", "llvm-ranlib-19", "llvm-nm-19",
                    "llvm-profdata-19")
PROFILE = Path("/abs/profile")
BUILD = Path("/abs/build")


def test_published_list_is_the_20_builds_of_the_mysql_study():
    names = [v.name for v in variants.published()]
    assert len(names) == 20 == len(set(names))
    for expected in ("rel_o2nofp", "rel_o2nofp_clang", "rel", "rel_clang", "rel_o2nofp_lto", "rel_lto",
                     "rel_native", "rel_native_lto_clang", "rel_pgo_use", "rel_lto_pgo_use_clang",
                     "rel_o2nofp_native_lto_clang", "rel_lto_pgo_use", "rel_pgo_use_clang"):
        assert expected in names


@pytest.mark.parametrize("variant", variants.all_variants(), ids=lambda v: v.name)
def test_every_name_maps_to_axes_and_back(variant):
    assert variants.parse(variant.name) == variant


@pytest.mark.parametrize("bad", ["", "o2nofp", "rel_clang_lto", "rel_lto_lto", "rel_pgo_gen_pgo_use",
                                 "rel_O2", "release", "rel_bolt_clang", "rel_pgo_gen_bolt", "rel_bolt_bolt",
                                 "rel_clang_clang19", "rel_clang19_clang", "rel_clang18", "rel_clang19_lto",
                                 "rel_pgo_use_partial_clang19"])
def test_bad_names_are_refused_with_a_hint(bad):
    with pytest.raises(PgolabError) as err:
        variants.parse(bad)
    assert "pgolab variants" in (err.value.hint or "")


def test_misordered_name_suggests_the_right_one():
    with pytest.raises(PgolabError, match="did you mean rel_lto_clang"):
        variants.parse("rel_clang_lto")


def test_o2nofp_and_native_add_their_flags():
    f = variants.flags_for(variants.parse("rel_o2nofp_native"), GCC)
    assert f.compile == ["-O2", "-fno-omit-frame-pointer", "-march=native", "-mtune=native"]
    assert variants.flags_for(variants.parse("rel"), GCC).compile == []


def test_gcc_lto_uses_plugin_aware_archiver():
    f = variants.flags_for(variants.parse("rel_lto"), GCC)
    assert "-flto=auto" in f.compile
    assert f.tools == {"AR": "gcc-ar", "RANLIB": "gcc-ranlib", "NM": "gcc-nm"}


def test_clang_links_with_lld_and_llvm_tools_of_one_version():
    f = variants.flags_for(variants.parse("rel_lto_clang"), CLANG)
    assert "-flto=thin" in f.compile and "-fuse-ld=lld" in f.link
    assert f.tools["AR"] == "llvm-ar-16"


def test_gcc_pgo_flags_strip_the_build_dir_so_another_build_finds_the_gcda_files():
    gen = variants.flags_for(variants.parse("rel_pgo_gen"), GCC, profile_dir=PROFILE, build_dir=BUILD)
    assert "-fprofile-generate=/abs/profile" in gen.compile
    assert "-fprofile-update=prefer-atomic" in gen.compile
    assert "-fprofile-prefix-path=/abs/build" in gen.compile
    use = variants.flags_for(variants.parse("rel_pgo_use"), GCC, profile_dir=PROFILE, build_dir=Path("/other"))
    assert {"-fprofile-use=/abs/profile", "-fprofile-correction", "-Wno-missing-profile", "-Wno-error=coverage-mismatch",
            "-fprofile-prefix-path=/other"} <= set(use.compile)


def test_clang_pgo_use_reads_the_merged_profile():
    use = variants.flags_for(variants.parse("rel_lto_pgo_use_clang"), CLANG, profile_dir=PROFILE, build_dir=BUILD)
    assert "-fprofile-use=/abs/profile/default.profdata" in use.compile


def test_relative_profile_dir_is_refused():
    # The servers chdir() into their data directory: a relative path loses the profile.
    with pytest.raises(PgolabError, match="absolute"):
        variants.flags_for(variants.parse("rel_pgo_use_clang"), CLANG, profile_dir=Path("profile"))


def test_instrumented_twin_keeps_every_other_axis():
    v = variants.parse("rel_native_lto_pgo_use_clang")
    assert v.instrumented().name == "rel_native_lto_pgo_gen_clang"


@pytest.mark.parametrize("name", ["rel_o2nofp_bolt", "rel_lto_pgo_use_clang_bolt", "rel_pgo_use_bolt"])
def test_bolt_is_the_last_axis_and_round_trips(name):
    variant = variants.parse(name)
    assert variant.bolt and variant.name == name
    assert variant.profile_source().name == name[:-len("_bolt")]
    assert not variant.instrumented().bolt       # BOLT lays out the optimized build, not the instrumented one


def test_an_instrumented_build_cannot_be_bolted():
    with pytest.raises(PgolabError, match="did you mean rel_pgo_use_bolt"):
        variants.parse("rel_pgo_gen_bolt")


def test_bolt_keeps_relocations_and_gcc_keeps_functions_whole():
    gcc = variants.flags_for(variants.parse("rel_pgo_use_bolt"), GCC, profile_dir=PROFILE, build_dir=BUILD)
    assert "-Wl,--emit-relocs" in gcc.link and "-fno-reorder-blocks-and-partition" in gcc.compile
    # the rest of the build is the same as without BOLT
    plain = variants.flags_for(variants.parse("rel_pgo_use"), GCC, profile_dir=PROFILE, build_dir=BUILD)
    assert [f for f in gcc.compile if f != "-fno-reorder-blocks-and-partition"] == plain.compile
    clang = variants.flags_for(variants.parse("rel_lto_clang_bolt"), CLANG)
    assert "-Wl,--emit-relocs" in clang.link and "-fno-reorder-blocks-and-partition" not in clang.compile


def test_the_listed_variants_carry_no_bolt_so_the_published_20_stay_20():
    assert not any(v.bolt for v in variants.all_variants())


def test_partial_training_is_a_gcc_pgo_use_axis():
    v = variants.parse("rel_lto_pgo_use_partial")
    assert v.partial and v.pgo == "use" and v.lto
    f = variants.flags_for(v, GCC, profile_dir=PROFILE, build_dir=BUILD)
    assert f.compile[-1] == "-fprofile-partial-training" and f"-fprofile-use={PROFILE}" in f.compile
    # It shares the instrumented build of the variant without it.
    assert v.instrumented() == variants.parse("rel_lto_pgo_use").instrumented()
    assert variants.parse("rel_pgo_use_partial_bolt").bolt
    assert "-fprofile-partial-training" not in variants.flags_for(variants.parse("rel_pgo_use"), GCC,
                                                                  profile_dir=PROFILE, build_dir=BUILD).compile


@pytest.mark.parametrize("bad", ["rel_partial", "rel_pgo_gen_partial", "rel_pgo_use_partial_clang",
                                 "rel_partial_pgo_use"])
def test_partial_training_elsewhere_is_refused(bad):
    with pytest.raises(PgolabError) as err:
        variants.parse(bad)
    assert "pgolab variants" in (err.value.hint or "")


@pytest.mark.slow   # compiles with real gcc
def test_this_gcc_accepts_the_partial_training_flags(tmp_path):
    """The real compiler takes a `_partial` build's flags (gcc 10 added the switch)."""
    import subprocess
    from conftest import need
    need("gcc")
    (tmp_path / "f.c").write_text("int f(int x) { return x * 2; }\n")
    flags = variants.flags_for(variants.parse("rel_pgo_use_partial"), GCC, profile_dir=tmp_path / "profile",
                               build_dir=tmp_path)
    result = subprocess.run(["gcc", "-O2", *flags.compile, "-Werror", "-c", "f.c", "-o", "f.o"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_context_sensitive_pgo_is_a_clang_chain_of_two_instrumented_builds():
    v = variants.parse("rel_lto_pgo_use_cs_clang")
    assert v.cs and v.pgo == "use" and v.reads_profile and not v.writes_profile
    csgen = v.instrumented()
    assert csgen.name == "rel_lto_pgo_csgen_clang" and csgen.reads_profile and csgen.writes_profile
    # The first instrumented build is the one every clang PGO variant of these axes shares.
    assert csgen.instrumented() == variants.parse("rel_lto_pgo_use_clang").instrumented()
    flags = variants.flags_for(csgen, CLANG, profile_dir=PROFILE, build_dir=BUILD).compile
    assert f"-fprofile-use={PROFILE}/default.profdata" in flags
    assert f"-fcs-profile-generate={PROFILE.parent}/cs-profile" in flags
    final = variants.flags_for(v, CLANG, profile_dir=PROFILE, build_dir=BUILD).compile
    assert final == variants.flags_for(variants.parse("rel_lto_pgo_use_clang"), CLANG, profile_dir=PROFILE,
                                       build_dir=BUILD).compile
    assert variants.parse("rel_pgo_use_cs_clang_bolt").bolt
    assert "rel_lto_pgo_use_cs_clang" in [x.name for x in variants.all_variants()]
    assert not any(x.pgo == "csgen" for x in variants.all_variants())


@pytest.mark.parametrize("bad", ["rel_pgo_use_cs", "rel_cs_clang", "rel_pgo_gen_cs_clang", "rel_pgo_csgen",
                                 "rel_pgo_csgen_clang_bolt", "rel_pgo_use_clang_cs", "rel_pgo_csgen_cs_clang"])
def test_context_sensitive_pgo_elsewhere_is_refused(bad):
    with pytest.raises(PgolabError) as err:
        variants.parse(bad)
    assert "pgolab variants" in (err.value.hint or "")


def test_axis_pairs_are_the_builds_that_differ_in_one_axis_alone():
    labels = ["rel_o2nofp", "rel", "rel_lto", "rel_pgo_use", "rel_lto_pgo_use", "rel_lto_pgo_use_clang",
              "rel_lto_pgo_use_cs_clang", "rel_lto_pgo_use_clang_bolt", "rel_pgo_use_partial", "distro"]
    found = [(p.axis, p.without, p.with_) for p in variants.axis_pairs(labels)]
    assert found == [
        ("-O3", "rel_o2nofp", "rel"),
        ("LTO", "rel", "rel_lto"), ("LTO", "rel_pgo_use", "rel_lto_pgo_use"),
        ("clang", "rel_lto_pgo_use", "rel_lto_pgo_use_clang"),
        ("PGO", "rel", "rel_pgo_use"), ("PGO", "rel_lto", "rel_lto_pgo_use"),
        ("partial training", "rel_pgo_use", "rel_pgo_use_partial"),
        ("context-sensitive PGO", "rel_lto_pgo_use_clang", "rel_lto_pgo_use_cs_clang"),
        ("BOLT", "rel_lto_pgo_use_clang", "rel_lto_pgo_use_clang_bolt"),
    ]   # rel_o2nofp -> rel_lto differs in two axes; _cs and _partial have no gcc or no-PGO twin; distro none


def test_llvm_19_is_a_compiler_of_its_own_with_its_own_tools():
    v = variants.parse("rel_lto_pgo_use_cs_clang19_bolt")
    assert (v.compiler, v.lto, v.pgo, v.cs, v.bolt) == ("clang19", True, "use", True, True)
    assert v.instrumented().name == "rel_lto_pgo_csgen_clang19"
    use = variants.flags_for(variants.parse("rel_lto_pgo_use_clang19"), CLANG19, profile_dir=PROFILE,
                             build_dir=BUILD)
    assert use.tools == {"AR": "llvm-ar-19", "RANLIB": "llvm-ranlib-19", "NM": "llvm-nm-19"}
    assert "-flto=thin" in use.compile and "-fuse-ld=lld" in use.link
    from pgolab.toolchains import compiler_family
    family = compiler_family("clang19")
    assert family.placeholder().profdata == "llvm-profdata-19" and family.llvm_version == "19"
    assert family.version_tools == ("clang 19", "clang++ 19", "lld 19", "llvm-profdata 19")
    # LLVM 16's names stay as they were: the build records and digests of its builds do not change.
    assert compiler_family("clang").version_tools == ("clang", "clang++", "lld", "llvm-profdata")
    assert "rel_lto_pgo_use_clang19" in [x.name for x in variants.all_variants()]
    assert "rel_lto_pgo_use_clang19" not in [x.name for x in variants.published()]


def test_bolt_uses_the_release_of_the_build_s_llvm():
    from pgolab.profiles.bolt import BoltProfile
    b16 = BoltProfile("llvm-bolt-16", "merge-fdata-16")
    b19 = BoltProfile("llvm-bolt-19", "merge-fdata-19", llvm_version="19")
    assert "-reorder-functions=hfsort+" in b16.use_flags(PROFILE, BUILD)
    assert "-reorder-functions=cdsort" in b19.use_flags(PROFILE, BUILD)
    assert "--runtime-instrumentation-lib=llvm-19/lib/libbolt_rt_instr.a" in b19.generate_flags(PROFILE, BUILD)
    # One thread in every run: llvm-bolt 16 crashed in 2 of 10 threaded runs, none of 10 single (docs/results/bolt-crash)
    for tool in (b16, b19):
        assert "--no-threads" in tool.generate_flags(PROFILE, BUILD) and "--no-threads" in tool.use_flags(PROFILE, BUILD)


def test_llvm_19_pairs_with_its_llvm_16_twin():
    labels = ["rel_lto_pgo_use", "rel_lto_pgo_use_clang", "rel_lto_pgo_use_clang19"]
    assert [(p.axis, p.without, p.with_) for p in variants.axis_pairs(labels)] == [
        ("clang", "rel_lto_pgo_use", "rel_lto_pgo_use_clang"),
        ("LLVM 19", "rel_lto_pgo_use_clang", "rel_lto_pgo_use_clang19")]   # gcc -> LLVM 19 is two steps


def test_a_replicate_pairs_with_the_same_replicate_of_its_twin():
    labels = ["rel_lto_pgo_use_clang", "rel_lto_pgo_use_clang+r2", "rel_lto_pgo_use_clang_bolt",
              "rel_lto_pgo_use_clang_bolt+r2", "rel_lto_pgo_use_clang_bolt+r3", "rel_o2nofp+r2"]
    assert [(p.without, p.with_) for p in variants.axis_pairs(labels)] == [
        ("rel_lto_pgo_use_clang", "rel_lto_pgo_use_clang_bolt"),
        ("rel_lto_pgo_use_clang+r2", "rel_lto_pgo_use_clang_bolt+r2")]   # +r3's twin was not measured


def test_axis_pairs_of_a_version_series_stay_within_a_tree():
    labels = ["mariadb-10.11.18:rel_o2nofp", "mariadb-10.11.18:rel", "mariadb-11.8.6:rel"]
    assert [(p.without, p.with_) for p in variants.axis_pairs(labels)] == [
        ("mariadb-10.11.18:rel_o2nofp", "mariadb-10.11.18:rel")]


@pytest.mark.slow   # compiles, trains and merges with real clang
def test_a_context_sensitive_profile_completes_the_first_with_real_clang(tmp_path):
    """The whole `_cs` chain on a small program with clang's own tools: instrument, run, merge;
    compile with that profile and -fcs-profile-generate, run again, merge both (the merge reports
    context-sensitive records); the final compile reads the result without a mismatch warning."""
    import subprocess
    from conftest import need
    from pgolab.profiles import ClangProfile
    from pgolab.runner import Runner
    need("clang-16")
    need("llvm-profdata-16")
    (tmp_path / "p.c").write_text(
        "static int step(int x) { return x % 3 ? x * 2 : x + 1; }\n"
        "int main(void) { int s = 0; for (int i = 0; i < 100000; i++) s += step(i); return s == 7; }\n")
    tool = ClangProfile("llvm-profdata-16")
    runner = Runner(tmp_path / "merge.log")

    def compile_and_run(name: str, profile_dir: Path | None, variant: str, out_dir: Path | None) -> str:
        flags = variants.flags_for(variants.parse(variant), CLANG, profile_dir=profile_dir, build_dir=tmp_path)
        compiled = subprocess.run(["clang-16", "-O2", *flags.compile, "p.c", "-o", name], cwd=tmp_path,
                                  capture_output=True, text=True)
        assert compiled.returncode == 0, compiled.stderr
        if out_dir is not None:
            out_dir.mkdir()
            subprocess.run([f"./{name}"], cwd=tmp_path, env=tool.redirect_env(profile_dir, out_dir))
        return compiled.stderr

    first, second = tmp_path / "first", tmp_path / "second"
    compile_and_run("gen", first, "rel_pgo_gen_clang", first)
    assert tool.merge(first, runner)["functions"] >= 1
    compile_and_run("csgen", first, "rel_pgo_csgen_clang", second)
    merged = tool.merge(second, runner, first)
    assert merged["cs_functions"] >= 1 and merged["max_function_count"] > 0, merged
    warnings = compile_and_run("final", second, "rel_pgo_use_cs_clang", None)
    assert "mismatch" not in warnings and "no profile data" not in warnings
    # Counters of a build without the second instrumentation are refused as a context-sensitive merge.
    plain = tmp_path / "plain"
    compile_and_run("gen2", first, "rel_pgo_gen_clang", plain)
    with pytest.raises(PgolabError, match="no context-sensitive counts"):
        tool.merge(plain, runner, first)


def test_link_and_runtime_axes_name_their_flags_and_share_the_instrumented_build():
    v = variants.parse("rel_lto_pgo_use_clang_noplt_nosi_static_jemalloc_bolt")
    assert (v.noplt, v.nosi, v.static_rt, v.allocator, v.bolt) == (True, True, True, "jemalloc", True)
    f = variants.flags_for(v, CLANG, profile_dir=PROFILE, build_dir=BUILD)
    assert {"-fno-plt", "-fno-semantic-interposition"} <= set(f.compile)
    assert f.link[:4] == ["-fuse-ld=lld", "-static-libstdc++", "-static-libgcc",
                          "-Wl,--push-state,--no-as-needed,-ljemalloc,--pop-state"]
    # Compile flags are part of what the profile was trained on; link-only choices are not.
    assert v.instrumented().name == "rel_lto_pgo_gen_clang_noplt_nosi"
    assert variants.parse("rel_pgo_use_tcmalloc").instrumented() == variants.parse("rel_pgo_use").instrumented()
    # ... and so is their training: one profile serves the twins, which then differ in the link alone.
    assert v.profile_source().name == "rel_lto_pgo_use_clang_noplt_nosi"
    assert variants.parse("rel_pgo_use_static_tcmalloc").profile_twin() == variants.parse("rel_pgo_use")
    assert variants.parse("rel_o2nofp_jemalloc").profile_twin() is None
    assert variants.flags_for(variants.parse("rel_mimalloc"), GCC).link == [
        "-Wl,--push-state,--no-as-needed,-lmimalloc,--pop-state"]


@pytest.mark.parametrize("bad, why", [("rel_jemalloc_tcmalloc", "one allocator"), ("rel_jemalloc_noplt", "did you mean"),
                                      ("rel_bolt_static", "did you mean"), ("rel_glibc", "unknown variant")])
def test_link_axes_in_a_wrong_order_or_twice_are_refused(bad, why):
    with pytest.raises(PgolabError, match=why):
        variants.parse(bad)


def test_each_link_axis_pairs_with_its_twin():
    labels = ["rel_o2nofp", "rel_o2nofp_noplt", "rel_o2nofp_nosi", "rel_o2nofp_jemalloc", "rel_o2nofp_mimalloc",
              "rel_o2nofp_static"]
    assert {p.axis: p.with_ for p in variants.axis_pairs(labels)} == {
        "-fno-plt": "rel_o2nofp_noplt", "-fno-semantic-interposition": "rel_o2nofp_nosi",
        "static libstdc++ and libgcc": "rel_o2nofp_static", "jemalloc": "rel_o2nofp_jemalloc",
        "mimalloc": "rel_o2nofp_mimalloc"}


def test_the_function_bolt_asks_to_skip_is_read_from_its_error():
    from pgolab.profiles.bolt import function_to_skip
    out = ("BOLT-INFO: setting __hot_end to 0x1838ab4\nBOLT-ERROR: unable to get new address corresponding to input "
           "address 0x49bdc1 in function ExecInterpExpr.llvm.5797916522844605125/1(*2). Consider adding this "
           "function to --skip-funcs=...\n")
    assert function_to_skip(out) == "ExecInterpExpr.llvm.5797916522844605125/1"
    assert function_to_skip("BOLT-ERROR: something else\n") is None


def test_the_layout_axes_add_their_flags_and_share_what_they_can():
    full = variants.parse("rel_lto_pgo_use_order_split_hotcold_clang19_bolt_hugify")
    assert (full.order, full.split, full.hotcold, full.bolt, full.hugify) == (True,) * 5
    # _order records first calls in an instrumented build of its own; the others read any profile.
    assert full.instrumented().name == "rel_lto_pgo_gen_order_clang19"
    assert variants.parse("rel_lto_pgo_use_split_hotcold_clang").instrumented().name == "rel_lto_pgo_gen_clang"
    # The axes that only read a profile compile with their twin's: one training, twins differing in them alone.
    assert full.profile_source().name == "rel_lto_pgo_use_order_clang19"
    assert variants.parse("rel_lto_pgo_use_split_clang").profile_source().name == "rel_lto_pgo_use_clang"
    assert variants.parse("rel_lto_pgo_use_clang").profile_source() == variants.parse("rel_lto_pgo_use_clang")
    from pgolab.matrix import training_groups
    groups = training_groups([variants.parse(n) for n in ("rel_lto_pgo_use_clang", "rel_lto_pgo_use_split_clang",
                                                          "rel_lto_pgo_use_clang_bolt_hugify", "rel_o2nofp")])
    assert sorted(map(len, groups)) == [1, 3]
    gen = variants.flags_for(full.instrumented(), CLANG19, profile_dir=PROFILE, build_dir=BUILD)
    assert "-mllvm=-pgo-temporal-instrumentation" in gen.compile
    assert not any("symbol-ordering" in f for f in gen.link)
    use = variants.flags_for(full, CLANG19, profile_dir=PROFILE, build_dir=BUILD)
    assert f"-Wl,--symbol-ordering-file={PROFILE / variants.FUNCTION_ORDER}" in use.link
    assert "-mllvm=-pgo-temporal-instrumentation" not in use.compile and "-ffunction-sections" in use.compile
    assert "-fsplit-machine-functions" in use.compile and "-Wl,-z,keep-text-section-prefix" in use.link
    plain = variants.flags_for(variants.parse("rel_lto_pgo_use_clang19"), CLANG19, profile_dir=PROFILE, build_dir=BUILD)
    assert not {"-fsplit-machine-functions", "-mllvm=-pgo-temporal-instrumentation"} & set(plain.compile)
    assert not any("keep-text" in f or "ordering" in f for f in plain.link)
    # BOLT's hugify is an option of its optimize step.
    from pgolab.profiles.bolt import BoltProfile
    assert "-hugify" in BoltProfile("llvm-bolt-19", "merge-fdata-19", llvm_version="19", hugify=True).use_flags(PROFILE, BUILD)
    assert "-hugify" not in BoltProfile("llvm-bolt-19", "merge-fdata-19", llvm_version="19").use_flags(PROFILE, BUILD)


@pytest.mark.parametrize("bad, why", [
    ("rel_lto_pgo_use_order_clang", "LLVM 17"),          # clang 16 has no temporal profiling
    ("rel_lto_pgo_use_order", "LLVM 17"),
    ("rel_lto_pgo_use_split", "-freorder-blocks-and-partition"),
    ("rel_lto_pgo_use_hotcold", "GNU ld"),
    ("rel_lto_split_clang", "follows _pgo_use"),
    ("rel_lto_hotcold_clang19", "follows _pgo_use"),
    ("rel_lto_order_clang19", "follows _pgo_use"),
    ("rel_lto_pgo_use_cs_order_clang19", "_cs"),
    ("rel_lto_pgo_use_clang_hugify", "follows _bolt"),
    ("rel_lto_pgo_use_clang_bolt_hugify_bolt", "did you mean"),
    ("rel_lto_pgo_use_hotcold_split_clang", "did you mean rel_lto_pgo_use_split_hotcold_clang"),
])
def test_a_layout_axis_a_toolchain_lacks_or_without_its_profile_is_refused(bad, why):
    with pytest.raises(PgolabError) as err:
        variants.parse(bad)
    assert why in str(err.value), str(err.value)


def test_hugetext_links_pgolab_s_object_and_compiles_with_its_twin_s_profile():
    v = variants.parse("rel_lto_pgo_use_clang_jemalloc_hugetext_bolt")
    assert (v.hugetext, v.allocator, v.bolt, v.on_huge_pages) == (True, "jemalloc", True, True)
    f = variants.flags_for(v, CLANG, profile_dir=PROFILE, build_dir=BUILD)
    obj = str(BUILD.parent / variants.HUGETEXT_OBJECT)
    assert f"-Wl,{obj}" in f.link and f.objects == {obj: variants.HUGETEXT_SOURCE}
    assert f.as_dict()["objects"] == f.objects
    # Every other build's flags keep their configure digest: no objects key where there is none.
    assert "objects" not in variants.flags_for(variants.parse("rel_lto_pgo_use_clang"), CLANG,
                                               profile_dir=PROFILE, build_dir=BUILD).as_dict()
    # The same compiled code as its twin: the twin's profile and instrumented build.
    assert variants.parse("rel_pgo_use_hugetext").profile_source().name == "rel_pgo_use"
    assert variants.parse("rel_pgo_use_hugetext").instrumented().name == "rel_pgo_gen"
    assert not variants.parse("rel_lto_pgo_use_clang_bolt_hugify").hugetext
    pairs = variants.axis_pairs(["rel_o2nofp", "rel_o2nofp_hugetext"])
    assert [(p.axis, p.with_) for p in pairs] == [("code on 2 MiB pages (pgolab's copy at start-up)", "rel_o2nofp_hugetext")]
    with pytest.raises(PgolabError, match="absolute build directory"):
        variants.flags_for(variants.parse("rel_hugetext"), GCC)


@pytest.mark.parametrize("bad, why", [("rel_lto_pgo_use_clang_hugetext_bolt_hugify", "choose one"),
                                      ("rel_pgo_gen_hugetext", "not put on huge pages"),
                                      ("rel_hugetext_jemalloc", "did you mean rel_jemalloc_hugetext")])
def test_hugetext_with_hugify_on_an_instrumented_build_or_out_of_place_is_refused(bad, why):
    with pytest.raises(PgolabError) as err:
        variants.parse(bad)
    assert why in str(err.value), str(err.value)
