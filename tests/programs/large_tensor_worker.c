/* push_pulls one uint8 tensor of 4 GiB + 1 elements (argv[1] overrides the
 * count) and checks every element: 64-bit lengths end to end. */
#include <caravan/caravan.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : (((size_t)4 << 30) + 1);
  int rc = caravan_init();
  if (rc) {
    fprintf(stderr, "init: %s\n", caravan_strerror(rc));
    return 1;
  }
  int rank = caravan_rank(), size = caravan_size();
  uint8_t* buf = malloc(n);
  if (!buf) {
    fprintf(stderr, "cannot allocate %zu bytes\n", n);
    return 1;
  }
  for (size_t i = 0; i < n; ++i) buf[i] = (uint8_t)((i * 7 + (size_t)rank) % 5);
  rc = caravan_push_pull("large", buf, n, CARAVAN_UINT8, 0);
  if (rc) {
    fprintf(stderr, "push_pull: %s\n", caravan_strerror(rc));
    return 1;
  }
  for (size_t i = 0; i < n; ++i) {
    unsigned want = 0;
    for (int r = 0; r < size; ++r) want += (unsigned)((i * 7 + (size_t)r) % 5);
    if (buf[i] != (uint8_t)want) {
      fprintf(stderr, "element %zu is %u, expected %u\n", i, buf[i], (uint8_t)want);
      return 1;
    }
  }
  free(buf);
  rc = caravan_shutdown();
  if (rc) {
    fprintf(stderr, "shutdown: %s\n", caravan_strerror(rc));
    return 1;
  }
  printf("worker %d: %zu-element uint8 tensor summed exactly\n", rank, n);
  return 0;
}
