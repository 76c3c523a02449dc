// In-cluster configuration, kubeconfig loading and the selection between
// them, with temporary directories and an injected environment.
#include "schedext/cluster/client_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "testing/fake_api_server.h"

namespace schedext::cluster {
namespace {

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(in[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(in[i + 1])} << 8) |
                       uint32_t{static_cast<unsigned char>(in[i + 2])};
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t{static_cast<unsigned char>(in[i])} << 16;
    if (i + 1 < in.size()) v |= uint32_t{static_cast<unsigned char>(in[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "client-config-XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::string path_;
};

ConfigEnvironment Env(std::map<std::string, std::string> vars, std::string sa_dir) {
  ConfigEnvironment env;
  env.getenv = [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  env.service_account_dir = std::move(sa_dir);
  return env;
}

class ClientConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    std::string error;
    ASSERT_TRUE(testing::GenerateTestPki(pki_, error)) << error;
  }
  TempDir dir_;
  testing::TestPki pki_;
};

// --- in-cluster -------------------------------------------------------------

TEST_F(ClientConfigTest, InClusterReadsEnvironmentTokenAndCa) {
  dir_.Write("sa/token", "eyJhbGciOi.token\n");
  dir_.Write("sa/ca.crt", pki_.ca_cert_pem);
  StatusOr<ClientConfig> c = InClusterConfig(
      Env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
          dir_.path() + "/sa"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token, "eyJhbGciOi.token");  // trailing newline trimmed
  EXPECT_EQ(c->token_file, dir_.path() + "/sa/token");
  EXPECT_EQ(c->ca_file, dir_.path() + "/sa/ca.crt");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->user_agent, std::string("schedext/") + SCHEDEXT_VERSION);
  EXPECT_EQ(c->qps, 5.0);
  EXPECT_EQ(c->burst, 10);
}

TEST_F(ClientConfigTest, InClusterBracketsIpv6) {
  dir_.Write("sa/token", "t");
  dir_.Write("sa/ca.crt", pki_.ca_cert_pem);
  StatusOr<ClientConfig> c = InClusterConfig(
      Env({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "6443"}},
          dir_.path() + "/sa"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://[fd00::1]:6443");
}

TEST_F(ClientConfigTest, InClusterErrors) {
  dir_.Write("sa/ca.crt", pki_.ca_cert_pem);
  const std::string sa = dir_.path() + "/sa";
  const std::map<std::string, std::string> in_pod = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                                     {"KUBERNETES_SERVICE_PORT", "443"}};
  // Not in a cluster: either variable missing or empty.
  EXPECT_EQ(InClusterConfig(Env({}, sa)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(InClusterConfig(Env({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}, sa)).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(InClusterConfig(Env({{"KUBERNETES_SERVICE_HOST", ""},
                                 {"KUBERNETES_SERVICE_PORT", "443"}},
                                sa))
                .status()
                .code(),
            StatusCode::kNotFound);
  // No token.
  Status st = InClusterConfig(Env(in_pod, sa)).status();
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("token"), std::string::npos) << st.message();
  // Empty token.
  dir_.Write("sa/token", "\n");
  EXPECT_EQ(InClusterConfig(Env(in_pod, sa)).status().code(), StatusCode::kFailedPrecondition);
  // A CA that is not PEM.
  dir_.Write("sa/token", "t");
  dir_.Write("sa/ca.crt", "garbage");
  st = InClusterConfig(Env(in_pod, sa)).status();
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("ca.crt"), std::string::npos) << st.message();
}

// --- kubeconfig -------------------------------------------------------------

std::string Kubeconfig(const std::string& cluster_extra, const std::string& user_extra,
                       const std::string& current_context = "main") {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "current-context: " + current_context + "\n"
         "clusters:\n"
         "- name: prod\n"
         "  cluster:\n"
         "    server: https://prod.example:6443\n" + cluster_extra +
         "- name: dev\n"
         "  cluster:\n"
         "    server: https://127.0.0.1:7443\n"
         "    insecure-skip-tls-verify: true\n"
         "contexts:\n"
         "- name: main\n"
         "  context:\n"
         "    cluster: prod\n"
         "    user: admin\n"
         "    namespace: kube-system\n"
         "- name: dev\n"
         "  context:\n"
         "    cluster: dev\n"
         "    user: dev-user\n"
         "users:\n"
         "- name: admin\n"
         "  user:\n" + user_extra +
         "- name: dev-user\n"
         "  user:\n"
         "    token: dev-token\n";
}

TEST_F(ClientConfigTest, KubeconfigTokenAndCaData) {
  const std::string path = dir_.Write(
      "kube/config",
      Kubeconfig("    certificate-authority-data: " + Base64(pki_.ca_cert_pem) + "\n",
                 "    token: abc.def\n"));
  StatusOr<ClientConfig> c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://prod.example:6443");
  EXPECT_EQ(c->ca_pem, pki_.ca_cert_pem);
  EXPECT_TRUE(c->ca_file.empty());
  EXPECT_EQ(c->token, "abc.def");
  EXPECT_TRUE(c->token_file.empty());
  EXPECT_EQ(c->source, "kubeconfig \"" + path + "\" context \"main\"");
}

TEST_F(ClientConfigTest, KubeconfigRelativeFilesResolveAgainstItsDirectory) {
  dir_.Write("kube/pki/ca.crt", pki_.ca_cert_pem);
  dir_.Write("kube/pki/client.crt", pki_.client_cert_pem);
  dir_.Write("kube/pki/client.key", pki_.client_key_pem);
  dir_.Write("kube/token", "file-token\n");
  const std::string path = dir_.Write(
      "kube/config", Kubeconfig("    certificate-authority: pki/ca.crt\n",
                                "    client-certificate: pki/client.crt\n"
                                "    client-key: ./pki/client.key\n"
                                "    tokenFile: token\n"));
  StatusOr<ClientConfig> c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::string base = dir_.path() + "/kube/";
  EXPECT_EQ(c->ca_file, base + "pki/ca.crt");
  EXPECT_EQ(c->client_cert_file, base + "pki/client.crt");
  EXPECT_EQ(c->client_key_file, base + "pki/client.key");
  EXPECT_EQ(c->token_file, base + "token");
  EXPECT_EQ(c->token, "file-token");  // read at load time, as clientcmd does
}

TEST_F(ClientConfigTest, KubeconfigAbsoluteFilesAndClientCertData) {
  const std::string ca = dir_.Write("elsewhere/ca.pem", pki_.ca_cert_pem);
  const std::string path = dir_.Write(
      "kube/config", Kubeconfig("    certificate-authority: " + ca + "\n",
                                "    client-certificate-data: " + Base64(pki_.client_cert_pem) +
                                    "\n    client-key-data: " + Base64(pki_.client_key_pem) +
                                    "\n"));
  StatusOr<ClientConfig> c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_file, ca);
  EXPECT_EQ(c->client_cert_pem, pki_.client_cert_pem);
  EXPECT_EQ(c->client_key_pem, pki_.client_key_pem);
  EXPECT_TRUE(c->token.empty());
}

TEST_F(ClientConfigTest, KubeconfigExplicitContextAndInsecure) {
  const std::string path = dir_.Write("kube/config", Kubeconfig("", "    token: a\n"));
  StatusOr<ClientConfig> c = LoadKubeconfig(path, "dev");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://127.0.0.1:7443");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->token, "dev-token");
}

TEST_F(ClientConfigTest, KubeconfigErrorsNameTheFileAndField) {
  struct Case {
    const char* name;
    std::string text;
    std::string context;
    std::string want;  // a substring of the message, after `kubeconfig "<path>": `
  };
  const std::vector<Case> cases = {
      {"unknown context", Kubeconfig("", "    token: a\n"), "foo", "context \"foo\" not found"},
      {"unknown current context", Kubeconfig("", "    token: a\n", "gone"), "",
       "context \"gone\" not found"},
      {"no current context", "apiVersion: v1\nkind: Config\nclusters: []\n", "",
       "no current-context is set"},
      {"missing cluster",
       "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: nope\n", "",
       "cluster \"nope\" not found (named by context \"c\")"},
      {"missing user",
       "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://x\n"
       "contexts:\n- name: c\n  context:\n    cluster: k\n    user: who\n",
       "", "user \"who\" not found"},
      {"missing server",
       "current-context: c\nclusters:\n- name: k\n  cluster: {}\n"
       "contexts:\n- name: c\n  context:\n    cluster: k\n",
       "", "cluster \"k\" has no server (clusters[0].cluster.server)"},
      {"both CA forms",
       Kubeconfig("    certificate-authority: ca.crt\n    certificate-authority-data: " +
                      Base64(pki_.ca_cert_pem) + "\n",
                  "    token: a\n"),
       "", "certificate-authority-data and certificate-authority are both specified"},
      {"insecure with CA",
       Kubeconfig("    insecure-skip-tls-verify: true\n    certificate-authority-data: " +
                      Base64(pki_.ca_cert_pem) + "\n",
                  "    token: a\n"),
       "", "insecure-skip-tls-verify is not allowed"},
      {"bad base64", Kubeconfig("    certificate-authority-data: '%%%'\n", "    token: a\n"), "",
       "clusters[0].cluster.certificate-authority-data: not valid base64"},
      {"CA data not PEM",
       Kubeconfig("    certificate-authority-data: " + Base64("hello") + "\n", "    token: a\n"),
       "", "certificate-authority-data: not a PEM certificate"},
      {"CA file missing", Kubeconfig("    certificate-authority: nowhere.crt\n", "    token: a\n"),
       "", "clusters[0].cluster.certificate-authority: read"},
      {"cert without key",
       Kubeconfig("", "    client-certificate-data: " + Base64(pki_.client_cert_pem) + "\n"), "",
       "client-key-data or client-key must be specified"},
      {"exec plugin", Kubeconfig("", "    exec:\n      command: aws\n"), "",
       "exec authentication is not supported"},
      {"token file missing", Kubeconfig("", "    tokenFile: missing-token\n"), "",
       "users[0].user.tokenFile: read"},
      {"bool not bool", Kubeconfig("    insecure-skip-tls-verify: maybe\n", "    token: a\n"), "",
       "insecure-skip-tls-verify: expected true or false"},
      {"clusters not a list", "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: "
       "k\nclusters: {}\n", "", "clusters: expected a list"},
      {"malformed yaml", "current-context: [unclosed\n", "", "line "},
      {"not a map", "- just\n- a list\n", "", "expected a map at the top level"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir_.Write("kube/config", c.text);
    StatusOr<ClientConfig> loaded = LoadKubeconfig(path, c.context);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
    const std::string prefix = "kubeconfig \"" + path + "\": ";
    EXPECT_EQ(loaded.status().message().rfind(prefix, 0), 0u) << loaded.status().message();
    EXPECT_NE(loaded.status().message().find(c.want), std::string::npos)
        << loaded.status().message();
  }
}

TEST_F(ClientConfigTest, KubeconfigMissingFileIsNotFound) {
  StatusOr<ClientConfig> c = LoadKubeconfig(dir_.path() + "/nope");
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("nope"), std::string::npos);
}

// --- selection --------------------------------------------------------------

TEST_F(ClientConfigTest, ResolvePrefersFlagThenKubeconfigEnvThenInCluster) {
  const std::string a = dir_.Write("a.yaml", Kubeconfig("", "    token: from-a\n"));
  const std::string b = dir_.Write("b.yaml", Kubeconfig("", "    token: from-b\n"));
  dir_.Write("sa/token", "from-sa");
  dir_.Write("sa/ca.crt", pki_.ca_cert_pem);
  const std::string sa = dir_.path() + "/sa";
  const std::map<std::string, std::string> pod = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                                  {"KUBERNETES_SERVICE_PORT", "443"}};
  auto with = [&](std::map<std::string, std::string> vars) {
    vars.insert(pod.begin(), pod.end());
    return Env(vars, sa);
  };

  StatusOr<ClientConfig> c = ResolveClientConfig(a, "", with({{"KUBECONFIG", b}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "from-a");

  c = ResolveClientConfig("", "", with({{"KUBECONFIG", ":" + b + ":" + a}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "from-b");

  c = ResolveClientConfig("", "dev", with({{"KUBECONFIG", b}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "dev-token");

  c = ResolveClientConfig("", "", with({}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "from-sa");
  EXPECT_EQ(c->source, "in-cluster (https://10.0.0.1:443)");

  c = ResolveClientConfig("", "", Env({}, sa));
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("--kubeconfig"), std::string::npos);

  // An explicit source that is broken is an error, not a fallback.
  c = ResolveClientConfig(dir_.path() + "/missing", "", with({}));
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("missing"), std::string::npos);
  c = ResolveClientConfig("", "", with({{"KUBECONFIG", dir_.path() + "/missing"}}));
  EXPECT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("$KUBECONFIG"), std::string::npos);
}

}  // namespace
}  // namespace schedext::cluster
