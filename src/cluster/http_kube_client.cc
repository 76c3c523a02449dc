// The HTTP KubeClient: connection pool, stale-connection retry, watches; the
// connections themselves are api_connection.h's. With it, the only files of
// the cluster layer that include httplib.h; the trust store, client
// certificate and host verification are OpenSSL's (client_tls.h).
#include "schedext/cluster/http_kube_client.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "cluster/api_connection.h"
#include "cluster/api_endpoint.h"
#include "cluster/client_tls.h"
#include "cluster/token_bucket.h"
#include "cluster/token_source.h"
#include "common/file.h"
#include "common/text.h"

namespace schedext::cluster {
namespace {

using Clock = std::chrono::steady_clock;

// Idle pooled connections kept for reuse; more concurrent calls open more.
constexpr size_t kMaxIdleClients = 8;
// Error bodies and single watch events larger than this are cut / refused.
constexpr size_t kMaxErrorBody = 64 * 1024;
constexpr size_t kMaxWatchLine = size_t{64} << 20;
// A response body is reserved at its Content-Length up to this size (a LIST
// page of 500 pods is ~2.8 MB); beyond it, the string grows as it is read.
constexpr uint64_t kMaxBodyReserve = uint64_t{64} << 20;

std::string FormatDuration(std::chrono::milliseconds d) {
  const long long ms = d.count();
  if (ms % 1000 == 0) {
    return std::to_string(ms / 1000) + "s";
  }
  if (ms > 1000) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1fs", static_cast<double>(ms) / 1000.0);
    return buf;
  }
  return std::to_string(ms) + "ms";
}

bool IsTimeout(httplib::Error error, Clock::duration elapsed, std::chrono::milliseconds limit) {
  if (error == httplib::Error::ConnectionTimeout) {
    return true;
  }
  // A read or write that hit its timeout; the library reports it as a plain
  // Read/Write error, so the elapsed time tells it from a reset.
  return (error == httplib::Error::Read || error == httplib::Error::Write) &&
         elapsed + std::chrono::milliseconds(50) >= limit;
}

class HttpKubeClient final : public KubeClient {
 public:
  HttpKubeClient(ClientConfig config, ApiEndpoint endpoint, std::shared_ptr<const ClientTls> tls)
      : config_(std::move(config)),
        endpoint_(std::move(endpoint)),
        tls_(std::move(tls)),
        token_(config_.token, config_.token_file, config_.token_file_check_interval),
        limiter_(config_.qps, config_.burst) {}

  ~HttpKubeClient() override { CancelWatches(); }

  // KubeClient
  StatusOr<HttpResult> Get(std::string_view path_and_query) override {
    return Send("GET", path_and_query, {}, {});
  }
  StatusOr<HttpResult> Post(std::string_view path, std::string_view body) override {
    return Send("POST", path, body, "application/json");
  }
  StatusOr<HttpResult> PostBy(std::string_view path, std::string_view body,
                              Clock::time_point not_after) override {
    return Send("POST", path, body, "application/json", not_after);
  }
  StatusOr<HttpResult> Patch(std::string_view path, std::string_view body,
                             std::string_view content_type) override {
    return Send("PATCH", path, body, content_type);
  }
  Status Watch(std::string_view path_and_query,
               const std::function<bool(std::string_view event)>& on_event) override;
  void CancelWatches() override;

 private:
  // A connection, configured (not connected yet); nullptr when the TLS
  // context cannot be set up.
  std::unique_ptr<Connection> NewConnection(std::chrono::milliseconds read_timeout);
  // The most recently used idle connection, unless it has been idle longer
  // than config_.idle_connection_timeout (then every idle one is dropped, as
  // they are older still), else a new one.
  std::unique_ptr<Connection> Acquire();
  void Release(std::unique_ptr<Connection> connection);

  httplib::Headers Headers(const std::string& token) const {
    httplib::Headers h;
    h.emplace("User-Agent", config_.user_agent);
    h.emplace("Accept", "application/json");
    if (!token.empty()) {
      h.emplace("Authorization", "Bearer " + token);
    }
    return h;
  }

  // Waits for the rate limiter's token, unless its turn comes after
  // `not_after` (then nothing is sent: kUnavailable).
  StatusOr<HttpResult> Send(const char* method, std::string_view target, std::string_view body,
                            std::string_view content_type,
                            Clock::time_point not_after = Clock::time_point::max());
  // One attempt. On a transport failure, `stale` says whether Go's rule
  // allows one retry on a fresh connection: the request went out on a
  // connection kept from an earlier request (no new socket was opened for
  // it), failed reading or writing before any byte of the response arrived,
  // and not by a timeout — the server closed an idle connection as the
  // request was sent.
  StatusOr<HttpResult> SendOnce(Connection& connection, const char* method,
                                const std::string& target, std::string_view body,
                                std::string_view content_type, const std::string& token,
                                bool& stale);
  Status TransportError(httplib::Error error, Clock::duration elapsed,
                        std::chrono::milliseconds read_timeout, const char* method,
                        const std::string& target) const;

