#!/bin/sh
# deploy/demo.sh - `make demo`: the job service end to end on this machine.
#
# Starts build/pacer-coordinator (with its embedded Redis, state in var/demo), submits
# deploy/demo-job.json over the REST API (4 LeNet-5 workers on Fashion-MNIST, emulated
# slowdowns in the ratio 1 : 1 : 2 : 4, dynamic batch sizing), prints the dashboard's
# URL, and follows the job until it ends (about 20 s on 2 cores). Then a language model,
# deploy/demo-job-gpt.json: the built-in GPT on the GPL 3 of Debian's base-files (copied
# under the coordinator's default data root STATE/data, bytes as tokens, its eval_sample
# continued at each evaluation; a few seconds), and the API's generate continues a prompt
# from its weights, as the job page's Generate box does. Then a second image job,
# deploy/demo-job-ssgd.json: the same workers on plain synchronous SGD for 5 epochs, where
# every step waits for the slowest one (3 epochs took 2.3 times the first job's time on a
# loaded 2-core machine: 78 s against 34 s), so that it runs a minute or two on 2 cores:
# the page has a running job to show while it is being looked at, and the two can be
# compared there. Then it keeps serving the dashboard, with or without a
# terminal, until Ctrl-C (or SIGTERM), which stops the coordinator, which stops a job
# that still runs (--stop-jobs-on-exit) and the embedded Redis: nothing is left running.
# Being told to stop is how the demo is meant to end: the exit status is then 0, so that
# `make demo` reports no error (make itself, when it is the one signalled, still dies by
# the signal, as GNU make does).
#
# The slowdowns are scaled to this machine by deploy/fit-slowdowns.jq, the rule the
# benchmarks use too: an emulated slow node is what it says only while the workers'
# compute (threads / slowdown each) fits in the cores (worker/emulate.h); [1, 1, 2, 4]
# asks for 2.75 cores, so on 2 cores it would show how the OS shares them. The factors
# are multiplied by the smallest power of two that brings that demand to at most half the
# cores: [4, 4, 8, 16] on 2 cores, [1, 1, 2, 4] from 6. The relative speeds stay. The job
# page says next to the slowdowns whether the emulation was faithful.
#
#   sh deploy/demo.sh                 run the demo
#   sh deploy/demo.sh --print-spec    print the (first) spec it would submit here, and exit
#
# Environment: BUILD (build), DEMO_STATE (var/demo), DEMO_LISTEN (127.0.0.1:8080),
# DEMO_SPEC (deploy/demo-job.json), DEMO_SPEC2 (the second job, deploy/demo-job-ssgd.json;
# empty: none), DEMO_LM (the language model, deploy/demo-job-gpt.json; empty: none), DEMO_CORES (the cores the slowdowns are scaled to: nproc, the CPUs this
# process may use, as the worker counts them), PACER_TOKEN (optional: the API then needs
# it).
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
COORD=$BUILD/pacer-coordinator
STATE=${DEMO_STATE:-var/demo}
LISTEN=${DEMO_LISTEN:-127.0.0.1:8080}
SPEC=${DEMO_SPEC:-deploy/demo-job.json}
SPEC2=${DEMO_SPEC2-deploy/demo-job-ssgd.json}
LM=${DEMO_LM-deploy/demo-job-gpt.json}
LICENSES=/usr/share/common-licenses
BASE=http://$LISTEN

die() { echo "demo: $*" >&2; exit 1; }
command -v jq >/dev/null || die "jq is not installed (make deps)"
[ -f "$SPEC" ] || die "no job spec at $SPEC"
[ -z "$SPEC2" ] || [ -f "$SPEC2" ] || die "no job spec at $SPEC2 (DEMO_SPEC2; empty for no second job)"
[ -z "$LM" ] || [ -f "$LM" ] || die "no job spec at $LM (DEMO_LM; empty for no language model)"
CORES=${DEMO_CORES:-$(nproc)}
case $CORES in '' | *[!0-9]* | 0*) die "DEMO_CORES: $CORES is not a positive whole number of cores" ;; esac

RUN_SPEC=$(jq --argjson cores "$CORES" -f deploy/fit-slowdowns.jq "$SPEC") || die "$SPEC is not JSON"
RUN_SPEC2=""
if [ -n "$SPEC2" ]; then
    RUN_SPEC2=$(jq --argjson cores "$CORES" -f deploy/fit-slowdowns.jq "$SPEC2") || die "$SPEC2 is not JSON"
fi
if [ "${1:-}" = --print-spec ]; then
    echo "$RUN_SPEC"
    exit 0
fi
[ -x "$COORD" ] || die "$COORD is not built (run make)"
command -v curl >/dev/null || die "curl is not installed (make deps)"
command -v redis-server >/dev/null || die "redis-server is not installed (make deps)"
[ -d /usr/share/datasets/fashion-mnist ] || die "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist; make deps)"
if curl -s -o /dev/null "$BASE/healthz"; then
    die "something already answers on $LISTEN (another coordinator?); set DEMO_LISTEN=127.0.0.1:PORT"
