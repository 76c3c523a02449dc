// Records the request bodies a real kube-scheduler sends to its extender, as
// test/testdata/kube-scheduler-<minor>/ holds them (README there): a
// recording proxy stands between kube-scheduler and the real schedext binary,
// writes every request's body byte for byte (<verb>-<n>.json) and its request
// line and headers in arrival order (<verb>-<n>.meta.json), and passes it on,
// so schedext's real answers drive the scheduler (its filter, its preemption
// victims, its binds).
//
// The lab scenario runs once per node mode: five nodes (a tainted control
// plane, two CPU nodes, two tainted GPU nodes carrying example.com/gpu-mem
// and one DRA device each, with the node status fields a current kubelet
// reports), then one pod at a time, each bound before the next: a pod with
// affinities, ports and env; a pod created with a scheduling gate, sent to
// nobody until the gate is removed; a GPU pod with an init container and a
// sidecar; a DaemonSet-like pod tolerating everything, with pod-level
// resources; a pod with a ResourceClaim; five low-priority GPU pods; and a
// high-priority pod that only fits by preempting some of them.
//
// Not a ctest test (it writes into the source tree): run it by hand,
//   SCHEDEXT_K8S_BIN_DIR=build/k8s/1.37 SCHEDEXT_K8S_VERSION=1.37
//   SCHEDEXT_RECORD_OUT=test/testdata/kube-scheduler-1.37
//   build/test/test/record_kube_scheduler
// (the three on one line: the variables in its environment).
// Each mode's folder is emptied of earlier recordings first.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "control_plane/e2e_suite.h"
#include "control_plane/scheduler_e2e.h"

namespace schedext::testing::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

// A plain-HTTP/1.1 proxy on loopback that writes each request before passing
// it to `upstream_port`. Started and stopped by the test thread; one thread
// accepts, one serves each connection (kube-scheduler keeps a few open).
class RecordingProxy {
 public:
  RecordingProxy(fs::path dir, int upstream_port)
      : dir_(std::move(dir)), upstream_port_(upstream_port) {}
  ~RecordingProxy() { Stop(); }

  Status Start() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) return InternalError("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return InternalError("bind/listen");
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
    return OkStatus();
  }

  void Stop() {
    if (listen_fd_ < 0) return;
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    if (acceptor_.joinable()) acceptor_.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
    }
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    ::close(listen_fd_);
    listen_fd_ = -1;
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Requests recorded so far of `verb`.
  int count(const std::string& verb) {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_[verb];
  }
  // Pod names of the filter requests recorded so far.
  std::vector<std::string> filtered_pods() {
    std::lock_guard<std::mutex> lock(mu_);
    return filtered_pods_;
  }

 private:
  void Accept() {
    while (!stopping_) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      std::lock_guard<std::mutex> lock(mu_);
      connections_.push_back(fd);
      workers_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  // One connection: requests one after another (keep-alive).
  void Serve(int fd) {
    httplib::Client upstream("127.0.0.1", upstream_port_);
    upstream.set_read_timeout(std::chrono::seconds(30));
    std::string buffer;
    char chunk[65536];
    while (true) {
      size_t header_end;
      while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<size_t>(n));
      }
      ordered_json meta;
      ordered_json headers = ordered_json::object();
      size_t content_length = 0;
      std::string content_type = "application/json";
      const std::string head = buffer.substr(0, header_end);
      size_t line_start = 0;
      for (bool first = true; line_start <= head.size(); first = false) {
        size_t line_end = head.find("\r\n", line_start);
        if (line_end == std::string::npos) line_end = head.size();
        const std::string line = head.substr(line_start, line_end - line_start);
        line_start = line_end + 2;
        if (first) {
          const size_t a = line.find(' ');
          const size_t b = line.rfind(' ');
          meta["method"] = line.substr(0, a);
          meta["path"] = line.substr(a + 1, b - a - 1);
          meta["http_version"] = line.substr(b + 1);
          continue;
        }
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string name = line.substr(0, colon);
        const std::string value = line.substr(line.find_first_not_of(' ', colon + 1));
        headers[name] = value;
        if (name == "Content-Length") content_length = std::stoul(value);
        if (name == "Content-Type") content_type = value;
      }
      buffer.erase(0, header_end + 4);
      while (buffer.size() < content_length) {
        const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<size_t>(n));
      }
      const std::string body = buffer.substr(0, content_length);
      buffer.erase(0, content_length);
      meta["headers"] = headers;
      meta["request_bytes"] = content_length;

      const std::string path = meta["path"];
      const std::string verb = path.substr(path.rfind('/') + 1);
      Write(verb, body, meta);

      std::string reply;
      auto result = upstream.Post(path, body, content_type);
      if (result) {
        reply = "HTTP/1.1 " + std::to_string(result->status) +
                " X\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(result->body.size()) + "\r\n\r\n" + result->body;
      } else {
        reply = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n";
      }
      for (size_t sent = 0; sent < reply.size();) {
        const ssize_t n = ::send(fd, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return;
        sent += static_cast<size_t>(n);
      }
    }
  }

  void Write(const std::string& verb, const std::string& body, const ordered_json& meta) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string stem = verb + "-" + std::to_string(++counts_[verb]);
    std::ofstream(dir_ / (stem + ".json"), std::ios::binary) << body;
    std::ofstream(dir_ / (stem + ".meta.json"), std::ios::binary) << meta.dump(1);
    if (verb == "filter") {
      const json parsed = json::parse(body, nullptr, false);
      if (parsed.is_object()) filtered_pods_.push_back(parsed["Pod"]["metadata"].value("name", ""));
    }
  }

  const fs::path dir_;
  const int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> connections_;
  std::vector<std::thread> workers_;
  std::map<std::string, int> counts_;
  std::vector<std::string> filtered_pods_;
};

