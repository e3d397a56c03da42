# Compressed pushes in the parameter-server family (issue 47; worker/ps.c): with
# algorithm.compression bf16 each worker pushes its gradient as bfloat16 words rounded
# with its own error feedback (worker/compress.h, compress_bf16_feedback). 2 workers and
# the parameter server, LeNet-5 on a Fashion-MNIST subset, pushes taken in worker order
# (--ps-round-robin: deterministic):
#   1. comm_bytes_per_step (the parameter server's: bytes per push received) is exactly
#      the push: its 32-byte header and 61706 floats, or 61706 bf16 words; the workers'
#      step records carry the same per push. The summary's compression object (kind,
#      compressed and plain bytes per push, their ratio) and every step record's
#      compression_ratio, the parameter server's and the workers', say the same as ssgd's
#      do; uncompressed asgd has neither.
#   2. asgd and dc-asgd with bf16 learn (a floor, and within 3 points of uncompressed asgd).
#   3. powersgd is refused for the family, naming why (its Q is shared by all ranks).
. tests/integration/compress_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
NP=61706 # LeNet-5's parameters (no batch-norm buffers)
HDR=32   # sizeof(ps_push_t)
spec() { # NAME ALGORITHM KIND
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 12800, "test_subset": 1000},
 "algorithm": {"name": "$2", "compression": {"kind": "$3"}}, "workers": 2, "batch_size": 32, "epochs": 1, "seed": 5,
 "log_every": 0, "optimizer": {"lr": 0.04, "momentum": 0.5, "async_momentum": "explicit"}}
JSON
}
run3() { # NAME ARGS...
    n=$1
    shift
    $MPIRUN -np 3 $WORKER --spec "$TMP/$n.json" --ps-round-robin "$@" >"$TMP/$n.log" 2>&1 ||
        { cat "$TMP/$n.log"; fail "$n failed"; }
}

# 1. Bytes per push.
spec none asgd none
spec bf16 asgd bf16
spec dc dc-asgd bf16
run3 none --summary "$TMP/none.out"
run3 bf16 --summary "$TMP/bf16.out" --metrics "$TMP/bf16.jsonl"
run3 dc --summary "$TMP/dc.out"
equals_num "uncompressed asgd comm_bytes_per_step (bytes per push)" "$(json "$TMP/none.out" .comm_bytes_per_step)" \
    $((HDR + NP * 4))
equals_num "bf16 asgd comm_bytes_per_step (bytes per push)" "$(json "$TMP/bf16.out" .comm_bytes_per_step)" $((HDR + NP * 2))
# A worker's step records: one push each.
python3 - "$TMP/bf16.jsonl" $((HDR + NP * 2)) $((HDR + NP * 4)) <<'PY' || fail "the step records do not carry the bf16 push's bytes and ratio"
import json, sys
want, plain, seen = float(sys.argv[2]), float(sys.argv[3]), {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "step" and "comm_bytes" in r:
        if r.get("role") == "worker":
            assert r["comm_bytes"] == want, r
        assert abs(r.get("compression_ratio", -1) - plain / want) < 1e-5, r
        seen[r.get("role")] = seen.get(r.get("role"), 0) + 1
assert seen.get("worker", 0) > 0, "no worker step record with comm_bytes: %s" % seen
assert len(seen) > 1, "no parameter-server step record with comm_bytes: %s" % seen
PY
echo "ok: bytes per push $((HDR + NP * 4)) (none), $((HDR + NP * 2)) (bf16), in the summary and the step records"
for n in bf16 dc; do
    [ "$(json "$TMP/$n.out" .compression.kind)" = bf16 ] || fail "$n compression.kind is not bf16"
    equals_num "$n compression.compressed_bytes_per_step" "$(json "$TMP/$n.out" .compression.compressed_bytes_per_step)" \
        $((HDR + NP * 2))
    equals_num "$n compression.plain_bytes_per_step" "$(json "$TMP/$n.out" .compression.plain_bytes_per_step)" \
        $((HDR + NP * 4))
    between "$n compression.ratio" "$(json "$TMP/$n.out" .compression.ratio)" 1.99 2.0
done
[ "$(json "$TMP/none.out" .compression)" = null ] || fail "uncompressed asgd's summary has a compression object"
echo "ok: the compression object and the records' compression_ratio (2x) for asgd and dc-asgd with bf16"

# 2. Learning.
learns_near none 0.6 0.03 bf16 dc
base=$(json "$TMP/none.out" .test_accuracy)
echo "ok: accuracy $base (asgd), $(json "$TMP/bf16.out" .test_accuracy) (asgd bf16), $(json "$TMP/dc.out" .test_accuracy) (dc-asgd bf16)"

# 3. PowerSGD refused.
spec ps asgd powersgd
expect_error 2 "algorithm.compression.kind: powersgd needs one Q shared by all ranks, which the asynchronous pushes of asgd do not have; use bf16 (each worker keeps its own error feedback) or none" \
    $MPIRUN -np 3 $WORKER --spec "$TMP/ps.json"
