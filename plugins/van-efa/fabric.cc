#include "fabric.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <cstring>
#include <set>

#include "address.h"
#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::van_efa {
namespace {

using plugin::Error;
using rendezvous::Transport;

// 1.10 has everything used here; asking for more would refuse older libraries.
constexpr uint32_t kApiVersion = FI_VERSION(1, 10);
// Every frame of ours carries this tag; nothing else shares the endpoint.
constexpr uint64_t kTag = 0xca7a;

std::string fi_error(int rc) { return fi_strerror(rc < 0 ? -rc : rc); }

struct InfoPtr {
  fi_info* p = nullptr;
  ~InfoPtr() {
    if (p) fi_freeinfo(p);
  }
};

// Hints for what the rendezvous protocol needs. A provider may clear the
// mr_mode bits it does not require; the rest are requirements.
fi_info* hints(const std::string& provider, bool rma, bool require_caps) {
  fi_info* h = fi_allocinfo();
  if (!h) throw std::bad_alloc();
  h->ep_attr->type = FI_EP_RDM;
  if (require_caps) {
    h->caps =
        FI_TAGGED | (rma ? FI_RMA | FI_READ | FI_REMOTE_READ | FI_WRITE | FI_REMOTE_WRITE : 0);
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    h->domain_attr->threading = FI_THREAD_SAFE;
    // Hello must reach the peer before the stream's first message.
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
  }
  // A list or exclusion ("tcp,sockets", "^efa") is libfabric's own filter.
  if (!provider.empty() && provider.find_first_of(",^") == std::string::npos)
    h->fabric_attr->prov_name = strdup(provider.c_str());
  return h;
}

int getinfo(const std::string& provider, bool rma, bool require_caps, const char* node,
            const char* service, InfoPtr* out) {
  InfoPtr h;
  h.p = hints(provider, rma, require_caps);
  return fi_getinfo(kApiVersion, node, service, node ? FI_SOURCE : 0, h.p, &out->p);
}

std::string providers_present() {
  InfoPtr all;
  std::set<std::string> names;
  if (getinfo("", false, false, nullptr, nullptr, &all) == 0)
    for (fi_info* i = all.p; i; i = i->next) names.insert(i->fabric_attr->prov_name);
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
  return text.empty() ? "none" : text;
}

}  // namespace

bool speaks_ip(const std::string& provider) {
  for (const char* p : {"tcp", "sockets", "udp", "net"})
    if (provider.compare(0, std::strlen(p), p) == 0) return true;
  return false;
}

Offer probe(const std::string& provider, bool want_rma) {
  for (bool rma : {true, false}) {
    if (rma && !want_rma) continue;
    InfoPtr info;
    if (getinfo(provider, rma, true, nullptr, nullptr, &info) == 0 && info.p)
      return Offer{info.p->fabric_attr->prov_name, rma};
  }
  InfoPtr any;
  if (getinfo(provider, false, false, nullptr, nullptr, &any) == 0 && any.p)
    throw Error(CARAVAN_STATUS_UNAVAILABLE,
                "libfabric provider '" + provider +
                    "' offers no reliable-datagram endpoint with tagged messages, send-after-send "
                    "ordering and thread safety");
  throw Error(CARAVAN_STATUS_UNAVAILABLE,
              "libfabric provider '" + provider +
                  "' is not available for reliable-datagram endpoints (providers present: " +
                  providers_present() +
                  "); choose one with FI_PROVIDER or CARAVAN_VAN_EFA_PROVIDER");
}

