#!/bin/sh
# deploy/netns/ssh-check.sh - the Docker deployment's wiring, run without Docker: the
# image's entrypoint (deploy/entrypoint-pacer.sh) in its three roles, in the namespace
# cluster, as an unprivileged user, with a real sshd and ssh in between:
#
#   pc   Redis; `entrypoint coordinator`: makes the keys, writes ~/.ssh/config and the
#        hostfile (PACER_HOSTS="pw1 pw2"), runs pacer-coordinator with a token
#   pw1, pw2   `entrypoint worker`: waits for the key, installs it, runs sshd on 2222
#
# then submits an ssgd job (2 workers) over HTTP from the root namespace and waits for
# SUCCEEDED: mpirun on pc reached pw1 and pw2 through ssh with the generated key and
# the pinned host key, and the ranks found the state dir, data and Redis. It also runs
# the image's health check for each role. Each host gets its own /tmp (as a container
# would), a UTS name, and the user's home as HOME.
#
# A manual check (root; ~15 s), not part of `make test`: it adds a temporary user
# (pacerchk, removed on exit) and needs an sshd binary: openssh-server installed, or
# PACER_SSHD=/path/to/sshd; without the package, extract it:
#   apt-get download openssh-server libwrap0 && for d in *.deb; do dpkg-deb -x "$d" /tmp/sshd-root; done
#   PACER_SSHD=/tmp/sshd-root/usr/sbin/sshd SSHD_LIBS=/tmp/sshd-root/usr/lib/x86_64-linux-gnu sh deploy/netns/ssh-check.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$repo/$BUILD ;; esac
SSHD=${PACER_SSHD:-/usr/sbin/sshd}
U=pacerchk
export PACER_NETNS_WORKERS=2
. "$here/common.sh"

