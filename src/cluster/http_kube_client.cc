// The HTTP KubeClient. The only file of the cluster layer that includes
// httplib.h; OpenSSL is used directly for the trust store, the client
// certificate and host verification.
#include "schedext/cluster/http_kube_client.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>
#include <spdlog/spdlog.h>

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
// Plain connections read the socket in chunks of this size (the library's
// own reads are 4 KB, each after a poll).
constexpr size_t kReadChunk = 256 * 1024;

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

StatusOr<std::string> ReadWholeFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgumentError(std::string(what) + ": cannot read \"" + path + "\"");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TrimSpace(std::string_view s) {
  const char* ws = " \t\r\n\v\f";
  const size_t begin = s.find_first_not_of(ws);
  if (begin == std::string_view::npos) {
    return std::string();
  }
  return std::string(s.substr(begin, s.find_last_not_of(ws) - begin + 1));
}

// --- OpenSSL material -------------------------------------------------------

struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct StoreFree {
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using StorePtr = std::unique_ptr<X509_STORE, StoreFree>;

std::vector<X509Ptr> ParseCerts(const std::string& pem) {
  std::vector<X509Ptr> out;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) {
    return out;
  }
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    out.emplace_back(cert);
  }
  BIO_free(bio);
  ERR_clear_error();  // the loop ends on a "no start line" error
  return out;
}

PkeyPtr ParseKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) {
    return nullptr;
  }
  PkeyPtr key(PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  ERR_clear_error();
  return key;
}

// The reason the last TLS handshake on this thread failed verification. The
// handshake runs on the calling thread (inside the library's send), so a
// thread_local carries the reason from the callback to the error message.
thread_local std::string t_verify_error;

int VerifyCallback(int preverify_ok, X509_STORE_CTX* ctx) {
  if (preverify_ok != 1) {
    const int err = X509_STORE_CTX_get_error(ctx);
    t_verify_error = X509_verify_cert_error_string(err);
  }
  return preverify_ok;
}

// Immutable after NewHttpKubeClient; shared by every connection.
struct TlsMaterial {
  StorePtr store;  // null: the system default paths
  X509Ptr client_cert;
  std::vector<X509Ptr> client_chain;
  PkeyPtr client_key;
};

struct Endpoint {
  bool tls = true;
  std::string host;  // without brackets
  int port = 443;
  bool host_is_ip = false;
  std::string url;  // scheme://authority, for messages
};

StatusOr<Endpoint> ParseServer(const std::string& server) {
  Endpoint e;
  std::string_view rest = server;
  if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
  } else if (rest.rfind("http://", 0) == 0) {
    e.tls = false;
    e.port = 80;
    rest.remove_prefix(7);
  } else {
    return InvalidArgumentError("server \"" + server + "\": expected https://host[:port]");
  }
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    if (rest.substr(slash) != "/") {
      return InvalidArgumentError("server \"" + server +
                                  "\": a path after host:port is not supported");
    }
    rest = rest.substr(0, slash);
  }
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("server \"" + server + "\": unterminated IPv6 literal");
    }
    e.host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return InvalidArgumentError("server \"" + server + "\": bad port");
      }
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos) {
      if (rest.find(':') != colon) {
        return InvalidArgumentError("server \"" + server +
                                    "\": an IPv6 address must be in brackets");
      }
      e.host = std::string(rest.substr(0, colon));
      port_text = rest.substr(colon + 1);
    } else {
      e.host = std::string(rest);
    }
  }
  if (e.host.empty()) {
    return InvalidArgumentError("server \"" + server + "\": no host");
  }
  if (!port_text.empty()) {
    int port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port <= 0 ||
        port > 65535) {
      return InvalidArgumentError("server \"" + server + "\": bad port");
    }
    e.port = port;
  }
  unsigned char buf[sizeof(in6_addr)];
  e.host_is_ip = inet_pton(AF_INET, e.host.c_str(), buf) == 1 ||
                 inet_pton(AF_INET6, e.host.c_str(), buf) == 1;
  e.url = std::string(e.tls ? "https://" : "http://") +
          (e.host.find(':') != std::string::npos ? "[" + e.host + "]" : e.host) + ":" +
          std::to_string(e.port);
  return e;
}

