// The reducers under test: every reducer plugin CMake listed in
// CARAVAN_REDUCER_TARGETS (variants.cc, compiled into
// reducer_conformance_test alone, reads the generated list).
#ifndef CARAVAN_TESTS_REDUCER_CONFORMANCE_VARIANTS_H
#define CARAVAN_TESTS_REDUCER_CONFORMANCE_VARIANTS_H

#include <ostream>
#include <string>
#include <vector>

#include "conformance/host/fake_host.h"

namespace caravan::conformance {

// One way to instantiate a plugin: the CPU reducer once per kernel family,
// every other plugin once with its defaults.
struct Variant {
  std::string path;
  std::string plugin;  // from the file name, which the descriptor must match
  std::string label;   // e.g. "cpu_avx2"
  Params params;
};

// gtest would otherwise print the parameter byte by byte.
inline void PrintTo(const Variant& v, std::ostream* os) { *os << v.label; }

// Every reducer plugin this build made, as CMake listed them.
std::vector<Variant> all_variants();

}  // namespace caravan::conformance

#endif  // CARAVAN_TESTS_REDUCER_CONFORMANCE_VARIANTS_H