die() { echo "ssh-check: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root"
[ -x "$SSHD" ] || die "no sshd at $SSHD (see the header: PACER_SSHD)"
if [ ! -x "$BUILD/pacer-coordinator" ] || [ ! -x "$BUILD/pacer-worker" ]; then die "build the binaries first"; fi
getent passwd "$U" >/dev/null && die "user $U exists already (a previous run killed hard? userdel -r $U)"

W=$(mktemp -d /var/tmp/pacer-sshcheck.XXXXXX)
cleanup() {
    sh "$here/down.sh"
    userdel -r "$U" >/dev/null 2>&1 || userdel "$U" 2>/dev/null || true
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

useradd --home-dir "$W/home" --create-home --shell /bin/sh "$U"
usermod -p '*' "$U"
mkdir -p "$W/bin" "$W/state" "$W/ssh-key" "$W/ssh-workers"
cp "$BUILD/pacer-coordinator" "$BUILD/pacer-worker" "$W/bin/"
# sshd with libraries from outside the system (an extracted .deb): a wrapper that execs
# it by its absolute path, as sshd's re-exec needs.
if [ -n "${SSHD_LIBS:-}" ]; then
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$SSHD_LIBS" "$SSHD" >"$W/bin/sshd"
    chmod 755 "$W/bin/sshd"
    SSHD=$W/bin/sshd
fi
cp "$repo/deploy/entrypoint-pacer.sh" "$W/bin/entrypoint.sh"
chown -R "$U:$U" "$W"
chmod 755 "$W"

sh "$here/down.sh"
sh "$here/up.sh"
PC=$(host_addr pc)
TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# on HOST CMD... - CMD on HOST as the user: its network namespace, its own UTS name and
# /tmp, a clean environment with only what a container would set (plus "$ENV").
on() {
    h=$1
    shift
    ip netns exec "$(host_ns "$h")" unshare --uts --mount sh -c '
        mount -t tmpfs -o mode=1777 tmpfs /tmp && hostname "$0" && exec "$@"' "$h" \
        setpriv --reuid="$U" --regid="$U" --init-groups \
        env -i HOME="$W/home" USER="$U" PATH=/usr/local/bin:/usr/bin:/bin OPENBLAS_NUM_THREADS=1 \
        PACER_BIN="$W/bin" PACER_STATE_DIR="$W/state" PACER_SSHD="$SSHD" \
        PACER_SSH_KEY_DIR="$W/ssh-key" PACER_SSH_WORKER_DIR="$W/ssh-workers" "$@"
}

ip netns exec "$(host_ns pc)" redis-server --bind "$PC" --port 6379 --protected-mode no --save '' \
    --appendonly no --dir "$W" --logfile "$W/redis.log" &
for h in pw1 pw2; do
    on "$h" sh "$W/bin/entrypoint.sh" worker >"$W/$h.log" 2>&1 &
done
on pc env REDIS_URL="redis://pc:6379" PACER_TOKEN="$TOKEN" PACER_LISTEN="$PC:8080" PACER_HOSTS="pw1 pw2" \
    OMPI_MCA_plm_rsh_no_tree_spawn=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self \
    OMPI_MCA_btl_tcp_if_include="$NET.0/24" OMPI_MCA_oob_tcp_if_include="$NET.0/24" \
    sh "$W/bin/entrypoint.sh" coordinator >"$W/coordinator.log" 2>&1 &

i=0
until curl -fsS --max-time 2 "http://$PC:8080/healthz" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 100 ] && { cat "$W/coordinator.log"; die "coordinator not healthy"; }
    sleep 0.2
done
echo "ok: coordinator entrypoint: keys made, API healthy on $PC:8080"
[ -e "$W/ssh-workers/id_ed25519" ] && die "the login key is in the workers' volume"
echo "      coordinator only: $(cd "$W/ssh-key" && echo *); workers (read-only): $(cd "$W/ssh-workers" && echo *)"
i=0
while ! grep -q "Server listening" "$W/pw1.log" "$W/pw2.log" 2>/dev/null ||
    [ "$(grep -l "Server listening" "$W/pw1.log" "$W/pw2.log" | wc -l)" -lt 2 ]; do
    i=$((i + 1))
    [ $i -gt 100 ] && { cat "$W/pw1.log" "$W/pw2.log"; die "worker sshd not listening"; }
    sleep 0.1
done
echo "ok: worker entrypoints: sshd (unprivileged, port 2222) on pw1 and pw2"

# The health check of each role, run where that role runs (its /tmp holds the role).
# Here every `on` has a fresh /tmp, so the role file is written first by hand.
on pc sh -c "echo coordinator >/tmp/pacer-role && PACER_LISTEN=$PC:8080 sh $W/bin/entrypoint.sh healthcheck" ||
    die "coordinator health check"
on pw1 sh -c "echo worker >/tmp/pacer-role && sh $W/bin/entrypoint.sh healthcheck" || die "worker health check"
echo "ok: health checks pass (coordinator: /healthz; worker: sshd listening)"

cat >"$W/spec.json" <<'JSON'
{"name": "sshcheck", "model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 2,
 "dataset": {"name": "fashion-mnist", "train_subset": 2048, "test_subset": 500},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "batch_size": 64, "epochs": 1, "seed": 7,
 "checkpoint": {"every_steps": 8}}
JSON
code=$(curl -sS -o "$W/resp" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "@$W/spec.json" "http://$PC:8080/api/v1/jobs")
[ "$code" = 201 ] || die "submit answered $code: $(cat "$W/resp")"
id=$(jq -r .id "$W/resp")
i=0
while :; do
    st=$(curl -fsS "http://$PC:8080/api/v1/jobs/$id" | jq -r .state)
    case $st in SUCCEEDED | FAILED | CANCELLED) break ;; esac
    i=$((i + 1))
    [ $i -gt 200 ] && die "job $id still $st"
    sleep 0.3
done
[ "$st" = SUCCEEDED ] || { tail -30 "$W/state/jobs/$id/log"; die "job $id $st"; }
hosts=$(curl -fsS "http://$PC:8080/api/v1/jobs/$id/nodes" | jq -r '[.ranks[].host] | join(" ")')
[ "$hosts" = "pw1 pw2" ] || die "ranks ran on '$hosts'"
owner=$(stat -c %U "$W/state/jobs/$id/checkpoints/sshcheck.ckpt") || die "no checkpoint"
[ "$owner" = "$U" ] || die "checkpoint owned by $owner"
echo "ok: job $id SUCCEEDED over ssh: ranks on pw1 and pw2, checkpoint in the shared state dir (owner $owner)"
grep -m1 "pacer-coordinator.*attempt" "$W/state/jobs/$id/log" | cut -c1-160 | sed 's/^/      /'
