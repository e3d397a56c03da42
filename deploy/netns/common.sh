# deploy/netns/common.sh - names and addresses of the network-namespace cluster, sourced
# by up.sh, down.sh, rsh.sh and shape.sh (and by tests/integration/multihost.sh).
#
# The topology: a bridge in the root namespace carries a private /24; each "host" is a
# network namespace with one veth into that bridge:
#
#   root ns   bridge ${P}br  NET.254      (curl from outside reaches the coordinator here)
#   ${P}pc    eth0           NET.1        Redis + pacer-coordinator (+ mpirun)
#   ${P}pwK   eth0           NET.(10+K)   a worker host, K = 1..WORKERS
#
# Host names (pc, pw1, ...) resolve inside the namespaces through /etc/netns/NS/hosts,
# which `ip netns exec` bind-mounts over /etc/hosts, so the real /etc/hosts is never
# touched. No namespace gets a default route: nothing in it can reach beyond the /24.
#
# A second network, the data network (PACER_NETNS_DATA_NET set, e.g. 10.78.1): a
# cluster whose MPI traffic has a network of its own (InfiniBand, a second Ethernet)
# beside the management network that ssh, Redis, the API and Open MPI's out-of-band
# channel use. Then a second bridge ${P}bd carries DATA_NET/24, and each host gets eth1
# on it through a second veth (${P}dHOST on the bridge's side):
#
#   root ns   bridge ${P}bd  DATA_NET.254
#   ${P}pc    eth1           DATA_NET.1
#   ${P}pwK   eth1           DATA_NET.(10+K)
#
# and netns_mpi_env sends MPI's messages (the TCP BTL) over it only. Host names resolve
# to the management addresses, as a real cluster's do. Setting a host's data veth down
# (ip link set ${P}dpw3 down) cuts it from the data network while its processes, its
# remote shell, its Redis connection and mpirun's control of it stay (tests/integration/
# partition.sh). Unset: one network, as before.
#
# Everything is overridable from the environment, so a second topology (or an address
# clash) needs no edit: PACER_NETNS_PREFIX, PACER_NETNS_NET (the first three octets),
# PACER_NETNS_WORKERS, PACER_NETNS_DATA_NET (the data network's first three octets).

# shellcheck disable=SC2034 # sourced: the including scripts use these
P=${PACER_NETNS_PREFIX:-pacer-}
NET=${PACER_NETNS_NET:-10.77.0}
WORKERS=${PACER_NETNS_WORKERS:-3}
BRIDGE=${P}br
BRIDGE_ADDR=$NET.254
DATA_NET=${PACER_NETNS_DATA_NET:-}
DATA_BRIDGE=${P}bd

# The host names, coordinator first.
netns_hosts() {
    echo pc
    k=1
    while [ "$k" -le "$WORKERS" ]; do echo "pw$k"; k=$((k + 1)); done
}

# host_addr HOST - the address of a host name (pc, pwK).
host_addr() {
    case $1 in
        pc) echo "$NET.1" ;;
        pw[0-9]*) echo "$NET.$((10 + ${1#pw}))" ;;
        *) return 1 ;;
    esac
}

# host_data_addr HOST - a host's address on the data network (with DATA_NET only).
host_data_addr() {
    case $1 in
        pc) echo "$DATA_NET.1" ;;
        pw[0-9]*) echo "$DATA_NET.$((10 + ${1#pw}))" ;;
        *) return 1 ;;
    esac
}

# host_of NAME|ADDR - the host name for a name or an address of the topology; fails
# for anything else, so a stray host in a hostfile is never run on the real machine.
host_of() {
    for h in $(netns_hosts); do
        if [ "$1" = "$h" ] || [ "$1" = "$(host_addr "$h")" ]; then echo "$h"; return 0; fi
    done
    return 1
}

# The namespace of a host name, and the host-side veth of its link (IFNAMSIZ is 16: keep
# the prefix short).
host_ns() { echo "$P$1"; }
host_veth() { echo "$P$1"; }
host_data_veth() { echo "${P}d$1"; }

# netns_mpi_env RSH - exports what Open MPI needs to run one job across the namespace
# hosts: its daemons started through RSH (sh deploy/netns/rsh.sh, or a wrapper around it),
# each from pc (no tree spawn), the ob1 PML over TCP, and only the cluster's /24, for the
# out-of-band channel too (with a data network: the messages over DATA_NET's /24, the
# out-of-band channel over the management /24). And no binding: each host's orted thinks it has the machine
# to itself and would bind its rank to the first core, so ranks of different "hosts"
# would all share core 0 while the other cores idle (bench/sim_validate.sh measured
# steps 3x the calibrated one); the kernel places them instead. The coordinator passes
# its environment to mpirun, and mpirun forwards OMPI_MCA_* to the remote daemons.
netns_mpi_env() {
    export OMPI_MCA_plm_rsh_agent="$1"
    export OMPI_MCA_plm_rsh_no_tree_spawn=1
    export OMPI_MCA_pml=ob1
    export OMPI_MCA_btl=tcp,self
    export OMPI_MCA_btl_tcp_if_include="${DATA_NET:-$NET}.0/24"
    export OMPI_MCA_oob_tcp_if_include="$NET.0/24"
    export OMPI_MCA_hwloc_base_binding_policy=none
}
