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
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

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

// Loopback only: the driver must never load anything but this machine.
bool IsLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "::1" || host == "localhost";
}

int Connect(const Options& o) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(o.port);
  if (getaddrinfo(o.host.c_str(), port.c_str(), &hints, &res) != 0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    // Resolution of "localhost" must stay on loopback too.
    bool loopback = false;
    if (a->ai_family == AF_INET) {
      loopback = (ntohl(reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      loopback = IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    }
    if (!loopback) {
      continue;
    }
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      break;
    }
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd;
}

bool WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    // The whole request in one call; the kernel may take it in parts for
    // large bodies, then the rest follows.
    const ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads one HTTP/1.1 response (Content-Length or chunked). `buf` keeps bytes
// read past it (none with one request in flight).
bool ReadResponse(int fd, std::string& buf, int& status, std::string& body) {
  auto fill = [&]() {
    char chunk[256 * 1024];
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      return false;
    }
    buf.append(chunk, static_cast<size_t>(n));
    return true;
  };
  size_t header_end;
  while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) {
      return false;
    }
  }
  const std::string_view head(buf.data(), header_end);
  if (head.size() < 12 || head.substr(0, 5) != "HTTP/") {
    return false;
  }
  status = std::atoi(std::string(head.substr(9, 3)).c_str());
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  size_t pos = header_end + 4;
  body.clear();
  if (const size_t cl = lower.find("\r\ncontent-length:"); cl != std::string::npos) {
    const size_t length = std::strtoull(lower.c_str() + cl + 17, nullptr, 10);
    while (buf.size() < pos + length) {
      if (!fill()) {
        return false;
      }
    }
    body.assign(buf, pos, length);
    buf.erase(0, pos + length);
    return true;
  }
  if (lower.find("\r\ntransfer-encoding: chunked") == std::string::npos) {
    return false;  // neither: not something kube-scheduler's server would send
  }
  for (;;) {
    size_t eol;
    while ((eol = buf.find("\r\n", pos)) == std::string::npos) {
      if (!fill()) {
        return false;
      }
    }
    const size_t size = std::strtoull(buf.c_str() + pos, nullptr, 16);
    pos = eol + 2;
    while (buf.size() < pos + size + 2) {
      if (!fill()) {
        return false;
      }
    }
    body.append(buf, pos, size);
    pos += size + 2;
    if (size == 0) {
      buf.erase(0, pos);
      return true;
    }
  }
}

// A reply the scheduler would treat as failed: "Error":"<non-empty>".
bool CarriesError(std::string_view body) {
  for (size_t at = body.find("\"Error\":\""); at != std::string_view::npos;
       at = body.find("\"Error\":\"", at + 1)) {
    if (at + 9 < body.size() && body[at + 9] != '"') {
      return true;
    }
  }
  return false;
}

double Percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) {
    return 0;
  }
  const size_t i = std::min(sorted.size() - 1,
                            static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[i];
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
  if (!IsLoopback(o.host)) {
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
    std::string buf;
    std::string reply;
    int fd = Connect(o);
    auto one = [&](bool record) {
      if (fd < 0) {
        fd = Connect(o);
        if (fd < 0) {
          return false;
        }
      }
      const auto t0 = Clock::now();
      int status = 0;
      const bool ok = WriteAll(fd, request) && ReadResponse(fd, buf, status, reply);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (!ok) {
        close(fd);
        fd = -1;
        buf.clear();
      }
      const bool failed = !ok || status != 200 || CarriesError(reply);
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
      return ok;
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
    if (fd >= 0) {
      close(fd);
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
      latencies_ms.size(), errors.load(), Percentile(latencies_ms, 50),
      Percentile(latencies_ms, 90), Percentile(latencies_ms, 99),
      latencies_ms.empty() ? 0.0 : latencies_ms.back(),
      wall > 0 ? static_cast<double>(latencies_ms.size()) / wall : 0.0, wall);
  if (!first_error.empty()) {
    std::fprintf(stderr, "schedext-load: first error: %s\n", first_error.c_str());
  }
  return latencies_ms.empty() ? 1 : 0;
}