  const ClientConfig config_;
  const ApiEndpoint endpoint_;
  const std::shared_ptr<const ClientTls> tls_;
  TokenSource token_;
  TokenBucket limiter_;

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by pool_mu_; newest last

  std::atomic<bool> cancelled_{false};
  std::mutex watch_mu_;
  std::vector<httplib::ClientImpl*> watches_;  // running watch connections; guarded
};

std::unique_ptr<Connection> HttpKubeClient::NewConnection(std::chrono::milliseconds read_timeout) {
  auto connection = std::make_unique<Connection>();
  std::unique_ptr<httplib::ClientImpl> client;
  if (endpoint_.tls) {
    std::unique_ptr<httplib::SSLClient> ssl =
        NewTlsClient(endpoint_.host, endpoint_.port, &connection->probed);
    SSL_CTX* ctx = ssl->ssl_context();
    if (ctx == nullptr) {
      return nullptr;
    }
    // Verification is OpenSSL's, configured here, not the library's: with its
    // own check on, 0.11.4 adds the system trust store to ours
    // (SSL_CTX_set_default_verify_paths in load_certs) and accepts a CN match
    // when no SAN matches.
    ssl->enable_server_certificate_verification(false);
    if (!ApplyClientTls(ctx, *tls_, !config_.insecure_skip_tls_verify, endpoint_.host,
                        endpoint_.host_is_ip)) {
      return nullptr;
    }
    client = std::move(ssl);
  } else {
    client = NewPlainClient(endpoint_.host, endpoint_.port, &connection->probed);
  }
  ConnectionProbe* probe = &connection->probed->probe;
  client->set_socket_options([probe](socket_t) { ++probe->connects; });
  client->set_tcp_nodelay(true);
  client->set_keep_alive(true);
  client->set_follow_location(false);
  client->set_url_encode(false);  // targets come escaped
  const auto timeout = config_.timeout;
  client->set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  client->set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(read_timeout));
  client->set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  connection->http = std::move(client);
  return connection;
}

std::unique_ptr<Connection> HttpKubeClient::Acquire() {
  std::vector<std::unique_ptr<Connection>> expired;  // closed outside the lock
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!idle_.empty()) {
      if (Clock::now() - idle_.back()->idle_since <= config_.idle_connection_timeout) {
        std::unique_ptr<Connection> c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
      expired.swap(idle_);
    }
  }
  expired.clear();
  return NewConnection(config_.timeout);
}

void HttpKubeClient::Release(std::unique_ptr<Connection> connection) {
  connection->idle_since = Clock::now();
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (idle_.size() < kMaxIdleClients && config_.idle_connection_timeout.count() > 0) {
    idle_.push_back(std::move(connection));
  }
  // else: destroyed here, closing its connection
}

Status HttpKubeClient::TransportError(httplib::Error error, Clock::duration elapsed,
                                      std::chrono::milliseconds read_timeout, const char* method,
                                      const std::string& target) const {
  const std::string where = " (" + std::string(method) + " " + endpoint_.url + target + ")";
  if (IsTimeout(error, elapsed, error == httplib::Error::ConnectionTimeout ? config_.timeout
                                                                            : read_timeout)) {
    const auto limit =
        error == httplib::Error::ConnectionTimeout ? config_.timeout : read_timeout;
    return DeadlineExceededError(
        std::string(error == httplib::Error::ConnectionTimeout ? "connect timeout after "
                                                               : "timeout after ") +
        FormatDuration(limit) + where);
  }
  std::string what;
  switch (error) {
    case httplib::Error::Connection:
      what = "cannot connect to the API server";
      break;
    case httplib::Error::SSLConnection:
      what = "TLS handshake failed";
      if (!LastVerifyError().empty()) {
        what += ": server certificate verification failed: " + LastVerifyError();
      }
      break;
    case httplib::Error::SSLServerVerification:
      what = "server certificate verification failed";
      break;
    case httplib::Error::Read:
      what = "connection closed or reset while reading the response";
      break;
    case httplib::Error::Write:
      what = "connection closed or reset while sending the request";
      break;
    default:
      what = "transport error: " + httplib::to_string(error);
      break;
  }
  return UnavailableError(what + where);
}

