# The worker's GPU path on a stand-in device, next to the CPU path (issue 17).
# tests/fakecuda/backend.c has the CUDA backend's ABI; its "device" is a second host copy of
# the model computed by the CPU reference, and pacer-worker loads it through PACER_CUDA_LIB
# as it would load libpacer_cuda.so (a stand-in libcuda.so.1 lets the driver probe pass).
# On the GPU path the weights, momentum, gradients and batch-norm statistics live on the
# device between steps and move only where an algorithm reads or writes them on the host
# (worker/worker.h): a move the worker misses makes the two paths disagree, and correct
# moves make them identical to the bit (the same code in the same order). Checked:
#   - sgd (momentum, Nesterov, weight decay, clipping: the device optimizer from the
#     device's own gradient), ssgd with unequal batches (the allreduced gradient uploaded),
#     ssgd with adamw, its no-decay groups, clipping and label smoothing (the second moment
#     in the checkpoint),
#     asgd (the parameter server's weights uploaded before every step): the checkpoint
#     (weights, momentum) and the test loss equal the CPU path's;
#   - batch-norm running statistics (resnet20 on CIFAR-10) through local-sgd and hier-bsp in
#     jobs with one CPU and one GPU rank, either way round: rank 0's checkpoint (its
#     weights, momentum and statistics after the last average) and the test loss it
#     evaluates equal the all-CPU job's, so the averaged statistics reach both ranks;
#   - hpsgd on two GPU ranks trains to the end (its merges depend on timing); in one
#     process (a merge every step, no timing; local steps are device SGD steps, merges
#     work on the host) checkpoint and test loss equal the CPU path's. One rank's hpsgd
#     is sgd whichever copy a merge reads, so this shows the paths agree, not that the
#     merge downloads the window first (that matters from two ranks on);
#   - a language model: the built-in GPT on text (the loss over every position of every
#     window, dropout, AdamW) with ssgd on two devices, checkpoint and test loss as on the
#     CPU;
#   - every such summary says which device each rank used;
#   - an imported model (issue 25) with the layers only ONNX graphs have - LeakyRelu,
#     sigmoid, tanh, a concatenation with the image, batch norm with epsilon 1e-3, a dilated
#     depthwise convolution, ceil-mode pooling with pads, dropout, a Gemm with transB 0,
#     alpha 2 and beta 0.5 (tests/tools/onnx_export.py --mnist, mnist_acts.onnx) - trains
#     with sgd on one device and ssgd on two exactly as on the CPU: the device is given the
#     layers (no refusal) and draws the same dropout masks (the job's seed, the rank, the
#     step), so checkpoint and test loss are identical; a device run stopped at step 8 and
#     resumed ends as the uninterrupted CPU run (the resumed masks go on from the
#     checkpoint's step on the device too);
#   - NVML (issue 15): jobs run by a coordinator on the stand-in device, with a stand-in
#     libnvidia-ml.so.1 (tests/fakecuda/libnvidia-ml.c: scripted utilisation and memory,
#     found only by the bus id the stand-in driver gives the rank's device) on the library
#     path and then without it: the nodes endpoint shows the scripted figures for the GPU
#     rank, and without the library none, the job succeeding either way. (The worker runs
#     above have no NVML on their path: an absent library is no error.)
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
FAKE=$PWD/$BUILD/tests/libpacer_fakecuda.so
DRV="LD_LIBRARY_PATH=$PWD/$BUILD/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -f "$FAKE" ] || fail "$FAKE is not built"
GPU="env $DRV PACER_CUDA_LIB=$FAKE"           # a rank on the stand-in device
CPU="env $DRV PACER_FAKE_DEVICES=0"           # a rank whose driver reports no device

