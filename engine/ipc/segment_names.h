// Names of the shared-memory segments of BYTEPS_ENABLE_IPC, in one place
// because workers make them and servers clean up after workers that died.
//
//   /caravan-ipc-<scheduler uri>-<port>-s<server node>-w<worker node>-p<pid>-<n>
//
// The scheduler's address makes them unique among the jobs of a host (its
// port is bound while the job lives), the node ids and pid among the
// processes of a job, and the server comes first so that a server can find
// every name meant for it. Depends on libc alone, because it is also the
// library caravan_segment_names, a stated interface for tools
// (engine/layers.txt): caravan-launch links it instead of libcaravan.
#pragma once

#include <cstddef>
#include <string>

namespace caravan::ipc {

// Every segment of the job whose scheduler listens at root_uri:root_port.
std::string job_prefix(const std::string& root_uri, int root_port);
// Every segment of this job meant for server node `server`.
std::string server_prefix(const std::string& root_uri, int root_port, int server);
// The segments worker node `worker` (this process) makes for that server;
// the segment's number completes the name.
std::string lane_prefix(const std::string& root_uri, int root_port, int server, int worker);

// Removes every segment whose name starts with `prefix`; returns how many.
size_t remove_segments(const std::string& prefix);

}  // namespace caravan::ipc