StatusOr<HttpResult> HttpKubeClient::SendOnce(Connection& connection, const char* method,
                                              const std::string& target, std::string_view body,
                                              std::string_view content_type,
                                              const std::string& token, bool& stale) {
  httplib::Request req;
  req.method = method;
  req.path = target;
  req.headers = Headers(token);
  if (!content_type.empty()) {
    req.headers.emplace("Content-Type", std::string(content_type));
    req.body = std::string(body);
  }
  // The body is collected here rather than in the library's Response, which
  // appends 4 KB at a time to an empty string (a doubling series of copies
  // of a multi-MB LIST page): reserved once the Content-Length is known.
  std::string response_body;
  req.response_handler = [&response_body](const httplib::Response& response) {
    const uint64_t length = response.get_header_value<uint64_t>("Content-Length");
    response_body.reserve(static_cast<size_t>(std::min(length, kMaxBodyReserve)));
    return true;
  };
  req.content_receiver = [&response_body](const char* data, size_t length, uint64_t, uint64_t) {
    response_body.append(data, length);
    return true;
  };
  ClearVerifyError();
  ConnectionProbe& probe = connection.probed->probe;
  const bool was_open = connection.probed->SocketOpen();
  const uint64_t connects = probe.connects;
  probe.response_bytes = 0;
  const Clock::time_point start = Clock::now();
  httplib::Result result = connection.http->send(req);
  if (result.error() != httplib::Error::Success || !result) {
    const httplib::Error error = result.error();
    const Clock::duration elapsed = Clock::now() - start;
    stale = was_open && probe.connects == connects && probe.response_bytes == 0 &&
            (error == httplib::Error::Read || error == httplib::Error::Write) &&
            !IsTimeout(error, elapsed, config_.timeout);
    return TransportError(error, elapsed, config_.timeout, method, target);
  }
  HttpResult out;
  out.status = result->status;
  out.body = std::move(response_body);
  return out;
}

StatusOr<HttpResult> HttpKubeClient::Send(const char* method, std::string_view target_view,
                                          std::string_view body, std::string_view content_type,
                                          Clock::time_point not_after) {
  if (not_after == Clock::time_point::max()) {
    limiter_.Wait(nullptr);
  } else if (!limiter_.WaitUntil(not_after)) {
    return UnavailableError(std::string(kNotSentByDeadline) + " (" + method + " " +
                            std::string(target_view) + ")");
  }
  const std::string target(target_view);
  bool retried_auth = false;
  bool retried_stale = false;
  bool fresh = false;
  for (;;) {
    std::unique_ptr<Connection> connection = fresh ? NewConnection(config_.timeout) : Acquire();
    fresh = false;
    if (!connection) {
      return InternalError("create a connection to " + endpoint_.url + ": TLS setup failed");
    }
    StatusOr<HttpResult> result = InternalError("unreachable");
    bool stale = false;
    try {
      result = SendOnce(*connection, method, target, body, content_type, token_.Get(), stale);
    } catch (const std::exception& e) {
      return InternalError(std::string(method) + " " + target + ": " + e.what());
    }
    if (!result.ok()) {
      // The connection is dropped with `connection`. A reused one the server
      // closed while idle: once more on a new connection, whatever the method
      // (the server did not answer, so it most likely never read the request;
      // if it did, a repeated Binding answers 409 and KubeBinder reads the
      // pod back, a repeated PATCH writes the same annotations).
      if (stale && !retried_stale) {
        retried_stale = true;
        fresh = true;
        spdlog::debug(
            "API request on a reused connection failed ({}); retrying once on a new "
            "connection",
            result.status().message());
        continue;
      }
      return result;
    }
    Release(std::move(connection));
    if (result->status == 401 && !retried_auth && token_.Reload()) {
      retried_auth = true;  // a rotated token: one more try with it
      continue;
    }
    return result;
  }
}

