"""Build replicates (issue 32): labels and seeds, the code layout each compiler family moves with
real compilers and linkers on a small program, the combination over builds (a simulation that a
deliberately broken combination fails, both too narrow and too wide), and the report's table from a
synthetic store."""

import math
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pgolab import replicates, report, stats
from pgolab.build import BuildRequest
from pgolab.errors import PgolabError
from pgolab.host import Host
from pgolab.measurement import BenchOptions, Sample, Step
from pgolab.record import BinaryInfo
from pgolab.sources import SourceTree
from pgolab.store import Store
from pgolab.toolchains import compiler_family
from pgolab.variants import parse
from pgolab.workloads import TrainingSpec


def test_replicate_labels_and_seeds():
    assert replicates.labels("rel_pgo_use", 3) == ["rel_pgo_use", "rel_pgo_use+r2", "rel_pgo_use+r3"]
    assert replicates.split("rel_pgo_use+debian+r2") == ("rel_pgo_use+debian", 2)
    assert replicates.split("rel_pgo_use") == ("rel_pgo_use", 1)
    assert replicates.split("mariadb-10.11.18:rel_lto+r3") == ("mariadb-10.11.18:rel_lto", 3)
    with pytest.raises(PgolabError, match="--replicates 0"):
        replicates.check_count(0)
    tree = SourceTree(Path("/nonexistent/postgresql-15.18"), "postgresql", "15.18")
    one = BuildRequest(tree, parse("rel_pgo_use_clang"), TrainingSpec(seed=5))
    second = one.replicate_of(2)
    assert (one.name, second.name) == ("rel_pgo_use_clang", "rel_pgo_use_clang+r2")
    assert (one.train.seed, second.train.seed, one.replicate_of(1).train.seed) == (5, 6, 5)
    assert replace(one, label="mine").replicate_of(3).name == "mine+r3"
    with pytest.raises(PgolabError, match="reads as replicate 2 of 'mine'"):
        replicates.check_label("mine+r2")
    assert replicates.check_label("mine+rx") == "mine+rx"


def _link(tmp_path: Path, compiler: str, family_name: str, seed: int | None, objects: list[Path],
          extra: tuple[str, ...] = ()) -> Path:
    """Links as a build of that replicate does: the family's flags and environment, then its check."""
    family = compiler_family(family_name)
    out = tmp_path / f"{family_name}-{seed}"
    flags, env = [], dict(os.environ)
    if seed is not None:
        folder = tmp_path / f"layout-{family_name}-{seed}"
        family.prepare_layout_seed(seed, folder)
        flags, env = family.layout_seed_flags(seed, folder), env | family.layout_seed_env(folder)
    subprocess.run([compiler, *family.link_flags, *flags, "-o", str(out), *map(str, objects), *extra], check=True,
                   env=env, cwd=objects[0].parent)
    if seed is not None:
        family.check_layout_seed(folder)
    return out


def _function_order(binary: Path) -> list[str]:
    listed = subprocess.run(["nm", "-n", str(binary)], capture_output=True, text=True, check=True).stdout
    return [line.split()[2] for line in listed.splitlines() if line.split()[1:2] == ["T"]
            and line.split()[2].startswith("f")]


