#!/usr/bin/env bash
# usage: ssh_hostfile.sh CARAVAN_LAUNCH SUM_CHECK_WORKER [REGROUP_WORKER]
#
# caravan-launch --hostfile over real OpenSSH: three "hosts" (network
# namespaces joined by a bridge), each running Debian's sshd with a host key
# and a client key made for this test. The launcher runs on the first host,
# as on a login node, and starts the scheduler, 2 servers and 3 workers over
# ssh. Then:
#   1. a job with CARAVAN_JOB_TOKEN set: every sum exact, every line prefixed
#      with role and host, every node joined from its own host's address;
#   2. a long job in which one host's worker is killed midway: the launcher
#      stops everything, exits non-zero naming that worker and host, no
#      process of the job is left on any host, and the job token was on no
#      process's command line while it ran;
#   3. with REGROUP_WORKER given, --elastic: a job on the first two hosts
#      (regroup_worker, every sum checked against the workers in the job)
#      whose second host's worker is killed: the launcher starts it again
#      there over ssh and it joins; then the third host is added to the host
#      file: the launcher starts its worker, which joins, and the job ends
#      with status 0 once the three have trained together;
#   4. the same with --host-discovery-script instead of a host file: the
#      third host joins once the script prints it.
# Exits 77 (skipped) saying why where namespaces or sshd cannot run here.
set -u
launch=$1 worker=$2 regroup=${3:-}

