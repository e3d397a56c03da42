# The job page says what ran (static/app.js precisionFact): through the coordinator, a
# LeNet-5 job at precision bf16 and one at fp32 (a few steps each), and each one's page,
# in headless Chromium (tests/browser/precision.mjs), shows "PRECISION · gemm KERNELS ·
# conv KERNELS" with the precision of its spec and the kernels its summary's kernels.gemm
# and kernels.conv name (a bf16 path for the bf16 job, openblas-fp32 for the other). Skips the page without chromium, node or
# playwright-core, saying so; the summaries are checked either way.
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
start_coord
for p in bf16 fp32; do
    spec "$TMP/$p.json" "page-$p" 1
    jq --arg p "$p" '. + {precision: $p, device: "cpu", checkpoint: {every_steps: 0},
        dataset: (.dataset + {train_subset: 256, test_subset: 64})}' "$TMP/$p.json" >"$TMP/$p.t" &&
        mv "$TMP/$p.t" "$TMP/$p.json"
done
B=$(submit "$TMP/bf16.json")
F=$(submit "$TMP/fp32.json")
for id in "$B" "$F"; do
    cli wait "$id" --timeout 300 || { tail "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
    [ -s "$STATE/jobs/$id/summary.json" ] || fail "job $id left no summary"
done
gb=$(json "$STATE/jobs/$B/summary.json" .kernels.gemm)
gf=$(json "$STATE/jobs/$F/summary.json" .kernels.gemm)
cb=$(json "$STATE/jobs/$B/summary.json" .kernels.conv)
cf=$(json "$STATE/jobs/$F/summary.json" .kernels.conv)
case $cb in direct-amx-bf16 | direct-avx512-bf16 | winograd-avx512-bf16 | winograd-avx2-bf16 | im2col-gemm) ;; *) fail "the bf16 job's summary says kernels.conv $cb" ;; esac
case $cf in direct-avx512 | direct-avx2 | im2col-gemm) ;; *) fail "the fp32 job's summary says kernels.conv $cf" ;; esac
case $gb in amx-bf16 | avx512-bf16 | portable-bf16) ;; *) fail "the bf16 job's summary says kernels.gemm $gb" ;; esac
[ "$gf" = openblas-fp32 ] || fail "the fp32 job's summary says kernels.gemm $gf"
[ "$(json "$STATE/jobs/$B/summary.json" .precision)" = bf16 ] || fail "the bf16 job's summary precision is not bf16"
echo "ok: the summaries say bf16 on $gb (convolutions $cb) and fp32 on $gf (convolutions $cf)"
if have_browser; then
    timeout 120 node tests/browser/precision.mjs "$(api_base)" "$BUILD/precision.png" \
        "$B" "bf16 · gemm $gb · conv $cb" "$F" "fp32 · gemm $gf · conv $cf" ||
        fail "the job page's Precision fact (screenshot: $BUILD/precision.png)"
else
    echo "not checked: the job page's Precision fact (no chromium, node or playwright-core)"
fi
stop_coord
