// caravan-server: runs the scheduler or server role that DMLC_ROLE names,
// as BytePS servers are run.
#include "engine/roles/roles.h"

int main() { return caravan::run_role_from_env("caravan-server"); }
