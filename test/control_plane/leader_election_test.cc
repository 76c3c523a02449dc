// Leader election against the real kube-apiserver, with real schedext
// processes (SCHEDEXT_BINARY) started with --kubeconfig as schedext's
// ServiceAccount, which has only deploy/'s RBAC: exactly one replica is ready
// and serves; kill -9 of the leader → the other serves within the lease
// duration + 2 s; SIGTERM → the lease is released and the other serves within
// 2 s; a leader cut off from the API server (a relay in between stops
// forwarding) stops serving before its lease can expire.
//
// Also: every kustomize folder of deploy/ is accepted by
// `kubectl apply --dry-run=server` (the CRD-based kinds after installing
// minimal CRDs for them).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "control_plane/control_plane_suite.h"
#include "control_plane/scheduler_e2e.h"

namespace schedext::testing {
namespace {

using e2e::FileTail;
using e2e::HttpGet;
using e2e::MakeTempDir;
using e2e::ReadWholeFile;
using e2e::RemoveTree;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// client-go's defaults, as deploy/base/schedext.yaml, with a 1 s retry.
constexpr int kLeaseSeconds = 15;
constexpr int kRenewSeconds = 10;
constexpr int kRetrySeconds = 1;

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One schedext process, with ports chosen up front so that a test can kill
// it with SIGKILL by PID.
class Replica {
 public:
  Replica(std::string dir, std::string identity) : dir_(std::move(dir)), identity_(identity) {}
  ~Replica() { Kill(); }

  Status Start(const std::string& kubeconfig, const std::string& lease) {
    port_ = FreePort();
    status_port_ = FreePort();
    if (port_ == 0 || status_port_ == 0) return InternalError("no free port");
    const std::string config = dir_ + "/" + identity_ + ".yaml";
    log_ = dir_ + "/" + identity_ + ".log";
    std::ofstream(config) << "server:\n  listen: \"127.0.0.1:" << port_
                          << "\"\n  statusListen: \"127.0.0.1:" << status_port_
                          << "\"\n  shutdownGraceSeconds: 5\n"
                             "log:\n  level: info\n"
                             "cluster:\n  mode: required\n  leaderElection:\n"
                             "    enabled: true\n    leaseNamespace: schedext-system\n"
                          << "    leaseName: " << lease << "\n    identity: " << identity_
                          << "\n    leaseDurationSeconds: " << kLeaseSeconds
                          << "\n    renewDeadlineSeconds: " << kRenewSeconds
                          << "\n    retryPeriodSeconds: " << kRetrySeconds
                          << "\nprofiles:\n  - name: default\n    policies:\n"
                             "      - name: NodeHealth\n";
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) return InternalError("fork failed");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      const char* binary = SCHEDEXT_BINARY;
      ::execl(binary, binary, "--config", config.c_str(), "--kubeconfig", kubeconfig.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return OkStatus();
  }
  void Kill() { Signal(SIGKILL, seconds(5)); }
  // SIGTERM, then SIGKILL after `bound`.
  void Terminate(std::chrono::milliseconds bound = seconds(15)) { Signal(SIGTERM, bound); }

  // GET /readyz on the status port: 200 (ready: leader and synced), 503, or 0.
  std::pair<int, std::string> Readyz() const { return HttpGet(status_port_, "/readyz"); }
  bool Ready() const { return pid_ > 0 && Readyz().first == 200; }
  // POST /filter with a node-names request on the verb port.
  std::pair<int, std::string> Filter() const {
    const std::string body =
        R"({"Pod":{"metadata":{"name":"p","namespace":"default","uid":"u"},"spec":{}},)"
        R"("NodeNames":["n1"]})";
    return HttpPost(port_, "/filter", body);
  }
  const std::string& identity() const { return identity_; }
  const std::string& log() const { return log_; }
  bool alive() const { return pid_ > 0; }

 private:
  void Signal(int sig, std::chrono::milliseconds bound) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    const auto deadline = Clock::now() + bound;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    pid_ = -1;
  }

  static std::pair<int, std::string> HttpPost(int port, std::string_view path,
                                              std::string_view body) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      return {0, ""};
    }
    std::string request = "POST " + std::string(path) +
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Connection: close\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
    (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string reply;
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) reply.append(buf, static_cast<size_t>(n));
    ::close(fd);
    int status = 0;
    if (reply.rfind("HTTP/1.1 ", 0) == 0) status = std::atoi(reply.c_str() + 9);
    const size_t end = reply.find("\r\n\r\n");
    return {status, end == std::string::npos ? "" : reply.substr(end + 4)};
  }

  std::string dir_;
  std::string identity_;
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
  int status_port_ = 0;
};

