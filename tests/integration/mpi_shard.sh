# algorithm.shard (ZeRO stages 1 and 2, worker/shard.h) on 3 ranks with uneven batches
# 16, 32, 48 and the uneven split [1, 2, 3]; AdamW with weight decay, no-decay groups and
# clipping to a norm every step exceeds:
#   1. With Open MPI's linear reduction pinned for plain ssgd's all-reduce
#      (coll_tuned_allreduce_algorithm 1: every element summed g0 + (g1 + g2), the order
#      the sharded reduce-scatter, worker/shard.c, always sums in), stage 1 and stage 2
#      give plain ssgd's parameters, moments and step bit for bit after 10 steps
#      (ckpt_diff, tolerance 0): the sharded update, the global norm and the gathered
#      checkpoint change nothing.
#   2. With Open MPI's own choices its all-reduce may associate the three addends
#      otherwise (measured: 5e-7 after 10 steps): within 1e-5, the tolerance
#      tests/integration/mpi_ssgd_equivalence.sh gives float sums in another order.
#   3. The stage 2 run's checkpoint (3 ranks, split [1, 2, 3]) resumes on 2 ranks (the
#      list falls back to even, said on stderr) and on 4 ranks (split memory), sharded,
#      and ends at step 20 where plain ssgd resumed from plain ssgd's checkpoint on the
#      same world does, bit for bit (linear reduction pinned).
#   4. The summary's shard object: stage, split, a range and the state of each rank.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
DIFF=$BUILD/tools/ckpt_diff
spec() { # FILE DIR [SHARD-JSON] [WORKERS]
    cat >"$1" <<JSON
{"name": "z", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 4800, "test_subset": 200},
 "algorithm": {"name": "ssgd", "max_batch": 96${3:+, \"shard\": $3}}, "workers": ${4:-3}, "max_workers": 4,
 "batch_size": 32, "epochs": 1, "seed": 3, "log_every": 0,
 "optimizer": {"kind": "adamw", "lr": 0.002, "weight_decay": 0.01, "clip_norm": 0.05},
 "checkpoint": {"every_steps": 10, "dir": "$2"}}
JSON
}
S1='{"stage": 1, "split": [1, 2, 3]}'
S2='{"stage": 2, "split": [1, 2, 3]}'

# 2. Open MPI's own reduction order.
spec "$TMP/p.json" "$TMP/p"
spec "$TMP/s1.json" "$TMP/s1" "$S1"
mpi 3 "$TMP/p.log" --spec "$TMP/p.json" --batch-plan 16,32,48 --stop-after-steps 10
mpi 3 "$TMP/s1.log" --spec "$TMP/s1.json" --batch-plan 16,32,48 --stop-after-steps 10
"$DIFF" "$TMP/p/z.ckpt" "$TMP/s1/z.ckpt" 1e-5 >"$TMP/d.txt" || { cat "$TMP/d.txt"; fail "stage 1 is more than 1e-5 from plain ssgd"; }
echo "ok: stage 1 within 1e-5 of plain ssgd with Open MPI's own reduction order"

# 1. Linear reduction pinned: bit for bit.
export OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm=1 \
    OMPI_MCA_coll_tuned_reduce_scatter_algorithm=1 OMPI_MCA_coll_tuned_reduce_algorithm=1
for k in p s1 s2; do
    rm -rf "${TMP:?}/$k"
    case $k in p) spec "$TMP/$k.json" "$TMP/$k" ;; s1) spec "$TMP/$k.json" "$TMP/$k" "$S1" ;; *) spec "$TMP/$k.json" "$TMP/$k" "$S2" ;; esac
    mpi 3 "$TMP/$k.log" --spec "$TMP/$k.json" --batch-plan 16,32,48 --stop-after-steps 10 --summary "$TMP/$k.out"
done
grep -q "clip" "$TMP/p.json" || fail "the spec lost its clipping"
for k in s1 s2; do
    "$DIFF" "$TMP/p/z.ckpt" "$TMP/$k/z.ckpt" 0 >"$TMP/d.txt" || { cat "$TMP/d.txt"; fail "$k differs from plain ssgd"; }
done
echo "ok: stages 1 and 2 on split [1, 2, 3] are plain ssgd bit for bit after 10 AdamW steps (parameters, moments)"
# Several rounds per bucket: LeNet-5's buckets fit one round of the default chunk, so
# PACER_SHARD_CHUNK=256 (floats) makes the largest (fc1's 48120 floats, parts of 7716,
# 20560 and 19844) take 81 rounds, the ring of 4 rounds wrapping within it, and the top
# bucket's rounds carry parts on rank 2 only: the path of a model of millions of
# parameters. Still bit for bit: every element is summed in the same order, whatever
# the round it travels in (a round at a wrong offset differs: checked by hand).
rm -rf "${TMP:?}/s2m"
spec "$TMP/s2m.json" "$TMP/s2m" "$S2"
PACER_SHARD_CHUNK=256 mpi 3 "$TMP/s2m.log" --spec "$TMP/s2m.json" --batch-plan 16,32,48 --stop-after-steps 10
"$DIFF" "$TMP/p/z.ckpt" "$TMP/s2m/z.ckpt" 0 >"$TMP/d.txt" || { cat "$TMP/d.txt"; fail "stage 2 in rounds of 256 floats differs from plain ssgd"; }
PACER_SHARD_CHUNK=17 $MPIRUN_RAW -np 2 $WORKER --spec "$TMP/s2m.json" --world 2 --stop-after-steps 1 >"$TMP/bad.log" 2>&1 &&
    fail "PACER_SHARD_CHUNK=17 was taken"
