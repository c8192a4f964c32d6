#include "plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace caravan_bench {
namespace {

// gnuplot reads the script on its standard input; the data are inline.
std::string run_gnuplot(const std::string& script, const std::string& png) {
  FILE* p = popen("gnuplot 2>&1", "w");
  if (!p) return "cannot start gnuplot";
  std::fwrite(script.data(), 1, script.size(), p);
  int status = pclose(p);
  if (status == -1 || !WIFEXITED(status)) return "gnuplot did not end normally";
  if (WEXITSTATUS(status) == 127)
    return "gnuplot not found: install it (apt-get install gnuplot-nox)";
  if (WEXITSTATUS(status) != 0)
    return "gnuplot failed (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  std::ifstream in(png, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof magic);
  if (!in || std::string(magic + 1, 3) != "PNG") return "gnuplot wrote no PNG to " + png;
  return "";
}

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string plot_lines(const std::string& png, const std::string& title, const std::string& ylabel,
                       const std::vector<Series>& series) {
  std::string s =
      "set terminal pngcairo size 900,540 noenhanced\nset output " + quoted(png) + "\nset title " +
      quoted(title) + "\nset xlabel \"tensor size\"\nset ylabel " + quoted(ylabel) +
      "\nset logscale x 2\nset grid\nset key top left\nset offsets graph 0.03, graph 0.03, 0, 0\n"
      "set xtics (\"4 KB\" 4096, \"64 KB\" 65536, \"1 MB\" 1048576, \"4 MB\" 4194304, "
      "\"16 MB\" 16777216, \"64 MB\" 67108864, \"256 MB\" 268435456)\nplot ";
  for (size_t i = 0; i < series.size(); ++i)
    s += std::string(i ? ", " : "") + "'-' with linespoints lw 2 title " + quoted(series[i].title);
  s += "\n";
  for (const Series& x : series) {
    for (auto [a, b] : x.points) s += std::to_string(a) + " " + std::to_string(b) + "\n";
    s += "e\n";
  }
  return run_gnuplot(s, png);
}

std::string plot_bars(const std::string& png, const std::string& title, const std::string& ylabel,
                      const std::vector<std::pair<std::string, double>>& bars) {
  std::string s =
      "set terminal pngcairo size 900,540 noenhanced\nset output " + quoted(png) + "\nset title " +
      quoted(title) + "\nset ylabel " + quoted(ylabel) +
      "\nset style fill solid 0.6\nset boxwidth 0.6\nset grid ytics\nset yrange [0:*]\n"
      "plot '-' using 0:2:xtic(1) with boxes notitle, '' using 0:2:(sprintf(\"%.1f\",$2)) "
      "with labels offset 0,1 notitle\n";
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& [label, value] : bars) s += quoted(label) + " " + std::to_string(value) + "\n";
    s += "e\n";
  }
  return run_gnuplot(s, png);
}

}  // namespace caravan_bench
