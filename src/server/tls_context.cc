// TlsContextProvider: OpenSSL 3 through Boost.Asio's ssl::context.
#include "server/tls_context.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <boost/system/system_error.hpp>
#include <ctime>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

#include "common/file.h"
#include "common/text.h"

namespace schedext::server {
namespace {

using SslContext = boost::asio::ssl::context;

// Mozilla's "intermediate" TLS 1.2 list: forward secrecy and AEAD only; Go's client
// offers all of them.
constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr char kTls13Suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr char kGroups[] = "X25519:P-256:P-384";
// With peer verification on, OpenSSL refuses to resume a session unless the context
// names one.
constexpr unsigned char kSessionIdContext[] = "schedext";
// Certificates, keys and CA bundles are a few KB; anything far larger is the wrong file.
constexpr size_t kMaxPemBytes = size_t{4} << 20;
constexpr int kMaxClientChainDepth = 8;

struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

// The OpenSSL error queue as one string ("" when empty); empties the queue, which is
// per thread and would otherwise leak into the next TLS call on this I/O thread.
std::string DrainOpenSslErrors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out.append("; ");
    out.append(buf);
  }
  return out;
}

Status OpenSslFailure(std::string what) {
  const std::string detail = DrainOpenSslErrors();
  if (!detail.empty()) what.append(": ").append(detail);
  return InvalidArgumentError(std::move(what));
}

// `server.tls.certFile "/etc/tls/tls.crt"`, as ReadFile names a file.
std::string Describe(std::string_view key, const std::string& path) {
  return "server.tls." + std::string(key) + " " + Quote(path);
}

StatusOr<std::string> ReadPemFile(std::string_view key, const std::string& path) {
  return ReadFile(path, "server.tls." + std::string(key), kMaxPemBytes);
}

// Every certificate in a PEM text, in order; an error when there is none or one is
// malformed.
StatusOr<std::vector<X509Ptr>> ParseCertificates(std::string_view key, const std::string& path,
                                                 const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return OpenSslFailure(Describe(key, path));
  std::vector<X509Ptr> certs;
  for (;;) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    certs.push_back(std::move(cert));
  }
  // The loop ends on "no start line" at the end of the text; anything else is a
  // damaged certificate.
  const unsigned long last = ERR_peek_last_error();
  if (last != 0 &&
      !(ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE)) {
    return OpenSslFailure(Describe(key, path) + ": malformed certificate");
  }
  ERR_clear_error();
  if (certs.empty()) {
    return InvalidArgumentError(Describe(key, path) + ": no PEM certificate in the file");
  }
  return certs;
}

// Never prompts on the terminal for a passphrase (OpenSSL's default for an encrypted key).
int RefusePassphrase(char*, int, int, void*) { return -1; }

StatusOr<PkeyPtr> ParsePrivateKey(const std::string& path, const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return OpenSslFailure(Describe("keyFile", path));
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, RefusePassphrase, nullptr));
  if (!key) {
    return OpenSslFailure(Describe("keyFile", path) +
                          ": no unencrypted PEM private key in the file");
  }
  return key;
}

std::chrono::system_clock::time_point ToTimePoint(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return {};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

TlsCertificateInfo CertificateInfoOf(X509* cert) {
  TlsCertificateInfo info;
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio && X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    if (n > 0) info.subject.assign(data, static_cast<size_t>(n));
  }
  if (BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr)) {
    if (char* hex = BN_bn2hex(bn)) {
      info.serial = hex;
      OPENSSL_free(hex);
    }
    BN_free(bn);
  }
  info.not_before = ToTimePoint(X509_get0_notBefore(cert));
  info.not_after = ToTimePoint(X509_get0_notAfter(cert));
  ERR_clear_error();
  return info;
}

