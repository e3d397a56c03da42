# Imported networks against what they replace (issue 25), one thread, batch 64, one epoch
# of Fashion-MNIST (SUBSET images, all 60000 unless set), RUNS alternating runs of each,
# medians of training samples/s (time inside the training loop, as the summaries count it):
# - LeNet-5 exported from PyTorch with the built-in lenet5's graph and tensor names
#   (tests/tools/onnx_export.py --zoo, LeNet5.onnx: conv, max pool, ReLU) and imported
#   ("model": {"onnx": PATH}) against the built-in "lenet5" on the same spec: the same
#   layers and kernels, so the target is within 3%;
# - a VGG-style network with batch norm and dropout (VggBN.onnx) imported into pacer
#   against the same module trained by PyTorch (Debian's python3-torch,
#   torch.set_num_threads(1), bench/torch_lenet.py) on the same CPU thread: the ratio.
. bench/lib.sh
RUNS=${RUNS:-3}
SUBSET=${SUBSET:-0}
/usr/bin/python3 tests/tools/onnx_export.py --zoo "$TMP" >"$TMP/export.log" 2>&1 ||
    { tail -3 "$TMP/export.log"; echo "onnx_import: tests/tools/onnx_export.py --zoo failed (python3-torch, python3-onnx)"; exit 1; }
# spec MODEL-JSON > FILE
spec() {
    jq -n --argjson model "$1" --argjson n "$SUBSET" \
        '{name: "bench", model: $model, dataset: ({name: "fashion-mnist"} + if $n > 0 then {train_subset: $n} else {} end),
          epochs: 1, batch_size: 64, optimizer: {lr: 0.02, momentum: 0.9}, threads: 1, log_every: 0}'
}
spec '"lenet5"' >"$TMP/builtin.json"
spec "{\"onnx\": \"$TMP/LeNet5.onnx\"}" >"$TMP/lenet_onnx.json"
spec "{\"onnx\": \"$TMP/VggBN.onnx\"}" >"$TMP/vgg_onnx.json"
# The LeNet-5 pair also by the process's CPU time (user + sys, data loading and the
# evaluation included: the same for both but for reading the ONNX file), which a loaded
# machine moves less than the wall time the samples/s figures divide by.
for i in $(seq "$RUNS"); do
    /usr/bin/time -f "%U %S" -o "$TMP/bcpu$i" $WORKER --spec "$TMP/builtin.json" --summary "$TMP/b$i.json" \
        >/dev/null 2>&1 || exit 1
    /usr/bin/time -f "%U %S" -o "$TMP/lcpu$i" $WORKER --spec "$TMP/lenet_onnx.json" --summary "$TMP/l$i.json" \
        >/dev/null 2>&1 || exit 1
done
cpu() { for i in $(seq "$RUNS"); do awk '{ print $1 + $2 }' "$TMP/$1cpu$i"; done | median; }
for i in $(seq "$RUNS"); do
    $WORKER --spec "$TMP/vgg_onnx.json" --summary "$TMP/v$i.json" >/dev/null 2>&1 || exit 1
    /usr/bin/python3 bench/torch_lenet.py 1 VggBN "$SUBSET" >"$TMP/t$i.json" || exit 1
done
# med PREFIX FIELD - the median of a field over RUNS summaries
med() { for i in $(seq "$RUNS"); do jq "$2" "$TMP/$1$i.json"; done | median; }
b=$(med b .train_samples_per_s) l=$(med l .train_samples_per_s)
v=$(med v .train_samples_per_s) t=$(med t .samples_per_s)
spread() { for i in $(seq "$RUNS"); do printf '%.0f ' "$(jq "$2" "$TMP/$1$i.json")"; done; }
md ""
sub=""
[ "$SUBSET" -gt 0 ] && sub=", SUBSET=$SUBSET"
md "### Imported ONNX networks, one thread, batch 64 (\`RUNS=$RUNS$(echo "$sub" | tr -d ,) sh bench/onnx_import.sh\`)"
md ""
md "| | samples/s (median of $RUNS) | runs | process CPU s (median) |"
md "|---|---|---|---|"
md "| lenet5, built in | $(printf %.0f "$b") | $(spread b .train_samples_per_s)| $(cpu b) |"
md "| LeNet-5 imported from ONNX (same graph) | $(printf %.0f "$l") | $(spread l .train_samples_per_s)| $(cpu l) |"
md "| VGG-style (batch norm, dropout) imported into pacer | $(printf %.0f "$v") | $(spread v .train_samples_per_s)| – |"
md "| the same VGG-style module in PyTorch $(jq -r .torch "$TMP/t1.json") | $(printf %.0f "$t") | $(spread t .samples_per_s)| – |"
md ""
md "Imported LeNet-5 / built-in, samples/s: **$(ratio "$l" "$b")x** (target: within 3%, i.e. >= 0.97x); by CPU time, built-in / imported: $(ratio "$(cpu b)" "$(cpu l)")x. VGG-style, pacer / PyTorch: **$(ratio "$v" "$t")x**."