# same A B WHAT - two runs' checkpoints and test losses must be identical.
same() {
    cmp -s "$TMP/$1/j.ckpt" "$TMP/$2/j.ckpt" || { $BUILD/tools/ckpt_diff "$TMP/$1/j.ckpt" "$TMP/$2/j.ckpt" 0; fail "$3: the checkpoints differ"; }
    a=$(json "$TMP/$1.json" .test_loss) b=$(json "$TMP/$2.json" .test_loss)
    [ "$a" = "$b" ] || fail "$3: test loss $a on one path, $b on the other"
    echo "ok: $3: identical checkpoints, test loss $a"
}
# used RUN WANT - the summary's devices, rank by rank ("cpu cuda").
used() {
    got=$(json "$TMP/$1.json" '[.per_rank[].device.used] | join(" ")')
    [ "$got" = "$2" ] || fail "$1: ranks used '$got', want '$2'"
}
# on2 NAME WHAT [ARGS...] - $TMP/NAME-cpu.spec on 2 CPU ranks and NAME-gpu.spec on 2 stand-in
# devices (ARGS to pacer-worker on both): the devices used, identical checkpoints and losses.
on2() {
    n=$1 what=$2
    shift 2
    $MPIRUN -np 2 $WORKER --spec "$TMP/$n-cpu.spec" --summary "$TMP/$n-cpu.json" "$@" >"$TMP/out" 2>&1 \
        || { cat "$TMP/out"; fail "$what on the CPU"; }
    $MPIRUN -np 2 $GPU $WORKER --spec "$TMP/$n-gpu.spec" --summary "$TMP/$n-gpu.json" "$@" >"$TMP/out" 2>&1 \
        || { cat "$TMP/out"; fail "$what on two devices"; }
    used "$n-gpu" "cuda cuda"
    same "$n-cpu" "$n-gpu" "$what on two devices"
}
spec() {   # spec NAME DEVICE JSON-FIELDS [CHECKPOINT-EVERY]
    printf '{"name": "j", "model": "lenet5", "device": "%s", "epochs": 1, "log_every": 0, "seed": 5,
      "dataset": {"train_subset": 512, "test_subset": 200}, "checkpoint": {"every_steps": %s, "dir": "%s"}, %s}\n' \
        "$2" "${4:-1000}" "$TMP/$1" "$3" >"$TMP/$1.spec"
}

# ---- sgd: the device optimizer on the device's own gradient --------------------------------
opt='"optimizer": {"lr": 0.05, "momentum": 0.9, "nesterov": true, "weight_decay": 0.0005, "clip_norm": 0.5}'
spec sgd-cpu cpu "$opt"
spec sgd-gpu cuda "$opt"
$WORKER --spec "$TMP/sgd-cpu.spec" --summary "$TMP/sgd-cpu.json" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "sgd on the CPU"; }
$GPU $WORKER --spec "$TMP/sgd-gpu.spec" --summary "$TMP/sgd-gpu.json" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "sgd on the device"; }
grep -q "training on GPU 0 (pacer fake CUDA device" "$TMP/out" || { cat "$TMP/out"; fail "the stand-in device was not used"; }
used sgd-gpu cuda
same sgd-cpu sgd-gpu "sgd, Nesterov and clipping on the device"

# ---- ssgd with unequal batches: the allreduced gradient goes up ----------------------------
opt='"workers": 2, "batch_size": 32, "algorithm": {"name": "ssgd", "max_batch": 64}, "optimizer": {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.0005}'
spec ssgd-cpu cpu "$opt"
spec ssgd-gpu cuda "$opt"
on2 ssgd "ssgd (batches 24 and 40)" --batch-plan 24,40

# ---- adamw (issue 44): the device optimizer's AdamW over the no-decay groups, with clipping,
# and label smoothing in the device loss; the second moment comes down with the checkpoint
opt='"workers": 2, "batch_size": 32, "algorithm": {"name": "ssgd"}, "loss": {"label_smoothing": 0.1}, "optimizer": {"kind": "adamw", "lr": 0.002, "weight_decay": 0.05, "clip_norm": 0.5}'
spec adamw-cpu cpu "$opt" 16
spec adamw-gpu cuda "$opt" 16
on2 adamw "ssgd with adamw, groups, clipping and label smoothing"

# ---- asgd: the parameter server (a CPU rank) sends weights that must go up -----------------
opt='"workers": 1, "batch_size": 32, "algorithm": {"name": "asgd"}, "optimizer": {"lr": 0.05, "momentum": 0.9}'
spec asgd-cpu cpu "$opt" 16     # the parameter server saves at its 16th and last update
spec asgd-gpu auto "$opt" 16
$MPIRUN -np 2 $WORKER --spec "$TMP/asgd-cpu.spec" --summary "$TMP/asgd-cpu.json" --ps-round-robin >"$TMP/out" 2>&1 \
    || { cat "$TMP/out"; fail "asgd on the CPU"; }
$MPIRUN -np 2 $GPU $WORKER --spec "$TMP/asgd-gpu.spec" --summary "$TMP/asgd-gpu.json" --ps-round-robin >"$TMP/out" 2>&1 \
    || { cat "$TMP/out"; fail "asgd with a device worker"; }
used asgd-gpu "cpu cuda"
[ "$(json "$TMP/asgd-gpu.json" .per_rank[0].device.reason)" = "the parameter server computes on the CPU" ] \
    || fail "the parameter server's device: $(json "$TMP/asgd-gpu.json" .per_rank[0].device)"
