#include "engine/kv/sample_log.h"

#include <cstdint>
#include <cstring>
#include <sstream>

#include "caravan/dtype.h"
// The CPU reducer's own conversions: logged values are exactly what it sums.
#include "caravan/float16.h"
#include "engine/base/dtype.h"

namespace caravan {
namespace {

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void print_value(std::ostream& os, const char* p, int dtype) {
  switch (dtype) {
    case CARAVAN_FLOAT32:
      os << load<float>(p);
      break;
    case CARAVAN_FLOAT64:
      os << load<double>(p);
      break;
    case CARAVAN_FLOAT16:
      os << caravan_f16_to_f32(load<uint16_t>(p));
      break;
    case CARAVAN_BFLOAT16:
      os << caravan_bf16_to_f32(load<uint16_t>(p));
      break;
    case CARAVAN_UINT8:
      os << static_cast<unsigned>(load<uint8_t>(p));
      break;
    case CARAVAN_INT8:
      os << static_cast<int>(load<int8_t>(p));
      break;
    case CARAVAN_INT32:
      os << load<int32_t>(p);
      break;
    case CARAVAN_INT64:
      os << load<int64_t>(p);
      break;
    default:
      os << "?";
  }
}

}  // namespace

std::string sample_values(const void* data, size_t bytes, int dtype) {
  size_t esize = dtype_size(dtype);
  std::ostringstream os;
  if (esize == 0) return "values of unknown dtype " + std::to_string(dtype);
  size_t n = bytes / esize;
  os << n << " " << dtype_name(dtype) << " values";
  if (n == 0) return os.str();
  const char* p = static_cast<const char*>(data);
  os << ": first ";
  print_value(os, p, dtype);
  os << ", last ";
  print_value(os, p + (n - 1) * esize, dtype);
  return os.str();
}

}  // namespace caravan
