/* The device-memory calls of C API 1.2 given what they cannot carry, in C,
 * on any machine: host memory, which the device reducer (where it loads)
 * tells from device memory, and which without a GPU cannot be staged at
 * all. Either way the call fails at once with a code and a message naming
 * the tensor: INVALID_ARGUMENT where a device reducer runs, PLUGIN where none
 * does (no CUDA device, or a build without reducer-gpu), which the message
 * explains. Host calls keep working afterwards.
 * Exit 0 when every answer was right; 1 naming the first wrong one. */
#include <caravan/caravan.h>
#include <stdio.h>
#include <string.h>

static int expect_named(int rc, const char* tensor, const char* what) {
  const char* msg = caravan_strerror(rc);
  if ((rc != CARAVAN_ERR_INVALID_ARGUMENT && rc != CARAVAN_ERR_PLUGIN) || !strstr(msg, tensor)) {
    printf("FAIL %s: rc %d: %s\n", what, rc, msg);
    return 1;
  }
  printf("ok %s: rc %d: %s\n", what, rc, msg);
  return 0;
}

int main(void) {
  float v[16];
  caravan_handle h = NULL;
  int failures = 0, rc, i;
  for (i = 0; i < 16; ++i) v[i] = 1.0f;
  rc = caravan_push_pull_device("early", v, 16, CARAVAN_FLOAT32, 0, NULL);
  if (rc != CARAVAN_ERR_NOT_INITIALIZED) {
    printf("FAIL before init: rc %d\n", rc);
    ++failures;
  }
  rc = caravan_init();
  if (rc != 0) {
    printf("FAIL caravan_init: %s\n", caravan_strerror(rc));
    return 1;
  }
  failures += expect_named(caravan_push_pull_device("host.tensor", v, 16, CARAVAN_FLOAT32, 0, NULL),
                           "host.tensor", "push_pull_device of host memory");
  failures += expect_named(
      caravan_push_pull_device_async("host.async", v, 16, CARAVAN_FLOAT32, 0, NULL, &h),
      "host.async", "push_pull_device_async of host memory");
  if (h != NULL) {
    printf("FAIL a refused call left a handle\n");
    ++failures;
  }
  failures +=
      expect_named(caravan_broadcast_device("host.bcast", v, 16, CARAVAN_FLOAT32, 0, 0, NULL),
                   "host.bcast", "broadcast_device of host memory");
  rc = caravan_push_pull_device("null.data", NULL, 16, CARAVAN_FLOAT32, 0, NULL);
  if (rc != CARAVAN_ERR_INVALID_ARGUMENT || !strstr(caravan_strerror(rc), "null.data")) {
    printf("FAIL NULL data: rc %d: %s\n", rc, caravan_strerror(rc));
    ++failures;
  }
  /* The host path is untouched by the refusals. */
  rc = caravan_push_pull("host.works", v, 16, CARAVAN_FLOAT32, 0);
  if (rc != 0 || v[0] != (float)caravan_size()) {
    printf("FAIL host push_pull after the refusals: rc %d, v[0] = %g\n", rc, v[0]);
    ++failures;
  }
  rc = caravan_shutdown();
  if (rc != 0) {
    printf("FAIL shutdown: %s\n", caravan_strerror(rc));
    ++failures;
  }
  printf("%s\n", failures ? "device_api_worker: FAILED" : "device_api_worker: all answers right");
  return failures ? 1 : 0;
}
