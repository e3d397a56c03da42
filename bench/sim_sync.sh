# bench/sim_sync.sh - the synchronous family's claims on a simulated cluster (issue 12),
# 5 seeds each at equal simulated training time, deterministic (bench/sim_lib.sh):
#   HPSGD against ssgd where communication matters: 4 workers on
#     sim/platforms/slow-network4.xml (1 Gbit/s links, 50 us) and on a generated platform
#     with 0.1 Gbit/s links;
#   hier-bsp against ssgd on 2 nodes of 2 workers (200 Gbit/s inside a node, 1 Gbit/s and
#     50 us between nodes; hier-bsp averages across nodes every 8 steps).
# LeNet-5 / Fashion-MNIST, batch 32 per worker, lr 0.04, momentum 0.5, 10 simulated s of
# training (SYNC_BUDGET). 40 runs; about 10 minutes of CPU.
. bench/lib.sh
. bench/sim_lib.sh
BUDGET=${SYNC_BUDGET:-10}
add() { # CONFIG ALGO SIMULATE_JSON
    for s in $SEEDS; do
        sim_add "$1-s$s" "{\"name\": \"sync\", \"model\": \"lenet5\", \"dataset\": {\"name\": \"fashion-mnist\"},
          \"algorithm\": {\"name\": \"$2\", \"k_steps\": 8}, \"workers\": 4, \"batch_size\": 32, \"epochs\": 1000,
          \"seed\": $s, \"log_every\": 0, \"optimizer\": {\"lr\": 0.04, \"momentum\": 0.5},
          \"simulate\": $3}" --time-budget "$BUDGET"
    done
}
SLOW='{"platform": "sim/platforms/slow-network4.xml", "deterministic": true}'
SLOWER='{"bandwidth_gbps": 0.1, "latency_us": 50, "deterministic": true}'
NODES='{"gpus_per_node": 2, "bandwidth_gbps": 1, "latency_us": 50, "deterministic": true}'
for a in ssgd hpsgd; do
    add "slow1g-$a" $a "$SLOW"
    add "slow100m-$a" $a "$SLOWER"
done
for a in ssgd hier-bsp; do add "nodes2x2-$a" $a "$NODES"; done
sim_go

row() { # CONFIG ALGO
    md "| $2 | $(cell "$1" loss_end) | $(cell "$1" test_accuracy 4) | $(cell "$1" test_loss) | $(cell "$1" steps 0) | $(cell "$1" comm_frac 2) |"
}
diffrow() { # PLATFORM A B
    set -- "$1" "$2" "$3" $(sim_stat "$2" test_accuracy) $(sim_stat "$3" test_accuracy) $(sim_stat "$2" loss_end) $(sim_stat "$3" loss_end)
    acc=$(welch "$4" "$5" "$6" "$7" "$8" "$9")
    loss=$(welch "${10}" "${11}" "${12}" "${13}" "${14}" "${15}")
    set -- "$1" "$2" "$3" $acc $loss
    awk -v p="$1" -v a="$2" -v b="$3" -v d="$4" -v lo="$5" -v hi="$6" -v ld="$7" -v llo="$8" -v lhi="$9" 'BEGIN {
        v = lo > 0 ? "more accurate" : (hi < 0 ? "less accurate" : "no difference shown")
        w = lhi < 0 ? "lower loss" : (llo > 0 ? "higher loss" : "no difference shown")
        printf "| %s | %s - %s | %+.2f [%+.2f, %+.2f] | %s | %+.3f [%+.3f, %+.3f] | %s |\n", p, a, b, 100 * d, 100 * lo, 100 * hi, v, ld, llo, lhi, w }'
}
md ""
md "### HPSGD and hier-bsp against ssgd, simulated (\`sh bench/sim_sync.sh\`; $(echo $SEEDS | wc -w) seeds, mean ± sd, ${BUDGET} simulated s of training)"
for c in "slow1g sim/platforms/slow-network4.xml (4 workers, 1 Gbit/s, 50 us) hpsgd" \
         "slow100m generated: 4 workers, 0.1 Gbit/s, 50 us hpsgd" \
         "nodes2x2 generated: 2 nodes x 2 workers, 200 Gbit/s inside, 1 Gbit/s and 50 us between hier-bsp"; do
    set -- $c
    k=$1
    shift
    eval "other=\${$#}"
    desc=$(echo "$*" | sed "s/ $other\$//")
    md ""
    md "#### LeNet-5 / Fashion-MNIST on $desc"
    md ""
    md "| algorithm | training loss, last 10% | test accuracy | test loss | steps | communication + waiting / step time |"
    md "|---|---|---|---|---|---|"
    row "$k-ssgd" ssgd
    row "$k-$other" "$other"
done
md ""
md "| platform | pair | test accuracy difference, points [95%] | | training loss difference [95%] | |"
md "|---|---|---|---|---|---|"
diffrow slow-network4 slow1g-hpsgd slow1g-ssgd | sed 's/slow1g-//g' | tee -a "$OUT"
diffrow "0.1 Gbit/s" slow100m-hpsgd slow100m-ssgd | sed 's/slow100m-//g' | tee -a "$OUT"
diffrow "2 x 2 nodes" nodes2x2-hier-bsp nodes2x2-ssgd | sed 's/nodes2x2-//g' | tee -a "$OUT"
