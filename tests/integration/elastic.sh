# Elastic restart across hosts (issue 14): a 3-host ssgd job on the network-namespace
# cluster (deploy/netns/, as in multihost.sh: Redis and the coordinator in "pc", one rank
# on each of pw1..pw3, mpirun reaching them through a remote shell) loses pw3 mid-job:
# its processes are killed, its link goes down and its remote shell refuses (as a dead
# machine's sshd would). The coordinator probes the attempt's hosts, finds pw3 down and
# relaunches at once on pw1 and pw2 with 2 ranks over the same global batch, from the
# last checkpoint (whose batch plan of 3 workers is re-planned for 2). Checked:
#   - the job ends SUCCEEDED, its test accuracy within 1 point of the same job run
#     undisturbed on the three hosts first;
#   - the resize 3 -> 2 is in the job's events (the SSE stream GET /api/v1/jobs/{id}/events
#     and pacer:events) and in the job's "resizes", with its reason naming pw3;
#   - the relaunch used no restart (--max-restarts 0) and ran on pw1 and pw2 only;
#   - pw3 then comes back (link up, remote shell answering): the coordinator's probe finds
#     it up and the job grows back to 3 ranks right after its next checkpoint, a second
#     resize (2 -> 3) in the record and the events;
#   - its history has one test accuracy per epoch across the three worlds, rank 0's, each
#     the one its log printed last for that epoch (issue 29).
# No speed is asserted; the deadlines are minutes (a loaded 2-core machine).
# Needs root and `ip netns add` (else exit 77); a lock serialises concurrent runs.
T=elastic T_PREFIX=pel- T_NET=10.78.0
. tests/integration/netns_cluster.inc

# ssgd, 3 workers x 32 (global batch 96), 8 epochs of 3072 images: 256 steps, a
# checkpoint every 8. Room for the shrink and the grow: after the shrink the job must
# still be training when the coordinator's probe (every second) finds pw3 back and the
# next checkpoint comes. Compute alone does not give that room: with the ranks free to use
# both cores the 2-rank attempt of a 3-epoch job ran its remaining 84 steps in 2.6 s, and
# by 2026-11-24 (faster kernels, a faster VM) the 8-epoch job ended before the grow in
# every run (CI failed it twice). So rank 0 sleeps through 60x its own step (emulate:
# slowdown 60 from step 0, sleeping, not spinning: no load on the machine) and paces the
# synchronous job, in every world: about 30 ms a step here, the 2-rank attempt's ~240
# steps 7 s or more, and a loaded machine only slows it further. From step 176 rank 0 runs
# at full speed again: the grow comes at the first checkpoint after pw3 is back, long
# before (the 2-rank attempt starts by step 24: 150 slowed steps, 4.5 s at 30 ms and 30 s
# at the 210 ms measured on 2026-11-27), and the last 80 steps slept through cost 17 s of
# wall time. The slowdown changes no value: ssgd without dynamic batching splits the batch
# evenly whatever the speeds.
# Tested on all 10000 test images:
# a resize changes only the order of float sums (the same global batch of the same
# samples), and with lr 0.02 and the full test set a shrunk run ended within 0.05 points
# of the undisturbed one for seeds 11-13 (lr 0.05 on 1000 images: up to 0.9 points).
cat >"$TMP/job.json" <<JSON
{"name": "elastic", "model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 3, "batch_size": 32,
 "dataset": {"name": "fashion-mnist", "train_subset": 3072},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "epochs": 8, "seed": 11, "log_every": 8,
 "checkpoint": {"every_steps": 8},
 "emulate": {"schedule": [{"step": 0, "rank": 0, "slowdown": 60}, {"step": 176, "rank": 0, "slowdown": 1}]}}
JSON

# 1. Undisturbed, on the three hosts, without the slowdown (it changes no value, above;
# rank 0 sleeping through 256 steps took 25 of this test's 85 s).
jq 'del(.emulate)' "$TMP/job.json" >"$TMP/job0.json"
id0=$(submit "$TMP/job0.json")
acc0=$(finish "$id0" 600) || exit 1
echo "ok: undisturbed job $id0 SUCCEEDED on pw1 pw2 pw3: test_accuracy $acc0"

