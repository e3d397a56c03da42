# A host cut off from the job's network, alive and answering its remote shell (issue 30):
# a 3-host ssgd job on the namespace cluster of elastic.sh (tests/integration/
# netns_cluster.inc); once its ranks are past step 12 (a checkpoint written), pw3's link
# goes down while its processes stay and its remote shell still answers (what a cluster
# looks like when its data network fails and its management network does not). Rank 2
# on pw3 falls silent (it cannot reach Redis either), ranks 0 and 1 block in the
# allreduce and report it; the coordinator stops the attempt for the stall before the
# heartbeat timeout (120 s here, so that only the stall can act first), its remote-shell
# probes find all three hosts up, its network probe (coordinator/netprobe.h) finds pw3
# unreachable from the coordinator, and it relaunches at once on pw1 and pw2 from the
# checkpoint. Checked:
#   - the job shows its stall ("ranks 0, 1 waiting in allreduce for 14 s; rank 2 (pw3)
#     silent for 14 s"; or in barrier, or each in its own: where the cut finds them);
#   - the stop was for the stall, and the relaunch on 2 ranks came within T_HEARTBEAT s of
#     the cut (the time it took is printed: docs/TESTING.md);
#   - pw3 is failing with the probe's reason ("the job's network: ..."), the resize 3 -> 2
#     names pw3 and that reason, ran on pw1 and pw2, used no restart;
#   - the link comes back: the probe passes, pw3 is up, the job grows back to 3 at its next
#     checkpoint and ends SUCCEEDED.
# No speed is asserted; the deadlines are minutes (a loaded 2-core machine).
T=partition T_PREFIX=ppt- T_NET=10.80.0 T_HEARTBEAT=120
. tests/integration/netns_cluster.inc

# As elastic.sh's job, longer: the grow needs the probe of pw3 (a connection and an MPI
# pair, seconds) and a checkpoint after it while the 2-rank attempt still trains. As in
# elastic.sh, rank 0 sleeps through 10x its own step (emulate.schedule: no load, no value
# changed) so that this room does not shrink as the kernels and the machine get faster:
# 16 epochs of 32 steps at about 50-100 ms a step. The grow resumed at step 86 of the 512
# beside other work (2026-11-27; the cut at 12, 25 s of stall, the 2-rank attempt until
# pw3's probe passed): the rest is margin for a slower machine (it was 24 epochs, a margin
# of 9x where 6x does, at about 13 s of the test's wall time and 10 CPU s).
cat >"$TMP/job.json" <<JSON
{"name": "partition", "model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 3, "batch_size": 32,
 "dataset": {"name": "fashion-mnist", "train_subset": 3072, "test_subset": 1000},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "epochs": 16, "seed": 11, "log_every": 8,
 "checkpoint": {"every_steps": 8}, "emulate": {"schedule": [{"step": 0, "rank": 0, "slowdown": 10}]}}
JSON

id=$(submit "$TMP/job.json")
end=$(($(date +%s) + 600))
until [ "$(http GET "/api/v1/jobs/$id/nodes")" = 200 ] &&
    [ "$(jq '[.ranks[] | select(.step >= 12)] | length' "$TMP/body" 2>/dev/null)" = 3 ] &&
    [ -s "$STATE/jobs/$id/checkpoints/partition.ckpt" ]; do
    [ "$(date +%s)" -ge "$end" ] && { tail -20 "$STATE/jobs/$id/log"; fail "job $id: 3 ranks not past step 12 after 600 s"; }
    case $(state_of "$id") in QUEUED | RUNNING) ;; *) fail "job $id is $(jq -r .state "$TMP/body") before the cut" ;; esac
    sleep 0.3
done
ip link set "$(host_veth pw3)" down
cut=$(date +%s)
echo "ok: job $id past step 12 on 3 hosts; pw3's link down (its processes and remote shell stay)"

# Until it runs on 2 ranks: the stall is shown on the way.
stall=""
end=$((cut + T_HEARTBEAT))
until [ "$(state_of "$id")" = RUNNING ] && [ "$(jq -r .world "$TMP/body")" = 2 ]; do
    # The last sentence seen: the first may show one rank waiting before the other.
    s=$(jq -r '.stall_text // empty' "$TMP/body")
    [ -n "$s" ] && stall=$s
    [ "$(date +%s)" -ge "$end" ] && { tail -30 "$TMP/coord.log"; fail "job $id not running on 2 ranks ${T_HEARTBEAT}s after the cut"; }
    case $(jq -r .state "$TMP/body") in SUCCEEDED | FAILED | CANCELLED)
        tail -30 "$TMP/coord.log"; fail "job $id ended $(jq -r .state "$TMP/body") before it ran on 2 ranks" ;;
    esac
    sleep 0.3
done
took=$(($(date +%s) - cut))
r=$(jq -c '.resizes[0]' "$TMP/body")
echo "ok: job $id relaunched on 2 ranks ${took}s after the cut: $r"
echo "$stall" | grep -Eq "^(ranks? [01, ]+ waiting in (allreduce|barrier) for [0-9]+ s; )+rank 2 \(pw3\) silent for [0-9]+ s$" || fail "the job's stall while it waited: '$stall'"
echo "ok: the job showed: $stall"
grep -q "job $id: stalled: .*; stopping" "$TMP/coord.log" || { tail -30 "$TMP/coord.log"; fail "the attempt was not stopped for its stall"; }
[ "$(echo "$r" | jq -r '"\(.from) \(.to) \(.hosts | join(" "))"')" = "3 2 pw1 pw2" ] || fail "first resize: $r"
echo "$r" | jq -r .reason | grep -q "pw3 (the job's network: " || fail "the resize's reason names neither pw3 nor the probe's: $r"
[ "$(jq -r .restarts "$TMP/body")" = 0 ] || fail "the relaunch used a restart: $(jq -c '{restarts, attempts}' "$TMP/body")"
curl -fsS --max-time 10 -H "Authorization: Bearer $TOKEN" "$API/api/v1/cluster" >"$TMP/cluster" ||
    fail "GET /api/v1/cluster"
h3=$(jq -c '[.. | objects | select(.name? == "pw3")][0]' "$TMP/cluster")
echo "$h3" | jq -e '.state == "failing" and (.reason | test("the job.s network"))' >/dev/null ||
    fail "pw3 as the cluster shows it: $h3"
echo "ok: pw3 failing: $(echo "$h3" | jq -r .reason)"

ip link set "$(host_veth pw3)" up
echo "ok: pw3's link up"
finish "$id" 900 >/dev/null || exit 1
state_of "$id" >/dev/null
g=$(jq -c '.resizes[1]' "$TMP/body")
[ "$(echo "$g" | jq -r '"\(.from) \(.to)"')" = "2 3" ] ||
    { tail -30 "$TMP/coord.log"; fail "no grow back to 3 ranks: resizes $(jq -c .resizes "$TMP/body")"; }
echo "ok: job $id SUCCEEDED; grew back: $(echo "$g" | jq -r .reason)"
