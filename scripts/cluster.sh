#!/usr/bin/env bash
# A cluster of several hosts on one Linux machine: each host a network namespace with its own
# address, its own /etc/hosts and, for the processes Open MPI starts there, its own host name;
# Open MPI's mpirun across them. What the multi-host tests run on (docs/guide/gpus-and-clusters.md).
# Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2 (Debian's `iproute2` package).
#
#   scripts/cluster.sh up N           hosts host1..hostN on a bridge; prints the hostfile's path
#   scripts/cluster.sh mpirun ARGS... Open MPI's mpirun across them (--hostfile, the launch agent,
#                                     the hosts' network for MPI's own traffic, ranks spread by host)
#   scripts/cluster.sh kill HOST      kill -9 every process of that host (a node lost)
#   scripts/cluster.sh down           remove them all
#
# Host i has the address 10.77.0.(10+i) on the bridge `br-prs` (10.77.0.1, the machine itself,
# named `head` in the hosts' /etc/hosts). mpirun runs on the machine and starts an Open MPI daemon
# on each host through the launch agent (`ip netns exec HOST unshare --uts`, the host name set),
# instead of ssh; shared memory is used only between ranks of one host. The file system is the
# machine's, shared by every host as a cluster's parallel file system would be.
#
# CLUSTER_DIR [/tmp/propulate-cluster]: the hostfile and the launch agent. SLOTS [2]: slots per host.
set -euo pipefail

DIR=${CLUSTER_DIR:-/tmp/propulate-cluster}
BRIDGE=br-prs
NET=10.77.0
SLOTS=${SLOTS:-2}

die() {
    echo "cluster.sh: $*" >&2
    exit 1
}

hosts() {
    ip netns list 2>/dev/null | awk '$1 ~ /^host[0-9]+$/ { print $1 }' | sort -V
}

up() {
    local n=${1:-}
    [[ "$n" =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 200)) || die "up needs a number of hosts from 1 to 200, got '${n}'"
    [ -z "$(hosts)" ] || die "hosts are up already ($(hosts | tr '\n' ' ')); run 'scripts/cluster.sh down' first"
    command -v ip >/dev/null || die "ip not found: install Debian's iproute2"
    command -v mpirun >/dev/null || die "mpirun not found: install Open MPI (scripts/install-deps.sh)"
    mkdir -p "$DIR"
    ip link add "$BRIDGE" type bridge 2>/dev/null || die "cannot create the bridge $BRIDGE (root, or CAP_NET_ADMIN, is needed)"
    ip addr add "$NET.1/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    local names="127.0.0.1 localhost\n$NET.1 head\n"
    for ((i = 1; i <= n; i++)); do
        names+="$NET.$((10 + i)) host$i\n"
    done
    : >"$DIR/hostfile"
    for ((i = 1; i <= n; i++)); do
        local h=host$i
        ip netns add "$h"
        # The same interface name inside every host; lo starts down in a new namespace.
        ip link add "v-$h" type veth peer name eth0 netns "$h"
        ip link set "v-$h" master "$BRIDGE" up
        ip -n "$h" addr add "$NET.$((10 + i))/24" dev eth0
        ip -n "$h" link set lo up
        ip -n "$h" link set eth0 up
        ip -n "$h" route add default via "$NET.1"
        # `ip netns exec` mounts each file of /etc/netns/HOST over its /etc twin.
        mkdir -p "/etc/netns/$h"
        printf "$names" >"/etc/netns/$h/hosts"
        echo "$h" >"/etc/netns/$h/hostname"
        echo "$h slots=$SLOTS" >>"$DIR/hostfile"
    done
    # Open MPI's rsh launcher runs `AGENT HOST '<command starting its daemon>'`.
    cat >"$DIR/agent.sh" <<'AGENT'
#!/bin/sh
h=$1
shift
exec ip netns exec "$h" unshare --uts sh -c "hostname $h; $*"
AGENT
    chmod +x "$DIR/agent.sh"
    echo "$DIR/hostfile"
}

run_mpirun() {
    [ -f "$DIR/hostfile" ] && [ -n "$(hosts)" ] || die "no hosts: run 'scripts/cluster.sh up N' first"
    # Root's permission, as scripts/mpi-env.sh gives it.
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    # Every daemon starts from this namespace (no tree spawn) and reaches mpirun at the bridge;
    # MPI's TCP traffic stays on the hosts' network. --bind-to none: every host sees all cores.
    exec mpirun --hostfile "$DIR/hostfile" --map-by node --bind-to none --oversubscribe \
        --mca plm_rsh_agent "$DIR/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
        --mca oob_tcp_if_include "$NET.0/24" --mca btl_tcp_if_include "$NET.0/24" \
        --mca btl tcp,vader,self "$@"
}

kill_host() {
    local h=${1:-}
    hosts | grep -qx "$h" || die "no host '$h' (hosts: $(hosts | tr '\n' ' '))"
    ip netns pids "$h" | xargs -r kill -9
}

down() {
    local h
    for h in $(hosts); do
        ip netns pids "$h" | xargs -r kill -9
        ip netns del "$h"
        rm -rf "/etc/netns/$h"
    done
    ip link del "$BRIDGE" 2>/dev/null || true
    rm -rf "$DIR"
}

case "${1:-}" in
up) up "${2:-}" ;;
mpirun)
    shift
    run_mpirun "$@"
    ;;
kill) kill_host "${2:-}" ;;
down) down ;;
*) die "usage: scripts/cluster.sh up N | mpirun ARGS... | kill HOST | down" ;;
esac
