// The wire header (fixed 72-byte little-endian layout) and the body
// Writer/Reader used by control messages.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/wire/bytes.h"
#include "engine/wire/header.h"

namespace caravan::wire {
namespace {

constexpr uint64_t kNoLimit = UINT64_MAX;

Header sample() {
  Header h;
  h.type = Type::kNodeTable;
  h.flags = kRequest | kPull | kFinal;
  h.sender = 9;
  h.recipient = -8;
  h.app_id = 0x01020304;
  h.customer_id = -2;
  h.timestamp = 123456789;
  h.cmd = -2147483647 - 1;
  h.priority = 2147483647;
  h.dtype = 0xAB;
  h.status = -12;
  h.seg_len[0] = (5ull << 30) + 3;  // 5 GiB + 3: needs all 64 bits
  h.seg_len[1] = 0;
  h.seg_len[2] = 0x0102030405060708ull;
  return h;
}

void expect_equal(const Header& a, const Header& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.sender, b.sender);
  EXPECT_EQ(a.recipient, b.recipient);
  EXPECT_EQ(a.app_id, b.app_id);
  EXPECT_EQ(a.customer_id, b.customer_id);
  EXPECT_EQ(a.timestamp, b.timestamp);
  EXPECT_EQ(a.cmd, b.cmd);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.status, b.status);
  for (size_t i = 0; i < kSegments; ++i) EXPECT_EQ(a.seg_len[i], b.seg_len[i]) << "segment " << i;
}

// Decodes what must fail and returns the reason.
std::string refusal(const void* data, size_t len, uint64_t limit = kNoLimit) {
  Header h;
  std::string why;
  EXPECT_FALSE(decode(data, len, limit, &h, &why));
  EXPECT_FALSE(why.empty());
  return why;
}

TEST(WireHeader, RoundTripsEveryField) {
  Header in = sample();
  uint8_t buf[kHeaderBytes];
  encode(in, buf);
  Header out;
  std::string why;
  ASSERT_TRUE(decode(buf, sizeof buf, kNoLimit, &out, &why)) << why;
  expect_equal(in, out);
}

TEST(WireHeader, RoundTripsEveryType) {
  for (Type t : {Type::kKV, Type::kAck, Type::kProbe, Type::kRegister, Type::kNodeTable,
                 Type::kBarrier, Type::kBarrierDone, Type::kAbort}) {
    Header in;
    in.type = t;
    uint8_t buf[kHeaderBytes];
    encode(in, buf);
    Header out;
    std::string why;
    ASSERT_TRUE(decode(buf, sizeof buf, 0, &out, &why)) << why;
    EXPECT_EQ(out.type, t);
  }
}

TEST(WireHeader, FixedLittleEndianLayout) {
  uint8_t buf[kHeaderBytes];
  std::memset(buf, 0xEE, sizeof buf);
  encode(sample(), buf);
  // magic "CRVN" at 0, version 9 at 4, type at 6
  EXPECT_EQ(std::memcmp(buf, "CRVN", 4), 0);
  EXPECT_EQ(buf[4], 9);
  EXPECT_EQ(buf[5], 0);
  EXPECT_EQ(buf[6], static_cast<uint8_t>(Type::kNodeTable));
  EXPECT_EQ(buf[7], 0);
  // flags at 8
  EXPECT_EQ(buf[8], kRequest | kPull | kFinal);
  // sender 9 at 12, recipient -8 at 16
  EXPECT_EQ(buf[12], 9);
  EXPECT_EQ(buf[16], 0xF8);
  EXPECT_EQ(buf[19], 0xFF);
  // app_id 0x01020304 at 20, least significant byte first
  EXPECT_EQ(buf[20], 0x04);
  EXPECT_EQ(buf[21], 0x03);
  EXPECT_EQ(buf[22], 0x02);
  EXPECT_EQ(buf[23], 0x01);
  // dtype at 40 with zero padding up to status at 44
  EXPECT_EQ(buf[40], 0xAB);
  EXPECT_EQ(buf[41], 0);
  EXPECT_EQ(buf[42], 0);
  EXPECT_EQ(buf[43], 0);
  EXPECT_EQ(buf[44], static_cast<uint8_t>(-12));
  // seg_len[2] = 0x0102030405060708 at 64
  for (int i = 0; i < 8; ++i) EXPECT_EQ(buf[64 + i], 8 - i) << "byte " << 64 + i;
  // seg_len[0] = 5 GiB + 3 at 48: 0x1'4000'0003
  EXPECT_EQ(buf[48], 3);
  EXPECT_EQ(buf[51], 0x40);
  EXPECT_EQ(buf[52], 1);
  EXPECT_EQ(buf[55], 0);
}

TEST(WireHeader, RejectsWrongLength) {
  uint8_t buf[kHeaderBytes + 1] = {};
  encode(sample(), buf);
  EXPECT_NE(refusal(buf, kHeaderBytes - 1).find("71 bytes"), std::string::npos);
  EXPECT_NE(refusal(buf, kHeaderBytes + 1).find("73 bytes"), std::string::npos);
  EXPECT_NE(refusal(buf, 0).find("expected 72"), std::string::npos);
}

TEST(WireHeader, RejectsBadMagic) {
  uint8_t buf[kHeaderBytes];
  encode(sample(), buf);
  buf[0] ^= 0x20;
  std::string why = refusal(buf, sizeof buf);
  EXPECT_NE(why.find("magic"), std::string::npos) << why;
}

TEST(WireHeader, RejectsOtherVersion) {
  uint8_t buf[kHeaderBytes];
  encode(sample(), buf);
  buf[4] = 8;  // the version before kAbortLeftOut: its node would drop one as garbage
  std::string why = refusal(buf, sizeof buf);
  EXPECT_NE(why.find("version 8, this build speaks 9"), std::string::npos) << why;
}

