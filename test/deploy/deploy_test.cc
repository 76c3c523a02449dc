// Checks the files under deploy/: the kustomize base renders to the expected
// objects and carries a valid schedext configuration, and the scheduler-side
// configurations only name routes that the deployed schedext serves.
//
// Needs kubectl on PATH (or $KUBECTL) for `kubectl kustomize`; Debian's
// `kubernetes-client` package provides it. A missing kubectl is a failure.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "schedext/config/config.h"
#include "schedext/server/metrics.h"

namespace schedext {
namespace {

const std::string kSourceDir = SCHEDEXT_SOURCE_DIR;
const std::string kBaseDir = kSourceDir + "/deploy/base";
const std::string kSchedulerDir = kSourceDir + "/deploy/scheduler";

// The verbs schedext serves, at /<verb> and /<profile>/<verb>.
const std::set<std::string> kServedVerbs = {"filter", "prioritize", "preempt", "bind"};

struct CommandOutput {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs `command` with /bin/sh; stdout and stderr are captured separately.
CommandOutput RunCommand(const std::string& command) {
  CommandOutput result;
  char err_path[] = "/tmp/schedext-deploy-test-XXXXXX";
  int fd = ::mkstemp(err_path);
  if (fd < 0) {
    result.err = "mkstemp failed";
    return result;
  }
  ::close(fd);
  FILE* pipe = ::popen((command + " 2>" + ShellQuote(err_path)).c_str(), "r");
  if (pipe == nullptr) {
    std::remove(err_path);
    result.err = "popen failed";
    return result;
  }
  char buf[8192];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) {
    result.out.append(buf, n);
  }
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = ReadFile(err_path);
  std::remove(err_path);
  return result;
}

std::string Kubectl() {
  const char* env = std::getenv("KUBECTL");
  return env != nullptr && *env != '\0' ? env : "kubectl";
}

std::string Str(const YAML::Node& n) { return n && n.IsScalar() ? n.Scalar() : ""; }

// A plain (unquoted) integer scalar.
std::optional<int64_t> Int(const YAML::Node& n) {
  if (!n || !n.IsScalar() || n.Tag() != "?") {
    return std::nullopt;
  }
  try {
    return n.as<int64_t>();
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

// A plain `true` or `false`.
std::optional<bool> Bool(const YAML::Node& n) {
  if (!n || !n.IsScalar() || n.Tag() != "?") {
    return std::nullopt;
  }
  if (n.Scalar() == "true") {
    return true;
  }
  if (n.Scalar() == "false") {
    return false;
  }
  return std::nullopt;
}

// The rendered kustomize base, shared by the tests of this suite.
class DeployTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    objects_ = new std::vector<YAML::Node>();
    render_error_ = new std::string();
    CommandOutput which = RunCommand("command -v " + ShellQuote(Kubectl()));
    if (which.exit_code != 0) {
      *render_error_ = "kubectl not found on PATH (set $KUBECTL, or install it: Debian's "
                       "kubernetes-client package); deploy_test renders deploy/base with "
                       "`kubectl kustomize`";
      return;
    }
    CommandOutput r = RunCommand(ShellQuote(Kubectl()) + " kustomize " + ShellQuote(kBaseDir));
    if (r.exit_code != 0) {
      *render_error_ = "`kubectl kustomize " + kBaseDir + "` failed (exit " +
                       std::to_string(r.exit_code) + "): " + r.err;
      return;
    }
    try {
      for (const YAML::Node& doc : YAML::LoadAll(r.out)) {
        if (doc.IsMap()) {
          objects_->push_back(doc);
        }
      }
    } catch (const YAML::Exception& e) {
      *render_error_ = std::string("cannot parse the rendered base: ") + e.what();
    }
  }
  static void TearDownTestSuite() {
    delete objects_;
    delete render_error_;
    objects_ = nullptr;
    render_error_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(render_error_->empty()) << *render_error_; }

  // The one rendered object of `kind`; fails the test when there is not exactly one.
  static YAML::Node One(const std::string& kind) {
    std::vector<YAML::Node> found;
    for (const YAML::Node& o : *objects_) {
      if (Str(o["kind"]) == kind) {
        found.push_back(o);
      }
    }
    EXPECT_EQ(found.size(), 1u) << "rendered objects of kind " << kind;
    return found.empty() ? YAML::Node() : found.front();
  }

  // The schedext configuration in the rendered ConfigMap.
  static StatusOr<config::Config> DeployedConfig() {
    YAML::Node cm = One("ConfigMap");
    return config::LoadConfigText(Str(cm["data"]["schedext.yaml"]), "ConfigMap schedext.yaml");
  }

  static YAML::Node Container() {
    YAML::Node containers = One("Deployment")["spec"]["template"]["spec"]["containers"];
    EXPECT_TRUE(containers.IsSequence() && containers.size() == 1u) << "one container";
    return containers.IsSequence() && containers.size() > 0 ? containers[0] : YAML::Node();
  }

  static std::vector<YAML::Node>* objects_;
  static std::string* render_error_;
};

std::vector<YAML::Node>* DeployTest::objects_ = nullptr;
std::string* DeployTest::render_error_ = nullptr;

TEST_F(DeployTest, BaseRendersExpectedKinds) {
  std::map<std::string, int> kinds;
  for (const YAML::Node& o : *objects_) {
    ++kinds[Str(o["kind"])];
  }
  const std::map<std::string, int> want = {
      {"Namespace", 1},          {"ServiceAccount", 1}, {"ClusterRole", 1},
      {"ClusterRoleBinding", 1}, {"ConfigMap", 1},      {"Deployment", 1},
      {"Service", 1},            {"Role", 1},           {"RoleBinding", 1},
      {"PodDisruptionBudget", 1}, {"NetworkPolicy", 1},
  };
  EXPECT_EQ(kinds, want);

  EXPECT_EQ(Str(One("Namespace")["metadata"]["name"]), "schedext-system");
  for (const YAML::Node& o : *objects_) {
    std::string kind = Str(o["kind"]);
    if (kind == "Namespace" || kind == "ClusterRole" || kind == "ClusterRoleBinding") {
      continue;  // cluster-scoped
    }
    SCOPED_TRACE(kind);
    EXPECT_EQ(Str(o["metadata"]["namespace"]), "schedext-system");
  }
}

TEST_F(DeployTest, ConfigMapHoldsValidConfig) {
  YAML::Node cm = One("ConfigMap");
  EXPECT_EQ(Str(cm["metadata"]["name"]).rfind("schedext-config", 0), 0u);
  ASSERT_TRUE(cm["data"]["schedext.yaml"].IsScalar());
  StatusOr<config::Config> cfg = DeployedConfig();
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_FALSE(cfg->profiles.empty());
}

TEST_F(DeployTest, DeploymentProbesAndConfigPath) {
  YAML::Node pod = One("Deployment")["spec"]["template"]["spec"];
  YAML::Node c = Container();
  ASSERT_TRUE(c.IsMap());

  // The container port named http is the one schedext listens on.
  std::optional<int64_t> container_port;
  for (const YAML::Node& p : c["ports"]) {
    if (Str(p["name"]) == "http") {
      container_port = Int(p["containerPort"]);
    }
  }
  ASSERT_TRUE(container_port.has_value()) << "a containerPort named http";
  StatusOr<config::Config> cfg = DeployedConfig();
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(*container_port, cfg->server.port) << "containerPort vs server.listen";

  // Probes: GET /healthz (liveness) and /readyz (readiness) on that port.
  struct Probe {
    std::string field;
    std::string path;
  };
  // They go to the status listener (plain HTTP even with TLS on the verbs).
  std::optional<int64_t> status_port;
  for (const YAML::Node& p : c["ports"]) {
    if (Str(p["name"]) == "status") {
      status_port = Int(p["containerPort"]);
    }
  }
  ASSERT_TRUE(status_port.has_value()) << "a containerPort named status";
  EXPECT_EQ(*status_port, cfg->server.status_port) << "containerPort vs server.statusListen";
  const Probe probes[] = {{"livenessProbe", "/healthz"}, {"readinessProbe", "/readyz"}};
  for (const Probe& probe : probes) {
    SCOPED_TRACE(probe.field);
    YAML::Node get = c[probe.field]["httpGet"];
    ASSERT_TRUE(get.IsMap());
    EXPECT_EQ(Str(get["path"]), probe.path);
    std::string port = Str(get["port"]);
    EXPECT_TRUE(port == "status" || port == std::to_string(*status_port)) << port;
    std::string scheme = Str(get["scheme"]);
    EXPECT_TRUE(scheme.empty() || scheme == "HTTP") << scheme;
  }

  // --config <path> (or --config=<path>) names the file in the mounted ConfigMap.
  std::string config_path;
  std::vector<std::string> args;
  for (const YAML::Node& a : c["args"]) {
    args.push_back(Str(a));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) {
      config_path = args[i + 1];
    } else if (args[i].rfind("--config=", 0) == 0) {
      config_path = args[i].substr(9);
    }
  }
  ASSERT_FALSE(config_path.empty()) << "args pass --config";
  EXPECT_EQ(config_path, "/etc/schedext/schedext.yaml");