grep -q 'PACER_SHARD_CHUNK: "17" is not a multiple of 16 floats' "$TMP/bad.log" || { cat "$TMP/bad.log"; fail "no refusal of PACER_SHARD_CHUNK=17"; }
echo "ok: stage 2 with 81 rounds in the largest bucket (PACER_SHARD_CHUNK=256) is plain ssgd bit for bit; 17 refused by name"
# clipping took part: without it the run ends elsewhere
sed 's/"clip_norm": 0.05/"clip_norm": 0/' "$TMP/s2.json" | sed "s#$TMP/s2#$TMP/nc#" >"$TMP/nc.json"
mpi 3 "$TMP/nc.log" --spec "$TMP/nc.json" --batch-plan 16,32,48 --stop-after-steps 10
if "$DIFF" "$TMP/nc/z.ckpt" "$TMP/s2/z.ckpt" 0 >/dev/null; then fail "clipping changed nothing: the test would not see a wrong norm"; fi

# 4. The summary.
[ "$(jq -c '.shard | [.stage, .split]' "$TMP/s2.out")" = '[2,[1,2,3]]' ] || fail "summary shard: $(jq -c .shard "$TMP/s2.out")"
[ "$(jq -c '.shard.params_per_rank' "$TMP/s2.out")" = '[10288,20560,30858]' ] || fail "ranges $(jq -c .shard "$TMP/s2.out")"
# rank 0 writes the checkpoints: the whole state (2 x 4 bytes x 61706); the others their range's
[ "$(jq -c '.shard.state_bytes_per_rank' "$TMP/s2.out")" = '[493648,164480,246864]' ] || fail "state $(jq -c .shard "$TMP/s2.out")"
# stage 2 keeps the range's gradient and the four extras; stage 1 the whole buffer
[ "$(jq -c '.shard.gradient_bytes_per_rank' "$TMP/s2.out")" = '[41168,82256,123448]' ] || fail "grad $(jq -c .shard "$TMP/s2.out")"
[ "$(jq -c '.shard.gradient_bytes_per_rank' "$TMP/s1.out")" = '[246840,246840,246840]' ] || fail "grad s1 $(jq -c .shard "$TMP/s1.out")"
jq -e '.shard == null' "$TMP/p.out" >/dev/null || fail "plain ssgd's summary has a shard object"
echo "ok: the summary's shard: stage, split, each rank's range, state and gradient bytes"

# 3. Resume the stage 2 checkpoint on 2 and on 4 ranks.
for np in 2 4; do
    for k in p s2; do mkdir -p "$TMP/$k$np" && cp "$TMP/$k/z.ckpt" "$TMP/$k$np/"; done
    spec "$TMP/p$np.json" "$TMP/p$np"
    if [ "$np" = 2 ]; then spec "$TMP/s2$np.json" "$TMP/s2$np" "$S2"; else spec "$TMP/s2$np.json" "$TMP/s2$np" '{"stage": 1, "split": "memory"}'; fi
    mpi "$np" "$TMP/p$np.log" --spec "$TMP/p$np.json" --world "$np" --resume --stop-after-steps 20
    mpi "$np" "$TMP/s2$np.log" --spec "$TMP/s2$np.json" --world "$np" --resume --stop-after-steps 20 --summary "$TMP/s2$np.out"
    grep -q "resumed from .* at step 10" "$TMP/s2$np.log" || { cat "$TMP/s2$np.log"; fail "no resume at step 10 on $np ranks"; }
    "$DIFF" "$TMP/p$np/z.ckpt" "$TMP/s2$np/z.ckpt" 0 >"$TMP/d.txt" ||
        { cat "$TMP/d.txt"; fail "the sharded checkpoint resumed on $np ranks differs from plain ssgd's"; }
    [ "$(jq '.shard.params_per_rank | length' "$TMP/s2$np.out")" = "$np" ] || fail "not split over $np ranks"
    [ "$(jq -r '.global_step // .steps // empty' "$TMP/s2$np.out" | head -1)" != "" ] || true
done
grep -q "3 weights for a world of 2 ranks (an elastic restart): split evenly" "$TMP/s22.log" ||
    { cat "$TMP/s22.log"; fail "the fallback to an even split was not said"; }
echo "ok: a 3-rank stage 2 checkpoint resumes on 2 ranks (even) and 4 ranks (memory) bit for bit as plain ssgd's"

