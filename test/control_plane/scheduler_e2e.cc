#include "control_plane/scheduler_e2e.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "testing/child_process.h"
#include "testing/loopback.h"

extern char** environ;

namespace schedext::testing::e2e {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

Status WriteText(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return InternalError("cannot write " + path);
  return OkStatus();
}

// The exit code, or 128 + signal.
int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool Reaped(pid_t pid, milliseconds timeout, int* exit_code = nullptr) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid && exit_code != nullptr) *exit_code = ExitCode(status);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

// Polls `condition` every 100 ms until it holds or `timeout` passes.
bool PollUntil(const std::function<bool()>& condition, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  while (!condition()) {
    if (steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return true;
}

json ParseOrNull(const std::string& text) { return json::parse(text, nullptr, false); }

}  // namespace

// ---------------------------------------------------------------- schedext

Status SchedextProcess::Start(const std::string& dir, std::string_view config_yaml,
                              const std::string& kubeconfig,
                              const std::vector<std::string>& extra_args,
                              const std::vector<std::string>& extra_env,
                              std::function<bool(SchedextProcess&)> ready,
                              std::chrono::seconds timeout) {
  Stop();
  exit_code_ = -1;
  const std::string suffix = std::to_string(++starts_);
  config_path_ = dir + "/schedext-" + suffix + ".yaml";
  log_path_ = dir + "/schedext-" + suffix + ".log";
  SCHEDEXT_RETURN_IF_ERROR(WriteText(config_path_, config_yaml));
  std::vector<std::string> args = {binary_,   "--config", config_path_, "--kubeconfig",
                                   kubeconfig, "--listen", "127.0.0.1:0"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  // Hermetic: no other cluster than the one the kubeconfig names.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    if (var.rfind("KUBECONFIG=", 0) != 0 && var.rfind("KUBERNETES_SERVICE_", 0) != 0) {
      env.emplace_back(var);
    }
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());

  const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return InternalError("open " + log_path_ + ": " + std::strerror(errno));
  StatusOr<pid_t> spawned = SpawnProcess(args, -1, log_fd, &env);
  ::close(log_fd);
  SCHEDEXT_RETURN_IF_ERROR(spawned.status());
  const pid_t pid = *spawned;
  pid_ = pid;

  const auto deadline = steady_clock::now() + timeout;
  const std::regex listening(R"(schedext \S+ listening on (?:https?://)?127\.0\.0\.1:([0-9]+))");
  while (port_ == 0) {
    std::smatch m;
    const std::string log = ReadWholeFile(log_path_);
    if (std::regex_search(log, m, listening)) {
      port_ = std::stoi(m[1].str());
      break;
    }
    if (!running()) return UnavailableError("schedext exited:\n" + FileTail(log_path_));
    if (steady_clock::now() >= deadline) {
      return DeadlineExceededError("schedext printed no listening line:\n" + FileTail(log_path_));
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  if (!ready) {
    ready = [](SchedextProcess& p) { return HttpGet(p.port(), "/readyz").first == 200; };
  }
  while (!ready(*this)) {
    if (!running()) return UnavailableError("schedext exited:\n" + FileTail(log_path_));
    if (steady_clock::now() >= deadline) {
      return DeadlineExceededError("schedext not ready in time:\n" + FileTail(log_path_));
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  return OkStatus();
}

void SchedextProcess::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  if (!Reaped(pid_, std::chrono::seconds(30), &exit_code_)) {
    ::kill(pid_, SIGKILL);
    Reaped(pid_, std::chrono::seconds(10));
    exit_code_ = 128 + SIGKILL;
  }
  pid_ = -1;
  port_ = 0;
  status_port_ = 0;
}

void SchedextProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  Reaped(pid_, std::chrono::seconds(10));
  exit_code_ = 128 + SIGKILL;
  pid_ = -1;
  port_ = 0;
  status_port_ = 0;
}

int SchedextProcess::status_port() {
  if (status_port_ == 0) {
    static const std::regex line(R"(status listener on (?:http://)?127\.0\.0\.1:([0-9]+))");
    std::smatch m;
    const std::string log = ReadWholeFile(log_path_);
    if (std::regex_search(log, m, line)) status_port_ = std::stoi(m[1].str());
  }
  return status_port_;
}

bool SchedextProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) exit_code_ = ExitCode(status);
  pid_ = -1;
  return false;
}