@pytest.mark.parametrize("family_name,compiler", [("gcc", "gcc"), ("clang", "clang-16")])
def test_a_replicate_moves_the_code_and_its_seed_fixes_where(tmp_path, family_name, compiler):
    """Twelve objects of one function each, linked as replicate 1 (no seed) and with layout seeds
    2, 3 and 2 again: the order of the functions changes with the seed, the same seed gives the
    same binary, and each program still computes the same answer."""
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    objects = []
    for i in range(12):
        source = tmp_path / f"f{i:02d}.c"
        source.write_text(f"int f{i:02d}(int x) {{ return x * {i + 3} + {i}; }}\n")
        objects.append(source)
    calls = " + ".join(f"f{i:02d}({i})" for i in range(12))
    main = tmp_path / "main.c"
    main.write_text("".join(f"int f{i:02d}(int);\n" for i in range(12)) + f"int main(void) {{ return ({calls}) % 256; }}\n")
    built = []
    for source in [*objects, main]:
        obj = source.with_suffix(".o")
        subprocess.run([compiler, "-O2", "-c", str(source), "-o", str(obj)], check=True)
        built.append(obj)
    plain = _link(tmp_path, compiler, family_name, None, built)
    second, third = (_link(tmp_path, compiler, family_name, s, built) for s in (2, 3))
    orders = [_function_order(b) for b in (plain, second, third)]
    assert sorted(orders[0]) == sorted(orders[1]) == sorted(orders[2]) and len(orders[0]) == 12
    assert orders[0] != orders[1] and orders[1] != orders[2]
    answers = {subprocess.run([str(b)]).returncode for b in (plain, second, third)}
    assert len(answers) == 1
    twice = tmp_path / "twice"
    twice.mkdir()
    assert _link(twice, compiler, family_name, 2, built).read_bytes() == second.read_bytes()
    # An object after a static archive it does not need stays after it; one before it that needs it
    # too: a link with an archive in the middle still links.
    archive = tmp_path / "libextra.a"
    extra = tmp_path / "extra.c"
    extra.write_text("int extra(int x) { return x + 1; }\n")
    subprocess.run([compiler, "-O2", "-c", str(extra), "-o", str(tmp_path / "extra.o")], check=True)
    subprocess.run(["ar", "rcs", str(archive), str(tmp_path / "extra.o")], check=True)
    user = tmp_path / "user.c"
    user.write_text("int extra(int); int f00(int); int user(int x) { return extra(x) + f00(x); }\n")
    subprocess.run([compiler, "-O2", "-c", str(user), "-o", str(tmp_path / "user.o")], check=True)
    after = tmp_path / "after"
    after.mkdir()
    _link(after, compiler, family_name, 3, [*built, tmp_path / "user.o"], (str(archive),))
    if family_name == "gcc":
        made = replicates.links_made(tmp_path / "after" / f"layout-{family_name}-3")
        assert len(made) == 1 and made[0].endswith("14 objects permuted"), made


def test_a_gcc_replicate_refuses_a_build_that_linked_without_its_wrappers(tmp_path):
    gcc = compiler_family("gcc")
    gcc.prepare_layout_seed(2, tmp_path)
    with pytest.raises(PgolabError, match="linked without the layout seed's linker wrappers"):
        gcc.check_layout_seed(tmp_path)
    assert (tmp_path / "ld").exists() and gcc.layout_seed_flags(2, tmp_path) == []
    assert gcc.layout_seed_env(tmp_path) == {"COMPILER_PATH": str(tmp_path)}


def _replicate_estimates(rng, n, mu, tau, se):
    return [stats.Estimate(math.exp(mu + rng.normal(0, tau) + rng.normal(0, se)), None, None, 10, 50, se)
            for _ in range(n)]


def _fixed_effect(estimates):
    """A deliberately broken combination: the replicates' within-run errors alone, no build-to-build part."""
    logs = np.array([math.log(e.value) for e in estimates])
    se = math.sqrt(sum(e.log_se ** 2 for e in estimates)) / len(estimates)
    return stats.Estimate(math.exp(logs.mean()), math.exp(logs.mean() - 1.96 * se), math.exp(logs.mean() + 1.96 * se),
                          10, 50, se)


def _too_wide(estimates):
    """A deliberately broken combination the other way: three times the right interval."""
    right = stats.combine_replicates(estimates).combined
    center, half = math.log(right.value), 3 * (math.log(right.high) - math.log(right.low)) / 2
    return stats.Estimate(right.value, math.exp(center - half), math.exp(center + half), 10, 2, right.log_se * 3)


def _coverage(combine, seed, trials=400, n=3, mu=math.log(1.1), tau=0.02, se=0.004):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        e = combine(_replicate_estimates(rng, n, mu, tau, se))
        hits += e.low <= math.exp(mu) <= e.high
    return hits


# The pass rule, from the binomial: a method with 95 % coverage falls outside [LOW, HIGH] hits of 400
# with chance 0.2 % (0.1 % each side), so a correct method fails this test about once in 500 seeds.
TRIALS = 400
LOW, HIGH = (int(scipy_stats.binom.ppf(q, TRIALS, 0.95)) for q in (0.001, 0.999))


@pytest.mark.parametrize("seed", [11, 12])
def test_the_combination_over_builds_covers_a_build_to_build_spread(seed):
    """Replicates whose true ratios spread with τ = 2 % around 1.10 while each is measured to 0.4 %:
    the random-effects interval covers 1.10 as often as it says; the broken ones do not."""
    right = _coverage(lambda es: stats.combine_replicates(es).combined, seed)
    assert LOW <= right <= HIGH, (right, LOW, HIGH)
    assert _coverage(_fixed_effect, seed) < LOW          # too narrow: ignores the build-to-build spread
    assert _coverage(_too_wide, seed) > HIGH             # too wide


