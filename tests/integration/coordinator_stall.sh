# A rank stuck in a collective says so, and the coordinator acts before the heartbeat
# timeout (issue 30): a 2-rank ssgd job; after its first checkpoint rank 1 is stopped
# (SIGSTOP: its reporter thread stops too, as a rank cut off from Redis would), so rank 0
# blocks in the gradient allreduce. Checked:
#   - rank 0's node hash reports waiting = allreduce (or barrier, the wait before it:
#     where the stop finds it) once the wait passed its limit
#     (worker/waitmark.h: 10 x its median step, at least 10 s), with waiting_since;
#   - the job's stall (GET /api/v1/jobs/{id}: stall, stall_text; `pacer get`: "waiting")
#     names rank 0 waiting in allreduce and rank 1 silent, with its host;
#   - the coordinator stops the attempt for the stall (coordinator/stall.h) well before
#     the 120 s heartbeat timeout, and with --max-restarts 0 the job ends FAILED with the
#     reason "stalled: ... rank 1 (HOST) silent ...": the rank and host, never rank -1.
# No speed is asserted: the bound is the heartbeat timeout the stall must beat.
. tests/integration/coordinator_lib.inc
PACER=$BUILD/pacer
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
command -v jq >/dev/null || skip "jq not installed (make deps)"
HEARTBEAT_TIMEOUT=120
start_coord --max-restarts 0 --kill-grace 1
base_url() { grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //'; }
BASE=$(base_url)
[ -n "$BASE" ] || fail "no REST API address in the coordinator's log"
cat >"$TMP/st.json" <<JSON
{"name": "st", "model": "lenet5", "workers": 2, "algorithm": {"name": "ssgd"},
 "dataset": {"name": "fashion-mnist", "train_subset": 2048, "test_subset": 500},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "batch_size": 32, "epochs": 200, "seed": 7, "log_every": 10,
 "checkpoint": {"every_steps": 10}}
JSON
id=$(submit "$TMP/st.json")
await 90 "job $id to write its first checkpoint" has_checkpoint "$id" st
node() { redis-cli -s "$STATE/redis.sock" --raw HGET "pacer:job:$id:node:$1" "$2"; }
has_pid1() { [ -n "$(node 1 pid)" ]; }
await 30 "rank 1 of $id to report its pid" has_pid1
victim=$(node 1 pid)
host1=$(node 1 host)
kill -STOP "$victim" || fail "cannot stop rank 1 ($victim)"
stopped_at=$(now)
echo "ok: rank 1 of $id (pid $victim on $host1) stopped after the first checkpoint"

# The allreduce, or the barrier before it (comm_wait_peers): where the stop finds rank 0.
waiting0() { case $(node 0 waiting) in allreduce | barrier) true ;; *) false ;; esac; }
await 60 "rank 0 to report that it waits in allreduce or the barrier before it" waiting0
op=$(node 0 waiting)
since=$(node 0 waiting_since)
limit=$(node 0 waiting_limit_s)
at_least "rank 0's waiting_limit_s" "$limit" 10
echo "ok: rank 0 reports waiting in $op since $since (limit $limit s)"

get() { curl -sS --max-time 10 "$BASE/api/v1/jobs/$id" >"$TMP/job.json" 2>/dev/null; }
shows_stall() { get && jq -e '.stall_text | test("rank 0 waiting in (allreduce|barrier)") and test("rank 1 \\(")' "$TMP/job.json"; }
await 60 "the job to show its stall" shows_stall
echo "ok: GET /api/v1/jobs/$id: $(jq -r .stall_text "$TMP/job.json")"
jq -e --arg h "$host1" '.stall.waiting[0].rank == 0 and (.stall.waiting[0].op | test("^(allreduce|barrier)$")) and
    .stall.waiting[0].peer == null and .stall.silent[0].rank == 1 and .stall.silent[0].host == $h' "$TMP/job.json" \
    >/dev/null || fail "the job's stall object: $(jq -c .stall "$TMP/job.json")"
if [ -x "$PACER" ]; then
    PACER_URL=$BASE "$PACER" get "$id" >"$TMP/get.txt" 2>&1 || true
    grep -Eq "^waiting .*rank 0 waiting in (allreduce|barrier)" "$TMP/get.txt" || { cat "$TMP/get.txt"; fail "pacer get shows no waiting line"; }
    echo "ok: pacer get: $(grep '^waiting' "$TMP/get.txt")"
fi

await 90 "job $id to end" is_state "$id" FAILED
took=$(awk -v n="$(now)" -v s="$stopped_at" 'BEGIN { printf "%.0f", n - s }')
reason=$(field_of "$id" reason)
echo "$reason" | grep -Eq "^stalled: rank 0 waiting in (allreduce|barrier) for [0-9]+ s; rank 1 \($host1\) silent for [0-9]+ s" ||
    { tail -20 "$TMP/coord.log"; fail "reason of $id: $reason"; }
case $reason in *"rank -1"*) fail "the reason names rank -1: $reason" ;; esac
grep -q "job $id: stalled: .*; stopping" "$TMP/coord.log" || fail "the coordinator did not log the stall stop"
awk -v t="$took" -v h="$HEARTBEAT_TIMEOUT" 'BEGIN { exit !(t < h) }' ||
    fail "the job ended ${took}s after rank 1 stopped: not before the ${HEARTBEAT_TIMEOUT}s heartbeat timeout"
kill -CONT "$victim" 2>/dev/null
echo "ok: stopped for the stall ${took}s after rank 1 went silent (heartbeat timeout ${HEARTBEAT_TIMEOUT}s): $reason"
stop_coord