std::string SchedextProcess::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

// ---------------------------------------------------------------- files, HTTP

std::string ReadWholeFile(const std::string& path) { return ReadFileToString(path); }

std::string FileTail(const std::string& path, size_t bytes) {
  const std::string text = ReadWholeFile(path);
  if (text.size() <= bytes) return text;
  size_t from = text.size() - bytes;
  const size_t nl = text.find('\n', from);
  if (nl != std::string::npos) from = nl + 1;
  return "[...]\n" + text.substr(from);
}

std::pair<int, std::string> HttpGet(int port, std::string_view path) {
  const HttpReply reply = Exchange(port, BuildRequest("GET", path, ""));
  return {reply.status, reply.body};
}

int64_t RequestCount(int port, std::string_view profile, std::string_view verb,
                     std::string_view outcome) {
  const auto [status, body] = HttpGet(port, "/metrics");
  if (status != 200) return -1;
  const std::string series = "schedext_requests_total{profile=\"" + std::string(profile) +
                             "\",verb=\"" + std::string(verb) + "\",outcome=\"" +
                             std::string(outcome) + "\"} ";
  const size_t at = body.find(series);
  if (at == std::string::npos) return -1;
  return std::strtoll(body.c_str() + at + series.size(), nullptr, 10);
}

StatusOr<std::string> ReadSourceFile(std::string_view relative_path) {
  const std::string path = std::string(SCHEDEXT_SOURCE_DIR) + "/" + std::string(relative_path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---------------------------------------------------------------- configurations

StatusOr<std::string> SchedulerConfigFromDeploy(const ControlPlane& cp,
                                                std::string_view deploy_file,
                                                const SchedulerEdits& edits) {
  SCHEDEXT_ASSIGN_OR_RETURN(std::string text, ReadSourceFile(deploy_file));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string(deploy_file) + ": " + e.what());
  }
  // One test instance: no lease; connect as system:kube-scheduler.
  root["leaderElection"] = YAML::Node(YAML::NodeType::Map);
  root["leaderElection"]["leaderElect"] = false;
  root["clientConnection"]["kubeconfig"] = cp.scheduler_kubeconfig();
  if (edits.disable_in_tree_scoring) {
    for (YAML::Node profile : root["profiles"]) {
      YAML::Node all;
      all["name"] = "*";
      YAML::Node disabled(YAML::NodeType::Sequence);
      disabled.push_back(all);
      profile["plugins"]["score"]["disabled"] = disabled;
    }
  }
  if (edits.disable_in_tree_fit) {
    for (YAML::Node profile : root["profiles"]) {
      for (const char* point : {"preFilter", "filter"}) {
        YAML::Node fit;
        fit["name"] = "NodeResourcesFit";
        YAML::Node disabled(YAML::NodeType::Sequence);
        disabled.push_back(fit);
        profile["plugins"][point]["disabled"] = disabled;
      }
    }
  }
  if (edits.drop_extenders) {
    root.remove("extenders");
  } else {
    YAML::Node extenders = root["extenders"];
    if (!extenders.IsSequence() || extenders.size() != 1) {
      return InvalidArgumentError(std::string(deploy_file) + ": expected one extender");
    }
    YAML::Node ext = extenders[0];
    ext["urlPrefix"] = edits.url_prefix;
    if (edits.node_cache_capable) ext["nodeCacheCapable"] = *edits.node_cache_capable;
    if (edits.http_timeout) ext["httpTimeout"] = *edits.http_timeout;
    if (edits.ignorable) ext["ignorable"] = *edits.ignorable;
    if (edits.bind) {
      if (*edits.bind) {
        ext["bindVerb"] = "bind";
      } else {
        ext.remove("bindVerb");
      }
    }
    if (edits.managed_resources) {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const auto& [name, ignored] : *edits.managed_resources) {
        YAML::Node r;
        r["name"] = name;
        r["ignoredByScheduler"] = ignored;
        list.push_back(r);
      }
      ext["managedResources"] = list;
    }
    if (edits.tls) {
      ext["enableHTTPS"] = true;
      YAML::Node tls;
      tls["caFile"] = edits.tls->ca_file;
      if (!edits.tls->cert_file.empty()) {
        tls["certFile"] = edits.tls->cert_file;
        tls["keyFile"] = edits.tls->key_file;
      }
      ext["tlsConfig"] = tls;
    }
  }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