constexpr std::string_view kGpuTaint = "example.com/gpu";
constexpr std::string_view kDriver = "gpu.example.com";

class RecordKubeScheduler : public E2eSuite {
 protected:
  static void SetUpTestSuite() {
    StartE2e(
        {}, [] { return ReadSourceFile("deploy/base/schedext.yaml"); },
        [] {
          SCHEDEXT_RETURN_IF_ERROR(EnsurePriorityClass(cp(), "lab-low", 1000));
          SCHEDEXT_RETURN_IF_ERROR(EnsurePriorityClass(cp(), "lab-high", 1000000));
          const json device_class = {
              {"apiVersion", "resource.k8s.io/v1"},
              {"kind", "DeviceClass"},
              {"metadata", {{"name", kDriver}}},
              {"spec",
               {{"selectors",
                 {{{"cel",
                    {{"expression", "device.driver == \"" + std::string(kDriver) + "\""}}}}}}}}};
          return cp().Create("/apis/resource.k8s.io/v1/deviceclasses", device_class.dump()).status();
        });
  }

  void SetUp() override {
    if (std::getenv("SCHEDEXT_RECORD_OUT") == nullptr) {
      GTEST_SKIP() << "set SCHEDEXT_RECORD_OUT to the folder to record into";
    }
    E2eSuite::SetUp();
  }

  // The claim holds its device until it is gone, and the next mode's nodes
  // publish devices of the same pools. Its finalizer is dropped first: no
  // resourceclaim controller runs here to remove it.
  void TearDown() override {
    if (!ns_.empty()) {
      const std::string claim = "/apis/resource.k8s.io/v1/namespaces/" + ns_ + "/resourceclaims/claim-1";
      (void)cp().AdminRequest("PATCH", claim, R"({"metadata":{"finalizers":null}})");
      (void)cp().Delete(claim, true);
    }
    for (const std::string& node : nodes_) {
      (void)cp().Delete("/apis/resource.k8s.io/v1/resourceslices/" + node, true);
    }
    E2eSuite::TearDown();
  }

