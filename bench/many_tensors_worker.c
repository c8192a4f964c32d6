/* Soak for a van's memory: `rounds` rounds (default 10000) of push_pull on
 * `tensors` distinct tensors (default 50, sizes 1 KiB to 1 MiB), all of a
 * round in flight at once. Checks the first and last rounds' sums exactly;
 * the van's own log reports what it registered (BYTEPS_LOG_LEVEL=info). */
#include <caravan/caravan.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 10000;
  int tensors = argc > 2 ? atoi(argv[2]) : 50;
  int rc = caravan_init();
  if (rc) {
    fprintf(stderr, "init: %s\n", caravan_strerror(rc));
    return 1;
  }
  int size = caravan_size();
  float** bufs = calloc((size_t)tensors, sizeof *bufs);
  size_t* counts = calloc((size_t)tensors, sizeof *counts);
  caravan_handle* hs = calloc((size_t)tensors, sizeof *hs);
  char name[32];
  for (int t = 0; t < tensors; ++t) {
    counts[t] = (size_t)256 << (t % 11); /* 1 KiB .. 1 MiB of float32 */
    bufs[t] = malloc(counts[t] * sizeof(float));
  }
  for (int r = 0; r < rounds; ++r) {
    int check = r == 0 || r == rounds - 1;
    for (int t = 0; t < tensors; ++t) {
      if (check)
        for (size_t i = 0; i < counts[t]; ++i) bufs[t][i] = (float)(i % 7);
      snprintf(name, sizeof name, "t%d", t);
      rc = caravan_push_pull_async(name, bufs[t], counts[t], CARAVAN_FLOAT32, 0, &hs[t]);
      if (rc) {
        fprintf(stderr, "round %d: %s\n", r, caravan_strerror(rc));
        return 1;
      }
    }
    for (int t = 0; t < tensors; ++t) {
      rc = caravan_wait(hs[t]);
      if (rc) {
        fprintf(stderr, "round %d: %s\n", r, caravan_strerror(rc));
        return 1;
      }
    }
    for (int t = 0; check && t < tensors; ++t)
      for (size_t i = 0; i < counts[t]; ++i)
        if (bufs[t][i] != (float)(i % 7) * size) {
          fprintf(stderr, "round %d tensor %d element %zu: %g\n", r, t, i, bufs[t][i]);
          return 1;
        }
  }
  printf("many-tensors: %d rounds of %d tensors done, first and last rounds exact\n", rounds,
         tensors);
  for (int t = 0; t < tensors; ++t) free(bufs[t]);
  free(bufs);
  free(counts);
  free(hs);
  return caravan_shutdown() ? 1 : 0;
}
