# torchvision's vit_b_16 and convnext_tiny at 224x224 (get_model(name, weights=None,
# num_classes=10)), exported as the Python client exports a module for training
# (tests/tools/onnx_vit.py --big: convnext_tiny's stochastic depth as the client's
# ai.pacer:StochasticDepth), must pass `pacer-worker --check-onnx` (issue 44; make test's
# onnx_transformers_224 checks the same and swin_t, with torch's parameter counts). The two
# exports take 40 to 50 s and --check-onnx of vit_b_16's 344 MB 5 to 30 s and 2.3 GB on a
# loaded 2-core machine (measured 2026-11-25). Prints each network's layers, parameters
# and check time; exits 1 when either is refused.
#   sh bench/transformers_import.sh
. bench/lib.sh
/usr/bin/python3 tests/tools/onnx_vit.py --big "$TMP" >"$TMP/export.log" 2>&1 ||
    { tail -3 "$TMP/export.log"; echo "transformers_import: tests/tools/onnx_vit.py --big failed (python3-torch, torchvision)"; exit 1; }
md ""
md "### torchvision transformers at 224x224 through --check-onnx (\`sh bench/transformers_import.sh\`)"
md ""
md "| network | layers | parameters | --check-onnx s |"
md "|---|---|---|---|"
rc=0
for net in convnext_tiny vit_b_16; do
    t0=$(date +%s.%N)
    if $WORKER --check-onnx "$TMP/$net.onnx" >"$TMP/$net.check" 2>&1; then
        t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        md "| $net | $(jq .layers "$TMP/$net.check") | $(jq .parameters "$TMP/$net.check") | $t |"
    else
        md "| $net | refused: $(cat "$TMP/$net.check") | | |"
        rc=1
    fi
    rm -f "$TMP/$net.onnx"
done
exit $rc