  std::string cm_name = Str(One("ConfigMap")["metadata"]["name"]);
  bool mounted = false;
  for (const YAML::Node& m : c["volumeMounts"]) {
    std::string dir = Str(m["mountPath"]);
    if (dir.empty() || config_path.rfind(dir + "/", 0) != 0) {
      continue;
    }
    std::string key = config_path.substr(dir.size() + 1);
    for (const YAML::Node& v : pod["volumes"]) {
      if (Str(v["name"]) == Str(m["name"]) && Str(v["configMap"]["name"]) == cm_name) {
        mounted = One("ConfigMap")["data"][key].IsScalar();
      }
    }
  }
  EXPECT_TRUE(mounted) << config_path << " is not a key of the mounted ConfigMap " << cm_name;

  // Hardening.
  EXPECT_EQ(Bool(pod["securityContext"]["runAsNonRoot"]), true);
  EXPECT_EQ(Bool(c["securityContext"]["runAsNonRoot"]), true);
  EXPECT_EQ(Bool(c["securityContext"]["readOnlyRootFilesystem"]), true);
  EXPECT_EQ(Bool(c["securityContext"]["allowPrivilegeEscalation"]), false);
  ASSERT_TRUE(c["securityContext"]["capabilities"]["drop"].IsSequence());
  EXPECT_EQ(Str(c["securityContext"]["capabilities"]["drop"][0]), "ALL");
  EXPECT_EQ(Str(c["resources"]["requests"]["cpu"]), "100m");
  EXPECT_EQ(Str(c["resources"]["requests"]["memory"]), "128Mi");
  EXPECT_EQ(Str(c["resources"]["limits"]["cpu"]), "2");
  EXPECT_EQ(Str(c["resources"]["limits"]["memory"]), "1Gi");
}

TEST_F(DeployTest, ServiceAndRbacMatchTheDeployment) {
  YAML::Node svc = One("Service");
  ASSERT_TRUE(svc["spec"]["ports"].IsSequence());
  YAML::Node port = svc["spec"]["ports"][0];
  EXPECT_EQ(Int(port["port"]), 8888);
  EXPECT_EQ(Str(port["targetPort"]), "http");
  YAML::Node selector = svc["spec"]["selector"];
  YAML::Node labels = One("Deployment")["spec"]["template"]["metadata"]["labels"];
  ASSERT_TRUE(selector.IsMap());
  for (auto it = selector.begin(); it != selector.end(); ++it) {
    EXPECT_EQ(Str(labels[it->first.Scalar()]), Str(it->second)) << it->first.Scalar();
  }

  std::string sa = Str(One("ServiceAccount")["metadata"]["name"]);
  EXPECT_EQ(Str(One("Deployment")["spec"]["template"]["spec"]["serviceAccountName"]), sa);
  YAML::Node binding = One("ClusterRoleBinding");
  EXPECT_EQ(Str(binding["roleRef"]["name"]), Str(One("ClusterRole")["metadata"]["name"]));
  ASSERT_TRUE(binding["subjects"].IsSequence());
  EXPECT_EQ(Str(binding["subjects"][0]["kind"]), "ServiceAccount");
  EXPECT_EQ(Str(binding["subjects"][0]["name"]), sa);
  EXPECT_EQ(Str(binding["subjects"][0]["namespace"]), "schedext-system");

  // resource → verbs granted, core group and events.k8s.io.
  std::map<std::string, std::set<std::string>> granted;
  for (const YAML::Node& rule : One("ClusterRole")["rules"]) {
    for (const YAML::Node& r : rule["resources"]) {
      for (const YAML::Node& v : rule["verbs"]) {
        granted[Str(r)].insert(Str(v));
      }
    }
  }
  EXPECT_TRUE(granted["pods/binding"].count("create"));
  EXPECT_TRUE(granted["bindings"].count("create"));
  for (const char* r : {"nodes", "pods"}) {
    for (const char* v : {"get", "list", "watch"}) {
      EXPECT_TRUE(granted[r].count(v)) << r << " " << v;
    }
  }
  EXPECT_TRUE(granted["events"].count("create"));
  EXPECT_TRUE(granted["events"].count("patch"));
}

// Whether `s` is a Go time.Duration string such as "5s", "1m30s" or "500ms":
// ([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+
bool IsGoDuration(std::string_view s) {
  static constexpr std::string_view kUnits[] = {"ns", "us", "\u00b5s", "ms", "s", "m", "h"};
  if (s.empty()) {
    return false;
  }
  while (!s.empty()) {
    size_t digits = 0;
    while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') {
      ++digits;
    }
    if (digits == 0) {
      return false;
    }
    s.remove_prefix(digits);
    if (!s.empty() && s.front() == '.') {
      s.remove_prefix(1);
      size_t fraction = 0;
      while (fraction < s.size() && s[fraction] >= '0' && s[fraction] <= '9') {
        ++fraction;
      }
      if (fraction == 0) {
        return false;
      }
      s.remove_prefix(fraction);
    }
    bool unit = false;
    for (std::string_view u : kUnits) {  // two-letter units first: "ms" before "m"
      if (s.substr(0, u.size()) == u) {
        s.remove_prefix(u.size());
        unit = true;
        break;
      }
    }
    if (!unit) {
      return false;
    }
  }
  return true;
}