TEST(WireHeader, RejectsUnknownType) {
  uint8_t buf[kHeaderBytes];
  for (uint16_t t : {0, 4, 9, 21, 0xFFFF}) {
    Header h;
    h.type = static_cast<Type>(t);
    encode(h, buf);
    std::string why = refusal(buf, sizeof buf);
    EXPECT_NE(why.find("unknown message type " + std::to_string(t)), std::string::npos) << why;
  }
}

TEST(WireHeader, RejectsSegmentOverTheLimit) {
  Header h;
  h.seg_len[1] = 1001;
  uint8_t buf[kHeaderBytes];
  encode(h, buf);
  std::string why = refusal(buf, sizeof buf, 1000);
  EXPECT_NE(why.find("segment 1"), std::string::npos) << why;
  EXPECT_NE(why.find("1001"), std::string::npos) << why;
  EXPECT_NE(why.find("limit of 1000"), std::string::npos) << why;

  // Exactly at the limit is fine; 64-bit lengths compare in full.
  h.seg_len[1] = 1000;
  encode(h, buf);
  Header out;
  EXPECT_TRUE(decode(buf, sizeof buf, 1000, &out, &why)) << why;
  h.seg_len[1] = (1ull << 32) + 1;
  encode(h, buf);
  EXPECT_NE(refusal(buf, sizeof buf, 1ull << 32).find("4294967297"), std::string::npos);
}

TEST(WireHeader, PlausiblePrefixRefusesAStreamThatCannotBeOurs) {
  uint8_t buf[kHeaderBytes];
  encode(sample(), buf);
  std::string why;
  for (size_t len = 0; len <= kHeaderBytes; ++len)
    EXPECT_TRUE(plausible_prefix(buf, len, &why)) << len << " bytes: " << why;
  const char* http = "GET / HTTP/1.1";
  EXPECT_FALSE(plausible_prefix(http, 1, &why));
  EXPECT_NE(why.find("byte 0 is 0x47"), std::string::npos) << why;
  buf[6] = 99;  // unknown type, known as soon as 8 bytes are in
  EXPECT_TRUE(plausible_prefix(buf, 7, &why));
  EXPECT_FALSE(plausible_prefix(buf, 8, &why));
  EXPECT_NE(why.find("unknown message type 99"), std::string::npos) << why;
}

TEST(WireBytes, WriterReaderRoundTrip) {
  Writer w;
  w.u8(0xFE);
  w.i32(-7);
  w.u64(0xFEDCBA9876543210ull);
  w.str("");
  w.str("hello");
  w.i32(2147483647);
  auto& b = w.bytes();
  ASSERT_EQ(b.size(), 1u + 4 + 8 + 8 + 8 + 5 + 4);
  EXPECT_EQ(b[1], 0xF9);  // -7, little-endian
  EXPECT_EQ(b[5], 0x10);
  EXPECT_EQ(b[12], 0xFE);

  Reader r(b.data(), b.size());
  EXPECT_EQ(r.u8(), 0xFE);
  EXPECT_EQ(r.i32(), -7);
  EXPECT_EQ(r.u64(), 0xFEDCBA9876543210ull);
  EXPECT_EQ(r.str(), "");
  EXPECT_FALSE(r.done());
  EXPECT_EQ(r.str(), "hello");
  EXPECT_EQ(r.i32(), 2147483647);
  EXPECT_TRUE(r.done());
  EXPECT_THROW(r.u8(), std::runtime_error);
}

TEST(WireBytes, ReaderThrowsOnTruncation) {
  Writer w;
  w.u64(1);
  w.str("abcdef");
  auto full = w.bytes();
  for (size_t len = 0; len < full.size(); ++len) {
    SCOPED_TRACE(len);
    Reader r(full.data(), len);
    EXPECT_THROW(
        {
          r.u64();
          r.str();
        },
        std::runtime_error);
  }
  Reader r3(full.data(), 3);
  EXPECT_THROW(r3.i32(), std::runtime_error);
  EXPECT_EQ(r3.u8(), 1);  // a failed read consumes nothing
}

TEST(WireBytes, ReaderRefusesOversizedStrings) {
  Writer w;
  w.str(std::string(5000, 'x'));
  Reader r(w.bytes().data(), w.bytes().size());
  EXPECT_THROW(r.str(), std::runtime_error);  // default limit 4096
  Reader r2(w.bytes().data(), w.bytes().size());
  EXPECT_EQ(r2.str(5000).size(), 5000u);
  Reader r3(w.bytes().data(), w.bytes().size());
  EXPECT_THROW(r3.str(4999), std::runtime_error);

  // A refused string consumes nothing, like every other failed read: the
  // length is still there to read (found by wire_fuzz).
  Reader r5(w.bytes().data(), w.bytes().size());
  EXPECT_THROW(r5.str(10), std::runtime_error);
  EXPECT_EQ(r5.u64(), 5000u);
  Writer cut;
  cut.u64(6);
  cut.u8('a');
  Reader r6(cut.bytes().data(), cut.bytes().size());
  EXPECT_THROW(r6.str(), std::runtime_error);
  EXPECT_EQ(r6.u64(), 6u);
  EXPECT_EQ(r6.u8(), 'a');
  EXPECT_TRUE(r6.done());

  // A declared length far beyond the body must not be trusted.
  Writer huge;
  huge.u64(UINT64_MAX);
  huge.u8('x');
  Reader r4(huge.bytes().data(), huge.bytes().size());
  EXPECT_THROW(r4.str(SIZE_MAX), std::runtime_error);
}

}  // namespace
}  // namespace caravan::wire
