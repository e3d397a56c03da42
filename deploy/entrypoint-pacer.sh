#!/bin/sh
# deploy/entrypoint-pacer.sh ROLE [ARGS...] - what a pacer container runs (deploy/Dockerfile).
#
#   coordinator [OPTIONS]  make the cluster's ssh keys if they are missing (init), write
#                          the ssh client set-up and the hostfile, then run
#                          pacer-coordinator with OPTIONS added
#   worker                 install the public key, run sshd in the foreground: mpirun on
#                          the coordinator starts the ranks here over ssh
#   init                   only make the keys (for a separate one-shot step)
#   healthcheck            the image's HEALTHCHECK for the role this container runs:
#                          the coordinator when GET /healthz answers 200 (it does only
#                          while Redis answers and takes writes: 503 "degraded" when it
#                          refuses them, e.g. on a full disk), a worker when its sshd listens
#   anything else          run as a command (`docker run --rm -it pacer:cpu sh`)
#
# Keys, as Horovod's Docker set-up shares them, but split in two volumes so that no
# worker holds the key that logs into the others:
#   $PACER_SSH_KEY_DIR (coordinator only)   id_ed25519 (mpirun's login key), known_hosts
#   $PACER_SSH_WORKER_DIR (workers, read-only)  authorized_keys, ssh_host_ed25519_key
# Every worker uses the one cluster host key, which the coordinator's known_hosts pins
# for all hosts: the first connection is authenticated too, and a re-created worker
# container is not a "changed host key".
#
# Environment: PACER_STATE_DIR (/var/lib/pacer), PACER_LISTEN (0.0.0.0:8080),
# PACER_TOKEN or PACER_TOKEN_FILE (the API token; required off loopback), REDIS_URL,
# PACER_WORKER_REDIS, PACER_HOSTS ("worker1 worker2"; NAME or NAME:SLOTS each) or
# PACER_HOSTFILE (a ready hostfile), PACER_SSH_PORT (2222), PACER_KEY_WAIT_S (120);
# PACER_BIN (/opt/pacer), PACER_SSHD (/usr/sbin/sshd), PACER_SSH_KEY_DIR and
# PACER_SSH_WORKER_DIR move things for use outside the image (deploy/netns/ssh-check.sh).
set -eu

role=${1:-coordinator}
[ $# -gt 0 ] && shift
STATE=${PACER_STATE_DIR:-/var/lib/pacer}
KEYDIR=${PACER_SSH_KEY_DIR:-/etc/pacer/ssh-key}
WKDIR=${PACER_SSH_WORKER_DIR:-/etc/pacer/ssh-workers}
PORT=${PACER_SSH_PORT:-2222}
BIN=${PACER_BIN:-/opt/pacer}
ME=$(id -un)

log() { echo "pacer-entrypoint ($role): $*" >&2; }

# Files appear whole or not at all: write to a temporary name, then rename.
keygen() { # FILE COMMENT
    rm -f "$1.new" "$1.new.pub"
    ssh-keygen -q -t ed25519 -N '' -C "$2" -f "$1.new"
    mv "$1.new.pub" "$1.pub"
    mv "$1.new" "$1"
}

init_keys() {
    umask 077
    [ -s "$KEYDIR/id_ed25519" ] || { keygen "$KEYDIR/id_ed25519" "pacer-mpirun"; log "made the mpirun key"; }
    [ -s "$WKDIR/ssh_host_ed25519_key" ] || { keygen "$WKDIR/ssh_host_ed25519_key" "pacer-workers"; log "made the workers' host key"; }
    # The public halves, where each side reads them. authorized_keys last: workers wait
    # for it, and by then the host key is in place.
    printf '* %s\n' "$(cut -d' ' -f1,2 "$WKDIR/ssh_host_ed25519_key.pub")" >"$KEYDIR/known_hosts.new"
    mv "$KEYDIR/known_hosts.new" "$KEYDIR/known_hosts"
    cp "$KEYDIR/id_ed25519.pub" "$WKDIR/authorized_keys.new"
    mv "$WKDIR/authorized_keys.new" "$WKDIR/authorized_keys"
    umask 022
}

case $role in
init)
    init_keys
    ;;

coordinator)
    echo coordinator >/tmp/pacer-role
    case ${PACER_TOKEN:-} in
        change-me*) log "PACER_TOKEN is still the example's placeholder: set a random one in deploy/.env"; exit 2 ;;
    esac
    [ -w "$KEYDIR" ] && [ -w "$WKDIR" ] && init_keys
    [ -s "$KEYDIR/id_ed25519" ] || { log "no key in $KEYDIR (run the init role)"; exit 1; }
    # mpirun runs `ssh HOST orted ...`: everything it needs is in the client config.
    mkdir -p "$HOME/.ssh"
    chmod 700 "$HOME/.ssh"
    cat >"$HOME/.ssh/config" <<EOF
