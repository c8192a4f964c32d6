// Names the calling thread as top, ps and perf show it (/proc/<pid>/task/<tid>/comm),
// so that CPU can be told apart per thread: bench/cluster/run.sh --cpu sums it by
// these names, and a user reading `top -H` on a busy worker sees which part is busy.
#pragma once

namespace caravan {

// At most 15 characters are kept (the kernel's limit); a longer name is cut.
void name_this_thread(const char* name);

}  // namespace caravan