  // A lab node named `name` (not per test: the bodies read as a cluster's),
  // with the status fields a 1.37 kubelet adds.
  void LabNode(const std::string& name, std::map<std::string, std::string> capacity,
               std::map<std::string, std::string> labels, std::vector<Taint> taints) {
    labels["kubernetes.io/hostname"] = name;
    labels["kubernetes.io/os"] = "linux";
    labels["kubernetes.io/arch"] = "amd64";
    nodes_.push_back(name);
    Status s = CreateReadyNode(cp(), {name, std::move(capacity), std::move(labels),
                                      std::move(taints), "True"});
    ASSERT_TRUE(s.ok()) << s.ToString();
    const json status = {
        {"status",
         {{"nodeInfo",
           {{"machineID", "0f1e2d3c4b5a69788796a5b4c3d2e1f0"},
            {"systemUUID", "4c4c4544-0042-3510-8052-" + name},
            {"bootID", "b3c1f0de-6f0e-4a55-9d43-" + name},
            {"kernelVersion", "6.8.0-45-generic"},
            {"osImage", "Ubuntu 24.04.1 LTS"},
            {"containerRuntimeVersion", "containerd://2.1.4"},
            {"kubeletVersion", "v1.37.2"},
            {"kubeProxyVersion", ""},
            {"operatingSystem", "linux"},
            {"architecture", "amd64"}}},
          {"images",
           {{{"names", {"registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097",
                        "registry.k8s.io/pause:3.10"}},
             {"sizeBytes", 320368}}}},
          {"runtimeHandlers",
           {{{"name", "runc"},
             {"features", {{"recursiveReadOnlyMounts", true}, {"userNamespaces", true}}}},
            {{"name", ""},
             {"features", {{"recursiveReadOnlyMounts", true}, {"userNamespaces", true}}}}}},
          {"features", {{"supplementalGroupsPolicy", true}}},
          {"addresses",
           {{{"type", "InternalIP"}, {"address", "10.0.0." + std::to_string(nodes_.size())}},
            {{"type", "Hostname"}, {"address", name}}}}}}};
    auto r = cp().AdminRequest("PATCH", "/api/v1/nodes/" + name + "/status", status.dump());
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
    const std::string cidr = "10.244." + std::to_string(nodes_.size()) + ".0/24";
    const json spec = {{"spec",
                        {{"podCIDR", cidr},
                         {"podCIDRs", {cidr}},
                         {"providerID", "lab://" + name}}}};
    r = cp().AdminRequest("PATCH", "/api/v1/nodes/" + name, spec.dump());
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
  }

  // One DRA device on `node`, published as a driver would.
  void DeviceOn(const std::string& node) {
    const json slice = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceSlice"},
        {"metadata", {{"name", node}}},
        {"spec",
         {{"driver", kDriver},
          {"nodeName", node},
          {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
          {"devices", {{{"name", "gpu-0"}}}}}}};
    auto created = cp().Create("/apis/resource.k8s.io/v1/resourceslices", slice.dump());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  json LabPod(const std::string& name, std::map<std::string, std::string> requests,
              const std::string& priority_class = "") {
    PodSpec spec;
    spec.namespace_name = ns_;
    spec.name = name;
    spec.requests = requests;
    spec.priority_class = priority_class;
    // Extended resources must have limits equal to their requests.
    for (const auto& [k, v] : requests) {
      if (k.find('/') != std::string::npos) spec.limits[k] = v;
    }
    json pod = json::parse(PodJson(spec));
    pod["metadata"]["labels"] = {{"app", name.substr(0, name.rfind('-'))}};
    return pod;
  }
  static void TolerateGpu(json& pod) {
    pod["spec"]["tolerations"] = {
        {{"key", kGpuTaint}, {"operator", "Exists"}, {"effect", "NoSchedule"}}};
  }

  void CreateAndBind(const json& pod) {
    auto created = cp().Create("/api/v1/namespaces/" + ns_ + "/pods", pod.dump());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    const std::string name = pod["metadata"]["name"];
    auto bound = WaitForNodeNames(cp(), ns_, {name}, kScheduleTimeout);
    ASSERT_EQ(bound.count(name), 1u) << name << " was not bound";
  }

  // `deploy_file` with bindVerb set (schedext binds) and its extender pointed
  // at the proxy.
  void Record(std::string_view deploy_file, bool node_cache) {
    const fs::path dir = fs::path(std::getenv("SCHEDEXT_RECORD_OUT")) /
                         (node_cache ? "nodecache-true" : "nodecache-false");
    fs::create_directories(dir);
    for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".json") fs::remove(e.path());
    }
    RecordingProxy proxy(dir, schedext().port());
    ASSERT_TRUE(proxy.Start().ok());
    SchedulerEdits edits;
    edits.url_prefix = proxy.url() + "/default";
    edits.bind = true;
    ASSERT_NO_FATAL_FAILURE(StartScheduler(deploy_file, edits));