TEST(DeployHelpersTest, RecognisesGoDurations) {
  for (std::string_view good : {"5s", "1m30s", "500ms", "1.5h", "10us", "2\u00b5s", "100ns"}) {
    EXPECT_TRUE(IsGoDuration(good)) << good;
  }
  for (std::string_view bad : {"", "5", "s", "5 s", "1.s", "5sec", "-5s", "5000000000"}) {
    EXPECT_FALSE(IsGoDuration(bad)) << bad;
  }
}

// Splits "http://host:port/path" into scheme, authority and path.
struct Url {
  std::string scheme;
  std::string authority;
  std::string path;
};

std::optional<Url> ParseUrl(const std::string& s) {
  size_t sep = s.find("://");
  if (sep == std::string::npos) {
    return std::nullopt;
  }
  Url url;
  url.scheme = s.substr(0, sep);
  std::string rest = s.substr(sep + 3);
  size_t slash = rest.find('/');
  url.authority = rest.substr(0, slash);
  url.path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!url.path.empty() && url.path.back() == '/') {
    url.path.pop_back();  // kube-scheduler trims trailing slashes before adding "/<verb>"
  }
  return url;
}

struct SchedulerConfigCase {
  std::string file;
  bool legacy;             // Policy JSON (≤ 1.22) rather than KubeSchedulerConfiguration v1
  bool node_cache_capable;
};

