# The synchronous family (issue 3):
# 1. ssgd's per-step communication time against a raw MPI_Allreduce of the same byte
#    count (nparams + 2 floats) in the same run, 2 and 4 ranks (medians; target <= 1.15x);
# 2. hpsgd: the fraction of communication hidden behind computation
#    (1 - time blocked in MPI / (rounds x the raw allreduce time); target >= 80%);
# 3. a heterogeneous cluster: 4 workers with slowdowns [1,1,2,4], LeNet-5 / Fashion-MNIST,
#    2 epochs: ssgd, ssgd + dynamic batching, hpsgd, hier-bsp, local-sgd.
. bench/lib.sh
NP_COUNT=61708   # lenet5 parameters + [batch, batch x loss]
md ""
md "### ssgd communication overhead (\`sh bench/mpi_sync.sh\`)"
md ""
md "| ranks | ssgd comm per step (median) | raw MPI_Allreduce, $NP_COUNT floats (median) | ratio |"
md "|---|---|---|---|"
for np in 2 4; do
    cat > "$TMP/c.json" <<JSON
{"name": "comm", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 20480, "test_subset": 500},
 "algorithm": {"name": "ssgd"}, "workers": $np, "batch_size": 64, "epochs": 1, "log_every": 0}
JSON
    rm -f "$TMP/m.jsonl"
    $MPIRUN -np $np $WORKER --spec "$TMP/c.json" --metrics "$TMP/m.jsonl" >/dev/null 2>&1 || exit 1
    ssgd=$(jq -r 'select(.kind == "step") | .comm_s' "$TMP/m.jsonl" | median)
    raw=$($MPIRUN -np $np $BUILD/bench/allreduce_raw $NP_COUNT 300 2>/dev/null)
    eval "raw_$np=$raw"
    md "| $np | $(awk -v x="$ssgd" 'BEGIN{printf "%.1f us", x*1e6}') | $(awk -v x="$raw" 'BEGIN{printf "%.1f us", x*1e6}') | $(ratio "$ssgd" "$raw")x |"
done

cat > "$TMP/h.json" <<JSON
{"name": "hp", "model": "lenet5", "dataset": {"name": "fashion-mnist"},
 "algorithm": {"name": "hpsgd"}, "workers": 4, "batch_size": 32, "epochs": 1, "log_every": 0,
 "optimizer": {"lr": 0.1, "momentum": 0}}
JSON
line=$($MPIRUN -np 4 $WORKER --spec "$TMP/h.json" 2>&1 | grep '^hpsgd:')
merges=$(echo "$line" | sed -n 's/^hpsgd: \([0-9]*\) merges.*/\1/p')
blocked=$(echo "$line" | sed -n 's/.*blocked \([0-9.]*\) s.*/\1/p')
hidden=$(awk -v b="$blocked" -v m="$merges" -v r="$raw_4" 'BEGIN { printf "%.1f", 100 * (1 - b / (m * r)) }')
md ""
md "hpsgd, 4 ranks, LeNet-5 batch 32: $line"
md "Hidden fraction against the raw allreduce: 1 - $blocked s / ($merges x $(awk -v x="$raw_4" 'BEGIN{printf "%.1f us", x*1e6}')) = **$hidden%** (target >= 80%)."

md ""
md "### Heterogeneous cluster: 4 workers, slowdowns [1,1,2,4], LeNet-5 / Fashion-MNIST, 2 epochs"
md ""
md "| algorithm | wall s | test accuracy | idle s per rank (0, 1, 2, 3) | final batches |"
md "|---|---|---|---|---|"
for cfg in "ssgd:false" "ssgd:true" "hpsgd:false" "hier-bsp:false" "local-sgd:false"; do
    a=${cfg%%:*}; dyn=${cfg#*:}
    cat > "$TMP/h.json" <<JSON
{"name": "het", "model": "lenet5", "dataset": {"name": "fashion-mnist"},
 "algorithm": {"name": "$a", "dynamic_batch": $dyn, "replan_steps": 20, "group_size": 2, "k_steps": 4, "local_steps": 4},
 "workers": 4, "batch_size": 32, "epochs": 2, "seed": 5, "log_every": 0,
 "optimizer": {"lr": 0.1, "momentum": 0, "lr_schedule": {"kind": "cosine"}}, "emulate": {"slowdown": [1, 1, 2, 4]}}
JSON
    $MPIRUN -np 4 $WORKER --spec "$TMP/h.json" --summary "$TMP/s.json" >/dev/null 2>&1 || exit 1
    name=$a; [ "$dyn" = true ] && name="$a + dynamic_batch"
    md "| $name | $(jq '.wall_s | . * 10 | round / 10' "$TMP/s.json") | $(jq '.test_accuracy * 10000 | round / 10000' "$TMP/s.json") | $(jq -r '[.per_rank[].idle_s | . * 10 | round / 10] | join(", ")' "$TMP/s.json") | $(jq -r '[.per_rank[].batch_final] | join(", ")' "$TMP/s.json") |"
    [ "$name" = ssgd ] && base=$(jq .wall_s "$TMP/s.json")
    [ "$name" = "ssgd + dynamic_batch" ] && dynw=$(jq .wall_s "$TMP/s.json")
done
md ""
md "Dynamic batching cuts ssgd's wall time by **$(awk -v a="$base" -v b="$dynw" 'BEGIN{printf "%.0f", 100*(1-b/a)}')%** (target >= 40% at equal accuracy)."