Fabric::Fabric(const std::string& provider, bool rma, const char* node, const char* service)
    : rma_(rma) {
  try {
    InfoPtr info;
    int rc = getinfo(provider, rma, true, node, service, &info);
    if (rc != 0 || !info.p) {
      std::string where = node ? std::string(" at ") + node + " port " + service : "";
      throw Error(node ? CARAVAN_STATUS_INVALID_ARGUMENT : CARAVAN_STATUS_UNAVAILABLE,
                  "no '" + provider + "' endpoint" + where + ": " + fi_error(rc));
    }
    info_ = fi_dupinfo(info.p);
    provider_ = info_->fabric_attr->prov_name;
    max_msg_size_ = info_->ep_attr->max_msg_size;
    virt_addr_ = (info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;

    auto check = [&](int r, const char* what) {
      if (r != 0) throw Error(CARAVAN_STATUS_IO, std::string(what) + " failed: " + fi_error(r));
    };
    check(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
    check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
    fi_av_attr av_attr{};
    av_attr.type =
        info_->domain_attr->av_type != FI_AV_UNSPEC ? info_->domain_attr->av_type : FI_AV_TABLE;
    check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_MSG;
    cq_attr.wait_obj = FI_WAIT_UNSPEC;
    cq_waits_ = fi_cq_open(domain_, &cq_attr, &cq_, nullptr) == 0;
    if (!cq_waits_) {
      cq_attr.wait_obj = FI_WAIT_NONE;
      check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
    }
    rc = fi_endpoint(domain_, info_, &ep_, nullptr);
    if (rc != 0)
      throw Error(node ? CARAVAN_STATUS_INVALID_ARGUMENT : CARAVAN_STATUS_IO,
                  std::string("fi_endpoint") +
                      (node ? std::string(" at ") + node + " port " + service : "") +
                      " failed: " + fi_error(rc));
    check(fi_ep_bind(ep_, &av_->fid, 0), "binding the address vector");
    check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "binding the completion queue");
    rc = fi_enable(ep_);
    if (rc != 0)
      throw Error(node ? CARAVAN_STATUS_INVALID_ARGUMENT : CARAVAN_STATUS_IO,
                  std::string("enabling the endpoint") +
                      (node ? std::string(" at ") + node + " port " + service : "") +
                      " failed: " + fi_error(rc));
    char buf[256];
    size_t len = sizeof buf;
    check(fi_getname(&ep_->fid, buf, &len), "fi_getname");
    name_.assign(buf, len);
  } catch (...) {
    close_all();
    throw;
  }
}

Fabric::~Fabric() { close_all(); }

void Fabric::close_endpoint() {
  if (ep_) fi_close(&ep_->fid);
  ep_ = nullptr;
}

void Fabric::close_all() noexcept {
  close_endpoint();
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (info_) fi_freeinfo(info_);
  av_ = nullptr;
  cq_ = nullptr;
  domain_ = nullptr;
  fabric_ = nullptr;
  info_ = nullptr;
}

int Fabric::progress(rendezvous::Protocol& protocol, int timeout_ms) {
  fi_cq_msg_entry entries[16];
  ssize_t n;
  if (timeout_ms > 0 && cq_waits_) {
    n = fi_cq_sread(cq_, entries, 16, nullptr, timeout_ms);
  } else {
    if (timeout_ms > 0) {
      std::unique_lock<std::mutex> lock(wake_mu_);
      wake_cv_.wait_for(lock, std::chrono::milliseconds(1), [&] { return woken_; });
      woken_ = false;
    }
    n = fi_cq_read(cq_, entries, 16);
  }
  if (n > 0) {
    for (ssize_t i = 0; i < n; ++i)
      protocol.complete(entries[i].op_context, true, entries[i].len, "");
    return static_cast<int>(n);
  }
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    if (fi_cq_readerr(cq_, &err, 0) != 1) return 0;
    std::string why = fi_error(err.err);
    const char* detail = fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0);
    if (detail && *detail) why += std::string(" (") + detail + ")";
    protocol.complete(err.op_context, false, 0, why);
    return 1;
  }
  return 0;
}

Transport::Post Fabric::post_send(uint64_t to, const void* buf, size_t len, void* desc, void* ctx,
                                  std::string* err) {
  ssize_t rc = fi_tsend(ep_, buf, len, desc, to, kTag, ctx);
  if (rc == 0) return Post::kPosted;
  if (rc == -FI_EAGAIN) return Post::kAgain;
  *err = "fi_tsend: " + fi_error(static_cast<int>(rc));
  return Post::kFailed;
}

