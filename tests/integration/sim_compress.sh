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
#   4. algorithm.compression.min_gain keeps it at 0.1 Gbit/s and drops it at 10 (below).
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

# 4. min_gain's measured choice (worker/compress.h) decides where compression pays: the
# probe times steps 2-3 (plain) against 4-5 (compressed) in simulated time, so the
# verdict is deterministic: at 0.1 Gbit/s PowerSGD stays on (every step after the probe
# compressed), at 10 Gbit/s it saves under 15% of a step and the job goes on plain. The
# bytes per step say which steps were compressed: 8 steps, 4 of warm-up.
for bw in 0.1 10; do
    sim_spec "$TMP/auto-$bw.json" "{\"epochs\": 1, \"simulate\": {\"bandwidth_gbps\": $bw},
        \"algorithm\": {\"compression\": {\"kind\": \"powersgd\", \"rank\": 2, \"warmup_steps\": 4, \"probe_steps\": 2,
                                          \"min_gain\": 0.15}}}"
    sim_run "auto-$bw"
done
for want in 0.1:compress 10:plain; do
    bw=${want%%:*}
    got=$(json "$TMP/auto-$bw.out" .compression.auto.verdict)
    [ "$got" = "${want#*:}" ] || fail "min_gain's verdict at $bw Gbit/s is $got, want ${want#*:} ($(jq -c .compression.auto "$TMP/auto-$bw.out"))"
done
plain=$(json "$TMP/auto-0.1.out" .compression.plain_bytes_per_step)
comp=$(json "$TMP/auto-0.1.out" .compression.compressed_bytes_per_step)
equals_num "0.1 Gbit/s: comm_bytes_per_step (4 plain steps, 4 compressed)" \
    "$(json "$TMP/auto-0.1.out" .comm_bytes_per_step)" "$(awk -v p="$plain" -v c="$comp" 'BEGIN { print (4 * p + 4 * c) / 8 }')"
equals_num "10 Gbit/s: comm_bytes_per_step (2 compressed steps, the probe's)" \
    "$(json "$TMP/auto-10.out" .comm_bytes_per_step)" "$(awk -v p="$plain" -v c="$comp" 'BEGIN { print (6 * p + 2 * c) / 8 }')"
at_least "0.1 Gbit/s: the probe's gain" "$(json "$TMP/auto-0.1.out" .compression.auto.gain)" 0.15
at_most "10 Gbit/s: the probe's gain" "$(json "$TMP/auto-10.out" .compression.auto.gain)" 0.15
echo "ok: min_gain 0.15 keeps PowerSGD at 0.1 Gbit/s (gain $(json "$TMP/auto-0.1.out" .compression.auto.gain)), drops it at 10 (gain $(json "$TMP/auto-10.out" .compression.auto.gain))"
