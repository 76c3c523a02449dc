// Test-only TLS client on the loopback interface: blocking OpenSSL over a
// socket with timeouts, so a test chooses exactly what the client offers
// (certificate, protocol versions, ALPN) and sees why a handshake failed.
//
//   TlsClient c;
//   TlsClientOptions o;
//   o.trust_pem = ca.cert_pem();                       // verify the server (IP 127.0.0.1)
//   o.cert_pem = client.cert_pem; o.key_pem = client.key_pem;
//   ASSERT_TRUE(c.Connect(port, o)) << c.error();
//   std::optional<TlsReply> r = c.Request(BuildRequest("GET", "/healthz", ""));
//
// Under TLS 1.3 a client's handshake completes before the server has checked
// the client's certificate: a refused certificate shows as an alert on the
// first read, so "refused" means Connect or the first Request fails.
//
// Header-only. Thread-safety: one TlsClient per thread.
#ifndef SCHEDEXT_TEST_TESTING_TLS_CLIENT_H_
#define SCHEDEXT_TEST_TESTING_TLS_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace schedext::testing {

struct TlsClientOptions {
  // PEM CA certificate(s) the server's certificate must chain to, for IP
  // 127.0.0.1; empty: the server's certificate is not checked.
  std::string trust_pem;
  // The client certificate and its key, PEM; empty: none is sent.
  std::string cert_pem;
  std::string key_pem;
  int min_version = 0;  // e.g. TLS1_1_VERSION; 0: OpenSSL's default
  int max_version = 0;
  std::vector<std::string> alpn;  // offered in this order; empty: no ALPN
};

struct TlsReply {
  int status = 0;
  std::string head;  // status line and headers, up to the blank line
  std::string body;
};

class TlsClient {
 public:
  // Receive and send timeout of the socket: a hung server fails the test.
  static constexpr int kSocketTimeoutSeconds = 10;

