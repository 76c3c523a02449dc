// TlsContextProvider through real TLS handshakes on loopback: a small Asio acceptor
// takes every connection's context from the provider (as the listener does) and answers
// one line per HTTP request; the client (testing/tls_client.h) is plain OpenSSL, so each
// test picks exactly what it offers (certificate, protocol versions, ALPN).
#include "server/tls_context.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "testing/tls_client.h"

namespace schedext::server {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::ip::tcp;
using namespace std::chrono_literals;

constexpr auto kWaitBound = 15s;  // liveness bound for anything the tests wait for

// ---------------------------------------------------------------------------
// A throwaway PKI (EC P-256 keys: quick to generate).

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

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

enum class Usage { kCa, kServer, kClient };

struct Identity {
  PkeyPtr key;
  X509Ptr cert;

  std::string CertPem() const {
    BioPtr bio(BIO_new(BIO_s_mem()));
    PEM_write_bio_X509(bio.get(), cert.get());
    return BioText(bio.get());
  }
  std::string KeyPem() const {
    BioPtr bio(BIO_new(BIO_s_mem()));
    PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    return BioText(bio.get());
  }
  std::string Serial() const {
    BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert.get()), nullptr);
    char* hex = BN_bn2hex(bn);
    std::string out(hex);
    OPENSSL_free(hex);
    BN_free(bn);
    return out;
  }
};

struct CertSpec {
  std::string common_name;
  Usage usage = Usage::kClient;
  long valid_from_seconds = -3600;  // relative to now
  long valid_until_seconds = 24 * 3600;
};

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr) << value;
  ASSERT_EQ(X509_add_ext(cert, ext, -1), 1);
  X509_EXTENSION_free(ext);
}

