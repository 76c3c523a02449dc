// TlsContextProvider: the listener's TLS server context, reloaded when its files change.
//
// Policy of every context it builds: TLS 1.2 and 1.3 only; for TLS 1.2 only ECDHE key
// exchange with AEAD ciphers (AES-GCM, ChaCha20-Poly1305); no compression, no
// renegotiation; ALPN selects "http/1.1" and refuses a client that offers only other
// protocols (kube-scheduler's Go client offers h2 and http/1.1; the listener speaks
// HTTP/1.1 only). With server.tls.clientCAFile set, the handshake requires a client
// certificate that chains to a certificate in that file (each one is a trust anchor, as in
// Go's x509.CertPool and kube-apiserver's --client-ca-file) and is valid now; without it no
// client certificate is requested.
//
// cert-manager and kubelet rotate the files in place (a Secret volume swaps a symlink;
// other tools rewrite the cert and key one after the other). Current() notices a changed
// file (device, inode, size, mtime or ctime) at most once per check interval and builds a
// new context from the new set; a set that does not load (a cert that does not match the
// key yet, a half-written file) is logged and the old context kept, and the set is tried
// again at the next check. A connection keeps the context it started with, so rotation
// drops nothing.
//
// Use (the listener): per accepted connection
//   std::shared_ptr<ssl::context> context = provider->Current();
//   beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *context);
// with `context` kept next to the stream (declared before it) until the connection ends.
//
// Thread-safety: every method may be called from any thread. A reload runs on the thread
// that calls Current() after the interval passed (one at a time; the others get the
// current context meanwhile), so a rotation costs one handshake a few milliseconds.
#ifndef SCHEDEXT_SERVER_TLS_CONTEXT_H_
#define SCHEDEXT_SERVER_TLS_CONTEXT_H_

#include <sys/types.h>

#include <array>
#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "schedext/config/config.h"
#include "schedext/status.h"

namespace schedext::server {

// The served certificate, for logs and metrics.
struct TlsCertificateInfo {
  std::string subject;  // RFC 2253, e.g. "CN=schedext,O=example"
  std::string serial;   // upper-case hex
  std::chrono::system_clock::time_point not_before;
  std::chrono::system_clock::time_point not_after;
};

struct TlsProviderOptions {
  // How often Current() looks at the files. Tests shorten it.
  std::chrono::milliseconds check_interval{1000};
};

class TlsContextProvider {
 public:
  static constexpr std::chrono::seconds kFailureEscalation{10};

  // Loads the files named by `config` (certFile and keyFile required, clientCAFile
  // optional). Errors name the config key and the file.
  static StatusOr<std::unique_ptr<TlsContextProvider>> Create(const config::TlsConfig& config);
  static StatusOr<std::unique_ptr<TlsContextProvider>> Create(const config::TlsConfig& config,
                                                              TlsProviderOptions options);
  ~TlsContextProvider();
  TlsContextProvider(const TlsContextProvider&) = delete;
  TlsContextProvider& operator=(const TlsContextProvider&) = delete;

  // The context a new handshake uses; the caller keeps the pointer for the connection's
  // lifetime. Never null. Checks the files first when the check interval has passed.
  std::shared_ptr<boost::asio::ssl::context> Current();

  // Checks the files now: OK when nothing changed or the new set was loaded, else the
  // reason the old context is still served. Logged as a warning once per distinct
  // failure (a rotation caught half-way is normal), as an error once it has lasted
  // kFailureEscalation.
  Status ReloadIfChanged();

  TlsCertificateInfo certificate() const;
  // Successful reloads after Create, and attempts that kept the old context.
  uint64_t reloads() const { return reloads_.load(std::memory_order_relaxed); }
  uint64_t reload_failures() const { return reload_failures_.load(std::memory_order_relaxed); }
  // Why the last attempt failed; OK when the last attempt (or Create) succeeded.
  Status last_reload_error() const;

 private:
  // What identifies one version of a file on disk; all zero when it cannot be stat'ed.
  struct FileStamp {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = -1;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    friend bool operator==(const FileStamp&, const FileStamp&) = default;
  };
  using Stamps = std::array<FileStamp, 3>;  // cert, key, client CA

  struct Files {
    std::string cert_file;
    std::string key_file;
    std::string client_ca_file;  // empty: no client certificate requested
  };

  TlsContextProvider(Files files, TlsProviderOptions options);
  Stamps StatFiles() const;
  Status CheckLocked();  // reload_mu_ held

  const Files files_;
  const TlsProviderOptions options_;
  std::atomic<int64_t> next_check_ns_{0};  // steady clock
  std::atomic<uint64_t> reloads_{0};
  std::atomic<uint64_t> reload_failures_{0};
  // Held while checking and reloading; Current() only try-locks it.
  std::mutex reload_mu_;
  Stamps loaded_stamps_{};  // guarded by reload_mu_
  // Guarded by reload_mu_: the failure state since the last successful load.
  bool last_failed_ = false;
  int64_t failing_since_ns_ = 0;
  bool failure_escalated_ = false;
  std::string last_logged_failure_;

  mutable std::mutex mu_;  // guards the three below; held only to copy them
  std::shared_ptr<boost::asio::ssl::context> current_;
  TlsCertificateInfo info_;
  Status last_error_;
};

}  // namespace schedext::server

#endif  // SCHEDEXT_SERVER_TLS_CONTEXT_H_
