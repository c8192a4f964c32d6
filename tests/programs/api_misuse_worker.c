/* Calls the C API wrongly on purpose and checks that each mistake returns
 * the documented negative code with a message, and that the process (and
 * the job) carries on. Exit 0 when every check held. */
#include <caravan/caravan.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(int got, int want, const char* what) {
  const char* msg = caravan_strerror(got);
  if (got != want || msg == NULL || msg[0] == '\0') {
    fprintf(stderr, "FAIL %s: got %d (%s), want %d\n", what, got, msg ? msg : "(null)", want);
    ++failures;
  } else {
    printf("ok %s: %s\n", what, msg);
  }
}

int main(void) {
  float buf[16] = {0};
  caravan_handle h = NULL;
  expect(caravan_push_pull("early", buf, 16, CARAVAN_FLOAT32, 0), CARAVAN_ERR_NOT_INITIALIZED,
         "push_pull before init");
  expect(caravan_rank(), CARAVAN_ERR_NOT_INITIALIZED, "rank before init");
  expect(caravan_shutdown(), CARAVAN_ERR_NOT_INITIALIZED, "shutdown before init");
  expect(caravan_init(), 0, "init");
  expect(caravan_init(), CARAVAN_ERR_STATE, "init twice");
  expect(caravan_push_pull(NULL, buf, 16, CARAVAN_FLOAT32, 0), CARAVAN_ERR_INVALID_ARGUMENT,
         "NULL name");
  expect(caravan_push_pull("x", NULL, 16, CARAVAN_FLOAT32, 0), CARAVAN_ERR_INVALID_ARGUMENT,
         "NULL data");
  expect(caravan_push_pull("x", buf, 0, CARAVAN_FLOAT32, 0), CARAVAN_ERR_INVALID_ARGUMENT,
         "zero count");
  expect(caravan_push_pull("x", buf, 16, (caravan_dtype)42, 0), CARAVAN_ERR_INVALID_ARGUMENT,
         "bad dtype");
  expect(caravan_push_pull_async("x", buf, 16, CARAVAN_FLOAT32, 0, NULL),
         CARAVAN_ERR_INVALID_ARGUMENT, "NULL out handle");
  expect(caravan_wait(NULL), CARAVAN_ERR_INVALID_ARGUMENT, "wait on NULL");
  expect(caravan_poll(NULL), CARAVAN_ERR_INVALID_ARGUMENT, "poll on NULL");

  /* A correct call, then the same name with another size and dtype. */
  for (int i = 0; i < 16; ++i) buf[i] = 1.0f;
  expect(caravan_push_pull("w", buf, 16, CARAVAN_FLOAT32, 0), 0, "push_pull");
  if (buf[0] != (float)caravan_size()) {
    fprintf(stderr, "FAIL sum: %g, want %d\n", buf[0], caravan_size());
    ++failures;
  }
  expect(caravan_push_pull("w", buf, 8, CARAVAN_FLOAT32, 0), CARAVAN_ERR_MISMATCH,
         "same name, other count");
  expect(caravan_push_pull("w", buf, 16, CARAVAN_INT32, 0), CARAVAN_ERR_MISMATCH,
         "same name, other dtype");

  /* The same tensor twice in flight. Rank 0 submits "b" twice before the
   * others can push it: they push "b" only after "sync", which rank 0
   * joins after its second attempt. */
  for (int i = 0; i < 16; ++i) buf[i] = 1.0f;
  float one = 1.0f;
  if (caravan_rank() == 0) {
    expect(caravan_push_pull_async("b", buf, 16, CARAVAN_FLOAT32, 0, &h), 0, "async");
    caravan_handle h2 = NULL;
    expect(caravan_push_pull_async("b", buf, 16, CARAVAN_FLOAT32, 0, &h2), CARAVAN_ERR_BUSY,
           "same tensor in flight twice");
    expect(caravan_push_pull("sync", &one, 1, CARAVAN_FLOAT32, 0), 0, "sync");
  } else {
    expect(caravan_push_pull("sync", &one, 1, CARAVAN_FLOAT32, 0), 0, "sync");
    expect(caravan_push_pull_async("b", buf, 16, CARAVAN_FLOAT32, 0, &h), 0, "async");
  }
  int polled;
  do {
    polled = caravan_poll(h);
  } while (polled == 0);
  expect(polled, 1, "poll until done");
  expect(caravan_wait(h), 0, "wait after poll");
  if (buf[15] != (float)caravan_size()) {
    fprintf(stderr, "FAIL async sum: %g\n", buf[15]);
    ++failures;
  }
  /* The same name with a different size on each worker: every worker gets
   * the error (none waits for a sum that cannot be right). */
  if (caravan_size() > 1) {
    float m[16] = {0};
    int rc = caravan_push_pull("mismatch", m, (size_t)(8 + caravan_rank()), CARAVAN_FLOAT32, 0);
    expect(rc, CARAVAN_ERR_MISMATCH, "sizes differ across workers");
    if (rc == CARAVAN_ERR_MISMATCH && !strstr(caravan_strerror(rc), "different sizes or dtypes")) {
      fprintf(stderr, "FAIL mismatch message: %s\n", caravan_strerror(rc));
      ++failures;
    }
  }
  expect(caravan_strerror(-9999)[0] != '\0' ? 0 : 1, 0, "strerror of unknown code");
  expect(caravan_shutdown(), 0, "shutdown");
  expect(caravan_size(), CARAVAN_ERR_NOT_INITIALIZED, "size after shutdown");
  printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
