#!/usr/bin/env bash
# usage: verbs_job.sh CARAVAN_LAUNCH SUM_CHECK_WORKER
# A job over DMLC_ENABLE_RDMA=1: passes where an RDMA device exists; where
# none does, fails within seconds with "no RDMA device found", not by a
# signal and not by a timeout.
set -u
launch=$1 worker=$2
start=$(date +%s)
out=$(DMLC_ENABLE_RDMA=1 timeout 60 "$launch" --workers 1 --servers 1 -- "$worker" 1 1000 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
printf '%s\n' "$out" | tail -n 30
echo "verbs_job: exit status $rc after ${took}s"
if compgen -G '/sys/class/infiniband/*' >/dev/null; then
  exit $rc
fi
if [ "$rc" -eq 0 ]; then echo "verbs_job: FAIL: the job passed without an RDMA device"; exit 1; fi
if [ "$rc" -eq 124 ]; then echo "verbs_job: FAIL: the job hung"; exit 1; fi
if [ "$rc" -gt 128 ]; then echo "verbs_job: FAIL: killed by signal $((rc - 128))"; exit 1; fi
if [ "$took" -gt 20 ]; then echo "verbs_job: FAIL: took ${took}s to fail"; exit 1; fi
if ! printf '%s\n' "$out" | grep -q "no RDMA device found"; then
  echo "verbs_job: FAIL: the output does not say 'no RDMA device found'"; exit 1
fi
echo "verbs_job: OK: refused without an RDMA device"
