# --policy hetero grows an elastic job past its ask (issue 46, the spec's max_workers) onto
# idle hosts, and takes the lent slot back when another job waits, on the network-namespace
# cluster (tests/integration/netns_cluster.inc: pw1..pw3, a slot each), with a minimum run
# time of 2 s and a resize cost of 0.1 s as in hetero_resize.sh, and the default grow
# overhead (0.2). Equal lenet5 profiles for the three hosts (one class, x1). An ssgd lenet5
# job of workers 2, max_workers 3 runs alone on two hosts; once it has a checkpoint the
# policy grows it to 3 slots (the third host idle): stopped and relaunched from its
# checkpoint on 3 ranks (the worker's --world 3), the resize 2 -> 3 in its "resizes", in
# pacer:events and in its placement with the reason "grown from 2 x1 to 3 x1 slots onto
# idle hosts (past its ask of 2) (hetero)", the worker's log saying it runs grown over the
# same global batch. Then a 1-worker job is submitted: the policy takes the lent slot back
# (a shrink 3 -> 2 naming the small job), the small job runs on the freed host to
# SUCCEEDED, and the first is cancelled. Everything is awaited by polling with a deadline;
# no speed is asserted. Also: --hetero-grow-overhead's refusals. Own prefix phg- and /24
# 10.87.0. Needs root (else exit 77).

T=hetero_grow T_PREFIX=phg- T_NET=10.87.0
T_COORD_ARGS="--policy hetero --hetero-min-run 2 --hetero-resize-cost 0.1"
. tests/integration/netns_cluster.inc

for bad in "--hetero-grow-overhead x" "--hetero-grow-overhead 1.5" "--hetero-grow-overhead -0.1"; do
    # shellcheck disable=SC2086 # the option and its value, two words
    "$COORD" $bad >"$TMP/opt.out" 2>&1 && fail "pacer-coordinator $bad was accepted"
    grep -q "^pacer-coordinator: --hetero-grow-overhead: '${bad#* }' is not a number between 0 and 0.99" \
        "$TMP/opt.out" || fail "pacer-coordinator $bad: $(cat "$TMP/opt.out")"
done
echo "ok: --hetero-grow-overhead refuses what is not a number in [0, 0.99]"

for h in pw1 pw2 pw3; do
    k=pacer:profile:$h:cpu:lenet5
    redis-cli -h "$PC" HSET "$k" host "$h" device cpu model lenet5 samples_per_s 500 >/dev/null || fail "HSET $k"
    redis-cli -h "$PC" SADD pacer:profiles "$k" >/dev/null || fail "SADD $k"
done

# The grower: 2 workers x 32 (global batch 64), up to 3, a checkpoint every 8 steps, 100
# epochs of 3072 images, rank 0 sleeping through 60x its step (emulate: no value changed)
# so that it trains through everything below; cancelled at the end. The small one: 1 rank.
cat >"$TMP/big.json" <<JSON
{"name": "big", "model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 2, "max_workers": 3,
 "batch_size": 32, "dataset": {"name": "fashion-mnist", "train_subset": 3072, "test_subset": 200},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "epochs": 100, "seed": 11, "log_every": 8,
 "checkpoint": {"every_steps": 8}, "emulate": {"schedule": [{"step": 0, "rank": 0, "slowdown": 60}]}}
JSON
cat >"$TMP/small.json" <<JSON
{"name": "small", "model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 1, "batch_size": 32,
 "dataset": {"name": "fashion-mnist", "train_subset": 512, "test_subset": 200},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "epochs": 1, "seed": 5, "log_every": 4}
JSON

