#!/bin/bash
# Issue 30: the four binaries of postgresql-15-across-machines (AMD EPYC family 25, 2026-11-28) made a
# third time, on another machine, from source and the same exported profile; digests compared with that
# proof's store and the replicates proof's (Intel Xeon, 2026-11-27); measured with the same options; set
# side by side with `pgolab machines` over the machines that measured each binary.
# The tree is the one at the default home's path (/var/cache/pgolab/sources/...), as on the earlier
# machines: clang's ThinLTO build names functions after its source path (step `paths` shows it). The
# builds go to a home of their own (THREE_MACHINES_HOME): the default home of a machine that runs
# matrix shards has a trained rel_lto_pgo_use_clang under that label already.
# PROOF_STEPS=build, paths, measure or compare runs one part; QPS wants the machine alone. Resumable.
. "$(dirname "$0")/../proof-env.sh"
proof_steps build paths measure compare
R=docs/results
PROFILE=$R/postgresql-15-stale-profile/debian-tree.profile.tgz
S=$($P source postgresql --version 15)
export PGOLAB_HOME=${THREE_MACHINES_HOME:-/var/cache/pgolab-srcpath}
LABELS=(rel_o2nofp rel_o2nofp+r2 rel_o2nofp+r3 rel_lto_pgo_use_clang)
loaded() { "$(dirname "$P")/python" -c 'import sys; from pgolab import elf; print(elf.loaded_digest(sys.argv[1])[:12])' "$1"; }
binary_of() {   # LABEL SOURCE: the server binary of that build in PGOLAB_HOME
  $P builds --json | python3 -c 'import json,sys
print(next(r["server_binary"] for r in json.load(sys.stdin) if r["label"] == sys.argv[1] and r["source"]["path"] == sys.argv[2]))' "$1" "$2"
}
if [[ $STEPS == *" build "* ]]; then
  $P build "$S" --variant rel_o2nofp --replicates 3 </dev/null
  $P build "$S" --variant rel_lto_pgo_use_clang --profile $PROFILE </dev/null
  $P builds --markdown --server postgresql-15 > "$OUT/builds.md"
fi
# rel_o2nofp (gcc) and the PGO build (clang ThinLTO, the same profile) from a copy of the tree at another
# path (another home's sources): each binary's file sha256, its loaded sha256 (elf.loaded_digest), its
# names with ThinLTO's .llvm.<hash> suffix, and which of its loaded sections' bytes equal this home's.
if [[ $STEPS == *" paths "* ]]; then
  OTHER=${THREE_MACHINES_OTHER_HOME:-/var/cache/pgolab-three-machines}
  S2=$(PGOLAB_HOME=$OTHER $P source postgresql --version 15)
  for label in rel_o2nofp rel_lto_pgo_use_clang; do
    PGOLAB_HOME=$OTHER $P build "$S2" --variant $label $([ $label = rel_lto_pgo_use_clang ] && echo --profile $PROFILE) \
      </dev/null >/dev/null
  done
  TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
  for label in rel_o2nofp rel_lto_pgo_use_clang; do
    mine=$(binary_of $label "$S"); theirs=$(PGOLAB_HOME=$OTHER binary_of $label "$S2")
    echo "$label: tree $S here, $S2 there"
    for b in "$mine" "$theirs"; do
      echo "  $b: file $(sha256sum "$b" | cut -c1-12), loaded $(loaded "$b"), $(nm "$b" | grep -c '\.llvm\.') names with .llvm.<hash>"
    done
    same=(); differ=()
    for sec in $("$(dirname "$P")/python" -c 'import sys; from pgolab import elf
print(" ".join(s.name for s in elf.sections(sys.argv[1]) if s.loaded and s.has_bytes))' "$mine"); do
      objcopy -O binary --only-section="$sec" "$mine" "$TMP/a" 2>/dev/null; objcopy -O binary --only-section="$sec" "$theirs" "$TMP/b" 2>/dev/null
      if cmp -s "$TMP/a" "$TMP/b"; then same+=("$sec"); else differ+=("$sec"); fi
    done
    echo "  loaded sections with the same bytes: ${same[*]}"
    echo "  loaded sections that differ: ${differ[*]:-none}"
  done > "$OUT/paths.txt"
fi
# Each label's sha256 here and in the two earlier proofs' stores; a label that differs from the family-25
# machine's binary stops the proof (the Intel PGO binary differs there too: its README says why).
digests() {
  local label mine amd intel status=0
  for label in "${LABELS[@]}"; do
    mine=$(sha256sum "$(binary_of "$label" "$S")" | cut -c1-12)
    amd=$(sqlite3 $R/postgresql-15-across-machines/results.sqlite "SELECT DISTINCT substr(binary_digest, 1, 12) FROM targets WHERE label = '$label'")
    intel=$(sqlite3 $R/postgresql-15-replicates/results.sqlite "SELECT DISTINCT substr(binary_digest, 1, 12) FROM targets WHERE label = '$label'")
    echo "$label: here $mine, AMD EPYC family 25 $amd, Intel Xeon $intel"
    [ "$mine" = "$amd" ] || status=1
  done
  return $status
}
if [[ $STEPS == *" measure "* ]]; then
  { grep -m1 'model name' /proc/cpuinfo; grep -m1 'cpu family' /proc/cpuinfo; grep -m1 '^model\s' /proc/cpuinfo; digests; } > "$OUT/digests.txt"
  $P bench --base rel_o2nofp --variant rel_lto_pgo_use_clang --variant rel_o2nofp+r2 --variant rel_o2nofp+r3 \
    --source "$S" --measure cost,qps --suite quick --instances 2 --blocks 3 --seconds 2 --cost-jobs 2 \
    --run 'pg15-machines-{binaries}' --store "$OUT/results.sqlite" --out "$OUT/report" </dev/null > "$OUT/report.txt"
fi
if [[ $STEPS == *" compare "* ]]; then
  TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
  $P export "$(sqlite3 "$OUT/results.sqlite" "SELECT name FROM runs WHERE status = 'finished' ORDER BY id DESC LIMIT 1")" \
    --store "$OUT/results.sqlite" -o "$TMP/here.json" >/dev/null
  $P export pg15-machines-4cede2e1 --store $R/postgresql-15-across-machines/results.sqlite -o "$TMP/amd25.json" >/dev/null
  $P export pg15-replicates-22fed8ba --store $R/postgresql-15-replicates/results.sqlite -o "$TMP/intel.json" >/dev/null
  for label in "${LABELS[@]}"; do
    runs=("$TMP/intel.json" "$TMP/amd25.json" "$TMP/here.json")
    # The Intel Xeon's PGO build is another binary (its recorded flags named its profile folder).
    [ "$label" = rel_lto_pgo_use_clang ] && runs=("$TMP/amd25.json" "$TMP/here.json")
    $P machines "${runs[@]}" --label "$label" --store "$TMP/scratch.sqlite" --out "$OUT/machines-$label" > "$OUT/machines-$label.txt"
  done
fi