    const std::vector<Taint> gpu_taint = {{std::string(kGpuTaint), "present", "NoSchedule"}};
    ASSERT_NO_FATAL_FAILURE(
        LabNode("lab-cp-1", {{"cpu", "3900m"}, {"memory", "15784Mi"}},
                {{"node-role.kubernetes.io/control-plane", ""},
                 {"topology.kubernetes.io/zone", "zone-a"}},
                {{"node-role.kubernetes.io/control-plane", "", "NoSchedule"}}));
    ASSERT_NO_FATAL_FAILURE(LabNode("lab-cpu-1", {{"cpu", "7900m"}, {"memory", "32168Mi"}},
                                    {{"topology.kubernetes.io/zone", "zone-a"}}, {}));
    ASSERT_NO_FATAL_FAILURE(LabNode("lab-cpu-2", {{"cpu", "7900m"}, {"memory", "32168Mi"}},
                                    {{"topology.kubernetes.io/zone", "zone-b"}}, {}));
    ASSERT_NO_FATAL_FAILURE(LabNode(
        "lab-gpu-1", {{"cpu", "15900m"}, {"memory", "64936Mi"}, {"example.com/gpu-mem", "320"}},
        {{"topology.kubernetes.io/zone", "zone-a"}, {"example.com/gpu", "true"}}, gpu_taint));
    ASSERT_NO_FATAL_FAILURE(LabNode(
        "lab-gpu-2", {{"cpu", "15900m"}, {"memory", "64936Mi"}, {"example.com/gpu-mem", "160"}},
        {{"topology.kubernetes.io/zone", "zone-b"}, {"example.com/gpu", "true"}}, gpu_taint));
    ASSERT_NO_FATAL_FAILURE(DeviceOn("lab-gpu-1"));
    ASSERT_NO_FATAL_FAILURE(DeviceOn("lab-gpu-2"));