Host *
    Port $PORT
    User $ME
    IdentityFile $KEYDIR/id_ed25519
    IdentitiesOnly yes
    UserKnownHostsFile $KEYDIR/known_hosts
    StrictHostKeyChecking yes
    BatchMode yes
    ConnectTimeout 10
    LogLevel ERROR
EOF
    chmod 600 "$HOME/.ssh/config"
    mkdir -p "$STATE"
    hostfile=${PACER_HOSTFILE:-}
    if [ -z "$hostfile" ]; then
        hostfile=$STATE/hostfile
        : >"$hostfile.new"
        for h in ${PACER_HOSTS:-worker1 worker2}; do
            case $h in
                *:*) echo "${h%%:*} slots=${h#*:}" >>"$hostfile.new" ;;
                *) echo "$h slots=1" >>"$hostfile.new" ;;
            esac
        done
        mv "$hostfile.new" "$hostfile"
    fi
    log "hostfile $hostfile: $(grep -v '^#' "$hostfile" | tr '\n' ' ')"
    set -- --listen "${PACER_LISTEN:-0.0.0.0:8080}" --state-dir "$STATE" --hostfile "$hostfile" "$@"
    [ -n "${PACER_TOKEN_FILE:-}" ] && set -- --token-file "$PACER_TOKEN_FILE" "$@"
    [ -n "${PACER_WORKER_REDIS:-}" ] && set -- --worker-redis "$PACER_WORKER_REDIS" "$@"
    exec "$BIN/pacer-coordinator" "$@"
    ;;

worker)
    echo worker >/tmp/pacer-role
    # The coordinator makes the keys at its first start; wait for them.
    i=0
    while [ ! -s "$WKDIR/authorized_keys" ]; do
        i=$((i + 1))
        [ "$i" -gt "${PACER_KEY_WAIT_S:-120}" ] && { log "no $WKDIR/authorized_keys after ${PACER_KEY_WAIT_S:-120} s"; exit 1; }
        sleep 1
    done
    d=$HOME/.sshd
    mkdir -p "$d" "$HOME/.ssh"
    chmod 700 "$d" "$HOME/.ssh"
    # sshd insists that host keys are private to it: a copy with our mode, whatever the
    # volume's. A machine without the cluster key makes its own (and prints it: it then
    # needs a line in the coordinator's known_hosts).
    if [ -s "$WKDIR/ssh_host_ed25519_key" ]; then
        cp "$WKDIR/ssh_host_ed25519_key" "$d/ssh_host_ed25519_key"
    elif [ ! -s "$d/ssh_host_ed25519_key" ]; then
        ssh-keygen -q -t ed25519 -N '' -C "$(hostname)" -f "$d/ssh_host_ed25519_key"
        log "own host key (add to the coordinator's known_hosts): $(cut -d' ' -f1,2 "$d/ssh_host_ed25519_key.pub")"
    fi
    chmod 600 "$d/ssh_host_ed25519_key"
    cp "$WKDIR/authorized_keys" "$HOME/.ssh/authorized_keys"
    chmod 600 "$HOME/.ssh/authorized_keys"
    # An ssh session starts with a bare environment; the ranks need the container's
    # (PATH, CUDA's LD_LIBRARY_PATH and NVIDIA_* settings, thread counts, Open MPI).
    env | grep -E '^(PATH|LD_LIBRARY_PATH|OPENBLAS_NUM_THREADS|OMP_NUM_THREADS|NVIDIA_[A-Z_]+|CUDA_[A-Z_]+|OMPI_MCA_[A-Za-z0-9_]+|PACER_[A-Z_]+)=' |
        grep -v '^PACER_TOKEN' >"$HOME/.ssh/environment" || true
    chmod 600 "$HOME/.ssh/environment"
    # An unprivileged sshd: no privilege separation, only $ME can log in, keys only.
    cat >"$d/sshd_config" <<EOF
Port $PORT
HostKey $d/ssh_host_ed25519_key
PidFile $d/sshd.pid
AuthorizedKeysFile .ssh/authorized_keys
AllowUsers $ME
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin no
PermitUserEnvironment yes
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
PrintMotd no
EOF
    log "sshd on port $PORT for $ME"
    # sshd re-executes itself: it must be started by its absolute path.
    exec "${PACER_SSHD:-/usr/sbin/sshd}" -D -e -f "$d/sshd_config"
    ;;

healthcheck)
    case $(cat /tmp/pacer-role 2>/dev/null || echo none) in
    coordinator)
        listen=${PACER_LISTEN:-0.0.0.0:8080}
        host=${listen%:*}
        case $host in "" | 0.0.0.0 | "[::]") host=127.0.0.1 ;; esac
        exec curl -fsS --max-time 4 -o /dev/null "http://$host:${listen##*:}/healthz"
        ;;
    worker)
        # A listening socket (state 0A) on the port, from /proc: no ss/netstat in the image.
        hex=$(printf '%04X' "$PORT")
        cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
            awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { ok = 1 } END { exit !ok }'
        ;;
    esac
    ;;

*)
    exec "$role" "$@"
    ;;
esac