// --- Token ------------------------------------------------------------------

// The bearer token, from the config or a file that rotates.
class TokenSource {
 public:
  TokenSource(std::string token, std::string file, std::chrono::milliseconds interval)
      : token_(std::move(token)), file_(std::move(file)), interval_(interval) {}

  bool file_backed() const { return !file_.empty(); }

  // The token to send now; re-reads the file if the interval has passed and
  // its mtime or size changed.
  std::string Get() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!file_.empty()) {
      const Clock::time_point now = Clock::now();
      if (!checked_ || now - last_check_ >= interval_) {
        last_check_ = now;
        checked_ = true;
        std::error_code ec;
        const auto mtime = std::filesystem::last_write_time(file_, ec);
        const auto size = ec ? 0 : std::filesystem::file_size(file_, ec);
        if (!ec && (!stat_known_ || mtime != mtime_ || size != size_)) {
          if (ReloadLocked()) {
            mtime_ = mtime;
            size_ = size;
            stat_known_ = true;
          }
        }
      }
    }
    return token_;
  }

  // Re-reads the file now (after a 401). True when the token changed.
  bool Reload() {
    std::lock_guard<std::mutex> lock(mu_);
    if (file_.empty()) {
      return false;
    }
    const std::string before = token_;
    std::error_code ec;
    const auto mtime = std::filesystem::last_write_time(file_, ec);
    const auto size = ec ? 0 : std::filesystem::file_size(file_, ec);
    if (ReloadLocked() && !ec) {
      mtime_ = mtime;
      size_ = size;
      stat_known_ = true;
    }
    last_check_ = Clock::now();
    checked_ = true;
    return token_ != before;
  }

 private:
  // Keeps the old token when the file is missing or empty for a moment (the
  // kubelet swaps it atomically, but be lenient).
  bool ReloadLocked() {
    std::ifstream in(file_, std::ios::binary);
    if (!in) {
      return false;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string token = TrimSpace(ss.str());
    if (token.empty()) {
      return false;
    }
    token_ = std::move(token);
    return true;
  }

  std::mutex mu_;
  std::string token_;
  const std::string file_;
  const std::chrono::milliseconds interval_;
  bool checked_ = false;
  Clock::time_point last_check_;
  bool stat_known_ = false;
  std::filesystem::file_time_type mtime_;
  std::uintmax_t size_ = 0;
};

// --- Rate limiter -----------------------------------------------------------

// golang.org/x/time/rate's reservation model, as client-go's
// NewTokenBucketRateLimiter uses it: `burst` tokens at start, `qps` refilled
// per second, a caller takes one token, and when none is left it reserves the
// next one (the count goes negative) and waits until its time.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst)
      : qps_(qps), burst_(burst), tokens_(static_cast<double>(burst)), last_(Clock::now()) {}

  bool enabled() const { return qps_ > 0; }

  // Waits for a token. Returns early (false) when `cancelled` becomes true
  // and is notified through Wake().
  bool Wait(const std::atomic<bool>* cancelled) {
    if (!enabled()) {
      return true;
    }
    std::unique_lock<std::mutex> lock(mu_);
    const Clock::time_point now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
    last_ = now;
    tokens_ -= 1.0;
    if (tokens_ >= 0) {
      return true;
    }
    const auto wait = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(-tokens_ / qps_));
    const Clock::time_point until = now + wait;
    cv_.wait_until(lock, until, [&] { return cancelled != nullptr && cancelled->load(); });
    return cancelled == nullptr || !cancelled->load();
  }

  void Wake() {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }

 private:
  const double qps_;
  const int burst_;
  std::mutex mu_;
  std::condition_variable cv_;
  double tokens_;
  Clock::time_point last_;
};