# 5. A model whose ranges span several of the reduce-scatter's chunks (2^18 floats): the
#    built-in GPT of 2 blocks of width 192 (0.96 M parameters; ranges of 160 k, 320 k and
#    480 k), stage 2 against plain ssgd, weight digests of every rank after 6 steps.
LIC=/usr/share/common-licenses
if [ -r "$LIC/GPL-3" ] && [ -r "$LIC/LGPL-2.1" ]; then
    mkdir -p "$TMP/text"
    cat "$LIC/GPL-3" >"$TMP/text/train.txt"
    cp "$LIC/LGPL-2.1" "$TMP/text/val.txt"
    for k in gp gs; do
        sh=""
        [ "$k" = gs ] && sh=', shard: {stage: 2, split: [1, 2, 3]}'
        jq -n --arg data "$TMP/text" "{name: \"$k\", model: {gpt: {layers: 2, heads: 2, embd: 192, block_size: 32}},
            dataset: {format: \"text\", path: \$data, train_subset: 240, test_subset: 16},
            algorithm: {name: \"ssgd\" $sh}, workers: 3, batch_size: 4, epochs: 1, seed: 3, device: \"cpu\",
            log_every: 0, optimizer: {kind: \"adamw\", lr: 0.003, weight_decay: 0.1, clip_norm: 0.5}}" >"$TMP/$k.json"
        mpi 3 "$TMP/$k.log" --spec "$TMP/$k.json" --stop-after-steps 6 --weight-digest "$TMP/$k.dig"
    done
    for r in 0 1 2; do
        [ "$(tail -n 1 "$TMP/gp.dig.rank$r")" = "$(tail -n 1 "$TMP/gs.dig.rank$r")" ] ||
            fail "GPT rank $r: stage 2 $(tail -n 1 "$TMP/gs.dig.rank$r"), plain $(tail -n 1 "$TMP/gp.dig.rank$r")"
    done
    grep -q "^6 " "$TMP/gs.dig.rank0" || fail "the GPT did not reach step 6"
    echo "ok: the GPT (ranges of up to 2 chunks) at stage 2 is plain ssgd bit for bit on every rank"
else
    echo "note: $LIC has no GPL-3 / LGPL-2.1: the GPT case skipped"
fi

# 6. A notice (SIGTERM to one rank) on a sharded job without periodic checkpoints: rank 0
#    keeps only its range of the state, yet the checkpoint the notice leaves holds every
#    rank's state of that step, bit for bit what plain ssgd stopped at that step holds
#    (linear reduction still pinned).
spec "$TMP/nt.json" "$TMP/nt" "$S2"
jq '.checkpoint.every_steps = 0 | .epochs = 40 | .log_every = 1' "$TMP/nt.json" >"$TMP/nt.t" && mv "$TMP/nt.t" "$TMP/nt.json"
$MPIRUN_RAW -np 3 $WORKER --spec "$TMP/nt.json" --batch-plan 16,32,48 >"$TMP/nt.log" 2>&1 &
nt_pid=$!
EXTRA_PIDS="${EXTRA_PIDS:-} $nt_pid"
t=0
until [ "$(grep -c ' step ' "$TMP/nt.log")" -ge 5 ]; do
    t=$((t + 1))
    [ $t -le 1200 ] && kill -0 "$nt_pid" 2>/dev/null || { cat "$TMP/nt.log"; fail "the sharded job did not train 5 steps"; }
    sleep 0.1
done
victim=$(pgrep -P "$nt_pid" -f pacer-worker 2>/dev/null | tail -1)
[ -n "$victim" ] || victim=$(ps -eo pid=,ppid=,comm= | awk '$3 == "pacer-worker" { print $1 }' | while read -r p; do
    grep -q -- "$TMP/nt.json" "/proc/$p/cmdline" 2>/dev/null && echo "$p"; done | tail -1)
[ -n "$victim" ] || fail "no rank of the sharded job to signal"
kill -TERM "$victim"
wait "$nt_pid"
nstep=$(sed -n 's/.*every rank stops after step \([0-9]*\) and checkpoints.*/\1/p' "$TMP/nt.log")
[ -n "$nstep" ] || { cat "$TMP/nt.log"; fail "no notice line in the sharded job's log"; }
[ -s "$TMP/nt/z.ckpt" ] || { cat "$TMP/nt.log"; fail "the notice left no checkpoint"; }
spec "$TMP/np.json" "$TMP/np"
jq ".checkpoint.every_steps = $nstep | .epochs = 40" "$TMP/np.json" >"$TMP/np.t" && mv "$TMP/np.t" "$TMP/np.json"
mpi 3 "$TMP/np.log" --spec "$TMP/np.json" --batch-plan 16,32,48 --stop-after-steps "$nstep"
"$DIFF" "$TMP/np/z.ckpt" "$TMP/nt/z.ckpt" 0 >"$TMP/d.txt" || { cat "$TMP/d.txt"; fail "the notice's sharded checkpoint at step $nstep is not plain ssgd's"; }
echo "ok: a notice at step $nstep leaves a sharded job's checkpoint with every rank's state, plain ssgd's bit for bit"
