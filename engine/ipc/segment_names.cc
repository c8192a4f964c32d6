#include "engine/ipc/segment_names.h"

#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <vector>

namespace caravan::ipc {

std::string job_prefix(const std::string& root_uri, int root_port) {
  // shm_open names allow no '/', and stay readable in `ls /dev/shm`.
  std::string uri;
  for (char c : root_uri.substr(0, 64))
    uri += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  return "/caravan-ipc-" + uri + "-" + std::to_string(root_port) + "-";
}

std::string server_prefix(const std::string& root_uri, int root_port, int server) {
  return job_prefix(root_uri, root_port) + "s" + std::to_string(server) + "-";
}

std::string lane_prefix(const std::string& root_uri, int root_port, int server, int worker) {
  return server_prefix(root_uri, root_port, server) + "w" + std::to_string(worker) + "-p" +
         std::to_string(getpid()) + "-";
}

size_t remove_segments(const std::string& prefix) {
  // Linux keeps shm_open's names as the files of /dev/shm.
  std::vector<std::string> names;
  std::string bare = prefix.substr(prefix.rfind('/') + 1);
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).compare(0, bare.size(), bare) == 0) names.push_back(e->d_name);
    closedir(d);
  }
  size_t removed = 0;
  for (const std::string& name : names)
    if (shm_unlink(("/" + name).c_str()) == 0) ++removed;
  return removed;
}

}  // namespace caravan::ipc
