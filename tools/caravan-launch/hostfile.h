// caravan-launch --hostfile: a job over several hosts, each process started
// over OpenSSH (docs/cluster-launch.md).
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace caravan::launch {

struct HostEntry {
  std::string host;  // as ssh takes it: "node1", "10.0.0.2", "alice@node1"
  int slots = 1;     // workers on it
  int servers = 0;   // servers on it
  int line = 0;
};

// Reads FILE: one host a line, `HOST [slots=N] [servers=M]` (or Horovod's
// `HOST:N`), '#' comments. When no line names servers, every host gets
// one. Throws std::runtime_error naming the file, line and what is wrong.
std::vector<HostEntry> read_hostfile(const std::string& path);
// The same from `in`: `source` names it in errors about the whole list
// ("--hostfile FILE"), `lines_of` before a line's number.
std::vector<HostEntry> parse_hosts(std::istream& in, const std::string& source,
                                   const std::string& lines_of);

// The address of `entry`'s host for the other nodes (no "user@").
std::string host_address(const HostEntry& entry);

// A word for a POSIX shell: single-quoted, quotes inside escaped.
std::string shell_quote(const std::string& word);

// The command line the remote shell runs: reads one line from stdin (the
// job token, possibly empty) into CARAVAN_JOB_TOKEN, starts `argv` with
// `env` in `dir`, and kills it when stdin closes (the launcher stopped the
// job, or died); exits with its status.
std::string remote_command(const std::vector<std::string>& env,
                           const std::vector<std::string>& argv, const std::string& dir);

}  // namespace caravan::launch
