# The workers' Redis link seen through the coordinator: a job's metrics stream, its
# per-rank node hash (heartbeat, EWMA speed, compute/comm/idle sums) and staleness hash
# are filled; when the job ends its speed is folded into the host's performance profile
# and its bulky keys get their TTL. Skips while pacer-worker lacks --redis (the worker
# side of the sink, worker/redis_report.h, is wired by the worker's owner).
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
start_coord

spec "$TMP/m.json" m 2
id=$(submit "$TMP/m.json")
cli wait "$id" --timeout 300 || { cat "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
n=$(cli metrics "$id" --limit 10000 | jq '.items | length')
if [ "$n" -eq 0 ]; then
    "$WORKER" --help | grep -q -- "--redis" ||
        skip "metrics stream empty and pacer-worker --help has no --redis yet: the worker does not report to Redis"
    fail "pacer-worker knows --redis but job $id wrote no metrics"
fi
at_least "metrics records of $id" "$n" 10
cli metrics "$id" --limit 1 | jq -e '.items[0] | .kind and .step and .samples_per_s' >/dev/null ||
    fail "a metrics record lacks kind/step/samples_per_s"

cli nodes "$id" >"$TMP/nodes.json"
at_least "rank 0 samples_per_s" "$(jq '.ranks[0].samples_per_s // 0' "$TMP/nodes.json")" 1
at_least "rank 0 compute_s" "$(jq '.ranks[0].compute_s // 0' "$TMP/nodes.json")" 0.001
at_least "rank 0 heartbeat" "$(jq '.ranks[0].heartbeat // 0' "$TMP/nodes.json")" 1
at_least "rank 0 step" "$(jq '.ranks[0].step // 0' "$TMP/nodes.json")" 64
[ "$(jq -r '.ranks[0].host' "$TMP/nodes.json")" = "$(hostname)" ] || fail "rank 0 host"
[ "$(jq '.ranks[0].staleness.hist | length' "$TMP/nodes.json")" = 9 ] || fail "rank 0 has no staleness hash"
echo "ok: node and staleness hashes of $id filled"

key="pacer:profile:$(hostname):$(jq -r '.ranks[0].device' "$TMP/nodes.json"):lenet5"
cli cluster | jq -e --arg k "$key" '.profiles | map(.key) | index($k)' >/dev/null || fail "no profile $key"
at_least "profile speed" "$(redis-cli -s "$STATE/redis.sock" HGET "$key" samples_per_s)" 1
at_least "metrics TTL" "$(redis-cli -s "$STATE/redis.sock" TTL "pacer:job:$id:metrics")" 3600
at_least "coarse metrics TTL" "$(redis-cli -s "$STATE/redis.sock" TTL "pacer:job:$id:metrics:coarse")" 3600
echo "ok: profile $key updated, finished job's keys expire"
history_matches_log "$id"

# The asynchronous family (issue 29): the parameter server (rank 0) evaluates at each epoch
# end; its workers' records carry no evaluation (null, where they carried 0 and made the
# dashboard's accuracy drop to 0), nor a training loss they never computed, and the PS,
# which computes no samples, has no speed (null, not 0).
jq '.name = "a" | .workers = 2 | .algorithm = {"name": "asgd"} | .optimizer.momentum = 0.5' "$TMP/m.json" >"$TMP/a.json"
a=$(submit "$TMP/a.json")
cli wait "$a" --timeout 300 || { cat "$STATE/jobs/$a/log"; fail "job $a did not succeed"; }
history_matches_log "$a"
cli metrics "$a" --limit 10000 >"$TMP/a-metrics.json"
jq -e '[.items[] | select(.kind == "final" and .role == "worker")] |
    length == 2 and all(.test_accuracy == null and .test_loss == null and .loss == null and .epoch == 2)' \
    "$TMP/a-metrics.json" >/dev/null ||
    fail "the asgd workers' final records: $(jq -c '[.items[] | select(.kind == "final") | {rank, epoch, loss, test_accuracy}]' "$TMP/a-metrics.json")"
cli nodes "$a" >"$TMP/a-nodes.json"
jq -e '.ranks[0].role == "ps" and .ranks[0].samples_per_s == null and .ranks[0].test_accuracy > 0 and
    (.ranks[1:] | all(.samples_per_s > 0 and .test_accuracy == null))' "$TMP/a-nodes.json" >/dev/null ||
    fail "asgd nodes: $(jq -c '[.ranks[] | {rank, role, samples_per_s, test_accuracy}]' "$TMP/a-nodes.json")"
echo "ok: asgd $a: the workers' final records carry no evaluation or loss, the PS no speed"
stop_coord
