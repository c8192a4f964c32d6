// Loading: what the engine checks before it trusts a van, and what a van
// must keep true of its descriptor and instances.
#include <cctype>
#include <cstring>

#include "kit/van_instance.h"
#include "van_under_test.h"

namespace caravan::van_check {
namespace {

TEST(Loading, DescriptorFields) {
  const caravan_plugin_descriptor* d = van().descriptor;
  EXPECT_EQ(d->magic, CARAVAN_PLUGIN_MAGIC);
  EXPECT_EQ(d->kind, static_cast<uint32_t>(CARAVAN_PLUGIN_KIND_VAN));
  EXPECT_TRUE(d->abi_major == CARAVAN_VAN_ABI_MAJOR_V1 || d->abi_major == CARAVAN_VAN_ABI_MAJOR_V2)
      << d->abi_major;
  // The descriptor is frozen in every ABI version: same size, always.
  EXPECT_EQ(d->struct_size, sizeof(caravan_plugin_descriptor));
  ASSERT_NE(d->name, nullptr);
  EXPECT_NE(d->version, nullptr);
  EXPECT_NE(d->description, nullptr);
  if (d->num_params > 0) {
    ASSERT_NE(d->params, nullptr);
  }
}

TEST(Loading, NameMatchesFileName) {
  std::string file = van().path.substr(van().path.rfind('/') + 1);
  EXPECT_EQ(file, std::string("libcaravan-van-") + van().descriptor->name + ".so")
      << "the engine finds a van by name as libcaravan-van-<name>.so";
}

TEST(Loading, ParamsAreUpperCaseShortNames) {
  const caravan_plugin_descriptor* d = van().descriptor;
  for (size_t i = 0; i < d->num_params; ++i) {
    const caravan_param_info& p = d->params[i];
    ASSERT_NE(p.name, nullptr) << "param " << i;
    EXPECT_GT(std::strlen(p.name), 0u) << "param " << i;
    for (const char* c = p.name; *c; ++c)
      EXPECT_TRUE(std::isupper(static_cast<unsigned char>(*c)) ||
                  std::isdigit(static_cast<unsigned char>(*c)) || *c == '_')
          << "CARAVAN_VAN_<NAME>_" << p.name << " must be a plain environment name";
    EXPECT_NE(p.description, nullptr) << p.name;
  }
}

TEST(Loading, OpsTableComplete) {
  // The entries both majors have; each adds its own below. Entries are only
  // ever appended inside a major, so a table may be larger than this kit's
  // view of it, never smaller.
  auto common = [](const auto* o) {
    EXPECT_NE(o->init, nullptr);
    EXPECT_NE(o->finalize, nullptr);
    EXPECT_NE(o->properties, nullptr);
    EXPECT_NE(o->listen, nullptr);
    EXPECT_NE(o->connect, nullptr);
    EXPECT_NE(o->disconnect, nullptr);
    EXPECT_NE(o->send, nullptr);
    EXPECT_NE(o->release, nullptr);
  };
  if (const caravan_van_ops_v1* o = van().ops_v1) {
    EXPECT_GE(o->struct_size, CARAVAN_VAN_OPS_V1_0_SIZE);
    common(o);
    EXPECT_NE(o->recv, nullptr);
    return;
  }
  const caravan_van_ops_v2* o = van().ops_v2;
  ASSERT_NE(o, nullptr);
  EXPECT_GE(o->struct_size, CARAVAN_VAN_OPS_V2_0_SIZE);
  common(o);
  EXPECT_NE(o->poll, nullptr);
  EXPECT_NE(o->interrupt, nullptr);
  // Minor 1's optional pair: both or neither.
  if (o->struct_size >= sizeof(caravan_van_ops_v2)) {
    EXPECT_EQ(o->lend == nullptr, o->unlend == nullptr) << "lend and unlend come together";
  }
}

TEST(Loading, EntryReturnsSamePointer) {
  EXPECT_EQ(van().entry(), van().descriptor);
  EXPECT_EQ(van().entry(), van().descriptor);
}

TEST(Loading, Properties) {
  VanInstance v(van());
  ASSERT_TRUE(v.started());
  caravan_van_properties_v2 p = v.properties();
  EXPECT_GE(p.max_segments, 1u);
  EXPECT_LE(p.max_segments, static_cast<size_t>(CARAVAN_VAN_MAX_SEGMENTS_V2));
  EXPECT_GT(p.max_message_bytes, 0u);
  ASSERT_NE(p.transport, nullptr);
  EXPECT_GT(std::strlen(p.transport), 0u);
  const uint64_t known = CARAVAN_VAN_CAP_V2_ZERO_COPY_SEND | CARAVAN_VAN_CAP_V2_RDMA |
                         CARAVAN_VAN_CAP_V2_DEVICE_MEMORY;
  EXPECT_EQ(p.caps & ~known, 0u) << "capability bits this ABI does not define";
  std::printf("van '%s' %s: transport %s, max_segments %zu, max_message_bytes %zu, caps 0x%llx\n",
              van().descriptor->name, van().descriptor->version, p.transport, p.max_segments,
              p.max_message_bytes, static_cast<unsigned long long>(p.caps));
}

TEST(Loading, RepeatedInitFinalize) {
  for (int i = 0; i < 20; ++i) {
    VanInstance v(van());
    ASSERT_TRUE(v.started()) << "round " << i;
    ASSERT_EQ(v.finalize(), CARAVAN_STATUS_OK) << "round " << i;
  }
  for (int i = 0; i < 5; ++i) {
    VanInstance v(van());
    ASSERT_TRUE(v.started()) << "round " << i;
    ASSERT_EQ(v.listen(), CARAVAN_STATUS_OK) << "round " << i << ": " << v.error();
  }
}

TEST(Loading, SeveralInstancesAtOnce) {
  VanInstance a(van()), b(van()), c(van());
  ASSERT_TRUE(a.started());
  ASSERT_TRUE(b.started());
  ASSERT_TRUE(c.started());
  EXPECT_NE(a.context(), b.context());
  EXPECT_NE(b.context(), c.context());
}

}  // namespace
}  // namespace caravan::van_check