skip() { echo "ssh_hostfile: SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (uid $(id -u))"
for t in ip ssh ssh-keygen; do command -v $t >/dev/null || skip "no '$t' (iproute2, openssh-client)"; done
[ -x /usr/sbin/sshd ] || skip "no /usr/sbin/sshd (openssh-server is not installed)"

prefix="cvsh$$"
switch_ns=${prefix}sw
hosts=(h1 h2 h3)
declare -A addr=([h1]=10.81.0.11 [h2]=10.81.0.12 [h3]=10.81.0.13)
tmp=$(mktemp -d /tmp/ssh_hostfile.XXXXXX)
source "$(dirname "$0")/../../scripts/lib/netns.sh"
cleanup() {
  netns_remove_all
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
  echo "ssh_hostfile: FAIL: $*"
  for f in "$tmp"/*.log; do [ -e "$f" ] && { echo "----- $(basename "$f")"; tail -n 40 "$f"; }; done
  exit 1
}
setup() { netns_setup "$@"; }

netns_switch "$switch_ns"
for h in "${hosts[@]}"; do netns_host "$prefix$h" "$switch_ns" "$h" "${addr[$h]}/24"; done

# Keys made for this test; an sshd per host on port 2222 of its address.
setup ssh-keygen -q -t ed25519 -N '' -f "$tmp/client_key"
setup ssh-keygen -q -t ed25519 -N '' -f "$tmp/host_key"
cp "$tmp/client_key.pub" "$tmp/authorized_keys"
mkdir -p /run/sshd  # sshd's privilege separation directory
for h in "${hosts[@]}"; do
  cat >"$tmp/sshd_$h.conf" <<CONF
Port 2222
ListenAddress ${addr[$h]}
HostKey $tmp/host_key
PidFile $tmp/sshd_$h.pid
AuthorizedKeysFile $tmp/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
CONF
  # In a subshell, so its end at clean-up is no job-control news.
  (ip netns exec "$prefix$h" /usr/sbin/sshd -D -f "$tmp/sshd_$h.conf" -E "$tmp/sshd_$h.log" &)
done
ssh_cmd="ssh -p 2222 -i $tmp/client_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
# Each sshd answers a command from the first host before the jobs start.
for h in "${hosts[@]}"; do
  ok=0
  for _ in $(seq 1 100); do
    if ip netns exec "${prefix}h1" $ssh_cmd -o BatchMode=yes -o ConnectTimeout=2 "${addr[$h]}" true \
       2>/dev/null; then ok=1; break; fi
    # sshd is starting: its listening socket appears within moments.
    ip netns exec "$prefix$h" ss -ltn 2>/dev/null | grep -q ":2222 " || sleep 0.1
  done
  [ $ok -eq 1 ] || skip "sshd on $h (${addr[$h]}) did not answer: $(tail -n 3 "$tmp/sshd_$h.log" 2>/dev/null)"
done

cat >"$tmp/hosts" <<HOSTS
# host        workers  servers
${addr[h1]}   slots=1  servers=1
${addr[h2]}   slots=1  servers=1
${addr[h3]}   slots=1
HOSTS
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
on_h1() { ip netns exec "${prefix}h1" env CARAVAN_JOB_TOKEN="$token" PS_VERBOSE=1 \
            CARAVAN_CONNECT_TIMEOUT=20 CARAVAN_OP_TIMEOUT=30 "$@"; }

# 1. A whole job.
on_h1 timeout -k 5 90 "$launch" --hostfile "$tmp/hosts" --ssh "$ssh_cmd" -- "$worker" 3 100000 \
  >"$tmp/job.log" 2>&1 || fail "the job over ssh failed"
[ "$(grep -c "all sums exact" "$tmp/job.log")" -eq 3 ] || fail "not all 3 workers' sums were exact"
for w in 0 1 2; do
  h=h$((w + 1))
  grep -q "^\[worker $w on ${addr[$h]}\] .*joined the job as worker $w (pid [0-9]* at ${addr[$h]}," "$tmp/job.log" ||
    fail "worker $w did not join from ${addr[$h]} with its lines prefixed"
done
grep -q "^\[scheduler on ${addr[h1]}\]" "$tmp/job.log" || fail "no scheduler lines from ${addr[h1]}"
# The token reached every remote process (through ssh's stdin).
[ "$(grep -c "proved to each other that they have CARAVAN_JOB_TOKEN" "$tmp/job.log")" -eq 5 ] ||
  fail "not every server and worker proved the job token to the scheduler"
grep -q "job finished: 3 workers, 2 servers on 3 hosts, all exited 0" "$tmp/job.log" ||
  fail "the launcher did not report the job finished"
echo "ssh_hostfile: a job of 3 workers and 2 servers on 3 hosts over ssh: all sums exact"

# 2. A long job; h3's worker is killed once it runs.
on_h1 timeout -k 5 90 "$launch" --hostfile "$tmp/hosts" --ssh "$ssh_cmd" -- "$worker" 100000 4096 \
  >"$tmp/killed.log" 2>&1 &
launcher=$!
victim=""
for _ in $(seq 1 300); do
  for p in $(ip netns pids "${prefix}h3"); do
    [ "$(cat /proc/$p/comm 2>/dev/null)" = sum_check_worke ] && victim=$p
  done
  [ -n "$victim" ] && grep -q "joined the job as worker 2" "$tmp/killed.log" && break
  victim=""
  kill -0 $launcher 2>/dev/null || break
  sleep 0.1  # polling for the worker to start and join, each look bounded
done
[ -n "$victim" ] || fail "worker 2 never ran on h3"
for c in /proc/[0-9]*/cmdline; do
  { tr '\0' ' ' <"$c" | grep -q "$token"; } 2>/dev/null && fail "the job token is on a command line: $c"
done
start=$(date +%s.%N)
kill -KILL "$victim"
wait $launcher
rc=$?
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "the launcher exited $rc after the kill"
# Its peers end at once too (the engine ends the job), but the launcher
# names the one that was killed: worker 2's ssh, with a SIGKILLed status.
grep -q "caravan-launch: job failed: worker 2 on ${addr[h3]} (pid [0-9]*) exited with status 137" "$tmp/killed.log" ||
  fail "the launcher did not name worker 2 on ${addr[h3]}"
# Every remote process is stopped: the watchdog sees ssh's end of its stdin close.
left=""
for _ in $(seq 1 150); do
  left=""
  for h in "${hosts[@]}"; do
    for p in $(ip netns pids "$prefix$h"); do
      case $(cat /proc/$p/comm 2>/dev/null) in sum_check_worke|caravan-server) left="$left $h:$p" ;; esac
    done
  done
  [ -z "$left" ] && break
  sleep 0.1  # the watchdogs' TERM, then KILL after 5 s
done
[ -z "$left" ] || fail "processes of the job still run after the launcher stopped:$left"
echo "ssh_hostfile: worker 2 on ${addr[h3]} killed: the launcher exited $rc after $elapsed s naming it," \
  "and no process of the job is left on any host; the job token was on no command line"
grep "job failed" "$tmp/killed.log"
[ -n "$regroup" ] || { echo "ssh_hostfile: OK"; exit 0; }

# 3. --elastic: a worker killed is started again; a host added joins.
cat >"$tmp/elastic_hosts" <<HOSTS
${addr[h1]}   slots=1  servers=1
${addr[h2]}   slots=1
HOSTS
# The workers go on until the job has 3 (REGROUP_UNTIL_SIZE) and 100 steps.
on_h1 timeout -k 5 90 "$launch" --elastic --hostfile "$tmp/elastic_hosts" --ssh "$ssh_cmd" -- \
  env REGROUP_UNTIL_SIZE=3 BYTEPS_PARTITION_BYTES=4096 "$regroup" 100 >"$tmp/elastic.log" 2>&1 &
launcher=$!
# seen PATTERN [COUNT]: the launcher's output has COUNT (default 1) lines
# matching PATTERN within 60 s; polled, each look bounded.
seen() {
  for _ in $(seq 1 600); do
    [ "$(grep -c -- "$1" "$tmp/elastic.log")" -ge "${2:-1}" ] && return 0
    kill -0 $launcher 2>/dev/null || break
    sleep 0.1
  done
  fail "elastic: no ${2:-1} line(s) matching '$1' in the launcher's output"
}
seen "^\[worker 1 on ${addr[h2]}\] step 20 done"
victim=""
for p in $(ip netns pids "${prefix}h2"); do
  [ "$(cat /proc/$p/comm 2>/dev/null)" = regroup_worker ] && victim=$p
done
[ -n "$victim" ] || fail "elastic: worker 1 does not run on h2"
kill -KILL "$victim"
seen "worker 1 on ${addr[h2]} (pid [0-9]*) exited with status 137; starting it again"
seen "^\[worker 1 on ${addr[h2]}\] at step" 2  # the new one joined
echo "${addr[h3]}   slots=1" >>"$tmp/elastic_hosts"
wait $launcher
rc=$?
[ $rc -eq 0 ] || fail "elastic: the launcher exited $rc"
grep -q "the host file adds 1 worker(s) and 0 server(s) on ${addr[h3]} (line 3)" "$tmp/elastic.log" ||
  fail "elastic: the launcher did not say it added ${addr[h3]}"
for w in "0 on ${addr[h1]}" "1 on ${addr[h2]}" "2 on ${addr[h3]}"; do
  grep -q "^\[worker $w\] regroup_worker: [0-9]* steps checked as rank [0-2] of 3" "$tmp/elastic.log" ||
    fail "elastic: worker $w did not finish in the job of 3"
done
grep -q "job finished: 2 workers, 1 servers on 2 hosts, 1 process(es) started again, 1 added from the host file (--elastic), and all exited 0" \
  "$tmp/elastic.log" || fail "elastic: the launcher did not report the job finished"
echo "ssh_hostfile: --elastic: worker 1 on ${addr[h2]} killed and started again there, ${addr[h3]}" \
  "added to the host file: the three finished together, every sum exact"

# 4. --elastic --host-discovery-script: the hosts are what a command prints
# (the second line in Horovod's HOST:SLOTS form); the third host, once the
# command prints it, joins.
cat >"$tmp/discovered" <<HOSTS
${addr[h1]}   slots=1  servers=1
${addr[h2]}:1
HOSTS
on_h1 timeout -k 5 90 "$launch" --elastic --host-discovery-script "cat $tmp/discovered" \
  --ssh "$ssh_cmd" -- env REGROUP_UNTIL_SIZE=3 BYTEPS_PARTITION_BYTES=4096 "$regroup" 100 \
  >"$tmp/discovery.log" 2>&1 &
launcher=$!
for _ in $(seq 1 600); do
  grep -q "^\[worker 1 on ${addr[h2]}\] step 5 done" "$tmp/discovery.log" && break
  kill -0 $launcher 2>/dev/null || break
  sleep 0.1  # polling for the two workers to train, each look bounded
done
grep -q "^\[worker 1 on ${addr[h2]}\] step 5 done" "$tmp/discovery.log" ||
  fail "discovery: the job of the two hosts the script printed did not train"
echo "${addr[h3]}:1" >>"$tmp/discovered"
wait $launcher
rc=$?
[ $rc -eq 0 ] || fail "discovery: the launcher exited $rc"
grep -q "the host discovery script adds 1 worker(s) and 0 server(s) on ${addr[h3]} (line 3)" \
  "$tmp/discovery.log" || fail "discovery: the launcher did not say it added ${addr[h3]}"
for w in "0 on ${addr[h1]}" "1 on ${addr[h2]}" "2 on ${addr[h3]}"; do
  grep -q "^\[worker $w\] regroup_worker: [0-9]* steps checked as rank [0-2] of 3" \
    "$tmp/discovery.log" || fail "discovery: worker $w did not finish in the job of 3"
done
grep -q "job finished: 2 workers, 1 servers on 2 hosts, 1 added by the host discovery script (--elastic), and all exited 0" \
  "$tmp/discovery.log" || fail "discovery: the launcher did not report the job finished"
echo "ssh_hostfile: --host-discovery-script: the two hosts it printed trained, and ${addr[h3]}," \
  "printed later, joined: the three finished together, every sum exact"
echo "ssh_hostfile: OK"
