# freeze: a built-in GPT (2 blocks, width 32) trained 2 epochs on 2 ranks (ssgd, AdamW with
# weight decay 0.1, clip_norm 1) with "freeze": ["transformer.h.0.*", "transformer.wpe.weight"]:
# every tensor those globs match is bit for bit its initial value after training (the
# initial and the trained weights, --export-onnx-init and --export-safetensors, compared by
# tests/tools/st_torch.py's reader and onnx's), every other one has moved, and the summary's
# frozen_parameters is the matched tensors' size, with trainable_parameters the rest. The
# frozen tensors are in no all-reduce: the summary's comm_bytes_per_step is the trainable
# floats' and the 4 extras' bytes, the frozen ones' 4 bytes a float fewer than the whole
# model's (bf16 compression: 2 bytes a trainable float, the extras in fp32; hier-bsp: its
# broadcasts of the weights every k_steps send the trainable ones only). local-sgd
# (an average every 3 steps, of weights 12 samples a rank: not exact in floats) leaves
# them bit for bit too, and so do hpsgd (a round every 3 local steps, --hpsgd-round-steps:
# each round sends the trainable floats of the window and its 2 extras, the summary's
# comm_bytes_per_step rounds x that over the steps, the round count from its log line) and
# asgd (the parameter server and 2 workers: a push is its 32-byte header and the trainable
# gradient, fp32 or bf16 words, no frozen float) and the sharded optimizer (stage 2: its
# reduce-scatter takes the trainable floats, and it ends with ssgd's weights bit for bit),
# and so does the GPU path's optimizer
# (tests/fakecuda's stand-in device, sgd from the device's own gradient). A run stopped at
# step 12 and resumed ends with the checkpoint of the uninterrupted run, bit for bit. A
# glob that matches no parameter is refused by name.
. tests/lib.sh
TEXT=/usr/share/common-licenses/GPL-3
[ -r "$TEXT" ] || skip "$TEXT (Debian's base-files) is not here"
$TORCH_PY -c "import onnx" 2>/dev/null || skip "onnx not importable by /usr/bin/python3"
mkdir -p "$TMP/text"
head -c 2000 "$TEXT" >"$TMP/text/train.txt"
head -c 600 "$TEXT" >"$TMP/text/val.txt"
jq -n --arg data "$TMP/text" \
    '{name: "frozen", model: {gpt: {layers: 2, heads: 2, embd: 32, block_size: 16}},
      dataset: {format: "text", path: $data}, algorithm: {name: "ssgd"}, workers: 2, batch_size: 4,
      epochs: 2, seed: 7, device: "cpu", log_every: 0,
      optimizer: {kind: "adamw", lr: 0.003, weight_decay: 0.1, clip_norm: 1},
      freeze: ["transformer.h.0.*", "transformer.wpe.weight"]}' >"$TMP/frozen.json"
# run NAME SPEC [ARGS...]: $np ranks (2 unless set), the initial and trained weights and
# the summary kept as NAME's
run() {
    name=$1 file=$2
    shift 2
    $MPIRUN -np "${np:-2}" $WORKER --spec "$file" --summary "$TMP/$name.summary.json" \
        --export-onnx-init "$TMP/$name.init.onnx" --export-safetensors "$TMP/$name.trained.safetensors" "$@" \
        >"$TMP/$name.log" 2>&1 ||
        { tail -20 "$TMP/$name.log"; fail "mpirun -np ${np:-2} pacer-worker ($name, frozen tensors) failed"; }
}
# check NAME: the frozen tensors of NAME's run bit for bit, the others moved, the counts
check() {
    $TORCH_PY - "$TMP/$1.init.onnx" "$TMP/$1.trained.safetensors" "$TMP/$1.summary.json" <<'PY' ||
import fnmatch, json, sys
import numpy as np
import onnx
from onnx import numpy_helper
sys.path.insert(0, "tests/tools")
import st_torch
init = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[1]).graph.initializer}
trained, _ = st_torch.read(sys.argv[2])
summary = json.load(open(sys.argv[3]))
globs = ["transformer.h.0.*", "transformer.wpe.weight"]
frozen = moved = bad = 0
for name, a in trained.items():
    same = np.array_equal(init[name].view(np.uint32), a.view(np.uint32))
    if any(fnmatch.fnmatchcase(name, g) for g in globs):
        frozen += a.size
        if not same:
            print("freeze: %s moved" % name)
            bad += 1
    else:
        moved += a.size
        if same:
            print("freeze: %s did not move, and is not frozen" % name)
            bad += 1
want = [moved, frozen]
got = [summary.get("trainable_parameters"), summary.get("frozen_parameters")]
if got != want:
    print("freeze: summary trainable and frozen %s, want %s" % (got, want))
    bad += 1
print("freeze: %d frozen floats bit for bit their initial values, %d trained ones moved%s" %
      (frozen, moved, "" if not bad else "; %d problems" % bad))