Transport::Post Fabric::post_recv(void* buf, size_t len, void* desc, void* ctx, std::string* err) {
  ssize_t rc = fi_trecv(ep_, buf, len, desc, FI_ADDR_UNSPEC, kTag, 0, ctx);
  if (rc == 0) return Post::kPosted;
  if (rc == -FI_EAGAIN) return Post::kAgain;
  *err = "fi_trecv: " + fi_error(static_cast<int>(rc));
  return Post::kFailed;
}

Transport::Post Fabric::post_read(uint64_t from, void* local, size_t len, void* desc,
                                  uint64_t raddr, uint64_t key, void* ctx, std::string* err) {
  ssize_t rc = fi_read(ep_, local, len, desc, from, raddr, key, ctx);
  if (rc == 0) return Post::kPosted;
  if (rc == -FI_EAGAIN) return Post::kAgain;
  *err = "fi_read: " + fi_error(static_cast<int>(rc));
  return Post::kFailed;
}

// FI_DELIVERY_COMPLETE: the completion comes once the bytes are placed in
// the peer's memory, so the notice that follows cannot overtake them.
Transport::Post Fabric::post_write(uint64_t to, const void* local, size_t len, void* desc,
                                   uint64_t raddr, uint64_t key, void* ctx, std::string* err) {
  iovec iov{const_cast<void*>(local), len};
  fi_rma_iov rma{raddr, len, key};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.desc = &desc;
  msg.iov_count = 1;
  msg.addr = to;
  msg.rma_iov = &rma;
  msg.rma_iov_count = 1;
  msg.context = ctx;
  ssize_t rc = fi_writemsg(ep_, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
  if (rc == 0) return Post::kPosted;
  if (rc == -FI_EAGAIN) return Post::kAgain;
  *err = "fi_writemsg: " + fi_error(static_cast<int>(rc));
  return Post::kFailed;
}

uint64_t Fabric::resolve(const std::string& name) {
  std::lock_guard<std::mutex> lock(av_mu_);
  auto it = addrs_.find(name);
  if (it != addrs_.end()) return it->second;
  fi_addr_t addr = FI_ADDR_UNSPEC;
  int rc = fi_av_insert(av_, name.data(), 1, &addr, 0, nullptr);
  if (rc != 1)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "fi_av_insert of " + describe(name) + " failed: " +
                                                     (rc < 0 ? fi_error(rc) : "rejected"));
  addrs_.emplace(name, addr);
  return addr;
}

std::string Fabric::describe(const std::string& name) { return encode_address(provider_, name); }

rendezvous::Registration Fabric::register_memory(void* p, size_t len) {
  // Every buffer may be read by a peer (a request to send) or written by
  // one (a receive buffer lent for the remote-buffer cache).
  uint64_t access =
      FI_SEND | FI_RECV | (rma_ ? FI_READ | FI_REMOTE_READ | FI_WRITE | FI_REMOTE_WRITE : 0);
  fid_mr* mr = nullptr;
  int rc = fi_mr_reg(domain_, p, len, access, 0, next_key_++, 0, &mr, nullptr);
  if (rc != 0)
    throw Error(CARAVAN_STATUS_NO_MEMORY,
                "registering " + std::to_string(len) + " bytes failed: " + fi_error(rc));
  rendezvous::Registration r;
  r.handle = mr;
  r.desc = fi_mr_desc(mr);
  r.key = fi_mr_key(mr);
  r.remote_base = virt_addr_ ? reinterpret_cast<uint64_t>(p) : 0;
  return r;
}

void Fabric::deregister(const rendezvous::Registration& r) {
  if (r.handle) fi_close(&static_cast<fid_mr*>(r.handle)->fid);
}

bool Fabric::cancel(void* ctx) { return ep_ && fi_cancel(&ep_->fid, ctx) == 0; }

void Fabric::wake() {
  if (cq_waits_) {
    fi_cq_signal(cq_);
    return;
  }
  std::lock_guard<std::mutex> lock(wake_mu_);
  woken_ = true;
  wake_cv_.notify_one();
}

}  // namespace caravan::van_efa
