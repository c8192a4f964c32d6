// What the in-tree vans tell ThreadSanitizer about hand-overs it cannot see
// (a library's own threads, the kernel behind a socket). CARAVAN_TSAN is
// defined only in a ThreadSanitizer build, by GCC's or Clang's own test.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define CARAVAN_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CARAVAN_TSAN 1
#endif
#endif

#ifdef CARAVAN_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#endif
