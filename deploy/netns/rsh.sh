#!/bin/sh
# deploy/netns/rsh.sh - Open MPI's remote shell for the namespace cluster, in place of ssh:
#   mpirun --mca plm_rsh_agent /path/to/rsh.sh ...   (or OMPI_MCA_plm_rsh_agent)
# mpirun calls it as `rsh.sh [ssh options] HOST COMMAND...` exactly like ssh, and, like
# sshd, it runs COMMAND through a shell "on" HOST: in HOST's network namespace, with its
# own UTS namespace whose host name is HOST (so gethostname(), which pacer-worker reports
# as the rank's host and Open MPI uses for its session directory, differs per host).
# HOST is a name (pw1) or an address (10.77.0.11) of the topology; anything else is
# refused, so a job can never start on the real machine by mistake.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

# ssh-style options before the host (Open MPI passes none by default; be tolerant).
while [ $# -gt 0 ]; do
    case $1 in
        -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
        -*) shift ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "rsh.sh: usage: rsh.sh HOST COMMAND..." >&2; exit 255; }
host=$(host_of "$1") || { echo "rsh.sh: $1 is not a host of the namespace cluster" >&2; exit 255; }
shift
# ssh joins its arguments with spaces and the remote shell parses the result: same here.
exec ip netns exec "$(host_ns "$host")" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