fi

# mpirun as root inside containers, quiet about shared-memory copies.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mkdir -p "$STATE"
LOG=$STATE/coordinator.log
# the language model's text, under the coordinator's default data root STATE/data: copies,
# since a link out of the data roots is not read
if [ -n "$LM" ] && [ -r "$LICENSES/GPL-3" ] && [ -r "$LICENSES/LGPL-2.1" ]; then
    mkdir -p "$STATE/data/licenses"
    cp "$LICENSES/GPL-3" "$STATE/data/licenses/train.txt"
    cp "$LICENSES/LGPL-2.1" "$STATE/data/licenses/val.txt"
elif [ -n "$LM" ]; then
    echo "demo: no language model: $LICENSES (Debian's base-files) has no GPL-3 and LGPL-2.1"
    LM=""
fi
"$COORD" --state-dir "$STATE" --listen "$LISTEN" --stop-jobs-on-exit >>"$LOG" 2>&1 &
COORD_PID=$!

stopped=0
stop() {
    [ "$stopped" = 1 ] && return
    stopped=1
    if kill -0 "$COORD_PID" 2>/dev/null; then
        echo
        echo "demo: stopping the coordinator (pid $COORD_PID): a running job and the embedded Redis stop with it"
        kill -TERM "$COORD_PID" 2>/dev/null
        wait "$COORD_PID" 2>/dev/null
    fi
}
# Ctrl-C and SIGTERM are the documented way to end the demo, not a failure: exit 0 once
# everything has stopped (make would otherwise print "Error 130" or "Error 143").
trap 'stop; echo "demo: stopped"; exit 0' INT TERM
trap stop EXIT

AUTH=""
[ -n "${PACER_TOKEN:-}" ] && AUTH="Authorization: Bearer $PACER_TOKEN"
api() { curl -s ${AUTH:+-H "$AUTH"} "$@"; }

tries=0
until curl -s -o /dev/null "$BASE/healthz"; do
    kill -0 "$COORD_PID" 2>/dev/null || { tail -20 "$LOG"; die "the coordinator exited (log: $LOG)"; }
    tries=$((tries + 1))
    [ "$tries" -gt 150 ] && { tail -20 "$LOG"; die "the coordinator did not come up in 15 s (log: $LOG)"; }
    sleep 0.1
done

from=$(jq -c '.emulate.slowdown // []' "$SPEC")
to=$(echo "$RUN_SPEC" | jq -c '.emulate.slowdown // []')
if [ "$from" != "$to" ]; then
    echo "demo: slowdowns $from scaled to $to (the same relative speeds) to fit in this machine's $CORES cores: each slow node is then as slow as it says"
fi
# submit SPEC_TEXT - POSTs the spec; prints the new job's id, or dies with the refusal.
submit() {
    answer=$(echo "$1" | api -X POST -H "Content-Type: application/json" --data-binary @- "$BASE/api/v1/jobs")
    sid=$(printf "%s\n" "$answer" | jq -r '.id // empty')
    [ -n "$sid" ] || die "the job was refused: $(printf "%s\n" "$answer" | jq -r '.detail // .')"
    echo "$sid"
}

