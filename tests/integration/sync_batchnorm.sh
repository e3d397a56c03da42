# The held-out modern CNN (tests/tools/heldout_cnn.py: ReLU6, hard-swish, squeeze-excitation,
# SiLU, a channel shuffle, batch norms at ONNX momentum 0.99) trained by pacer-worker, each
# step against torch's float64 step on the same batch (heldout_cnn.py --check, one global
# batch of 16 per epoch in build/tools/epoch_order's order, SGD with weight decay): after
# each of the first STEPS steps, the parameters' updates and the running statistics of the
# exported model (--export-onnx after --stop-after-steps k) against torch's, within twice
# torch's own float32 error of the same step plus what an input within float32's reach of a
# ReLU's, ReLU6's or hard-swish's kink changes by taking the other side's derivative (the
# analysis is in heldout_cnn.py). Without momentum torch takes step k from pacer's own
# state after step k - 1; with momentum 0.9 (its buffer is in no file) torch takes steps 1
# to k from the starting weights. Configurations:
#   one     one process, batch 16                      torch: the batch of 16
#   ranks   ssgd on 2 ranks of 8                       torch: each half normalised by its own
#                                                      statistics (DDP without SyncBatchNorm)
#   sync    the same with sync_batchnorm               torch: the batch of 16
#   usync   2 ranks of 5 and 11 (--batch-plan), sync,  torch: the batch of 16
#           momentum 0.9
#   uranks  2 ranks of 5 and 11, not synchronised,     torch: the shares of 5 and 11
#           momentum 0.9
# and the test would fail without sync_batchnorm: the 2 ranks' first step without it is
# not within the tolerance of the batch of 16. Skips when torch or onnx is missing.
. tests/lib.sh
STEPS=3
LR=0.05
WD=0.0005
SEED=5
TOOL="$TORCH_PY tests/tools/heldout_cnn.py"
[ -x "$BUILD/tools/epoch_order" ] || fail "$BUILD/tools/epoch_order is not built"
$TOOL --data "$TMP/data.npz" 16 >"$TMP/data.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/data.log")"
[ $rc -eq 0 ] || { cat "$TMP/data.log"; fail "heldout_cnn.py --data exited $rc"; }
$TOOL --export "$TMP/w.0.onnx" 3 >"$TMP/export.log" 2>&1 || { cat "$TMP/export.log"; fail "heldout_cnn.py --export"; }
"$BUILD/tools/epoch_order" $SEED 16 $STEPS >"$TMP/order.txt" || fail "epoch_order failed"

# spec NAME WORKERS BATCH SYNC MOMENTUM: the job (max_batch 16 so that a rank may take 11)
spec() {
    jq -n --arg m "$TMP/w.0.onnx" --arg p "$TMP/data.npz" --arg c "$TMP/cache" --argjson w $2 --argjson b $3 \
        --argjson sync $4 --arg alg "$([ $2 = 1 ] && echo sgd || echo ssgd)" --argjson seed $SEED \
        --argjson lr $LR --argjson wd $WD --argjson mom $5 \
        '{model: {onnx: $m}, dataset: {name: "heldout", format: "npz", layout: "nchw", path: $p, mean: [0], std: [1],
          cache_dir: $c}, algorithm: {name: $alg, max_batch: 16}, workers: $w, batch_size: $b, epochs: 3,
          seed: $seed, device: "cpu", threads: 1, sync_batchnorm: $sync, log_every: 0,
          optimizer: {lr: $lr, momentum: $mom, weight_decay: $wd}}' >"$TMP/$1.json"
}
# train NAME WORKERS K [PLAN]: K steps, the model exported as $TMP/NAME.K.onnx
train() {
    if [ $2 = 1 ]; then
        $WORKER --spec "$TMP/$1.json" --stop-after-steps $3 --export-onnx "$TMP/$1.$3.onnx" >"$TMP/$1.$3.log" 2>&1
    else
        $MPIRUN -np 2 $WORKER --spec "$TMP/$1.json" --stop-after-steps $3 ${4:+--batch-plan $4} \
            --export-onnx "$TMP/$1.$3.onnx" >"$TMP/$1.$3.log" 2>&1
    fi || { tail -20 "$TMP/$1.$3.log"; fail "$1: pacer-worker's $3 steps failed"; }
}
# check NAME WORKERS BATCH SYNC MOMENTUM PACER_PLAN TORCH_PLAN: STEPS steps, each against torch's
check() {
    spec $1 $2 $3 $4 $5
    k=1 after=""
    while [ $k -le $STEPS ]; do
        train $1 $2 $k $6
        after="$after $TMP/$1.$k.onnx"
        k=$((k + 1))
    done
    $TOOL --check "$TMP/w.0.onnx" "$TMP/data.npz" "$TMP/order.txt" $7 $LR $5 $WD 2 $after >"$TMP/$1.torch" 2>&1
    rc=$?
    sed "s|$TMP/||g; s/^/  $1: /" "$TMP/$1.torch"
    [ $rc = 0 ] || fail "$1: pacer's steps are not torch's (above)"
}
check one 1 16 false 0 "" 16
check ranks 2 8 false 0 "" 8,8
check sync 2 8 true 0 "" 16
check usync 2 8 true 0.9 5,11 16
check uranks 2 8 false 0.9 5,11 5,11
# without sync_batchnorm the 2 ranks' step is not the whole batch's: what makes sync's
# checks above fail without it
$TOOL --check "$TMP/w.0.onnx" "$TMP/data.npz" "$TMP/order.txt" 16 $LR 0 $WD 2 "$TMP/ranks.1.onnx" >"$TMP/ranks_vs_one.log" 2>&1 &&
    fail "2 ranks without sync_batchnorm took the whole batch's step: the test cannot tell sync_batchnorm's"
echo "without sync_batchnorm, against the batch of 16: $(grep -o 'worst.*' "$TMP/ranks_vs_one.log")"
echo "ok: $STEPS steps of 1 process, 2 ranks (own statistics) and 2 ranks with sync_batchnorm (8+8, 5+11;" \
    "momentum 0 and 0.9) are torch's"
