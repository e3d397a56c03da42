# A sharded job's ranks publish their share with the node hash (shard_params,
# shard_state_bytes, shard_gradient_bytes; docs/REDIS.md), which the nodes answer carries
# and the job page's node table shows: through the coordinator, LeNet-5 on 2 ranks at
# stage 2 with the split [1, 3] and no checkpoints, and each rank's figures are the ones
# its summary's shard object gives that rank, in the nodes answer and in the job page's
# Shard column (tests/browser/shard.mjs).
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
start_coord

spec "$TMP/z.json" z 1
jq '. + {workers: 2, algorithm: {name: "ssgd", shard: {stage: 2, split: [1, 3]}}, checkpoint: {every_steps: 0},
    optimizer: {kind: "adamw", lr: 0.001}, dataset: (.dataset + {train_subset: 512, test_subset: 64})}' \
    "$TMP/z.json" >"$TMP/z.t" && mv "$TMP/z.t" "$TMP/z.json"
id=$(submit "$TMP/z.json")
cli wait "$id" --timeout 300 || { cat "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
cli nodes "$id" >"$TMP/nodes.json"
sum="$STATE/jobs/$id/summary.json"
[ -s "$sum" ] || fail "job $id left no summary"
for r in 0 1; do
    got=$(jq -c ".ranks[$r] | [.shard_params, .shard_state_bytes, .shard_gradient_bytes]" "$TMP/nodes.json")
    want=$(jq -c ".shard | [.params_per_rank[$r], .state_bytes_per_rank[$r], .gradient_bytes_per_rank[$r]]" "$sum")
    [ "$got" = "$want" ] || fail "rank $r: the nodes answer says $got, the summary's shard $want"
    echo "ok: rank $r's node hash carries its share $got"
done
# the split [1, 3]: rank 1 holds about three times rank 0's range
jq -e '.ranks[1].shard_params > 2.5 * .ranks[0].shard_params' "$TMP/nodes.json" >/dev/null ||
    fail "the split [1, 3] is not in the ranges: $(jq -c '[.ranks[].shard_params]' "$TMP/nodes.json")"

# The job page's node table shows the same shares (headless Chromium, as http_browser.sh;
# said and skipped without it).
if have_browser; then
    timeout 120 node tests/browser/shard.mjs "$(api_base)" "$id" "$TMP/nodes.json" \
        "$BUILD/shard.png" || fail "the job page's Shard column (screenshot: $BUILD/shard.png)"
else
    echo "not checked: the job page's Shard column (no chromium, node or playwright-core)"
fi

stop_coord
