/* Asynchronous training (BYTEPS_ENABLE_ASYNC=1 on every node) with known
 * deltas, written against caravan.h alone, in C.
 * Usage: async_delta_worker [rounds] [elements]
 *
 * Worker r pushes r + 1 into every element of one tensor, `rounds` times.
 * Each answer is the servers' store as it is then, so every element must
 * hold at least this worker's own pushes so far, at most all pushes of all
 * workers, and never less than in the previous answer. After its last push
 * a worker pushes zeros (which add nothing) until the store holds exactly
 * the sum of every push, giving up after 60 s with what it saw.
 * Exit 0 when all of that held; 1 with a message naming the element. */
#include <caravan/caravan.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check_rc.h"

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 10;
  size_t n = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 300000;
  CHECK_RC(caravan_init());
  int rank = caravan_rank(), size = caravan_size();
  float total = 0;
  for (int r = 0; r < size; ++r) total += (float)(rounds * (r + 1));
  float* buf = malloc(n * sizeof *buf);
  float* seen = calloc(n, sizeof *seen);
  if (!buf || !seen) return 1;
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < n; ++i) buf[i] = (float)(rank + 1);
    CHECK_RC(caravan_push_pull("delta", buf, n, CARAVAN_FLOAT32, 0));
    float own = (float)((round + 1) * (rank + 1));
    for (size_t i = 0; i < n; ++i) {
      if (buf[i] < own || buf[i] > total || buf[i] < seen[i]) {
        fprintf(stderr,
                "worker %d push %d: element %zu is %g; own pushes %g, all pushes %g, "
                "previous answer %g\n",
                rank, round, i, buf[i], own, total, seen[i]);
        return 1;
      }
      seen[i] = buf[i];
    }
  }
  time_t deadline = time(NULL) + 60;
  size_t short_at;
  for (;;) {
    for (size_t i = 0; i < n; ++i) buf[i] = 0;
    CHECK_RC(caravan_push_pull("delta", buf, n, CARAVAN_FLOAT32, 0));
    for (short_at = 0; short_at < n && buf[short_at] == total; ++short_at) {
    }
    if (short_at == n) break;
    if (buf[short_at] > total || time(NULL) > deadline) {
      fprintf(stderr, "worker %d: the store holds %g at element %zu, expected %g\n", rank,
              buf[short_at], short_at, total);
      return 1;
    }
  }
  free(buf);
  free(seen);
  CHECK_RC(caravan_shutdown());
  printf("worker %d of %d: %d pushes, async store exact (%g)\n", rank, size, rounds, total);
  return 0;
}
