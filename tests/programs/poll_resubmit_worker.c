/* A training loop that polls: push_pull a tensor asynchronously, poll until
 * it is done, release the handle and push_pull the same tensor again at
 * once, for many rounds, checking every sum. Once caravan_poll() has said 1
 * the tensor must be free again: a push_pull refused as still in flight
 * (BUSY) fails the test, as it did before the engine freed the tensor ahead
 * of marking the operation done (round 1306 of 20000 in one run).
 * The poll loop spins for its first 200 us, within which a push_pull on an
 * idle machine ends, so it looks the moment poll says 1; then it backs off
 * to a short sleep between polls. A loop that only spins starves the
 * engine's own threads on a loaded machine: beside a busy loop per core,
 * two workers and their server took over 120 s (75 s yielding the CPU
 * between polls); now 12 s, and 6 s on an idle machine.
 * Usage: poll_resubmit_worker [rounds]   (default 20000)
 * Exit 0 when every round was accepted and summed right; 1 naming the first
 * that was not. */
#define _POSIX_C_SOURCE 200112L /* clock_gettime, nanosleep */
#include <caravan/caravan.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  long rounds = argc > 1 ? atol(argv[1]) : 20000;
  long i;
  int rc, size, rank;
  float x[4];
  if (caravan_init() != 0) {
    printf("FAIL caravan_init: %s\n", caravan_strerror(-1));
    return 1;
  }
  size = caravan_size();
  rank = caravan_rank();
  for (i = 0; i < rounds; ++i) {
    caravan_handle h;
    int k;
    for (k = 0; k < 4; ++k) x[k] = (float)(k + rank);
    rc = caravan_push_pull_async("poll_resubmit", x, 4, CARAVAN_FLOAT32, 0, &h);
    if (rc != 0) {
      printf("FAIL round %ld: push_pull refused: %s\n", i, caravan_strerror(rc));
      return 1;
    }
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while ((rc = caravan_poll(h)) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 200000L) {
        continue; /* spin */
      }
      struct timespec pause = {0, 20000};
      nanosleep(&pause, NULL);
    }
    if (rc < 0 || caravan_wait(h) != 0) {
      printf("FAIL round %ld: %s\n", i, caravan_strerror(rc));
      return 1;
    }
    for (k = 0; k < 4; ++k) {
      /* sum over ranks r of (k + r) */
      float want = (float)(size * k + size * (size - 1) / 2);
      if (x[k] != want) {
        printf("FAIL round %ld: element %d is %g, want %g\n", i, k, x[k], want);
        return 1;
      }
    }
  }
  printf("rank %d: %ld rounds polled and push_pulled again at once, every sum right\n", rank,
         rounds);
  caravan_shutdown();
  return 0;
}
