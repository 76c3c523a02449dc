// schedext-load: an HTTP/1.1 load driver that behaves like kube-scheduler's
// extender client: keep-alive connections, one request at a time on each, every
// request written with a single write() call on a TCP_NODELAY socket,
// `Accept-Encoding: gzip` as Go's transport sends it. N connections run in
// parallel. Bounded by a request count and a time limit; loopback only.
//
//   schedext-load --url http://127.0.0.1:8888/filter --body body.json
//                 [--connections 1] [--requests 200] [--seconds 10] [--warmup 3]
//
// Prints one line of key=value pairs: requests, errors, p50/p90/p99/max (ms),
// rps, wall seconds. A reply counts as an error when the status is not 200 or
// the body carries a non-empty "Error".
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/stats.h"
#include "support/http_client.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host;
  int port = 0;
  std::string path;
  std::string body_file;
  int connections = 1;
  long requests = 200;
  double seconds = 10;
  int warmup = 3;
};

constexpr std::string_view kUsage =
    "usage: schedext-load --url http://127.0.0.1:PORT/PATH --body FILE [--connections N]\n"
    "                     [--requests TOTAL] [--seconds LIMIT] [--warmup PER_CONNECTION]\n";

bool ParseUrl(std::string_view url, Options& o) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return false;
  }
  url.remove_prefix(kScheme.size());
  const size_t slash = url.find('/');
  std::string_view hostport = url.substr(0, slash);
  o.path = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  size_t colon = hostport.rfind(':');
  if (hostport.size() > 0 && hostport.front() == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    o.host = std::string(hostport.substr(1, close - 1));
    colon = hostport.find(':', close);
  } else {
    o.host = std::string(hostport.substr(0, colon));
  }
  if (colon == std::string_view::npos) {
    return false;
  }
  o.port = std::atoi(std::string(hostport.substr(colon + 1)).c_str());
  return o.port > 0 && o.port < 65536;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string url;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "schedext-load: " << arg << " needs a value\n" << kUsage;
      return 2;
    }
    const std::string value = argv[++i];
    if (arg == "--url") {
      url = value;
    } else if (arg == "--body") {
      o.body_file = value;
    } else if (arg == "--connections") {
      o.connections = std::max(1, std::atoi(value.c_str()));
    } else if (arg == "--requests") {
      o.requests = std::max(1L, std::atol(value.c_str()));
    } else if (arg == "--seconds") {
      o.seconds = std::atof(value.c_str());
    } else if (arg == "--warmup") {
      o.warmup = std::max(0, std::atoi(value.c_str()));
    } else {
      std::cerr << "schedext-load: unknown flag " << arg << "\n" << kUsage;
      return 2;
    }
  }
  if (url.empty() || o.body_file.empty() || !ParseUrl(url, o)) {
    std::cerr << kUsage;
    return 2;
  }
  if (!schedext::bench::IsLoopbackHost(o.host)) {
    std::cerr << "schedext-load: refusing host " << o.host
              << ": loopback only (127.0.0.1, ::1, localhost)\n";
    return 2;
  }
  std::ifstream in(o.body_file, std::ios::binary);
  if (!in) {
    std::cerr << "schedext-load: cannot read " << o.body_file << "\n";
    return 2;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string body = ss.str();
  std::string request = "POST " + o.path + " HTTP/1.1\r\nHost: " + o.host + ":" +
                        std::to_string(o.port) +
                        "\r\nUser-Agent: kube-scheduler/v1.26.7 (schedext-load)\r\n"
                        "Content-Length: " +
                        std::to_string(body.size()) +
                        "\r\nContent-Type: application/json\r\nAccept-Encoding: gzip\r\n\r\n";
  request += body;

  std::atomic<long> remaining{o.requests};
  std::atomic<long> errors{0};
  std::mutex mu;
  std::vector<double> latencies_ms;
  latencies_ms.reserve(static_cast<size_t>(o.requests));
  const auto deadline =
      Clock::now() + std::chrono::microseconds(static_cast<int64_t>(o.seconds * 1e6));
  std::string first_error;
  Clock::time_point start;
  std::atomic<int> ready{0};

  auto worker = [&]() {
    std::vector<double> mine;
    std::string reply;
    schedext::bench::LoopbackConnection conn(o.host, o.port);
    auto one = [&](bool record) {
      const auto t0 = Clock::now();
      int status = 0;
      const bool ok = conn.Exchange(request, status, reply);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      const bool failed = !ok || status != 200 || schedext::bench::CarriesError(reply);
      if (failed) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.empty()) {
          first_error = !ok ? "connection failed or reply unreadable"
                            : "status " + std::to_string(status) + ": " + reply.substr(0, 300);
        }
      }
      if (record) {
        if (failed) {
          errors.fetch_add(1);
        }
        mine.push_back(ms);
      }
    };
    for (int i = 0; i < o.warmup; ++i) {
      one(false);
    }
    ready.fetch_add(1);
    while (ready.load() < o.connections) {
      std::this_thread::yield();
    }
    while (Clock::now() < deadline && remaining.fetch_sub(1) > 0) {
      one(true);
    }
    std::lock_guard<std::mutex> lock(mu);
    latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
  };

  std::vector<std::thread> threads;
  for (int i = 0; i < o.connections; ++i) {
    threads.emplace_back(worker);
  }
  while (ready.load() < o.connections) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  start = Clock::now();
  for (auto& t : threads) {
    t.join();
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(latencies_ms.begin(), latencies_ms.end());
  std::printf(
      "requests=%zu errors=%ld p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f rps=%.1f "
      "wall_s=%.3f\n",
      latencies_ms.size(), errors.load(), schedext::Percentile(latencies_ms, 0.5),
      schedext::Percentile(latencies_ms, 0.9), schedext::Percentile(latencies_ms, 0.99),
      latencies_ms.empty() ? 0.0 : latencies_ms.back(),
      wall > 0 ? static_cast<double>(latencies_ms.size()) / wall : 0.0, wall);
  if (!first_error.empty()) {
    std::fprintf(stderr, "schedext-load: first error: %s\n", first_error.c_str());
  }
  return latencies_ms.empty() ? 1 : 0;
}
