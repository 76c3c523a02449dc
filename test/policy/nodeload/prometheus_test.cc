// NodeLoad's Prometheus client: decoding of instant-query replies (exact JSON
// as Prometheus 2.x sends it), URL parsing, and real loopback round trips to
// a fake Prometheus (plain and HTTPS with a test CA).
#include "policy/builtin/nodeload/prometheus.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "testing/pki.h"

namespace schedext::policy::nodeload {
namespace {

// A reply of `prometheus 2.42` to
// 100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[2m]))).
constexpr std::string_view kCpuReply = R"({"status":"success","data":{"resultType":"vector","result":[)"
    R"({"metric":{"instance":"node-b:9100"},"value":[1701432000.123,"62.5"]},)"
    R"({"metric":{"instance":"node-a:9100"},"value":[1701432000.123,"12.25"]},)"
    R"({"metric":{"instance":"[fd00::1]:9100"},"value":[1701432000.123,"1e1"]}]}})";

TEST(NodeLoadPrometheusTest, ParsesAVectorSortedByNodeWithPortsCut) {
  StatusOr<VectorReply> reply = ParseVectorReply(kCpuReply, "instance", /*trim_port=*/true);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->values.size(), 3u);
  EXPECT_EQ(reply->values[0].node, "fd00::1");
  EXPECT_DOUBLE_EQ(reply->values[0].value, 10);
  EXPECT_EQ(reply->values[1].node, "node-a");
  EXPECT_DOUBLE_EQ(reply->values[1].value, 12.25);
  EXPECT_EQ(reply->values[2].node, "node-b");
  EXPECT_DOUBLE_EQ(reply->values[2].value, 62.5);
  EXPECT_EQ(reply->unlabelled, 0u);
}

TEST(NodeLoadPrometheusTest, KeepsPortsWhenAskedAndReadsOtherLabels) {
  StatusOr<VectorReply> reply = ParseVectorReply(kCpuReply, "instance", /*trim_port=*/false);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->values[1].node, "node-a:9100");

  constexpr std::string_view kByNode =
      R"({"status":"success","data":{"resultType":"vector","result":[)"
      R"({"metric":{"node":"worker-1","job":"node"},"value":[1.5,"40"]},)"
      R"({"metric":{"job":"node"},"value":[1.5,"99"]},)"
      R"({"metric":{"node":"worker-2"},"value":[1.5,"NaN"]},)"
      R"({"metric":{"node":"worker-3"},"value":[1.5,"+Inf"]},)"
      R"({"metric":{"node":"worker-1"},"value":[1.5,"45"]}]}})";
  reply = ParseVectorReply(kByNode, "node", true);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->values.size(), 1u);
  EXPECT_EQ(reply->values[0].node, "worker-1");
  EXPECT_DOUBLE_EQ(reply->values[0].value, 45);  // two series: the larger
  EXPECT_EQ(reply->duplicates, 1u);
  EXPECT_EQ(reply->unlabelled, 1u);
  EXPECT_EQ(reply->not_finite, 2u);
}

TEST(NodeLoadPrometheusTest, EmptyResultIsNoData) {
  StatusOr<VectorReply> reply = ParseVectorReply(
      R"({"status":"success","data":{"resultType":"vector","result":[]}})", "instance", true);
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(reply->values.empty());
}

TEST(NodeLoadPrometheusTest, RejectsErrorsAndOtherShapes) {
  struct Case {
    std::string name;
    std::string body;
    StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"prometheus error",
       R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected )"
       R"(right parenthesis ')'"})",
       StatusCode::kUnavailable,
       "query failed: bad_data: 1:5: parse error: unexpected right parenthesis ')'"},
      {"not json", "<html>502 Bad Gateway</html>", StatusCode::kInvalidArgument,
       "reply is not JSON"},
      {"scalar",
       R"({"status":"success","data":{"resultType":"scalar","result":[1701432000,"1"]}})",
       StatusCode::kInvalidArgument,
       "reply: data.resultType: must be \"vector\" (an instant vector query), got \"scalar\""},
      {"matrix",
       R"({"status":"success","data":{"resultType":"matrix","result":[]}})",
       StatusCode::kInvalidArgument,
       "reply: data.resultType: must be \"vector\" (an instant vector query), got \"matrix\""},
      {"no data", R"({"status":"success"})", StatusCode::kInvalidArgument,
       "reply: data: must be an object"},
      {"value not a pair",
       R"({"status":"success","data":{"resultType":"vector","result":[)"
       R"({"metric":{"instance":"a"},"value":[1.5]}]}})",
       StatusCode::kInvalidArgument, "reply: data.result[0].value: must be [<time>, \"<value>\"]"},
      {"bad number",
       R"({"status":"success","data":{"resultType":"vector","result":[)"
       R"({"metric":{"instance":"a"},"value":[1.5,"1,5"]}]}})",
       StatusCode::kInvalidArgument, "reply: data.result[0].value: invalid sample value \"1,5\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<VectorReply> reply = ParseVectorReply(c.body, "instance", true);
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.status().code(), c.code);
    EXPECT_EQ(reply.status().message(), c.message);
  }
}