sys.exit(1 if bad else 0)
PY
        fail "$1: frozen tensors moved, or the counts are wrong (above)"
}
# bytes NAME WANT: the summary's comm_bytes_per_step
bytes() {
    got=$(jq -r .comm_bytes_per_step "$TMP/$1.summary.json")
    [ "$got" = "$2" ] || fail "$1: comm_bytes_per_step $got, want $2 (the trainable floats' and the extras')"
}
run ssgd "$TMP/frozen.json"
check ssgd
echo "ok: frozen tensors unchanged after training on 2 ranks (AdamW, weight decay, clipping); the others moved"
trainable=$(jq .trainable_parameters "$TMP/ssgd.summary.json") frozen=$(jq .frozen_parameters "$TMP/ssgd.summary.json")
bytes ssgd $(((trainable + 4) * 4))
echo "ok: ssgd all-reduces $(((trainable + 4) * 4)) bytes a step, the whole model's $(((trainable + frozen + 4) * 4)) less the $frozen frozen floats'"
jq '.algorithm.compression = {kind: "bf16"} | .epochs = 1' "$TMP/frozen.json" >"$TMP/bf16.json"
run bf16 "$TMP/bf16.json"
check bf16
bytes bf16 $((trainable * 2 + 16))
echo "ok: bf16 compression sends $((trainable * 2 + 16)) bytes a step, no frozen float's"
jq '.algorithm = {name: "local-sgd", local_steps: 3}' "$TMP/frozen.json" >"$TMP/local.json"
run local "$TMP/local.json"
check local
echo "ok: local-sgd's averages leave the frozen tensors bit for bit"
# hier-bsp, one group of 2: the step's all-reduce and, every 5 steps, the broadcast of the
# trainable weights (30 steps, no buffers)
jq '.algorithm = {name: "hier-bsp", group_size: 2, k_steps: 5}' "$TMP/frozen.json" >"$TMP/hier.json"
run hier "$TMP/hier.json"
check hier
bytes hier $(((trainable + 4) * 4 + trainable * 4 / 5))
echo "ok: hier-bsp sends $(((trainable + 4) * 4 + trainable * 4 / 5)) bytes a step, no frozen float's"
# hpsgd, a round every 3 local steps: each round the trainable floats and 2 extras
jq '.algorithm = {name: "hpsgd"}' "$TMP/frozen.json" >"$TMP/hpsgd.json"
run hpsgd "$TMP/hpsgd.json" --hpsgd-round-steps 3
check hpsgd
set -- $(sed -n 's/^hpsgd: \([0-9]*\) merges in \([0-9]*\) steps.*/\1 \2/p' "$TMP/hpsgd.log")
[ $# = 2 ] || { tail -5 "$TMP/hpsgd.log"; fail "hpsgd: no 'merges in steps' line in its log"; }
jq -e --argjson r "$1" --argjson s "$2" --argjson t "$trainable" \
    '.comm_bytes_per_step == ($t + 2) * 4 * $r / $s' "$TMP/hpsgd.summary.json" >/dev/null ||
    fail "hpsgd: comm_bytes_per_step $(jq .comm_bytes_per_step "$TMP/hpsgd.summary.json"), want" \
        "($trainable + 2) x 4 x $1 rounds / $2 steps"
echo "ok: hpsgd's $1 rounds in $2 steps send $(((trainable + 2) * 4)) bytes each, no frozen float's"
# asgd: the parameter server and 2 workers; a push is its header (32 bytes) and the
# trainable gradient, in fp32 or bf16 words
np=3
jq '.algorithm = {name: "asgd"}' "$TMP/frozen.json" >"$TMP/asgd.json"
run asgd "$TMP/asgd.json" --ps-round-robin
check asgd
bytes asgd $((32 + trainable * 4))
jq '.algorithm = {name: "asgd", compression: {kind: "bf16"}} | .epochs = 1' "$TMP/frozen.json" >"$TMP/asgd16.json"
run asgd16 "$TMP/asgd16.json" --ps-round-robin
check asgd16
bytes asgd16 $((32 + trainable * 2))
jq -e --argjson c $((32 + trainable * 2)) --argjson p $((32 + trainable * 4)) \
    '.compression.compressed_bytes_per_step == $c and .compression.plain_bytes_per_step == $p' \
    "$TMP/asgd16.summary.json" >/dev/null ||
    fail "asgd bf16: the summary's compression object $(jq -c .compression "$TMP/asgd16.summary.json") does not count the trainable push"
# asgd with one worker (pushes applied as they come, the reply the updated weights) is
# sgd on one rank: the replies carry the trainable weights only (the worker's receive is
# sized for them: a reply of every weight is refused by MPI as truncated), unpacked into
# place, and the run ends with sgd's weights bit for bit
jq '.algorithm = {name: "asgd"} | .workers = 1' "$TMP/frozen.json" >"$TMP/asgd1.json"
np=2 run asgd1 "$TMP/asgd1.json" --ps-round-robin
jq '.algorithm = {name: "sgd"} | .workers = 1' "$TMP/frozen.json" >"$TMP/sgd1.json"
np=1 run sgd1 "$TMP/sgd1.json"
check asgd1
cmp "$TMP/sgd1.trained.safetensors" "$TMP/asgd1.trained.safetensors" >/dev/null ||
    fail "asgd with one worker and frozen tensors does not end with sgd's weights (the replies' weights)"
np=2
echo "ok: asgd pushes $((32 + trainable * 4)) bytes ($((32 + trainable * 2)) in bf16), no frozen float's; its replies carry the trainable weights (one worker ends with sgd's)"
# the sharded optimizer (stage 2; PACER_SHARD_CHUNK 64: a piece takes several rounds): its
# reduce-scatter takes the trainable floats only, the frozen tensors bit for bit
jq '.algorithm.shard = {stage: 2}' "$TMP/frozen.json" >"$TMP/shard.json"
PACER_SHARD_CHUNK=64 run shard "$TMP/shard.json"
check shard
bytes shard $(((trainable + 4) * 4))
cmp "$TMP/ssgd.trained.safetensors" "$TMP/shard.trained.safetensors" >/dev/null ||
    fail "the sharded optimizer's weights differ from ssgd's (2 ranks: the same sums)"
# its all-gather of the updated weights: the trainable floats only (packed); the weights
# above, equal to ssgd's on rank 0, show each rank's range came back into place
g=$(jq '.shard.gathered_floats_per_step' "$TMP/shard.summary.json")
[ "$g" = "$trainable" ] || fail "the sharded optimizer's all-gather moves $g floats a step, not the $trainable trainable ones"
echo "ok: the sharded optimizer's reduce-scatter takes $(((trainable + 4) * 4)) bytes a step and its all-gather $trainable floats, no frozen float's"

# the GPU path on the stand-in device (tests/fakecuda: the CPU reference on a second host
# copy, loaded as libpacer_cuda.so is): its optimizer, from the device's own gradient
# (sgd), leaves the frozen tensors out too (it is given them frozen)
FAKE=$PWD/$BUILD/tests/libpacer_fakecuda.so
[ -f "$FAKE" ] || fail "$FAKE is not built"
jq '.device = "cuda" | .workers = 1 | .algorithm = {name: "sgd"}' "$TMP/frozen.json" >"$TMP/gpu.json"
env LD_LIBRARY_PATH="$PWD/$BUILD/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PACER_CUDA_LIB="$FAKE" \
    $WORKER --spec "$TMP/gpu.json" --summary "$TMP/gpu.summary.json" --export-onnx-init "$TMP/gpu.init.onnx" \
    --export-safetensors "$TMP/gpu.trained.safetensors" >"$TMP/gpu.log" 2>&1 ||
    { tail -20 "$TMP/gpu.log"; fail "pacer-worker on the stand-in device (frozen tensors) failed"; }
[ "$(jq -r '.per_rank[0].device.used' "$TMP/gpu.summary.json")" = cuda ] || fail "the stand-in device was not used"
check gpu
echo "ok: on the (stand-in) GPU path the frozen tensors stay bit for bit"

# a frozen job's checkpoint resumes bit for bit
jq --arg d "$TMP/a" '.checkpoint = {every_steps: 4, dir: $d}' "$TMP/frozen.json" >"$TMP/a.json"
jq --arg d "$TMP/b" '.checkpoint = {every_steps: 4, dir: $d}' "$TMP/frozen.json" >"$TMP/b.json"
$MPIRUN -np 2 $WORKER --spec "$TMP/a.json" >"$TMP/a.log" 2>&1 || { tail -5 "$TMP/a.log"; fail "run a failed"; }
$MPIRUN -np 2 $WORKER --spec "$TMP/b.json" --stop-after-steps 12 >"$TMP/b.log" 2>&1 ||
    { tail -5 "$TMP/b.log"; fail "interrupted run failed"; }
$MPIRUN -np 2 $WORKER --spec "$TMP/b.json" --resume >"$TMP/b2.log" 2>&1 || { tail -5 "$TMP/b2.log"; fail "resume failed"; }
grep -q "resumed from .* at step 12" "$TMP/b2.log" || { tail -5 "$TMP/b2.log"; fail "did not resume at step 12"; }
cmp "$TMP/a/frozen.ckpt" "$TMP/b/frozen.ckpt" || fail "the resumed frozen run differs from the uninterrupted one"
echo "ok: a frozen job stopped at step 12 and resumed == the uninterrupted run, bit for bit"
jq '.freeze = ["transformer.h.9.*"] | .workers = 1' "$TMP/frozen.json" >"$TMP/none.json"
$WORKER --spec "$TMP/none.json" >"$TMP/none.log" 2>&1 && fail "a glob matching no tensor was taken"
grep -q "freeze: 'transformer.h.9.\*' matches no parameter tensor of the model" "$TMP/none.log" ||
    { tail -3 "$TMP/none.log"; fail "a glob matching no tensor: not refused by name"; }
jq '.freeze = "transformer.*"' "$TMP/frozen.json" >"$TMP/str.json"
$WORKER --spec "$TMP/str.json" >"$TMP/str.log" 2>&1 && fail "freeze as a string was taken"
grep -q "freeze: must be an array of globs" "$TMP/str.log" || { tail -3 "$TMP/str.log"; fail "freeze as a string: message"; }
echo "ok: a glob matching no tensor, and freeze not an array, are refused by name"
