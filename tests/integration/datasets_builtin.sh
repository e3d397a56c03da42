#!/bin/sh
# tests/integration/datasets_builtin.sh - issue 42 item 1: a built-in data set is used from
# where the catalog finds it, and one that is absent is refused at submission.
#
# Every examples/*.json goes through POST /api/v1/jobs. A daemon whose $PACER_SHARED and
# data root hold no MNIST or CIFAR-10 answers 422 (invalid-dataset, field dataset.name)
# naming each place it looked and how to add the files; once the data root holds them,
# each example is accepted with the absolute directory GET /api/v1/datasets shows stored
# as its dataset.path, and pacer-worker, run on that stored spec from another directory
# (a short configuration: one process, one epoch, a few batches), finds the files. A
# retry resolves again: after a restart with another --data-root it reads from there,
# and with the files gone it gets the same 422. A dataset.path that does not hold the
# files is 422 too, and a set linked out of every data root is neither listed nor read
# (common/dataroot.h). The coordinator's own worker is a stand-in that fails at once, so
# that no accepted example trains in the daemon: what the ranks read is checked by the
# direct runs.
. tests/integration/coordinator_lib.inc
command -v curl >/dev/null || skip "curl not installed (make deps)"
need_dir "$FASHION" "Fashion-MNIST (make deps)"
need_dir "$PACER_SHARED/datasets/mnist" "MNIST"
need_dir "$PACER_SHARED/datasets/cifar-10" "CIFAR-10"
# the data sets' real directory, a data root of the daemons that may read them; the other
# roots hold links into it (links that stay under a root are followed, common/dataroot.h)
DATA=$(realpath "$PACER_SHARED/datasets")