namespace {

void Merge(YAML::Node target, const YAML::Node& overlay) {
  for (const auto& kv : overlay) {
    const std::string key = kv.first.as<std::string>();
    if (kv.second.IsMap() && target[key].IsMap()) {
      Merge(target[key], kv.second);
    } else {
      target[key] = kv.second;
    }
  }
}

}  // namespace

StatusOr<std::string> MergeYaml(std::string_view yaml, std::string_view overlay) {
  YAML::Node root;
  YAML::Node extra;
  try {
    root = YAML::Load(std::string(yaml));
    extra = YAML::Load(std::string(overlay));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(e.what());
  }
  if (!root.IsMap() || !extra.IsMap()) return InvalidArgumentError("MergeYaml: not two maps");
  Merge(root, extra);
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

StatusOr<std::string> WithPolicy(std::string_view yaml, std::string_view profile,
                                 std::string_view policy_yaml) {
  YAML::Node root;
  YAML::Node policy;
  try {
    root = YAML::Load(std::string(yaml));
    policy = YAML::Load(std::string(policy_yaml));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(e.what());
  }
  for (YAML::Node p : root["profiles"]) {
    if (p["name"].as<std::string>() != profile) continue;
    YAML::Node policies(YAML::NodeType::Sequence);
    policies.push_back(policy);
    for (const YAML::Node& existing : p["policies"]) policies.push_back(existing);
    p["policies"] = policies;
    YAML::Emitter out;
    out << root;
    return std::string(out.c_str()) + "\n";
  }
  return NotFoundError("no profile " + std::string(profile));
}

// ---------------------------------------------------------------- objects

Status CreateReadyNode(const ControlPlane& cp, const NodeSpec& spec) {
  json resources = json::object();
  for (const auto& [k, v] : spec.capacity) resources[k] = v;
  if (!resources.contains("pods")) resources["pods"] = "110";
  const json status = {{"capacity", resources},
                       {"allocatable", resources},
                       {"conditions",
                        {{{"type", "Ready"},
                          {"status", spec.ready},
                          {"reason", spec.ready == "True" ? "KubeletReady" : "KubeletNotReady"},
                          {"message", "fake node of the end-to-end tests"}}}}};
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", spec.name}}},
               {"status", status}};
  if (!spec.labels.empty()) node["metadata"]["labels"] = spec.labels;
  SCHEDEXT_RETURN_IF_ERROR(cp.Create("/api/v1/nodes", node.dump()).status());

  json taints = json::array();
  for (const Taint& t : spec.taints) {
    json j = {{"key", t.key}, {"effect", t.effect}};
    if (!t.value.empty()) j["value"] = t.value;
    taints.push_back(j);
  }
  const std::string path = "/api/v1/nodes/" + spec.name;
  const json spec_patch = {{"spec", {{"taints", taints.empty() ? json(nullptr) : taints}}}};
  SCHEDEXT_ASSIGN_OR_RETURN(ApiReply r, cp.AdminRequest("PATCH", path, spec_patch.dump()));
  if (r.status != 200) return InternalError("PATCH " + path + ": " + r.body);
  SCHEDEXT_ASSIGN_OR_RETURN(
      r, cp.AdminRequest("PATCH", path + "/status", json{{"status", status}}.dump()));
  if (r.status != 200) return InternalError("PATCH " + path + "/status: " + r.body);

  // Read back: exactly the taints asked for, and the capacity.
  SCHEDEXT_ASSIGN_OR_RETURN(r, cp.AdminRequest("GET", path));
  const json got = ParseOrNull(r.body);
  if (r.status != 200 || !got.is_object()) return InternalError("GET " + path + ": " + r.body);
  const json got_taints = got["spec"].value("taints", json::array());
  if (got_taints.size() != spec.taints.size()) {
    return InternalError("node " + spec.name + " has taints " + got_taints.dump());
  }
  for (const auto& [k, v] : spec.capacity) {
    if (got["status"]["allocatable"].value(k, "") != v) {
      return InternalError("node " + spec.name + " allocatable " +
                           got["status"]["allocatable"].dump());
    }
  }
  return OkStatus();
}

