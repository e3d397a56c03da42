# HTTPS (issue 45, transport): a CA and a server certificate for 127.0.0.1 are made here
# at run time (openssl; nothing committed), and the coordinator serves its API with
# --tls-cert/--tls-key. Checked: bad certificate or key files are refused at start with
# exit 2 and a message naming the file (missing, only one of the two, not PEM, a key
# other users may read, a key that is not the certificate's); the log line says https://;
# `pacer ls`, `submit` and `watch` (the event stream) work over https with --cacert (and
# PACER_CACERT), fail with a verification error without the CA or with another CA;
# /metrics and the dashboard answer over TLS; a plain-http request to the TLS port gets no
# answer; the Python client works with cafile= and fails without; and the clear-text
# token rule: an http:// URL whose host is not loopback is refused before any connection
# (an unresolvable name shows that nothing was looked up), unless allowed explicitly.
. tests/integration/coordinator_lib.inc
PACER=$BUILD/pacer
[ -x "$PACER" ] || skip "$PACER not built: libcurl missing (make deps installs libcurl4-openssl-dev)"
command -v openssl >/dev/null || skip "openssl not installed (make deps)"
command -v curl >/dev/null || skip "curl not installed (make deps)"
command -v jq >/dev/null || skip "jq not installed (make deps)"
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || skip "python3 not installed"

# ---- certificates: a CA, the server's (127.0.0.1 and localhost), another CA, a stray key --
C=$TMP/certs
mkdir -p "$C"
mkcert() { openssl "$@" >>"$C/openssl.log" 2>&1 || { cat "$C/openssl.log"; fail "openssl $1 failed"; }; }
mkcert req -x509 -newkey rsa:2048 -nodes -keyout "$C/ca.key" -out "$C/ca.pem" -days 2 -subj "/CN=pacer test CA"
mkcert req -x509 -newkey rsa:2048 -nodes -keyout "$C/other-ca.key" -out "$C/other-ca.pem" -days 2 -subj "/CN=other CA"
mkcert req -newkey rsa:2048 -nodes -keyout "$C/srv.key" -out "$C/srv.csr" -subj "/CN=127.0.0.1"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$C/ext"
mkcert x509 -req -in "$C/srv.csr" -CA "$C/ca.pem" -CAkey "$C/ca.key" -CAcreateserial -out "$C/srv.pem" -days 2 \
    -extfile "$C/ext"
# a certificate of the same CA for another name only: the host name check
mkcert req -newkey rsa:2048 -nodes -keyout "$C/elsewhere.key" -out "$C/elsewhere.csr" -subj "/CN=elsewhere.example"
printf 'subjectAltName=DNS:elsewhere.example\n' >"$C/ext2"
mkcert x509 -req -in "$C/elsewhere.csr" -CA "$C/ca.pem" -CAkey "$C/ca.key" -CAcreateserial -out "$C/elsewhere.pem" \
    -days 2 -extfile "$C/ext2"
