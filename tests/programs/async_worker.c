/* Asynchronous mode (BYTEPS_ENABLE_ASYNC=1) with known deltas: worker r
 * pushes (r + 1) into every element of "w", ROUNDS times. Each answer is
 * the servers' store at that moment (each partition its own key, so
 * partitions may differ): every element a whole number, never below this
 * worker's own pushes so far, never above all workers' pushes. Then every worker adds 1 to "done" and pulls it (pushes
 * 0) until all have finished, at most 60 s, and the final "w" must be
 * exactly ROUNDS * (1 + 2 + ... + N).
 * Usage: async_worker [rounds] */
#include <caravan/caravan.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK_RC(call) do { int rc_ = (call); if (rc_ != 0) { \
  fprintf(stderr, "%s failed: %d: %s\n", #call, rc_, caravan_strerror(rc_)); return 1; } } while (0)

enum { N = 300000 }; /* several partitions with BYTEPS_PARTITION_BYTES=262144 */

static int in_range(const double* v, double lo, double hi, const char* when, int rank) {
  for (size_t i = 0; i < N; ++i)
    if (v[i] < lo || v[i] > hi || v[i] != (double)(long long)v[i]) {
      fprintf(stderr, "worker %d %s: w[%zu] = %g, expected a whole number in [%g, %g]\n", rank,
              when, i, v[i], lo, hi);
      return 0;
    }
  return 1;
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20;
  CHECK_RC(caravan_init());
  int rank = caravan_rank(), size = caravan_size();
  double all = 0;
  for (int r = 0; r < size; ++r) all += r + 1;
  double* w = malloc(N * sizeof(double));
  for (int round = 1; round <= rounds; ++round) {
    for (size_t i = 0; i < N; ++i) w[i] = rank + 1;
    CHECK_RC(caravan_push_pull("w", w, N, CARAVAN_FLOAT64, 0));
    if (!in_range(w, (double)round * (rank + 1), (double)rounds * all, "during the rounds", rank))
      return 1;
  }
  double done = 1;
  CHECK_RC(caravan_push_pull("done", &done, 1, CARAVAN_FLOAT64, 0));
  time_t deadline = time(NULL) + 60;
  while (done < size) {
    if (time(NULL) > deadline) {
      fprintf(stderr, "worker %d: only %g of %d workers finished within 60 s\n", rank, done, size);
      return 1;
    }
    done = 0;
    CHECK_RC(caravan_push_pull("done", &done, 1, CARAVAN_FLOAT64, 0));
  }
  for (size_t i = 0; i < N; ++i) w[i] = 0;
  CHECK_RC(caravan_push_pull("w", w, N, CARAVAN_FLOAT64, 0));
  if (!in_range(w, rounds * all, rounds * all, "at the end", rank)) return 1;
  free(w);
  CHECK_RC(caravan_shutdown());
  printf("worker %d: async store exact: %g\n", rank, rounds * all);
  return 0;
}
