#include "engine/reducer/reducer.h"

namespace caravan {

size_t dtype_size(int dtype) {
  switch (dtype) {
    case CARAVAN_FLOAT32: return 4;
    case CARAVAN_FLOAT64: return 8;
    case CARAVAN_FLOAT16: return 2;
    case CARAVAN_UINT8: return 1;
    case CARAVAN_INT32: return 4;
    case CARAVAN_INT8: return 1;
    case CARAVAN_INT64: return 8;
    case CARAVAN_BFLOAT16: return 2;
  }
  return 0;
}

const char* dtype_name(int dtype) {
  static const char* names[] = {"float32", "float64", "float16", "uint8",
                                "int32",   "int8",    "int64",   "bfloat16"};
  return (dtype >= 0 && dtype < CARAVAN_DTYPE_COUNT) ? names[dtype] : "invalid";
}

}  // namespace caravan
