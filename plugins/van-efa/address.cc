#include "address.h"

namespace caravan::van_efa {
namespace {

constexpr char kScheme[] = "efa://";
constexpr char kHex[] = "0123456789abcdef";

int nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string encode_address(const std::string& provider, const std::string& name) {
  std::string out = kScheme + provider + "/";
  for (unsigned char c : name) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

bool decode_address(const std::string& text, std::string* provider, std::string* name,
                    std::string* why) {
  const std::string scheme = kScheme;
  if (text.compare(0, scheme.size(), scheme) != 0) {
    *why = "does not start with " + scheme;
    return false;
  }
  size_t slash = text.rfind('/');
  if (slash < scheme.size() + 1) {
    *why = "has no provider";
    return false;
  }
  *provider = text.substr(scheme.size(), slash - scheme.size());
  std::string hex = text.substr(slash + 1);
  if (hex.empty() || hex.size() % 2) {
    *why = "endpoint name is not an even number of hex digits";
    return false;
  }
  name->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      *why = "endpoint name has a non-hex digit";
      return false;
    }
    *name += static_cast<char>(hi << 4 | lo);
  }
  return true;
}

}  // namespace caravan::van_efa