same asgd-cpu asgd-gpu "asgd with its worker on a device"

# ---- hpsgd on two devices: completes ---------------------------------------------------------
opt='"workers": 2, "batch_size": 32, "algorithm": {"name": "hpsgd"}, "optimizer": {"lr": 0.05, "momentum": 0.9}'
spec hp-gpu cuda "$opt"
$MPIRUN -np 2 $GPU $WORKER --spec "$TMP/hp-gpu.spec" --summary "$TMP/hp-gpu.json" >"$TMP/out" 2>&1 \
    || { cat "$TMP/out"; fail "hpsgd on two devices"; }
used hp-gpu "cuda cuda"
[ "$(json "$TMP/hp-gpu.json" .device.used)" = cuda ] || fail "hpsgd: job device $(json "$TMP/hp-gpu.json" .device)"
echo "ok: hpsgd on two devices, test accuracy $(json "$TMP/hp-gpu.json" .test_accuracy)"

# ---- hpsgd in one process: device SGD steps, the window read on the host at each merge -------
opt='"workers": 1, "batch_size": 32, "algorithm": {"name": "hpsgd"}, "optimizer": {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.0005}'
spec hp1-cpu cpu "$opt"
spec hp1-gpu cuda "$opt"
$WORKER --spec "$TMP/hp1-cpu.spec" --summary "$TMP/hp1-cpu.json" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "hpsgd (one process) on the CPU"; }
$GPU $WORKER --spec "$TMP/hp1-gpu.spec" --summary "$TMP/hp1-gpu.json" >"$TMP/out" 2>&1 \
    || { cat "$TMP/out"; fail "hpsgd (one process) on the device"; }
used hp1-gpu cuda
same hp1-cpu hp1-gpu "hpsgd in one process, local steps on the device"

# ---- a language model: the loss over every position of every window on the device ----------
# The built-in GPT on bytes of Debian's base-files licences (tied embeddings, dropout: the
# device draws the host's masks), ssgd with AdamW and clipping on two devices: labels,
# logits and probabilities are B x block rows, so a device that kept one row per sample
# would train on the first window's positions only and differ at once.
LIC=/usr/share/common-licenses
if [ -r "$LIC/GPL-3" ] && [ -r "$LIC/LGPL-2.1" ]; then
    mkdir -p "$TMP/text"
    cp "$LIC/GPL-3" "$TMP/text/train.txt"
    cp "$LIC/LGPL-2.1" "$TMP/text/val.txt"
    for d in cpu gpu; do
        dev=$d
        [ $d = gpu ] && dev=cuda
        jq -n --arg data "$TMP/text" --arg dir "$TMP/gpt-$d" --arg dev "$dev" \
            '{name: "j", model: {gpt: {layers: 2, heads: 2, embd: 16, block_size: 16, dropout: 0.1}},
              dataset: {format: "text", path: $data, train_subset: 96, test_subset: 24}, device: $dev,
              algorithm: {name: "ssgd"}, workers: 2, batch_size: 8, epochs: 1, seed: 9, log_every: 0,
              optimizer: {kind: "adamw", lr: 0.003, weight_decay: 0.1, clip_norm: 1.0},
              checkpoint: {every_steps: 1000, dir: $dir}}' >"$TMP/gpt-$d.spec"
    done
    on2 gpt "a GPT (loss over 16 positions a window, dropout, AdamW)"
else
    echo "note: $LIC (Debian's base-files) is not here: the GPT's GPU path was not run"
fi

# ---- an imported model with every layer kind only ONNX graphs have ---------------------------
$TORCH_PY tests/tools/onnx_export.py --mnist "$TMP" >"$TMP/export.log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
    echo "note: torch/onnx not importable by /usr/bin/python3: the imported model's GPU path was not run"
