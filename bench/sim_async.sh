# bench/sim_async.sh - the asynchronous claims on a simulated cluster (issue 12): the
# DBS-SGD paper's comparison and the thesis' order DDC-ASGD >= DC-ASGD >= ASGD, each
# with 5 seeds at equal simulated training time, deterministic (bench/sim_lib.sh).
#
#   DBS-SGD (Ji et al. 2019): asgd, nsoftsync (n = 2), dbs-sgd; 4 workers on
#     sim/platforms/hetero-1124.xml and hetero-1118.xml (host speeds 1 : 1 : 1/2 : 1/4 and
#     1 : 1 : 1 : 1/8 of 10 Gflop/s, 10 Gbit/s links, the parameter server on its own host);
#     MNIST with LeNet-5 (training loss) and CIFAR-10 with cifar10_quick (test accuracy
#     and loss); speedup = training samples per simulated second over one worker alone.
#   Thesis: asgd, dc-asgd, ddc-asgd on hetero-1124, Fashion-MNIST and CIFAR-10.
#
# Budgets (simulated seconds of training, evaluations not counted): LeNet-5 10 s
# (MNIST_BUDGET; about 1.8 epochs on hetero-1124), cifar10_quick 40 s (CIFAR_BUDGET; about
# 0.3 epoch: each cifar10_quick sample costs this machine about 4 ms of real CPU). All
# runs: batch 32, momentum 0.5 applied as given (async_momentum "explicit", as when the
# figures in docs/RESULTS.md were measured), lr 0.04 (LeNet-5) or 0.02 (cifar10_quick), dbs-sgd
# re-plans every 10 updates per worker. 115 runs; about 1 hour of CPU, mostly CIFAR-10.
. bench/lib.sh
. bench/sim_lib.sh
MNIST_BUDGET=${MNIST_BUDGET:-10}
CIFAR_BUDGET=${CIFAR_BUDGET:-40}
MNIST_DIR=$PACER_SHARED/datasets/mnist
CIFAR_DIR=$PACER_SHARED/datasets/cifar-10
FASHION_DIR=/usr/share/datasets/fashion-mnist

# add CONFIG DATASET DIR MODEL LR PLATFORM ALGO BUDGET - one configuration, every seed.
add() {
    for s in $SEEDS; do
        sim_add "$1-s$s" "{\"name\": \"cmp\", \"model\": \"$4\", \"dataset\": {\"name\": \"$2\", \"path\": \"$3\"},
          \"algorithm\": {\"name\": \"$7\", \"n\": 2, \"replan_steps\": 10}, \"workers\": 4, \"batch_size\": 32,
          \"epochs\": 1000, \"seed\": $s, \"log_every\": 0,
          \"optimizer\": {\"lr\": $5, \"momentum\": 0.5, \"async_momentum\": \"explicit\"},
          \"simulate\": {\"platform\": \"sim/platforms/$6.xml\", \"deterministic\": true}}" --time-budget "$8"
    done
}
# One worker alone on a slowdown-1 host: the speedup's reference (deterministic, so one
# seed; the budget only needs a few hundred steps).
one() { # CONFIG DATASET DIR MODEL
    sim_add "$1-s1" "{\"name\": \"one\", \"model\": \"$4\",
      \"algorithm\": {\"name\": \"sgd\"}, \"workers\": 1, \"batch_size\": 32, \"epochs\": 1000, \"seed\": 1,
      \"log_every\": 0, \"optimizer\": {\"lr\": 0.01, \"momentum\": 0.5},
      \"dataset\": {\"name\": \"$2\", \"path\": \"$3\", \"train_subset\": 4096, \"test_subset\": 512},
      \"simulate\": {\"deterministic\": true}}" --time-budget 2
}

have_mnist=0 have_cifar=0 have_fashion=0
[ -d "$MNIST_DIR" ] && have_mnist=1
[ -d "$CIFAR_DIR" ] && have_cifar=1
[ -d "$FASHION_DIR" ] && have_fashion=1
for p in hetero-1124 hetero-1118; do
    for a in asgd nsoftsync dbs-sgd; do
        [ $have_mnist = 1 ] && add "mnist-$p-$a" mnist "$MNIST_DIR" lenet5 0.04 $p $a "$MNIST_BUDGET"
        [ $have_cifar = 1 ] && add "cifar-$p-$a" cifar10 "$CIFAR_DIR" cifar10_quick 0.02 $p $a "$CIFAR_BUDGET"
    done
