#!/bin/sh
# deploy/netns/shape.sh HOST on|off [DELAY RATE] - makes HOST's link slow (both
# directions) or normal again. DELAY defaults to 20ms, RATE to 20mbit.
#
# With sch_netem in the kernel: `netem delay DELAY rate RATE` on both ends of the veth.
# Kernels built without netem (CONFIG_NET_SCH_NETEM unset, e.g. some VM/CI kernels) get
# `tbf rate RATE` instead: the bandwidth limit without the added latency. For pacer's
# traffic the rate is what matters (a LeNet-5 gradient is ~250 kB, ~100 ms at 20 Mbit/s,
# against 20 ms of delay). Prints which one it applied.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

[ $# -ge 2 ] || { echo "usage: shape.sh HOST on|off [DELAY RATE]" >&2; exit 2; }
host=$(host_of "$1") || { echo "shape.sh: unknown host $1" >&2; exit 2; }
delay=${3:-20ms}
rate=${4:-20mbit}
ns=$(host_ns "$host")
veth=$(host_veth "$host")

# add_both QDISC ARGS... - the same root qdisc on the host-side end (traffic into the
# host) and on the namespace's eth0 (traffic out of it).
add_both() {
    tc qdisc add dev "$veth" root "$@" 2>/dev/null || return 1
    ip netns exec "$ns" tc qdisc add dev eth0 root "$@" 2>/dev/null || return 1
}
del_both() {
    tc qdisc del dev "$veth" root 2>/dev/null || true
    ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
}

case $2 in
    off)
        del_both
        echo "shape: $host normal" ;;
    on)
        del_both
        if add_both netem delay "$delay" rate "$rate"; then
            echo "shape: $host netem delay $delay rate $rate (both directions)"
        else
            del_both
            # burst: a few MTUs; latency 400ms bounds the queue (~1 MB at 20 Mbit/s) so
            # TCP sees queueing, not loss.
            add_both tbf rate "$rate" burst 16kb latency 400ms || {
                echo "shape.sh: neither netem nor tbf qdiscs are available" >&2
                exit 1
            }
            echo "shape: $host tbf rate $rate (both directions; no netem in this kernel: no added delay)"
        fi ;;
    *) echo "usage: shape.sh HOST on|off [DELAY RATE]" >&2; exit 2 ;;
esac