std::string PodJson(const PodSpec& spec) {
  json resources = json::object();
  if (!spec.requests.empty()) resources["requests"] = spec.requests;
  if (!spec.limits.empty()) resources["limits"] = spec.limits;
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", spec.name}, {"namespace", spec.namespace_name}}},
      {"spec",
       {{"schedulerName", spec.scheduler_name},
        {"terminationGracePeriodSeconds", 0},
        {"containers",
         {{{"name", "c"}, {"image", "registry.k8s.io/pause:3.9"}, {"resources", resources}}}}}}};
  if (!spec.node_selector.empty()) pod["spec"]["nodeSelector"] = spec.node_selector;
  if (!spec.priority_class.empty()) pod["spec"]["priorityClassName"] = spec.priority_class;
  if (!spec.node_name.empty()) pod["spec"]["nodeName"] = spec.node_name;
  return pod.dump();
}

StatusOr<std::string> CreatePod(const ControlPlane& cp, const PodSpec& spec) {
  SCHEDEXT_ASSIGN_OR_RETURN(
      std::string created,
      cp.Create("/api/v1/namespaces/" + spec.namespace_name + "/pods", PodJson(spec)));
  const json j = ParseOrNull(created);
  if (!j.is_object()) return InternalError("unparsable pod: " + created);
  return j["metadata"].value("uid", "");
}

json GetPod(const ControlPlane& cp, std::string_view ns, std::string_view name) {
  auto r = cp.AdminRequest("GET",
                           "/api/v1/namespaces/" + std::string(ns) + "/pods/" + std::string(name));
  if (!r.ok() || r->status != 200) return json();
  return ParseOrNull(r->body);
}

std::vector<json> ListPods(const ControlPlane& cp, std::string_view ns) {
  const std::string path =
      ns.empty() ? "/api/v1/pods" : "/api/v1/namespaces/" + std::string(ns) + "/pods";
  auto r = cp.AdminRequest("GET", path);
  if (!r.ok() || r->status != 200) return {};
  const json list = ParseOrNull(r->body);
  if (!list.is_object() || !list["items"].is_array()) return {};
  return list["items"].get<std::vector<json>>();
}

std::map<std::string, std::string> WaitForNodeNames(const ControlPlane& cp, std::string_view ns,
                                                    const std::vector<std::string>& names,
                                                    milliseconds timeout) {
  std::map<std::string, std::string> bound;
  PollUntil(
      [&] {
        bound.clear();
        for (const json& pod : ListPods(cp, ns)) {
          const std::string node = pod["spec"].value("nodeName", "");
          if (!node.empty()) bound[pod["metadata"].value("name", "")] = node;
        }
        for (const std::string& n : names) {
          if (bound.count(n) == 0) return false;
        }
        return true;
      },
      timeout);
  std::map<std::string, std::string> wanted;
  for (const std::string& n : names) {
    if (bound.count(n) != 0) wanted[n] = bound[n];
  }
  return wanted;
}

