# bench/gpu_first_run.sh - pacer's first run on a GPU machine, in a few minutes, written to a
# report file. From the repository root, after `make` (its "pacer build:" line must say
# "CUDA backend yes (sm_80 ... + PTX compute_90)") and `make deps`:
#
#   sh bench/gpu_first_run.sh                # report: build/bench/gpu-first-run.md
#   RUNS=5 OUT=/tmp/r.md PYTHON=~/venv/bin/python sh bench/gpu_first_run.sh
#
# PYTHON (default python3) must have a CUDA build of torch for the PyTorch column (Debian's
# python3-torch has none; the report then says "skip").
# Steps, each with its output in the report verbatim:
#   1. the machine: nvidia-smi; pacer-worker --version (the CUDA runtime the backend was built
#      with, the driver that needs, the driver found);
#   2. parity: PACER_REQUIRE_GPU=1 build/tests/test_cuda_parity (fails, with the reason, when
#      CUDA is not usable; every tensor's max_abs and max_rel; with PACER_GPU_ZOO, the
#      networks bench/gpu_zoo_export.py exports, when this machine's Python can);
#   3. throughput at batch 256, LeNet-5 and ResNet-20: build/bench/gpu_bench (the worker's
#      step) and bench/torch_gpu_bench.py (PyTorch, same networks and optimizer, TF32 off)
#      alternating, RUNS times each (default 3): median, min and max of step_ms;
#   4. a mixed job: rank 0 on GPU 0, rank 1 on the CPU (CUDA_VISIBLE_DEVICES empty: device
#      auto falls back and says why), ssgd with dynamic batching, LeNet-5 on Fashion-MNIST;
#      the summary's devices, final batches and speeds;
#   5. hpsgd on two ranks sharing GPU 0: its closing "hpsgd: ... in MPI ..., of which
#      waiting in MPI_Wait ..." line, which shows whether the nonblocking allreduce moved
#      while the GPU computed (little waiting).
# Exits 1 when the parity test fails or a step cannot run (the report says which).
. bench/lib.sh
RUNS=${RUNS:-3}
OUT=${OUT:-$BUILD/bench/gpu-first-run.md}
: >"$OUT"
status=0
note() { md "$*"; }
block() {   # block TITLE CMD... - runs CMD, puts its output in the report as a code block
    title=$1
    shift
    md ""
    md "### $title"
    md ""
    md '```'
    md "\$ $*"
    "$@" >"$TMP/block.out" 2>&1
    rc=$?
    tee -a "$OUT" <"$TMP/block.out"
    md '```'
    [ $rc = 0 ] || md "(exit status $rc)"
    return $rc
}

md "# pacer: first run on a GPU ($(hostname), $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
block "Machine" nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || true
block "pacer-worker --version" "$WORKER" --version || status=1

# ---- 2. parity -------------------------------------------------------------------------------
# The zoo case imports what bench/gpu_zoo_export.py writes (torch, torchvision and onnx of
# any version that exports; Debian's work); without them the case says it checked nothing.
ZOO=""
if "${PYTHON:-python3}" bench/gpu_zoo_export.py "$TMP/zoo" >"$TMP/zoo.log" 2>&1; then ZOO=$TMP/zoo; fi
note ""
note "The zoo for the parity's imported networks: $([ -n "$ZOO" ] && echo exported || echo "not exported: $(tail -1 "$TMP/zoo.log")")"
if block "Parity with the CPU reference (PACER_REQUIRE_GPU=1)" env PACER_REQUIRE_GPU=1 PACER_GPU_ZOO="$ZOO" "$BUILD/tests/test_cuda_parity"; then
    note ""
    note "Parity: passed. $(grep '^largest max_rel' "$TMP/block.out")"
else
    status=1
    note ""
    note "Parity: **FAILED**: $(grep -m1 -E '^FAIL|FAIL' "$TMP/block.out")"
fi

