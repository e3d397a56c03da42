# Networks exported in inference form, as most people export a module (model.eval(), then
# torch.onnx.export with its defaults: constant folding, no training mode; the batch axis
# dynamic), tests/tools/onnx_eval_form.py: timm's attention as timm writes it (dim 16, 2
# heads, 4 tokens: qkv reshaped to (B, N, 3, heads, d), permuted with the 3 first,
# unbound), the same attention written with torch.einsum as MaxViT writes it,
# torchvision's VisionTransformer at opsets 13 and 17 and SwinTransformer, small.
# onnx_families.sh's checks on each (set "evalform"): --check-onnx accepts the file; on a
# fixed batch of 8 pacer's evaluation and training logits, every parameter's gradient (the
# file's initializers mapped back to the module's parameters by name, else by their values:
# the folding renames a Linear's weight it transposed for MatMul) and the losses of 4 SGD
# steps match torch's float64 numbers from the same weights within onnx_families.py's
# named tolerances. Before that, Einsum graphs written at test time (onnx_eval_form.py
# --graphs): a batched product with the second operand's last two axes contracted and a
# permutation import and give numpy's logits; a sum over a label, a diagonal, an
# ellipsis, the implicit output and a term without its input are refused, each message
# checked. torchvision's whole zoo in this form, vit_b_16, swin_t and maxvit_t at 224x224
# included: sh bench/onnx_eval_zoo.sh (not in make test).
. tests/lib.sh
mkdir -p "$TMP/graphs"
$TORCH_PY tests/tools/onnx_eval_form.py --graphs "$TMP/graphs" >"$TMP/graphs.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/graphs.log")"
[ $rc -eq 0 ] || { cat "$TMP/graphs.log"; fail "tests/tools/onnx_eval_form.py --graphs exited $rc"; }
for graph in einsum_bmm einsum_perm; do
    expect_accepts "$(g $graph)" "$TMP/$graph.check"
    "$BUILD/tools/onnx_logits" "$(g $graph)" "$TMP/graphs/${graph}_x.bin" 2 "$TMP/$graph.bin" >"$TMP/$graph.log" 2>&1 ||
        { cat "$TMP/$graph.log"; fail "$graph.onnx: onnx_logits failed"; }
    /usr/bin/python3 -c 'import sys, numpy as np
got, want = np.fromfile(sys.argv[1], "<f4"), np.fromfile(sys.argv[2], "<f4")
e = float(np.max(np.abs(got - want)) / np.max(np.abs(want))) if got.shape == want.shape else float("inf")
print("ok: %s: max_rel |pacer - numpy| %.1e (tol 1e-6)" % (sys.argv[3], e))
sys.exit(e > 1e-6)' "$TMP/$graph.bin" "$TMP/graphs/${graph}_y.bin" "$graph" || fail "$graph.onnx: not numpy's logits"
done
# graph | the refusal's message (a grep pattern)
while IFS='|' read -r graph msg; do
    expect_error 2 "$msg" $WORKER --check-onnx "$(g "$graph")"
done <<'LIST'
einsum_sum|node 'einsum_sum' (Einsum): equation 'bij->bi': only a batched matrix product of two inputs
einsum_diag|node 'einsum_diag' (Einsum): the equation has a label twice in one term (a diagonal)
einsum_ellipsis|node 'einsum_ellipsis' (Einsum): the equation has an ellipsis ('...')
einsum_implicit|node 'einsum_implicit' (Einsum): the equation has no '->' (the implicit output)
einsum_inputs|node 'einsum_inputs' (Einsum): equation 'bij,bkj->bik' names 2 inputs, the node has 1
LIST
FAMILIES_SET=evalform
export FAMILIES_SET
. tests/integration/onnx_families.sh
