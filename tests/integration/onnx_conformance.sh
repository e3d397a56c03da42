# ONNX's own conformance suite (issue 43's yardstick): every case of libonnx-testdata's
# node/ (single operators) and pytorch-converted/ (layers exported from PyTorch) runs
# through pacer-worker --onnx-case, which imports the case with today's importer and
# compares its outputs within the suite's tolerances (rtol 1e-3, atol 1e-7). What pacer
# supports is the importer's answer, not a list kept here: exit 2 (the importer or the
# case reader refusing: an operator, an attribute, a shape, an integer type) counts as
# refused, with its reason. Fails when a case mismatches (exit 1: a supported
# configuration that computes something else is a bug, not a skip), when a case crashes
# (any other exit), or when fewer cases pass than PASS_FLOOR (what passes today: the
# suite silently refused whole would otherwise pass). Prints a table per operator (the
# graph's operators): cases, passed, mismatched, refused with the reasons counted, the
# table docs/TESTING.md quotes. Skips when libonnx-testdata is absent.
# (tests/tools/onnx_conformance_table.py counts the float32 cases of the operators pacer maps,
# per operator and family: the figures docs/TESTING.md gives first.)
. tests/lib.sh
SUITE=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
PASS_FLOOR=308
need_dir "$SUITE/node" "libonnx-testdata (deploy/install-deps.sh test)"
[ -x "$WORKER" ] || fail "$WORKER is not built"

# one line per case: exit status, operators, case, first line of the refusal
for c in "$SUITE"/node/*/ "$SUITE"/pytorch-converted/*/; do
    c=${c%/}
    [ -f "$c/model.onnx" ] || continue
    "$WORKER" --onnx-case "$c" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    ops=$(sed -n 's/^ops: //p' "$TMP/out" | head -1)
    why=$(head -1 "$TMP/err" | sed 's|^pacer-worker: --onnx-case [^:]*: ||')
    printf '%s\t%s\t%s\t%s\n' "$rc" "${ops:-?}" "${c#"$SUITE"/}" "$why" >>"$TMP/results"
    if [ $rc -eq 1 ]; then
        { echo "MISMATCH ${c#"$SUITE"/}:"; grep MISMATCH "$TMP/out"; } >>"$TMP/bad"
    elif [ $rc -ne 0 ] && [ $rc -ne 2 ]; then
        { echo "CRASH ${c#"$SUITE"/} (exit $rc):"; tail -3 "$TMP/out" "$TMP/err"; } >>"$TMP/bad"
    fi
done
[ -s "$TMP/results" ] || fail "no case found under $SUITE"

# The table: reasons shortened to their kind (the type, the opset, the operator, ...),
# node names left out, counted per operator set.
awk -F'\t' '
function kind(w) {
    if (match(w, /data type [A-Z0-9]+/)) return substr(w, RSTART + 10, RLENGTH - 10) " tensors"
    if (w ~ /must be a batch \(N, ...\) of rank/) return "not a batch (N, ...) of fixed dimensions, rank 1 to 6"
    if (w ~ /takes images \(N, C, H, W\)/) return "not an image (N, C, H, W), sequence (N, C, L) or volume input"
    if (w ~ /a constant operand has elements and at most/) return "a constant operand of more axes than a sample"
    if (match(w, /opset -?[0-9]+ is not supported/)) return "opset " substr(w, RSTART + 6, RLENGTH - 23)
    if (match(w, /operator [A-Za-z0-9_]+ is not supported/)) return "operator " substr(w, RSTART + 9, RLENGTH - 26)
    if (match(w, /outputs \(one/)) return "more than one output"
    gsub(/node [^)]*\) ?/, "", w); gsub(/^(onnx: )?/, "", w); gsub(/^: /, "", w)
    return substr(w, 1, 60)
}
{
    op = $2; n[op]++
    if ($1 == 0) p[op]++; else if ($1 == 1) m[op]++; else if ($1 == 2) { r[op]++; k = op SUBSEP kind($4); why[k]++ }
    else x[op]++
    tot++; tp += ($1 == 0); tm += ($1 == 1); tr += ($1 == 2)
}
END {
    print "| operators | cases | passed | mismatched | refused (why) |"
    print "|---|---|---|---|---|"
    for (op in n) {
        s = ""
        for (k in why) { split(k, a, SUBSEP); if (a[1] == op) s = s (s ? "; " : "") why[k] " " a[2] }
        printf "| %s | %d | %d | %d | %d%s |\n", op, n[op], p[op], m[op] + x[op], r[op], s ? " (" s ")" : ""
    }
    printf "TOTAL %d cases: %d passed, %d mismatched, %d refused\n", tot, tp, tm, tr
}' "$TMP/results" >"$TMP/table"
grep -v '^TOTAL' "$TMP/table" | { sed -n 1,2p "$TMP/table"; sed 1,2d | LC_ALL=C sort -t'|' -k2,2; }
tail -1 "$TMP/table"

[ ! -s "$TMP/bad" ] || { cat "$TMP/bad"; fail "cases of supported configurations mismatch or crash (above)"; }
passed=$(awk -F'\t' '$1 == 0' "$TMP/results" | wc -l)
at_least "cases passed" "$passed" "$PASS_FLOOR"
echo "ok: $passed cases pass, none mismatches or crashes"
