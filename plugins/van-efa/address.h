// The text form of a libfabric endpoint name, as peers exchange it:
// "efa://<provider>/<hex of fi_getname>".
#ifndef CARAVAN_VAN_EFA_ADDRESS_H
#define CARAVAN_VAN_EFA_ADDRESS_H

#include <string>

namespace caravan::van_efa {

std::string encode_address(const std::string& provider, const std::string& name);

// Splits an address into provider and binary name; false (with why) when
// the text is not one encode_address() could have written.
bool decode_address(const std::string& text, std::string* provider, std::string* name,
                    std::string* why);

}  // namespace caravan::van_efa

#endif  // CARAVAN_VAN_EFA_ADDRESS_H
