// Writes the seed corpora of the fuzz targets: a few valid inputs of each,
// made with the engine's own encoders, so the fuzzers start from messages
// that get past the first checks. Usage: fuzz_seed_corpus <corpus-folder>
// (tests/fuzz/corpus); rerun after a change to the wire format.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "engine/control/control_message.h"
#include "engine/control/node_info.h"
#include "engine/wire/bytes.h"
#include "engine/wire/header.h"
#include "tests/support/control_frame.h"

namespace caravan {
namespace {

using Bytes = std::vector<uint8_t>;

std::string root;

void write(const std::string& target, const std::string& name, const Bytes& b) {
  std::string dir = root + "/" + target;
  mkdir(root.c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/" + name, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void append(Bytes& out, const Bytes& b) { out.insert(out.end(), b.begin(), b.end()); }

Bytes header(const wire::Header& h) {
  Bytes b(wire::kHeaderBytes);
  wire::encode(h, b.data());
  return b;
}

using test::control_frame;

NodeInfo node(Role role, int rank, const std::string& host, int port) {
  NodeInfo n;
  n.role = role;
  n.rank = rank;
  n.id = role == Role::kServer ? server_id(rank) : worker_id(rank);
  n.host = host;
  n.van_address = "tcp://" + host + ":" + std::to_string(port);
  n.pid = 4000 + port % 100;
  return n;
}

void wire_seeds() {
  // One byte of Reader operations count, the operations, then the bytes.
  wire::Header h;
  h.type = wire::Type::kKV;
  h.flags = wire::kRequest | wire::kPush | wire::kPull;
  h.sender = 9;
  h.recipient = 8;
  h.seg_len[0] = 8;
  h.seg_len[1] = 4096;
  Bytes b = {0};
  append(b, header(h));
  write("wire_fuzz", "kv_header", b);

  wire::Writer w;
  w.u8(2);
  w.i32(-1);
  w.u64(1ull << 40);
  w.str("tcp://10.0.0.1:9000");
  Bytes ops = {4, 0, 1, 2, 3};
  append(ops, w.bytes());
  write("wire_fuzz", "reader_each_kind", ops);
}

void control_seeds() {
  // Config byte: bit 0 = received by the scheduler; the rest: chunk size - 1.
  NodeInfo reg = node(Role::kWorker, -1, "127.0.0.1", 40001);
  reg.id = 0;
  reg.preferred_rank = 1;
  Bytes b = {1 | (7 << 1)};
  append(b, control_frame(wire::Type::kRegister, encode_register(reg)));
  append(b, control_frame(wire::Type::kHeartbeat, {}));
  append(b, control_frame(wire::Type::kBarrier, {}, kServerGroup + kWorkerGroup));
  append(b, control_frame(wire::Type::kBarrier, {}, kServerGroup + kWorkerGroup, wire::kFinal));
  append(b, control_frame(wire::Type::kBarrierWaiting, {}, 0, wire::kFinal | wire::kRequest));
  std::string lost = "local rank 1 of machine 0 (pid 43) ended without caravan_shutdown()";
  append(b, control_frame(wire::Type::kAbort, Bytes(lost.begin(), lost.end())));
  write("control_fuzz", "scheduler_side_session", b);

  std::vector<NodeInfo> table = {node(Role::kServer, 0, "127.0.0.1", 40000),
                                 node(Role::kWorker, 0, "127.0.0.1", 40001),
                                 node(Role::kWorker, 1, "127.0.0.2", 40002)};
  Bytes n = {0 | (63 << 1)};
  append(n, control_frame(wire::Type::kNodeTable, encode_node_table(table)));
  append(n, control_frame(wire::Type::kHeartbeat, {}));
  append(n, control_frame(wire::Type::kBarrierDone, {}, kServerGroup + kWorkerGroup));
  std::string missing = "1 node(s) that have not arrived: worker 0 (pid 41 at 10.0.0.4)";
  append(n, control_frame(wire::Type::kBarrierWaiting, Bytes(missing.begin(), missing.end()),
                          kServerGroup + kWorkerGroup));
  std::string why = "lost worker 1 (pid 42 at 10.0.0.5)";
  append(n, control_frame(wire::Type::kAbort, Bytes(why.begin(), why.end())));
  write("control_fuzz", "node_side_session", n);

  // CARAVAN_JOB_TOKEN's challenge, each side's half (bodies of the right
  // sizes; their bytes matter only to the HMAC, which the fuzzer skips).
  Bytes nonce(kAuthNonceBytes, 0x5a);
  Bytes a = {1 | (15 << 1)};
  append(a, control_frame(wire::Type::kAuthHello, nonce));
  append(a, control_frame(wire::Type::kAuthProof, Bytes(kNodeProofBytes, 0xa5)));
  append(a, control_frame(wire::Type::kRegister, encode_register(reg)));
  write("control_fuzz", "scheduler_side_token_challenge", a);
  Bytes c = {0 | (15 << 1)};
  append(c, control_frame(wire::Type::kAuthChallenge, nonce));
  append(c, control_frame(wire::Type::kAuthProof, Bytes(kSchedulerProofBytes, 0xa5)));
  std::string refused = "wrong CARAVAN_JOB_TOKEN: this node's token is not the scheduler's";
  append(c,
         control_frame(wire::Type::kAbort, Bytes(refused.begin(), refused.end()), kAbortRefused));
  write("control_fuzz", "node_side_token_challenge", c);
}

void kv_seeds() {
  // Segment count, node id, worker count, three u16 lengths, then segments.
  auto request = [](int sender, uint8_t dtype, const Bytes& vals) {
    wire::Header h;
    h.type = wire::Type::kKV;
    h.flags = wire::kRequest | wire::kPush | wire::kPull;
    h.sender = sender;
    h.recipient = 8;
    h.timestamp = 7;
    h.dtype = dtype;
    h.seg_len[0] = 8;
    h.seg_len[1] = vals.size();
    Bytes b = {
        4, 8, 2, 8, 0, static_cast<uint8_t>(vals.size()), static_cast<uint8_t>(vals.size() >> 8),
        0, 0};
    append(b, header(h));
    Bytes key = {42, 0, 0, 0, 0, 0, 0, 0};
    append(b, key);
    append(b, vals);
    return b;
  };
  write("kv_fuzz", "push_pull_float32_worker0", request(9, 0, Bytes(64, 1)));
  write("kv_fuzz", "push_pull_int64_worker1", request(11, 6, Bytes(24, 2)));
  // A start-up probe: a header alone.
  wire::Header probe;
  probe.type = wire::Type::kProbe;
  probe.flags = wire::kRequest;
  probe.sender = 9;
  probe.recipient = 8;
  Bytes p = {4, 8, 2, 0, 0, 0, 0, 0, 0};
  append(p, header(probe));
  write("kv_fuzz", "probe_request", p);
}

}  // namespace
}  // namespace caravan

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus-folder>\n", argv[0]);
    return 2;
  }
  caravan::root = argv[1];
  caravan::wire_seeds();
  caravan::control_seeds();
  caravan::kv_seeds();
  return 0;
}
