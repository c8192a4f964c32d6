#include "engine/base/thread_name.h"

#include <pthread.h>

#include <cstring>
#include <string>

namespace caravan {

void name_this_thread(const char* name) {
  // pthread_setname_np refuses (ERANGE) a name over 15 characters rather than cutting it.
  std::string cut(name, strnlen(name, 15));
  pthread_setname_np(pthread_self(), cut.c_str());  // a name is a help, never a need
}

}  // namespace caravan
