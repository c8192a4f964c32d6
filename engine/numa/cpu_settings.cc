#include "engine/numa/cpu_settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "engine/base/env.h"
#include "engine/base/error.h"

namespace caravan {
namespace {

// Far above any machine hwloc describes today, low enough that a stray
// "0-4000000000" cannot make us allocate gigabytes.
constexpr unsigned kMaxCpu = 65535;

std::string quoted(const char* var, const std::string& whole) {
  return std::string(var) + "='" + whole + "'";
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace

std::optional<unsigned> parse_index(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  unsigned v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v;
}

CpuList parse_cpu_list(const char* var, const std::string& whole, const std::string& text) {
  CpuList cpus;
  for (const std::string& raw : split(text, ',')) {
    std::string item = trim(raw);
    if (item.empty())
      throw config_error(quoted(var, whole) + ": '" + text +
                         "' has an empty item; expected CPU numbers and ranges like 1,4-5,7-11");
    size_t dash = item.find('-');
    auto first = parse_index(trim(item.substr(0, dash)));
    auto last = dash == std::string::npos ? first : parse_index(trim(item.substr(dash + 1)));
    if (!first || !last)
      throw config_error(quoted(var, whole) + ": '" + item +
                         "' is not a CPU number or a range like 4-7");
    if (*first > *last)
      throw config_error(quoted(var, whole) + ": the range '" + item + "' runs backwards");
    if (*last > kMaxCpu)
      throw config_error(quoted(var, whole) + ": CPU " + std::to_string(*last) +
                         " is beyond the largest CPU number supported (" + std::to_string(kMaxCpu) +
                         ")");
    for (unsigned c = *first; c <= *last; ++c) cpus.push_back(c);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const CpuList& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

CpuSettings CpuSettings::from_env() {
  CpuSettings s;
  s.numa_on = env::boolean("BYTEPS_NUMA_ON", true);
  s.multithreaded = env::boolean("BYTEPS_MULTITHREADED_CPU", true);
  if (env::get("BYTEPS_NUMA_DEFAULT_QUOTA"))
    s.quota = static_cast<int>(env::integer("BYTEPS_NUMA_DEFAULT_QUOTA", 1, kMaxCpu, 0));
  s.local_size = static_cast<int>(env::integer("BYTEPS_LOCAL_SIZE", 1, kMaxCpu, 1));
  s.local_rank = static_cast<int>(env::integer("BYTEPS_LOCAL_RANK", 0, s.local_size - 1, 0));
  if (auto v = env::get("BYTEPS_CPU_BLACKLIST")) {
    s.blacklist_text = *v;
    s.blacklist = parse_cpu_list("BYTEPS_CPU_BLACKLIST", *v, *v);
  }
  if (auto v = env::get("BYTEPS_VISIBLE_CPU_CORES")) {
    s.visible_text = *v;
    std::vector<CpuList> sections;
    for (const std::string& section : split(*v, ':'))
      sections.push_back(parse_cpu_list("BYTEPS_VISIBLE_CPU_CORES", *v, section));
    if (static_cast<int>(sections.size()) < s.local_size)
      throw config_error(
          quoted("BYTEPS_VISIBLE_CPU_CORES", *v) + " has " + std::to_string(sections.size()) +
          " section(s) split by ':', but BYTEPS_LOCAL_SIZE=" + std::to_string(s.local_size) +
          " local workers need one each");
    s.visible = std::move(sections);
  }
  // Set but empty hides every GPU from CUDA, so it is not the same as unset.
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES")) s.cuda_visible_devices = cvd;
  return s;
}

}  // namespace caravan
