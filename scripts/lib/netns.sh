# Emulated hosts for the multi-host tests and the cluster benchmark: network
# namespaces joined by a Linux bridge that lives in a namespace of its own,
# so nothing is added to this machine's own network. Sourced; the caller
# defines skip() (called with the reason when a set-up step fails: the
# machine cannot host the harness) and removes what it made with
# netns_remove_all on every exit path.

NETNS_CREATED=()

# Skips (skip()) unless this shell can make namespaces: it is root and has
# iproute2's `ip`, and each other command named (tc).
netns_require() {
  [ "$(id -u)" -eq 0 ] || skip "creating network namespaces needs root (running as uid $(id -u))"
  local cmd
  for cmd in ip "$@"; do
    command -v "$cmd" >/dev/null || skip "no '$cmd' command (iproute2 is not installed)"
  done
}

# netns_executables NAME FILE...: exits 1, NAME saying which, unless every
# FILE is an executable.
netns_executables() {
  local name=$1 bin
  shift
  for bin in "$@"; do
    [ -x "$bin" ] || { echo "$name: FAIL: $bin is not an executable"; exit 1; }
  done
}

# netns_job_hosts PREFIX NET: the multi-host tests' job, a host each for the
# scheduler, 2 servers and 3 workers: sets nodes (their names), role and
# addr (NET.1, NET.11-12, NET.21-23) by name, and switch_ns (PREFIXsw).
netns_job_hosts() {
  switch_ns="$1sw"
  nodes=(sched s0 s1 w0 w1 w2)
  declare -gA role=([sched]=scheduler [s0]=server [s1]=server [w0]=worker [w1]=worker
                    [w2]=worker)
  declare -gA addr=([sched]=$2.1 [s0]=$2.11 [s1]=$2.12 [w0]=$2.21 [w1]=$2.22 [w2]=$2.23)
}

# netns_logs NAME: a folder for the nodes' logs (logdir, /tmp/NAME.XXXXXX)
# and, on every exit, the processes in pid_of (node -> pid) killed, the
# namespaces removed and the folder with them.
netns_logs() {
  logdir=$(mktemp -d "/tmp/$1.XXXXXX")
  declare -gA pid_of=()
  trap netns_end EXIT
  trap 'exit 130' INT TERM
}
netns_end() {
  local n
  for n in "${!pid_of[@]}"; do kill -KILL "${pid_of[$n]}" 2>/dev/null; done
  netns_remove_all
  rm -rf "$logdir"
}

# Runs one set-up step under a deadline; skip()s with its error if it fails.
netns_setup() {
  local err
  err=$(timeout 10 "$@" 2>&1) || skip "set-up step '$*' failed: ${err:-timed out after 10 s}"
}

# netns_switch NS: namespace NS holding bridge br0, up.
netns_switch() {
  netns_setup ip netns add "$1"
  NETNS_CREATED+=("$1")
  netns_setup ip -n "$1" link add br0 type bridge
  netns_setup ip -n "$1" link set br0 up
}

# netns_host NS SWITCH_NS PORT ADDR/LEN: namespace NS, lo up, whose eth1 (at
# ADDR/LEN) is a veth to port PORT of SWITCH_NS's bridge. In two steps,
# netns_add and netns_link, for a caller that adds interfaces in between.
netns_host() {
  netns_add "$1"
  netns_link "$@"
}

netns_add() {
  netns_setup ip netns add "$1"
  NETNS_CREATED+=("$1")
  netns_setup ip -n "$1" link set lo up
}

netns_link() {
  local ns=$1 switch=$2 port=$3 addr=$4
  netns_setup ip -n "$ns" link add eth1 type veth peer name "$port" netns "$switch"
  netns_setup ip -n "$ns" addr add "$addr" dev eth1
  netns_setup ip -n "$ns" link set eth1 up
  netns_setup ip -n "$switch" link set "$port" master br0
  netns_setup ip -n "$switch" link set "$port" up
}

# Kills every process in the namespaces made here (all of them ours: one
# left behind would keep its interfaces alive) and deletes them.
netns_remove_all() {
  local ns p
  for ns in "${NETNS_CREATED[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  NETNS_CREATED=()
}
