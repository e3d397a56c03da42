#!/bin/sh
# tests/integration/coordinator_stop_race.sh - SIGTERM while a job's launch or cancel is
# under way: a job is POSTed, DELETEd, and the daemon gets SIGTERM at once, a short random
# delay later, or while the DELETE (and a GET of the job) are still being answered - what
# sim_service.sh's first stop_coord does, where a CI run saw the daemon abort (exit 134).
# That abort was libmicrohttpd 0.9.75's MHD_quiesce_daemon panicking ("Failed to remove
# listen FD from epoll set") when a pool thread that had just served a request took the
# listening socket out of its epoll set first; http_stop no longer quiesces (http/server.c).
# The daemon before that change fails here in one of the first few rounds (with
# tests/shims/epoll_del_delay.so widening the window, as coordinator_stop_busy.sh does).
# Every round must end with exit status 0 and no sanitizer report; a real one-worker ssgd
# job and, where SimGrid is installed, a simulated one.
#
# STOP_RACE_ROUNDS (default 3) rounds of each kind, about 15 s; tests/stress.sh runs 25
# under load.
. tests/integration/coordinator_lib.inc
command -v curl >/dev/null || skip "curl not installed (make deps)"
command -v jq >/dev/null || skip "jq not installed (make deps)"
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
ROUNDS=${STOP_RACE_ROUNDS:-3}
SHIM=$BUILD/tests/shims/epoll_del_delay.so
[ -f "$SHIM" ] || fail "$SHIM not built (make)"
ASAN_SAVED=${ASAN_OPTIONS:-}

# job FILE SIMULATED - a small LeNet-5 job of one ssgd worker, real or simulated.
job() {
    jq -n --argjson sim "$2" '{
        name: "stoprace", model: "lenet5", workers: 1, batch_size: 32, epochs: 50, seed: 3, log_every: 0,
        dataset: {name: "fashion-mnist", train_subset: 1024, test_subset: 256},
        optimizer: {lr: 0.01, momentum: 0.9}, algorithm: {name: "ssgd"},
        simulate: {enabled: $sim, slowdown: [1], deterministic: true}
    }' >"$1" || fail "cannot write $1"
}

# rnd P MAX - 0.00 with probability P, else a random delay below MAX seconds.
rnd() {
    awk -v s="$(od -An -N4 -tu4 /dev/urandom)" -v p="$1" -v m="$2" \
        'BEGIN { srand(s); r = rand(); printf "%.2f", r < p ? 0 : rand() * m }'
}

# round KIND N - one start, POST, DELETE, SIGTERM; fails unless the daemon exits 0.
round() {
    : >"$TMP/coord.log"
    # the shim widens libmicrohttpd's stop races from a microsecond to milliseconds
    # (coordinator_stop_busy.sh), where a daemon that still quiesced would abort
    # (a sanitized build's runtime must come first otherwise: told not to mind)
    export LD_PRELOAD="$SHIM" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
    start_coord --listen 127.0.0.1:0 --oversubscribe-factor 4 $SIMOPT
    unset LD_PRELOAD
    ASAN_OPTIONS=$ASAN_SAVED
    BASE=$(api_base)
    code=$(curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H "$JSON" --data-binary "@$TMP/$1.json" "$BASE/api/v1/jobs")
    [ "$code" = 201 ] || { cat "$TMP/body"; fail "$1 round $2: POST answered $code"; }
    id=$(jq -r .id "$TMP/body")
    # a short wait in most rounds: the launch, the cancel or the kill may then be under way
    [ "$(rnd 0.3 1.5)" = 0.00 ] || sleep "$(rnd 0 1.5)"
    if [ "$(rnd 0.5 1)" = 0.00 ]; then
        # SIGTERM while the DELETE, and a look at the job, are still in the HTTP layer:
        # where libmicrohttpd's quiesce aborted the daemon (exit 134, "Failed to remove
        # listen FD from epoll set") in about one round in ten before http_stop stopped
        # calling it
        curl -s -o /dev/null "$BASE/api/v1/jobs/$id" &
        curl -s -o /dev/null -X DELETE "$BASE/api/v1/jobs/$id" &
        deleting=$!
    else
        curl -s -o /dev/null -X DELETE "$BASE/api/v1/jobs/$id"
        deleting=""
        [ "$(rnd 0.4 0.8)" = 0.00 ] || sleep "$(rnd 0 0.8)"
    fi
    kill -TERM "$COORD_PID"
    wait "$COORD_PID"
    rc=$?
    COORD_PID=""
    [ -z "$deleting" ] || wait
    if [ "$rc" != 0 ] || grep -qE 'runtime error|AddressSanitizer|LeakSanitizer|ThreadSanitizer' "$TMP/coord.log"; then
        echo "--- coordinator log (round $2 of the $1 job)"
        tail -60 "$TMP/coord.log"
        fail "$1 round $2: the coordinator exited $rc on SIGTERM after job $id was posted and deleted"
    fi
    # what of the job still runs (no --stop-jobs-on-exit) is not left to the next round
    for f in "$STATE"/jobs/*/pid; do
        [ -f "$f" ] && kill_session "$(cut -d' ' -f1 "$f")"
    done
}

SIMOPT=""
kinds=real
job "$TMP/real.json" false
if command -v smpirun >/dev/null 2>&1 && [ -x "$BUILD/pacer-sim" ] && [ -x "${SMPI_BUILD:-build-smpi}/pacer-worker" ]; then
    job "$TMP/sim.json" true
    SIMOPT="--sim-platforms sim/platforms"
    kinds="real sim"
else
    echo "note: no simulated rounds (needs smpirun, $BUILD/pacer-sim and ${SMPI_BUILD:-build-smpi}/pacer-worker)"
fi
for k in $kinds; do
    n=1
    while [ "$n" -le "$ROUNDS" ]; do
        round "$k" "$n"
        n=$((n + 1))
    done
    echo "ok: $ROUNDS rounds of a $k job posted, deleted and the coordinator stopped: exit 0 each time"
done
echo "PASS"