def test_replicates_that_agree_or_differ_in_precision_give_a_finite_interval_not_below_one_build():
    """Cases a plain DerSimonian-Laird with an unfloored τ² got wrong (NaN, a centre outside every
    replicate), and identical cost replicates, whose combination must not claim more than one binary."""
    uneven = [stats.Estimate(v, None, None, 10, 50, se) for v, se in ((1.10, 0.004), (1.1001, 0.01), (1.1002, 0.02))]
    found = stats.combine_replicates(uneven).combined
    assert math.isfinite(found.low) and 1.10 <= found.value <= 1.1002 and found.low < 1.10 < found.high
    two = stats.combine_replicates([stats.Estimate(1.10, None, None, 10, 50, 0.001),
                                    stats.Estimate(1.12, None, None, 10, 50, 0.03)]).combined
    assert 1.10 <= two.value <= 1.12
    cost = stats.Estimate(1.1, 1.094, 1.106, 1, None, 0.0026, bound=0.005, bound_df=1e6)
    same = stats.combine_replicates([cost, cost, cost]).combined
    assert same.bound == 0.005 and same.half_width >= cost.half_width and same.verdict() == "cheaper"


def test_the_build_to_build_spread_is_estimated():
    rng = np.random.default_rng(3)
    taus = [stats.combine_replicates(_replicate_estimates(rng, 3, 0.1, 0.02, 0.004)).between for _ in range(300)]
    assert 0.013 < float(np.median(taus)) < 0.025
    one = stats.combine_replicates([stats.Estimate(1.1, 1.09, 1.11, 10, 50, 0.004)])
    assert one.replicates == 1 and one.between is None and one.combined.value == 1.1
    # A build against its replicate: differences of two builds, variance 2τ² beyond the within part.
    pairs = [stats.Estimate(math.exp(rng.normal(0, 0.02 * math.sqrt(2)) + rng.normal(0, 0.004)), None, None, 10, 50,
                            0.004) for _ in range(2000)]
    assert stats.pair_spread(pairs) == pytest.approx(0.02, rel=0.1)


def test_the_report_shows_each_replicate_the_combination_and_both_spreads(tmp_path):
    """Cost figures of a, a+r2 (the base and its replicate) and b, b+r2, b+r3, exact by construction."""
    store = _cost_store(tmp_path, "a", {"a": 1.0, "a+r2": 1.01, "b": 1.10, "b+r2": 1.14, "b+r3": 1.12})
    table = report.compute(store, "r").table("replicates")
    rows = {(r["build"], r["figure"].split(",")[0]): r for r in table.rows}
    b = rows[("b", "rCost")]
    assert b["replicates"] == 3 and b["each"] == "1: 1.100, 2: 1.140, 3: 1.120"
    assert b["combined"].value == pytest.approx((1.10 * 1.14 * 1.12) ** (1 / 3), rel=2e-3)
    assert b["combined"].low < 1.10 and b["combined"].high > 1.14 and b["between"] > 1.0
    assert b["single"].value == pytest.approx(1.10) and b["single"].half_width < b["combined"].half_width
    a = rows[("a", "rCost")]
    assert a["replicates"] == 2 and a["combined"] is None
    assert a["between"] == pytest.approx(100 * math.sqrt((math.log(1.01) ** 2 - a["within"] ** 2 / 1e4) / 2), rel=0.05)
    assert "one binary" in report.compute(store, "r").table("builds").note


def test_an_axis_over_build_replicates_is_each_build_against_its_own_twin(tmp_path):
    """BOLT over two build pairs: replicate 2 of the twin is slower than the base, so BOLT's second
    pair reads its own effect (1.04 / 0.96), not its ratio against the base."""
    base = "rel_lto_pgo_use_clang"
    ratios = {base: 1.0, f"{base}+r2": 0.96, f"{base}_bolt": 1.01, f"{base}_bolt+r2": 1.04}
    store = _cost_store(tmp_path, base, ratios)
    rows = {(r["build"], r["figure"].split(",")[0]): r for r in report.compute(store, "r").table("replicates").rows}
    bolt = rows[(f"BOLT: {base}_bolt against {base}", "rCost")]
    assert bolt["replicates"] == 2 and bolt["each"] == "1: 1.010, 2: 1.083"
    assert bolt["combined"].value == pytest.approx(math.sqrt(1.01 * 1.04 / 0.96), rel=2e-3)
    assert bolt["single"].value == pytest.approx(1.01) and bolt["between"] > 1.0
    assert rows[(f"{base}_bolt", "rCost")]["each"] == "1: 1.010, 2: 1.040"