# ---- 3. throughput beside PyTorch -----------------------------------------------------------
: >"$TMP/bench.all"
for i in $(seq "$RUNS"); do
    env PACER_REQUIRE_GPU=1 "$BUILD/bench/gpu_bench" --batch 256 --steps 50 lenet5 resnet20 >>"$TMP/bench.all" 2>&1 || status=1
    "${PYTHON:-python3}" bench/torch_gpu_bench.py --batch 256 --steps 50 lenet5 resnet20 >>"$TMP/bench.all" 2>&1 || true
done
md ""
md "### Throughput, batch 256 ($RUNS runs each, alternating)"
md ""
md '```'
tee -a "$OUT" <"$TMP/bench.all"
md '```'
md ""
md "| model | who | step ms: median (min - max) | samples/s (median) |"
md "|---|---|---|---|"
stat() {   # stat PATTERN - step_ms of matching lines: median (min - max) | samples/s median
    grep -E "$1" "$TMP/bench.all" | sed -n 's/.*step_ms=\([0-9.]*\).*/\1/p' >"$TMP/ms"
    [ -s "$TMP/ms" ] || { echo "not measured | -"; return; }
    med=$(median <"$TMP/ms")
    printf '%s (%s - %s) | %s\n' "$med" "$(sort -g "$TMP/ms" | head -1)" "$(sort -g "$TMP/ms" | tail -1)" \
        "$(awk -v m="$med" 'BEGIN { printf "%.0f", 256 / (m / 1000) }')"
}
for m in lenet5 resnet20; do
    md "| $m | pacer, worker step (path=local) | $(stat "^gpu_bench model=$m .*path=local")"
    md "| $m | pacer, after an allreduce (path=exchange) | $(stat "^gpu_bench model=$m .*path=exchange")"
    md "| $m | PyTorch | $(stat "^torch_bench model=$m ")"
done
md ""
md "Batch-size change outside the step (cuda_model_prepare_batch, new size / seen size): $(grep 'replan_ms' "$TMP/bench.all" | sed 's/gpu_bench //' | sort -u | tr '\n' ';')"

# ---- 4. a mixed CPU + GPU job with dynamic batching -----------------------------------------
cat >"$TMP/mixed.json" <<JSON
{"name": "mixed", "model": "lenet5", "device": "auto", "workers": 2, "batch_size": 128, "epochs": 2, "log_every": 20,
 "algorithm": {"name": "ssgd", "dynamic_batch": true, "replan_steps": 10, "max_batch": 256},
 "dataset": {"name": "fashion-mnist", "train_subset": 20000}, "optimizer": {"lr": 0.05, "momentum": 0.9}}
JSON
if block "Mixed job: rank 0 on GPU 0, rank 1 on the CPU, ssgd with dynamic batching" \
    $MPIRUN -np 1 env CUDA_VISIBLE_DEVICES=0 "$WORKER" --spec "$TMP/mixed.json" --summary "$TMP/mixed-s.json" : \
            -np 1 env CUDA_VISIBLE_DEVICES= "$WORKER" --spec "$TMP/mixed.json"; then
    md ""
    md '```'
    jq -c '{device, test_accuracy, train_samples_per_s, per_rank: [.per_rank[] | {rank, device: .device.used, batch_final, samples_per_s, compute_s, idle_s}]}' \
        "$TMP/mixed-s.json" | tee -a "$OUT"
    md '```'
else
    status=1
fi

# ---- 5. hpsgd: the allreduce moves while the GPU computes -----------------------------------
cat >"$TMP/hp.json" <<JSON
{"name": "hp", "model": "resnet20", "device": "cuda", "workers": 2, "batch_size": 128, "epochs": 1, "log_every": 0,
 "algorithm": {"name": "hpsgd"}, "dataset": {"name": "cifar10", "path": "$PACER_SHARED/datasets/cifar-10", "train_subset": 10240, "test_subset": 1000}}
JSON
if [ -d "$PACER_SHARED/datasets/cifar-10" ]; then
    block "hpsgd, two ranks on GPU 0, ResNet-20" $MPIRUN -np 2 "$WORKER" --spec "$TMP/hp.json" || status=1
else
    note ""
    note "hpsgd: CIFAR-10 not found at $PACER_SHARED/datasets/cifar-10 (set PACER_SHARED); not run."
fi

md ""
md "Report: $OUT (status $status)."
exit $status
