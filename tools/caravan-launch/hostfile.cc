#include "hostfile.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace caravan::launch {
namespace {

int read_count(const std::string& where, const std::string& key, const std::string& v, int lo) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || n < lo || n > 4096)
    throw std::runtime_error(where + ": " + key + "=" + v + " is not a count from " +
                             std::to_string(lo) + " to 4096");
  return static_cast<int>(n);
}

}  // namespace

std::vector<HostEntry> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("--hostfile " + path + ": cannot read it");
  return parse_hosts(in, "--hostfile " + path, path);
}

std::vector<HostEntry> parse_hosts(std::istream& in, const std::string& source,
                                   const std::string& lines_of) {
  std::vector<HostEntry> hosts;
  bool any_servers = false;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    HostEntry e;
    e.line = n;
    std::set<std::string> given;
    if (!(words >> e.host)) continue;
    std::string where = lines_of + ":" + std::to_string(n);
    // Horovod's form, HOST:SLOTS (an IPv6 address has no place here: the
    // nodes speak IPv4).
    if (auto colon = e.host.rfind(':'); colon != std::string::npos) {
      e.slots = read_count(where, "slots", e.host.substr(colon + 1), 0);
      e.host.erase(colon);
      given.insert("slots");
    }
    for (std::string w; words >> w;) {
      auto eq = w.find('=');
      std::string key = w.substr(0, eq), value = eq == std::string::npos ? "" : w.substr(eq + 1);
      // Which of two counts was meant is a guess either way.
      if ((key == "slots" || key == "servers") && !given.insert(key).second)
        throw std::runtime_error(where + ": " + key + "= is given twice on one line");
      if (key == "slots") {
        e.slots = read_count(where, key, value, 0);
      } else if (key == "servers") {
        e.servers = read_count(where, key, value, 0);
        any_servers = true;
      } else {
        throw std::runtime_error(where + ": '" + w + "' is not slots=N or servers=M");
      }
    }
    hosts.push_back(e);
  }
  if (hosts.empty()) throw std::runtime_error(source + ": no host in it");
  if (!any_servers)
    for (auto& h : hosts) h.servers = 1;
  int workers = 0, servers = 0;
  for (auto& h : hosts) {
    workers += h.slots;
    servers += h.servers;
  }
  if (workers < 1) throw std::runtime_error(source + ": no worker slots (slots=N)");
  if (servers < 1) throw std::runtime_error(source + ": no servers (servers=M)");
  return hosts;
}

std::string host_address(const HostEntry& entry) {
  auto at = entry.host.find('@');
  return at == std::string::npos ? entry.host : entry.host.substr(at + 1);
}

std::string shell_quote(const std::string& word) {
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string remote_command(const std::vector<std::string>& env,
                           const std::vector<std::string>& argv, const std::string& dir) {
  std::string cmd = "exec env";
  for (const auto& kv : env) cmd += " " + shell_quote(kv);
  for (const auto& a : argv) cmd += " " + shell_quote(a);
  // The token never appears on a command line (ps on either host would show
  // it): it is the first line of stdin. The watchdog holds stdin to its end,
  // which comes when ssh goes away, and then stops the job's process.
  return "IFS= read -r t || exit 97; if [ -n \"$t\" ]; then CARAVAN_JOB_TOKEN=$t; "
         "export CARAVAN_JOB_TOKEN; fi; unset t; cd " +
         shell_quote(dir) + " 2>/dev/null || cd; (" + cmd +
         ") </dev/null & p=$!; "
         // A background list's stdin is /dev/null unless redirected: the
         // watchdog reads ssh's through a copy made before.
         "exec 3<&0; (cat <&3 >/dev/null; kill -TERM $p 2>/dev/null; sleep 5; "
         "kill -KILL $p 2>/dev/null) >/dev/null 2>&1 & w=$!; exec 3<&-; "
         "wait $p; rc=$?; kill $w 2>/dev/null; exit $rc";
}

}  // namespace caravan::launch
