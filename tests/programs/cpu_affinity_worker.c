/* A worker that joins the job and then prints, for every thread of its
 * process (the engine's own included), the CPUs the kernel lets it run on:
 * one line "cpus_allowed <list>" per thread, as /proc shows them.
 * Exit 0 after a clean shutdown; 1 with caravan's message otherwise. */
#include <caravan/caravan.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

static const char kField[] = "Cpus_allowed_list:";

static void print_thread(const char* tid) {
  char path[300];
  snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
  FILE* f = fopen(path, "r");
  if (!f) return; /* the thread ended meanwhile */
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, kField, sizeof kField - 1) != 0) continue;
    const char* list = line + sizeof kField - 1;
    while (*list == ' ' || *list == '\t') ++list;
    printf("cpus_allowed %s", list);
  }
  fclose(f);
}

int main(void) {
  int rc = caravan_init();
  if (rc != 0) {
    fprintf(stderr, "caravan_init failed: %s\n", caravan_strerror(rc));
    return 1;
  }
  DIR* dir = opendir("/proc/self/task");
  if (!dir) {
    perror("/proc/self/task");
    return 1;
  }
  int threads = 0;
  for (struct dirent* e = readdir(dir); e; e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    print_thread(e->d_name);
    ++threads;
  }
  closedir(dir);
  printf("%d threads\n", threads);
  fflush(stdout);
  rc = caravan_shutdown();
  if (rc != 0) {
    fprintf(stderr, "caravan_shutdown failed: %s\n", caravan_strerror(rc));
    return 1;
  }
  return 0;
}
