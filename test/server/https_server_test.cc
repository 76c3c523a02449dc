// HttpServer with server.tls over real loopback handshakes: the listener asks
// for a client certificate signed by clientCAFile and refuses everything else
// at the handshake; the status listener stays plain HTTP for probes; a
// certificate rotated on disk reaches new connections while old ones go on.
// Certificates come from testing/pki.h; the client is testing/tls_client.h.
#include <openssl/ssl.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "schedext/cli/commands.h"
#include "schedext/config/config.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "testing/loopback.h"
#include "testing/pki.h"
#include "testing/test_service.h"
#include "testing/tls_client.h"

namespace schedext::server {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using schedext::testing::BuildRequest;
using schedext::testing::CertificateAuthority;
using schedext::testing::ClientCertOptions;
using schedext::testing::Exchange;
using schedext::testing::HttpReply;
using schedext::testing::IssuedCert;
using schedext::testing::RawConnection;
using schedext::testing::ReadFileToString;
using schedext::testing::ServerCertOptions;
using schedext::testing::TlsClient;
using schedext::testing::TlsClientOptions;
using schedext::testing::TlsReply;
using schedext::testing::WritePemFile;

constexpr std::string_view kConfig = R"(
profiles:
  - name: default
    policies:
      - name: NodeHealth
      - name: TaintToleration
)";
constexpr auto kWaitBound = 15s;

std::string Fixture(std::string_view name) {
  return ReadFileToString(std::string(SCHEDEXT_TESTDATA_DIR) +
                          "/kube-scheduler-1.26/" + "nodecache-false/" +
                          std::string(name) + ".json");
}

IssuedCert Must(StatusOr<IssuedCert> v) {
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? std::move(v).value() : IssuedCert{};
}

class TempDir {
public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "https_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr)
      path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty())
      std::filesystem::remove_all(path_, ec);
  }
  std::string File(std::string_view name) const {
    return path_ + "/" + std::string(name);
  }
  bool ok() const { return !path_.empty(); }

private:
  std::string path_;
};

// The server with TLS on its main port and a plain status listener, serving
// on its own thread until destroyed.
// kConfig's service on 127.0.0.1 (testing/test_service.h) serving TLS with
// `tls`, and a plain status listener, until destroyed.
class TlsTestServer : public schedext::testing::LoopbackServer {
public:
  explicit TlsTestServer(
      const config::TlsConfig &tls,
      const std::function<void(HttpServerOptions &)> &tweak = nullptr)
      : LoopbackServer({.config_yaml = kConfig},
                       [&tls, &tweak](HttpServerOptions &options) {
                         options.server.status_host = "127.0.0.1";
                         options.server.status_port = 0;
                         options.server.tls = tls;
                         if (tweak)
                           tweak(options);
                       }) {}
  // The probe goes to the plain status listener.
  ~TlsTestServer() { AwaitServing(); }
};

class HttpsServerTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    auto ca = CertificateAuthority::Create("schedext test CA");
    auto foreign_ca = CertificateAuthority::Create("foreign CA");
    ASSERT_TRUE(ca.ok() && foreign_ca.ok());
    ca_.emplace(std::move(ca).value());
    foreign_ca_.emplace(std::move(foreign_ca).value());
    server_cert_ = Must(ca_->Issue(ServerCertOptions("schedext")));
    client_ = Must(ca_->Issue(ClientCertOptions("kube-scheduler")));
    auto expired = ClientCertOptions("expired");
    expired.expired = true;
    expired_client_ = Must(ca_->Issue(expired));
    foreign_client_ = Must(foreign_ca_->Issue(ClientCertOptions("intruder")));
    ASSERT_TRUE(WritePemFile(dir_.File("tls.crt"), server_cert_.cert_pem).ok());
    ASSERT_TRUE(WritePemFile(dir_.File("tls.key"), server_cert_.key_pem).ok());
    ASSERT_TRUE(WritePemFile(dir_.File("client-ca.crt"), ca_->cert_pem()).ok());
    tls_.cert_file = dir_.File("tls.crt");
    tls_.key_file = dir_.File("tls.key");
    tls_.client_ca_file = dir_.File("client-ca.crt");
    filter3_ = Fixture("filter-3");
    ASSERT_FALSE(filter3_.empty());
  }

  TlsClientOptions As(const IssuedCert *cert) const {
    TlsClientOptions o;
    o.trust_pem = ca_->cert_pem();
    if (cert != nullptr) {
      o.cert_pem = cert->cert_pem;
      o.key_pem = cert->key_pem;
    }
    return o;
  }

  // Handshake plus one GET /healthz; the status, or 0 with the reason in `why`.
  int Healthz(int port, const TlsClientOptions &options,
              std::string *why = nullptr) {
    TlsClient c;
    std::optional<TlsReply> reply;
    if (c.Connect(port, options))
      reply = c.Request(BuildRequest("GET", "/healthz", ""));
    if (why != nullptr)
      *why = c.error();
    return reply ? reply->status : 0;
  }

  TempDir dir_;
  std::optional<CertificateAuthority> ca_;
  std::optional<CertificateAuthority> foreign_ca_;
  IssuedCert server_cert_, client_, expired_client_, foreign_client_;
  config::TlsConfig tls_;
  std::string filter3_;
};

