# `threads: 2` against `threads: 1` on one CPU rank (issue 27: >= 1.7x), for LeNet-5 /
# Fashion-MNIST (SUBSET_LENET images, batch 64) and ResNet-20 / CIFAR-10 (SUBSET_RESNET
# images, batch 128, no augmentation), with PyTorch (Debian's python3-torch,
# torch.set_num_threads) on 1 and 2 threads as the baseline: RUNS (3) rounds, the four
# runs of a model alternating in each, medians of training samples/s. The cores a run
# really used (user + system CPU time over wall time, GNU time) are printed beside it: a
# 2-thread figure means something only where the run had 2 cores (a loaded machine gives
# fewer; the load average before and after is printed too). Before and after the rounds,
# each of the first two cores the process may use runs LeNet-5's one-thread step alone
# (build/bench/layer_profile pinned with taskset, thread CPU time): on a VM one vCPU can be
# slower than the other for minutes (2026-11-25: 15-25% on LeNet-5's step), and as the
# threads split the work evenly, the slower core bounds 2 threads at 2 x fast / slow of
# one thread on the fast core: that bound is printed beside the figures.
. bench/lib.sh
RUNS=${RUNS:-3}
SUBSET_LENET=${SUBSET_LENET:-20000}
SUBSET_RESNET=${SUBSET_RESNET:-3072}
cifar="$PACER_SHARED/datasets/cifar-10"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# core_steps - "cpuA ms, cpuB ms" of the first two allowed cores, and their ratio in
# $TMP/bound (2 x fastest / slowest), or nothing where taskset or a second core is missing.
core_steps() {
    cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2 | tr ',' '\n' |
        awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }' | head -2)
    [ "$(echo "$cpus" | wc -l)" -eq 2 ] && command -v taskset >/dev/null || return 0
    for c in $cpus; do
        ms=$(taskset -c "$c" "$BUILD/bench/layer_profile" --batch 64 --steps 300 lenet5 2>/dev/null |
            sed -n '1s/.*step_ms=\([0-9.]*\).*/\1/p')
        printf 'cpu%s %s ms\n' "$c" "${ms:-?}"
    done | tee "$TMP/cores" | paste -sd, - | sed 's/,/, /'
    awk '$2 != "?" { v[n++] = $2 } END { if (n == 2) printf "%.2f", 2 * (v[0] < v[1] ? v[0] / v[1] : v[1] / v[0]) }' \
        "$TMP/cores" >"$TMP/bound"
}
cores0=$(core_steps)
bound0=$(cat "$TMP/bound" 2>/dev/null)
models="lenet5"
[ -d "$cifar" ] && models="lenet5 resnet20"
for t in 1 2; do
    cat >"$TMP/lenet5-$t.json" <<JSON
{"name": "bench", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": $SUBSET_LENET}, "epochs": 1,
 "batch_size": 64, "optimizer": {"lr": 0.02, "momentum": 0.9}, "threads": $t, "log_every": 0}
JSON
    cat >"$TMP/resnet20-$t.json" <<JSON
{"name": "bench", "model": "resnet20", "dataset": {"name": "cifar10", "path": "$cifar", "train_subset": $SUBSET_RESNET,
 "test_subset": 1000, "augment": false}, "epochs": 1, "batch_size": 128,
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "threads": $t, "log_every": 0}
JSON
done
# timed TAG CMD... - runs CMD under GNU time; the cores it used go to $TMP/TAG.cores.
timed() {
    tag=$1
    shift
    /usr/bin/time -f '%e %U %S' -o "$TMP/$tag.time" "$@" || exit 1
    awk '{ printf "%.2f\n", ($2 + $3) / $1 }' "$TMP/$tag.time" >"$TMP/$tag.cores"
}
for m in $models; do
    case $m in
        lenet5) targs="1 LeNet5 $SUBSET_LENET 64" ;;
        resnet20) targs="1 resnet20 $SUBSET_RESNET 128" ;;
    esac
    for i in $(seq "$RUNS"); do
        for t in 1 2; do
            timed "p$m$t-$i" $WORKER --spec "$TMP/$m-$t.json" --summary "$TMP/p$m$t-$i.json" >/dev/null 2>&1
            jq .train_samples_per_s "$TMP/p$m$t-$i.json" >"$TMP/p$m$t-$i.sps"
            # shellcheck disable=SC2086
            timed "t$m$t-$i" env TORCH_THREADS=$t /usr/bin/python3 bench/torch_lenet.py $targs >"$TMP/t$m$t-$i.json"
            jq .samples_per_s "$TMP/t$m$t-$i.json" >"$TMP/t$m$t-$i.sps"
        done
    done
done
cores1=$(core_steps)
bound1=$(cat "$TMP/bound" 2>/dev/null)
med() { for i in $(seq "$RUNS"); do cat "$TMP/$1-$i.$2"; done | median; }
md ""
md "### \`threads: 2\` against one thread (\`RUNS=$RUNS sh bench/threads_scaling.sh\`)"
md ""
md "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, OpenBLAS $(jq -r '.per_rank[0].device | "\(.blas) (convolutions: \(.conv // "im2col-gemm"))"' "$TMP/plenet51-1.json") kernels. Load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg)."
md ""
md "| model | engine | samples/s, 1 thread | samples/s, 2 threads | 2 / 1 | cores used, 1 / 2 threads |"
md "|---|---|---|---|---|---|"
for m in $models; do
    for e in p t; do
        one=$(med "$e${m}1" sps)
        two=$(med "$e${m}2" sps)
        name=pacer
        [ $e = t ] && name="PyTorch $(jq -r .torch "$TMP/t${m}1-1.json")"
        md "| $m | $name | $(printf %.1f "$one") | $(printf %.1f "$two") | **$(ratio "$two" "$one")x** | $(med "$e${m}1" cores) / $(med "$e${m}2" cores) |"
    done
done
md ""
md "Medians of $RUNS alternating rounds. Target (issue 27): pacer \`threads: 2\` >= 1.7x of one thread."
if [ -n "$cores0$cores1" ]; then
    md ""
    md "Each core alone (LeNet-5's one-thread step, batch 64, \`layer_profile\` pinned with taskset, thread CPU time), before: ${cores0:-not measured}; after: ${cores1:-not measured}. An even split between a fast and a slow core reaches at most 2 x fast / slow of one thread on the fast core: ${bound0:-?}x before, ${bound1:-?}x after."
fi
