// caravan-launch --elastic --host-discovery-script CMD (Horovod's option):
// the job's hosts as a command prints them, asked again every second.
#pragma once

#include <string>

namespace caravan::launch {

// What `command` (run by /bin/sh -c) prints on its standard output, once
// it exited 0 within `timeout_s` (its standard error passes through).
// Throws std::runtime_error naming the command and what went wrong: it
// could not start, exited non-zero or by a signal, or outran the deadline
// (its process group is then killed).
std::string run_discovery(const std::string& command, int timeout_s);

}  // namespace caravan::launch
