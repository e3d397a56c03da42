# Issue 44's "convnext_tiny, vit_b_16 and swin_t at 224x224 import": torchvision 0.14's
# models as a user gets them (get_model(name, weights=None, num_classes=10)), exported by
# the Python client's export_module in training form (tests/tools/onnx_vit.py --big;
# stochastic depth as ai.pacer:StochasticDepth), each accepted by `pacer-worker
# --check-onnx` with the parameter count torch reports for the module (checked here, so
# that an import that drops or duplicates a tensor fails). What they compute is checked on
# small configurations of the same classes (onnx_vit, onnx_swin); this test is about size
# and the full graphs (vit_b_16: 12 blocks, 344 MB; swin_t: 4 stages of shifted windows).
# The slow part is torch's export (about 2 minutes for the three on an idle 2-core
# machine); each file is deleted once checked (vit_b_16's check takes ~2.3 GB).
. tests/lib.sh
command -v /usr/bin/python3 >/dev/null && /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null ||
    skip "onnx_transformers_224: python3-torch and python3-torchvision not installed (make deps)"
for net in convnext_tiny vit_b_16 swin_t; do
    start=$(date +%s)
    $TORCH_PY tests/tools/onnx_vit.py --big "$TMP" "$net" >"$TMP/export.log" 2>&1 ||
        { tail -5 "$TMP/export.log"; fail "$net: the client's export failed"; }
    want=$($TORCH_PY -c 'import sys, torchvision
m = torchvision.models.get_model(sys.argv[1], weights=None, num_classes=10)
print(sum(p.numel() for p in m.parameters()))' "$net") || fail "$net: torch could not count its parameters"
    exported=$(($(date +%s) - start))
    $WORKER --check-onnx "$TMP/$net.onnx" >"$TMP/$net.check" 2>&1 ||
        { cat "$TMP/$net.check"; fail "$net at 224x224 refused by --check-onnx"; }
    got=$(jq -r .parameters "$TMP/$net.check") || { cat "$TMP/$net.check"; fail "$net: --check-onnx printed no JSON"; }
    [ "$got" = "$want" ] || fail "$net: --check-onnx counts $got parameters, torch $want"
    echo "ok: $net at 224x224: $(jq -r .layers "$TMP/$net.check") layers, $got parameters (torch's count); export ${exported} s, check $(($(date +%s) - start - exported)) s"
    rm -f "$TMP/$net.onnx"
done