# follow ID - one line every 2 s with the state and, per worker, batch size and speed
# ("-" where a worker has not measured one yet: never shown as 0), until the job ends;
# then its outcome. A language model's speed is in tokens/s (samples/s x its window),
# its outcome next-token accuracy and perplexity.
follow() {
    last=""
    while :; do
        job=$(api "$BASE/api/v1/jobs/$1")
        state=$(printf "%s\n" "$job" | jq -r '.state // "?"')
        window=$(printf "%s\n" "$job" | jq -r 'if (.spec.dataset.format // "") | IN("text", "tokens")
            then (.summary.block_size // .spec.model.gpt.block_size // 64) else 0 end' 2>/dev/null)
        nodes=$(api "$BASE/api/v1/jobs/$1/nodes")
        line=$(printf "%s\n" "$nodes" | jq -r --arg st "$state" --argjson T "${window:-0}" '
            [.ranks[] | select(.role == "worker")] as $w
            | if ($w | length) == 0 then $st else
              "\($st)  epoch \([$w[].epoch // empty] | max // "-")  step \([$w[].step // empty] | max // "-")"
              + "  batches \([$w[] | .batch // "-"])"
              + (if $T > 0 then "  tokens/s \([$w[] | .samples_per_s | if . == null then "-" else (. * $T | floor) end])"
                 else "  samples/s \([$w[] | .samples_per_s | if . == null then "-" else floor end])" end)
              + "  loss \([$w[].loss // empty] | if length > 0 then (add / length * 1000 | floor / 1000) else "-" end)" end' 2>/dev/null)
        [ -n "$line" ] || line=$state
        if [ "$line" != "$last" ]; then
            echo "$(date +%H:%M:%S) $1 $line"
            last=$line
        fi
        case $state in SUCCEEDED | FAILED | CANCELLED) break ;; esac
        kill -0 "$COORD_PID" 2>/dev/null || die "the coordinator exited (log: $LOG)"
        sleep 2
    done
    echo
    printf "%s\n" "$job" | jq -r '"demo: \(.id) \(.state)\(if .reason != "" and .reason != null then ": " + .reason else "" end)"'
    printf "%s\n" "$job" | jq -r 'if .summary.block_size then "demo: final next-token accuracy \(.summary.test_accuracy * 10000 | round / 10000), validation loss \(.summary.test_loss * 10000 | round / 10000) nats per token (perplexity \(.summary.test_perplexity * 100 | round / 100)) after \(.summary.epochs // "?") epochs, \((.finished - .started) | floor) s"
        elif .summary then "demo: final test_accuracy \(.summary.test_accuracy) after \(.summary.epochs // "?") epochs, \((.finished - .started) | floor) s" else empty end'
    printf "%s\n" "$job" | jq -r '.summary.emulation // empty | if .simulated then empty elif .faithful
        then "demo: the emulation was faithful: the ranks asked for \(.demand_cores * 100 | round / 100) of \(.cores) cores"
        else "demo: the emulation was NOT faithful: the ranks asked for \(.demand_cores * 100 | round / 100) of \(.cores) cores, so the speeds show how the OS shared them, not the slowdowns" end'
}

# links ID SPEC_TEXT SOURCE - what was submitted, and where to look at it.
links() {
    echo "demo: submitted $1 from $3: $(echo "$2" | jq -c '{model, algorithm: .algorithm.name, workers, epochs, slowdown: .emulate.slowdown}')"
    echo
    echo "    dashboard:  $BASE/#/jobs/$1"
    echo "    API:        $BASE/api/v1/jobs/$1   (events: $BASE/api/v1/jobs/$1/events)"
    echo "    metrics:    $BASE/metrics"
    echo
}

id=$(submit "$RUN_SPEC") || exit 1
links "$id" "$RUN_SPEC" "$SPEC"
[ -z "$RUN_SPEC2" ] || echo "demo: a second, longer job follows this one, so that the dashboard has a running job while you look at it"
follow "$id"
if [ -n "$LM" ]; then
    # Alone, like the others: its ranks would take the image jobs' emulated cores.
    echo
    lm_spec=$(jq --arg root "$(cd "$STATE/data" && pwd)" '.dataset.path |= sub("^DATA_ROOT"; $root)' "$LM") ||
        die "$LM is not JSON"
    lm_id=$(submit "$lm_spec") || exit 1
    echo "demo: a language model: the built-in GPT on the GPL 3 (bytes as tokens; its page shows the vocabulary,"
    echo "      tokens/s, validation loss and perplexity, and the eval_sample's text at each evaluation)"
    links "$lm_id" "$lm_spec" "$LM"
    follow "$lm_id"
    # what the page's Generate box does: POST .../generate (sampled at temperature 0.8 from
    # the 10 likeliest tokens, seed 1: the same text every time; printf, since the text may
    # hold backslashes that sh's echo would turn into control characters)
    gen=$(jq -n '{prompt: "This License", max_tokens: 48, temperature: 0.8, top_k: 10, seed: 1}' |
        api -X POST -H "Content-Type: application/json" --data-binary @- "$BASE/api/v1/jobs/$lm_id/generate")
    text=$(printf "%s\n" "$gen" | jq -r '.text // empty' 2>/dev/null)
    if [ -n "$text" ]; then
        printf 'demo: generated from %s (POST /api/v1/jobs/%s/generate): %s\n' "$lm_id" "$lm_id" \
            "$(jq -n --arg p "This License" --arg t "$text" '$p + $t')"
        echo "      its page's Generate box does the same: $BASE/#/jobs/$lm_id"
    else
        echo "demo: generating from $lm_id failed: $(printf "%s\n" "$gen" | jq -r '.detail // .' 2>/dev/null)"
    fi
fi
if [ -n "$RUN_SPEC2" ]; then
    # Submitted once the first has ended, never beside it: two jobs sharing the cores
    # would make neither's emulated slowdowns faithful.
    echo
    id2=$(submit "$RUN_SPEC2") || exit 1
    if [ "$SPEC2" = deploy/demo-job-ssgd.json ]; then
        echo "demo: the second job: the same workers on plain synchronous SGD (ssgd) for 5 epochs, where every"
        echo "      step waits for the slowest worker: a minute or two on 2 cores. Tick both in the dashboard's"
        echo "      job list to compare them (loss against time, epoch or samples)."
    fi
    links "$id2" "$RUN_SPEC2" "$SPEC2"
    follow "$id2"
    id=$id2
fi
# The page is the demo: it stays up whether or not a terminal is attached (a demo started
# from a script or over ssh without one is still looked at in a browser).
echo "demo: the dashboard stays up at $BASE/#/jobs/$id - press Ctrl-C (or kill -TERM $$) to stop"
while kill -0 "$COORD_PID" 2>/dev/null; do sleep 1; done
die "the coordinator exited (log: $LOG)"
