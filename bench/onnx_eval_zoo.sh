# torchvision's whole zoo exported in inference form, the way most people export a module
# (model.eval(), then torch.onnx.export with its defaults: constant folding on, batch norm
# folded into the convolutions; the batch axis dynamic), at OPSET (13 unless set): each
# file accepted by `pacer-worker --check-onnx`, then tests/tools/onnx_grads on N images
# (8; 2 for the 224x224 transformers vit_b_16, swin_t and maxvit_t): pacer's evaluation
# logits within 1e-4 of the module's (float64; or twice torch's own float32 error), the
# round trip through onnx_export_layers (onnx_grads' own check) and STEPS plain SGD steps
# (lr 0.01; 4, 2 for the transformers), the first loss finite, all printed. The files
# train a network without batch norm where torch folded it into a convolution, so their
# training is not compared with the module's and may diverge (a fresh inception_v3, whose
# running statistics normalise nothing: logits near 1e8, then NaN, as torch's own steps on
# the module with its batch norms folded; checked by hand);
# tests/integration/onnx_eval_form.sh
# compares gradients and losses on small transformers, which have none. Not in make test:
# the 21 exports and checks took about 40 minutes at load 10 on the shared 2-core machine.
# Usage: sh bench/onnx_eval_zoo.sh [BUILD] [NAME...]   (OPSET=17 for opset 17)
set -u
BUILD=${1:-build}
[ $# -gt 0 ] && shift
OPSET=${OPSET:-13}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
status=0
names=${*:-$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, "tests/tools")
import onnx_eval_form as e; print(" ".join(e.ZOO))' 2>/dev/null)}
[ -n "$names" ] || { echo "onnx_eval_zoo: torch, onnx or torchvision not importable"; exit 1; }
for net in $names; do
    case $net in vit_b_16 | swin_t | maxvit_t) n=2 steps=2 ;; *) n=8 steps=4 ;; esac
    /usr/bin/python3 tests/tools/onnx_eval_form.py --zoo "$TMP" "$OPSET" "$n" "$net" >"$TMP/export.log" 2>&1
    line=$(grep "^$net: " "$TMP/export.log")
    echo "$net: ${line#*: }"
    [ -f "$TMP/$net.onnx" ] || { tail -3 "$TMP/export.log"; status=1; continue; }
    start=$(date +%s)
    if ! "$BUILD/pacer-worker" --check-onnx "$TMP/$net.onnx" >"$TMP/check.json" 2>&1; then
        echo "  refused: $(tail -1 "$TMP/check.json")"
        status=1
    else
        echo "  accepted: $(jq -r '"\(.layers) layers, \(.parameters) parameters"' "$TMP/check.json")"
        mkdir -p "$TMP/$net"
        if "$BUILD/tools/onnx_grads" "$TMP/$net.onnx" "$TMP/x_$net.bin" "$n" "$steps" 0.01 "$TMP/$net" \
            >"$TMP/grads.log" 2>&1; then
            /usr/bin/python3 tests/tools/onnx_eval_form.py --zoo-check "$TMP/$net.eval.npz" "$TMP/$net" || status=1
        else
            echo "  onnx_grads failed: $(tail -2 "$TMP/grads.log")"
            status=1
        fi
        echo "  (check and $steps steps of $n: $(($(date +%s) - start)) s)"
    fi
    rm -rf "$TMP/$net.onnx" "$TMP/$net" "$TMP/x_$net.bin"
done
exit $status
