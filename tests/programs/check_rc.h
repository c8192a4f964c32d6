/* CHECK_RC(call): in main() of a test program, a C API call that must
 * return 0; otherwise its words go to stderr and main returns 1. */
#ifndef CARAVAN_TESTS_CHECK_RC_H
#define CARAVAN_TESTS_CHECK_RC_H

#include <caravan/caravan.h>
#include <stdio.h>

#define CHECK_RC(call)                                                           \
  do {                                                                           \
    int rc_ = (call);                                                            \
    if (rc_ != 0) {                                                              \
      fprintf(stderr, "%s failed: %d: %s\n", #call, rc_, caravan_strerror(rc_)); \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

#endif
