// The shared-memory pieces of BYTEPS_ENABLE_IPC on real POSIX shared
// memory: a worker's segment, the server's mapping of it, and the server's
// checks of slot descriptors, which must refuse anything outside what the
// worker attached and name the worker.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "engine/base/error.h"
#include "engine/ipc/mapped_segment.h"
#include "engine/ipc/messages.h"
#include "engine/ipc/segment_table.h"

namespace caravan::ipc {
namespace {

constexpr uint64_t kBytes = kSegmentHeaderBytes + 4096;

SegmentIdentity identity(const std::string& tag, uint64_t nonce = 0x1234) {
  SegmentIdentity id;
  id.name = "/caravan-ipc-unit-" + tag + "-p" + std::to_string(getpid());
  id.bytes = kBytes;
  id.nonce = nonce;
  return id;
}

bool name_exists(const std::string& name) { return access(("/dev/shm" + name).c_str(), F_OK) == 0; }

// The error `body` throws, or a note that it threw none.
template <class Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("non-caravan exception: ") + e.what();
  }
  return "no error";
}

TEST(MappedSegment, ServerSeesTheWorkersBytesAndTheNameIsGoneOnceMapped) {
  SegmentIdentity id = identity("share");
  auto worker = MappedSegment::create(id);
  ASSERT_TRUE(name_exists(id.name));
  auto server = MappedSegment::attach(id);
  EXPECT_FALSE(name_exists(id.name)) << "the server must remove the name as soon as it mapped it";
  ASSERT_NE(worker->base(), server->base());  // two mappings of one object
  std::memcpy(worker->base() + kSegmentHeaderBytes, "from the worker", 16);
  EXPECT_STREQ(server->base() + kSegmentHeaderBytes, "from the worker");
  std::memcpy(server->base() + kSegmentHeaderBytes, "sum", 4);
  EXPECT_STREQ(worker->base() + kSegmentHeaderBytes, "sum");
  worker->unlink_name();  // already gone: not an error
}

TEST(MappedSegment, WorkerRemovesItsNameWhenNoServerMappedIt) {
  SegmentIdentity id = identity("unmapped");
  {
    auto worker = MappedSegment::create(id);
    ASSERT_TRUE(name_exists(id.name));
  }
  EXPECT_FALSE(name_exists(id.name));
}

TEST(MappedSegment, AttachRefusesASegmentThatIsNotTheWorkers) {
  SegmentIdentity id = identity("foreign", 111);
  auto worker = MappedSegment::create(id);
  SegmentIdentity other_nonce = id;
  other_nonce.nonce = 222;
  EXPECT_NE(error_of([&] { MappedSegment::attach(other_nonce); }).find("not the worker's segment"),
            std::string::npos);
  SegmentIdentity other_size = id;
  other_size.bytes = kBytes * 2;
  EXPECT_NE(error_of([&] { MappedSegment::attach(other_size); }).find("the worker made it"),
            std::string::npos);
  // A refused attach leaves the name for the one it belongs to.
  EXPECT_TRUE(name_exists(id.name));
  SegmentIdentity missing = identity("never-created");
  EXPECT_NE(error_of([&] { MappedSegment::attach(missing); }).find("No such file"),
            std::string::npos);
}

TEST(MappedSegment, AttachOpensOnlyCaravanNames) {
  SegmentIdentity id = identity("x");
  for (std::string name : {"/someone-elses-segment", "/caravan-ipc-a/b", "caravan-ipc-x"}) {
    id.name = name;
    EXPECT_NE(
        error_of([&] { MappedSegment::attach(id); }).find("is not a caravan shared-memory name"),
        std::string::npos)
        << name;
  }
}

class SegmentTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    id_ = identity("table");
    worker_ = MappedSegment::create(id_);
    table_.attach(1, AttachRequest{0, id_});
  }
  SegmentIdentity id_;
  std::shared_ptr<MappedSegment> worker_;
  SegmentTable table_{2};
};

TEST_F(SegmentTableTest, ResolvesASlotToTheWorkersMemory) {
  std::memcpy(worker_->base() + 128, "abc", 4);
  Blob b = table_.resolve(1, SlotDescriptor{0, 128, 4});
  ASSERT_EQ(b.len, 4u);
  EXPECT_STREQ(static_cast<char*>(b.data), "abc");
  Blob last = table_.resolve(1, SlotDescriptor{0, kBytes - 8, 8});  // ends at the last byte
  EXPECT_EQ(last.len, 8u);
}

TEST_F(SegmentTableTest, RefusesDescriptorsOutsideTheSegmentNamingTheWorker) {
  const SlotDescriptor bad[] = {
      {1, 128, 4},                // a segment never attached
      {0, 0, 8},                  // over the header
      {0, kBytes - 4, 8},         // runs past the end
      {0, kBytes + 64, 8},        // starts past the end
      {0, 128, UINT64_MAX - 64},  // offset + length overflows
      {0, UINT64_MAX - 2, 8},     // so does this
      {0, 128, 0},                // empty
  };
  for (const SlotDescriptor& d : bad) {
    std::string why = error_of([&] { table_.resolve(1, d); });
    EXPECT_EQ(why.rfind("worker 1 sent a shared-memory slot (segment " + std::to_string(d.segment) +
                            ", offset " + std::to_string(d.offset),
                        0),
              0u)
        << why;
  }
  // Worker 0 attached nothing: worker 1's segment is not its to name.
  EXPECT_NE(error_of([&] {
              table_.resolve(0, SlotDescriptor{0, 128, 4});
            })
                .find("worker 0 sent a shared-memory slot (segment 0, offset 128, 4 bytes), but "
                      "this server mapped 0 segment(s) of that worker"),
            std::string::npos);
}

TEST_F(SegmentTableTest, SegmentsMustComeInTheWorkersOrder) {
  SegmentIdentity next = identity("table-next");
  auto seg = MappedSegment::create(next);
  EXPECT_NE(error_of([&] {
              table_.attach(1, AttachRequest{2, next});
            }).find("worker 1 announced segment 2, expected segment 1"),
            std::string::npos);
  table_.attach(1, AttachRequest{1, next});
  EXPECT_EQ(table_.resolve(1, SlotDescriptor{1, 64, 64}).len, 64u);
}

TEST(IpcMessages, RoundTripAndRefuseMalformedBodies) {
  SlotDescriptor d{3, (5ull << 30) + 64, 4096000};
  auto bytes = encode_descriptor(d);
  ASSERT_EQ(bytes.size(), kDescriptorBytes);
  EXPECT_TRUE(decode_descriptor(bytes.data(), bytes.size()) == d);
  EXPECT_THROW(decode_descriptor(bytes.data(), bytes.size() - 1), std::runtime_error);

  AttachRequest a{7, SegmentIdentity{"/caravan-ipc-x-0", 1u << 20, 99}};
  auto body = encode_attach(a);
  AttachRequest back = decode_attach(body.data(), body.size());
  EXPECT_EQ(back.index, 7u);
  EXPECT_EQ(back.segment.name, a.segment.name);
  EXPECT_EQ(back.segment.bytes, a.segment.bytes);
  EXPECT_EQ(back.segment.nonce, a.segment.nonce);
  EXPECT_THROW(decode_attach(body.data(), body.size() - 1), std::runtime_error);
  body.push_back(0);
  EXPECT_THROW(decode_attach(body.data(), body.size()), std::runtime_error);
}

}  // namespace
}  // namespace caravan::ipc
