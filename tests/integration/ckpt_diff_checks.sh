# tests/tools/ckpt_diff, the judge of the equivalence tests, is itself checked: identical
# checkpoints are the same; a NaN or an infinity anywhere (parameters or momentum, in one
# file or in both) is a difference; so is a different step, epoch, position or
# parameter-server version, and a weight difference above the tolerance. The edited copies
# get a correct CRC32, so checkpoint_load accepts them and ckpt_diff must judge.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
DIFF=$BUILD/tools/ckpt_diff
[ -x "$DIFF" ] || fail "$DIFF not built (make)"
cat >"$TMP/spec.json" <<JSON
{"name": "cd", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 640, "test_subset": 100},
 "batch_size": 32, "epochs": 1, "seed": 3, "log_every": 0, "optimizer": {"lr": 0.02, "momentum": 0.9},
 "checkpoint": {"every_steps": 10, "dir": "$TMP/ck"}}
JSON
$WORKER --spec "$TMP/spec.json" --stop-after-steps 10 >/dev/null 2>&1 || fail "training failed"
A=$TMP/ck/cd.ckpt
# patch FILE [OUT WHAT INDEX VALUE]... - copies of FILE, each with one field changed and
# the CRC recomputed (one python3 start for all). WHAT: param, momentum (INDEX into the
# float arrays; VALUE a number, or +D to add D) or a header counter (global_step, epoch,
# step_in_epoch, cursor, ps_version).
patch() {
    python3 - "$@" <<'PY' || fail "cannot patch $1"
import struct, sys, zlib
src = open(sys.argv[1], 'rb').read()
# MODEL_NAME_MAX of checkpoint formats 3 and 4 (4 appends its goodput fields after
# batch_of; header_bytes says where the data starts)
name_max, hdr_start = 64, 16
np_, nb = struct.unpack_from('<QQ', src, hdr_start + name_max)
counters = hdr_start + name_max + 32   # after nparams, nbuffers, spec_hash, layout_hash
fields = {'global_step': 0, 'epoch': 8, 'step_in_epoch': 16, 'cursor': 24, 'ps_version': 72}
data = 16 + struct.unpack_from('<I', src, 12)[0]
args = sys.argv[2:]
for k in range(0, len(args), 4):
    out, what, idx, val = args[k], args[k + 1], int(args[k + 2]), args[k + 3]
    b = bytearray(src)
    if what in fields:
        struct.pack_into('<q', b, counters + fields[what], int(val))
    else:
        at = data + (0 if what == 'param' else 4 * np_) + 4 * idx
        v = struct.unpack_from('<f', b, at)[0] + float(val[1:]) if val.startswith('+') else float(val)
        struct.pack_into('<f', b, at, v)
    struct.pack_into('<I', b, len(b) - 4, zlib.crc32(bytes(b[:-4])) & 0xffffffff)
    open(out, 'wb').write(bytes(b))
PY
}
patch "$A" "$TMP/nan.ckpt" param 123 nan "$TMP/inf.ckpt" momentum 7 inf "$TMP/ninf.ckpt" param 0 -inf \
    "$TMP/global_step.ckpt" global_step 0 5 "$TMP/epoch.ckpt" epoch 0 5 "$TMP/step_in_epoch.ckpt" step_in_epoch 0 5 \
    "$TMP/cursor.ckpt" cursor 0 5 "$TMP/ps_version.ckpt" ps_version 0 5 "$TMP/small.ckpt" param 42 +1e-3
same() { "$DIFF" "$@" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "ckpt_diff $* exited $?, want 0 (same)"; }; }
differ() {
    "$DIFF" "$@" >"$TMP/out" 2>&1
    rc=$?
    [ $rc -eq 1 ] || { cat "$TMP/out"; fail "ckpt_diff $* exited $rc, want 1 (different)"; }
}
same "$A" "$A"
cp "$A" "$TMP/copy.ckpt"
same "$A" "$TMP/copy.ckpt"
echo "ok: a checkpoint is the same as itself and as its copy"

differ "$A" "$TMP/nan.ckpt" 1e9
differ "$TMP/nan.ckpt" "$TMP/nan.ckpt"
differ "$TMP/nan.ckpt" "$TMP/nan.ckpt" 1e9
differ "$A" "$TMP/inf.ckpt" 1e9
differ "$TMP/inf.ckpt" "$TMP/inf.ckpt"
differ "$TMP/ninf.ckpt" "$A"
echo "ok: NaN and +-Inf in parameters or momentum are a difference, even in both files and at any tolerance"

for f in global_step epoch step_in_epoch cursor ps_version; do
    differ "$A" "$TMP/$f.ckpt" 1e9
    grep -q "$f: .* <- DIFFERENT" "$TMP/out" || { cat "$TMP/out"; fail "ckpt_diff did not name $f"; }
done
same --ignore ps_version "$A" "$TMP/ps_version.ckpt"
"$DIFF" --ignore weights "$A" "$A" >/dev/null 2>&1 && fail "--ignore accepted an unknown field"
echo "ok: step, epoch, step_in_epoch, cursor and ps_version must match (--ignore names one to leave out)"

differ "$A" "$TMP/small.ckpt" 1e-5
same "$A" "$TMP/small.ckpt" 1e-2
"$DIFF" "$A" "$A" nan >/dev/null 2>&1 && fail "ckpt_diff accepted the tolerance nan"
echo "ok: a weight difference of 1e-3 fails at tolerance 1e-5 and passes at 1e-2; a NaN tolerance is refused"