// Picks "http/1.1" from the client's ALPN list. A client that offers ALPN without it
// would speak another protocol to an HTTP/1.1 server, so it gets the fatal
// no_application_protocol alert RFC 7301 prescribes.
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
               unsigned int in_len, void*) {
  constexpr std::string_view kHttp11 = "http/1.1";
  unsigned int pos = 0;
  while (pos < in_len) {
    const unsigned int len = in[pos];
    if (len == 0 || pos + 1 + len > in_len) break;  // malformed list
    const std::string_view proto(reinterpret_cast<const char*>(in + pos + 1), len);
    if (proto == kHttp11) {
      *out = in + pos + 1;
      *out_len = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    pos += 1 + len;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

struct Loaded {
  std::shared_ptr<SslContext> context;
  TlsCertificateInfo info;
};

// One context from the files as they are now.
StatusOr<Loaded> BuildContext(const std::string& cert_file, const std::string& key_file,
                              const std::string& client_ca_file) {
  ERR_clear_error();
  SCHEDEXT_ASSIGN_OR_RETURN(const std::string cert_pem, ReadPemFile("certFile", cert_file));
  SCHEDEXT_ASSIGN_OR_RETURN(const std::string key_pem, ReadPemFile("keyFile", key_file));
  SCHEDEXT_ASSIGN_OR_RETURN(std::vector<X509Ptr> chain,
                            ParseCertificates("certFile", cert_file, cert_pem));
  SCHEDEXT_ASSIGN_OR_RETURN(PkeyPtr key, ParsePrivateKey(key_file, key_pem));
  X509* leaf = chain.front().get();
  if (X509_check_private_key(leaf, key.get()) != 1) {
    return OpenSslFailure(Describe("keyFile", key_file) +
                          " does not match the first certificate in " +
                          Describe("certFile", cert_file));
  }

  std::shared_ptr<SslContext> context;
  try {
    context = std::make_shared<SslContext>(SslContext::tls_server);
  } catch (const boost::system::system_error& e) {
    DrainOpenSslErrors();
    return InternalError(std::string("create TLS context: ") + e.what());
  }
  SSL_CTX* ctx = context->native_handle();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, kTls13Suites) != 1 ||
      SSL_CTX_set1_groups_list(ctx, kGroups) != 1 ||
      SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof(kSessionIdContext) - 1) != 1) {
    return OpenSslFailure("configure TLS context");
  }
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_alpn_select_cb(ctx, SelectAlpn, nullptr);

  if (SSL_CTX_use_certificate(ctx, leaf) != 1) {
    return OpenSslFailure(Describe("certFile", cert_file) + ": certificate not usable");
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx, chain[i].get()) != 1) {
      return OpenSslFailure(Describe("certFile", cert_file) + ": chain certificate not usable");
    }
  }
  if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    return OpenSslFailure(Describe("keyFile", key_file) + " does not match " +
                          Describe("certFile", cert_file));
  }

  if (!client_ca_file.empty()) {
    SCHEDEXT_ASSIGN_OR_RETURN(const std::string ca_pem,
                              ReadPemFile("clientCAFile", client_ca_file));
    SCHEDEXT_ASSIGN_OR_RETURN(std::vector<X509Ptr> cas,
                              ParseCertificates("clientCAFile", client_ca_file, ca_pem));
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    for (const X509Ptr& ca : cas) {
      // add_client_CA copies the subject: it is the list of acceptable issuers the
      // server sends in its CertificateRequest.
      if (X509_STORE_add_cert(store, ca.get()) != 1 || SSL_CTX_add_client_CA(ctx, ca.get()) != 1) {
        return OpenSslFailure(Describe("clientCAFile", client_ca_file) +
                              ": CA certificate not usable");
      }
    }
    // Any certificate in the file anchors a chain, also an intermediate, as in Go.
    X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN);
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_CLIENT);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    SSL_CTX_set_verify_depth(ctx, kMaxClientChainDepth);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  DrainOpenSslErrors();

  Loaded loaded;
  loaded.info = CertificateInfoOf(leaf);
  loaded.context = std::move(context);
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) <= 0) {
    // Served anyway: refusing would leave the listener without TLS until a restart, while
    // the next rotation can still fix it; clients will refuse it and say why.
    spdlog::warn("{}: the server certificate {} expired", Describe("certFile", cert_file),
                 loaded.info.subject);
  }
  ERR_clear_error();
  return loaded;
}