# 2. The same job; pw3 is lost once the ranks are past step 12 (a checkpoint is written).
id1=$(submit "$TMP/job.json")
curl -sS -N --max-time 900 -H "Authorization: Bearer $TOKEN" "$API/api/v1/jobs/$id1/events" >"$TMP/sse" 2>/dev/null &
SSE_PID=$!
end=$(($(date +%s) + 600))
until [ "$(http GET "/api/v1/jobs/$id1/nodes")" = 200 ] &&
    [ "$(jq '[.ranks[] | select(.step >= 12)] | length' "$TMP/body" 2>/dev/null)" = 3 ] &&
    [ -s "$STATE/jobs/$id1/checkpoints/elastic.ckpt" ]; do
    [ "$(date +%s)" -ge "$end" ] && { tail -20 "$STATE/jobs/$id1/log"; fail "job $id1: 3 ranks not past step 12 after 600 s"; }
    # QUEUED until the coordinator's next tick claims it; anything but QUEUED or RUNNING
    # before pw3 is lost is a failure.
    case $(state_of "$id1") in QUEUED | RUNNING) ;; *) fail "job $id1 is $(jq -r .state "$TMP/body") before pw3 was lost" ;; esac
    sleep 0.3
done
echo "ok: job $id1 training on 3 hosts, past step 12, checkpoint written"
touch "$TMP/dead/pw3"
ip link set "$(host_veth pw3)" down
for p in $(ip netns pids "$(host_ns pw3)"); do kill -9 "$p" 2>/dev/null; done
echo "ok: pw3 lost: its processes killed, its link down, its remote shell refusing"

# Once it runs on pw1 and pw2, pw3 comes back: the job grows to 3 at its next checkpoint.
end=$(($(date +%s) + 600))
until [ "$(state_of "$id1")" = RUNNING ] && [ "$(jq -r .world "$TMP/body")" = 2 ]; do
    [ "$(date +%s)" -ge "$end" ] && { tail -30 "$TMP/coord.log"; fail "job $id1 not running on 2 ranks 600 s after pw3 was lost"; }
    case $(jq -r .state "$TMP/body") in SUCCEEDED | FAILED | CANCELLED)
        tail -30 "$TMP/coord.log"; fail "job $id1 ended $(jq -r .state "$TMP/body") before it ran on 2 ranks" ;;
    esac
    sleep 0.3
done
echo "ok: job $id1 relaunched on 2 ranks: $(jq -c .resizes[0] "$TMP/body")"
ip link set "$(host_veth pw3)" up
rm -f "$TMP/dead/pw3"
echo "ok: pw3 back"

acc1=$(finish "$id1" 900) || exit 1
echo "ok: job $id1 SUCCEEDED after losing pw3: test_accuracy $acc1 (undisturbed $acc0)"
awk -v a="$acc1" -v b="$acc0" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01) }' ||
    fail "test_accuracy $acc1 is more than 1 point from the undisturbed run's $acc0"
echo "ok: within 1 point of the undisturbed run"

# The job's record: one resize, 3 -> 2, naming pw3; no restart used.
state_of "$id1" >/dev/null
jq -e '.resizes | type == "array" and length >= 1' "$TMP/body" >/dev/null ||
    fail "job $id1 has no resizes: $(jq -c '{resizes, restarts, attempts}' "$TMP/body")"
r=$(jq -c '.resizes[0]' "$TMP/body")
[ "$(echo "$r" | jq -r '"\(.from) \(.to)"')" = "3 2" ] || fail "first resize: $r, want 3 -> 2"
echo "$r" | jq -r .reason | grep -q "pw3" || fail "the resize's reason does not name pw3: $r"
[ "$(echo "$r" | jq -r '.hosts | join(" ")')" = "pw1 pw2" ] || fail "the resized attempt's hosts: $r"
[ "$(jq -r .restarts "$TMP/body")" = 0 ] || fail "the relaunch used a restart: $(jq -c '{restarts, attempts}' "$TMP/body")"
echo "ok: job record: resize 3 -> 2 on pw1 pw2, reason: $(echo "$r" | jq -r .reason); restarts 0"
g=$(jq -c '.resizes[1]' "$TMP/body")
[ "$(echo "$g" | jq -r '"\(.from) \(.to)"')" = "2 3" ] ||
    { tail -30 "$TMP/coord.log"; fail "no grow back to 3 ranks: resizes $(jq -c .resizes "$TMP/body")"; }
