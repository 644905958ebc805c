#!/bin/bash
# Issue 31: MySQL 9.7.2 as rel_lto_pgo_use_clang (clang-16 PGO with MySQL's own WITH_LTO, which is full
# LTO with clang: -flto, one link thread; the published table's best build: 1.77x on 8.0.28) against
# rel_o2nofp, in two pieces: ../mysql-9.7-pgo.sh.
. "$(dirname "$0")/../proof-env.sh"
VARIANT=rel_lto_pgo_use_clang RUN=mysql-pgo-clang
. "$PROOF_DIR/../mysql-9.7-pgo.sh"
