// The C API's process-wide state: this process as a worker between
// caravan_init() and caravan_shutdown(). job_calls.cc joins and leaves the
// job; caravan_api.cc runs the operations on it.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "caravan/caravan.h"
#include "engine/base/config.h"
#include "engine/base/error.h"
#include "engine/capi/telemetry.h"
#include "engine/reducer/device_memory.h"
#include "engine/worker/device_stager.h"
#include "engine/worker/worker.h"

namespace caravan::capi {

// This process as a worker, between caravan_init() and caravan_shutdown().
struct State {
  JobConfig config;
  std::unique_ptr<Worker> worker;
  // Made at the first device tensor: a job of host tensors never loads
  // the device reducer.
  std::mutex device_mu;
  std::unique_ptr<DeviceStager> stager;
  std::string stager_error;              // why it could not be made, said again for every tensor
  std::unique_ptr<Telemetry> telemetry;  // null: BYTEPS_TELEMETRY_ON=0

  int size() const { return worker->size(); }
  // The stager, made on first use; throws naming `tensor` when it cannot be.
  DeviceStager& device_stager(const std::string& tensor) {
    std::lock_guard<std::mutex> lock(device_mu);
    if (!stager && stager_error.empty()) {
      try {
        stager = std::make_unique<DeviceStager>(
            *worker, open_device_memory(config.device_reducer, config.plugin_path),
            config.op_timeout_s, static_cast<size_t>(config.staging_bytes));
      } catch (const Error& e) {
        stager_error = e.what();
      }
    }
    if (!stager)
      throw Error(CARAVAN_ERR_PLUGIN, "tensor '" + tensor +
                                          "' was given as device memory, which this worker "
                                          "cannot carry: " +
                                          stager_error);
    return *stager;
  }
  ~State() {
    stager.reset();  // its thread may still release partitions to the worker
  }
};

// The worker's state now; null outside init/shutdown (and after a failed
// rejoin).
std::shared_ptr<State> state();

// NOT_INITIALIZED, with its message, for a call that needs the worker.
int not_initialized();

}  // namespace caravan::capi