else
    [ $rc -eq 0 ] || { cat "$TMP/export.log"; fail "tests/tools/onnx_export.py --mnist exited $rc"; }
    # spec_onnx NAME DEVICE JSON-FIELDS [CHECKPOINT-EVERY]
    spec_onnx() {
        printf '{"name": "j", "model": {"onnx": "%s"}, "device": "%s", "epochs": 1, "log_every": 0, "seed": 7,
          "dataset": {"name": "fashion-mnist", "train_subset": 512, "test_subset": 200},
          "checkpoint": {"every_steps": %s, "dir": "%s"}, %s}\n' "$TMP/mnist_acts.onnx" "$2" "${4:-1000}" "$TMP/$1" "$3" \
            >"$TMP/$1.spec"
    }
    opt='"batch_size": 32, "optimizer": {"lr": 0.01, "momentum": 0.9, "weight_decay": 0.0005}'
    spec_onnx acts-cpu cpu "$opt"
    spec_onnx acts-gpu cuda "$opt"
    $WORKER --spec "$TMP/acts-cpu.spec" --summary "$TMP/acts-cpu.json" >"$TMP/out" 2>&1 ||
        { cat "$TMP/out"; fail "the imported model on the CPU"; }
    $GPU $WORKER --spec "$TMP/acts-gpu.spec" --summary "$TMP/acts-gpu.json" >"$TMP/out" 2>&1 ||
        { cat "$TMP/out"; fail "the imported model on the device"; }
    grep -q "training on GPU 0 (pacer fake CUDA device" "$TMP/out" || { cat "$TMP/out"; fail "the stand-in device was not used"; }
    used acts-gpu cuda
    same acts-cpu acts-gpu "an imported model (LeakyRelu, sigmoid, tanh, concat, dropout, Gemm alpha/beta) on the device"
    spec_onnx acts3-cpu cpu "$opt" 4
    spec_onnx acts3-gpu cuda "$opt" 4
    $WORKER --spec "$TMP/acts3-cpu.spec" --summary "$TMP/acts3-cpu.json" >"$TMP/out" 2>&1 ||
        { cat "$TMP/out"; fail "the imported model on the CPU (checkpoints every 4 steps)"; }
    $GPU $WORKER --spec "$TMP/acts3-gpu.spec" --stop-after-steps 8 >"$TMP/out" 2>&1 ||
        { cat "$TMP/out"; fail "the imported model on the device, stopped at step 8"; }
    $GPU $WORKER --spec "$TMP/acts3-gpu.spec" --resume --summary "$TMP/acts3-gpu.json" >"$TMP/out" 2>&1 ||
        { cat "$TMP/out"; fail "the imported model on the device, resumed"; }
    grep -q "resumed from .* at step 8" "$TMP/out" || { cat "$TMP/out"; fail "did not resume at step 8"; }
    same acts3-cpu acts3-gpu "the imported model stopped at step 8 on the device and resumed"
    opt='"workers": 2, "batch_size": 32, "algorithm": {"name": "ssgd"}, "optimizer": {"lr": 0.01, "momentum": 0.9}'
    spec_onnx acts2-cpu cpu "$opt"
    spec_onnx acts2-gpu cuda "$opt"
    $MPIRUN -np 2 $WORKER --spec "$TMP/acts2-cpu.spec" --summary "$TMP/acts2-cpu.json" >"$TMP/out" 2>&1 ||
        { cat "$TMP/out"; fail "ssgd on the imported model on the CPU"; }
    $MPIRUN -np 2 $GPU $WORKER --spec "$TMP/acts2-gpu.spec" --summary "$TMP/acts2-gpu.json" >"$TMP/out" 2>&1 ||
        { cat "$TMP/out"; fail "ssgd on the imported model on two devices"; }
    used acts2-gpu "cuda cuda"
    same acts2-cpu acts2-gpu "ssgd on the imported model, each rank its own dropout masks, on two devices"
fi

# ---- NVML: the GPU rank's utilisation and memory in the nodes endpoint ------------------------
command -v curl >/dev/null || skip "curl not installed (make deps)"
mkdir -p "$TMP/nvml"
ln -s "$PWD/$BUILD/tests/fakenvml/libnvidia-ml.so.1" "$TMP/nvml/libnvidia-ml.so.1"
env LD_LIBRARY_PATH="$TMP/nvml:$PWD/$BUILD/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PACER_CUDA_LIB=$FAKE \
    PACER_FAKE_NVML_UTIL=37 PACER_FAKE_NVML_MEM_USED=1234 PACER_FAKE_NVML_MEM_TOTAL=16384 sh -c '
    exec "$0" --state-dir "$1" --listen 127.0.0.1:0 >>"$2" 2>&1' "$COORD" "$STATE" "$TMP/coord.log" &
COORD_PID=$!
await 20 "the coordinator to come up" coord_alive
BASE=$(grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')
printf '{"name": "nv", "model": "mlp", "device": "cuda", "epochs": 1, "log_every": 0, "batch_size": 32,
  "dataset": {"name": "fashion-mnist", "train_subset": 256, "test_subset": 100}}\n' >"$TMP/nv.json"
