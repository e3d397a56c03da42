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
#   4. Checkpoints: each worker writes its error feedback beside the parameter server's
#      checkpoint (CKPT.ef<index>, worker/checkpoint.h) for that checkpoint's version; a
#      run stopped at update 40 (checkpoints every 20) and resumed restores exactly what
#      was saved (the sum of |e| the worker reports equals the file's, both workers, not
#      zero). Not "bit for bit against an uninterrupted run": asgd's stop drops the pushes
#      in flight (their ranges are lost on resume), so no resume of the family continues
#      exactly, with or without compression. A whole file of another version is named
#      and the errors start at zero; a damaged one (truncated, a NaN or huge element, a
#      wrong CRC) is refused by name and the run stops, non-zero, instead of training on.
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
run3() { # NAME ARGS... (the spec: $SPEC, else $TMP/NAME.json)
    n=$1
    shift
    $MPIRUN -np 3 $WORKER --spec "${SPEC:-$TMP/$n.json}" --ps-round-robin "$@" >"$TMP/$n.log" 2>&1 ||
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

# 4. The workers' error feedback across a resume.
cat >"$TMP/ck.json" <<JSON
{"name": "ck", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 12800, "test_subset": 1000},
 "algorithm": {"name": "asgd", "compression": {"kind": "bf16"}}, "workers": 2, "batch_size": 32, "epochs": 1, "seed": 5,
 "log_every": 0, "optimizer": {"lr": 0.04, "momentum": 0.5, "async_momentum": "explicit"},
 "checkpoint": {"dir": "$TMP/ck", "every_steps": 20}}
JSON
run3 ck --stop-after-steps 40
cp -r "$TMP/ck" "$TMP/ck.saved"
# sum |e| of a saved file, summed in order in double as the worker does; its header and
# trailing CRC32 checked
efsum() { # FILE INDEX
    python3 - "$1" "$2" <<'PY' || fail "$1 is not worker $2's error feedback of version 40"
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"PACEREF2", b[:8]
assert struct.unpack("<qiiQ", b[8:32]) == (40, 2, int(sys.argv[2]), 61706), struct.unpack("<qiiQ", b[8:32])
assert len(b) == 32 + 4 * 61706 + 4, len(b)
assert struct.unpack("<I", b[-4:])[0] == zlib.crc32(b[:-4]) & 0xffffffff, "CRC32"
s = 0.0
for (x,) in struct.iter_unpack("<f", b[32:-4]):
    s += abs(x)
assert s > 0, "all zero"
print("%.9g" % s)
PY
}
SPEC=$TMP/ck.json run3 ck2 --resume
for i in 0 1; do
    sum=$(efsum "$TMP/ck.saved/ck.ckpt.ef$i" $i)
    grep -q "rank $((i + 1)): bf16 error feedback of version 40 restored from .*ck.ckpt.ef$i (sum |e| $sum)" \
        "$TMP/ck2.log" || { cat "$TMP/ck2.log"; fail "worker $i did not restore its saved error feedback (sum $sum)"; }
done
echo "ok: both workers wrote their error feedback at update 40 and the resume restored it exactly"
# A whole file of another version (its CRC right): named, the errors start at zero.
rm -rf "$TMP/ck"
cp -r "$TMP/ck.saved" "$TMP/ck"
python3 - "$TMP/ck/ck.ckpt.ef0" <<'PY'
import struct, sys, zlib
b = bytearray(open(sys.argv[1], "rb").read())
b[8:16] = struct.pack("<q", 41)
b[-4:] = struct.pack("<I", zlib.crc32(bytes(b[:-4])) & 0xffffffff)
open(sys.argv[1], "wb").write(b)
PY
SPEC=$TMP/ck.json run3 ck3 --resume
grep -q "rank 1: bf16 error feedback starts at zero: .*ck.ckpt.ef0: the error feedback of version 41, worker 0 of 2, not of this checkpoint's version 40, worker 0 of 2" "$TMP/ck3.log" ||
    { cat "$TMP/ck3.log"; fail "a side file of another version was not named"; }
echo "ok: a side file of another version is named; the errors start at zero"
# damaged INDEX EDIT REASON - the saved files, worker INDEX's damaged by EDIT (a command
# on $f): the resume stops, non-zero, the worker naming the file and REASON.
damaged() {
    rm -rf "$TMP/ck"
    cp -r "$TMP/ck.saved" "$TMP/ck"
    f=$TMP/ck/ck.ckpt.ef$1
    eval "$2" || fail "cannot damage $f"
    $MPIRUN -np 3 $WORKER --spec "$TMP/ck.json" --ps-round-robin --resume >"$TMP/dmg.log" 2>&1 &&
        { cat "$TMP/dmg.log"; fail "resumed on a damaged side file ($2)"; }
    grep -qF "rank $(($1 + 1)): refusing to resume on a damaged error-feedback file: $f: $3" "$TMP/dmg.log" ||
        { cat "$TMP/dmg.log"; fail "the damaged side file ($2) was not refused by name: $3"; }
    echo "ok: worker $1's side file damaged ($2): the run stopped: $(grep -o "ck.ckpt.ef$1: .*" "$TMP/dmg.log" | head -1)"
}
damaged 1 'head -c 1000 "$TMP/ck.saved/ck.ckpt.ef1" >"$f"' \
    "1000 bytes, where this model's error feedback of 61706 floats takes 246860 (truncated or damaged)"
damaged 0 '$BUILD/tools/ckpt_patch "$f" "ef[3]" nan' "the error feedback's element 3 is nan, want finite"
damaged 1 '$BUILD/tools/ckpt_patch "$f" "ef[7]" 1e30' "the error feedback's element 7 is 1e+30"
# one bit of a float flipped, the CRC left as it was
damaged 0 'python3 -c "import sys; b = bytearray(open(sys.argv[1], \"rb\").read()); b[100] ^= 1; open(sys.argv[1], \"wb\").write(b)" "$f"' \
    "the error feedback is corrupt (CRC32 "
