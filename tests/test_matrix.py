"""The matrix's pure parts: which variants, in which order."""

import pytest

from pgolab import matrix, variants
from pgolab.errors import PgolabError


def names(vs):
    return [v.name for v in vs]


def test_published_is_the_20_and_bolt_adds_a_twin_per_pgo_build():
    assert len(matrix.choose("published")) == 20
    with_bolt = matrix.choose("published", bolt=True)
    assert len(with_bolt) == 24
    assert {"rel_pgo_use_bolt", "rel_lto_pgo_use_clang_bolt", "rel_pgo_use_clang_bolt",
            "rel_lto_pgo_use_bolt"} <= set(names(with_bolt))


def test_all_leaves_out_the_instrumented_builds_they_are_built_on_the_way():
    chosen = matrix.choose("all")
    assert chosen and not any(v.pgo == "gen" for v in chosen)
    assert len(chosen) == len(set(chosen))


def test_a_list_of_names_is_parsed_and_a_bad_one_refused():
    assert names(matrix.choose("rel_o2nofp, rel_lto_clang_bolt")) == ["rel_o2nofp", "rel_lto_clang_bolt"]
    with pytest.raises(PgolabError, match="unknown variant"):
        matrix.choose("rel_o2nofp,rel_fast")
    with pytest.raises(PgolabError, match="no variants"):
        matrix.choose(" , ")


def test_builds_run_cheapest_first_plain_before_lto_before_pgo_before_bolt():
    order = names(matrix.build_order(matrix.choose("rel_pgo_use_bolt,rel_lto_pgo_use_clang,rel_pgo_use,"
                                                   "rel_lto,rel_o2nofp")))
    assert order == ["rel_o2nofp", "rel_lto", "rel_pgo_use", "rel_pgo_use_bolt", "rel_lto_pgo_use_clang"]


def test_the_order_is_stable_for_equal_costs():
    chosen = [variants.parse("rel_native"), variants.parse("rel_o2nofp"), variants.parse("rel")]
    assert names(matrix.build_order(chosen)) == ["rel_native", "rel_o2nofp", "rel"]
