#!/bin/bash
# Issue 31: MySQL 9.7.2 as rel_lto_pgo_use, gcc 12 PGO with MySQL's WITH_LTO (1.39x on 8.0.28) against
# rel_o2nofp, in two pieces: ../mysql-9.7-pgo.sh.
. "$(dirname "$0")/../proof-env.sh"
VARIANT=rel_lto_pgo_use RUN=mysql-lto-pgo-gcc
. "$PROOF_DIR/../mysql-9.7-pgo.sh"
