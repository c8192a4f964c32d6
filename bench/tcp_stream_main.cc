// caravan-tcp-stream: one raw TCP stream over loopback (or HOST) for about
// SECONDS, printed in GB/s and Gbit/s: the yardstick that scripted
// benchmarks (bench/pslite/run.sh) measure beside their own figures.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tcp_baseline.h"

int main(int argc, char** argv) {
  std::string host = argc > 1 ? argv[1] : "127.0.0.1";
  double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
  std::string error;
  double gbs = caravan_bench::MeasureTcpStream(host, seconds, &error);
  if (gbs < 0) {
    std::fprintf(stderr, "caravan-tcp-stream: %s\n", error.c_str());
    return 1;
  }
  std::printf("raw TCP stream to %s: %.3f GB/s = %.2f Gbit/s\n", host.c_str(), gbs, gbs * 8);
  return 0;
}
