// caravan-server: runs the scheduler or server role that DMLC_ROLE names,
// as BytePS servers are run.
#include <cstdio>
#include <cstring>

#include "engine/roles/roles.h"

namespace {

const char kUsage[] =
    "usage: caravan-server\n"
    "\n"
    "Runs the scheduler or a server of a job, as DMLC_ROLE says (scheduler, server). It takes\n"
    "no arguments: the job comes from the environment, as for BytePS's servers:\n"
    "DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_WORKER, DMLC_NUM_SERVER, and the rest that\n"
    "README.md lists ('caravan-info --check' reads them as this program would).\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    // An argument meant for something else (a launcher's option, a flag of
    // BytePS's server script) would otherwise be dropped without a word.
    bool help = std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0;
    if (!help) std::fprintf(stderr, "caravan-server: unexpected argument '%s'\n", argv[1]);
    std::fputs(kUsage, help ? stdout : stderr);
    return help ? 0 : 2;
  }
  return caravan::run_role_from_env("caravan-server");
}