// --- Connections ------------------------------------------------------------

// What the stale-connection retry needs to know about a connection's last
// request: whether the library opened a new socket for it, and whether any
// byte of the response arrived.
struct ConnectionProbe {
  uint64_t connects = 0;        // sockets opened (counted by the socket-options hook)
  uint64_t response_bytes = 0;  // plain: bytes read; TLS: application-data records
};

// A Stream that counts what is read through it and reads the socket in
// large chunks: the library asks for 4 KB at a time (a poll and a recv each,
// two syscalls per 4 KB of a LIST page); served from `buffer` instead, a
// 2.8 MB page takes ~11 recv calls when the data is there. Bytes are only
// read ahead within the current response's process_socket call, as the
// library's own 4 KB buffer does (no pipelining, so nothing follows it).
class CountingStream final : public httplib::Stream {
 public:
  CountingStream(httplib::Stream& inner, ConnectionProbe& probe, std::vector<char>& buffer)
      : inner_(inner), probe_(probe), buffer_(buffer) {}

  bool is_readable() const override { return begin_ < end_ || inner_.is_readable(); }
  bool is_writable() const override { return inner_.is_writable(); }
  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_) {
      if (buffer_.size() < kReadChunk) {
        buffer_.resize(kReadChunk);
      }
      const ssize_t n = inner_.read(buffer_.data(), buffer_.size());
      if (n <= 0) {
        return n;
      }
      probe_.response_bytes += static_cast<uint64_t>(n);
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    const size_t take = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_.data() + begin_, take);
    begin_ += take;
    return static_cast<ssize_t>(take);
  }
  ssize_t write(const char* ptr, size_t size) override { return inner_.write(ptr, size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    inner_.get_remote_ip_and_port(ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    inner_.get_local_ip_and_port(ip, port);
  }
  socket_t socket() const override { return inner_.socket(); }

 private:
  httplib::Stream& inner_;
  ConnectionProbe& probe_;
  std::vector<char>& buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

// The library's client with a probe. `SocketOpen()` before a request says
// whether it would go out on a connection kept from an earlier one.
class Probed {
 public:
  virtual ~Probed() = default;
  virtual bool SocketOpen() const = 0;
  ConnectionProbe probe;
};

// Plain HTTP: the library's own socket stream (process_client_socket is what
// ClientImpl::process_socket calls), seen through a CountingStream.
class PlainClient final : public httplib::ClientImpl, public Probed {
 public:
  PlainClient(const std::string& host, int port) : httplib::ClientImpl(host, port) {}
  bool SocketOpen() const override {
    std::lock_guard<std::mutex> lock(socket_mutex_);
    return socket_.is_open();
  }

 private:
  bool process_socket(const Socket& socket,
                      std::function<bool(httplib::Stream& strm)> callback) override {
    const auto wrapped = [&](httplib::Stream& strm) {
      CountingStream counted(strm, probe, read_buffer_);
      return callback(counted);
    };
    return httplib::detail::process_client_socket(socket.sock, read_timeout_sec_,
                                                  read_timeout_usec_, write_timeout_sec_,
                                                  write_timeout_usec_, wrapped);
  }

  std::vector<char> read_buffer_;  // kept for the connection's next requests
};

// TLS: SSLClient keeps its stream private, so OpenSSL's message callback
// counts decrypted application-data records instead (a close_notify alert or
// a post-handshake session ticket is not a response byte).
void OnTlsMessage(int write_p, int /*version*/, int content_type, const void* buf, size_t len,
                  SSL* ssl, void* arg) {
  if (write_p != 0 || arg == nullptr || len < 1) {
    return;
  }
  const unsigned char type = *static_cast<const unsigned char*>(buf);
  // TLS 1.3 hides the real type inside the encrypted record (reported once
  // decrypted); TLS 1.2 shows it in the record header.
  const bool app_data =
      SSL_version(ssl) == TLS1_3_VERSION
          ? content_type == SSL3_RT_INNER_CONTENT_TYPE && type == SSL3_RT_APPLICATION_DATA
          : content_type == SSL3_RT_HEADER && type == SSL3_RT_APPLICATION_DATA;
  if (app_data) {
    ++static_cast<ConnectionProbe*>(arg)->response_bytes;
  }
}

class TlsClient final : public httplib::SSLClient, public Probed {
 public:
  TlsClient(const std::string& host, int port) : httplib::SSLClient(host, port) {
    if (SSL_CTX* ctx = ssl_context()) {
      SSL_CTX_set_msg_callback(ctx, OnTlsMessage);
      SSL_CTX_set_msg_callback_arg(ctx, &probe);
    }
  }
  bool SocketOpen() const override {
    std::lock_guard<std::mutex> lock(socket_mutex_);
    return socket_.is_open();
  }
};

// A pooled connection.
struct Connection {
  std::unique_ptr<httplib::ClientImpl> http;
  Probed* probed = nullptr;  // the same object as `http`
  Clock::time_point idle_since;
};

// --- The client -------------------------------------------------------------

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
  HttpKubeClient(ClientConfig config, Endpoint endpoint, std::shared_ptr<const TlsMaterial> tls)
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

  StatusOr<HttpResult> Send(const char* method, std::string_view target, std::string_view body,
                            std::string_view content_type);
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
  const Endpoint endpoint_;
  const std::shared_ptr<const TlsMaterial> tls_;
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
    auto ssl = std::make_unique<TlsClient>(endpoint_.host, endpoint_.port);
    connection->probed = ssl.get();
    SSL_CTX* ctx = ssl->ssl_context();
    if (ctx == nullptr) {
      return nullptr;
    }
    // Verification is OpenSSL's, configured here, not the library's: with its
    // own check on, 0.11.4 adds the system trust store to ours
    // (SSL_CTX_set_default_verify_paths in load_certs) and accepts a CN match
    // when no SAN matches.
    ssl->enable_server_certificate_verification(false);
    if (!config_.insecure_skip_tls_verify) {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, VerifyCallback);
      if (tls_->store) {
        SSL_CTX_set1_cert_store(ctx, tls_->store.get());
      } else {
        SSL_CTX_set_default_verify_paths(ctx);
      }
      X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      const int ok = endpoint_.host_is_ip
                         ? X509_VERIFY_PARAM_set1_ip_asc(param, endpoint_.host.c_str())
                         : X509_VERIFY_PARAM_set1_host(param, endpoint_.host.c_str(), 0);
      if (ok != 1) {
        return nullptr;
      }
    }
    if (tls_->client_cert) {
      if (SSL_CTX_use_certificate(ctx, tls_->client_cert.get()) != 1 ||
          SSL_CTX_use_PrivateKey(ctx, tls_->client_key.get()) != 1) {
        return nullptr;
      }
      for (const X509Ptr& extra : tls_->client_chain) {
        SSL_CTX_add1_chain_cert(ctx, extra.get());
      }
    }
    client = std::move(ssl);
  } else {
    auto plain = std::make_unique<PlainClient>(endpoint_.host, endpoint_.port);
    connection->probed = plain.get();
    client = std::move(plain);
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
      if (!t_verify_error.empty()) {
        what += ": server certificate verification failed: " + t_verify_error;
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
  t_verify_error.clear();
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
                                          std::string_view body, std::string_view content_type) {
  const std::string target(target_view);
  limiter_.Wait(nullptr);
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
    t_verify_error.clear();
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
  StatusOr<Endpoint> endpoint = ParseServer(config.server);
  if (!endpoint.ok()) {
    return endpoint.status();
  }
  if (config.qps > 0 && config.burst < 1) {
    return InvalidArgumentError("rate limit: burst must be at least 1 when qps is set");
  }
  if (config.timeout.count() <= 0) {
    return InvalidArgumentError("timeout must be positive");
  }
  auto tls = std::make_shared<TlsMaterial>();
  if (endpoint->tls) {
    std::string ca_pem = config.ca_pem;
    if (ca_pem.empty() && !config.ca_file.empty()) {
      StatusOr<std::string> file = ReadWholeFile(config.ca_file, "CA");
      if (!file.ok()) {
        return file.status();
      }
      ca_pem = std::move(file).value();
    }
    if (!ca_pem.empty() && config.insecure_skip_tls_verify) {
      return InvalidArgumentError(
          "specifying a root certificates file with insecure-skip-tls-verify is not allowed");
    }
    if (!ca_pem.empty()) {
      std::vector<X509Ptr> cas = ParseCerts(ca_pem);
      if (cas.empty()) {
        return InvalidArgumentError("CA: no PEM certificate found" +
                                    (config.ca_file.empty() || !config.ca_pem.empty()
                                         ? std::string()
                                         : " in \"" + config.ca_file + "\""));
      }
      tls->store.reset(X509_STORE_new());
      for (const X509Ptr& ca : cas) {
        // OpenSSL fills a certificate's extension cache (key identifiers,
        // ...) lazily on first use; the store is shared by every connection,
        // so fill it now, before concurrent handshakes race on it
        // (ThreadSanitizer: ASN1_STRING_set vs ASN1_STRING_cmp).
        X509_check_purpose(ca.get(), -1, 0);
        if (tls->store == nullptr || X509_STORE_add_cert(tls->store.get(), ca.get()) != 1) {
          ERR_clear_error();
          return InternalError("CA: cannot add a certificate to the trust store");
        }
      }
    }
    std::string cert_pem = config.client_cert_pem;
    std::string key_pem = config.client_key_pem;
    if (cert_pem.empty() && !config.client_cert_file.empty()) {
      StatusOr<std::string> file = ReadWholeFile(config.client_cert_file, "client certificate");
      if (!file.ok()) {
        return file.status();
      }
      cert_pem = std::move(file).value();
    }
    if (key_pem.empty() && !config.client_key_file.empty()) {
      StatusOr<std::string> file = ReadWholeFile(config.client_key_file, "client key");
      if (!file.ok()) {
        return file.status();
      }
      key_pem = std::move(file).value();
    }
    if (cert_pem.empty() != key_pem.empty()) {
      return InvalidArgumentError("client certificate and key must be given together");
    }
    if (!cert_pem.empty()) {
      std::vector<X509Ptr> certs = ParseCerts(cert_pem);
      if (certs.empty()) {
        return InvalidArgumentError("client certificate: no PEM certificate found");
      }
      tls->client_key = ParseKey(key_pem);
      if (!tls->client_key) {
        return InvalidArgumentError("client key: no PEM private key found");
      }
      if (X509_check_private_key(certs.front().get(), tls->client_key.get()) != 1) {
        ERR_clear_error();
        return InvalidArgumentError("client key does not match the client certificate");
      }
      tls->client_cert = std::move(certs.front());
      for (size_t i = 1; i < certs.size(); ++i) {
        tls->client_chain.push_back(std::move(certs[i]));
      }
    }
  }
  ClientConfig copy = config;
  if (!copy.token_file.empty() && copy.token.empty()) {
    StatusOr<std::string> token = ReadWholeFile(copy.token_file, "token file");
    if (!token.ok()) {
      return token.status();
    }
    copy.token = TrimSpace(*token);
  }
  return std::unique_ptr<KubeClient>(
      std::make_unique<HttpKubeClient>(std::move(copy), std::move(endpoint).value(), tls));
}

}  // namespace schedext::cluster