# The daemon's stand-in worker: answers --help as pacer-worker does, fails any job.
cat >"$TMP/worker" <<'EOF'
#!/bin/sh
[ "${1:-}" = --help ] && exec "$REAL_WORKER" --help
echo "stand-in worker: not training" >&2
exit 1
EOF
chmod +x "$TMP/worker"
case $WORKER in /*) REAL_WORKER=$WORKER ;; *) REAL_WORKER=$PWD/$WORKER ;; esac
export REAL_WORKER
mkdir -p "$TMP/r1" "$TMP/r2" "$TMP/elsewhere"
NOSHARED=$TMP/noshared

daemon() { PACER_SHARED=$NOSHARED start_coord --worker "$TMP/worker" --max-restarts 0 "$@"; }
# post SPEC_FILE OUT - POST /api/v1/jobs; prints the HTTP status, the answer in OUT.
post() { curl -s -o "$2" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$1" "$BASE/api/v1/jobs"; }
listed_path() { curl -sf "$BASE/api/v1/datasets" | jq -r --arg n "$1" '.datasets[] | select(.name == $n) | .path'; }
# refused422 ANSWER DATASET_NAME DIR - a 422 that names where pacer looked and how to add it.
refused422() {
    [ "$(json "$1" .type)" = urn:pacer:problem:invalid-dataset ] || fail "$1: type $(json "$1" .type)"
    [ "$(json "$1" .field)" = dataset.name ] || fail "$1: field $(json "$1" .field)"
    d=$(json "$1" .detail)
    for want in "dataset.name: $2 is not on this machine" "$NOSHARED/datasets/$3" "$4/$3" "--data-root" \
        "PACER_SHARED"; do
        case $d in *"$want"*) ;; *) fail "$2: the refusal does not name '$want': $d" ;; esac
    done
}
# The catalog's directory name of a data set (cifar10's is cifar-10).
dir_of() { [ "$1" = cifar10 ] && echo cifar-10 || echo "$1"; }

daemon --data-root "$TMP/r1"
BASE=$(api_base)
[ "$(listed_path mnist)" = null ] || fail "mnist listed as present: $(listed_path mnist)"

# builtin_example FILE - whether FILE is a job spec on a built-in data set (not an
# experiment's spec, nor a language model's text or tokens, whose relative paths the API
# refuses: examples.sh runs those)
builtin_example() {
    case $(basename "$1") in experiment-*) return 1 ;; esac
    jq -e '(.dataset.format // "") as $f | $f != "text" and $f != "tokens"' "$1" >/dev/null
}

# 1. Absent: refused with where pacer looked; present (Fashion-MNIST, Debian's): accepted.
n=0
for f in examples/*.json; do
    builtin_example "$f" || continue
    n=$((n + 1))
    ds=$(json "$f" .dataset.name)
    code=$(post "$f" "$TMP/a$n.json")
    case $ds in
    mnist | cifar10)
        [ "$code" = 422 ] || fail "$f without $ds: HTTP $code, want 422: $(cat "$TMP/a$n.json")"
        refused422 "$TMP/a$n.json" "$ds" "$(dir_of "$ds")" "$TMP/r1"
        echo "ok: $f refused while $ds is absent: $(json "$TMP/a$n.json" .detail)"
        ;;
    *)
        [ "$code" = 201 ] || fail "$f: HTTP $code: $(cat "$TMP/a$n.json")"
        ;;
    esac
done
[ "$n" -ge 6 ] || fail "only $n examples"

# 2. Links to them under the root: while they lead out of every root they are not
# offered; once their target's folder is a root too, every example is accepted, with the
# listing's path.
ln -s "$DATA/mnist" "$TMP/r1/mnist"
ln -s "$DATA/cifar-10" "$TMP/r1/cifar-10"
[ "$(listed_path mnist)" = null ] || fail "mnist linked out of the roots is listed at $(listed_path mnist)"
code=$(post examples/lenet5-mnist.json "$TMP/out.json")
[ "$code" = 422 ] || fail "mnist linked out of the roots: HTTP $code: $(cat "$TMP/out.json")"
refused422 "$TMP/out.json" mnist mnist "$TMP/r1"
echo "ok: a data set linked out of the data roots is neither listed nor read"
stop_coord
daemon --data-root "$TMP/r1" --data-root "$TMP/r2" --data-root "$DATA"
BASE=$(api_base)
for ds in mnist cifar10 fashion-mnist; do
    p=$(listed_path "$ds")
    case $p in /*) ;; *) fail "$ds: listed at '$p', want an absolute path" ;; esac
done
[ "$(listed_path mnist)" = "$TMP/r1/mnist" ] || fail "mnist listed at $(listed_path mnist)"
n=0
MNIST_JOB=""
for f in examples/*.json; do
    builtin_example "$f" || continue
    n=$((n + 1))
    ds=$(json "$f" .dataset.name)
    code=$(post "$f" "$TMP/b$n.json")
    [ "$code" = 201 ] || fail "$f: HTTP $code: $(cat "$TMP/b$n.json")"
    stored=$(json "$TMP/b$n.json" .spec.dataset.path)
    [ "$stored" = "$(listed_path "$ds")" ] || fail "$f: stored dataset.path '$stored', listed '$(listed_path "$ds")'"
    [ "$ds" = mnist ] && MNIST_JOB=$(json "$TMP/b$n.json" .id)
    # what a rank reads: the stored spec, from another directory, without $PACER_SHARED
    # (one worker: the fields tied to the stored workers go with them, JOB_SPEC.md)
    jq '.spec | .workers = 1 | del(.max_workers, .min_workers) | .algorithm = {"name": "sgd"} | del(.emulate) | del(.checkpoint)
        | .epochs = 1 | .batch_size = 32 | .dataset.train_subset = 64 | .dataset.test_subset = 32' \
        "$TMP/b$n.json" >"$TMP/elsewhere/s$n.json"
    (cd "$TMP/elsewhere" && PACER_SHARED=$NOSHARED "$REAL_WORKER" --spec "s$n.json" --summary "sum$n.json" \
        >"w$n.log" 2>&1) || {
        tail -5 "$TMP/elsewhere/w$n.log"
        fail "$f: pacer-worker on the stored spec failed"
    }
    need_number "$f: test_accuracy" "$(json "$TMP/elsewhere/sum$n.json" .test_accuracy)"
    echo "ok: $f accepted, $ds read from $stored"
done
[ -n "$MNIST_JOB" ] || fail "no example trains on mnist"

# 3. A given dataset.path must hold the files (the data root r2 itself does not).
jq --arg p "$TMP/r2" '.dataset.path = $p' examples/lenet5-mnist.json >"$TMP/given.json"
code=$(post "$TMP/given.json" "$TMP/c.json")
[ "$code" = 422 ] || fail "dataset.path without the files: HTTP $code: $(cat "$TMP/c.json")"
case $(json "$TMP/c.json" .detail) in
*"dataset.path: $TMP/r2 does not hold the files of dataset.name mnist"*) ;;
*) fail "dataset.path without the files: $(json "$TMP/c.json" .detail)" ;;
esac
echo "ok: a dataset.path without the files: $(json "$TMP/c.json" .detail)"

# 4. A retry resolves again: restarted with another data root, it reads from there.
await 60 "job $MNIST_JOB to end" is_state "$MNIST_JOB" FAILED
stop_coord
rm "$TMP/r1/mnist"
ln -s "$DATA/mnist" "$TMP/r2/mnist"
daemon --data-root "$TMP/r2" --data-root "$DATA"
BASE=$(api_base)
code=$(curl -s -o "$TMP/d.json" -w '%{http_code}' -X POST "$BASE/api/v1/jobs/$MNIST_JOB/retry")
[ "$code" = 201 ] || fail "retry: HTTP $code: $(cat "$TMP/d.json")"
RETRY=$(json "$TMP/d.json" .id)
stored=$(json "$TMP/d.json" .spec.dataset.path)
[ "$stored" = "$TMP/r2/mnist" ] || fail "retry $RETRY: dataset.path '$stored', want $TMP/r2/mnist"
echo "ok: retry $RETRY of $MNIST_JOB reads mnist from $stored"

# ... and with the files gone, the retry gets the submission's 422.
await 60 "job $RETRY to end" is_state "$RETRY" FAILED
stop_coord
rm "$TMP/r2/mnist"
daemon --data-root "$TMP/r2"
BASE=$(api_base)
code=$(curl -s -o "$TMP/e.json" -w '%{http_code}' -X POST "$BASE/api/v1/jobs/$RETRY/retry")
[ "$code" = 422 ] || fail "retry without the files: HTTP $code: $(cat "$TMP/e.json")"
refused422 "$TMP/e.json" mnist mnist "$TMP/r2"
echo "ok: retry without the files: $(json "$TMP/e.json" .detail)"
stop_coord
echo "PASS"