// A certificate for a new key, signed by `issuer` (self-signed when null).
Identity Issue(const CertSpec& spec, const Identity* issuer) {
  Identity id;
  id.key.reset(EVP_EC_gen("P-256"));
  id.cert.reset(X509_new());
  X509* cert = id.cert.get();
  X509_set_version(cert, 2);
  BIGNUM* serial = BN_new();
  BN_rand(serial, 64, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY);
  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert));
  BN_free(serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), spec.valid_from_seconds);
  X509_gmtime_adj(X509_getm_notAfter(cert), spec.valid_until_seconds);
  X509_set_pubkey(cert, id.key.get());
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
                             -1, 0);
  X509* signer = issuer != nullptr ? issuer->cert.get() : cert;
  X509_set_issuer_name(cert, X509_get_subject_name(signer));
  AddExtension(cert, signer, NID_subject_key_identifier, "hash");
  AddExtension(cert, signer, NID_authority_key_identifier, "keyid:always");
  switch (spec.usage) {
    case Usage::kCa:
      AddExtension(cert, signer, NID_basic_constraints, "critical,CA:TRUE");
      AddExtension(cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
      break;
    case Usage::kServer:
      AddExtension(cert, signer, NID_basic_constraints, "critical,CA:FALSE");
      AddExtension(cert, signer, NID_key_usage, "critical,digitalSignature");
      AddExtension(cert, signer, NID_ext_key_usage, "serverAuth");
      AddExtension(cert, signer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
      break;
    case Usage::kClient:
      AddExtension(cert, signer, NID_basic_constraints, "critical,CA:FALSE");
      AddExtension(cert, signer, NID_key_usage, "critical,digitalSignature");
      AddExtension(cert, signer, NID_ext_key_usage, "clientAuth");
      break;
  }
  EVP_PKEY* signing_key = issuer != nullptr ? issuer->key.get() : id.key.get();
  EXPECT_GT(X509_sign(cert, signing_key, EVP_sha256()), 0);
  return id;
}

// ---------------------------------------------------------------------------
// Files

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tls_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Rewrites the file in place (same inode), as a tool that truncates and writes does.
void WriteInPlace(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

// Replaces the file by a rename, as most tools that write atomically do.
void WriteByRename(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  WriteInPlace(tmp, content);
  std::filesystem::rename(tmp, path);
}

// ---------------------------------------------------------------------------
// The acceptor: every connection takes provider->Current() and keeps it, like the
// listener. Each request "GET / ..." gets "peer=<client CN or -> alpn=<protocol or ->".

class TestTlsServer {
 public:
  explicit TestTlsServer(TlsContextProvider* provider) : provider_(provider) {
    boost::system::error_code ec;
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      error_ = ec.message();
      return;
    }
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~TestTlsServer() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  int port() const { return port_; }
  const std::string& error() const { return error_; }

  // Handshake failures seen so far.
  std::vector<std::string> failures() const {
    std::lock_guard lock(mu_);
    return failures_;
  }
  int handshakes() const {
    std::lock_guard lock(mu_);
    return handshakes_;
  }
  // Waits until at least `n` handshakes failed; false after the bound.
  bool WaitForFailures(size_t n) const {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kWaitBound, [&] { return failures_.size() >= n; });
  }

 private:
  class Session : public std::enable_shared_from_this<Session> {
   public:
    Session(tcp::socket socket, std::shared_ptr<ssl::context> context, TestTlsServer* server)
        : context_(std::move(context)), stream_(std::move(socket), *context_), server_(server) {}

    void Start() {
      stream_.async_handshake(ssl::stream_base::server,
                              [self = shared_from_this()](const boost::system::error_code& ec) {
                                self->OnHandshake(ec);
                              });
    }

   private:
    void OnHandshake(const boost::system::error_code& ec) {
      if (ec) {
        server_->RecordFailure(ec.message());
        return;
      }
      SSL* ssl = stream_.native_handle();
      const unsigned char* alpn = nullptr;
      unsigned int alpn_len = 0;
      SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
      alpn_ = alpn_len > 0 ? std::string(reinterpret_cast<const char*>(alpn), alpn_len) : "-";
      peer_ = "-";
      if (X509* peer = SSL_get0_peer_certificate(ssl)) {
        char cn[256] = {};
        if (X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof(cn)) >
            0) {
          peer_ = cn;
        }
      }
      server_->RecordHandshake();
      ReadRequest();
    }

    void ReadRequest() {
      asio::async_read_until(
          stream_, buffer_, "\r\n\r\n",
          [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
            if (ec) return;  // the client closed or broke the connection
            self->buffer_.consume(n);
            const std::string body = "peer=" + self->peer_ + " alpn=" + self->alpn_;
            self->reply_ = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\n\r\n" + body;
            asio::async_write(self->stream_, asio::buffer(self->reply_),
                              [self](const boost::system::error_code& wec, size_t) {
                                if (!wec) self->ReadRequest();
                              });
          });
    }

    std::shared_ptr<ssl::context> context_;  // outlives stream_, declared first
    ssl::stream<tcp::socket> stream_;
    TestTlsServer* server_;
    asio::streambuf buffer_;
    std::string reply_;
    std::string alpn_;
    std::string peer_;
  };

  void Accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec) return;
      std::make_shared<Session>(std::move(socket), provider_->Current(), this)->Start();
      Accept();
    });
  }
  void RecordFailure(std::string what) {
    std::lock_guard lock(mu_);
    failures_.push_back(std::move(what));
    cv_.notify_all();
  }
  void RecordHandshake() {
    std::lock_guard lock(mu_);
    ++handshakes_;
  }

  TlsContextProvider* provider_;
  asio::io_context io_{1};
  tcp::acceptor acceptor_{io_};
  std::thread thread_;
  int port_ = 0;
  std::string error_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::string> failures_;
  int handshakes_ = 0;
};

// ---------------------------------------------------------------------------
// The client: testing/tls_client.h, plus the one exchange these tests make.

