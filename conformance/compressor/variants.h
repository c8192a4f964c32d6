// The compressors under test: the plugin files given on caravan-compressor-
// check's command line, else every plugin CMake listed in
// CARAVAN_COMPRESSOR_TARGETS (compressor_conformance_test), each with tensor
// parameters it accepts.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "conformance/host/fake_host.h"

namespace caravan::conformance {

struct Variant {
  std::string path;
  std::string name;  // from the file name, which the descriptor must match
  Params params;     // the tensor's parameters create() is given
};

// gtest would otherwise print the parameter byte by byte.
inline void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

std::vector<Variant> all_variants();

// caravan-compressor-check: test these files instead, each created with
// `params` added to those variants.cc knows for its name. Called before
// GoogleTest registers the suites.
void test_only(const std::vector<std::string>& paths, const Params& params);

}  // namespace caravan::conformance
