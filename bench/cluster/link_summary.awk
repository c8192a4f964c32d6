# Reads a link trace of bench/cluster/run.sh (time_s,host,sent_bytes,
# received_bytes, cumulative counters sampled every 0.1 s) and prints, per
# host: bytes sent and received over the run, and the share of the run's
# samples in which each direction ran at 90% of the link rate or more
# (rate: -v rate_bytes=...), at half of it or less.
# usage: awk -F, -v rate_bytes=125000000 -f link_summary.awk TRACE.csv
NR == 1 { next }
{
  t = $1; h = $2
  if (!(h in t0)) { t0[h] = t; s0[h] = $3; r0[h] = $4; hosts[++n] = h }
  else {
    dt = t - pt[h]
    if (dt > 0) {
      so = ($3 - ps[h]) / dt; ro = ($4 - pr[h]) / dt
      samples[h]++
      if (so >= 0.9 * rate_bytes) s_full[h]++
      if (so <= 0.5 * rate_bytes) s_low[h]++
      if (ro >= 0.9 * rate_bytes) r_full[h]++
      if (ro <= 0.5 * rate_bytes) r_low[h]++
    }
  }
  pt[h] = t; ps[h] = $3; pr[h] = $4; last_s[h] = $3; last_r[h] = $4
}
END {
  printf "%-5s %12s %12s %10s %10s %10s %10s\n", "host", "sent MB", "received MB", "sent>=90%", "sent<=50%", "recv>=90%", "recv<=50%"
  for (i = 1; i <= n; i++) {
    h = hosts[i]; k = samples[h] ? samples[h] : 1
    if (last_s[h] - s0[h] + last_r[h] - r0[h] < 1e6) continue  # idle (the scheduler, unused hosts)
    printf "%-5s %12.1f %12.1f %9.0f%% %9.0f%% %9.0f%% %9.0f%%\n", h, (last_s[h] - s0[h]) / 1e6,
      (last_r[h] - r0[h]) / 1e6, 100 * s_full[h] / k, 100 * s_low[h] / k, 100 * r_full[h] / k, 100 * r_low[h] / k
  }
}