// A TCP relay on loopback in front of kube-apiserver. Cut() stops forwarding
// in both directions and accepts nothing new, but keeps every socket open: to
// the client the API server has gone silent (a partition, not a refusal).
class Relay {
 public:
  explicit Relay(int target_port) : target_(target_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(listener_, 64);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~Relay() {
    stop_ = true;
    thread_.join();
    for (const Pair& p : pairs_) {
      ::close(p.a);
      ::close(p.b);
    }
    ::close(listener_);
  }
  int port() const { return port_; }
  void Cut() { cut_ = true; }

 private:
  struct Pair {
    int a;  // client side
    int b;  // API server side
  };
  void Run() {
    while (!stop_) {
      std::vector<pollfd> fds;
      fds.push_back({listener_, static_cast<short>(cut_ ? 0 : POLLIN), 0});
      for (const Pair& p : pairs_) {
        const short events = cut_ ? 0 : POLLIN;
        fds.push_back({p.a, events, 0});
        fds.push_back({p.b, events, 0});
      }
      if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
      // Only the pairs polled above have entries in `fds`: accept after them.
      std::vector<Pair> keep;
      for (size_t i = 0; i < pairs_.size(); ++i) {
        const Pair p = pairs_[i];
        bool open = true;
        if (fds[1 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR)) open = Pump(p.a, p.b);
        if (open && (fds[2 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR))) open = Pump(p.b, p.a);
        if (open) {
          keep.push_back(p);
        } else {
          ::close(p.a);
          ::close(p.b);
        }
      }
      pairs_ = std::move(keep);
      if (fds[0].revents & POLLIN) Accept();
    }
  }
  void Accept() {
    const int a = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (a < 0) return;
    const int b = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(target_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(b, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(a);
      ::close(b);
      return;
    }
    pairs_.push_back({a, b});
  }
  // Copies what `from` has to `to`; false when `from` closed.
  static bool Pump(int from, int to) {
    char buf[65536];
    const ssize_t n = ::recv(from, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    ssize_t sent = 0;
    while (sent < n) {
      const ssize_t m = ::send(to, buf + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
      if (m <= 0) return false;
      sent += m;
    }
    return true;
  }

  const int target_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cut_{false};
  std::vector<Pair> pairs_;  // the relay thread's
  std::thread thread_;
};

class LeaderElectionTest : public ControlPlaneSuite {
 protected:
  static void SetUpTestSuite() { StartSharedControlPlane(); }

  void SetUp() override {
    ControlPlaneSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    StatusOr<std::string> dir = MakeTempDir("schedext-le-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = *dir;
    lease_ = "le-" + std::to_string(++leases_);
  }
  void TearDown() override {
    for (const auto& r : replicas_) {
      if (HasFailure()) {
        std::cerr << "---- " << r->identity() << " (tail) ----\n" << FileTail(r->log()) << "\n";
      }
      r->Kill();
    }
    replicas_.clear();
    if (!dir_.empty()) RemoveTree(dir_);
  }

  Replica& Start(const std::string& identity, const std::string& kubeconfig = "") {
    replicas_.push_back(std::make_unique<Replica>(dir_, identity));
    const Status s =
        replicas_.back()->Start(kubeconfig.empty() ? cp().schedext_kubeconfig() : kubeconfig,
                                lease_);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return *replicas_.back();
  }

  // The lease's holder as the API server has it ("" when none or absent).
  std::string Holder() const {
    StatusOr<ApiReply> r = cp().AdminRequest(
        "GET", "/apis/coordination.k8s.io/v1/namespaces/schedext-system/leases/" + lease_);
    if (!r.ok() || r->status != 200) return "";
    const nlohmann::json lease = nlohmann::json::parse(r->body, nullptr, false);
    return lease.is_object() ? lease["spec"].value("holderIdentity", std::string()) : "";
  }
  nlohmann::json LeaseSpec() const {
    StatusOr<ApiReply> r = cp().AdminRequest(
        "GET", "/apis/coordination.k8s.io/v1/namespaces/schedext-system/leases/" + lease_);
    if (!r.ok() || r->status != 200) return nlohmann::json();
    const nlohmann::json lease = nlohmann::json::parse(r->body, nullptr, false);
    return lease.is_object() ? lease["spec"] : nlohmann::json();
  }

  // Both started, one of them leading and ready, the other synced and
  // refusing; returns {leader, follower}.
  std::pair<Replica*, Replica*> StartTwo() {
    Replica& a = Start("replica-a");
    Replica& b = Start("replica-b");
    Replica* leader = nullptr;
    EXPECT_TRUE(WaitFor([&] {
      leader = a.Ready() ? &a : b.Ready() ? &b : nullptr;
      return leader != nullptr;
    }, seconds(60)));
    if (leader == nullptr) return {nullptr, nullptr};
    Replica* follower = leader == &a ? &b : &a;
    // The follower has synced and campaigns: its /readyz names the holder.
    EXPECT_TRUE(WaitFor([&] {
      return follower->Readyz().second.find("is held by " + leader->identity()) !=
             std::string::npos;
    }, seconds(30))) << follower->Readyz().second;
    return {leader, follower};
  }

  std::string dir_;
  std::string lease_;
  static inline int leases_ = 0;
  std::vector<std::unique_ptr<Replica>> replicas_;
};

TEST_F(LeaderElectionTest, ExactlyOneOfTwoIsReadyAndServesTheVerbs) {
  auto [leader, follower] = StartTwo();
  ASSERT_NE(leader, nullptr);
  EXPECT_EQ(Holder(), leader->identity());
  // Over several renewals: never both, never neither.
  for (int i = 0; i < 30; ++i) {
    const bool l = leader->Ready();
    const bool f = follower->Ready();
    ASSERT_TRUE(l && !f) << "sample " << i << ": leader ready " << l << ", follower ready " << f;
    std::this_thread::sleep_for(milliseconds(100));
  }
  const auto [leader_status, leader_body] = leader->Filter();
  EXPECT_EQ(leader_status, 200) << leader_body;
  EXPECT_EQ(leader_body.find("not the leader"), std::string::npos) << leader_body;
  const auto [follower_status, follower_body] = follower->Filter();
  EXPECT_EQ(follower_status, 503);
  EXPECT_NE(follower_body.find("{\"Error\":\"not the leader: lease schedext-system/" + lease_ +
                               " is held by " + leader->identity() + "\""),
            std::string::npos)
      << follower_body;
  const nlohmann::json spec = LeaseSpec();
  EXPECT_EQ(spec.value("leaseDurationSeconds", 0), kLeaseSeconds);
}

TEST_F(LeaderElectionTest, KillNineOfTheLeaderHandsOverWithinTheLeaseDurationPlusTwoSeconds) {
  auto [leader, follower] = StartTwo();
  ASSERT_NE(leader, nullptr);
  const auto killed = Clock::now();
  leader->Kill();
  ASSERT_TRUE(WaitFor([&] { return follower->Ready(); }, seconds(kLeaseSeconds + 2)))
      << "not ready " << SecondsSince(killed) << " s after kill -9: "
      << follower->Readyz().second;
  const double took = SecondsSince(killed);
  std::cout << "[ measured ] kill -9 of the leader -> follower ready after " << took << " s\n";
  // It waited for the lease: the dead leader's last renewal was at most one
  // retry period before the kill.
  EXPECT_GE(took, kLeaseSeconds - kRetrySeconds - 1);
  EXPECT_EQ(Holder(), follower->identity());
  EXPECT_EQ(follower->Filter().first, 200);
  EXPECT_EQ(LeaseSpec().value("leaseTransitions", -1), 1);
}

TEST_F(LeaderElectionTest, SigtermReleasesTheLeaseAndHandsOverWithinTwoSeconds) {
  auto [leader, follower] = StartTwo();
  ASSERT_NE(leader, nullptr);
  const auto stopped = Clock::now();
  std::thread stop([l = leader] { l->Terminate(); });
  const bool ready = WaitFor([&] { return follower->Ready(); }, seconds(2));
  const double took = SecondsSince(stopped);
  stop.join();
  std::cout << "[ measured ] SIGTERM of the leader -> follower ready after " << took << " s\n";
  EXPECT_TRUE(ready) << "not ready within 2 s of SIGTERM: " << follower->Readyz().second;
  EXPECT_TRUE(WaitFor([&] { return follower->Ready(); }, seconds(5)));
  EXPECT_EQ(Holder(), follower->identity());
  EXPECT_NE(FileTail(leader->log()).find("released"), std::string::npos) << FileTail(leader->log());
}

TEST_F(LeaderElectionTest, ALeaderCutOffFromTheApiServerStopsServingBeforeItsLeaseExpires) {
  // a reaches the API server only through the relay; b directly.
  Relay relay(cp().api_server_port());
  const std::string kubeconfig = dir_ + "/through-relay.kubeconfig";
  {
    std::string text = ReadWholeFile(cp().schedext_kubeconfig());
    const std::string from = "127.0.0.1:" + std::to_string(cp().api_server_port());
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, from.size(), "127.0.0.1:" + std::to_string(relay.port()));
    std::ofstream(kubeconfig) << text;
  }
  Replica& a = Start("replica-a", kubeconfig);
  ASSERT_TRUE(WaitFor([&] { return a.Ready(); }, seconds(60))) << a.Readyz().second;
  Replica& b = Start("replica-b");
  ASSERT_TRUE(WaitFor([&] {
    return b.Readyz().second.find("is held by replica-a") != std::string::npos;
  }, seconds(30))) << b.Readyz().second;

  const auto cut = Clock::now();
  relay.Cut();
  double a_stopped = -1;
  double b_started = -1;
  while (SecondsSince(cut) < kLeaseSeconds + 5 && (a_stopped < 0 || b_started < 0)) {
    const bool a_ready = a.Ready();
    const bool b_ready = b.Ready();
    ASSERT_FALSE(a_ready && b_ready) << "two ready leaders " << SecondsSince(cut) << " s after the cut";
    if (a_stopped < 0 && !a_ready) a_stopped = SecondsSince(cut);
    if (b_started < 0 && b_ready) b_started = SecondsSince(cut);
    std::this_thread::sleep_for(milliseconds(50));
  }
  std::cout << "[ measured ] cut off: leader stopped serving after " << a_stopped
            << " s, the other ready after " << b_started << " s\n";
  ASSERT_GE(a_stopped, 0) << "the cut-off leader still serves";
  // Within renewDeadline of its last renewal, which started before the cut.
  EXPECT_LE(a_stopped, kRenewSeconds + 0.5);
  ASSERT_GE(b_started, 0) << "nobody took over";
  EXPECT_GT(b_started, a_stopped);
  EXPECT_LE(b_started, kLeaseSeconds + 2 + 1);
  // The cut-off replica refuses verbs, saying why.
  const auto [status, body] = a.Filter();
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("not the leader: lease schedext-system/" + lease_), std::string::npos)
      << body;
}

// ---- deploy/: every kustomize folder, server-side dry run ----

class DeployDryRunTest : public ControlPlaneSuite {
 protected:
  static void SetUpTestSuite() { StartSharedControlPlane(); }
};

// Minimal CRDs for the kinds of deploy/ that are not built in: enough for the
// API server to accept them (any fields), not their real schemas.
std::string MinimalCrd(const std::string& group, const std::string& kind,
                       const std::string& plural) {
  return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
         "  name: " + plural + "." + group + "\nspec:\n  group: " + group +
         "\n  scope: Namespaced\n  names:\n    kind: " + kind + "\n    plural: " + plural +
         "\n    singular: " + plural.substr(0, plural.size() - 1) +
         "\n  versions:\n    - name: v1\n      served: true\n      storage: true\n"
         "      schema:\n        openAPIV3Schema:\n          type: object\n"
         "          x-kubernetes-preserve-unknown-fields: true\n---\n";
}

TEST_F(DeployDryRunTest, EveryKustomizeFolderIsAcceptedByTheApiServer) {
  const Status crds = cp().Apply(MinimalCrd("cert-manager.io", "Issuer", "issuers") +
                                 MinimalCrd("cert-manager.io", "Certificate", "certificates") +
                                 MinimalCrd("monitoring.coreos.com", "PodMonitor", "podmonitors") +
                                 MinimalCrd("monitoring.coreos.com", "PrometheusRule",
                                            "prometheusrules"));
  ASSERT_TRUE(crds.ok()) << crds.ToString();
  // The new kinds are served a moment after the CRDs are established.
  ASSERT_TRUE(WaitFor([&] {
    StatusOr<ApiReply> r = cp().AdminRequest("GET", "/apis/monitoring.coreos.com/v1");
    StatusOr<ApiReply> c = cp().AdminRequest("GET", "/apis/cert-manager.io/v1");
    return r.ok() && r->status == 200 && c.ok() && c->status == 200;
  }, seconds(30)));
  // No controller-manager here: kube-system has no `default` ServiceAccount,
  // which admission wants for the sidecar's Pod (a real cluster has it).
  const Status kube_system = cp().CreateNamespace("kube-system");
  ASSERT_TRUE(kube_system.ok()) << kube_system.ToString();
  for (const char* folder : {"base", "gpushare", "hami", "tls", "monitoring", "sidecar"}) {
    SCOPED_TRACE(folder);
    const std::string dir = std::string(SCHEDEXT_SOURCE_DIR) + "/deploy/" + folder;
    StatusOr<CommandResult> rendered = cp().Kubectl({"kustomize", dir});
    ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
    ASSERT_EQ(rendered->exit_code, 0) << rendered->output;
    StatusOr<CommandResult> applied =
        cp().Kubectl({"apply", "--dry-run=server", "-f", "-"}, rendered->output);
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
    EXPECT_EQ(applied->exit_code, 0) << applied->output;
    EXPECT_NE(applied->output.find("(server dry run)"), std::string::npos) << applied->output;
  }
}

}  // namespace
}  // namespace schedext::testing