echo "$g" | jq -r .reason | grep -q "grow at the checkpoint: pw3 is usable again" || fail "the grow's reason: $g"
echo "ok: job record: resize 2 -> 3, reason: $(echo "$g" | jq -r .reason)"
# The events: the SSE stream (which ends with the job) and the pacer:events stream.
end=$(($(date +%s) + 30))
while kill -0 "$SSE_PID" 2>/dev/null; do
    [ "$(date +%s)" -ge "$end" ] && { kill "$SSE_PID"; break; }
    sleep 0.2
done
SSE_PID=
grep -q '^event: resize' "$TMP/sse" || { head -c 2000 "$TMP/sse"; fail "no resize event in GET /api/v1/jobs/$id1/events"; }
grep '^data: .*"type":"resize"' "$TMP/sse" | sed 's/^data: //' | jq -s -e 'length == 2 and
    .[0].from == 3 and .[0].to == 2 and (.[0].reason | test("pw3")) and .[1].from == 2 and .[1].to == 3' >/dev/null ||
    fail "the resize events: $(grep -A2 '^event: resize' "$TMP/sse")"
echo "ok: GET /api/v1/jobs/$id1/events: event: resize 3 -> 2 (reason naming pw3), then 2 -> 3"
# Where the ranks of the last attempt ran.
[ "$(http GET "/api/v1/jobs/$id1/nodes")" = 200 ] || fail "nodes: $(cat "$TMP/body")"
grep -q "checkpoint .* was written by 3 workers; resuming with 2" "$STATE/jobs/$id1/log" ||
    fail "the relaunched ranks did not re-plan a 3-worker checkpoint: $(grep -m3 'resum' "$STATE/jobs/$id1/log")"
echo "ok: the relaunch resumed the 3-worker checkpoint with 2 workers"
# Issue 29: across the three worlds (3, 2, 3 ranks) the history has one test accuracy per
# epoch, rank 0's, the one the log printed last for it (an attempt evaluates again the
# epochs it trains again after its checkpoint). The log can lose the last lines of an
# attempt the coordinator stopped (mpirun forwards the remote ranks' output, and a resize
# stops the attempt right after its checkpoint, which can follow an epoch end): an epoch
# end the log lost is checked against rank 0's latest epoch record in the job's stream
# instead, which is what the run measured. At most two per resize: since the direct
# convolution kernels an epoch of this job (32 steps and an evaluation) lasts about as long
# as what the forwarding loses when the attempt is stopped (CI lost 3 with 2 resizes).
redis-cli -h "$PC" --raw XRANGE "pacer:job:$id1:metrics" - + | grep '^{' >"$TMP/records.jsonl"
jq -s -e 'map(select(.test_accuracy != null)) | length > 0 and all(.rank == 0)' "$TMP/records.jsonl" >/dev/null ||
    fail "job $id1: no evaluation in its stream, or one of a rank other than 0"
jq -r 'select(.kind == "epoch" and .test_accuracy != null) |
    "epoch \(.epoch)/8 done: (record) test_accuracy \(.test_accuracy)"' "$TMP/records.jsonl" >"$TMP/records.log"
lost=$(log_accuracy "$TMP/records.log" | cut -d' ' -f1 | sort -u |
    grep -cvxF "$(log_accuracy "$STATE/jobs/$id1/log" | cut -d' ' -f1 | sort -u)")
[ "$lost" -le 4 ] || fail "job $id1: the log lost $lost epoch ends (two resizes, at most two each)"
[ "$(http GET "/api/v1/jobs/$id1/history")" = 200 ] || fail "history: $(cat "$TMP/body")"
history_accuracy_is_log "$TMP/body" "job $id1 (ssgd, resized 3 -> 2 -> 3; $lost epoch end(s) lost by the log)" \
    "$TMP/records.log" "$STATE/jobs/$id1/log"
