// Payloads that show where a byte went astray: every buffer a pattern of
// its own (by seed), compared whole on arrival.
#pragma once

#include <cstdint>
#include <vector>

#include "van_instance.h"

namespace caravan::van_check {

std::vector<uint8_t> pattern(size_t n, unsigned seed);
inline SendSegment seg(const std::vector<uint8_t>& v) { return {v.data(), v.size()}; }
inline SendSegment seg(const uint64_t& v) { return {&v, sizeof v}; }
uint64_t read_u64(const RecvSegment& s);
void expect_same(const RecvSegment& got, const std::vector<uint8_t>& want);

}  // namespace caravan::van_check