# gpu_fields ID - the nodes endpoint's GPU figures of rank 0, "util used total" (null when absent).
gpu_fields() { curl -sf "$BASE/api/v1/jobs/$1/nodes" | jq -r '.ranks[0] | "\(.gpu_util_pct) \(.gpu_mem_used_bytes) \(.gpu_mem_total_bytes)"'; }
id=$(cli submit "$TMP/nv.json") || fail "submit"
cli wait "$id" --timeout 120 >/dev/null || { cat "$STATE/jobs/$id/log"; fail "the NVML job $id did not succeed"; }
grep -q "training on GPU 0 (pacer fake CUDA device" "$STATE/jobs/$id/log" || { cat "$STATE/jobs/$id/log"; fail "$id: not on the stand-in device"; }
got=$(gpu_fields "$id")
[ "$got" = "37 $((1234 << 20)) $((16384 << 20))" ] || { curl -s "$BASE/api/v1/jobs/$id/nodes"; fail "nodes of $id: GPU figures '$got'"; }
rm "$TMP/nvml/libnvidia-ml.so.1"   # the next job's worker finds no NVML
id2=$(cli submit "$TMP/nv.json") || fail "submit"
cli wait "$id2" --timeout 120 >/dev/null || { cat "$STATE/jobs/$id2/log"; fail "job $id2 without NVML did not succeed"; }
[ "$(gpu_fields "$id2")" = "null null null" ] || fail "nodes of $id2 without NVML: GPU figures '$(gpu_fields "$id2")'"
! grep -qi "nvml\|libnvidia-ml" "$STATE/jobs/$id2/log" || { cat "$STATE/jobs/$id2/log"; fail "$id2: the absent NVML was reported"; }
stop_coord
echo "ok: NVML: the GPU rank's utilisation 37 % and memory 1234 / 16384 MiB in the nodes endpoint; without the library none, and no error"

# ---- batch-norm statistics in mixed jobs -----------------------------------------------------
if [ ! -d "$PACER_SHARED/datasets/cifar-10" ]; then
    echo "note: CIFAR-10 not found at $PACER_SHARED/datasets/cifar-10: the batch-norm checks did not run"
    exit 0
fi
bnspec() {   # bnspec NAME DEVICE ALGORITHM
    printf '{"name": "j", "model": "resnet20", "device": "%s", "epochs": 1, "log_every": 0, "seed": 7, "workers": 2,
      "batch_size": 16, "algorithm": %s, "optimizer": {"lr": 0.05, "momentum": 0.9},
      "dataset": {"name": "cifar10", "path": "%s", "train_subset": 64, "test_subset": 32},
      "checkpoint": {"every_steps": 1000, "dir": "%s"}}\n' "$2" "$3" "$PACER_SHARED/datasets/cifar-10" "$TMP/$1" >"$TMP/$1.spec"
}
for algo in '{"name": "local-sgd", "local_steps": 2}' '{"name": "hier-bsp", "group_size": 1, "k_steps": 2}'; do
    alg=$(echo "$algo" | sed 's/.*"name": "\([a-z-]*\)".*/\1/')
    bnspec "$alg-cc" cpu "$algo"
    bnspec "$alg-cg" auto "$algo"
    bnspec "$alg-gc" auto "$algo"
    $MPIRUN -np 2 $WORKER --spec "$TMP/$alg-cc.spec" --summary "$TMP/$alg-cc.json" >"$TMP/out" 2>&1 \
        || { cat "$TMP/out"; fail "$alg on two CPU ranks"; }
    $MPIRUN -np 1 $CPU $WORKER --spec "$TMP/$alg-cg.spec" --summary "$TMP/$alg-cg.json" : \
            -np 1 $GPU $WORKER --spec "$TMP/$alg-cg.spec" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "$alg, CPU + GPU"; }
    used "$alg-cg" "cpu cuda"
    [ "$(json "$TMP/$alg-cg.json" .device.used)" = mixed ] || fail "$alg: job device $(json "$TMP/$alg-cg.json" .device)"
    same "$alg-cc" "$alg-cg" "$alg, rank 0 on the CPU and rank 1 on a device"
    $MPIRUN -np 1 $GPU $WORKER --spec "$TMP/$alg-gc.spec" --summary "$TMP/$alg-gc.json" : \
            -np 1 $CPU $WORKER --spec "$TMP/$alg-gc.spec" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "$alg, GPU + CPU"; }
    used "$alg-gc" "cuda cpu"
    same "$alg-cc" "$alg-gc" "$alg, rank 0 on a device and rank 1 on the CPU"
done