using ClientOptions = testing::TlsClientOptions;

class TlsClient : public testing::TlsClient {
 public:
  // One GET on this connection; the reply body, or nullopt with error().
  std::optional<std::string> Get() {
    std::optional<testing::TlsReply> reply = Request("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    if (!reply) return std::nullopt;
    return reply->body;
  }
  // Handshake and one answered request: what a caller that is let in gets.
  bool ConnectAndGet(int port, const ClientOptions& options) {
    return Connect(port, options) && Get().has_value();
  }
};

// ---------------------------------------------------------------------------

// Captures what the provider logs.
class LogCapture {
 public:
  LogCapture()
      : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)),
        previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("tls_test", sink_));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string Text() const {
    std::string out;
    for (const std::string& line : sink_->last_formatted()) out.append(line);
    return out;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

class TlsContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ca_ = Issue({"schedext test CA", Usage::kCa}, nullptr);
    server_ = Issue({"schedext", Usage::kServer}, &ca_);
    client_ = Issue({"kube-scheduler", Usage::kClient}, &ca_);
    foreign_ca_ = Issue({"foreign CA", Usage::kCa}, nullptr);
    foreign_client_ = Issue({"intruder", Usage::kClient}, &foreign_ca_);
    expired_client_ = Issue({"expired", Usage::kClient, -2 * 24 * 3600, -24 * 3600}, &ca_);
    WriteInPlace(CertFile(), server_.CertPem());
    WriteInPlace(KeyFile(), server_.KeyPem());
    WriteInPlace(ClientCaFile(), ca_.CertPem());
  }

  std::string CertFile() const { return dir_.File("tls.crt"); }
  std::string KeyFile() const { return dir_.File("tls.key"); }
  std::string ClientCaFile() const { return dir_.File("client-ca.crt"); }

  config::TlsConfig Config(bool client_ca) const {
    config::TlsConfig c;
    c.cert_file = CertFile();
    c.key_file = KeyFile();
    if (client_ca) c.client_ca_file = ClientCaFile();
    return c;
  }

  std::unique_ptr<TlsContextProvider> MakeProvider(bool client_ca,
                                                   std::chrono::milliseconds interval = 1000ms) {
    auto provider = TlsContextProvider::Create(Config(client_ca), TlsProviderOptions{interval});
    EXPECT_TRUE(provider.ok()) << provider.status().message();
    return provider.ok() ? std::move(provider).value() : nullptr;
  }

  ClientOptions As(const Identity* certificate) const {
    ClientOptions o;
    o.trust_pem = ca_.CertPem();
    if (certificate != nullptr) {
      o.cert_pem = certificate->CertPem();
      o.key_pem = certificate->KeyPem();
    }
    return o;
  }

  // Waits until a new connection is served the certificate with `serial`.
  bool NewConnectionsServe(int port, const std::string& serial) {
    const auto deadline = std::chrono::steady_clock::now() + kWaitBound;
    while (std::chrono::steady_clock::now() < deadline) {
      TlsClient c;
      if (c.ConnectAndGet(port, As(&client_)) && c.server_serial() == serial) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  TempDir dir_;
  Identity ca_, server_, client_, foreign_ca_, foreign_client_, expired_client_;
};

// --- loading ---------------------------------------------------------------

TEST_F(TlsContextTest, CreateDescribesTheServedCertificate) {
  auto provider = MakeProvider(true);
  ASSERT_NE(provider, nullptr);
  const TlsCertificateInfo info = provider->certificate();
  EXPECT_EQ(info.subject, "CN=schedext");
  EXPECT_EQ(info.serial, server_.Serial());
  const auto now = std::chrono::system_clock::now();
  EXPECT_LT(info.not_before, now);
  EXPECT_GT(info.not_after, now + 23h);
  EXPECT_LT(info.not_after, now + 25h);
  EXPECT_TRUE(provider->last_reload_error().ok());
  EXPECT_NE(provider->Current(), nullptr);
}

TEST_F(TlsContextTest, MissingFilesAreNamed) {
  config::TlsConfig c = Config(true);
  c.cert_file = dir_.File("absent.crt");
  auto provider = TlsContextProvider::Create(c);
  ASSERT_FALSE(provider.ok());
  EXPECT_NE(provider.status().message().find("server.tls.certFile \"" + c.cert_file +
                                             "\": No such file or directory"),
            std::string::npos)
      << provider.status().message();

  c = Config(true);
  c.client_ca_file = dir_.File("absent-ca.crt");
  provider = TlsContextProvider::Create(c);
  ASSERT_FALSE(provider.ok());
  EXPECT_NE(provider.status().message().find("server.tls.clientCAFile \"" + c.client_ca_file +
                                             "\": No such file or directory"),
            std::string::npos)
      << provider.status().message();

  c = Config(false);
  c.key_file.clear();
  provider = TlsContextProvider::Create(c);
  ASSERT_FALSE(provider.ok());
  EXPECT_NE(provider.status().message().find("keyFile"), std::string::npos);
}

TEST_F(TlsContextTest, KeyThatDoesNotMatchTheCertificateIsRefusedNamingBothFiles) {
  WriteInPlace(KeyFile(), client_.KeyPem());
  auto provider = TlsContextProvider::Create(Config(false));
  ASSERT_FALSE(provider.ok());
  const std::string message = provider.status().message();
  EXPECT_NE(message.find("server.tls.keyFile \"" + KeyFile() + "\" does not match"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("server.tls.certFile \"" + CertFile() + "\""), std::string::npos)
      << message;
}

TEST_F(TlsContextTest, FilesThatAreNotPemAreRefused) {
  WriteInPlace(ClientCaFile(), "not a certificate\n");
  auto provider = TlsContextProvider::Create(Config(true));
  ASSERT_FALSE(provider.ok());
  EXPECT_NE(provider.status().message().find("server.tls.clientCAFile \"" + ClientCaFile() +
                                             "\": no PEM certificate"),
            std::string::npos)
      << provider.status().message();

  // A certificate where the key belongs.
  WriteInPlace(KeyFile(), server_.CertPem());
  provider = TlsContextProvider::Create(Config(false));
  ASSERT_FALSE(provider.ok());
  EXPECT_NE(provider.status().message().find("server.tls.keyFile \"" + KeyFile() +
                                             "\": no unencrypted PEM private key"),
            std::string::npos)
      << provider.status().message();

  // A damaged certificate body.
  std::string pem = server_.CertPem();
  pem[pem.size() / 2] = pem[pem.size() / 2] == 'A' ? 'B' : 'A';
  pem.insert(pem.size() / 2, "!!");
  WriteInPlace(CertFile(), pem);
  WriteInPlace(KeyFile(), server_.KeyPem());
  provider = TlsContextProvider::Create(Config(false));
  ASSERT_FALSE(provider.ok());
  EXPECT_NE(provider.status().message().find("server.tls.certFile \"" + CertFile() + "\""),
            std::string::npos)
      << provider.status().message();
}

TEST_F(TlsContextTest, ServesTheChainAfterTheLeaf) {
  // certFile holding leaf + intermediate: the client trusts only the root.
  Identity intermediate = Issue({"schedext intermediate", Usage::kCa}, &ca_);
  Identity leaf = Issue({"schedext-leaf", Usage::kServer}, &intermediate);
  WriteInPlace(CertFile(), leaf.CertPem() + intermediate.CertPem());
  WriteInPlace(KeyFile(), leaf.KeyPem());
  auto provider = MakeProvider(false);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  TlsClient c;
  ASSERT_TRUE(c.ConnectAndGet(server.port(), As(nullptr))) << c.error();
  EXPECT_EQ(c.server_serial(), leaf.Serial());
}

// --- client certificates ---------------------------------------------------

TEST_F(TlsContextTest, ClientSignedByTheClientCaIsServed) {
  auto provider = MakeProvider(true);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  TlsClient c;
  ASSERT_TRUE(c.Connect(server.port(), As(&client_))) << c.error();
  EXPECT_TRUE(c.certificate_requested());
  const std::optional<std::string> body = c.Get();
  ASSERT_TRUE(body.has_value()) << c.error();
  EXPECT_EQ(*body, "peer=kube-scheduler alpn=-");
  // Keep-alive: a second request on the same connection.
  EXPECT_EQ(c.Get().value_or(c.error()), "peer=kube-scheduler alpn=-");
  EXPECT_EQ(c.server_serial(), server_.Serial());
  EXPECT_TRUE(server.failures().empty());
}

TEST_F(TlsContextTest, NoClientCertificateIsRefusedAtTheHandshake) {
  auto provider = MakeProvider(true);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  for (const int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    SCOPED_TRACE(version);
    TlsClient c;
    ClientOptions options = As(nullptr);
    options.max_version = version;
    EXPECT_FALSE(c.ConnectAndGet(server.port(), options));
    EXPECT_TRUE(c.certificate_requested());
    // TLS 1.3 has its own alert for it; TLS 1.2 answers a generic handshake failure.
    EXPECT_NE(c.error().find(version == TLS1_3_VERSION ? "alert certificate required"
                                                       : "alert handshake failure"),
              std::string::npos)
        << c.error();
  }
  ASSERT_TRUE(server.WaitForFailures(2));
  for (const std::string& failure : server.failures()) {
    EXPECT_NE(failure.find("peer did not return a certificate"), std::string::npos) << failure;
  }
  EXPECT_EQ(server.handshakes(), 0);
}

TEST_F(TlsContextTest, ClientFromAForeignCaIsRefused) {
  auto provider = MakeProvider(true);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  TlsClient c;
  EXPECT_FALSE(c.ConnectAndGet(server.port(), As(&foreign_client_)));
  EXPECT_NE(c.error().find("alert unknown ca"), std::string::npos) << c.error();
  ASSERT_TRUE(server.WaitForFailures(1));
  EXPECT_NE(server.failures()[0].find("certificate verify failed"), std::string::npos)
      << server.failures()[0];
  EXPECT_EQ(server.handshakes(), 0);
}

TEST_F(TlsContextTest, ExpiredClientCertificateIsRefused) {
  auto provider = MakeProvider(true);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  TlsClient c;
  EXPECT_FALSE(c.ConnectAndGet(server.port(), As(&expired_client_)));
  EXPECT_NE(c.error().find("alert certificate expired"), std::string::npos) << c.error();
  ASSERT_TRUE(server.WaitForFailures(1));
  EXPECT_EQ(server.handshakes(), 0);
}

TEST_F(TlsContextTest, ServerCertificateIsNotAClientCertificate) {
  // Signed by the client CA, but its extendedKeyUsage says serverAuth only.
  auto provider = MakeProvider(true);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  TlsClient c;
  EXPECT_FALSE(c.ConnectAndGet(server.port(), As(&server_)));
  EXPECT_NE(c.error().find("alert unsupported certificate"), std::string::npos) << c.error();
  EXPECT_EQ(server.handshakes(), 0);
}

TEST_F(TlsContextTest, IntermediateInTheClientCaFileAnchorsTheChain) {
  // As in Go: any certificate in the file is trusted, also an intermediate alone.
  Identity intermediate = Issue({"client intermediate", Usage::kCa}, &ca_);
  Identity leaf = Issue({"scheduler-2", Usage::kClient}, &intermediate);
  WriteInPlace(ClientCaFile(), intermediate.CertPem());
  auto provider = MakeProvider(true);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  TlsClient good;
  ASSERT_TRUE(good.Connect(server.port(), As(&leaf))) << good.error();
  EXPECT_EQ(good.Get().value_or(good.error()), "peer=scheduler-2 alpn=-");
  // Signed by the root directly: the root is not in the file.
  TlsClient other;
  EXPECT_FALSE(other.ConnectAndGet(server.port(), As(&client_)));
}

TEST_F(TlsContextTest, WithoutClientCaNoCertificateIsRequested) {
  auto provider = MakeProvider(false);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  TlsClient c;
  ASSERT_TRUE(c.Connect(server.port(), As(nullptr))) << c.error();
  EXPECT_EQ(c.Get().value_or(c.error()), "peer=- alpn=-");
  EXPECT_FALSE(c.certificate_requested());
}

// --- protocol versions and ALPN ----------------------------------------------

TEST_F(TlsContextTest, Tls12And13AreServedOlderVersionsRefused) {
  auto provider = MakeProvider(true);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  for (const int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    TlsClient c;
    ClientOptions options = As(&client_);
    options.min_version = version;
    options.max_version = version;
    ASSERT_TRUE(c.ConnectAndGet(server.port(), options)) << version << ": " << c.error();
    EXPECT_EQ(c.version(), version);
  }
  for (const int version : {TLS1_1_VERSION, TLS1_VERSION}) {
    TlsClient c;
    ClientOptions options = As(&client_);
    options.min_version = version;
    options.max_version = version;
    EXPECT_FALSE(c.Connect(server.port(), options)) << version;
    // The server's alert, not the client refusing to offer the version.
    EXPECT_NE(c.error().find("alert protocol version"), std::string::npos) << c.error();
  }
  ASSERT_TRUE(server.WaitForFailures(2));
  EXPECT_NE(server.failures()[0].find("unsupported protocol"), std::string::npos)
      << server.failures()[0];
}

TEST_F(TlsContextTest, AlpnSelectsHttp11AndRefusesH2Only) {
  auto provider = MakeProvider(true);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  {
    // What Go's net/http client offers.
    TlsClient c;
    ClientOptions options = As(&client_);
    options.alpn = {"h2", "http/1.1"};
    ASSERT_TRUE(c.Connect(server.port(), options)) << c.error();
    EXPECT_EQ(c.alpn(), "http/1.1");
    EXPECT_EQ(c.Get().value_or(c.error()), "peer=kube-scheduler alpn=http/1.1");
  }
  {
    TlsClient c;
    ClientOptions options = As(&client_);
    options.alpn = {"h2"};
    EXPECT_FALSE(c.ConnectAndGet(server.port(), options));
    EXPECT_NE(c.error().find("alert no application protocol"), std::string::npos) << c.error();
  }
  {
    // No ALPN at all (curl --http1.1 --no-alpn, older clients): plain HTTP/1.1.
    TlsClient c;
    ASSERT_TRUE(c.Connect(server.port(), As(&client_))) << c.error();
    EXPECT_EQ(c.alpn(), "");
    EXPECT_TRUE(c.Get().has_value()) << c.error();
  }
}

// --- rotation ----------------------------------------------------------------

// kubelet's Secret volume layout: tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>/;
// an update writes a new timestamped directory and renames a new ..data link over the old.
class SecretVolume {
 public:
  explicit SecretVolume(const TempDir& dir) : dir_(dir) {}
  void Publish(const std::string& cert_pem, const std::string& key_pem) {
    const std::string version = "..v" + std::to_string(++generation_);
    std::filesystem::create_directory(dir_.File(version));
    WriteInPlace(dir_.File(version + "/tls.crt"), cert_pem);
    WriteInPlace(dir_.File(version + "/tls.key"), key_pem);
    std::filesystem::create_directory_symlink(version, dir_.File("..data_tmp"));
    std::filesystem::rename(dir_.File("..data_tmp"), dir_.File("..data"));
    if (generation_ == 1) {
      std::filesystem::create_symlink("..data/tls.crt", dir_.File("tls.crt"));
      std::filesystem::create_symlink("..data/tls.key", dir_.File("tls.key"));
    }
  }

 private:
  const TempDir& dir_;
  int generation_ = 0;
};

TEST_F(TlsContextTest, RotationKeepsConnectionsAndNewOnesSeeTheNewCertificate) {
  TempDir volume_dir;
  SecretVolume volume(volume_dir);
  volume.Publish(server_.CertPem(), server_.KeyPem());
  config::TlsConfig config = Config(true);
  config.cert_file = volume_dir.File("tls.crt");
  config.key_file = volume_dir.File("tls.key");
  auto created = TlsContextProvider::Create(config, TlsProviderOptions{50ms});
  ASSERT_TRUE(created.ok()) << created.status().message();
  TlsContextProvider& provider = **created;
  TestTlsServer server(&provider);
  ASSERT_EQ(server.error(), "");

  TlsClient before;
  ASSERT_TRUE(before.Connect(server.port(), As(&client_))) << before.error();
  ASSERT_TRUE(before.Get().has_value()) << before.error();
  EXPECT_EQ(before.server_serial(), server_.Serial());

  const Identity renewed = Issue({"schedext-renewed", Usage::kServer}, &ca_);
  ASSERT_NE(renewed.Serial(), server_.Serial());
  volume.Publish(renewed.CertPem(), renewed.KeyPem());
  ASSERT_TRUE(NewConnectionsServe(server.port(), renewed.Serial()));
  EXPECT_EQ(provider.certificate().subject, "CN=schedext-renewed");
  EXPECT_EQ(provider.certificate().serial, renewed.Serial());
  EXPECT_GE(provider.reloads(), 1u);

  // The connection made before the rotation still works, on its old session.
  EXPECT_EQ(before.Get().value_or(before.error()), "peer=kube-scheduler alpn=-");
  EXPECT_EQ(before.server_serial(), server_.Serial());
}

TEST_F(TlsContextTest, BrokenRotationKeepsTheOldCertificateUntilTheKeyFollows) {
  LogCapture log;
  auto provider = MakeProvider(true, 50ms);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  TlsClient before;
  ASSERT_TRUE(before.Connect(server.port(), As(&client_))) << before.error();
  ASSERT_TRUE(before.Get().has_value()) << before.error();

  // A tool that rewrites the certificate first and the key a while later.
  const Identity renewed = Issue({"schedext-renewed", Usage::kServer}, &ca_);
  WriteInPlace(CertFile(), renewed.CertPem());
  const auto deadline = std::chrono::steady_clock::now() + kWaitBound;
  while (provider->reload_failures() == 0 && std::chrono::steady_clock::now() < deadline) {
    TlsClient c;  // handshakes are what make the provider look at the files
    EXPECT_TRUE(c.ConnectAndGet(server.port(), As(&client_))) << c.error();
    EXPECT_EQ(c.server_serial(), server_.Serial());
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_GT(provider->reload_failures(), 0u);
  const Status error = provider->last_reload_error();
  EXPECT_NE(error.message().find("server.tls.keyFile \"" + KeyFile() + "\" does not match"),
            std::string::npos)
      << error.message();
  EXPECT_NE(log.Text().find("still serving the old certificate"), std::string::npos) << log.Text();
  EXPECT_NE(log.Text().find(KeyFile()), std::string::npos) << log.Text();
  // Still the old certificate, for new and existing connections.
  TlsClient during;
  ASSERT_TRUE(during.ConnectAndGet(server.port(), As(&client_))) << during.error();
  EXPECT_EQ(during.server_serial(), server_.Serial());
  EXPECT_EQ(provider->certificate().serial, server_.Serial());
  EXPECT_TRUE(before.Get().has_value()) << before.error();

  WriteInPlace(KeyFile(), renewed.KeyPem());
  ASSERT_TRUE(NewConnectionsServe(server.port(), renewed.Serial()));
  EXPECT_TRUE(provider->last_reload_error().ok());
  EXPECT_NE(log.Text().find("TLS files reloaded: serving CN=schedext-renewed"), std::string::npos)
      << log.Text();
  EXPECT_TRUE(before.Get().has_value()) << before.error();
}

TEST_F(TlsContextTest, ClientCaRotationTakesEffectForNewConnections) {
  auto provider = MakeProvider(true, 50ms);
  ASSERT_NE(provider, nullptr);
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  TlsClient before;
  ASSERT_TRUE(before.Connect(server.port(), As(&client_))) << before.error();
  ASSERT_TRUE(before.Get().has_value()) << before.error();

  // The foreign CA replaces ours: its clients get in, ours no longer.
  WriteByRename(ClientCaFile(), foreign_ca_.CertPem());
  const auto deadline = std::chrono::steady_clock::now() + kWaitBound;
  bool foreign_in = false;
  while (!foreign_in && std::chrono::steady_clock::now() < deadline) {
    TlsClient c;
    foreign_in = c.ConnectAndGet(server.port(), As(&foreign_client_));
    if (!foreign_in) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(foreign_in);
  TlsClient ours;
  EXPECT_FALSE(ours.ConnectAndGet(server.port(), As(&client_)));
  EXPECT_NE(ours.error().find("alert unknown ca"), std::string::npos) << ours.error();
  // Authenticated before the change: the connection stays.
  EXPECT_TRUE(before.Get().has_value()) << before.error();
}

TEST_F(TlsContextTest, FileRemovedDuringRotationKeepsTheOldContext) {
  auto provider = MakeProvider(false, 50ms);
  ASSERT_NE(provider, nullptr);
  std::filesystem::remove(KeyFile());
  const Status status = provider->ReloadIfChanged();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(
      status.message().find("server.tls.keyFile \"" + KeyFile() + "\": No such file or directory"),
      std::string::npos)
      << status.message();
  EXPECT_EQ(provider->certificate().serial, server_.Serial());
  TestTlsServer server(provider.get());
  ASSERT_EQ(server.error(), "");
  TlsClient c;
  ASSERT_TRUE(c.ConnectAndGet(server.port(), As(nullptr))) << c.error();
  EXPECT_EQ(c.server_serial(), server_.Serial());
  // The key back: the next check loads again (the stamps of the failed set are retried).
  WriteInPlace(KeyFile(), server_.KeyPem());
  EXPECT_TRUE(provider->ReloadIfChanged().ok());
  EXPECT_EQ(provider->reloads(), 1u);
  // Unchanged files: nothing is rebuilt.
  EXPECT_TRUE(provider->ReloadIfChanged().ok());
  EXPECT_EQ(provider->reloads(), 1u);
}

TEST_F(TlsContextTest, CurrentFromManyThreadsDuringRotation) {
  auto provider = MakeProvider(false, 1ms);
  ASSERT_NE(provider, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> null_contexts{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        if (provider->Current() == nullptr) null_contexts.fetch_add(1);
      }
    });
  }
  std::string last_serial;
  for (int i = 0; i < 10; ++i) {
    const Identity next = Issue({"schedext-" + std::to_string(i), Usage::kServer}, &ca_);
    WriteByRename(KeyFile(), next.KeyPem());
    WriteByRename(CertFile(), next.CertPem());
    last_serial = next.Serial();
    std::this_thread::sleep_for(5ms);
  }
  const auto deadline = std::chrono::steady_clock::now() + kWaitBound;
  while (provider->certificate().serial != last_serial &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  stop.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(null_contexts.load(), 0);
  EXPECT_EQ(provider->certificate().serial, last_serial);
  EXPECT_GE(provider->reloads(), 1u);
}

}  // namespace
}  // namespace schedext::server
