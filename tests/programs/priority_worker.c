/* Shows the priority-with-credit order on a real job (run with
 * BYTEPS_SCHEDULING_CREDIT=1, BYTEPS_PARTITION_BYTES=67108864, one worker,
 * one server, PS_VERBOSE=2). Usage: priority_worker FIFO
 *
 * After a warm-up it prints "warm" and waits (at most 60 s) for a line on
 * the FIFO: the test stops the server meanwhile, so the first 64 MiB
 * partition of "low" cannot leave and holds the only credit. It then
 * submits "low" (3 partitions, priority 0) and "high" (1 partition,
 * priority 10), prints "submitted" (the test resumes the server) and checks
 * both sums. The send order is in the PS_VERBOSE=2 log. */
#include <caravan/caravan.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check_rc.h"

/* fd is the FIFO, opened before "warm" is printed so the test's writer
 * always finds a reader. */
static int wait_for_line(int fd, const char* path) {
  struct pollfd p = {fd, POLLIN, 0};
  int n = poll(&p, 1, 60000);
  char c;
  if (n != 1 || read(fd, &c, 1) != 1) {
    fprintf(stderr, "no line on %s within 60 s\n", path);
    close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

static int check(const float* v, size_t n, float want, const char* name) {
  for (size_t i = 0; i < n; ++i)
    if (v[i] != want) {
      fprintf(stderr, "%s[%zu] is %g, expected %g\n", name, i, v[i], want);
      return 1;
    }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: priority_worker FIFO\n");
    return 2;
  }
  CHECK_RC(caravan_init());
  float warm = 1;
  CHECK_RC(caravan_push_pull("warm", &warm, 1, CARAVAN_FLOAT32, 0));
  int fd = open(argv[1], O_RDONLY | O_NONBLOCK);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  printf("warm\n");
  fflush(stdout);
  if (wait_for_line(fd, argv[1]) != 0) return 1;
  size_t low_n = 3 * (64u << 20) / sizeof(float), high_n = (1u << 20) / sizeof(float);
  float* low = malloc(low_n * sizeof(float));
  float* high = malloc(high_n * sizeof(float));
  for (size_t i = 0; i < low_n; ++i) low[i] = 2;
  for (size_t i = 0; i < high_n; ++i) high[i] = 3;
  caravan_handle hl, hh;
  CHECK_RC(caravan_push_pull_async("low", low, low_n, CARAVAN_FLOAT32, 0, &hl));
  CHECK_RC(caravan_push_pull_async("high", high, high_n, CARAVAN_FLOAT32, 10, &hh));
  printf("submitted\n");
  fflush(stdout);
  CHECK_RC(caravan_wait(hl));
  CHECK_RC(caravan_wait(hh));
  int n = caravan_size();
  if (check(low, low_n, 2.0f * n, "low") || check(high, high_n, 3.0f * n, "high")) return 1;
  free(low);
  free(high);
  CHECK_RC(caravan_shutdown());
  printf("priority worker done\n");
  return 0;
}