TEST_F(DeployTest, SchedulerConfigsNameServedRoutes) {
  StatusOr<config::Config> cfg = DeployedConfig();
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  std::set<std::string> routes;
  for (const std::string& verb : kServedVerbs) {
    routes.insert("/" + verb);
    for (const config::ProfileConfig& p : cfg->profiles) {
      routes.insert("/" + p.name + "/" + verb);
    }
  }
  YAML::Node svc = One("Service");
  std::string service_authority = Str(svc["metadata"]["name"]) + "." +
                                  Str(svc["metadata"]["namespace"]) + ".svc:" +
                                  Str(svc["spec"]["ports"][0]["port"]);

  // Keys each format accepts (v1 decodes strictly; unknown keys fail the scheduler).
  const std::set<std::string> v1_keys = {
      "urlPrefix",  "filterVerb",  "preemptVerb",      "prioritizeVerb",   "weight",
      "bindVerb",   "enableHTTPS", "tlsConfig",        "httpTimeout",      "nodeCacheCapable",
      "managedResources", "ignorable"};
  const std::set<std::string> legacy_keys = {
      "urlPrefix",  "filterVerb",  "preemptVerb",      "prioritizeVerb",   "weight",
      "bindVerb",   "enableHttps", "tlsConfig",        "httpTimeout",      "nodeCacheCapable",
      "managedResources", "ignorable"};

  const std::vector<SchedulerConfigCase> cases = {
      {"kube-scheduler-config-nodecache.yaml", false, true},
      {"kube-scheduler-config-fullnodes.yaml", false, false},
      {"policy-legacy.json", true, true},
  };
  for (const SchedulerConfigCase& c : cases) {
    SCOPED_TRACE(c.file);
    YAML::Node doc;
    try {
      doc = YAML::LoadFile(kSchedulerDir + "/" + c.file);
    } catch (const YAML::Exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    if (c.legacy) {
      EXPECT_EQ(Str(doc["kind"]), "Policy");
      EXPECT_EQ(Str(doc["apiVersion"]), "v1");
    } else {
      EXPECT_EQ(Str(doc["kind"]), "KubeSchedulerConfiguration");
      EXPECT_EQ(Str(doc["apiVersion"]), "kubescheduler.config.k8s.io/v1");
      // A second scheduler: its own scheduler name and leader-election lease.
      ASSERT_TRUE(doc["profiles"].IsSequence());
      for (const YAML::Node& p : doc["profiles"]) {
        EXPECT_EQ(Str(p["schedulerName"]), "schedext-scheduler");
      }
      EXPECT_EQ(Str(doc["leaderElection"]["resourceName"]), "schedext-scheduler");
    }

    YAML::Node extenders = doc["extenders"];
    ASSERT_TRUE(extenders.IsSequence());
    ASSERT_EQ(extenders.size(), 1u);
    YAML::Node e = extenders[0];
    ASSERT_TRUE(e.IsMap());
    for (auto it = e.begin(); it != e.end(); ++it) {
      const std::set<std::string>& keys = c.legacy ? legacy_keys : v1_keys;
      EXPECT_TRUE(keys.count(it->first.Scalar())) << "unknown extender key " << it->first.Scalar();
    }

    std::optional<Url> url = ParseUrl(Str(e["urlPrefix"]));
    ASSERT_TRUE(url.has_value()) << Str(e["urlPrefix"]);
    EXPECT_EQ(url->authority, service_authority);
    std::optional<bool> https = Bool(e[c.legacy ? "enableHttps" : "enableHTTPS"]);
    ASSERT_TRUE(https.has_value());
    EXPECT_EQ(url->scheme, *https ? "https" : "http");

    int verbs = 0;
    for (const char* key : {"filterVerb", "prioritizeVerb", "preemptVerb", "bindVerb"}) {
      if (!e[key]) {
        continue;
      }
      ++verbs;
      std::string verb = Str(e[key]);
      EXPECT_TRUE(kServedVerbs.count(verb)) << key << ": " << verb;
      EXPECT_TRUE(routes.count(url->path + "/" + verb))
          << key << ": " << url->path + "/" + verb << " is not a route schedext serves";
    }
    EXPECT_GE(verbs, 2) << "at least filterVerb and prioritizeVerb";
    EXPECT_TRUE(e["filterVerb"]);
    EXPECT_TRUE(e["prioritizeVerb"]);

    EXPECT_EQ(Bool(e["nodeCacheCapable"]), c.node_cache_capable);
    std::optional<int64_t> weight = Int(e["weight"]);
    ASSERT_TRUE(weight.has_value());
    EXPECT_GT(*weight, 0);
    EXPECT_EQ(Bool(e["ignorable"]), false);

    if (c.legacy) {
      // Go time.Duration: integer nanoseconds. 1 s .. 10 min catches seconds by mistake.
      std::optional<int64_t> ns = Int(e["httpTimeout"]);
      ASSERT_TRUE(ns.has_value()) << "httpTimeout must be an integer of nanoseconds";
      EXPECT_GE(*ns, 1000000000);
      EXPECT_LE(*ns, 600000000000);
    } else {
      std::string timeout = Str(e["httpTimeout"]);
      EXPECT_TRUE(IsGoDuration(timeout)) << "httpTimeout " << timeout;
    }
  }
}

// ---- deploy/gpushare: the overlay for the gpushare device plugin ----

const std::string kGpuShareDir = kSourceDir + "/deploy/gpushare";

// `kubectl kustomize <dir>` as YAML objects; "" or what went wrong.
std::string Render(const std::string& dir, std::vector<YAML::Node>& objects) {
  CommandOutput which = RunCommand("command -v " + ShellQuote(Kubectl()));
  if (which.exit_code != 0) {
    return "kubectl not found on PATH (set $KUBECTL, or install Debian's kubernetes-client)";
  }
  CommandOutput r = RunCommand(ShellQuote(Kubectl()) + " kustomize " + ShellQuote(dir));
  if (r.exit_code != 0) {
    return "`kubectl kustomize " + dir + "` failed (exit " + std::to_string(r.exit_code) +
           "): " + r.err;
  }
  try {
    for (const YAML::Node& doc : YAML::LoadAll(r.out)) {
      if (doc.IsMap()) {
        objects.push_back(doc);
      }
    }
  } catch (const YAML::Exception& e) {
    return std::string("cannot parse the rendered ") + dir + ": " + e.what();
  }
  return "";
}

// resource → verbs granted by the `rules` of a Role or ClusterRole.
std::map<std::string, std::set<std::string>> Grants(const YAML::Node& role) {
  std::map<std::string, std::set<std::string>> granted;
  for (const YAML::Node& rule : role["rules"]) {
    for (const YAML::Node& r : rule["resources"]) {
      for (const YAML::Node& v : rule["verbs"]) {
        granted[Str(r)].insert(Str(v));
      }
    }
  }
  return granted;
}

TEST(GpuShareDeployTest, OverlayAddsTheProfileAndTheRbac) {
  std::vector<YAML::Node> objects;
  const std::string error = Render(kGpuShareDir, objects);
  ASSERT_TRUE(error.empty()) << error;
  auto all = [&](const std::string& kind) {
    std::vector<YAML::Node> found;
    for (const YAML::Node& o : objects) {
      if (Str(o["kind"]) == kind) {
        found.push_back(o);
      }
    }
    return found;
  };
  auto named = [&](const std::string& kind, const std::string& name) {
    for (const YAML::Node& o : all(kind)) {
      if (Str(o["metadata"]["name"]) == name) {
        return o;
      }
    }
    ADD_FAILURE() << "no " << kind << " " << name;
    return YAML::Node();
  };
  std::map<std::string, int> kinds;
  for (const YAML::Node& o : objects) {
    ++kinds[Str(o["kind"])];
  }
  const std::map<std::string, int> want = {
      {"Namespace", 1}, {"ServiceAccount", 1}, {"ClusterRole", 1}, {"ClusterRoleBinding", 1},
      {"Role", 2},      {"RoleBinding", 2},    {"ConfigMap", 1},   {"Deployment", 1},
      {"Service", 1},   {"PodDisruptionBudget", 1}, {"NetworkPolicy", 1},
  };
  EXPECT_EQ(kinds, want);

  // The one ConfigMap is the overlay's configuration, mounted by the Deployment.
  const YAML::Node cm = all("ConfigMap").front();
  EXPECT_EQ(Str(cm["metadata"]["namespace"]), "schedext-system");
  const std::string cm_name = Str(cm["metadata"]["name"]);
  EXPECT_EQ(cm_name.rfind("schedext-config-", 0), 0u) << cm_name;
  bool mounted = false;
  for (const YAML::Node& v : all("Deployment").front()["spec"]["template"]["spec"]["volumes"]) {
    mounted = mounted || Str(v["configMap"]["name"]) == cm_name;
  }
  EXPECT_TRUE(mounted) << "the Deployment mounts " << cm_name;
  StatusOr<config::Config> cfg =
      config::LoadConfigText(Str(cm["data"]["schedext.yaml"]), "gpushare schedext.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->cluster.mode, "required");
  EXPECT_EQ(cfg->default_profile, "default");
  const config::ProfileConfig* gpushare = nullptr;
  for (const config::ProfileConfig& p : cfg->profiles) {
    if (p.name == "gpushare") {
      gpushare = &p;
    }
  }
  ASSERT_NE(gpushare, nullptr) << "a profile named gpushare";
  std::vector<std::string> policies;
  for (const config::PolicyConfig& policy : gpushare->policies) {
    policies.push_back(policy.name);
  }
  EXPECT_EQ(policies, (std::vector<std::string>{"GpuShare", "NodeResourcesFit"}));
  // The device plugin's names are GpuShare's args.
  ASSERT_NE(gpushare->policies[0].args, nullptr);
  const nlohmann::json& gpu_args = *gpushare->policies[0].args;
  EXPECT_EQ(gpu_args.value("memoryResource", ""), "aliyun.com/gpu-mem");
  const std::string unhealthy_namespace = gpu_args.value("unhealthyNamespace", "");
  EXPECT_EQ(unhealthy_namespace, "kube-system");

  // No pod writes: the device annotations travel in the Binding.
  EXPECT_EQ(all("ClusterRole").size(), 1u) << "only the base's ClusterRole";
  EXPECT_EQ(Grants(named("ClusterRole", "schedext"))["pods"].count("patch"), 0u);
  // ConfigMaps get/list/watch in the namespace of the unhealthy-GPU ConfigMaps.
  EXPECT_TRUE(cfg->cluster.leader_election.enabled);
  const YAML::Node role = named("Role", "schedext-gpushare");
  EXPECT_EQ(Str(role["metadata"]["namespace"]), unhealthy_namespace);
  for (const char* verb : {"get", "list", "watch"}) {
    EXPECT_TRUE(Grants(role)["configmaps"].count(verb)) << verb;
  }
  const YAML::Node role_binding = named("RoleBinding", "schedext-gpushare");
  EXPECT_EQ(Str(role_binding["metadata"]["namespace"]), unhealthy_namespace);
  EXPECT_EQ(Str(role_binding["roleRef"]["kind"]), "Role");
  EXPECT_EQ(Str(role_binding["roleRef"]["name"]), Str(role["metadata"]["name"]));
  const std::string sa = Str(all("ServiceAccount").front()["metadata"]["name"]);
  for (const YAML::Node& binding : {role_binding}) {
    ASSERT_TRUE(binding["subjects"].IsSequence());
    EXPECT_EQ(Str(binding["subjects"][0]["kind"]), "ServiceAccount");
    EXPECT_EQ(Str(binding["subjects"][0]["name"]), sa);
    EXPECT_EQ(Str(binding["subjects"][0]["namespace"]), "schedext-system");
  }
  // The base's grants are still there (bind, watch nodes and pods).
  const std::map<std::string, std::set<std::string>> base = Grants(named("ClusterRole", "schedext"));
  EXPECT_TRUE(base.at("pods/binding").count("create"));
  EXPECT_TRUE(base.at("pods").count("watch"));
}

TEST(GpuShareDeployTest, SchedulerConfigSendsGpuPodsToTheGpuShareProfile) {
  std::vector<YAML::Node> objects;
  const std::string error = Render(kGpuShareDir, objects);
  ASSERT_TRUE(error.empty()) << error;
  std::string config_text;
  std::string service_authority;
  for (const YAML::Node& o : objects) {
    if (Str(o["kind"]) == "ConfigMap") {
      config_text = Str(o["data"]["schedext.yaml"]);
    } else if (Str(o["kind"]) == "Service") {
      service_authority = Str(o["metadata"]["name"]) + "." + Str(o["metadata"]["namespace"]) +
                          ".svc:" + Str(o["spec"]["ports"][0]["port"]);
    }
  }
  StatusOr<config::Config> cfg = config::LoadConfigText(config_text, "gpushare schedext.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();

  YAML::Node doc;
  try {
    doc = YAML::LoadFile(kSchedulerDir + "/kube-scheduler-config-gpushare.yaml");
  } catch (const YAML::Exception& e) {
    FAIL() << e.what();
  }
  EXPECT_EQ(Str(doc["kind"]), "KubeSchedulerConfiguration");
  EXPECT_EQ(Str(doc["apiVersion"]), "kubescheduler.config.k8s.io/v1");
  ASSERT_TRUE(doc["profiles"].IsSequence());
  for (const YAML::Node& p : doc["profiles"]) {
    EXPECT_EQ(Str(p["schedulerName"]), "schedext-scheduler");
  }
  EXPECT_EQ(Str(doc["leaderElection"]["resourceName"]), "schedext-scheduler");
  ASSERT_TRUE(doc["extenders"].IsSequence());
  ASSERT_EQ(doc["extenders"].size(), 1u);
  const YAML::Node e = doc["extenders"][0];
  const std::set<std::string> v1_keys = {
      "urlPrefix", "filterVerb",  "preemptVerb", "prioritizeVerb",   "weight",
      "bindVerb",  "enableHTTPS", "tlsConfig",   "httpTimeout",      "nodeCacheCapable",
      "managedResources", "ignorable"};
  for (auto it = e.begin(); it != e.end(); ++it) {
    EXPECT_TRUE(v1_keys.count(it->first.Scalar())) << "unknown extender key " << it->first.Scalar();
  }

  // urlPrefix: the Service, then a profile that uses GpuShare.
  std::optional<Url> url = ParseUrl(Str(e["urlPrefix"]));
  ASSERT_TRUE(url.has_value()) << Str(e["urlPrefix"]);
  EXPECT_EQ(url->scheme, "http");
  EXPECT_EQ(Bool(e["enableHTTPS"]), false);
  EXPECT_EQ(url->authority, service_authority);
  EXPECT_EQ(url->path, "/gpushare");
  bool uses_gpushare = false;
  for (const config::ProfileConfig& p : cfg->profiles) {
    if ("/" + p.name == url->path) {
      for (const config::PolicyConfig& policy : p.policies) {
        uses_gpushare = uses_gpushare || policy.name == "GpuShare";
      }
    }
  }
  EXPECT_TRUE(uses_gpushare) << url->path << " is not a profile with the GpuShare policy";

  // Every verb, bind included (the device annotations are written there).
  const std::map<std::string, std::string> verbs = {{"filterVerb", "filter"},
                                                    {"prioritizeVerb", "prioritize"},
                                                    {"preemptVerb", "preempt"},
                                                    {"bindVerb", "bind"}};
  for (const auto& [key, verb] : verbs) {
    EXPECT_EQ(Str(e[key]), verb) << key;
  }
  EXPECT_EQ(Bool(e["nodeCacheCapable"]), true);
  std::optional<int64_t> weight = Int(e["weight"]);
  ASSERT_TRUE(weight.has_value());
  EXPECT_GT(*weight, 0);
  EXPECT_EQ(Bool(e["ignorable"]), false);
  EXPECT_TRUE(IsGoDuration(Str(e["httpTimeout"]))) << Str(e["httpTimeout"]);

  // Only GPU-memory pods reach the extender, and the scheduler still checks
  // the node's total.
  const YAML::Node managed = e["managedResources"];
  ASSERT_TRUE(managed.IsSequence());
  ASSERT_EQ(managed.size(), 1u);
  // The GpuShare profile's memoryResource (deploy/gpushare/schedext.yaml).
  std::string memory_resource;
  for (const config::ProfileConfig& p : cfg->profiles) {
    for (const config::PolicyConfig& policy : p.policies) {
      if (policy.name == "GpuShare" && policy.args != nullptr) {
        memory_resource = policy.args->value("memoryResource", "");
      }
    }
  }
  EXPECT_EQ(Str(managed[0]["name"]), memory_resource);
  EXPECT_EQ(Str(managed[0]["name"]), "aliyun.com/gpu-mem");
  EXPECT_EQ(Bool(managed[0]["ignoredByScheduler"]), false);
}


// ---- high availability, network isolation, TLS, monitoring, sidecar ----

std::vector<YAML::Node> OfKind(const std::vector<YAML::Node>& objects, const std::string& kind) {
  std::vector<YAML::Node> found;
  for (const YAML::Node& o : objects) {
    if (Str(o["kind"]) == kind) {
      found.push_back(o);
    }
  }
  return found;
}

YAML::Node Named(const std::vector<YAML::Node>& objects, const std::string& kind,
                 const std::string& name) {
  for (const YAML::Node& o : OfKind(objects, kind)) {
    if (Str(o["metadata"]["name"]) == name) {
      return o;
    }
  }
  ADD_FAILURE() << "no " << kind << " " << name;
  return YAML::Node();
}

// Whether every key/value of `selector` is among `labels`.
bool Selects(const YAML::Node& selector, const YAML::Node& labels) {
  if (!selector.IsMap() || selector.size() == 0) {
    return false;
  }
  for (auto it = selector.begin(); it != selector.end(); ++it) {
    if (Str(labels[it->first.Scalar()]) != Str(it->second)) {
      return false;
    }
  }
  return true;
}

TEST_F(DeployTest, TwoReplicasElectALeaderOnALeaseTheirRoleAllows) {
  const YAML::Node deployment = One("Deployment");
  EXPECT_EQ(Int(deployment["spec"]["replicas"]), 2);
  StatusOr<config::Config> cfg = DeployedConfig();
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const config::LeaderElectionConfig& le = cfg->cluster.leader_election;
  EXPECT_TRUE(le.enabled);
  EXPECT_EQ(le.lease_name, "schedext");
  EXPECT_EQ(le.lease_namespace, "") << "left to the pod's namespace";
  EXPECT_EQ(le.lease_duration_seconds, 15);
  EXPECT_EQ(le.renew_deadline_seconds, 10);
  EXPECT_EQ(le.retry_period_seconds, 1);

  // The pod's namespace reaches schedext through the downward API.
  bool pod_namespace = false;
  for (const YAML::Node& e : Container()["env"]) {
    pod_namespace = pod_namespace || (Str(e["name"]) == "POD_NAMESPACE" &&
                                      Str(e["valueFrom"]["fieldRef"]["fieldPath"]) ==
                                          "metadata.namespace");
  }
  EXPECT_TRUE(pod_namespace) << "POD_NAMESPACE from metadata.namespace";

  // Leases in that namespace: get, create, patch (and update).
  const YAML::Node role = Named(*objects_, "Role", "schedext-leader-election");
  EXPECT_EQ(Str(role["metadata"]["namespace"]), "schedext-system");
  bool lease_rule = false;
  for (const YAML::Node& rule : role["rules"]) {
    if (Str(rule["apiGroups"][0]) != "coordination.k8s.io" || Str(rule["resources"][0]) != "leases") {
      continue;
    }
    std::set<std::string> verbs;
    for (const YAML::Node& v : rule["verbs"]) {
      verbs.insert(Str(v));
    }
    lease_rule = verbs.count("get") && verbs.count("create") && verbs.count("patch") &&
                 verbs.count("update");
  }
  EXPECT_TRUE(lease_rule) << "coordination.k8s.io leases get/create/update/patch";
  const YAML::Node binding = Named(*objects_, "RoleBinding", "schedext-leader-election");
  EXPECT_EQ(Str(binding["roleRef"]["kind"]), "Role");
  EXPECT_EQ(Str(binding["roleRef"]["name"]), "schedext-leader-election");
  EXPECT_EQ(Str(binding["subjects"][0]["name"]),
            Str(deployment["spec"]["template"]["spec"]["serviceAccountName"]));

  // One replica per node.
  const YAML::Node labels = deployment["spec"]["template"]["metadata"]["labels"];
  bool per_node = false;
  for (const YAML::Node& t : deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]) {
    per_node = per_node || (Str(t["topologyKey"]) == "kubernetes.io/hostname" &&
                            Int(t["maxSkew"]) == 1 &&
                            Str(t["whenUnsatisfiable"]) == "DoNotSchedule" &&
                            Selects(t["labelSelector"]["matchLabels"], labels));
  }
  EXPECT_TRUE(per_node) << "a hostname spread constraint selecting the pods";

  // Only the leader is ever ready: a rolling update must be allowed to stop
  // every old pod, or it would wait for a second ready pod forever.
  EXPECT_EQ(Int(deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"]),
            Int(deployment["spec"]["replicas"]));

  // The PodDisruptionBudget selects the pods and keeps the ready one.
  const YAML::Node pdb = One("PodDisruptionBudget");
  EXPECT_TRUE(Selects(pdb["spec"]["selector"]["matchLabels"], labels));
  EXPECT_EQ(Int(pdb["spec"]["minAvailable"]), 1);
  EXPECT_EQ(Str(pdb["spec"]["unhealthyPodEvictionPolicy"]), "AlwaysAllow");
}

TEST_F(DeployTest, NetworkPolicyAdmitsOnlyTheSchedulerToTheVerbPort) {
  StatusOr<config::Config> cfg = DeployedConfig();
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const YAML::Node policy = One("NetworkPolicy");
  EXPECT_TRUE(Selects(policy["spec"]["podSelector"]["matchLabels"],
                      One("Deployment")["spec"]["template"]["metadata"]["labels"]));
  ASSERT_TRUE(policy["spec"]["ingress"].IsSequence());
  // port → the `from` of the rule admitting it (null: from anywhere).
  std::map<int64_t, YAML::Node> from;
  for (const YAML::Node& rule : policy["spec"]["ingress"]) {
    for (const YAML::Node& port : rule["ports"]) {
      ASSERT_TRUE(Int(port["port"]).has_value());
      // emplace: assigning to a yaml-cpp node writes through it, and an
      // absent `from` is an invalid node.
      EXPECT_TRUE(from.emplace(*Int(port["port"]), rule["from"]).second) << "one rule per port";
    }
  }
  EXPECT_EQ(from.size(), 2u) << "the verb port and the status port, nothing else";
  ASSERT_TRUE(from.count(cfg->server.port));
  const YAML::Node verbs_from = from.at(cfg->server.port);
  ASSERT_TRUE(verbs_from.IsSequence());
  ASSERT_EQ(verbs_from.size(), 1u);
  EXPECT_EQ(Str(verbs_from[0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"]),
            "schedext-scheduler");
  EXPECT_TRUE(verbs_from[0]["namespaceSelector"].IsMap()) << "schedulers of any namespace";
  ASSERT_TRUE(from.count(cfg->server.status_port));
  EXPECT_FALSE(from.at(cfg->server.status_port).IsDefined()) << "status from anywhere";
}

TEST(TlsDeployTest, OverlayServesTlsFromTheMountedSecretAndTheSchedulerMatches) {
  std::vector<YAML::Node> objects;
  const std::string error = Render(kSourceDir + "/deploy/tls", objects);
  ASSERT_TRUE(error.empty()) << error;
  const std::vector<YAML::Node> maps = OfKind(objects, "ConfigMap");
  ASSERT_EQ(maps.size(), 1u);
  StatusOr<config::Config> cfg =
      config::LoadConfigText(Str(maps[0]["data"]["schedext.yaml"]), "tls schedext.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const config::TlsConfig& tls = cfg->server.tls;
  ASSERT_TRUE(tls.enabled());
  EXPECT_FALSE(tls.client_ca_file.empty()) << "client certificates required";
  EXPECT_TRUE(cfg->cluster.leader_election.enabled);

  // Each file is a key of the Secret mounted at its directory.
  const YAML::Node deployment = Named(objects, "Deployment", "schedext");
  const YAML::Node pod = deployment["spec"]["template"]["spec"];
  const YAML::Node container = pod["containers"][0];
  std::string secret;
  for (const std::string& file : {tls.cert_file, tls.key_file, tls.client_ca_file}) {
    SCOPED_TRACE(file);
    bool found = false;
    for (const YAML::Node& m : container["volumeMounts"]) {
      const std::string dir = Str(m["mountPath"]);
      if (file.rfind(dir + "/", 0) != 0) {
        continue;
      }
      for (const YAML::Node& v : pod["volumes"]) {
        if (Str(v["name"]) == Str(m["name"]) && v["secret"] && v["secret"].IsMap()) {
          secret = Str(v["secret"]["secretName"]);
          const std::string key = file.substr(dir.size() + 1);
          found = key == "tls.crt" || key == "tls.key" || key == "ca.crt";
        }
      }
    }
    EXPECT_TRUE(found) << "not a key of a mounted kubernetes.io/tls Secret";
  }
  EXPECT_EQ(secret, "schedext-tls");
  // The config volume is still there (the patch adds, it does not replace).
  bool config_volume = false;
  for (const YAML::Node& v : pod["volumes"]) {
    config_volume = config_volume || (v["configMap"] && Str(v["configMap"]["name"]) ==
                                                           Str(maps[0]["metadata"]["name"]));
  }
  EXPECT_TRUE(config_volume);

  // cert-manager issues that Secret for the Service's name, from the CA that
  // also issues kube-scheduler's client certificate.
  const YAML::Node svc = Named(objects, "Service", "schedext");
  const std::string host = Str(svc["metadata"]["name"]) + "." + Str(svc["metadata"]["namespace"]) +
                           ".svc";
  const YAML::Node server_cert = Named(objects, "Certificate", "schedext-tls");
  EXPECT_EQ(Str(server_cert["spec"]["secretName"]), "schedext-tls");
  std::set<std::string> names;
  for (const YAML::Node& n : server_cert["spec"]["dnsNames"]) {
    names.insert(Str(n));
  }
  EXPECT_TRUE(names.count(host)) << host;
  const YAML::Node client_cert = Named(objects, "Certificate", "schedext-scheduler-client");
  EXPECT_EQ(Str(client_cert["spec"]["issuerRef"]["name"]),
            Str(server_cert["spec"]["issuerRef"]["name"]));
  bool client_auth = false;
  for (const YAML::Node& u : client_cert["spec"]["usages"]) {
    client_auth = client_auth || Str(u) == "client auth";
  }
  EXPECT_TRUE(client_auth);

  // The scheduler side: HTTPS to that name, with a CA and a client certificate.
  YAML::Node doc = YAML::LoadFile(kSchedulerDir + "/kube-scheduler-config-tls.yaml");
  EXPECT_EQ(Str(doc["kind"]), "KubeSchedulerConfiguration");
  EXPECT_EQ(Str(doc["leaderElection"]["resourceName"]), "schedext-scheduler");
  const YAML::Node e = doc["extenders"][0];
  std::optional<Url> url = ParseUrl(Str(e["urlPrefix"]));
  ASSERT_TRUE(url.has_value());
  EXPECT_EQ(url->scheme, "https");
  EXPECT_EQ(url->authority, host + ":" + Str(svc["spec"]["ports"][0]["port"]));
  EXPECT_EQ(Bool(e["enableHTTPS"]), true);
  for (const char* key : {"caFile", "certFile", "keyFile"}) {
    EXPECT_FALSE(Str(e["tlsConfig"][key]).empty()) << key;
  }
  EXPECT_EQ(Bool(e["nodeCacheCapable"]), true);
  EXPECT_TRUE(IsGoDuration(Str(e["httpTimeout"])));
}

TEST(MonitoringDeployTest, ScrapesTheStatusPortAndAlertsOnSeriesSchedextExports) {
  std::vector<YAML::Node> objects;
  const std::string error = Render(kSourceDir + "/deploy/monitoring", objects);
  ASSERT_TRUE(error.empty()) << error;
  std::vector<YAML::Node> base;
  ASSERT_TRUE(Render(kBaseDir, base).empty());
  const YAML::Node deployment = Named(base, "Deployment", "schedext");

  const YAML::Node monitor = Named(objects, "PodMonitor", "schedext");
  EXPECT_EQ(Str(monitor["metadata"]["namespace"]), "schedext-system");
  EXPECT_TRUE(Selects(monitor["spec"]["selector"]["matchLabels"],
                      deployment["spec"]["template"]["metadata"]["labels"]));
  const YAML::Node endpoint = monitor["spec"]["podMetricsEndpoints"][0];
  EXPECT_EQ(Str(endpoint["path"]), "/metrics");
  bool port = false;
  for (const YAML::Node& p : deployment["spec"]["template"]["spec"]["containers"][0]["ports"]) {
    port = port || Str(p["name"]) == Str(endpoint["port"]);
  }
  EXPECT_TRUE(port) << "the PodMonitor's port " << Str(endpoint["port"]) << " is a container port";

  // What schedext's /metrics shows with leader election and a cluster cache.
  server::Metrics metrics({"default"});
  metrics.SetCacheSynced([] { return true; });
  metrics.SetLeaderElection([] { return false; }, [] { return uint64_t{3}; });
  std::string exposition;
  metrics.Render(exposition);
  EXPECT_NE(exposition.find("\nschedext_cache_synced 1\n"), std::string::npos);
  EXPECT_NE(exposition.find("\nschedext_leader 0\n"), std::string::npos);
  EXPECT_NE(exposition.find("\nschedext_leader_transitions_total 3\n"), std::string::npos);

  // Every schedext_* series an alert reads is in that exposition.
  const std::regex series("schedext_[a-z_]+");
  std::set<std::string> alerts;
  for (const YAML::Node& group : Named(objects, "PrometheusRule", "schedext")["spec"]["groups"]) {
    for (const YAML::Node& rule : group["rules"]) {
      const std::string expr = Str(rule["expr"]);
      alerts.insert(Str(rule["alert"]));
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), series);
           it != std::sregex_iterator(); ++it) {
        EXPECT_NE(exposition.find("\n" + it->str()), std::string::npos)
            << Str(rule["alert"]) << " reads " << it->str() << ", which schedext does not export";
      }
    }
  }
  EXPECT_EQ(alerts, (std::set<std::string>{"SchedextNoLeader", "SchedextLeaderFlapping",
                                           "SchedextRequestErrors", "SchedextLatencyHigh",
                                           "SchedextCacheNotSynced"}));
}

// The words of the apt-get install lists in `text` from `from` up to the next
// "FROM " line (a Dockerfile stage), without options and shell punctuation.
std::set<std::string> AptPackagesOfStage(const std::string& text, const std::string& from) {
  std::set<std::string> packages;
  const size_t begin = text.find(from);
  if (begin == std::string::npos) {
    return packages;
  }
  const size_t end = text.find("\nFROM ", begin + from.size());
  std::istringstream stage(text.substr(begin, end == std::string::npos ? end : end - begin));
  bool installing = false;
  for (std::string line; std::getline(stage, line);) {
    if (line.find("apt-get install") != std::string::npos) {
      installing = true;
      line = line.substr(line.find("apt-get install") + 15);
    } else if (line.find("&&") != std::string::npos || line.rfind("RUN", 0) == 0) {
      installing = false;
    }
    if (!installing) {
      continue;
    }
    std::istringstream words(line);
    for (std::string word; words >> word;) {
      if (word[0] != '-' && word != "\\") {
        packages.insert(word);
      }
    }
  }
  return packages;
}

// The image builds with the packages the README's commands build with: a
// listener moved to Boost.Beast once, and only the Dockerfile missed it.
TEST(DockerfileTest, BuildStageInstallsEveryBuildPackageOfScriptsDev) {
  const std::string dev = ReadFile(kSourceDir + "/scripts/dev");
  const size_t begin = dev.find("build_packages=(");
  ASSERT_NE(begin, std::string::npos);
  std::istringstream list(dev.substr(begin + 16, dev.find(')', begin) - begin - 16));
  const std::set<std::string> image =
      AptPackagesOfStage(ReadFile(kSourceDir + "/deploy/Dockerfile"), "FROM debian:12 AS build");
  ASSERT_FALSE(image.empty());
  size_t checked = 0;
  for (std::string package; list >> package; ++checked) {
    EXPECT_TRUE(image.count(package) == 1) << "deploy/Dockerfile's build stage lacks " << package;
  }
  EXPECT_GT(checked, 5u);
}

// Every shared library the built binary loads comes from a package the
// runtime stage installs (or that debian:12-slim has: libc, libgcc, libstdc++).
TEST(DockerfileTest, RuntimeStageInstallsThePackageOfEveryLibrarySchedextLinks) {
  const std::set<std::string> image =
      AptPackagesOfStage(ReadFile(kSourceDir + "/deploy/Dockerfile"), "FROM debian:12-slim");
  ASSERT_FALSE(image.empty());
  const CommandOutput ldd = RunCommand("ldd " + ShellQuote(SCHEDEXT_BINARY));
  ASSERT_EQ(ldd.exit_code, 0) << ldd.err;
  const std::set<std::string> in_slim = {"libc6", "libgcc-s1", "libstdc++6"};
  std::istringstream lines(ldd.out);
  size_t checked = 0;
  for (std::string line; std::getline(lines, line);) {
    const size_t arrow = line.find("=> /");
    if (arrow == std::string::npos) {
      continue;
    }
    const std::string path = line.substr(arrow + 3, line.find(' ', arrow + 3) - arrow - 3);
    // The sanitizer runtimes of the --asan build are not part of the image.
    if (path.find("/libasan") != std::string::npos || path.find("/libubsan") != std::string::npos) {
      continue;
    }
    // dpkg knows a file by the path its package ships, which merged /usr
    // may have moved: try the link and its target, with and without /usr.
    char real[4096];
    ASSERT_NE(::realpath(path.c_str(), real), nullptr) << path;
    std::vector<std::string> candidates = {path, real};
    for (size_t i = 0, n = candidates.size(); i < n; ++i) {
      const std::string& c = candidates[i];
      candidates.push_back(c.rfind("/usr/", 0) == 0 ? c.substr(4) : "/usr" + c);
    }
    std::string package;
    for (const std::string& candidate : candidates) {
      const CommandOutput owner = RunCommand("dpkg -S " + ShellQuote(candidate));
      if (owner.exit_code == 0) {
        package = owner.out.substr(0, owner.out.find(':'));
        break;
      }
    }
    ASSERT_FALSE(package.empty()) << "no package owns " << path;
    ++checked;
    EXPECT_TRUE(image.count(package) == 1 || in_slim.count(package) == 1)
        << "deploy/Dockerfile's runtime stage lacks " << package << " (" << path << ")";
  }
  EXPECT_GT(checked, 5u) << ldd.out;
}

TEST(SidecarDeployTest, SchedextOnLoopbackBesideTheSchedulerWithoutItsOwnElection) {
  const std::string dir = kSourceDir + "/deploy/sidecar";
  std::vector<YAML::Node> objects;
  const std::string error = Render(dir, objects);
  ASSERT_TRUE(error.empty()) << error;
  const YAML::Node pod = Named(objects, "Pod", "schedext-scheduler");
  EXPECT_EQ(Str(pod["metadata"]["namespace"]), "kube-system");
  EXPECT_EQ(Bool(pod["spec"]["hostNetwork"]), true);
  StatusOr<config::Config> cfg = config::LoadConfigFile(dir + "/schedext.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server.host, "127.0.0.1") << "the verbs on loopback only";
  EXPECT_EQ(cfg->server.status_host, "127.0.0.1");
  EXPECT_FALSE(cfg->cluster.leader_election.enabled) << "the scheduler's election decides";
  EXPECT_FALSE(cfg->server.tls.enabled());

  YAML::Node sched = YAML::LoadFile(dir + "/kube-scheduler-config.yaml");
  EXPECT_EQ(Str(sched["kind"]), "KubeSchedulerConfiguration");
  EXPECT_EQ(Bool(sched["leaderElection"]["leaderElect"]), true);
  EXPECT_EQ(Str(sched["leaderElection"]["resourceName"]), "schedext-scheduler");
  const YAML::Node e = sched["extenders"][0];
  EXPECT_EQ(Str(e["urlPrefix"]), "http://127.0.0.1:" + std::to_string(cfg->server.port));
  EXPECT_EQ(Bool(e["enableHTTPS"]), false);
  for (const char* key : {"filterVerb", "prioritizeVerb", "bindVerb"}) {
    EXPECT_TRUE(kServedVerbs.count(Str(e[key]))) << key;
  }

  // Both containers find their files where the manifest mounts the host's
  // /etc/kubernetes/schedext; schedext's probe is its status port.
  std::map<std::string, YAML::Node> containers;
  for (const YAML::Node& c : pod["spec"]["containers"]) {
    containers[Str(c["name"])] = c;
  }
  ASSERT_TRUE(containers.count("kube-scheduler") && containers.count("schedext"));
  std::string scheduler_config;
  for (const YAML::Node& a : containers["kube-scheduler"]["command"]) {
    if (Str(a).rfind("--config=", 0) == 0) {
      scheduler_config = Str(a).substr(9);
    }
  }
  EXPECT_EQ(scheduler_config, "/etc/kubernetes/schedext/kube-scheduler-config.yaml");
  std::vector<std::string> args;
  for (const YAML::Node& a : containers["schedext"]["args"]) {
    args.push_back(Str(a));
  }
  EXPECT_EQ(args, (std::vector<std::string>{"--config", "/etc/kubernetes/schedext/schedext.yaml",
                                            "--kubeconfig", "/etc/kubernetes/scheduler.conf"}));
  EXPECT_EQ(Int(containers["schedext"]["livenessProbe"]["httpGet"]["port"]),
            cfg->server.status_port);
  for (const auto& [name, c] : containers) {
    bool mounted = false;
    for (const YAML::Node& m : c["volumeMounts"]) {
      mounted = mounted || Str(m["mountPath"]) == "/etc/kubernetes/schedext";
    }
    EXPECT_TRUE(mounted) << name;
  }
}

}  // namespace
}  // namespace schedext
