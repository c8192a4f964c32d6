// Presents a van built against ABI 1 (van_v1.h) as an ABI 2 van
// (van_v2.h), so the engine and the conformance kit work with one table:
// the newest. A small library of its own, with this header as its whole
// interface, because the kit links it too.
//
// How the two models meet: an ABI 1 van calls a done function from its own
// threads; the lift turns each call into a SENT event in a queue. Its
// recv() blocks inside the plugin and would not notice such an event, so a
// thread of the lift calls recv() and queues what it gets; poll() waits on
// the queue. That thread is the price of an old van, not of ABI 2.
#pragma once

#include "caravan/plugin/van_v1.h"
#include "caravan/plugin/van_v2.h"

namespace caravan {

// Creates an instance of the ABI 1 van `ops` (its init) with the lift
// around it; *out_ctx is for the entries of van_v1_lifted_ops(). `ops`
// must be at least CARAVAN_VAN_OPS_V1_0_SIZE long (the caller checks:
// it knows the plugin's name for the message).
caravan_status open_lifted_van_v1(const caravan_van_ops_v1* ops, const caravan_host_v1* host,
                                  void** out_ctx);

// The ABI 2 table over an instance open_lifted_van_v1() made. Its init
// entry refuses (UNSUPPORTED): it cannot know which ABI 1 van to start.
const caravan_van_ops_v2* van_v1_lifted_ops();

}  // namespace caravan
