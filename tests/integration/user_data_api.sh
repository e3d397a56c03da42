# A user's own data set through the service (issue 26): the daemon probes it at
# submission (common/dsprobe.h) and refuses what it can know then with 422
# invalid-dataset naming dataset.path (a class folder without images); an .npz of 12
# classes trains with lenet5 (a built-in's head takes the data set's classes); a spec may not name dataset.cache_dir (400: where
# workers write is the daemon's --data-cache-dir); a good image folder trains, its job
# shows the data set's classes, sizes and the cache in the summary, and a second job maps
# the cache the first one decoded into STATE/data-cache. Every answer is checked against
# docs/openapi.json.
. tests/integration/coordinator_lib.inc
command -v curl >/dev/null || skip "curl not installed (make deps)"
/usr/bin/python3 -c 'import numpy, PIL' 2>/dev/null || skip "python3-numpy and python3-pil are needed (make deps)"

mkdir -p "$STATE/data" "$TMP/answers"
/usr/bin/python3 - "$STATE/data" <<'PY' || fail "cannot write the data sets"
import os, sys
import numpy as np
from PIL import Image
root = sys.argv[1]
rng = np.random.default_rng(2)
for split, n in (("train", 6), ("test", 2)):
    for c in range(10):
        os.makedirs(f"{root}/digits/{split}/d{c}", exist_ok=True)
        for i in range(n):
            Image.fromarray((rng.random((28, 28)) * 40 + c * 20).astype(np.uint8), "L").save(f"{root}/digits/{split}/d{c}/{i}.png")