TEST_F(HttpsServerTest, ClientCertificateSignedByTheCaIsServed) {
  TlsTestServer server(tls_);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  TlsClient c;
  TlsClientOptions options = As(&client_);
  options.alpn = {"h2", "http/1.1"}; // what kube-scheduler's Go client offers
  ASSERT_TRUE(c.Connect(server.port(), options)) << c.error();
  EXPECT_EQ(c.alpn(), "http/1.1");
  EXPECT_TRUE(c.certificate_requested());

  // filter-3's body and reply (~20 KB) each span two TLS records: the reply's
  // head and body are written as two buffers, the case Beast's ssl_stream got
  // wrong (tls_session.h).
  std::optional<TlsReply> filter =
      c.Request(BuildRequest("POST", "/filter", filter3_));
  ASSERT_TRUE(filter.has_value()) << c.error();
  ASSERT_EQ(filter->status, 200) << filter->body;
  const json body = json::parse(filter->body, nullptr, false);
  ASSERT_FALSE(body.is_discarded()) << filter->body;
  EXPECT_EQ(body["Nodes"]["items"].size(), 5u) << filter->body;
  // Keep-alive on the same TLS connection.
  std::optional<TlsReply> health =
      c.Request(BuildRequest("GET", "/healthz", ""));
  ASSERT_TRUE(health.has_value()) << c.error();
  EXPECT_EQ(health->status, 200);
}

TEST_F(HttpsServerTest,
       CallersWithoutAGoodCertificateAreRefusedAtTheHandshake) {
  TlsTestServer server(tls_);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  struct Case {
    const char *name;
    const IssuedCert *cert;
    const char *alert;
  };
  for (const Case &c :
       {Case{"no certificate", nullptr, "alert certificate required"},
        Case{"foreign CA", &foreign_client_, "alert unknown ca"},
        Case{"expired", &expired_client_, "alert certificate expired"},
        // serverAuth only: not a client certificate.
        Case{"server certificate", &server_cert_,
             "alert unsupported certificate"}}) {
    SCOPED_TRACE(c.name);
    std::string why;
    EXPECT_EQ(Healthz(server.port(), As(c.cert), &why), 0);
    EXPECT_NE(why.find(c.alert), std::string::npos) << why;
  }
  EXPECT_EQ(Healthz(server.port(), As(&client_)), 200);
}