// "2026-12-01T11:00:00Z".
std::string FormatUtc(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

StatusOr<std::unique_ptr<TlsContextProvider>> TlsContextProvider::Create(
    const config::TlsConfig& config) {
  return Create(config, TlsProviderOptions{});
}

StatusOr<std::unique_ptr<TlsContextProvider>> TlsContextProvider::Create(
    const config::TlsConfig& config, TlsProviderOptions options) {
  if (config.cert_file.empty() || config.key_file.empty()) {
    return InvalidArgumentError("server.tls: certFile and keyFile are both required to serve TLS");
  }
  std::unique_ptr<TlsContextProvider> provider(new TlsContextProvider(
      Files{config.cert_file, config.key_file, config.client_ca_file}, options));
  std::lock_guard reload(provider->reload_mu_);
  // Stamped before reading: a change during the read shows up at the next check.
  provider->loaded_stamps_ = provider->StatFiles();
  SCHEDEXT_ASSIGN_OR_RETURN(Loaded loaded,
                            BuildContext(provider->files_.cert_file, provider->files_.key_file,
                                         provider->files_.client_ca_file));
  spdlog::info("TLS: serving {} serial {} until {}; {}", loaded.info.subject, loaded.info.serial,
               FormatUtc(loaded.info.not_after),
               provider->files_.client_ca_file.empty()
                   ? std::string("no client certificate requested")
                   : "client certificates required, signed by a CA in " +
                         Describe("clientCAFile", provider->files_.client_ca_file));
  provider->current_ = std::move(loaded.context);
  provider->info_ = std::move(loaded.info);
  provider->next_check_ns_.store(
      SteadyNowNs() + std::chrono::nanoseconds(options.check_interval).count(),
      std::memory_order_relaxed);
  return provider;
}

TlsContextProvider::TlsContextProvider(Files files, TlsProviderOptions options)
    : files_(std::move(files)), options_(options) {}

TlsContextProvider::~TlsContextProvider() = default;

TlsContextProvider::Stamps TlsContextProvider::StatFiles() const {
  Stamps stamps{};
  const std::string* paths[] = {&files_.cert_file, &files_.key_file, &files_.client_ca_file};
  for (size_t i = 0; i < stamps.size(); ++i) {
    struct stat st {};
    if (paths[i]->empty() || ::stat(paths[i]->c_str(), &st) != 0) continue;
    stamps[i].device = st.st_dev;
    stamps[i].inode = st.st_ino;
    stamps[i].size = st.st_size;
    stamps[i].mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    stamps[i].ctime_ns = int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
  }
  return stamps;
}

std::shared_ptr<SslContext> TlsContextProvider::Current() {
  const int64_t now = SteadyNowNs();
  if (now >= next_check_ns_.load(std::memory_order_relaxed)) {
    // One thread checks; handshakes on the others go on with the current context.
    std::unique_lock reload(reload_mu_, std::try_to_lock);
    if (reload.owns_lock() && now >= next_check_ns_.load(std::memory_order_relaxed)) {
      (void)CheckLocked();  // a failure is logged there and the old context kept
    }
  }
  std::lock_guard lock(mu_);
  return current_;
}

Status TlsContextProvider::ReloadIfChanged() {
  std::lock_guard reload(reload_mu_);
  return CheckLocked();
}

Status TlsContextProvider::CheckLocked() {
  const int64_t now = SteadyNowNs();
  next_check_ns_.store(now + std::chrono::nanoseconds(options_.check_interval).count(),
                       std::memory_order_relaxed);
  const Stamps stamps = StatFiles();
  // After a failure the same stamps are tried again: a file written in two steps within
  // the clock's granularity keeps its stamp.
  if (stamps == loaded_stamps_ && !last_failed_) return OkStatus();

  StatusOr<Loaded> loaded = BuildContext(files_.cert_file, files_.key_file, files_.client_ca_file);
  if (!loaded.ok()) {
    const Status status =
        loaded.status().WithContext("reload TLS files (still serving the old certificate)");
    reload_failures_.fetch_add(1, std::memory_order_relaxed);
    if (!last_failed_) {
      last_failed_ = true;
      failing_since_ns_ = now;
      failure_escalated_ = false;
    }
    const int64_t failing_ns = now - failing_since_ns_;
    if (status.message() != last_logged_failure_) {
      spdlog::warn("{}; retrying every {} ms", status.message(), options_.check_interval.count());
      last_logged_failure_ = status.message();
    } else if (!failure_escalated_ &&
               failing_ns >= std::chrono::nanoseconds(kFailureEscalation).count()) {
      spdlog::error("{}; failing for {} s", status.message(), failing_ns / 1000000000);
      failure_escalated_ = true;
    }
    std::lock_guard lock(mu_);
    last_error_ = status;
    return status;
  }
  loaded_stamps_ = stamps;
  last_failed_ = false;
  last_logged_failure_.clear();
  reloads_.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("TLS files reloaded: serving {} serial {} until {}", loaded->info.subject,
               loaded->info.serial, FormatUtc(loaded->info.not_after));
  std::lock_guard lock(mu_);
  current_ = std::move(loaded->context);
  info_ = std::move(loaded->info);
  last_error_ = OkStatus();
  return OkStatus();
}

TlsCertificateInfo TlsContextProvider::certificate() const {
  std::lock_guard lock(mu_);
  return info_;
}

Status TlsContextProvider::last_reload_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

}  // namespace schedext::server
