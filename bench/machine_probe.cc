// schedext-machine-probe: is this machine steady enough to benchmark on?
// (issue 15, part 3: the slow phases.)
//
// Two probes, each repeated in short samples so that a phase change shows:
//   alu    a dependent multiply-add chain, no memory: the core's speed
//          (frequency, a neighbour on the same physical core);
//   chase  a dependent random walk over a buffer of --mb MiB, one load per
//          cache line visited: the latency of whatever level the buffer
//          lives in (L2 2 MiB and L3 32 MiB on the EPYC guests we run on),
//          TLB misses and the host's backing of the guest's pages included.
//   echo   --echo-mb MiB sent to a loopback TCP peer that reads them whole and
//          sends them back, as a full-mode filter's body and reply travel:
//          the transport floor under any full-mode latency (0: skipped);
//          --echo-kb KiB the same at a names-mode body's size (5,000 names
//          ≈ 230 KiB in, the names or scores back), repeated more often.
// A steady machine prints the same number in every sample of a probe. The
// schedext request path is the chase kind (thousands of scattered node
// entries), so a machine whose chase samples jump between levels for seconds
// at a time gives request costs that jump the same way (docs/benchmarks.md).
//
//   schedext-machine-probe [--samples 40] [--mb 4,64] [--echo-mb 55] [--echo-kb 256]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

double CpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// ns per step of a dependent multiply-add chain.
double AluSample(uint64_t seed) {
  constexpr long kSteps = 20'000'000;
  uint64_t x = seed | 1;
  const double t0 = CpuNs();
  for (long i = 0; i < kSteps; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  // The chain's result is consumed before the clock is read again, so it can
  // be neither dropped nor moved past it.
  asm volatile("" : : "r"(x) : "memory");
  return (CpuNs() - t0) / kSteps;
}

// One cache line per slot; next[] forms a single random cycle over all slots.
struct Walk {
  explicit Walk(size_t mib) : slots(mib * 1024 * 1024 / 64), next(slots * 8) {
    std::vector<size_t> order(slots);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
    for (size_t i = 0; i < slots; ++i) {
      next[order[i] * 8] = order[(i + 1) % slots] * 8;
    }
  }
  // ns per dependent load.
  double Sample() {
    constexpr long kLoads = 2'000'000;
    const double t0 = CpuNs();
    size_t p = at;
    for (long i = 0; i < kLoads; ++i) {
      p = next[p];
    }
    // The walk's last slot is consumed before the clock is read again, so
    // the loads cannot be moved past it.
    asm volatile("" : : "r"(p) : "memory");
    at = p;
    return (CpuNs() - t0) / kLoads;
  }
  size_t slots;
  std::vector<size_t> next;
  size_t at = 0;
};

double WallMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

bool ReadAll(int fd, char* data, size_t n) {
  for (size_t got = 0; got < n;) {
    const ssize_t k = read(fd, data + got, n - got);
    if (k <= 0) return false;
    got += static_cast<size_t>(k);
  }
  return true;
}

bool WriteAll(int fd, const char* data, size_t n) {
  for (size_t sent = 0; sent < n;) {
    const ssize_t k = write(fd, data + sent, n - sent);
    if (k <= 0) return false;
    sent += static_cast<size_t>(k);
  }
  return true;
}

// ms per round trip of `n` bytes each way through 127.0.0.1; empty on error.
std::vector<double> EchoSamples(size_t n, int samples) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return {};
  }
  std::thread peer([listener, n, samples] {
    const int fd = accept(listener, nullptr, nullptr);
    std::vector<char> buffer(n);
    for (int s = 0; fd >= 0 && s < samples; ++s) {
      if (!ReadAll(fd, buffer.data(), n) || !WriteAll(fd, buffer.data(), n)) break;
    }
    if (fd >= 0) close(fd);
  });
  std::vector<double> out;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::vector<char> body(n, 'x');
    std::vector<char> reply(n);
    for (int s = 0; s < samples; ++s) {
      const double t0 = WallMs();
      // The peer answers only once it has the whole body, so sending it all
      // before reading cannot deadlock.
      if (!WriteAll(fd, body.data(), n) || !ReadAll(fd, reply.data(), n)) break;
      out.push_back(WallMs() - t0);
    }
  }
  if (fd >= 0) close(fd);
  peer.join();
  close(listener);
  return out;
}

void Print(const char* what, const std::vector<double>& samples) {
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  std::printf("%-12s min %7.2f  median %7.2f  max %7.2f  max/min %5.2fx  samples:", what,
              sorted.front(), sorted[sorted.size() / 2], sorted.back(),
              sorted.back() / sorted.front());
  for (double s : samples) std::printf(" %.3g", s);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 40;
  std::vector<size_t> sizes = {4, 64};
  size_t echo_mb = 0;
  size_t echo_kb = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--samples") {
      samples = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--echo-mb") {
      echo_mb = std::stoul(argv[i + 1]);
    } else if (flag == "--echo-kb") {
      echo_kb = std::stoul(argv[i + 1]);
    } else if (flag == "--mb") {
      sizes.clear();
      for (std::string_view list = argv[i + 1]; !list.empty();) {
        const size_t comma = list.find(',');
        sizes.push_back(std::max<size_t>(1, std::stoul(std::string(list.substr(0, comma)))));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      }
    } else {
      std::fprintf(stderr,
                   "usage: schedext-machine-probe [--samples N] [--mb 4,64] [--echo-mb 55] "
                   "[--echo-kb 256]\n");
      return 2;
    }
  }
  std::vector<double> alu;
  for (int s = 0; s < samples; ++s) alu.push_back(AluSample(static_cast<uint64_t>(s)));
  Print("alu ns/step", alu);
  for (size_t mib : sizes) {
    Walk walk(mib);
    walk.Sample();  // the first pass brings the buffer in wherever it fits
    std::vector<double> chase;
    for (int s = 0; s < samples; ++s) chase.push_back(walk.Sample());
    const std::string label = "chase " + std::to_string(mib) + "M";
    Print(label.c_str(), chase);
  }
  struct Echo {
    size_t bytes;
    int samples;
    std::string label;
  };
  std::vector<Echo> echoes;
  if (echo_mb > 0) {
    echoes.push_back(
        {echo_mb << 20, std::min(samples, 10), "echo " + std::to_string(echo_mb) + "M ms"});
  }
  if (echo_kb > 0) {
    echoes.push_back({echo_kb << 10, samples, "echo " + std::to_string(echo_kb) + "K ms"});
  }
  for (const Echo& e : echoes) {
    const std::vector<double> echo = EchoSamples(e.bytes, e.samples);
    if (echo.empty()) {
      std::fprintf(stderr, "schedext-machine-probe: loopback echo failed\n");
      return 1;
    }
    Print(e.label.c_str(), echo);
  }
  return 0;
}