def _cost_store(tmp_path, base: str, ratios: dict[str, float]) -> Store:
    """A stored cost run whose targets' figures are the base's over `ratios`, exactly, in two tests."""
    store = Store(tmp_path / "s.sqlite")
    run_id, _ = store.create_or_resume_run("r", server="postgresql", base=base, suite="quick",
                                           options=BenchOptions(modes=("cost",)),
                                           host=Host.from_dict({"cpu": "x", "cores": 2, "memory_gib": 1, "kernel": "k"}),
                                           identity={}, command="pgolab bench (test)")
    for label in ratios:
        store.add_target(run_id, label, "binary", f"/bin/{label}", "0" * 64, BinaryInfo(f"/bin/{label}", "", label))
    for micro, group in (("point-1/point-query", "point-1"), ("writes/insert", "writes")):
        for position, (label, ratio) in enumerate(ratios.items()):
            cost = 1000.0 / ratio
            store.add(run_id, Sample(Step("cost", micro, 1, 1, position, label),
                                     {"cycles": cost, "instructions": cost, "i1_misses": cost / 10}, 1.0), group)
    return store


def test_a_replicate_shares_the_instrumented_build_and_keeps_its_own_twin():
    """The chain of a PGO replicate: its `_pgo_gen` build is the shared replicate 1 (one instrumented
    build for every replicate); a `_bolt` replicate's profile twin is the same replicate of the twin."""
    from pgolab.chain import BuildChain
    from pgolab.phases import QuietReporter

    made = []

    class Upstream:
        def __init__(self, request):
            self.request, self.variant, self.instrumented = request, request.variant, None
            self.profile_dir = Path("/nonexistent")

    def make(request, reporter, digest):
        made.append(request)
        return Upstream(request)

    tree = SourceTree(Path("/nonexistent/postgresql-15.18"), "postgresql", "15.18")
    second = BuildRequest(tree, parse("rel_pgo_use"), TrainingSpec()).replicate_of(2)
    BuildChain(second, QuietReporter(), "d", make)
    assert [(r.name, r.replicate) for r in made] == [("rel_pgo_gen", 1)]
    made.clear()
    BuildChain(BuildRequest(tree, parse("rel_pgo_use_bolt"), TrainingSpec()).replicate_of(3), QuietReporter(), "d", make)
    assert [(r.name, r.replicate, r.train.seed) for r in made] == [("rel_pgo_use+r3", 3, 3)]


def test_a_layout_axis_reads_the_profile_of_the_build_without_it():
    """_split, _hotcold (and _bolt, _hugify on top) compile with their profile twin's training: the
    build without them, labelled as they are; _order trains an instrumented build of its own."""
    from pgolab.chain import BuildChain
    from pgolab.phases import QuietReporter

    made = []

    class Upstream:
        def __init__(self, request):
            self.request, self.variant, self.instrumented = request, request.variant, None
            self.profile_dir = Path(f"/nonexistent/{request.name}/profile")

    def make(request, reporter, digest):
        made.append(request)
        return Upstream(request)

    tree = SourceTree(Path("/nonexistent/mariadb-10.11.18"), "mariadb", "10.11.18")
    chain = BuildChain(BuildRequest(tree, parse("rel_lto_pgo_use_split_hotcold_clang19_bolt_hugify"), TrainingSpec(),
                                    label="L"), QuietReporter(), "d", make)
    assert [r.name for r in made] == ["L-rel_lto_pgo_use_clang19"]
    assert chain.profile_dir(Path("/own")) == Path("/nonexistent/L-rel_lto_pgo_use_clang19/profile")
    made.clear()
    BuildChain(BuildRequest(tree, parse("rel_lto_pgo_use_order_clang19"), TrainingSpec()), QuietReporter(), "d", make)
    assert [r.name for r in made] == ["rel_lto_pgo_gen_order_clang19"]