  TlsClient() = default;
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;
  ~TlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }

  // TCP connect to 127.0.0.1:port and TLS handshake; false with error().
  bool Connect(int port, const TlsClientOptions& options) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (ctx_ == nullptr) return Fail("SSL_CTX_new");
    if (options.min_version != 0) {
      // OpenSSL 3 offers versions below TLS 1.2 only at security level 0: the
      // client must really offer them, so that a refusal is the server's.
      SSL_CTX_set_security_level(ctx_, 0);
      SSL_CTX_set_cipher_list(ctx_, "DEFAULT@SECLEVEL=0");
      SSL_CTX_set_min_proto_version(ctx_, options.min_version);
    }
    if (options.max_version != 0) SSL_CTX_set_max_proto_version(ctx_, options.max_version);
    if (!options.trust_pem.empty()) {
      if (!AddTrust(options.trust_pem)) return Fail("trust_pem");
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    }
    if (!options.cert_pem.empty() && !UseCertificate(options.cert_pem, options.key_pem)) {
      return Fail("cert_pem/key_pem");
    }
    // Called on a CertificateRequest only, whether or not a certificate is set.
    SSL_CTX_set_cert_cb(ctx_, &TlsClient::OnCertificateRequest, this);
    if (!options.alpn.empty()) {
      std::string wire;
      for (const std::string& p : options.alpn) {
        wire.push_back(static_cast<char>(p.size()));
        wire.append(p);
      }
      SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(wire.data()),
                              static_cast<unsigned int>(wire.size()));
    }

    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Fail("socket");
    timeval tv{kSocketTimeoutSeconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      return Fail("connect");
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    if (SSL_connect(ssl_) != 1) return Fail("handshake");
    return true;
  }

  // Sends `request` (raw HTTP) and reads one reply framed by Content-Length;
  // nullopt with error() when the exchange fails.
  std::optional<TlsReply> Request(std::string_view request) {
    if (ssl_ == nullptr) {
      error_ = "not connected";
      return std::nullopt;
    }
    if (SSL_write(ssl_, request.data(), static_cast<int>(request.size())) <= 0) {
      Fail("write");
      return std::nullopt;
    }
    for (;;) {
      const size_t head_end = in_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        TlsReply reply;
        reply.head = in_.substr(0, head_end + 2);
        if (reply.head.rfind("HTTP/1.", 0) != 0 || reply.head.size() < 12) {
          error_ = "bad status line: " + reply.head.substr(0, reply.head.find("\r\n"));
          return std::nullopt;
        }
        reply.status = std::atoi(reply.head.c_str() + 9);
        const std::optional<size_t> length = ContentLength(reply.head);
        if (!length) {
          error_ = "reply without Content-Length";
          return std::nullopt;
        }
        if (in_.size() >= head_end + 4 + *length) {
          reply.body = in_.substr(head_end + 4, *length);
          in_.erase(0, head_end + 4 + *length);
          return reply;
        }
      }
      if (!Fill()) return std::nullopt;
    }
  }

  // True when the server ends the connection (close_notify, EOF or reset)
  // without sending more data.
  bool PeerCloses() {
    if (!in_.empty()) return false;
    char c;
    const int n = SSL_read(ssl_, &c, 1);
    if (n > 0) return false;
    ERR_clear_error();
    return true;
  }

  std::string alpn() const {
    const unsigned char* p = nullptr;
    unsigned int len = 0;
    if (ssl_ != nullptr) SSL_get0_alpn_selected(ssl_, &p, &len);
    return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p), len);
  }
  // The serial of the certificate the server presented, upper-case hex.
  std::string server_serial() const {
    X509* cert = ssl_ != nullptr ? SSL_get0_peer_certificate(ssl_) : nullptr;
    if (cert == nullptr) return "";
    BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
    char* hex = BN_bn2hex(bn);
    std::string out(hex);
    OPENSSL_free(hex);
    BN_free(bn);
    return out;
  }
  int version() const { return ssl_ != nullptr ? SSL_version(ssl_) : 0; }
  bool certificate_requested() const { return certificate_requested_; }
  const std::string& error() const { return error_; }

 private:
  static int OnCertificateRequest(SSL*, void* self) {
    static_cast<TlsClient*>(self)->certificate_requested_ = true;
    return 1;  // go on with the certificate set on the context, if any
  }

  static std::optional<size_t> ContentLength(const std::string& head) {
    std::string lower(head);
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const size_t at = lower.find("\r\ncontent-length:");
    if (at == std::string::npos) return std::nullopt;
    return static_cast<size_t>(std::strtoull(head.c_str() + at + 17, nullptr, 10));
  }

  bool AddTrust(const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    bool any = false;
    while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      any = X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), cert) == 1 || any;
      X509_free(cert);
    }
    BIO_free(bio);
    ERR_clear_error();  // the end of the text
    return any;
  }

  bool UseCertificate(const std::string& cert_pem, const std::string& key_pem) {
    BIO* cbio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
    X509* cert = PEM_read_bio_X509(cbio, nullptr, nullptr, nullptr);
    BIO_free(cbio);
    BIO* kbio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kbio, nullptr, nullptr, nullptr);
    BIO_free(kbio);
    const bool ok = cert != nullptr && key != nullptr && SSL_CTX_use_certificate(ctx_, cert) == 1 &&
                    SSL_CTX_use_PrivateKey(ctx_, key) == 1;
    X509_free(cert);
    EVP_PKEY_free(key);
    return ok;
  }

  // Appends what one SSL_read returns to in_; false on EOF, alert or timeout.
  bool Fill() {
    char buf[16384];
    const int n = SSL_read(ssl_, buf, sizeof(buf));
    if (n <= 0) return Fail("read");
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }

  // error_ = "<what>: <OpenSSL errors>"; always false.
  bool Fail(const char* what) {
    error_ = what;
    std::string errors;
    while (const unsigned long e = ERR_get_error()) {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof(buf));
      errors.append(errors.empty() ? "" : "; ").append(buf);
    }
    error_.append(": ").append(errors.empty() ? "no OpenSSL error (connection closed?)" : errors);
    return false;
  }

  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool certificate_requested_ = false;
  std::string in_;
  std::string error_;
};

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_TLS_CLIENT_H_