done
for a in asgd dc-asgd ddc-asgd; do
    [ $have_fashion = 1 ] && add "fashion-hetero-1124-$a" fashion-mnist "$FASHION_DIR" lenet5 0.04 hetero-1124 $a "$MNIST_BUDGET"
    [ $have_cifar = 1 ] && [ $a != asgd ] && add "cifar-hetero-1124-$a" cifar10 "$CIFAR_DIR" cifar10_quick 0.02 hetero-1124 $a "$CIFAR_BUDGET"
done
[ $have_mnist = 1 ] && one mnist-one mnist "$MNIST_DIR" lenet5
[ $have_fashion = 1 ] && one fashion-one fashion-mnist "$FASHION_DIR" lenet5
[ $have_cifar = 1 ] && one cifar-one cifar10 "$CIFAR_DIR" cifar10_quick
sim_go

sps_one() { (SEEDS=1; sim_stat "$1-one" sps | cut -d' ' -f1); }
# speedup cell: mean ± sd of sps / one worker's
speedup() { set -- $(sim_stat "$1" sps) "$2"; awk -v m="$1" -v s="$2" -v o="$4" 'BEGIN { printf "%.2f ± %.2f", m / o, s / o }'; }
inv() { awk -v x="$1" 'BEGIN { printf "%.9g", 1 / x }'; }
stale() { sim_rows "$1" | jq -rs 'map(.stale_mean) | transpose | map(add / length * 100 | round / 100) | join(", ")'; }

table() { # DATASET PLATFORM ALGOS...
    ds=$1 p=$2
    shift 2
    md ""
    md "| algorithm | training loss, last 10% | test accuracy | test loss | speedup | mean staleness per worker |"
    md "|---|---|---|---|---|---|"
    for a in "$@"; do
        c=$ds-$p-$a
        md "| $a | $(cell "$c" loss_end) | $(cell "$c" test_accuracy 4) | $(cell "$c" test_loss) | $(speedup "$c" "$(sps_one "$ds")") | $(stale "$c") |"
    done
}

# verdict_reduction A B FACTOR FIELD: is mean(A) <= FACTOR x mean(B), a reduction of at
# least 1 - FACTOR? Prints the reduction 1 - A/B with its 95% interval and the verdict:
# holds when the interval of A - FACTOR x B is below 0, missed when it is above 0,
# otherwise "not excluded" (with a reduction shown) or "not shown".
verdict_reduction() {
    set -- "$3" $(sim_stat "$1" "$4") $(sim_stat "$2" "$4")
    # $1 FACTOR; $2..$4 A's mean sd n; $5..$7 B's
    d=$(welch "$2" "$3" "$4" "$5" "$6" "$7")
    t=$(welch "$2" "$3" "$4" "$5" "$6" "$7" "$1")
    set -- "$5" $d $t
    awk -v mb="$1" -v d="$2" -v lo="$3" -v hi="$4" -v tlo="$6" -v thi="$7" 'BEGIN {
        if (thi < 0) v = "holds"
        else if (tlo > 0) v = (hi < 0) ? "**missed** (a reduction, smaller than claimed)" : "**missed**"
        else v = (hi < 0) ? "not excluded (a reduction; the claimed size inside the interval)" : "not shown"
        printf "%.0f%% [%.0f%%, %.0f%%] | %s", -100 * d / mb, -100 * hi / mb, -100 * lo / mb, v }'
}
# verdict_gain A B CLAIM FIELD SCALE: is mean(A) - mean(B) about CLAIM (in FIELD x SCALE units)?
verdict_gain() {
    set -- "$1" "$2" "$3" "$4" "$5" $(sim_stat "$1" "$4") $(sim_stat "$2" "$4")
    set -- "$3" "$5" $(welch "$6" "$7" "$8" "$9" "${10}" "${11}")
    awk -v c="$1" -v k="$2" -v d="$3" -v lo="$4" -v hi="$5" 'BEGIN {
        d *= k; lo *= k; hi *= k
        v = (hi < c) ? "**missed**" : (lo > 0 ? "holds" : "not shown (interval includes 0)")
        if (hi < c && lo > 0) v = "**missed** (a gain, smaller than claimed)"
        printf "%+.2f [%+.2f, %+.2f] | %s", d, lo, hi, v }'
}
# order A B FIELD SCALE: A >= B? ("better" when the interval of A - B is above 0)
order() {
    set -- "$3" "$4" $(sim_stat "$1" "$3") $(sim_stat "$2" "$3")
    set -- "$2" $(welch "$3" "$4" "$5" "$6" "$7" "$8")
    awk -v k="$1" -v d="$2" -v lo="$3" -v hi="$4" 'BEGIN {
        d *= k; lo *= k; hi *= k
        v = lo > 0 ? "holds (better)" : (hi < 0 ? "**missed** (worse)" : "holds only as a tie (interval includes 0)")
        printf "%+.2f [%+.2f, %+.2f] | %s", d, lo, hi, v }'
}

