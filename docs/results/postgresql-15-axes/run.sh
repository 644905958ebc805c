#!/bin/bash
# Issue 35: every axis's effect on PostgreSQL 15 in one table, both measures: each build against its
# twin without one axis, from every committed PostgreSQL run that holds such a pair, each run read as
# its own report reads it (`pgolab axes`). Reads committed stores only; measures nothing.
#   bash docs/results/postgresql-15-axes/run.sh
. "$(dirname "$0")/../proof-env.sh"
# PROOF/STORE:RUN, in the order of the proofs' dates. Left out: runs whose builds are never one axis
# apart (replicates, threads, training connections, the machines proofs: rel_o2nofp against clang
# PGO+LTO), and postgresql-15-matrix's partial run, which the finished shards measured again.
PIECES=(postgresql-15-llvm19/results:pg15-llvm19-fbb18832
        postgresql-15-best/results:pg15-best-round1-ba927b79
        postgresql-15-layout/results:pg15-layout-bacf128c
        postgresql-15-matrix-shards/merged:pg15-matrix-cost-merged
        postgresql-15-best/results:pg15-best-round1-216a7215
        postgresql-15-best/results:pg15-best-round2-0fbefc80
        postgresql-15-best/results:pg15-best-confirm-39678a25
        postgresql-15-link-axes/results:pg15-link-axes-165519fd
        postgresql-15-cspgo/results:pg15-cspgo-7f97a41c)
axes_table "${PIECES[@]}"
