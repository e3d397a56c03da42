# The dashboard in a real browser: headless Chromium (Debian's chromium package) driven by
# playwright-core from npm (tests/browser/, pinned in its package-lock.json) submits a job
# through the form and watches the per-node loss and staleness charts fill over
# Server-Sent Events while the job runs (a job that ended before the page watched it
# fails: a replay is not the live view), its time-breakdown panel while it runs, then
# cancels it from the page; the page reopened draws the whole run from the downsampled
# history; the compare view overlays it with a short job and highlights the differing
# spec fields; issue 42's dashboard faults, each where it showed (dashboard.mjs's header
# lists them); issue 45's owner column, "Mine" filter and who the caller is, and a queued
# job's row and page (position, reason, estimated start; a null estimate shown as missing,
# its charts "no data yet"); a new user's faults (dashboard.mjs's header lists them).
# Leaves screenshots in $BUILD/dashboard.png, $BUILD/breakdown.png and
# $BUILD/compare.png. Skips without chromium,
# node/npm, or when playwright-core cannot be installed.
. tests/integration/coordinator_lib.inc
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || skip "chromium not installed at $CHROMIUM (deploy/install-deps.sh browser)"
command -v node >/dev/null || skip "node not installed (deploy/install-deps.sh browser)"
command -v npm >/dev/null || skip "npm not installed (deploy/install-deps.sh browser)"
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
if [ ! -d tests/browser/node_modules/playwright-core ]; then
    (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error) >"$TMP/npm.log" 2>&1 ||
        { cat "$TMP/npm.log"; skip "cannot install playwright-core from npm (offline?)"; }
fi

# The worker as itself, but the job named "noowner" (below) never trains: it is cancelled at
# once, and should the tick launch it first its ranks would train a step before the cancel's
# SIGTERM ends them (a notice acts at the first step boundary), measuring what it must not.
cat >"$TMP/worker" <<'WEOF'
#!/bin/sh
for a; do [ "$prev" = --spec ] && grep -q '"noowner"' "$a" && exec sleep 600; prev=$a; done
exec "$REAL_WORKER" "$@"
WEOF
chmod +x "$TMP/worker"
case $WORKER in /*) REAL_WORKER=$WORKER ;; *) REAL_WORKER=$PWD/$WORKER ;; esac
export REAL_WORKER
start_coord --listen 127.0.0.1:0 --worker "$TMP/worker"
BASE=$(grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')
[ -n "$BASE" ] || fail "the coordinator did not say where it serves"
curl -s "$BASE/static/vendor/uPlot.iife.min.js" | head -c 100 | grep -q uPlot ||
    fail "uPlot is not served at /static/vendor/ (make static: npm ci in static/)"
shot=$BUILD/dashboard.png
# The estimator's ceiling, from its one home: the noise-scale chart must hold none (issue 42).
GNS_PHI_MAX=$(sed -n 's/^#define GNS_PHI_MAX \([0-9.e+]*\).*/\1/p' common/gns.h)
[ -n "$GNS_PHI_MAX" ] || fail "no GNS_PHI_MAX in common/gns.h"
# A job with no owner (issue 45): the command-line client writes Redis itself, as jobs from
# before users; cancelled at once (and never training: $TMP/worker), it only has to be listed.
spec "$TMP/noowner.json" noowner 1
NOOWNER_ID=$(submit "$TMP/noowner.json")
curl -s -o /dev/null -X DELETE "$BASE/api/v1/jobs/$NOOWNER_ID"
export NOOWNER_ID
CHROMIUM=$CHROMIUM GNS_PHI_MAX=$GNS_PHI_MAX timeout 150 node tests/browser/dashboard.mjs "$BASE" "$shot" || {
    echo "--- coordinator log"; tail -20 "$TMP/coord.log"
    fail "the dashboard test failed (screenshot of the failure: ${shot%.png}-failed.png)"
}
stop_coord

# ---- the page by role (issue 45): a coordinator with a token, a viewer and a member
# (tests/browser/roles.mjs).
ADMIN=browser-admin-$$
printf '%s\n' "$ADMIN" >"$TMP/token"
# One slot: alice's long job holds it and her job $JOB waits behind it (the queue's rows).
printf 'localhost slots=1\n' >"$TMP/hosts1"
start_coord --listen 127.0.0.1:0 --token-file "$TMP/token" --hostfile "$TMP/hosts1" --preflight off
BASE=$(grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')
adduser() {
    curl -s -H "Authorization: Bearer $ADMIN" -H "Content-Type: application/json" \
        -d "{\"name\": \"$1\", \"role\": \"$2\"}" "$BASE/api/v1/users" | jq -r .token
}
CAROL=$(adduser carol viewer)
ALICE=$(adduser alice member)
[ -n "$CAROL" ] && [ "$CAROL" != null ] && [ -n "$ALICE" ] && [ "$ALICE" != null ] || fail "POST /api/v1/users did not give tokens"
# alice_submit SPEC - prints the new job's id.
alice_submit() {
    curl -s -H "Authorization: Bearer $ALICE" -H "Content-Type: application/json" --data-binary @"$1" \
        "$BASE/api/v1/jobs" | jq -r .id
}
spec "$TMP/long.json" long 1000
LONG=$(alice_submit "$TMP/long.json")
JOB=$(alice_submit "$TMP/noowner.json")
case $LONG$JOB in j-*j-*) ;; *) fail "alice's submits gave no job ids ($LONG, $JOB)" ;; esac
queued_first() {
    [ "$(curl -s -H "Authorization: Bearer $ALICE" "$BASE/api/v1/jobs/$JOB" | jq -r '"\(.state) \(.queue.position)"')" = "QUEUED 1" ]
}
await 60 "job $JOB queued at position 1 behind $LONG" queued_first
CHROMIUM=$CHROMIUM timeout 120 node tests/browser/roles.mjs "$BASE" "$CAROL" "$ALICE" "$JOB" "$BUILD/roles.png" || {
    echo "--- coordinator log"; tail -20 "$TMP/coord.log"
    fail "the dashboard-by-role test failed (screenshot of the failure: $BUILD/roles-failed.png)"
}
curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $ALICE" "$BASE/api/v1/jobs/$JOB"
curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $ALICE" "$BASE/api/v1/jobs/$LONG"
stop_coord
