#include "engine/compress/codec.h"

#include <cstring>
#include <map>
#include <mutex>

#include "caravan/plugin/compressor_v1.h"
#include "engine/base/error.h"
#include "engine/plugin/host_services.h"
#include "engine/plugin/loader.h"

namespace caravan {

// A compressor plugin loaded once per process and name, shared by every
// partition's state.
class CompressorPlugin {
 public:
  static std::shared_ptr<CompressorPlugin> get(const std::string& name,
                                               const std::string& plugin_path) {
    static std::mutex mu;
    static std::map<std::string, std::shared_ptr<CompressorPlugin>> loaded;
    std::lock_guard<std::mutex> lock(mu);
    auto& p = loaded[name];
    if (!p) p.reset(new CompressorPlugin(name, plugin_path));
    return p;
  }
  ~CompressorPlugin() {
    if (ctx) ops->finalize(ctx);
  }

  std::unique_ptr<PluginLibrary> lib;
  const caravan_compressor_ops_v1* ops = nullptr;
  void* ctx = nullptr;
  std::string name;

 private:
  CompressorPlugin(const std::string& choice, const std::string& plugin_path)
      : lib(load_plugin(static_cast<caravan_plugin_kind>(CARAVAN_PLUGIN_KIND_COMPRESSOR),
                        CARAVAN_COMPRESSOR_ABI_MAJOR_V1, choice, "byteps_compressor_type=" + choice,
                        plugin_path)),
        ops(static_cast<const caravan_compressor_ops_v1*>(lib->descriptor->ops)),
        name(lib->descriptor->name),
        host_(static_cast<caravan_plugin_kind>(CARAVAN_PLUGIN_KIND_COMPRESSOR), name) {
    constexpr size_t kUsed = offsetof(caravan_compressor_ops_v1, decompress) +
                             sizeof(caravan_compressor_ops_v1::decompress);
    if (ops->struct_size < kUsed || !ops->init || !ops->finalize || !ops->create || !ops->destroy ||
        !ops->compress || !ops->decompress)
      throw Error(CARAVAN_ERR_PLUGIN, "compressor plugin '" + name + "' (" + lib->path +
                                          ") has an ops table of " +
                                          std::to_string(ops->struct_size) +
                                          " bytes with NULL "
                                          "entries or shorter than the " +
                                          std::to_string(kUsed) + " bytes of init to decompress");
    caravan_status s = ops->init(host_.table(), &ctx);
    if (s != CARAVAN_STATUS_OK)
      throw Error(CARAVAN_ERR_PLUGIN, "compressor plugin '" + name + "' (" + lib->path +
                                          ") failed to start: " + describe_plugin_failure(s));
  }
  HostServices host_;
};

namespace {

// The element-wise arithmetic of momentum and error feedback, on the
// floating types compressors take. Its arrays are distinct buffers
// (__restrict): the compiler vectorises the loops only knowing that.
template <class F>
void by_float(caravan_dtype dtype, const std::string& what, F&& f) {
  if (dtype == CARAVAN_FLOAT32) return f(float{});
  if (dtype == CARAVAN_FLOAT64) return f(double{});
  throw Error(CARAVAN_ERR_INVALID_ARGUMENT,
              what + ": error feedback and momentum take float32 and float64 tensors, not " +
                  caravan_dtype_name(dtype));
}

template <class T>
T* as(std::vector<char>& v) {
  return reinterpret_cast<T*>(v.data());
}

// Vanilla error feedback keeps, per element, the error: what the receiver
// did not get of what was meant to be sent. It is stored negated, as the
// deficit d = -error, so that a round takes three passes rather than four:
// correct() makes w = v + error = v - d and sets d = -w in one pass; the
// codec compresses w; decompressing those bytes adding into d leaves
// d = decoded - w, minus the new error.
void correct(Codec& codec, const void* values, std::vector<char>& corrected,
             std::vector<char>& deficit) {
  by_float(codec.dtype(), codec.what(), [&](auto t) {
    using T = decltype(t);
    const T* v = static_cast<const T*>(values);  // may be `corrected` itself
    T* w = as<T>(corrected);
    T* __restrict d = as<T>(deficit);
    const size_t n = codec.count();
    for (size_t i = 0; i < n; ++i) {
      T x = v[i] - d[i];
      w[i] = x;
      d[i] = -x;
    }
  });
}

size_t compress_keeping_deficit(Codec& codec, std::vector<char>& corrected, void* out,
                                std::vector<char>& deficit, uint64_t seed, int direction) {
  size_t len = codec.compress(corrected.data(), out, seed, direction);
  codec.decompress(out, len, deficit.data(), true, seed, direction);
  return len;
}

}  // namespace

void load_compressor(const CompressionSpec& spec, const std::string& plugin_path) {
  CompressorPlugin::get(spec.type, plugin_path);
}

Codec::Codec(const CompressionSpec& spec, caravan_dtype dtype, size_t count,
             const std::string& plugin_path, std::string what)
    : plugin_(CompressorPlugin::get(spec.type, plugin_path)),
      dtype_(dtype),
      count_(count),
      what_(std::move(what)) {
  std::vector<caravan_compressor_param_v1> params;
  for (const auto& [k, v] : spec.params) params.push_back({k.c_str(), v.c_str()});
  caravan_status s = plugin_->ops->create(plugin_->ctx, params.data(), params.size(), dtype, count,
                                          &state_, &max_bytes_);
  if (s != CARAVAN_STATUS_OK)
    throw Error(CARAVAN_ERR_INVALID_ARGUMENT, what_ + ": compressor '" + plugin_->name +
                                                  "' refused it (" + std::to_string(count) + " " +
                                                  caravan_dtype_name(dtype) +
                                                  " elements): " + describe_plugin_failure(s));
}

Codec::~Codec() {
  if (state_) plugin_->ops->destroy(plugin_->ctx, state_);
}

size_t Codec::compress(const void* src, void* dst, uint64_t seed, int direction) {
  size_t len = 0;
  caravan_status s = plugin_->ops->compress(plugin_->ctx, state_, src, dst, &len, seed, direction);
  if (s != CARAVAN_STATUS_OK)
    throw Error(CARAVAN_ERR_INTERNAL, what_ + ": compressor '" + plugin_->name +
                                          "' failed to compress: " + describe_plugin_failure(s));
  if (len > max_bytes_)
    throw Error(CARAVAN_ERR_INTERNAL, what_ + ": compressor '" + plugin_->name + "' wrote " +
                                          std::to_string(len) + " bytes, past the " +
                                          std::to_string(max_bytes_) + " it promised");
  return len;
}

void Codec::decompress(const void* src, size_t len, void* dst, bool accumulate, uint64_t seed,
                       int direction) {
  caravan_status s = plugin_->ops->decompress(plugin_->ctx, state_, src, len, dst,
                                              accumulate ? 1 : 0, seed, direction);
  if (s != CARAVAN_STATUS_OK)
    throw Error(CARAVAN_ERR_SERVER, what_ + ": compressor '" + plugin_->name +
                                        "' cannot decompress " + std::to_string(len) +
                                        " bytes: " + describe_plugin_failure(s));
}

PushCodec::PushCodec(const CompressionSpec& spec, caravan_dtype dtype, size_t count,
                     const std::string& plugin_path, const std::string& what)
    : codec_(spec, dtype, count, plugin_path, what),
      error_feedback_(spec.error_feedback),
      momentum_(spec.momentum),
      mu_(spec.momentum_mu) {
  size_t bytes = count * caravan_dtype_size(dtype);
  if (error_feedback_ || momentum_) {
    by_float(dtype, what, [](auto) {});
    work_.assign(bytes, 0);
  }
  if (error_feedback_) deficit_.assign(bytes, 0);
  if (momentum_) velocity_.assign(bytes, 0);
}

size_t PushCodec::compress(const void* grad, void* out, uint64_t seed) {
  if (!error_feedback_ && !momentum_)
    return codec_.compress(grad, out, seed, CARAVAN_COMPRESSOR_PUSH);
  const void* sent = grad;
  if (momentum_) {
    by_float(codec_.dtype(), codec_.what(), [&](auto t) {
      using T = decltype(t);
      const T* __restrict g = static_cast<const T*>(grad);
      T* __restrict w = as<T>(work_);
      T* __restrict m = as<T>(velocity_);
      const T mu = static_cast<T>(mu_);
      const size_t n = codec_.count();
      for (size_t i = 0; i < n; ++i) {
        m[i] = mu * m[i] + g[i];
        w[i] = g[i] + mu * m[i];
      }
    });
    sent = work_.data();
  }
  if (!error_feedback_) return codec_.compress(sent, out, seed, CARAVAN_COMPRESSOR_PUSH);
  correct(codec_, sent, work_, deficit_);
  return compress_keeping_deficit(codec_, work_, out, deficit_, seed, CARAVAN_COMPRESSOR_PUSH);
}

void PushCodec::decompress_sum(const void* payload, size_t len, void* dst, uint64_t seed) {
  codec_.decompress(payload, len, dst, false, seed, CARAVAN_COMPRESSOR_PULL);
}

SumCodec::SumCodec(const CompressionSpec& spec, caravan_dtype dtype, size_t count,
                   const std::string& plugin_path, const std::string& what)
    : codec_(spec, dtype, count, plugin_path, what),
      error_feedback_(spec.error_feedback),
      sum_(count * caravan_dtype_size(dtype)) {
  if (error_feedback_) {
    by_float(dtype, what, [](auto) {});
    deficit_.assign(sum_.size(), 0);
  }
}

void SumCodec::add(const void* payload, size_t len, bool first, uint64_t seed) {
  codec_.decompress(payload, len, sum_.data(), !first, seed, CARAVAN_COMPRESSOR_PUSH);
}

size_t SumCodec::compress_sum(void* out, uint64_t seed) {
  if (!error_feedback_) return codec_.compress(sum_.data(), out, seed, CARAVAN_COMPRESSOR_PULL);
  correct(codec_, sum_.data(), sum_, deficit_);
  return compress_keeping_deficit(codec_, sum_, out, deficit_, seed, CARAVAN_COMPRESSOR_PULL);
}

}  // namespace caravan