md ""
md "### DBS-SGD paper's comparison, simulated (\`sh bench/sim_async.sh\`; $(echo $SEEDS | wc -w) seeds, mean ± sd)"
for p in hetero-1124 hetero-1118; do
    if [ $have_mnist = 1 ]; then
        md ""; md "#### LeNet-5 / MNIST on sim/platforms/$p.xml, ${MNIST_BUDGET} simulated s of training"
        table mnist $p asgd nsoftsync dbs-sgd
    fi
    if [ $have_cifar = 1 ]; then
        md ""; md "#### cifar10_quick / CIFAR-10 on sim/platforms/$p.xml, ${CIFAR_BUDGET} simulated s of training"
        table cifar $p asgd nsoftsync dbs-sgd
    fi
done
md ""
md "Claims (95% Welch intervals over the seeds; speedups in units of one worker alone):"
md ""
md "| claim | platform | against | measured [95% interval] | verdict |"
md "|---|---|---|---|---|"
for p in hetero-1124 hetero-1118; do
    for o in asgd nsoftsync; do
        [ $have_mnist = 1 ] && md "| MNIST training loss 60% below | $p | $o | $(verdict_reduction mnist-$p-dbs-sgd mnist-$p-$o 0.4 loss_end) |"
        [ $have_cifar = 1 ] && md "| CIFAR-10 test accuracy about 10 points above | $p | $o | $(verdict_gain cifar-$p-dbs-sgd cifar-$p-$o 10 test_accuracy 100) |"
        [ $have_cifar = 1 ] && md "| CIFAR-10 test loss 10% below | $p | $o | $(verdict_reduction cifar-$p-dbs-sgd cifar-$p-$o 0.9 test_loss) |"
        [ $have_cifar = 1 ] && md "| speedup not reduced (CIFAR-10 runs) | $p | $o | $(order cifar-$p-dbs-sgd cifar-$p-$o sps "$(inv "$(sps_one cifar)")") |"
        [ $have_mnist = 1 ] && md "| speedup not reduced (MNIST runs) | $p | $o | $(order mnist-$p-dbs-sgd mnist-$p-$o sps "$(inv "$(sps_one mnist)")") |"
    done
done

md ""
md "### The thesis' order DDC-ASGD >= DC-ASGD >= ASGD, simulated (\`sh bench/sim_async.sh\`; sim/platforms/hetero-1124.xml; 5 seeds)"
if [ $have_fashion = 1 ]; then
    md ""; md "#### LeNet-5 / Fashion-MNIST, ${MNIST_BUDGET} simulated s of training"
    table fashion hetero-1124 asgd dc-asgd ddc-asgd
fi
if [ $have_cifar = 1 ]; then
    md ""; md "#### cifar10_quick / CIFAR-10, ${CIFAR_BUDGET} simulated s of training"
    table cifar hetero-1124 asgd dc-asgd ddc-asgd
fi
md ""
md "| data set | pair | test accuracy difference, points [95%] | verdict |"
md "|---|---|---|---|"
for ds in fashion cifar; do
    eval "h=\$have_$ds"
    [ "$h" = 1 ] || continue
    md "| $ds | ddc-asgd >= dc-asgd | $(order $ds-hetero-1124-ddc-asgd $ds-hetero-1124-dc-asgd test_accuracy 100) |"
    md "| $ds | dc-asgd >= asgd | $(order $ds-hetero-1124-dc-asgd $ds-hetero-1124-asgd test_accuracy 100) |"
done
