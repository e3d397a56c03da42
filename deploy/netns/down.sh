#!/bin/sh
# deploy/netns/down.sh - removes the namespace cluster: stops every process that runs in
# one of its namespaces (only those: `ip netns pids` names them by id), deletes the
# namespaces (their veths go with them), the bridges and the /etc/netns files. Safe to run
# on a partial or absent topology; never fails.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

for h in $(netns_hosts); do
    ns=$(host_ns "$h")
    ip netns list 2>/dev/null | grep -q "^$ns\( \|$\)" || continue
    pids=$(ip netns pids "$ns" 2>/dev/null)
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
done
# A moment for clean exits (Redis, the coordinator), then nothing survives.
i=0
while [ $i -lt 20 ]; do
    left=""
    for h in $(netns_hosts); do
        left="$left$(ip netns pids "$(host_ns "$h")" 2>/dev/null)"
    done
    [ -z "$left" ] && break
    sleep 0.1
    i=$((i + 1))
done
for h in $(netns_hosts); do
    ns=$(host_ns "$h")
    pids=$(ip netns pids "$ns" 2>/dev/null)
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    ip link del "$(host_veth "$h")" 2>/dev/null
    ip link del "$(host_data_veth "$h")" 2>/dev/null
    rm -rf "/etc/netns/$ns"
done
ip link del "$BRIDGE" 2>/dev/null
ip link del "$DATA_BRIDGE" 2>/dev/null
rmdir /etc/netns 2>/dev/null
exit 0