# await SECONDS WHAT CMD... - polls CMD until it succeeds; fails naming WHAT at the deadline,
# or at once when the big job has ended (it must train through the whole test).
await() {
    end=$(($(date +%s) + $1))
    limit=$1 what=$2
    shift 2
    until "$@"; do
        [ "$(date +%s)" -ge "$end" ] && { tail -30 "$TMP/coord.log"; fail "$what: not after $limit s"; }
        case $(state_of "$big") in SUCCEEDED | FAILED | CANCELLED)
            tail -30 "$STATE/jobs/$big/log"; fail "$big ended $(jq -r '.state + ": " + .reason' "$TMP/body") while waiting for: $what" ;;
        esac
        sleep 0.3
    done
}
field() { [ "$(http GET "/api/v1/jobs/$1")" = 200 ] || fail "GET /api/v1/jobs/$1: $(cat "$TMP/body")"; jq -c "$2" "$TMP/body"; }
is() { [ "$(field "$1" "$2")" = "$3" ]; }
checkpointed() { [ -s "$STATE/jobs/$big/checkpoints/big.ckpt" ]; }
# event JOB REASON - a resize event of JOB with REASON in pacer:events.
event() {
    redis-cli -h "$PC" --raw XRANGE pacer:events - + | grep '"type":"resize"' | grep "\"job\":\"$1\"" |
        grep -q "\"reason\":\"$2\""
}

big=$(submit "$TMP/big.json")
await 180 "$big running on 2 ranks" is "$big" '[.state, .world]' '["RUNNING",2]'
await 300 "$big's first checkpoint" checkpointed
echo "ok: $big runs on 2 ranks ($(field "$big" '[.placement.hosts_by_class[][]] | join(" ")')) and has a checkpoint"

# 1. The grow past its ask onto the idle third host.
await 180 "$big grown past its ask" is "$big" '.resizes | length >= 1' true
grow="grown from 2 x1 to 3 x1 slots onto idle hosts (past its ask of 2) (hetero)"
r=$(field "$big" '.resizes[0]')
[ "$(echo "$r" | jq -r '"\(.from) \(.to) \(.reason)"')" = "2 3 $grow" ] || fail "$big's first resize: $r"
await 180 "$big running on 3 ranks on pw1..pw3" is "$big" \
    '[.state, .world, ([.placement.hosts_by_class[][]] | sort), .placement.reason]' \
    "[\"RUNNING\",3,[\"pw1\",\"pw2\",\"pw3\"],\"$grow\"]"
event "$big" "$grow" || fail "no resize event of $big with the reason '$grow' in pacer:events"
grown() { grep -q "elastic: grown to 3 workers (the spec's 2, max_workers 3) sharing its global batch of 64" \
    "$STATE/jobs/$big/log" && grep -q 'resumed from .* at step [1-9]' "$STATE/jobs/$big/log"; }
await 120 "$big's worker to run grown to 3 from its checkpoint" grown
echo "ok: $big $grow (resize, event, placement; the worker resumed on 3 ranks over the global batch of 64)"

# 2. A job waits: the lent slot is taken back first.
small=$(submit "$TMP/small.json")
await 180 "$big shrunk for $small" is "$big" '.resizes | length >= 2' true
shrink="shrunk from 3 x1 to 2 x1 slots to admit $small (hetero)"
r=$(field "$big" '.resizes[1]')
[ "$(echo "$r" | jq -r '"\(.from) \(.to) \(.reason)"')" = "3 2 $shrink" ] || fail "$big's second resize: $r"
event "$big" "$shrink" || fail "no resize event of $big with the reason '$shrink' in pacer:events"
echo "ok: $big $shrink (resize, event)"
end=$(($(date +%s) + 300))
until [ "$(state_of "$small")" = SUCCEEDED ]; do
    case $(jq -r .state "$TMP/body") in FAILED | CANCELLED) fail "$small $(jq -r '.state + ": " + .reason' "$TMP/body")" ;; esac
    [ "$(date +%s)" -ge "$end" ] && fail "$small not SUCCEEDED after 300 s: $(jq -c '{state, reason, queue}' "$TMP/body")"
    sleep 0.3
done
echo "ok: $small ran beside it to SUCCEEDED ($(jq -c '.placement.hosts_by_class' "$TMP/body"))"

case $(http DELETE "/api/v1/jobs/$big") in 200 | 202) ;; *) fail "DELETE /api/v1/jobs/$big: $(cat "$TMP/body")" ;; esac
end=$(($(date +%s) + 120))
until [ "$(state_of "$big")" = CANCELLED ]; do
    [ "$(date +%s)" -ge "$end" ] && fail "$big not CANCELLED 120 s after its cancel"
    sleep 0.3
done
echo "ok: $big cancelled"
