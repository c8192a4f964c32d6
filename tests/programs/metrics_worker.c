/* The Prometheus endpoint (CARAVAN_METRICS_PORT), read with curl: every
 * worker push_pulls ROUNDS times, then fetches its own /metrics, every
 * server's and the scheduler's, and checks the counters against what it
 * did (the servers': against what all workers did, which every sum coming
 * back proves they received), a histogram whose +Inf bucket holds every
 * push_pull, and a 404 for another path. The servers and the scheduler stay
 * up until every worker has left. Run by caravan-launch with
 * CARAVAN_METRICS_PORT set. Each round also push_pulls a 1 MiB tensor, whose
 * sums land in place (caravan_pushpull_in_place_bytes_total) exactly when
 * EXPECT_IN_PLACE=1 says the van lends (van ABI 2.1), and never otherwise. */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <caravan/caravan.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 5
#define COUNT 1000
#define BIG (1 << 18) /* floats: 1 MiB, two partitions of 512 KiB on two servers */

static int rank_;

static void die(const char* what) {
  fprintf(stderr, "metrics_worker %d: %s\n", rank_, what);
  exit(1);
}

/* The body of http://127.0.0.1:port/path into buf; returns the HTTP status. */
static int fetch(int port, const char* path, char* buf, size_t size) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "curl -s --max-time 10 -w '\\n%%{http_code}' http://127.0.0.1:%d%s",
           port, path);
  FILE* p = popen(cmd, "r");
  if (!p) die("cannot run curl");
  size_t n = fread(buf, 1, size - 1, p);
  buf[n] = 0;
  int rc = pclose(p);
  if (rc != 0) {
    fprintf(stderr, "metrics_worker %d: curl of port %d%s failed (status %d): %s\n", rank_, port,
            path, rc, buf);
    exit(1);
  }
  char* last = strrchr(buf, '\n');
  if (!last) die("curl printed no status");
  *last = 0;
  return atoi(last + 1);
}

/* The value of the series whose line starts with `series` ("name{...}"). */
static double value(const char* body, const char* series, int port) {
  const char* line = body;
  while (line && *line) {
    if (strncmp(line, series, strlen(series)) == 0) {
      const char* v = strstr(line, "} ");
      if (v) return atof(v + 2);
    }
    line = strchr(line, '\n');
    if (line) ++line;
  }
  fprintf(stderr, "metrics_worker %d: port %d has no series %s in:\n%s\n", rank_, port, series,
          body);
  exit(1);
}

static void expect(double got, double want, const char* what, int port) {
  if (got != want) {
    fprintf(stderr, "metrics_worker %d: port %d: %s is %g, expected %g\n", rank_, port, what, got,
            want);
    exit(1);
  }
}

int main(void) {
  static char body[1 << 16];
  if (caravan_init() != 0) die("caravan_init failed");
  rank_ = caravan_rank();
  int workers = caravan_size();
  const char* base_s = getenv("CARAVAN_METRICS_PORT");
  const char* servers_s = getenv("DMLC_NUM_SERVER");
  if (!base_s || !servers_s) die("CARAVAN_METRICS_PORT and DMLC_NUM_SERVER must be set");
  int base = atoi(base_s), servers = atoi(servers_s);
  if (servers != 2) die("the expected counts assume 2 servers");
  const char* in_place_s = getenv("EXPECT_IN_PLACE");
  int in_place = in_place_s && strcmp(in_place_s, "1") == 0;
  float v[COUNT];
  static float big[BIG];
  for (int r = 0; r < ROUNDS; ++r) {
    for (int i = 0; i < COUNT; ++i) v[i] = 1.0f;
    if (caravan_push_pull("metrics.t", v, COUNT, CARAVAN_FLOAT32, 0) != 0) die("push_pull failed");
    if (v[0] != (float)workers) die("wrong sum");
    for (int i = 0; i < BIG; ++i) big[i] = (float)(i % 7);
    if (caravan_push_pull("metrics.big", big, BIG, CARAVAN_FLOAT32, 0) != 0)
      die("push_pull failed");
    for (int i = 0; i < BIG; ++i)
      if (big[i] != (float)(workers * (i % 7))) die("wrong sum of the 1 MiB tensor");
  }

  char label[64];
  int me = base + 1 + servers + rank_;
  if (fetch(me, "/metrics", body, sizeof body) != 200) die("its own /metrics did not answer 200");
  snprintf(label, sizeof label, "{node=\"worker %d", rank_);
  char series[160];
  snprintf(series, sizeof series, "caravan_pushpull_operations_total%s", label);
  expect(value(body, series, me), 2 * ROUNDS, "caravan_pushpull_operations_total", me);
  snprintf(series, sizeof series, "caravan_pushpull_bytes_total%s", label);
  expect(value(body, series, me), ROUNDS * (COUNT + BIG) * 4.0, "caravan_pushpull_bytes_total", me);
  snprintf(series, sizeof series, "caravan_pushpull_in_place_bytes_total%s", label);
  expect(value(body, series, me), in_place ? ROUNDS * BIG * 4.0 : 0,
         "caravan_pushpull_in_place_bytes_total", me);
  const char* inf = strstr(body, "le=\"+Inf\"} ");
  if (!inf) die("no +Inf bucket");
  expect(atof(inf + strlen("le=\"+Inf\"} ")), 2 * ROUNDS, "the +Inf bucket", me);
  snprintf(series, sizeof series, "caravan_pushpull_duration_seconds_count%s", label);
  expect(value(body, series, me), 2 * ROUNDS, "the histogram's count", me);
  snprintf(series, sizeof series, "caravan_messages_sent_total%s", label);
  if (value(body, series, me) < ROUNDS) die("fewer messages sent than push_pulls");

  double pushes = 0, rounds = 0;
  for (int s = 0; s < servers; ++s) {
    int port = base + 1 + s;
    if (fetch(port, "/metrics", body, sizeof body) != 200)
      die("a server's /metrics did not answer 200");
    snprintf(series, sizeof series, "caravan_server_pushes_total{node=\"server %d", s);
    pushes += value(body, series, port);
    snprintf(series, sizeof series, "caravan_server_rounds_total{node=\"server %d", s);
    rounds += value(body, series, port);
  }
  /* Every worker's pushes were received (each sum came back): per round one
   * partition of the small tensor and two of the big one, and none can push
   * a round more before this one has. */
  expect(pushes, (double)workers * ROUNDS * 3, "the servers' pushes", base + 1);
  expect(rounds, ROUNDS * 3, "the servers' rounds", base + 1);

  if (fetch(base, "/metrics", body, sizeof body) != 200)
    die("the scheduler's /metrics did not answer 200");
  value(body, "caravan_peers_lost_total{node=\"scheduler", base);
  if (fetch(me, "/other", body, sizeof body) != 404) die("another path did not answer 404");

  if (caravan_shutdown() != 0) die("caravan_shutdown failed");
  printf("metrics_worker %d: own, %d servers' and the scheduler's /metrics right\n", rank_,
         servers);
  return 0;
}
