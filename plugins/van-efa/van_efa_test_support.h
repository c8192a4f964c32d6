// What the van-efa tests share: instances of the van over libfabric's tcp
// provider on loopback, already listening, and pairs of them connected.
// They are driven through the conformance kit's VanInstance.
#ifndef CARAVAN_VAN_EFA_TEST_SUPPORT_H
#define CARAVAN_VAN_EFA_TEST_SUPPORT_H

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "conformance/van/kit/payload.h"
#include "conformance/van/kit/van_instance.h"

namespace caravan::van_efa_test {

using namespace caravan::van_check;

inline const VanPlugin& Efa() { return van_file(CARAVAN_VAN_EFA_PLUGIN); }

// All the van sees of the environment: the tcp provider stands in for EFA,
// and these tests never pick a real fabric the machine may have.
inline const Params kTcpProvider{{"FI_PROVIDER", "tcp"}};

// An instance listening on 127.0.0.1.
struct Van : VanInstance {
  explicit Van(Params params = {}) : VanInstance(Efa(), std::move(params), kTcpProvider) {
    EXPECT_TRUE(started());
    if (ok()) {
      EXPECT_EQ(listen(), CARAVAN_STATUS_OK) << error();
    }
  }
};

// a sends to b as peer 1; b to a as peer 2.
struct Pair {
  Van a, b;
  explicit Pair(const Params& params = {}) : a(params), b(params) {
    EXPECT_EQ(a.connect(1, b.addr()), CARAVAN_STATUS_OK) << a.error();
    EXPECT_EQ(b.connect(2, a.addr()), CARAVAN_STATUS_OK) << b.error();
  }
};

}  // namespace caravan::van_efa_test

#endif  // CARAVAN_VAN_EFA_TEST_SUPPORT_H