namespace {

std::optional<std::pair<std::string, std::string>> WaitPodScheduledFalse(
    const ControlPlane& cp, std::string_view ns, std::string_view name,
    std::string_view want_reason, milliseconds timeout) {
  std::optional<std::pair<std::string, std::string>> found;
  PollUntil(
      [&] {
        const json pod = GetPod(cp, ns, name);
        if (!pod.is_object()) return false;
        for (const json& c : pod["status"].value("conditions", json::array())) {
          if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
              (want_reason.empty() || c.value("reason", "") == want_reason)) {
            found = std::make_pair(c.value("reason", ""), c.value("message", ""));
            return true;
          }
        }
        return false;
      },
      timeout);
  return found;
}

}  // namespace

std::optional<std::string> WaitUnschedulable(const ControlPlane& cp, std::string_view ns,
                                             std::string_view name, milliseconds timeout) {
  auto found = WaitPodScheduledFalse(cp, ns, name, "Unschedulable", timeout);
  if (!found) return std::nullopt;
  return found->second;
}

std::optional<std::pair<std::string, std::string>> WaitNotScheduled(const ControlPlane& cp,
                                                                    std::string_view ns,
                                                                    std::string_view name,
                                                                    milliseconds timeout) {
  return WaitPodScheduledFalse(cp, ns, name, "", timeout);
}

std::vector<std::string> FailedSchedulingEvents(const ControlPlane& cp, std::string_view ns,
                                                std::string_view name) {
  std::vector<std::string> out;
  auto r = cp.AdminRequest("GET", "/api/v1/namespaces/" + std::string(ns) +
                                      "/events?fieldSelector=involvedObject.name%3D" +
                                      std::string(name));
  if (!r.ok() || r->status != 200) return out;
  const json list = ParseOrNull(r->body);
  if (!list.is_object()) return out;
  for (const json& e : list.value("items", json::array())) {
    if (e.value("reason", "") == "FailedScheduling") out.push_back(e.value("message", ""));
  }
  return out;
}

std::optional<int64_t> MilliValue(std::string_view quantity) {
  static const std::regex pattern(R"(^([0-9]+)(?:\.([0-9]+))?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$)");
  const std::string q(quantity);
  std::smatch m;
  if (!std::regex_match(q, m, pattern)) return std::nullopt;
  // Whole and fractional parts in thousandths, then the suffix's factor.
  int64_t milli = std::stoll(m[1].str()) * 1000;
  std::string frac = m[2].str();
  if (frac.size() > 3) return std::nullopt;
  while (!frac.empty() && frac.size() < 3) frac += "0";
  if (!frac.empty()) milli += std::stoll(frac);
  const std::string suffix = m[3].str();
  static const std::map<std::string, int64_t> factors = {{"k", 1000},
                                                         {"M", 1000000},
                                                         {"G", 1000000000},
                                                         {"T", 1000000000000},
                                                         {"Ki", int64_t{1} << 10},
                                                         {"Mi", int64_t{1} << 20},
                                                         {"Gi", int64_t{1} << 30},
                                                         {"Ti", int64_t{1} << 40}};
  if (suffix == "m") {
    if (milli % 1000 != 0) return std::nullopt;
    return milli / 1000;
  }
  if (!suffix.empty()) milli *= factors.at(suffix);
  return milli;
}

