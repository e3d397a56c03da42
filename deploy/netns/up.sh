#!/bin/sh
# deploy/netns/up.sh - builds the namespace cluster described in common.sh (root only):
# a bridge, the namespaces pc and pw1..pwN, one veth each, addresses, /etc/netns hosts
# files; with PACER_NETNS_DATA_NET a second bridge and a second veth each (the data
# network). Idempotent in the sense that it refuses to build over an existing topology:
# run down.sh first. Tear it down with down.sh (which also kills what runs inside).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

[ "$(id -u)" -eq 0 ] || { echo "up.sh: must run as root" >&2; exit 1; }
if ip link show "$BRIDGE" >/dev/null 2>&1; then
    echo "up.sh: $BRIDGE exists already (run deploy/netns/down.sh)" >&2
    exit 1
fi
# Our /24 must be nobody else's: a route into it means an interface already uses it.
if [ -n "$(ip -4 route show root "$NET.0/24")" ]; then
    echo "up.sh: $NET.0/24 is already routed here (set PACER_NETNS_NET to a free /24)" >&2
    exit 1
fi

if [ -n "$DATA_NET" ] && [ -n "$(ip -4 route show root "$DATA_NET.0/24")" ]; then
    echo "up.sh: $DATA_NET.0/24 is already routed here (set PACER_NETNS_DATA_NET to a free /24)" >&2
    exit 1
fi

ip link add "$BRIDGE" type bridge
ip addr add "$BRIDGE_ADDR/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
if [ -n "$DATA_NET" ]; then
    ip link add "$DATA_BRIDGE" type bridge
    ip addr add "$DATA_NET.254/24" dev "$DATA_BRIDGE"
    ip link set "$DATA_BRIDGE" up
fi

hosts_file=$(mktemp)
{
    echo "127.0.0.1 localhost"
    for h in $(netns_hosts); do echo "$(host_addr "$h") $h"; done
} >"$hosts_file"

for h in $(netns_hosts); do
    ns=$(host_ns "$h")
    veth=$(host_veth "$h")
    ip netns add "$ns"
    # The peer is created directly inside the namespace, named eth0 there.
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$BRIDGE"
    ip link set "$veth" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(host_addr "$h")/24" dev eth0
    ip -n "$ns" link set eth0 up
    if [ -n "$DATA_NET" ]; then
        dveth=$(host_data_veth "$h")
        ip link add "$dveth" type veth peer name eth1 netns "$ns"
        ip link set "$dveth" master "$DATA_BRIDGE"
        ip link set "$dveth" up
        ip -n "$ns" addr add "$(host_data_addr "$h")/24" dev eth1
        ip -n "$ns" link set eth1 up
    fi
    mkdir -p "/etc/netns/$ns"
    cp "$hosts_file" "/etc/netns/$ns/hosts"
    chmod 644 "/etc/netns/$ns/hosts"   # mktemp's 0600 would hide it from non-root users
done
rm -f "$hosts_file"
echo "netns: up: bridge $BRIDGE $BRIDGE_ADDR/24; $(for h in $(netns_hosts); do printf '%s=%s ' "$h" "$(host_addr "$h")"; done)"
[ -z "$DATA_NET" ] || echo "netns: data network: bridge $DATA_BRIDGE $DATA_NET.254/24; $(for h in $(netns_hosts); do printf '%s=%s ' "$h" "$(host_data_addr "$h")"; done)"