// Plain HTTP to the TLS port (a scheduler config without enableHTTPS, curl on
// http://): a plain 400 that says so, then the connection closes, as Go's
// net/http answers; nothing is routed. Bytes that are neither TLS nor HTTP
// get the connection closed without a reply.
TEST_F(HttpsServerTest, PlainHttpOnTheTlsPortGets400SayingSoAndIsClosed) {
  TlsTestServer server(tls_);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  for (const std::string &request :
       {BuildRequest("GET", "/healthz", ""),
        // A body larger than the first read: the rest is read and dropped,
        // so the client still reads the 400 before the close.
        BuildRequest("POST", "/filter", filter3_)}) {
    SCOPED_TRACE(request.substr(0, request.find('\r')));
    RawConnection raw;
    ASSERT_TRUE(raw.Connect(server.port()));
    ASSERT_TRUE(raw.Send(request)) << raw.error();
    HttpReply reply;
    ASSERT_TRUE(raw.ReadReply(reply)) << raw.error();
    EXPECT_EQ(reply.status, 400);
    EXPECT_EQ(reply.Header("Connection"), "close");
    const json body = json::parse(reply.body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << reply.body;
    EXPECT_EQ(body.value("Error", ""),
              "client sent a plain HTTP request to the HTTPS port");
    EXPECT_TRUE(raw.PeerClosedWithin(5000));
  }
  {
    RawConnection raw;
    ASSERT_TRUE(raw.Connect(server.port()));
    ASSERT_TRUE(raw.Send(std::string("\x00\x01\x02\x03", 4)));
    EXPECT_TRUE(raw.PeerClosedWithin(5000));
    std::string rest;
    raw.ReadToEnd(rest);
    EXPECT_EQ(rest, "");
  }
  // TLS clients are served as before.
  EXPECT_EQ(Healthz(server.port(), As(&client_)), 200);
}

TEST_F(HttpsServerTest, TlsBelow12IsRefused) {
  TlsTestServer server(tls_);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  TlsClientOptions old = As(&client_);
  old.min_version = TLS1_1_VERSION;
  old.max_version = TLS1_1_VERSION;
  std::string why;
  EXPECT_EQ(Healthz(server.port(), old, &why), 0);
  EXPECT_NE(why.find("alert protocol version"), std::string::npos) << why;
  TlsClientOptions tls12 = As(&client_);
  tls12.max_version = TLS1_2_VERSION;
  EXPECT_EQ(Healthz(server.port(), tls12, &why), 200) << why;
}

TEST_F(HttpsServerTest, StatusListenerIsPlainAndServesOnlyProbes) {
  TlsTestServer server(tls_);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  ASSERT_GT(server.status_port(), 0);
  for (const char *path : {"/healthz", "/readyz", "/version", "/metrics"}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(
        Exchange(server.status_port(), BuildRequest("GET", path, "")).status,
        200);
  }
  // The verbs need the authenticated listener.
  EXPECT_EQ(
      Exchange(server.status_port(), BuildRequest("POST", "/filter", filter3_))
          .status,
      404);
  EXPECT_EQ(Exchange(server.status_port(), BuildRequest("POST", "/bind", "{}"))
                .status,
            404);
}

TEST_F(HttpsServerTest, ConnectionCloseReplyIsReadWholeThenTheServerCloses) {
  TlsTestServer server(tls_);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  TlsClient c;
  ASSERT_TRUE(c.Connect(server.port(), As(&client_))) << c.error();
  std::optional<TlsReply> reply = c.Request(
      BuildRequest("POST", "/filter", filter3_, {{"Connection", "close"}}));
  ASSERT_TRUE(reply.has_value()) << c.error();
  EXPECT_EQ(reply->status, 200);
  EXPECT_NE(reply->head.find("Connection: close"), std::string::npos)
      << reply->head;
  EXPECT_TRUE(c.PeerCloses());
}

TEST_F(HttpsServerTest, SilentConnectionIsCutByTheHeadDeadline) {
  TlsTestServer server(
      tls_, [](HttpServerOptions &o) { o.server.header_timeout_seconds = 1; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  RawConnection silent; // TCP only: never starts the handshake
  ASSERT_TRUE(silent.Connect(server.port()));
  EXPECT_TRUE(silent.PeerClosedWithin(10000));
  // A client stuck half-way through the handshake too: the ClientHello's
  // first bytes only.
  RawConnection partial;
  ASSERT_TRUE(partial.Connect(server.port()));
  ASSERT_TRUE(partial.Send(std::string("\x16\x03\x01\x02\x00", 5)));
  EXPECT_TRUE(partial.PeerClosedWithin(10000));
  EXPECT_EQ(Healthz(server.port(), As(&client_)), 200);
}

TEST_F(HttpsServerTest, RotatedCertificateReachesNewConnectionsOnly) {
  TlsTestServer server(tls_);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  TlsClient before;
  ASSERT_TRUE(before.Connect(server.port(), As(&client_))) << before.error();
  ASSERT_TRUE(before.Request(BuildRequest("GET", "/healthz", "")).has_value())
      << before.error();
  const std::string old_serial = before.server_serial();

  const IssuedCert renewed =
      Must(ca_->Issue(ServerCertOptions("schedext-renewed")));
  ASSERT_TRUE(WritePemFile(dir_.File("tls.key.new"), renewed.key_pem).ok());
  ASSERT_TRUE(WritePemFile(dir_.File("tls.crt.new"), renewed.cert_pem).ok());
  std::filesystem::rename(dir_.File("tls.key.new"), dir_.File("tls.key"));
  std::filesystem::rename(dir_.File("tls.crt.new"), dir_.File("tls.crt"));

  // The listener checks the files at most once a second, on a handshake.
  std::string new_serial;
  const auto deadline = std::chrono::steady_clock::now() + kWaitBound;
  while (std::chrono::steady_clock::now() < deadline) {
    TlsClient c;
    if (c.Connect(server.port(), As(&client_)) &&
        c.Request(BuildRequest("GET", "/healthz", "")).has_value() &&
        c.server_serial() != old_serial) {
      new_serial = c.server_serial();
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(new_serial.empty())
      << "the renewed certificate was never served";
  std::optional<TlsReply> again =
      before.Request(BuildRequest("POST", "/filter", filter3_));
  ASSERT_TRUE(again.has_value()) << before.error();
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(before.server_serial(), old_serial);
}

TEST_F(HttpsServerTest, BindFailsNamingTheFileWhenTheKeyDoesNotMatch) {
  ASSERT_TRUE(WritePemFile(dir_.File("tls.key"), client_.key_pem).ok());
  TlsTestServer server(tls_);
  ASSERT_FALSE(server.init().ok());
  EXPECT_NE(server.init().message().find("server.tls.keyFile \"" + tls_.key_file +
                                         "\" does not match"),
            std::string::npos)
      << server.init().ToString();
}

TEST_F(HttpsServerTest, WithoutClientCaAnyClientIsServed) {
  tls_.client_ca_file.clear();
  TlsTestServer server(tls_);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  TlsClient c;
  ASSERT_TRUE(c.Connect(server.port(), As(nullptr))) << c.error();
  EXPECT_FALSE(c.certificate_requested());
  std::optional<TlsReply> reply =
      c.Request(BuildRequest("POST", "/filter", filter3_));
  ASSERT_TRUE(reply.has_value()) << c.error();
  EXPECT_EQ(reply->status, 200);
}

// `schedext why` over the main listener's TLS, as an operator runs it: with
// the CA and a client certificate it gets the server's HTTP answer (this
// test server has no explain routes: a 404 with its JSON Error); without the
// client certificate the server refuses it, and why says what is missing;
// trusting another CA it refuses the server.
TEST_F(HttpsServerTest, WhyTalksTlsWithItsClientCertificate) {
  TlsTestServer server(tls_);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  ASSERT_TRUE(WritePemFile(dir_.File("why.crt"), client_.cert_pem).ok());
  ASSERT_TRUE(WritePemFile(dir_.File("why.key"), client_.key_pem).ok());
  ASSERT_TRUE(WritePemFile(dir_.File("foreign-ca.crt"), foreign_ca_->cert_pem()).ok());
  const std::string url = "https://127.0.0.1:" + std::to_string(server.port());
  struct Run {
    int code;
    std::string out, err;
  };
  const auto why = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", url});
    args.push_back("default/pending");
    std::ostringstream out, err;
    const int code = cli::WhyCommand(args, out, err);
    return Run{code, out.str(), err.str()};
  };

  const Run trusted = why({"--ca-file", dir_.File("client-ca.crt"), "--cert-file",
                           dir_.File("why.crt"), "--key-file", dir_.File("why.key")});
  EXPECT_EQ(trusted.code, 1);
  EXPECT_NE(trusted.err.find("/explain/pod/default/pending: HTTP 404: "), std::string::npos)
      << trusted.err;
  EXPECT_NE(trusted.err.find("\"Error\""), std::string::npos) << trusted.err;

  const Run no_cert = why({"--ca-file", dir_.File("client-ca.crt")});
  EXPECT_EQ(no_cert.code, 1);
  EXPECT_EQ(no_cert.err.find(": HTTP "), std::string::npos) << no_cert.err;
  EXPECT_NE(no_cert.err.find("wants --cert-file and --key-file"), std::string::npos)
      << no_cert.err;

  const Run foreign = why({"--ca-file", dir_.File("foreign-ca.crt"), "--cert-file",
                           dir_.File("why.crt"), "--key-file", dir_.File("why.key")});
  EXPECT_EQ(foreign.code, 1);
  EXPECT_NE(foreign.err.find("the server's certificate is not signed by " +
                             dir_.File("foreign-ca.crt")),
            std::string::npos)
      << foreign.err;

  const Run plain_flags = why({"--cert-file", dir_.File("why.crt")});
  EXPECT_EQ(plain_flags.code, 2);
  EXPECT_NE(plain_flags.err.find("--cert-file and --key-file go together"), std::string::npos)
      << plain_flags.err;
}

} // namespace
} // namespace schedext::server
