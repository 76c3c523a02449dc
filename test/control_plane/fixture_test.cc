// The control-plane fixture itself, against the real kube-apiserver: every
// kubeconfig it hands out authenticates as the user it names, over TLS
// verified against the PKI it generated.
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "control_plane/control_plane_suite.h"
#include "testing/pki.h"

namespace schedext::testing {
namespace {

using nlohmann::json;

std::string ReadFileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FixtureTest : public ControlPlaneSuite {
 protected:
  static void SetUpTestSuite() { StartSharedControlPlane(); }
};

// The minor this registration of the suite is for (ctest sets it per
// version, test/CMakeLists.txt); 1.26 when run by hand without it.
std::string ExpectedMinor() {
  const char* v = std::getenv("SCHEDEXT_K8S_VERSION");
  return v != nullptr && *v != '\0' ? std::string(v) : std::string("1.26");
}

TEST_F(FixtureTest, PrintsVersionsAndServesReadyz) {
  const std::string minor = ExpectedMinor();
  EXPECT_EQ(cp().api_server_version().rfind("Kubernetes v" + minor + ".", 0), 0u)
      << cp().api_server_version();
  if (!cp().binaries().kube_scheduler.empty()) {
    EXPECT_EQ(cp().scheduler_version().rfind("Kubernetes v" + minor + ".", 0), 0u)
        << cp().scheduler_version();
  }
  std::cout << "kube-apiserver --version: " << cp().api_server_version() << "\n"
            << "kube-scheduler --version: " << cp().scheduler_version() << "\n";
  auto admin = NewClient(cp().admin_kubeconfig());
  ASSERT_NE(admin, nullptr);
  auto ready = admin->Get("/readyz");
  ASSERT_TRUE(ready.ok()) << ready.status().ToString();
  EXPECT_EQ(ready->status, 200) << ready->body;
  auto version = admin->Get("/version");
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(json::parse(version->body).value("minor", ""), minor.substr(minor.find('.') + 1))
      << version->body;
}

TEST_F(FixtureTest, RefusesBinariesOfAnotherMinor) {
  // A suite registered for one minor must not run on another's binaries
  // under its name (KUBEBUILDER_ASSETS or a stale folder pointing elsewhere).
  const std::string saved = ExpectedMinor();
  ASSERT_EQ(::setenv("SCHEDEXT_K8S_VERSION", "1.9", 1), 0);
  StatusOr<ControlPlaneBinaries> other = FindControlPlaneBinaries();
  ASSERT_EQ(::setenv("SCHEDEXT_K8S_VERSION", saved.c_str(), 1), 0);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kNotFound);
  EXPECT_NE(other.status().message().find("SCHEDEXT_K8S_VERSION=1.9 but"), std::string::npos)
      << other.status().message();
  StatusOr<ControlPlaneBinaries> own = FindControlPlaneBinaries();
  EXPECT_TRUE(own.ok()) << own.status().ToString();
}

TEST_F(FixtureTest, EachKubeconfigIsItsUser) {
  // admin (token, system:masters) and admin-cert (client certificate,
  // O=system:masters) may list secrets; the scheduler and schedext may not.
  for (const std::string& kc : {cp().admin_kubeconfig(), cp().admin_cert_kubeconfig()}) {
    auto client = NewClient(kc);
    ASSERT_NE(client, nullptr);
    auto r = client->Get("/api/v1/namespaces/kube-system/secrets");
    ASSERT_TRUE(r.ok()) << kc << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 200) << kc << ": " << r->body;
  }
  auto scheduler = NewClient(cp().scheduler_kubeconfig());
  ASSERT_NE(scheduler, nullptr);
  auto r = scheduler->Get("/api/v1/namespaces/kube-system/secrets");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("User \\\"system:kube-scheduler\\\" cannot list resource"),
            std::string::npos)
      << r->body;

  auto schedext = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(schedext, nullptr);
  r = schedext->Get("/api/v1/namespaces/kube-system/secrets");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("User \\\"" + cp().schedext_user() + "\\\" cannot list resource"),
            std::string::npos)
      << r->body;
}

TEST_F(FixtureTest, RefusesAnotherCasCertificateAndAnUnknownToken) {
  // A client certificate from a foreign CA is not an identity: the server
  // ignores it and, with no token, the request is anonymous (401: RBAC's
  // anonymous user may read /readyz but not pods).
  auto foreign = CertificateAuthority::Create("foreign-ca");
  ASSERT_TRUE(foreign.ok()) << foreign.status().ToString();
  auto cert = foreign->Issue(ClientCertOptions("intruder", {"system:masters"}));
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  cluster::ClientConfig config = ConfigFor(cp().admin_kubeconfig());
  config.token.clear();
  config.client_cert_pem = cert->cert_pem;
  config.client_key_pem = cert->key_pem;
  auto client = cluster::NewHttpKubeClient(config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto r = (*client)->Get("/api/v1/pods");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 401) << r->body;

  config = ConfigFor(cp().admin_kubeconfig());
  config.token = "not-a-token";
  client = cluster::NewHttpKubeClient(config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  r = (*client)->Get("/api/v1/pods");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 401) << r->body;
  EXPECT_EQ(json::parse(r->body).value("message", ""), "Unauthorized") << r->body;
}

TEST_F(FixtureTest, StartsAndStopsAKubeScheduler) {
  if (cp().binaries().kube_scheduler.empty()) {
    if (ControlPlaneRequired()) FAIL() << "CI=true and no kube-scheduler binary";
    GTEST_SKIP() << "no kube-scheduler binary";
  }
  auto started = cp().StartScheduler(cp().SchedulerConfigHeader());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  const pid_t pid = started->pid;
  EXPECT_GT(pid, 0);
  EXPECT_EQ(::kill(pid, 0), 0) << "kube-scheduler is not running";
  // It is connected as system:kube-scheduler: its informers' LISTs and
  // watches succeed (a 403 would be logged as "forbidden").
  ASSERT_TRUE(WaitFor([&] {
    return ReadFileText(started->log_path).find("Caches are synced") != std::string::npos;
  })) << ReadFileText(started->log_path);
  EXPECT_EQ(ReadFileText(started->log_path).find("forbidden"), std::string::npos)
      << ReadFileText(started->log_path);
  cp().StopScheduler();
  EXPECT_EQ(cp().scheduler().pid, -1);
  EXPECT_NE(::kill(pid, 0), 0) << "kube-scheduler still running after StopScheduler";
}

}  // namespace
}  // namespace schedext::testing
