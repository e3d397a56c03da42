# docs/JOB_SPEC.md's table of the ONNX operators that import ("What imports") is what the
# operator table says: the block between its markers is `pacer-worker --list-ops`'s output
# line for line (tools/docs_ops.sh --check; `make docs-ops` rewrites it). And the importer's
# refusal of an unknown operator is whole, however long the list grows: it names the
# operator and points to --list-ops rather than cutting the list inside a buffer.
. tests/lib.sh
WORKER=$BUILD/pacer-worker
[ -x "$WORKER" ] || skip "$WORKER not built"

"$WORKER" --list-ops >"$TMP/ops" || fail "pacer-worker --list-ops exited $?"
head -2 "$TMP/ops" | tr '\n' ' ' | grep -qx '| ONNX operators | pacer layer | | --- | --- | ' ||
    { head -3 "$TMP/ops"; fail "--list-ops: not a Markdown table"; }
# the operators a new user found missing from the old hand-written list, each a row
for op in Transpose Slice Erf Div LayerNormalization Softmax Conv ScatterND; do
    grep -q "^| .*\b$op\b" "$TMP/ops" || { cat "$TMP/ops"; fail "--list-ops lacks $op"; }
done
tail -1 "$TMP/ops" | grep -q 'ConstantOfShape (of constant shapes: folded) | none: ' ||
    { tail -1 "$TMP/ops"; fail "--list-ops: the graph-level row is not whole"; }
sh tools/docs_ops.sh "$BUILD" --check || fail "docs/JOB_SPEC.md's operator table is not pacer-worker --list-ops's"
echo "ok: docs/JOB_SPEC.md's operator table is --list-ops's $(($(wc -l <"$TMP/ops") - 2)) rows"

# A copy of the document with a row dropped and one changed is refused, naming the difference.
mkdir -p "$TMP/repo/docs" "$TMP/repo/tools"
cp tools/docs_ops.sh "$TMP/repo/tools/"
sed -e '/^| Erf | erf |$/d' -e 's/^| Softmax (a non-batch axis) | softmax |$/| Softmax | softmax |/' docs/JOB_SPEC.md \
    >"$TMP/repo/docs/JOB_SPEC.md"
cmp -s docs/JOB_SPEC.md "$TMP/repo/docs/JOB_SPEC.md" && fail "the test's edit of the copy changed nothing"
abs_build=$(cd "$BUILD" && pwd)
sh "$TMP/repo/tools/docs_ops.sh" "$abs_build" --check >"$TMP/out" 2>&1 && fail "a stale table passed the check"
grep -q "differs from pacer-worker --list-ops" "$TMP/out" && grep -q "^> | Erf | erf |" "$TMP/out" ||
    { cat "$TMP/out"; fail "the check does not show the difference"; }
sh "$TMP/repo/tools/docs_ops.sh" "$abs_build" >/dev/null || fail "docs_ops.sh could not rewrite the copy"
cmp -s docs/JOB_SPEC.md "$TMP/repo/docs/JOB_SPEC.md" || fail "the rewritten copy is not the document"
echo "ok: a stale table fails the check with the difference, and make docs-ops's rewrite restores it"

# The refusal of an operator that does not import: whole (no list cut in a buffer), naming
# the operator and where the list is. A ModelProto of one node, Sin (x -> y), written as
# bytes here: opset 13, input (N, 1, 4, 4), output (N, 16) float.
command -v python3 >/dev/null || skip "python3 not installed"
python3 - "$TMP/sin.onnx" <<'PY' || fail "could not write the test model"
import struct, sys
def key(field, wire): return bytes([field << 3 | wire])
def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n: return out
def ld(field, data): return key(field, 2) + varint(len(data)) + data
def vi(field, n): return key(field, 0) + varint(n)
def dim_param(s): return ld(2, s.encode())
def dim_value(n): return vi(1, n)
def value_info(name, dims):
    shape = ld(1, dim_param("N")) + b"".join(ld(1, dim_value(d)) for d in dims)
    tensor = vi(1, 1) + ld(2, shape)          # elem_type FLOAT, shape
    return ld(1, name.encode()) + ld(2, ld(1, tensor))
node = ld(1, b"x") + ld(2, b"y") + ld(3, b"sin") + ld(4, b"Sin")
graph = ld(1, node) + ld(2, b"g") + ld(11, value_info("x", (1, 4, 4))) + ld(12, value_info("y", (16,)))
model = vi(1, 8) + ld(7, graph) + ld(8, vi(2, 13))
open(sys.argv[1], "wb").write(model)
PY
"$WORKER" --check-onnx "$TMP/sin.onnx" >"$TMP/out" 2>&1
rc=$?
[ $rc = 2 ] || { cat "$TMP/out"; fail "--check-onnx of a Sin node exited $rc, want 2"; }
want="pacer-worker: node 'sin': operator Sin is not supported (\`pacer-worker --list-ops\` lists the operators that import, as does docs/JOB_SPEC.md, \"What imports\")"
[ "$(cat "$TMP/out")" = "$want" ] || { cat "$TMP/out"; fail "the refusal is not whole: want: $want"; }
echo "ok: the refusal of Sin is whole and points to --list-ops"
