# How a rank waits for its peers (worker/emulate.h): spinning in MPI's progress loop, or
# polling and napping (~0.1 ms) so that a waiting rank leaves its core to other work. By
# default politely only on an oversubscribed host or with an emulated slowdown; the
# environment's PACER_POLITE_WAIT=1 says the host is shared with work the job cannot see,
# 0 spins whatever the count says. The
# summary's emulation.polite_wait says which rank 0 did; each way trains the same steps.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
# run NAME SLOWDOWN ENV: a 2-rank ssgd job of 8 steps (rank 1 SLOWDOWN times slower, none
# when 0), its emulation.polite_wait
run() {
    cat >"$TMP/$1.json" <<JSON
{"name": "$1", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 256, "test_subset": 64},
 "algorithm": {"name": "ssgd"}, "workers": 2, "batch_size": 32, "epochs": 1, "seed": 3, "log_every": 0
 $([ "$2" = 0 ] || echo ", \"emulate\": {\"slowdown\": [1, $2]}")}
JSON
    env -u PACER_POLITE_WAIT $3 $MPIRUN -np 2 $WORKER --spec "$TMP/$1.json" --summary "$TMP/$1.out" >"$TMP/$1.log" 2>&1 ||
        { cat "$TMP/$1.log"; fail "$1 failed"; }
    jq -r '.emulation.polite_wait' "$TMP/$1.out"
}
[ "$(run slow 2 "")" = true ] || fail "a rank with an emulated slowdown of 2 did not wait politely"
[ "$(run spin 2 PACER_POLITE_WAIT=0)" = false ] || fail "PACER_POLITE_WAIT=0 did not make the ranks spin"
[ "$(run shared 0 PACER_POLITE_WAIT=1)" = true ] || fail "PACER_POLITE_WAIT=1 did not make the ranks wait politely"
[ "$(run junk 0 PACER_POLITE_WAIT=yes)" = "$(run plain 0 "")" ] || fail "PACER_POLITE_WAIT=yes changed the default"
for r in spin shared; do
    [ "$(json "$TMP/$r.out" .train_loss)" = "$(json "$TMP/slow.out" .train_loss)" ] ||
        fail "$r trained to another loss than slow: the wait changed a value"
done
echo "ok: polite by default with a slowdown, spinning with PACER_POLITE_WAIT=0, polite with 1 on a host that fits"
