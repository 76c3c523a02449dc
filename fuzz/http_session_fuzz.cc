// Fuzz target: one connection of the listener (src/server/http_session.h) as a
// client drives it. The input is every byte the client sends; it goes, in
// pieces, through a connected socket pair into a real Session: its buffer
// management, head and body reads, chunked decoding, pipelining, 100-continue,
// refusals with their lingering close, the Router and a small ExtenderService
// (one cheap policy, no cluster, no binder), the reply writes. The client half
// closes after its last byte and reads everything until the server closes.
//
// Checks, beyond sanitizer reports and libFuzzer's time and memory limits:
// * the connection ends: the io_context runs out of work and the Session is
//   destroyed (no reference cycle, no operation left pending);
// * nothing is answered unless a head was sent (a blank line) or the bytes
//   exceeded the header limit (431);
// * what came back is a sequence of well-formed HTTP/1.1 replies: status line,
//   header fields, a Content-Length the body matches (or no body, for HEAD),
//   interim 100s only as "100 Continue", and nothing after a reply with
//   `Connection: close`; and it is bounded.
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "schedext/config/config.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/registry.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "server/http_session.h"

namespace schedext::fuzz {
namespace {

namespace http = server::http;
namespace net = http::net;
namespace beast = http::beast;
using tcp = net::ip::tcp;
using local = net::local::stream_protocol;

// Small limits, so that fuzz-sized inputs reach 413 and 431.
constexpr size_t kMaxHeaderBytes = 2048;
constexpr size_t kMaxBodyBytes = 16 << 10;
// Replies are small: error bodies, filter results of at most a few nodes.
constexpr size_t kMaxReplyBytes = size_t{4} << 20;

constexpr std::string_view kConfig = R"(
profiles:
  - name: default
    policies:
      - name: NodeHealth
)";

// Built once per process: what HttpServer builds at Bind().
struct Fixture {
  Fixture() {
    spdlog::set_level(spdlog::level::off);
    policy::Registry registry;
    SCHEDEXT_FUZZ_CHECK(policy::RegisterBuiltinPolicies(registry).ok(), "policies");
    auto config = config::LoadConfigText(kConfig, "fuzz");
    SCHEDEXT_FUZZ_CHECK(config.ok(), config.status().ToString());
    auto profile = pipeline::Profile::Build(config->profiles[0], registry, "profiles[0]");
    SCHEDEXT_FUZZ_CHECK(profile.ok(), profile.status().ToString());
    metrics = std::make_unique<server::Metrics>(std::vector<std::string>{"default"});
    service = std::make_unique<server::ExtenderService>(
        std::vector<std::shared_ptr<const pipeline::Profile>>{std::move(profile).value()}, 0,
        nullptr, nullptr, metrics.get());
    options.version = "fuzz";
    options.server.max_header_bytes = kMaxHeaderBytes;
    options.server.max_body_bytes = kMaxBodyBytes;
    options.server.keep_buffer_bytes = 64 << 10;
    options.server.bind_threads = 1;
    options.server.max_pending_binds = 4;
    options.server.keep_alive_max_count = 32;
    core = std::make_unique<http::ServerCore>(options.server, *service, metrics.get(), options);
  }

  net::io_context ioc{1};
  std::unique_ptr<server::Metrics> metrics;
  std::unique_ptr<server::ExtenderService> service;
  server::HttpServerOptions options;
  std::unique_ptr<http::ServerCore> core;
};

// Deterministic write sizes from the input, so a failure replays the same way.
class Pieces {
 public:
  explicit Pieces(uint64_t seed) : state_(seed | 1) {}
  size_t Next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return 1 + static_cast<size_t>(state_ % 97);
  }

 private:
  uint64_t state_;
};

uint64_t Seed(std::string_view input) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : input) {
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return h;
}

// The client's end: writes the input in pieces, then half-closes; reads all
// that comes back until the server closes.
class Client {
 public:
  Client(local::socket socket, std::string_view input, uint64_t seed)
      : socket_(std::move(socket)), input_(input), pieces_(seed) {}

  void Start() {
    WriteNext();
    ReadNext();
  }
  const std::string& received() const { return received_; }

 private:
  void WriteNext() {
    if (sent_ == input_.size()) {
      beast::error_code ec;
      socket_.shutdown(net::socket_base::shutdown_send, ec);
      return;
    }
    const size_t n = std::min(pieces_.Next(), input_.size() - sent_);
    net::async_write(socket_, net::buffer(input_.data() + sent_, n),
                     [this, n](beast::error_code ec, size_t) {
                       if (ec) {
                         return;  // the server closed early: a refusal
                       }
                       sent_ += n;
                       WriteNext();
                     });
  }

