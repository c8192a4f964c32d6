/* Joins the job, announces it, stays idle for argv[1] seconds (the window
 * bench/idle_cpu.sh measures the scheduler and servers over), then leaves. */
#include <caravan/caravan.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 12;
  int rc = caravan_init();
  if (rc) {
    fprintf(stderr, "init: %s\n", caravan_strerror(rc));
    return 1;
  }
  printf("idle-worker: joined, idle for %d s\n", seconds);
  fflush(stdout);
  struct timespec ts = {seconds, 0};
  nanosleep(&ts, NULL);
  rc = caravan_shutdown();
  if (rc) {
    fprintf(stderr, "shutdown: %s\n", caravan_strerror(rc));
    return 1;
  }
  return 0;
}