os.makedirs(f"{root}/holes/train/a", exist_ok=True)
os.makedirs(f"{root}/holes/train/b", exist_ok=True)
os.makedirs(f"{root}/holes/test/a", exist_ok=True)
Image.new("L", (28, 28)).save(f"{root}/holes/train/a/0.png")
Image.new("L", (28, 28)).save(f"{root}/holes/test/a/0.png")
x = np.zeros((24, 28, 28), np.uint8)
np.savez(f"{root}/twelve.npz", x_train=x, y_train=np.arange(24) % 12, x_test=x[:4], y_test=np.arange(4))
PY
start_coord
BASE=$(grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')

# post FILE - POST /api/v1/jobs; prints the status, the answer in $TMP/body (recorded for
# the schema check at the end).
post() {
    code=$(curl -s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary @"$1" "$BASE/api/v1/jobs")
    saved=$(mktemp "$TMP/answers/body.XXXXXX")
    cp "$TMP/body" "$saved"
    ct=$(grep -i '^content-type:' "$TMP/hdr" | head -1 | cut -d' ' -f2- | tr -d '\r')
    printf 'POST\t/api/v1/jobs\t%s\t%s\t%s\n' "$code" "$ct" "$saved" >>"$TMP/answers/index"
    echo "$code"
}
getjob() {
    code=$(curl -s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' "$BASE/api/v1/jobs/$1")
    saved=$(mktemp "$TMP/answers/body.XXXXXX")
    cp "$TMP/body" "$saved"
    ct=$(grep -i '^content-type:' "$TMP/hdr" | head -1 | cut -d' ' -f2- | tr -d '\r')
    printf 'GET\t/api/v1/jobs/%s\t%s\t%s\t%s\n' "$1" "$code" "$ct" "$saved" >>"$TMP/answers/index"
    echo "$code"
}
job() { # FILE NAME DATASET-FIELDS
    printf '{"name": "%s", "model": "lenet5", "dataset": {%s}, "batch_size": 8, "epochs": 1, "log_every": 0}\n' \
        "$2" "$3" >"$1"
}

# refused FILE STATUS TYPE FIELD PATTERN
refused() {
    code=$(post "$1")
    [ "$code" = "$2" ] || { cat "$TMP/body"; fail "$1: HTTP $code, want $2"; }
    jq -e --arg t "urn:pacer:problem:$3" --arg f "$4" '.type == $t and .field == $f' "$TMP/body" >/dev/null ||
        { cat "$TMP/body"; fail "$1: want problem $3 naming $4"; }
    jq -r .detail "$TMP/body" | grep -q -- "$5" || { cat "$TMP/body"; fail "$1: the detail does not say '$5'"; }
    echo "ok: $2 $3 ($4): $(jq -r .detail "$TMP/body")"
}
job "$TMP/holes.json" holes "\"format\": \"imagefolder\", \"path\": \"$STATE/data/holes\""
refused "$TMP/holes.json" 422 invalid-dataset dataset.path "holes/train/b: a class folder without images"
job "$TMP/twelve.json" twelve "\"format\": \"npz\", \"path\": \"$STATE/data/twelve.npz\""
# 12 classes: lenet5's head takes them (issue 42), admitted and trained
[ "$(post "$TMP/twelve.json")" = 201 ] || { cat "$TMP/body"; fail "the 12-class .npz was refused"; }
id12=$(jq -r .id "$TMP/body")
await 120 "job $id12 to succeed" is_state "$id12" SUCCEEDED
[ "$(getjob "$id12")" = 200 ] || fail "GET job $id12"
jq -e '.summary.dataset.classes == 12' "$TMP/body" >/dev/null || fail "job $id12's summary.dataset: $(jq -c .summary.dataset "$TMP/body")"
echo "ok: lenet5 on the 12-class .npz was admitted and trained"
job "$TMP/cache.json" cache "\"format\": \"imagefolder\", \"path\": \"$STATE/data/digits\", \"cache_dir\": \"/tmp/x\""
refused "$TMP/cache.json" 400 invalid-spec dataset.cache_dir "set by the coordinator"
job "$TMP/nopath.json" nopath '"format": "npz"'
refused "$TMP/nopath.json" 400 invalid-spec dataset.path "required with dataset.format npz"
cp "$STATE/data/twelve.npz" "$TMP/twelve.npz"
job "$TMP/outside.json" outside "\"format\": \"npz\", \"path\": \"$TMP/twelve.npz\""
refused "$TMP/outside.json" 400 invalid-spec dataset.path "not under a data root"

# GET /api/v1/datasets: the catalog, one list: the built-ins and what the data root holds
# (name, format, classes, samples; an .npz's image shape, a folder's null), and the
# broken folder under "refused" with the probe's reason. A user's set may be named by
# dataset.name alone (a wrong format or unknown name gets a 400).
code=$(curl -s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' "$BASE/api/v1/datasets")
[ "$code" = 200 ] || fail "GET /api/v1/datasets: HTTP $code"
saved=$(mktemp "$TMP/answers/body.XXXXXX")
cp "$TMP/body" "$saved"
printf 'GET\t/api/v1/datasets\t200\tapplication/json\t%s\n' "$saved" >>"$TMP/answers/index"
jq -e --arg d "$STATE/data" '([.datasets[] | select(.source == "builtin") | .name] | index("mnist") != null) and
    ([.datasets[] | select(.source == "user")] | map({name, format, classes, train_samples, test_samples, input, path}) ==
     [{name: "digits", format: "imagefolder", classes: 10, train_samples: 60, test_samples: 20, input: null,
       path: ($d + "/digits")},
      {name: "twelve.npz", format: "npz", classes: 12, train_samples: 24, test_samples: 4,
       input: {channels: 1, height: 28, width: 28}, path: ($d + "/twelve.npz")}]) and
    (.refused | length == 1 and .[0].name == "holes" and (.[0].error | contains("a class folder without images")))' \
    "$TMP/body" >/dev/null || fail "GET /api/v1/datasets: $(jq -c '{datasets: [.datasets[] | {name, source, format, classes, input, path}], refused}' "$TMP/body")"
echo "ok: GET /api/v1/datasets lists the built-ins, digits and twelve.npz, and why holes is not offered"
job "$TMP/bynpz.json" bynpz '"name": "twelve.npz", "format": "imagefolder"'
refused "$TMP/bynpz.json" 400 invalid-spec dataset.format "imagefolder is not the format of dataset.name twelve.npz (npz)"
job "$TMP/unknown.json" unknown '"name": "nosuch"'
refused "$TMP/unknown.json" 400 invalid-spec dataset.name "must be one of fashion-mnist, mnist, cifar10, digits, twelve.npz"

# The probe is cached: a second listing with nothing changed does not probe the roots
# again (one "data roots probed" line in the log per probe); a new data set does.
probes() { grep -c 'data roots probed' "$TMP/coord.log"; }
p0=$(probes)
[ "$p0" -ge 1 ] || fail "no 'data roots probed' line in the log after a listing"
curl -s -o "$TMP/body" "$BASE/api/v1/datasets" || fail "GET /api/v1/datasets"
[ "$(probes)" = "$p0" ] || fail "a listing with nothing changed probed the data roots again ($p0 -> $(probes))"
cp "$STATE/data/twelve.npz" "$STATE/data/twelve2.npz"
curl -s -o "$TMP/body" "$BASE/api/v1/datasets" || fail "GET /api/v1/datasets"
jq -e '[.datasets[].name] | index("twelve2.npz") != null' "$TMP/body" >/dev/null ||
    fail "a new .npz under the data root is not listed: $(jq -c '[.datasets[].name]' "$TMP/body")"
[ "$(probes)" = "$((p0 + 1))" ] || fail "a new data set: want one more probe, log has $(probes) (was $p0)"
rm "$STATE/data/twelve2.npz"
echo "ok: the data roots' probe is cached ($p0 probe(s)), and a new .npz shows up"

# Issue 42 (items 4 and 8): symbolic links under the data root, made here. Links that
# leave the root are skipped inside a set (an image linked to /etc/passwd, a real image
# from outside, a class folder linked to /etc) and refuse the set itself (a whole set
# linked from outside, pw.npz -> /etc/passwd): the listing and the submission agree, and
# no answer quotes a byte of /etc/passwd or where a link leads. A link inside the root
# is followed. Outside the roots, a missing and an existing path get the same answer.
cp -r "$STATE/data/digits" "$STATE/data/linky"
cp -r "$STATE/data/digits" "$TMP/outset"
cp "$STATE/data/digits/train/d1/0.png" "$TMP/outside.png"
ln -s /etc/passwd "$STATE/data/linky/train/d0/passwd.png"
ln -s "$TMP/outside.png" "$STATE/data/linky/train/d1/outside.png"
ln -s /etc "$STATE/data/linky/train/etc"
ln -s 0.png "$STATE/data/linky/train/d2/inside.png"
ln -s "$TMP/outset" "$STATE/data/outset"
ln -s /etc/passwd "$STATE/data/pw.npz"
code=$(curl -s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' "$BASE/api/v1/datasets")
[ "$code" = 200 ] || fail "GET /api/v1/datasets: HTTP $code"
saved=$(mktemp "$TMP/answers/body.XXXXXX")
cp "$TMP/body" "$saved"
printf 'GET\t/api/v1/datasets\t200\tapplication/json\t%s\n' "$saved" >>"$TMP/answers/index"
jq -e '([.datasets[] | select(.name == "linky") | .train_samples] == [61]) and
    ([.datasets[].name] | index("outset") == null and index("pw.npz") == null) and
    ([.refused[] | select(.name == "outset" or .name == "pw.npz") |
      select(.error == "a symbolic link that leaves the data roots (only what resolves under a --data-root is read)")]
     | length == 2)' "$TMP/body" >/dev/null ||
    fail "GET /api/v1/datasets with links: $(jq -c '{datasets: [.datasets[] | {name, train_samples}], refused}' "$TMP/body")"
grep -q -e 'root:x' -e '"/etc' -e "$TMP/outset" -e "$TMP/outside" "$TMP/body" && fail "the listing shows what a link out of the root leads to: $(cat "$TMP/body")"
echo "ok: the listing follows a link inside the root, skips images and class folders linked out, refuses outset and pw.npz"
job "$TMP/outset.json" outset "\"format\": \"imagefolder\", \"path\": \"$STATE/data/outset\""
refused "$TMP/outset.json" 400 invalid-spec dataset.path "outset is not under a data root"
job "$TMP/pw.json" pw "\"format\": \"npz\", \"path\": \"$STATE/data/pw.npz\""
refused "$TMP/pw.json" 400 invalid-spec dataset.path "pw.npz is not under a data root"
grep -q 'root:x' "$TMP/body" && fail "a refusal quotes /etc/passwd: $(cat "$TMP/body")"
job "$TMP/exists.json" exists "\"format\": \"npz\", \"path\": \"/etc/passwd\""
refused "$TMP/exists.json" 400 invalid-spec dataset.path "not under a data root"
d1=$(jq -r .detail "$TMP/body" | sed 's|/etc/passwd|PATH|')
job "$TMP/missing.json" missing "\"format\": \"npz\", \"path\": \"/etc/no-such-file-$$\""
refused "$TMP/missing.json" 400 invalid-spec dataset.path "not under a data root"
d2=$(jq -r .detail "$TMP/body" | sed "s|/etc/no-such-file-$$|PATH|")
[ "$d1" = "$d2" ] || fail "outside the roots, an existing and a missing path are told apart: '$d1' / '$d2'"
echo "ok: outside the roots, an existing and a missing path get the same answer"
# The set with links trains on what is under the root: the worker, given the roots,
# skips the same links (its summary counts 61 training images, not 63, and no image
# of /etc/passwd is decoded).
job "$TMP/linky.json" linky "\"format\": \"imagefolder\", \"path\": \"$STATE/data/linky\""
[ "$(post "$TMP/linky.json")" = 201 ] || { cat "$TMP/body"; fail "the set with links was refused"; }
idl=$(jq -r .id "$TMP/body")
await 120 "job $idl to succeed" is_state "$idl" SUCCEEDED
[ "$(getjob "$idl")" = 200 ] || fail "GET job $idl"
jq -e '.summary.dataset | .classes == 10 and .train_samples == 61' "$TMP/body" >/dev/null ||
    fail "job $idl (linky): summary.dataset $(jq -c .summary.dataset "$TMP/body")"
echo "ok: the set with links trained on the 61 images under the root"
rm -r "$STATE/data/linky" "$STATE/data/outset" "$STATE/data/pw.npz"

# A good folder trains; its job shows what the worker found and where it cached it.
job "$TMP/good.json" good "\"format\": \"imagefolder\", \"path\": \"$STATE/data/digits\""
[ "$(post "$TMP/good.json")" = 201 ] || { cat "$TMP/body"; fail "the good folder was refused"; }
id=$(jq -r .id "$TMP/body")
await 120 "job $id to succeed" is_state "$id" SUCCEEDED
[ "$(getjob "$id")" = 200 ] || fail "GET job $id"
jq -e --arg c "$STATE/data-cache/" '.summary.dataset | .format == "imagefolder" and .classes == 10 and
    .train_samples == 60 and .test_samples == 20 and .cache.built == true and (.cache.path | startswith($c))' \
    "$TMP/body" >/dev/null || fail "job $id's summary.dataset: $(jq -c .summary.dataset "$TMP/body")"
echo "ok: the folder trained; summary.dataset $(jq -c '.summary.dataset | {classes, train_samples, test_samples, cache}' "$TMP/body")"
[ "$(post "$TMP/good.json")" = 201 ] || { cat "$TMP/body"; fail "the second job was refused"; }
id2=$(jq -r .id "$TMP/body")
await 120 "job $id2 to succeed" is_state "$id2" SUCCEEDED
[ "$(getjob "$id2")" = 200 ] || fail "GET job $id2"
jq -e '.summary.dataset.cache.built == false' "$TMP/body" >/dev/null ||
    fail "the second job did not map the first one's cache: $(jq -c .summary.dataset.cache "$TMP/body")"
echo "ok: the second job mapped the cache the first decoded"

# Named by dataset.name alone: the daemon fills in its format and path (the data-root
# rule applies to that path) and the job trains from it.
job "$TMP/byname.json" byname '"name": "digits"'
[ "$(post "$TMP/byname.json")" = 201 ] || { cat "$TMP/body"; fail "the data set named by dataset.name was refused"; }
idn=$(jq -r .id "$TMP/body")
await 120 "job $idn to succeed" is_state "$idn" SUCCEEDED
[ "$(getjob "$idn")" = 200 ] || fail "GET job $idn"
jq -e --arg p "$STATE/data/digits" '.spec.dataset.format == "imagefolder" and .spec.dataset.path == $p and
    (.summary.dataset | .name == "digits" and .path == $p and .classes == 10 and .train_samples == 60)' \
    "$TMP/body" >/dev/null || fail "job $idn (dataset.name digits): spec.dataset $(jq -c .spec.dataset "$TMP/body"), summary.dataset $(jq -c .summary.dataset "$TMP/body")"
echo "ok: a job naming digits by dataset.name trained from $STATE/data/digits"

python3 -c 'import jsonschema' 2>/dev/null || fail "python3-jsonschema not installed (deploy/install-deps.sh test)"
python3 tests/tools/openapi_check.py docs/openapi.json "$TMP/answers/index" || fail "answers that docs/openapi.json does not describe"
