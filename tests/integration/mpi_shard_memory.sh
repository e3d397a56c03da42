# algorithm.shard stage 2 keeps only its range of the gradient resident: the backward
# pass reduce-scatters the gradient bucket by bucket as it finishes them and gives the
# pages outside the rank's range back at once (worker/shard.h), so at no time is the
# whole gradient resident. Stage 1 keeps the whole gradient by design, so the peak
# resident set of each stage 2 rank (the summary's peak_rss_mb, the kernel's VmHWM) is
# below stage 1's by most of the gradient outside its range: asserted to be at least a
# third of it ((1 - 1/2) x 4 bytes x 7.2 M parameters / 3 = 4.8 MB; measured 9 MB). The
# same spec otherwise, 2 ranks, 2 steps of the built-in GPT (4 blocks of width 384).
. tests/lib.sh
LIC=/usr/share/common-licenses
[ -r "$LIC/GPL-3" ] && [ -r "$LIC/LGPL-2.1" ] || skip "no $LIC/GPL-3 and LGPL-2.1 to train the GPT on"
mkdir -p "$TMP/text"
cp "$LIC/GPL-3" "$TMP/text/train.txt"
cp "$LIC/LGPL-2.1" "$TMP/text/val.txt"
for st in 1 2; do
    jq -n --arg data "$TMP/text" "{name: \"s$st\", model: {gpt: {layers: 4, heads: 4, embd: 384, block_size: 16}},
        dataset: {format: \"text\", path: \$data, train_subset: 64, test_subset: 4},
        algorithm: {name: \"ssgd\", shard: {stage: $st}}, workers: 2, batch_size: 1, epochs: 1, seed: 3,
        device: \"cpu\", log_every: 0, optimizer: {kind: \"adamw\", lr: 0.001}}" >"$TMP/s$st.json"
    mpi 2 "$TMP/s$st.log" --spec "$TMP/s$st.json" --stop-after-steps 2 --summary "$TMP/s$st.out"
done
params=$(jq '.shard.params_per_rank | add' "$TMP/s2.out")
[ "$params" -gt 7000000 ] || fail "the GPT has $params parameters, not about 7.2 M"
for r in 0 1; do
    a=$(jq ".per_rank[$r].peak_rss_mb" "$TMP/s1.out")
    b=$(jq ".per_rank[$r].peak_rss_mb" "$TMP/s2.out")
    awk -v a="$a" -v b="$b" -v p="$params" 'BEGIN { exit !(a - b >= p * 4 / 2 / 3 / 1048576) }' ||
        fail "rank $r: stage 2's peak resident set $b MB is not a third of the gradient outside its range below stage 1's $a MB"
    echo "ok: rank $r peak resident set: stage 1 $a MB, stage 2 $b MB"
done
echo "ok: stage 2 never holds the whole gradient"
