// Benchmark tables drawn as PNG charts with gnuplot (Debian's gnuplot-nox):
// the benchmark writes the numbers, gnuplot draws them. Used by
// caravan-bench --plot and caravan-replay-bench --plot.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace caravan_bench {

struct Series {
  std::string title;
  std::vector<std::pair<double, double>> points;  // x, y
};

// Lines over a logarithmic x axis (sizes in bytes, labelled in KB/MB).
// Returns "" on success, else why no chart was drawn.
std::string plot_lines(const std::string& png, const std::string& title, const std::string& ylabel,
                       const std::vector<Series>& series);

// One bar per label.
std::string plot_bars(const std::string& png, const std::string& title, const std::string& ylabel,
                      const std::vector<std::pair<std::string, double>>& bars);

}  // namespace caravan_bench
