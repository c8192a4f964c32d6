// What every compressor plugin file must be before any tensor goes through
// it: a compressor ABI 1 descriptor whose name is its file's, a full
// operations table, an instance that starts and ends, and a clear refusal
// of a dtype it does not compress. One test per plugin.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "compressor_under_test.h"
#include "variants.h"

namespace caravan::conformance {
namespace {

class CompressorPlugin : public testing::TestWithParam<Variant> {
 protected:
  // The plugin's file, opened as the engine opens it; fails the test when
  // the engine would refuse it.
  CompressorFile file() {
    CompressorFile f = open_compressor(GetParam().path);
    EXPECT_EQ(f.error, "") << GetParam().path;
    return f;
  }
};

TEST_P(CompressorPlugin, DescriptorIsACompressorOfAbi1) {
  const CompressorFile f = file();
  ASSERT_NE(f.descriptor, nullptr);
  const caravan_plugin_descriptor& d = *f.descriptor;
  EXPECT_EQ(d.magic, CARAVAN_PLUGIN_MAGIC);
  EXPECT_EQ(d.kind, static_cast<uint32_t>(CARAVAN_PLUGIN_KIND_COMPRESSOR));
  EXPECT_EQ(d.abi_major, static_cast<uint32_t>(CARAVAN_COMPRESSOR_ABI_MAJOR_V1));
  EXPECT_GE(d.struct_size, sizeof(caravan_plugin_descriptor));
  // plugin.h: the entry may be called again and returns the same pointer.
  EXPECT_EQ(f.entry(), f.descriptor);
  // byteps_compressor_type=<name> finds libcaravan-compressor-<name>.so, and
  // listings show the descriptor's name: they must agree.
  ASSERT_NE(d.name, nullptr);
  std::string file_name = GetParam().path.substr(GetParam().path.find_last_of('/') + 1);
  EXPECT_EQ(file_name, "libcaravan-compressor-" + std::string(d.name) + ".so");
}

TEST_P(CompressorPlugin, OpsTableIsCompleteWithoutNullEntries) {
  const CompressorFile f = file();
  ASSERT_NE(f.ops, nullptr);
  const caravan_compressor_ops_v1& ops = *f.ops;
  // Every entry of ABI 1.0 is required, so the table must reach the last.
  EXPECT_GE(ops.struct_size,
            offsetof(caravan_compressor_ops_v1, decompress) + sizeof ops.decompress);
  EXPECT_NE(ops.init, nullptr);
  EXPECT_NE(ops.finalize, nullptr);
  EXPECT_NE(ops.create, nullptr);
  EXPECT_NE(ops.destroy, nullptr);
  EXPECT_NE(ops.compress, nullptr);
  EXPECT_NE(ops.decompress, nullptr);
}

TEST_P(CompressorPlugin, InitAndFinalize) {
  const CompressorFile f = file();
  ASSERT_NE(f.ops, nullptr);
  // Twice, so that finalize leaves nothing behind that a second instance
  // trips over.
  for (int round = 0; round < 2; ++round) {
    FakeHost host("compressor");
    void* ctx = nullptr;
    ASSERT_EQ(f.ops->init(host.table(), &ctx), CARAVAN_STATUS_OK) << host.error();
    EXPECT_NE(ctx, nullptr);
    EXPECT_EQ(f.ops->finalize(ctx), CARAVAN_STATUS_OK) << host.error();
  }
}

TEST_P(CompressorPlugin, RefusesAnUnsupportedDtypeSayingWhy) {
  // No compressor of gradients takes integers; whichever status it picks,
  // the user must read why.
  Compressor c(GetParam().path, GetParam().params, CARAVAN_INT32, 16);
  EXPECT_TRUE(c.create_status() == CARAVAN_STATUS_UNSUPPORTED ||
              c.create_status() == CARAVAN_STATUS_INVALID_ARGUMENT)
      << "create returned " << c.create_status() << ": " << c.failure();
  EXPECT_NE(c.error(), "");
}

INSTANTIATE_TEST_SUITE_P(AllCompressors, CompressorPlugin, testing::ValuesIn(all_variants()),
                         [](const testing::TestParamInfo<Variant>& i) { return i.param.name; });

}  // namespace
}  // namespace caravan::conformance