chmod 600 "$C"/*.key

# ---- bad files: refused before anything starts, exit 2, the file named ----------------------------------
d() { "$COORD" --state-dir "$STATE" --listen 127.0.0.1:0 "$@"; }
expect_error 2 "--tls-cert and --tls-key: give both" d --tls-cert "$C/srv.pem"
expect_error 2 "--tls-key $C/nope.key: No such file or directory" d --tls-cert "$C/srv.pem" --tls-key "$C/nope.key"
expect_error 2 "--tls-cert $C/srv.key: not a PEM certificate" d --tls-cert "$C/srv.key" --tls-key "$C/srv.key"
cp "$C/srv.key" "$C/open.key" && chmod 644 "$C/open.key"
expect_error 2 "--tls-key $C/open.key: the private key is readable or writable by group or others (mode 644)" \
    d --tls-cert "$C/srv.pem" --tls-key "$C/open.key"
expect_error 2 "do not match" d --tls-cert "$C/srv.pem" --tls-key "$C/other-ca.key"
head -c 300000 /dev/zero | tr '\0' 'A' >"$C/huge.pem"
expect_error 2 "--tls-cert $C/huge.pem: 300000 bytes, more than" d --tls-cert "$C/huge.pem" --tls-key "$C/srv.key"
d --tls-cert "$C/srv.pem" --tls-key "$C/srv.key" --help >/dev/null || fail "--help with TLS options"
# none of the key's bytes in what the refusals printed
for f in "$C/srv.key" "$C/other-ca.key"; do
    ! grep -qF "$(sed -n 2p "$f")" "$TMP/out" || fail "a refusal printed the key"
done
echo "ok: bad certificate and key files are refused at start (exit 2), each named"

# ---- the coordinator over https -------------------------------------------------------------------------
TOKEN=tls-token-$$
export PACER_TOKEN=$TOKEN
start_coord --tls-cert "$C/srv.pem" --tls-key "$C/srv.key"
BASE=$(grep -o 'REST API and dashboard on https://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')
[ -n "$BASE" ] || { cat "$TMP/coord.log"; fail "no 'REST API ... on https://' line in the log"; }
PORT=${BASE##*:}
! grep -qF "$(sed -n 2p "$C/srv.key")" "$TMP/coord.log" || fail "the log holds the key"
echo "ok: coordinator on $BASE"

p() { "$PACER" --url "$BASE" "$@"; }
p ls --cacert "$C/ca.pem" >"$TMP/ls" || { cat "$TMP/ls"; fail "pacer ls --cacert exited $?"; }
PACER_CACERT=$C/ca.pem p ls --json | jq -e '.jobs | length == 0' >/dev/null || fail "PACER_CACERT: ls --json"
expect_error 3 "cannot verify the coordinator at $BASE: .*give its CA with --cacert FILE" p ls
expect_error 3 "cannot verify .*not signed by the CA in --cacert" p ls --cacert "$C/other-ca.pem"
! grep -q "is pacer-coordinator running" "$TMP/out" || fail "a verification error is not an unreachable coordinator"
expect_error 2 "--cacert $C/none.pem: No such file or directory" p ls --cacert "$C/none.pem"
echo "ok: pacer verifies the coordinator against --cacert / PACER_CACERT, and refuses without it"

# plain http to the TLS port: no HTTP answer (curl: empty reply, or the connection reset)
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 "http://127.0.0.1:$PORT/healthz")
[ "$code" = 000 ] || fail "plain http to the TLS port answered $code"
# /metrics, the dashboard and the API's own description over TLS
curl -sf --cacert "$C/ca.pem" -H "Authorization: Bearer $TOKEN" "$BASE/metrics" | grep -q '^pacer_redis_up 1' ||
    fail "/metrics over https"
curl -sf --cacert "$C/ca.pem" "$BASE/" | grep -qi '<html' || fail "the dashboard over https"
# the dashboard's event stream (EventSource: the token in the query), over TLS
curl -sN --max-time 5 --cacert "$C/ca.pem" "$BASE/api/v1/events?access_token=$TOKEN" >"$TMP/sse.txt"
grep -q '^retry: ' "$TMP/sse.txt" || { cat "$TMP/sse.txt"; fail "no event stream over https"; }
echo "ok: plain http to the TLS port gets no answer; /metrics and the dashboard over https"

# submit and watch: the event stream over TLS, to the end of the job
spec "$TMP/small.json" tls-small 1
export PACER_CACERT=$C/ca.pem
id=$(p submit "$TMP/small.json") || fail "submit over https exited $?"
echo "$id" | grep -qx 'j-[0-9]*' || fail "submit printed '$id', not an id"
p watch "$id" >"$TMP/watch.txt" 2>&1 || { cat "$TMP/watch.txt"; fail "watch $id over https exited $? (want 0)"; }
tail -1 "$TMP/watch.txt" | grep -q "^$id SUCCEEDED after " || { tail -5 "$TMP/watch.txt"; fail "watch: no final line"; }
grep -q '^RANK  ROLE' "$TMP/watch.txt" || { cat "$TMP/watch.txt"; fail "watch: no progress table"; }
p ls | grep -q "$id" || fail "ls over https does not list $id"
echo "ok: pacer submit, watch (event stream) and ls over https"

# ---- the Python client --------------------------------------------------------------------------------
PYTHONPATH=clients/python "$PY" - "$BASE" "$TOKEN" "$C/ca.pem" "$C/other-ca.pem" "$id" <<'EOF' || fail "Python client checks"
import sys
import pacer
base, token, ca, other, job_id = sys.argv[1:6]

def refused(what, fn, *pieces):
    try:
        fn()
    except pacer.PacerError as e:
        for p in pieces:
            assert p in str(e), "%s: %r lacks %r" % (what, str(e), p)
        print("ok: %s: %s" % (what, e))
        return
    raise AssertionError(what + ": not refused")

job = pacer.Client(base, token, cafile=ca).job(job_id)
job.refresh()
assert job.state == "SUCCEEDED", job.info
print("ok: Python client with cafile= reads", job_id, job.state)
refused("no cafile", lambda: pacer.Client(base, token).job(job_id).refresh(), "cannot verify the coordinator at " + base,
        "CERTIFICATE_VERIFY_FAILED", "give its CA with cafile=")
refused("another CA", lambda: pacer.Client(base, token, cafile=other).job(job_id).refresh(), "cannot verify", "CERTIFICATE_VERIFY_FAILED",
        "not signed by the CA in cafile=")
refused("missing cafile", lambda: pacer.Client(base, token, cafile=ca + ".none"), "cafile " + ca + ".none")
refused("token in clear", lambda: pacer.Client("http://10.255.255.1:8080", token),
        "refusing to send the API token in clear text", "'10.255.255.1' is not a loopback address",
        "allow_insecure_token=True")
# allowed explicitly, or no token, or loopback: the constructor takes it (no request made)
pacer.Client("http://10.255.255.1:8080", token, allow_insecure_token=True)
pacer.Client("http://10.255.255.1:8080")
pacer.Client("http://127.0.0.1:8080", token)
EOF
echo "ok: the Python client verifies with cafile= and keeps the token off clear text"

# ---- the clear-text token rule of the CLI: refused before any connection ------------------------------
expect_error 2 "refusing to send the API token in clear text to http://10.255.255.1:8080" \
    "$PACER" --url http://10.255.255.1:8080 ls
# a name that cannot resolve: the refusal, not "Could not resolve host", so nothing was looked up
expect_error 2 "'pacer-no-such-host.invalid' is not a loopback address" \
    "$PACER" --url http://pacer-no-such-host.invalid:8080 --token t ls
grep -q "allow-insecure-token" "$TMP/out" || fail "the refusal does not name --allow-insecure-token"
# allowed: it goes on to connect (and then cannot resolve the name; no proxy in the way)
noproxy() { env -u http_proxy -u HTTP_PROXY -u all_proxy -u ALL_PROXY "$@"; }
expect_error 3 "cannot reach the coordinator at http://pacer-no-such-host.invalid:8080" \
    noproxy "$PACER" --url http://pacer-no-such-host.invalid:8080 --token t --allow-insecure-token ls
expect_error 3 "cannot reach the coordinator" \
    noproxy PACER_ALLOW_INSECURE_TOKEN=1 "$PACER" --url http://pacer-no-such-host.invalid:8080 --token t ls
# PACER_ALLOW_INSECURE_TOKEN must be 1 to count
expect_error 2 "refusing to send the API token" \
    env PACER_ALLOW_INSECURE_TOKEN=yes "$PACER" --url http://pacer-no-such-host.invalid:8080 --token t ls
# no token, nothing to keep: it connects
expect_error 3 "cannot reach the coordinator" \
    noproxy PACER_TOKEN= "$PACER" --url http://pacer-no-such-host.invalid:8080 ls
echo "ok: the CLI keeps the token off plain http to a non-loopback host unless allowed"

# ---- a certificate for another name: the CA signed it, the host name check refuses it --------------
stop_coord
start_coord --tls-cert "$C/elsewhere.pem" --tls-key "$C/elsewhere.key"
BASE=$(grep -o 'REST API and dashboard on https://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')
expect_error 3 "cannot verify the coordinator at $BASE: .*names another host" p ls --cacert "$C/ca.pem"
PYTHONPATH=clients/python "$PY" - "$BASE" "$TOKEN" "$C/ca.pem" <<'EOF' || fail "Python client: host name check"
import sys
import pacer
base, token, ca = sys.argv[1:4]
try:
    pacer.Client(base, token, cafile=ca).request("GET", "/api/v1/jobs")
except pacer.PacerError as e:
    assert "cannot verify the coordinator" in str(e) and "match" in str(e), str(e)
    print("ok: Python client: %s" % e)
else:
    raise AssertionError("a certificate for elsewhere.example was taken for 127.0.0.1")
EOF
echo "ok: a certificate of the right CA for another name is refused by both clients"
stop_coord
echo "PASS"
