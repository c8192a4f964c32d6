/* push_pull telemetry through the C API, in C: after N push_pulls of known
 * sizes, caravan_get_pushpull_stats() counts exactly those operations and
 * bytes (per tensor and in all), with latencies in order and a throughput;
 * a tensor never used has none; a short struct is refused. Sleeps past the
 * window first when asked (argument "log"), so that BYTEPS_TELEMETRY_ON=1
 * logs its line. With "off" (run with BYTEPS_TELEMETRY_ON=0) the figures
 * are refused with CARAVAN_ERR_STATE, and push_pull works as ever.
 * Usage: telemetry_worker [log|off]
 * Exit 0 when every figure (or refusal) was right; 1 naming the first wrong one. */
#define _POSIX_C_SOURCE 199309L /* nanosleep */
#include <caravan/caravan.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int failures = 0;

static void expect(int ok, const char* what) {
  if (!ok) {
    printf("FAIL %s\n", what);
    ++failures;
  }
}

int main(int argc, char** argv) {
  float a[1000], b[250000];
  caravan_pushpull_stats s;
  int i, rc, log_line = argc > 1 && strcmp(argv[1], "log") == 0;
  int off = argc > 1 && strcmp(argv[1], "off") == 0;
  if (caravan_init() != 0) {
    printf("FAIL caravan_init: %s\n", caravan_strerror(-1));
    return 1;
  }
  for (i = 0; i < 5; ++i) {
    memset(a, 0, sizeof a);
    rc = caravan_push_pull("telemetry.a", a, 1000, CARAVAN_FLOAT32, 0);
    expect(rc == 0, "push_pull of telemetry.a");
  }
  if (log_line) {
    /* Past the window (CARAVAN_TELEMETRY_WINDOW_S=1): the next push_pull logs. */
    struct timespec pause = {1, 200000000};
    nanosleep(&pause, NULL);
  }
  for (i = 0; i < 2; ++i) {
    rc = caravan_push_pull("telemetry.b", b, 250000, CARAVAN_FLOAT32, 0);
    expect(rc == 0, "push_pull of telemetry.b");
  }
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  rc = caravan_get_pushpull_stats("telemetry.b", &s);
  if (rc != 0) printf("stats of telemetry.b: rc %d: %s\n", rc, caravan_strerror(rc));
  if (off) {
    expect(rc == CARAVAN_ERR_STATE, "stats refused while telemetry is off");
    expect(caravan_shutdown() == 0, "shutdown");
    printf("%s\n", failures ? "telemetry_worker: FAILED" : "telemetry_worker: refused while off");
    return failures ? 1 : 0;
  }
  expect(rc == 0, "stats of telemetry.b");
  expect(s.operations == 2 && s.bytes == 2000000ull, "telemetry.b: 2 operations, 2000000 bytes");
  expect(s.p50_us > 0 && s.p50_us <= s.p90_us && s.p90_us <= s.p99_us,
         "latency percentiles in order");
  expect(s.mbytes_per_s > 0 && s.window_s > 0, "a throughput over a window");
  printf("telemetry.b: %llu operations, %llu bytes, %.1f MB/s over %.2f s, p50 %.0f us\n",
         s.operations, s.bytes, s.mbytes_per_s, s.window_s, s.p50_us);
  if (!log_line) {
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    rc = caravan_get_pushpull_stats(NULL, &s);
    expect(rc == 0 && s.operations == 7 && s.bytes == 2020000ull, "every tensor: 7 operations");
  }
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  rc = caravan_get_pushpull_stats("never.used", &s);
  expect(rc == 0 && s.operations == 0 && s.p50_us == 0, "a tensor never used has no figures");
  s.struct_size = 8;
  expect(caravan_get_pushpull_stats(NULL, &s) == CARAVAN_ERR_INVALID_ARGUMENT, "a short struct");
  expect(caravan_get_pushpull_stats(NULL, NULL) == CARAVAN_ERR_INVALID_ARGUMENT, "NULL out");
  rc = caravan_shutdown();
  expect(rc == 0, "shutdown");
  printf("%s\n", failures ? "telemetry_worker: FAILED" : "telemetry_worker: every figure right");
  return failures ? 1 : 0;
}