  void ReadNext() {
    socket_.async_read_some(net::buffer(buffer_), [this](beast::error_code ec, size_t n) {
      received_.append(buffer_.data(), n);
      SCHEDEXT_FUZZ_CHECK(received_.size() <= kMaxReplyBytes,
                          "replies over " + std::to_string(kMaxReplyBytes) + " bytes");
      if (ec) {
        beast::error_code ignored;
        socket_.close(ignored);
        return;
      }
      ReadNext();
    });
  }

  local::socket socket_;
  std::string_view input_;
  Pieces pieces_;
  size_t sent_ = 0;
  std::array<char, 16 << 10> buffer_;
  std::string received_;
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The Content-Length of a reply head, or -1.
int64_t ContentLength(std::string_view head) {
  constexpr std::string_view kName = "\r\nContent-Length: ";
  const size_t at = head.find(kName);
  if (at == std::string_view::npos) {
    return -1;
  }
  int64_t value = 0;
  size_t i = at + kName.size();
  if (i >= head.size() || head[i] < '0' || head[i] > '9') {
    return -1;
  }
  for (; i < head.size() && head[i] >= '0' && head[i] <= '9'; ++i) {
    value = value * 10 + (head[i] - '0');
  }
  return head.substr(i, 2) == "\r\n" ? value : -1;
}

void CheckReplies(std::string_view input, std::string_view out) {
  if (out.empty()) {
    return;
  }
  SCHEDEXT_FUZZ_CHECK(
      input.find("\r\n\r\n") != std::string_view::npos || input.size() > kMaxHeaderBytes,
      "a reply without a request head");
  while (!out.empty()) {
    SCHEDEXT_FUZZ_CHECK(StartsWith(out, "HTTP/1.1 ") && out.size() >= 12,
                        "not a status line: " + std::string(out.substr(0, 40)));
    const std::string_view code = out.substr(9, 3);
    const int status = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
    SCHEDEXT_FUZZ_CHECK(code.find_first_not_of("0123456789") == std::string_view::npos &&
                            status >= 100 && status <= 599,
                        "status " + std::string(code));
    const size_t end = out.find("\r\n\r\n");
    SCHEDEXT_FUZZ_CHECK(end != std::string_view::npos, "reply head without its end");
    const std::string_view head = out.substr(0, end + 2);
    out.remove_prefix(end + 4);
    if (status == 100) {
      SCHEDEXT_FUZZ_CHECK(head == "HTTP/1.1 100 Continue\r\n", std::string(head));
      continue;
    }
    const int64_t length = ContentLength(head);
    SCHEDEXT_FUZZ_CHECK(length >= 0, "reply without Content-Length: " + std::string(head));
    // A HEAD reply announces the GET body and carries none: what follows is
    // the next reply or the end. That is tried first: no body of this server
    // starts with a status line (they are JSON, Prometheus text or "ok"),
    // while the next reply's body may well hold "HTTP/1.1 " exactly
    // Content-Length bytes on (an error message quoting a header did).
    const bool next_at_head_end = out.empty() || StartsWith(out, "HTTP/1.1 ");
    const bool next_at_body_end =
        static_cast<size_t>(length) <= out.size() &&
        (out.size() == static_cast<size_t>(length) ||
         StartsWith(out.substr(static_cast<size_t>(length)), "HTTP/1.1 "));
    SCHEDEXT_FUZZ_CHECK(next_at_body_end || next_at_head_end,
                        "reply body does not match Content-Length " + std::to_string(length));
    if (!next_at_head_end) {
      out.remove_prefix(static_cast<size_t>(length));
    }
    if (head.find("\r\nConnection: close\r\n") != std::string_view::npos) {
      SCHEDEXT_FUZZ_CHECK(out.empty(), "bytes after a Connection: close reply");
    }
  }
}

}  // namespace
}  // namespace schedext::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedext::fuzz;
  // Never destroyed: the pool's threads and the io_context live as long as
  // the process, as a server's do.
  static Fixture* const fixture = new Fixture;
  const std::string_view input = schedext::fuzz::AsText(data, size);
  const uint64_t seed = Seed(input);

  local::socket client_end(fixture->ioc);
  local::socket server_end(fixture->ioc);
  net::local::connect_pair(client_end, server_end);
  // A Session reads and writes a TCP stream; over a socket pair the TCP-only
  // options it sets (TCP_NODELAY) fail and are ignored, as on any error.
  tcp::socket socket(fixture->ioc);
  socket.assign(tcp::v4(), server_end.release());
  fixture->core->connections.fetch_add(1);
  // One input in eight goes to the status listener's routes.
  std::make_shared<schedext::server::http::Session<beast::tcp_stream>>(
      *fixture->core, fixture->ioc, beast::tcp_stream(std::move(socket)),
      /*status_only=*/seed % 8 == 0)
      ->Start();
  Client client(std::move(client_end), input, seed);
  client.Start();
  fixture->ioc.run();
  fixture->ioc.restart();

  SCHEDEXT_FUZZ_CHECK(fixture->core->connections.load() == 0,
                      "the session outlived its connection");
  CheckReplies(input, client.received());
  return 0;
}
