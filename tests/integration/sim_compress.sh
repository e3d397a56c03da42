# pacer-sim and gradient compression (issue 47): the simulated worker is the real one, so
# its compressor sizes the messages SMPI times (no second model of the sizes), and
# deterministic mode charges compression's own compute from compress_step_flops (the same
# plan: PowerSGD's products, Gram-Schmidt and error feedback, bf16's rounding) as the
# `compress` phase. ssgd, 4 workers of LeNet-5:
#   1. comm_bytes_per_step in the simulation is the real worker's (a 2-rank mpirun of the
#      same job, uncompressed and PowerSGD rank 2): exactly (61706 + 4) floats plain.
#   2. At 0.1 Gbit/s the simulated step time drops with bf16 and more with PowerSGD
#      (compression pays); the compress phase is charged (> 0) only when compressing.
#   3. At 10 Gbit/s PowerSGD saves less than a tenth of what it saves at 0.1 Gbit/s.
. tests/integration/sim_lib.inc
need_sim
need_fashion
step() { json "$TMP/$1.out" '.train_s / .steps'; }
for bw in 0.1 10; do
    for k in none bf16 powersgd; do
        sim_spec "$TMP/$k-$bw.json" "{\"epochs\": 1, \"algorithm\": {\"compression\": {\"kind\": \"$k\", \"rank\": 2}},
                                      \"simulate\": {\"bandwidth_gbps\": $bw}}"
        sim_run "$k-$bw"
    done
done

# 1. The bytes are the real worker's.
for k in none powersgd; do
    jq 'del(.simulate) | .workers = 2' "$TMP/$k-0.1.json" >"$TMP/real-$k.json"
    $MPIRUN -np 2 $WORKER --spec "$TMP/real-$k.json" --summary "$TMP/real-$k.out" >"$TMP/real-$k.log" 2>&1 ||
        { cat "$TMP/real-$k.log"; fail "the real $k run failed"; }
    equals_num "simulated $k comm_bytes_per_step (the real worker's)" "$(json "$TMP/$k-0.1.out" .comm_bytes_per_step)" \
        "$(json "$TMP/real-$k.out" .comm_bytes_per_step)"
done
equals_num "simulated uncompressed comm_bytes_per_step" "$(json "$TMP/none-0.1.out" .comm_bytes_per_step)" $(((61706 + 4) * 4))

# 2. At 0.1 Gbit/s compression pays, and its compute is charged.
at_most "bf16 simulated step at 0.1 Gbit/s (uncompressed $(step none-0.1))" "$(step bf16-0.1)" \
    "$(awk -v b="$(step none-0.1)" 'BEGIN { print b * 0.9 }')"
at_most "PowerSGD simulated step at 0.1 Gbit/s (bf16 $(step bf16-0.1))" "$(step powersgd-0.1)" \
    "$(awk -v b="$(step bf16-0.1)" 'BEGIN { print b * 0.9 }')"
equals_num "uncompressed compress phase" "$(json "$TMP/none-0.1.out" '.per_rank[0].phases.compress')" 0
for k in bf16 powersgd; do
    [ "$(json "$TMP/$k-0.1.out" '.per_rank[0].phases.compress > 0')" = true ] ||
        fail "$k: no compression compute charged ($(json "$TMP/$k-0.1.out" '.per_rank[0].phases'))"
done
echo "ok: simulated step at 0.1 Gbit/s $(step none-0.1) s (none), $(step bf16-0.1) (bf16), $(step powersgd-0.1) (powersgd rank 2)"

# 3. At 10 Gbit/s it pays much less.
save_slow=$(awk -v a="$(step none-0.1)" -v b="$(step powersgd-0.1)" 'BEGIN { print a - b }')
save_fast=$(awk -v a="$(step none-10)" -v b="$(step powersgd-10)" 'BEGIN { print a - b }')
at_most "PowerSGD's saving per step at 10 Gbit/s (at 0.1: $save_slow s)" "$save_fast" \
    "$(awk -v s="$save_slow" 'BEGIN { print s / 10 }')"
