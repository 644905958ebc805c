#!/bin/bash
# Issue 31: MySQL 9.7.2 as rel_pgo_use, gcc 12 PGO (the published table: 1.42x on 8.0.28) against
# rel_o2nofp, in two pieces: ../mysql-9.7-pgo.sh.
. "$(dirname "$0")/../proof-env.sh"
VARIANT=rel_pgo_use RUN=mysql-pgo-gcc
. "$PROOF_DIR/../mysql-9.7-pgo.sh"
