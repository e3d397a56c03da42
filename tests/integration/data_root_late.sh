#!/bin/sh
# tests/integration/data_root_late.sh - a default data root created after the daemon
# started (coordinator/dataroots.h). STATE_DIR/data is one of the default roots, but a
# fresh state directory has none: the daemon says at its start that it skips it and why,
# and looks for it again when data sets are listed or a job is submitted, so that a data
# set put there later is listed and accepted without a restart (it used to be refused as
# "not under a data root" until one), and the job's workers, which read only under the
# roots they are given, read it: an .npz under the late root trains to SUCCEEDED.
. tests/integration/coordinator_lib.inc
command -v curl >/dev/null || skip "curl not installed (make deps)"
command -v jq >/dev/null || skip "jq not installed (make deps)"
/usr/bin/python3 -c 'import numpy' 2>/dev/null || skip "python3-numpy is needed (make deps)"

[ ! -e "$STATE/data" ] || fail "$STATE/data exists before the start"
start_coord
BASE=$(api_base)
grep -q "data root $STATE/data skipped for now: No such file or directory" "$TMP/coord.log" ||
    { grep "data root" "$TMP/coord.log"; fail "the daemon did not say that it skips $STATE/data, and why"; }
echo "ok: at its start the daemon says: $(grep -o "data root $STATE/data skipped.*" "$TMP/coord.log" | head -1)"

job() { # FILE PATH
    printf '{"name": "late", "model": "lenet5", "dataset": {"format": "npz", "path": "%s"}, "batch_size": 8, "epochs": 1, "log_every": 0}\n' \
        "$2" >"$1"
}
post() { curl -s -o "$TMP/body" -w '%{http_code}' -H "$JSON" --data-binary "@$1" "$BASE/api/v1/jobs"; }

# Not there yet: refused as any path outside the roots is.
job "$TMP/early.json" "$STATE/data/ten.npz"
code=$(post "$TMP/early.json")
[ "$code" = 400 ] || { cat "$TMP/body"; fail "a path under the missing $STATE/data: HTTP $code, want 400"; }
echo "ok: before $STATE/data exists a path under it is refused: $(jq -r .detail "$TMP/body")"

mkdir -p "$STATE/data"
/usr/bin/python3 - "$STATE/data/ten.npz" <<'PY' || fail "cannot write the .npz"
import sys
import numpy as np
rng = np.random.default_rng(5)
y = np.arange(80) % 10
x = (rng.random((80, 28, 28)) * 60 + y[:, None, None] * 18).astype(np.uint8)
np.savez(sys.argv[1], x_train=x[:64], y_train=y[:64], x_test=x[64:], y_test=y[64:])
PY

# Named by a job first (no listing before it): accepted, and its worker reads it.
job "$TMP/late.json" "$STATE/data/ten.npz"
code=$(post "$TMP/late.json")
[ "$code" = 201 ] || { cat "$TMP/body"; fail "a data set under the late root: HTTP $code, want 201"; }
id=$(jq -r .id "$TMP/body")
await 120 "job $id to succeed" is_state "$id" SUCCEEDED
grep -q -- "--data-root $(cd "$STATE/data" && pwd -P)" "$STATE/jobs/$id/log" ||
    fail "the job's worker was not given the late root: $(grep -m1 -o -- '--data-root [^ ]*' "$STATE/jobs/$id/log")"
echo "ok: job $id on $STATE/data/ten.npz was accepted and SUCCEEDED"
# Listed: the root and its data set.
curl -s "$BASE/api/v1/datasets" >"$TMP/list"
jq -e --arg r "$(cd "$STATE/data" && pwd -P)" '.data_roots | index($r)' "$TMP/list" >/dev/null ||
    { jq -c .data_roots "$TMP/list"; fail "GET /api/v1/datasets does not list $STATE/data as a root"; }
jq -e '.datasets[] | select(.name == "ten.npz")' "$TMP/list" >/dev/null ||
    { jq -c '[.datasets[].name]' "$TMP/list"; fail "GET /api/v1/datasets does not list ten.npz"; }
grep -q "data root .*/data exists now" "$TMP/coord.log" || fail "the daemon did not log the root it found"
echo "ok: created afterwards, $STATE/data is a root and ten.npz is listed"

stop_coord
echo "PASS"