    // The fields of a typical Deployment pod.
    json web = LabPod("web-1", {{"cpu", "500m"}, {"memory", "512Mi"}});
    web["metadata"]["annotations"] = {{"lab.example.com/purpose", "plain pod"}};
    web["spec"]["nodeSelector"] = {{"kubernetes.io/os", "linux"}};
    web["spec"]["containers"][0]["env"] = {{{"name", "LOG_LEVEL"}, {"value", "info"}}};
    web["spec"]["containers"][0]["ports"] = {
        {{"name", "http"}, {"containerPort", 80}, {"protocol", "TCP"}}};
    web["spec"]["affinity"] = json::parse(R"({
      "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10,
        "preference": {"matchExpressions": [{"key": "topology.kubernetes.io/zone",
                                             "operator": "In", "values": ["zone-a"]}]}}]},
      "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50,
        "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": "kubernetes.io/hostname"}}]}})");
    ASSERT_NO_FATAL_FAILURE(CreateAndBind(web));

    // Gated: kube-scheduler holds it (PreEnqueue) without calling anyone.
    json gated = LabPod("gated-1", {{"cpu", "500m"}, {"memory", "512Mi"}});
    gated["spec"]["schedulingGates"] = {{{"name", "example.com/quota"}}};
    auto created = cp().Create("/api/v1/namespaces/" + ns_ + "/pods", gated.dump());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const std::vector<std::string> seen = proxy.filtered_pods();
    ASSERT_EQ(std::count(seen.begin(), seen.end(), "gated-1"), 0);
    auto r = cp().AdminRequest("PATCH", "/api/v1/namespaces/" + ns_ + "/pods/gated-1",
                               R"({"spec":{"schedulingGates":null}})");
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
    ASSERT_EQ(WaitForNodeNames(cp(), ns_, {"gated-1"}, kScheduleTimeout).count("gated-1"), 1u);

    // An init container, then a sidecar (a restartable init container).
    json infer = LabPod("gpu-infer-1", {{"cpu", "1"}, {"memory", "4Gi"}, {"example.com/gpu-mem", "40"}});
    TolerateGpu(infer);
    infer["spec"]["initContainers"] = json::parse(R"([
      {"name": "fetch-model", "image": "registry.k8s.io/pause:3.9",
       "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
      {"name": "metrics", "image": "registry.k8s.io/pause:3.9", "restartPolicy": "Always",
       "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}])");
    ASSERT_NO_FATAL_FAILURE(CreateAndBind(infer));

    // Pod-level resources (PodLevelResources, beta and on since 1.34): the
    // pod's requests are spec.resources, above its container's.
    json agent = LabPod("node-agent-1", {{"cpu", "100m"}, {"memory", "64Mi"}});
    agent["spec"]["tolerations"] = {{{"operator", "Exists"}}};
    agent["spec"]["resources"] = {{"requests", {{"cpu", "200m"}, {"memory", "256Mi"}}},
                                  {"limits", {{"cpu", "400m"}, {"memory", "256Mi"}}}};
    ASSERT_NO_FATAL_FAILURE(CreateAndBind(agent));

    // A pod whose device comes from a ResourceClaim (DRA, resource.k8s.io/v1).
    const json claim = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceClaim"},
        {"metadata", {{"name", "claim-1"}, {"namespace", ns_}}},
        {"spec",
         {{"devices",
           {{"requests", {{{"name", "gpu"}, {"exactly", {{"deviceClassName", kDriver}}}}}}}}}}};
    created = cp().Create("/apis/resource.k8s.io/v1/namespaces/" + ns_ + "/resourceclaims",
                          claim.dump());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    json claimed = LabPod("claim-user-1", {{"cpu", "500m"}, {"memory", "1Gi"}});
    TolerateGpu(claimed);
    claimed["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimName", "claim-1"}}};
    claimed["spec"]["containers"][0]["resources"]["claims"] = {{{"name", "gpu"}}};
    ASSERT_NO_FATAL_FAILURE(CreateAndBind(claimed));

    for (int i = 1; i <= 5; ++i) {
      json low = LabPod("batch-low-" + std::to_string(i),
                        {{"cpu", "1"}, {"memory", "2Gi"}, {"example.com/gpu-mem", "80"}}, "lab-low");
      TolerateGpu(low);
      ASSERT_NO_FATAL_FAILURE(CreateAndBind(low));
    }
    // 440 of 480 gpu-mem used, at most 80 free on a node: 160 fits only by
    // preempting.
    json high = LabPod("train-high", {{"cpu", "2"}, {"memory", "8Gi"}, {"example.com/gpu-mem", "160"}},
                       "lab-high");
    TolerateGpu(high);
    ASSERT_NO_FATAL_FAILURE(CreateAndBind(high));

    EXPECT_GE(proxy.count("preempt"), 1);
    EXPECT_GE(proxy.count("bind"), 11);
    cp().StopScheduler();
    proxy.Stop();
    Note((node_cache ? "nodecache-true: " : "nodecache-false: ") +
         std::to_string(proxy.count("filter")) + " filter, " +
         std::to_string(proxy.count("prioritize")) + " prioritize, " +
         std::to_string(proxy.count("preempt")) + " preempt, " +
         std::to_string(proxy.count("bind")) + " bind");
  }
};

TEST_F(RecordKubeScheduler, NodeCacheFalse) {
  Record("deploy/scheduler/kube-scheduler-config-fullnodes.yaml", false);
}

TEST_F(RecordKubeScheduler, NodeCacheTrue) {
  Record("deploy/scheduler/kube-scheduler-config-nodecache.yaml", true);
}

}  // namespace
}  // namespace schedext::testing::e2e