TEST(NodeLoadPrometheusTest, ParsesUrls) {
  StatusOr<PrometheusUrl> url = ParsePrometheusUrl("http://prometheus.monitoring:9090");
  ASSERT_TRUE(url.ok());
  EXPECT_FALSE(url->tls);
  EXPECT_EQ(url->host, "prometheus.monitoring");
  EXPECT_EQ(url->port, 9090);
  EXPECT_EQ(url->path_prefix, "");

  url = ParsePrometheusUrl("https://thanos.example.com/prometheus/");
  ASSERT_TRUE(url.ok());
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->port, 443);
  EXPECT_EQ(url->path_prefix, "/prometheus");

  url = ParsePrometheusUrl("http://[::1]:9090");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 9090);

  struct Bad {
    std::string url;
    std::string message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"prometheus:9090", "must be an http:// or https:// URL"},
           {"http://:9090", "has no host"},
           {"http://p:0", "invalid port \"0\""},
           {"http://p:99999", "invalid port \"99999\""},
           {"http://p:", "invalid port \"\""},
           {"http://user:pw@p:9090", "must not carry credentials (use bearerTokenFile)"},
           {"http://p:9090/?x=1", "must not have a query or fragment"},
       }) {
    SCOPED_TRACE(b.url);
    url = ParsePrometheusUrl(b.url);
    ASSERT_FALSE(url.ok());
    EXPECT_EQ(url.status().message(), b.message);
  }
}

// A fake Prometheus on loopback that records what it was asked.
class FakePrometheus {
 public:
  explicit FakePrometheus(std::unique_ptr<httplib::Server> server = nullptr)
      : server_(server ? std::move(server) : std::make_unique<httplib::Server>()) {
    server_->Post(R"(.*/api/v1/query)", [this](const httplib::Request& req,
                                               httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      paths_.push_back(req.path);
      queries_.push_back(req.get_param_value("query"));
      authorizations_.push_back(req.get_header_value("Authorization"));
      res.status = status_;
      res.set_content(body_, "application/json");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
  }
  ~FakePrometheus() {
    server_->stop();
    thread_.join();
  }
  void Answer(int status, std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    body_ = std::move(body);
  }
  int port() const { return port_; }
  std::vector<std::string> paths() const {
    std::lock_guard<std::mutex> lock(mu_);
    return paths_;
  }
  std::vector<std::string> queries() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queries_;
  }
  std::vector<std::string> authorizations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return authorizations_;
  }

 private:
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  int status_ = 200;
  std::string body_;
  std::vector<std::string> paths_;
  std::vector<std::string> queries_;
  std::vector<std::string> authorizations_;
};

std::string TempDir() {
  std::string pattern = ::testing::TempDir() + "nodeload_XXXXXX";
  char* dir = ::mkdtemp(pattern.data());
  return dir == nullptr ? std::string() : std::string(dir);
}