Status HttpKubeClient::Watch(std::string_view path_and_query,
                             const std::function<bool(std::string_view event)>& on_event) {
  if (cancelled_.load()) {
    return OkStatus();
  }
  if (!limiter_.Wait(&cancelled_)) {
    return OkStatus();
  }
  const std::string target(path_and_query);
  // A watch may be idle for as long as the server keeps it open.
  std::chrono::milliseconds read_timeout = config_.watch_idle_timeout;
  if (const size_t at = target.find("timeoutSeconds="); at != std::string::npos) {
    long long seconds = 0;
    const char* begin = target.data() + at + 15;
    auto [ptr, ec] = std::from_chars(begin, target.data() + target.size(), seconds);
    if (ec == std::errc() && seconds > 0) {
      read_timeout = std::chrono::seconds(seconds + 30);
    }
  }

  bool retried_auth = false;
  for (;;) {
    std::unique_ptr<Connection> connection = NewConnection(read_timeout);
    if (!connection) {
      return InternalError("create a connection to " + endpoint_.url + ": TLS setup failed");
    }
    httplib::ClientImpl* client = connection->http.get();
    // A CancelWatches() that comes before the socket exists is caught here:
    // the library calls this on the new socket before connecting.
    client->set_socket_options([this](socket_t sock) {
      if (cancelled_.load()) {
        ::shutdown(sock, SHUT_RDWR);
      }
    });
    {
      std::lock_guard<std::mutex> lock(watch_mu_);
      if (cancelled_.load()) {
        return OkStatus();
      }
      watches_.push_back(client);
    }

    int status = 0;
    std::string error_body;
    std::string partial;
    bool stopped_by_callback = false;
    bool oversize = false;
    httplib::Headers headers = Headers(token_.Get());
    ClearVerifyError();
    const Clock::time_point start = Clock::now();
    httplib::Result result(nullptr, httplib::Error::Unknown);
    try {
      result = client->Get(
          target, headers,
          [&](const httplib::Response& response) {
            status = response.status;
            return true;
          },
          [&](const char* data, size_t length) {
            if (cancelled_.load()) {
              return false;
            }
            if (status != 200) {
              error_body.append(data, std::min(length, kMaxErrorBody - std::min(kMaxErrorBody,
                                                                                 error_body.size())));
              return true;
            }
            size_t scan = partial.size();
            partial.append(data, length);
            size_t line_start = 0;
            for (;;) {
              const size_t nl = partial.find('\n', scan);
              if (nl == std::string::npos) {
                break;
              }
              std::string_view line(partial.data() + line_start, nl - line_start);
              if (!line.empty() && line.back() == '\r') {
                line.remove_suffix(1);
              }
              if (!line.empty() && !on_event(line)) {
                stopped_by_callback = true;
                return false;
              }
              line_start = nl + 1;
              scan = line_start;
            }
            partial.erase(0, line_start);
            if (partial.size() > kMaxWatchLine) {
              oversize = true;
              return false;
            }
            return true;
          });
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(watch_mu_);
      watches_.erase(std::remove(watches_.begin(), watches_.end(), client), watches_.end());
      return InternalError("watch " + target + ": " + e.what());
    }
    {
      std::lock_guard<std::mutex> lock(watch_mu_);
      watches_.erase(std::remove(watches_.begin(), watches_.end(), client), watches_.end());
    }
    if (cancelled_.load() || stopped_by_callback) {
      return OkStatus();
    }
    if (oversize) {
      return UnavailableError("watch " + target + ": an event exceeds " +
                              std::to_string(kMaxWatchLine) + " bytes");
    }
    if (status != 0 && status != 200) {
      if (status == 401 && !retried_auth && token_.Reload()) {
        retried_auth = true;
        continue;
      }
      std::string message = "watch " + target + ": HTTP " + std::to_string(status);
      if (!error_body.empty()) {
        message += ": " + error_body;
      }
      if (status == 410 || (status >= 400 && status < 500 && status != 429)) {
        return FailedPreconditionError(message);
      }
      return UnavailableError(message);
    }
    if (result.error() == httplib::Error::Success) {
      return OkStatus();  // the server ended the stream
    }
    Status error = TransportError(result.error(), Clock::now() - start, read_timeout, "GET", target);
    std::string message = "watch stream broken: " + error.message();
    if (!partial.empty()) {
      message += " (an incomplete event of " + std::to_string(partial.size()) +
                 " bytes was dropped)";
    }
    return UnavailableError(message);
  }
}

void HttpKubeClient::CancelWatches() {
  cancelled_.store(true);
  limiter_.Wake();
  std::lock_guard<std::mutex> lock(watch_mu_);
  for (httplib::ClientImpl* client : watches_) {
    // Shuts the socket down while a read is in flight (the blocked recv
    // returns at once); the watch thread then closes it.
    client->stop();
  }
}

}  // namespace

StatusOr<std::unique_ptr<KubeClient>> NewHttpKubeClient(const ClientConfig& config) {
  StatusOr<ApiEndpoint> endpoint = ParseApiServer(config.server);
  if (!endpoint.ok()) {
    return endpoint.status();
  }
  if (config.qps > 0 && config.burst < 1) {
    return InvalidArgumentError("rate limit: burst must be at least 1 when qps is set");
  }
  if (config.timeout.count() <= 0) {
    return InvalidArgumentError("timeout must be positive");
  }
  std::shared_ptr<const ClientTls> tls = std::make_shared<const ClientTls>();
  if (endpoint->tls) {
    StatusOr<std::shared_ptr<const ClientTls>> loaded = LoadClientTls(config);
    if (!loaded.ok()) {
      return loaded.status();
    }
    tls = std::move(loaded).value();
  }
  ClientConfig copy = config;
  if (!copy.token_file.empty() && copy.token.empty()) {
    StatusOr<std::string> token = ReadFile(copy.token_file, "token file");
    if (!token.ok()) {
      return token.status();
    }
    copy.token = std::string(TrimSpace(*token));
  }
  return std::unique_ptr<KubeClient>(
      std::make_unique<HttpKubeClient>(std::move(copy), std::move(endpoint).value(), tls));
}

}  // namespace schedext::cluster
