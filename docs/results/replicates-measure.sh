# The measurement steps of a build replicates proof. Sourced by its run.sh after proof-env.sh, with
# STEPS (PROOF_STEPS padded with spaces), TARGETS (pgolab bench's target options, with --replicates)
# and RUN (the stored runs' name before -cost/-qps). One stored run per measure, every binary a target
# of it, so the report's build replicates table gives each variant over its builds:
#   cost  full suite, 1 thread, a quarter of the events, two servers at once; runs beside builds
#   qps   quick suite, 1 thread, 2 instances of 3 paired 2-second blocks; wants the machine to itself
#         (pause the queue: queue.sh --pause; the report says if other work ran beside it)
if [[ $STEPS == *" cost "* ]]; then
  $P bench "${TARGETS[@]}" --measure cost --suite full --cost-jobs 2 --cost-scale 0.25 \
    --run "$RUN-cost-{binaries}" --store "$OUT/results.sqlite" --out "$OUT/report-cost" </dev/null > "$OUT/report-cost.txt"
fi
if [[ $STEPS == *" qps "* ]]; then
  $P bench "${TARGETS[@]}" --measure qps --suite quick --instances 2 --blocks 3 --seconds 2 \
    --run "$RUN-qps-{binaries}" --store "$OUT/results.sqlite" --out "$OUT/report-qps" </dev/null > "$OUT/report-qps.txt"
fi