TEST(NodeLoadPrometheusTest, QueriesOverLoopbackWithTokenAndPathPrefix) {
  FakePrometheus prometheus;
  prometheus.Answer(200, std::string(kCpuReply));
  const std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  const std::string token_file = dir + "/token";
  {
    FILE* f = std::fopen(token_file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("s3cret\n", f);
    std::fclose(f);
  }
  PrometheusEndpoint endpoint;
  endpoint.url = "http://127.0.0.1:" + std::to_string(prometheus.port()) + "/prom";
  endpoint.bearer_token_file = token_file;
  StatusOr<std::unique_ptr<PrometheusClient>> client = PrometheusClient::Make(endpoint);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const std::string expr = R"(100 * avg by (instance) (rate(x{mode="idle"}[2m])))";
  StatusOr<std::string> body = (*client)->Query(expr);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, kCpuReply);

  // A rotated token is read again.
  {
    FILE* f = std::fopen(token_file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("rotated", f);
    std::fclose(f);
  }
  ASSERT_TRUE((*client)->Query("up").ok());
  EXPECT_EQ(prometheus.paths(), (std::vector<std::string>{"/prom/api/v1/query",
                                                          "/prom/api/v1/query"}));
  EXPECT_EQ(prometheus.queries(), (std::vector<std::string>{expr, "up"}));
  EXPECT_EQ(prometheus.authorizations(),
            (std::vector<std::string>{"Bearer s3cret", "Bearer rotated"}));
  std::remove(token_file.c_str());
  ::rmdir(dir.c_str());
}

TEST(NodeLoadPrometheusTest, HttpErrorsCarryPrometheusMessage) {
  FakePrometheus prometheus;
  prometheus.Answer(400, R"({"status":"error","errorType":"bad_data",)"
                         R"("error":"invalid parameter \"query\": 1:1: parse error"})");
  PrometheusEndpoint endpoint;
  endpoint.url = "http://127.0.0.1:" + std::to_string(prometheus.port());
  StatusOr<std::unique_ptr<PrometheusClient>> client = PrometheusClient::Make(endpoint);
  ASSERT_TRUE(client.ok());
  StatusOr<std::string> body = (*client)->Query("(");
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(body.status().message(),
            "prometheus " + endpoint.url +
                ": HTTP 400: bad_data: invalid parameter \"query\": 1:1: parse error");
}

TEST(NodeLoadPrometheusTest, RefusedConnectionIsUnavailable) {
  // A port bound but not listening: the kernel refuses connections to it for
  // as long as the socket lives, so no other process can take it meanwhile.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  PrometheusEndpoint endpoint;
  endpoint.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  endpoint.timeout = std::chrono::milliseconds(5000);
  StatusOr<std::unique_ptr<PrometheusClient>> client = PrometheusClient::Make(endpoint);
  ASSERT_TRUE(client.ok());
  StatusOr<std::string> body = (*client)->Query("up");
  ::close(fd);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), StatusCode::kUnavailable) << body.status().ToString();
  EXPECT_EQ(body.status().message(), "prometheus " + endpoint.url + ": cannot connect");
}

TEST(NodeLoadPrometheusTest, MakeRefusesCaFileWithoutTls) {
  PrometheusEndpoint endpoint;
  endpoint.url = "http://127.0.0.1:9090";
  endpoint.ca_file = "/etc/ssl/certs/ca-certificates.crt";
  StatusOr<std::unique_ptr<PrometheusClient>> client = PrometheusClient::Make(endpoint);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().message(), "caFile needs an https:// url");
}

TEST(NodeLoadPrometheusTest, HttpsVerifiesTheServerWithTheCaFile) {
  StatusOr<testing::CertificateAuthority> ca = testing::CertificateAuthority::Create("test-ca");
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  StatusOr<testing::IssuedCert> cert = ca->Issue(testing::ServerCertOptions("prometheus"));
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  StatusOr<testing::CertificateAuthority> other = testing::CertificateAuthority::Create("other");
  ASSERT_TRUE(other.ok());
  const std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  ASSERT_TRUE(testing::WritePemFile(dir + "/ca.crt", ca->cert_pem()).ok());
  ASSERT_TRUE(testing::WritePemFile(dir + "/other.crt", other->cert_pem()).ok());
  ASSERT_TRUE(testing::WritePemFile(dir + "/tls.crt", cert->cert_pem).ok());
  ASSERT_TRUE(testing::WritePemFile(dir + "/tls.key", cert->key_pem).ok());

  FakePrometheus prometheus(std::make_unique<httplib::SSLServer>(
      (dir + "/tls.crt").c_str(), (dir + "/tls.key").c_str()));
  prometheus.Answer(200, std::string(kCpuReply));

  PrometheusEndpoint endpoint;
  endpoint.url = "https://127.0.0.1:" + std::to_string(prometheus.port());
  endpoint.ca_file = dir + "/ca.crt";
  StatusOr<std::unique_ptr<PrometheusClient>> client = PrometheusClient::Make(endpoint);
  ASSERT_TRUE(client.ok());
  StatusOr<std::string> body = (*client)->Query("up");
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, kCpuReply);

  endpoint.ca_file = dir + "/other.crt";
  client = PrometheusClient::Make(endpoint);
  ASSERT_TRUE(client.ok());
  body = (*client)->Query("up");
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(body.status().message().find("prometheus " + endpoint.url + ": "), std::string::npos)
      << body.status().ToString();
  EXPECT_EQ(prometheus.queries().size(), 1u);  // the unverified server was never asked

  for (const char* name : {"ca.crt", "other.crt", "tls.crt", "tls.key"}) {
    std::remove((dir + "/" + name).c_str());
  }
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace schedext::policy::nodeload