std::vector<std::string> OverAllocatedNodes(const ControlPlane& cp,
                                            const std::set<std::string>& per_device) {
  std::vector<std::string> out;
  auto r = cp.AdminRequest("GET", "/api/v1/nodes");
  if (!r.ok() || r->status != 200) return {"cannot list nodes"};
  const json nodes = ParseOrNull(r->body);
  std::map<std::string, std::map<std::string, int64_t>> used;  // node -> resource -> milli
  for (const json& pod : ListPods(cp, "")) {
    const std::string node = pod["spec"].value("nodeName", "");
    const std::string phase = pod["status"].value("phase", "");
    if (node.empty() || phase == "Succeeded" || phase == "Failed") continue;
    used[node]["pods"] += 1000;
    for (const json& c : pod["spec"]["containers"]) {
      const json requests = c["resources"].value("requests", json::object());
      for (const auto& [res, q] : requests.items()) {
        if (per_device.count(res) != 0) continue;
        const auto v = MilliValue(q.get<std::string>());
        if (!v) {
          out.push_back("unparsable quantity " + q.dump());
          continue;
        }
        used[node][res] += *v;
      }
    }
  }
  for (const json& node : nodes.value("items", json::array())) {
    const std::string name = node["metadata"].value("name", "");
    const json alloc = node["status"].value("allocatable", json::object());
    for (const auto& [res, milli] : used[name]) {
      const auto have = alloc.contains(res) ? MilliValue(alloc[res].get<std::string>())
                                            : std::optional<int64_t>(0);
      if (!have || milli > *have) {
        out.push_back(name + ": " + res + " requested " + std::to_string(milli) +
                      "/1000, allocatable " + (alloc.contains(res) ? alloc[res].dump() : "none"));
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- audit

std::map<std::string, std::string> BindingUsers(const std::string& audit_log, std::string_view ns) {
  std::map<std::string, std::string> users;
  std::istringstream lines(ReadWholeFile(audit_log));
  for (std::string line; std::getline(lines, line);) {
    const json e = ParseOrNull(line);
    if (!e.is_object() || e.value("stage", "") != "ResponseComplete") continue;
    const json ref = e.value("objectRef", json::object());
    if (ref.value("resource", "") != "pods" || ref.value("subresource", "") != "binding" ||
        ref.value("namespace", "") != ns || e.value("verb", "") != "create") {
      continue;
    }
    if (e["responseStatus"].value("code", 0) != 201) continue;
    users[ref.value("name", "")] = e["user"].value("username", "");
  }
  return users;
}

StatusOr<std::vector<std::string>> BindingAuditFlags(const std::string& dir,
                                                     std::string* audit_log_path) {
  const std::string policy = dir + "/audit-policy.yaml";
  SCHEDEXT_RETURN_IF_ERROR(WriteText(policy,
                                     "apiVersion: audit.k8s.io/v1\n"
                                     "kind: Policy\n"
                                     "omitStages: [RequestReceived]\n"
                                     "rules:\n"
                                     "  - level: Metadata\n"
                                     "    verbs: [create]\n"
                                     "    resources:\n"
                                     "      - group: \"\"\n"
                                     "        resources: [pods/binding]\n"
                                     "  - level: None\n"));
  *audit_log_path = dir + "/audit.log";
  // Blocking: each event is written before the request is answered, so a
  // test that saw a pod bound finds its Binding in the log.
  return std::vector<std::string>{"--audit-policy-file=" + policy,
                                  "--audit-log-path=" + *audit_log_path,
                                  "--audit-log-mode=blocking", "--audit-log-maxbackup=1"};
}

// ---------------------------------------------------------------- housekeeping

StatusOr<std::string> MakeTempDir(std::string_view prefix) {
  std::string tmpl = ::testing::TempDir() + std::string(prefix) + "XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return InternalError("mkdtemp " + tmpl + ": " + std::strerror(errno));
  }
  return tmpl;
}

void RemoveTree(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

void DeletePodsAndNodes(const ControlPlane& cp, std::string_view ns,
                        const std::vector<std::string>& nodes) {
  const std::string pods = "/api/v1/namespaces/" + std::string(ns) + "/pods";
  (void)cp.AdminRequest("DELETE", pods + "?gracePeriodSeconds=0");
  PollUntil([&] { return ListPods(cp, ns).empty(); }, std::chrono::seconds(30));
  for (const std::string& n : nodes) (void)cp.Delete("/api/v1/nodes/" + n, /*missing_ok=*/true);
}

Status EnsurePriorityClass(const ControlPlane& cp, std::string_view name, int value) {
  const json pc = {{"apiVersion", "scheduling.k8s.io/v1"},
                   {"kind", "PriorityClass"},
                   {"metadata", {{"name", name}}},
                   {"value", value}};
  SCHEDEXT_ASSIGN_OR_RETURN(
      ApiReply r, cp.AdminRequest("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc.dump()));
  if (r.status == 201 || r.status == 409) return OkStatus();
  return InternalError("create PriorityClass " + std::string(name) + ": " + r.body);
}

}  // namespace schedext::testing::e2e
