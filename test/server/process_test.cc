// The schedext binary as a process: flags, exit codes, --check-config messages,
// serving on a real socket, the debug request log, and the SIGTERM/SIGINT drain.
//
// Every child is spawned with its stdout and stderr on pipes; every wait is
// bounded, and a child still running when a test ends is killed.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/fake_api_server.h"
#include "testing/loopback.h"

extern char** environ;

namespace schedext {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::BuildRequest;
using testing::Exchange;
using testing::HttpReply;
using testing::RawConnection;
using testing::ReadFileToString;

constexpr milliseconds kExitTimeout{10000};
constexpr milliseconds kStartTimeout{20000};

// A running schedext process with its stdout and stderr captured.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      Wait(kExitTimeout);
    }
    CloseFd(out_fd_);
    CloseFd(err_fd_);
  }

  // Spawns SCHEDEXT_BINARY with `args`; false (see error) when it cannot.
  bool Start(const std::vector<std::string>& args) {
    int out_pipe[2];
    int err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Fail("pipe");
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
      ::close(out_pipe[0]);
      ::close(out_pipe[1]);
      return Fail("pipe");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<std::string> argv_storage;
    argv_storage.push_back(SCHEDEXT_BINARY);
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    // Hermetic: whatever cluster the test machine can reach is not the child's
    // business (cluster.mode auto would connect to it).
    std::vector<char*> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view var(*e);
      if (var.rfind("KUBECONFIG=", 0) != 0 && var.rfind("KUBERNETES_SERVICE_", 0) != 0) {
        env.push_back(*e);
      }
    }
    env.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, SCHEDEXT_BINARY, &actions, &attr, argv.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    if (rc != 0) {
      pid_ = -1;
      error_ = std::string("posix_spawn " SCHEDEXT_BINARY ": ") + std::strerror(rc);
      return false;
    }
    return true;
  }

  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  const std::string& error() const { return error_; }

  void Signal(int sig) {
    if (pid_ > 0 && !exited_) ::kill(pid_, sig);
  }

  // Waits for the child to exit, collecting its output. The exit code, or
  // 128 + signal when a signal ended it; nullopt on timeout.
  std::optional<int> Wait(milliseconds timeout) {
    if (pid_ <= 0) return std::nullopt;
    const auto deadline = steady_clock::now() + timeout;
    while (!exited_) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (r < 0 && errno != EINTR) {
        error_ = std::string("waitpid: ") + std::strerror(errno);
        return std::nullopt;
      }
      if (steady_clock::now() >= deadline) return std::nullopt;
      Pump(20);
    }
    // The pipes reach EOF once the child is gone; drain them (bounded).
    for (int i = 0; i < 100 && (out_fd_ >= 0 || err_fd_ >= 0); ++i) {
      Pump(50);
    }
    return code_;
  }

  // Reads stderr until `pattern` matches somewhere in it (from `from` on).
  // The match, or nullopt when the child exits or the time runs out first.
  std::optional<std::smatch> WaitForStderr(const std::regex& pattern, milliseconds timeout,
                                           size_t from = 0) {
    const auto deadline = steady_clock::now() + timeout;
    for (;;) {
      std::smatch m;
      if (from <= err_.size() &&
          std::regex_search(err_.cbegin() + static_cast<std::ptrdiff_t>(from), err_.cend(), m,
                            pattern)) {
        return m;
      }
      if (steady_clock::now() >= deadline || err_fd_ < 0) return std::nullopt;
      Pump(50);
    }
  }

  // Runs `args` to completion.
  static std::optional<int> Run(const std::vector<std::string>& args, Child& child) {
    if (!child.Start(args)) return std::nullopt;
    return child.Wait(kExitTimeout);
  }

 private:
  static void CloseFd(int& fd) {
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
  }
  bool Fail(const char* what) {
    error_ = std::string(what) + ": " + std::strerror(errno);
    return false;
  }

  // One poll of the open pipes, up to `timeout_ms`; appends what is readable.
  void Pump(int timeout_ms) {
    pollfd fds[2];
    int* owners[2];
    nfds_t n = 0;
    if (out_fd_ >= 0) {
      fds[n] = {out_fd_, POLLIN, 0};
      owners[n++] = &out_fd_;
    }
    if (err_fd_ >= 0) {
      fds[n] = {err_fd_, POLLIN, 0};
      owners[n++] = &err_fd_;
    }
    if (::poll(fds, n, timeout_ms) <= 0) return;
    for (nfds_t i = 0; i < n; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[8192];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        (owners[i] == &out_fd_ ? out_ : err_).append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        CloseFd(*owners[i]);
      }
    }
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool exited_ = false;
  int code_ = -1;
  std::string out_;
  std::string err_;
  std::string error_;
};

// A file under the test temp directory, removed when the object goes away.
class TempFile {
 public:
  explicit TempFile(std::string_view content) {
    static std::atomic<int> counter{0};
    path_ = ::testing::TempDir() + "schedext_process_test_" + std::to_string(::getpid()) + "_" +
            std::to_string(counter.fetch_add(1)) + ".yaml";
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Fixture(std::string_view name) {
  return ReadFileToString(std::string(SCHEDEXT_TESTDATA_DIR) +
                          "/kube-scheduler-1.26/nodecache-false/" + std::string(name) + ".json");
}

// Checks a reply to filter-3 under the default profile: all five nodes pass.
void ExpectFilter3Passes(const HttpReply& reply) {
  ASSERT_EQ(reply.status, 200) << reply.reason << " " << reply.body;
  const json body = json::parse(reply.body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << reply.body;
  ASSERT_TRUE(body.contains("Nodes")) << reply.body;
  std::vector<std::string> names;
  for (const json& item : body["Nodes"]["items"]) {
    names.push_back(item["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"lab-cp-1", "lab-cpu-2", "lab-cpu-1", "lab-gpu-2",
                                             "lab-gpu-1"}));
  EXPECT_TRUE(body["NodeNames"].is_null());
  EXPECT_EQ(body.value("Error", std::string("<missing>")), "");
}

// Starts a server on a free loopback port with debug logging; the port, or 0.
int StartServer(Child& child, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--log-level", "debug"};
  args.insert(args.end(), extra.begin(), extra.end());
  if (!child.Start(args)) {
    ADD_FAILURE() << child.error();
    return 0;
  }
  const auto m = child.WaitForStderr(std::regex(R"(listening on 127\.0\.0\.1:([0-9]+))"),
                                     kStartTimeout);
  if (!m) {
    ADD_FAILURE() << "no listening line; stderr:\n" << child.err();
    return 0;
  }
  return std::stoi((*m)[1].str());
}

// Whether a connection to 127.0.0.1:port is refused.
bool ConnectionRefused(int port) {
  RawConnection c;
  if (c.Connect(port)) return false;
  return c.error().find("refused") != std::string::npos;
}

TEST(ProcessTest, VersionFlagPrintsTheVersion) {
  Child child;
  EXPECT_EQ(Child::Run({"--version"}, child), 0) << child.error() << child.err();
  EXPECT_EQ(child.out(), "schedext 0.1.0\n");
  EXPECT_EQ(child.err(), "");
}

TEST(ProcessTest, HelpFlagPrintsUsage) {
  for (const char* flag : {"--help", "-h"}) {
    SCOPED_TRACE(flag);
    Child child;
    EXPECT_EQ(Child::Run({flag}, child), 0) << child.error() << child.err();
    EXPECT_NE(child.out().find("Usage: schedext [flags]"), std::string::npos) << child.out();
    for (const char* documented : {"--config", "--listen", "--log-level", "--check-config",
                                   "--print-default-config", "--version", "--help"}) {
      EXPECT_NE(child.out().find(documented), std::string::npos) << documented;
    }
  }
}

TEST(ProcessTest, BadFlagsExitTwoWithAMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--bogus"}, "schedext: unknown flag --bogus"},
      {{"--listen"}, "schedext: --listen needs a value"},
      {{"--version=yes"}, "schedext: --version takes no value"},
      {{"serve"}, "schedext: unknown flag serve"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args.front());
    Child child;
    EXPECT_EQ(Child::Run(c.args, child), 2) << child.error();
    EXPECT_NE(child.err().find(c.message), std::string::npos) << child.err();
    // The usage follows, on stderr; nothing on stdout.
    EXPECT_NE(child.err().find("Usage: schedext"), std::string::npos) << child.err();
    EXPECT_EQ(child.out(), "");
  }
}

TEST(ProcessTest, CheckConfigAcceptsAValidFile) {
  TempFile file(R"(server:
  listen: "127.0.0.1:9999"
log:
  level: warn
defaultProfile: labels
profiles:
  - name: default
    policies:
      - name: NodeHealth
      - name: TaintToleration
        weight: 2
  - name: labels
    policies:
      - name: NodeLabel
        args:
          preferred:
            - weight: 1
              matchLabels:
                topology.kubernetes.io/zone: zone-a
      - name: NodeNumeric
        args:
          key: example.com/cost
          prefer: lower
)");
  Child child;
  EXPECT_EQ(Child::Run({"--check-config", file.path()}, child), 0) << child.err();
  EXPECT_EQ(child.out(), file.path() + ": ok (2 profile(s))\n");
  EXPECT_EQ(child.err(), "");
}

TEST(ProcessTest, CheckConfigRejectsBadFilesNamingTheField) {
  struct Case {
    std::string name;
    std::string yaml;
    std::vector<std::string> want;  // substrings of stderr
  };
  const std::vector<Case> cases = {
      {"unknown policy",
       "profiles:\n  - name: default\n    policies:\n      - name: NodeHealth\n"
       "      - name: NodeLable\n",
       {"profiles[0].policies[1]", "NodeLable"}},
      {"unknown field",
       "profiles:\n  - name: default\n    policies:\n      - name: NodeHealth\n"
       "        wieght: 2\n",
       {"profiles[0].policies[0]", "wieght"}},
      {"ill-typed arg",
       "profiles:\n  - name: default\n    policies:\n      - name: NodeNumeric\n"
       "        args:\n          key: example.com/cost\n          prefer: 5\n",
       {"profiles[0].policies[0]", "prefer"}},
      {"bad weight",
       "profiles:\n  - name: default\n    policies:\n      - name: NodeHealth\n"
       "        weight: -1\n",
       {"profiles[0].policies[0].weight"}},
      {"not yaml", "profiles: [\n", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempFile file(c.yaml);
    Child child;
    EXPECT_EQ(Child::Run({"--check-config", file.path()}, child), 1) << child.error();
    EXPECT_FALSE(child.err().empty());
    for (const std::string& want : c.want) {
      EXPECT_NE(child.err().find(want), std::string::npos) << want << " in:\n" << child.err();
    }
    EXPECT_EQ(child.out().find(": ok"), std::string::npos) << child.out();
  }
  Child missing;
  EXPECT_EQ(Child::Run({"--check-config", ::testing::TempDir() + "no/such/file.yaml"}, missing), 1);
  EXPECT_NE(missing.err().find("no/such/file.yaml"), std::string::npos) << missing.err();
}

TEST(ProcessTest, PrintedDefaultConfigPassesCheckConfig) {
  Child print;
  ASSERT_EQ(Child::Run({"--print-default-config"}, print), 0) << print.err();
  ASSERT_NE(print.out().find("profiles:"), std::string::npos) << print.out();
  TempFile file(print.out());
  Child check;
  EXPECT_EQ(Child::Run({"--check-config", file.path()}, check), 0) << check.err();
  EXPECT_NE(check.out().find(": ok"), std::string::npos) << check.out();
}

TEST(ProcessTest, ServesFilterAndLogsEachRequestAtDebug) {
  Child child;
  const int port = StartServer(child);
  ASSERT_GT(port, 0);
  const std::string filter3 = Fixture("filter-3");
  ASSERT_FALSE(filter3.empty());
  const size_t log_from = child.err().size();
  ExpectFilter3Passes(Exchange(port, BuildRequest("POST", "/filter", filter3)));
  const auto line = child.WaitForStderr(
      std::regex(R"(debug filter profile=default pod=default/node-agent-1 nodes=5 out=5 )"
                 R"(status=200 duration_us=[0-9]+)"),
      kStartTimeout, log_from);
  EXPECT_TRUE(line.has_value()) << child.err();
  EXPECT_EQ(Exchange(port, BuildRequest("GET", "/healthz", "")).status, 200);

  child.Signal(SIGTERM);
  EXPECT_EQ(child.Wait(kExitTimeout), 0) << child.err();
}

TEST(ProcessTest, SigtermDrainsTheInFlightRequestThenExitsZero) {
  Child child;
  const int port = StartServer(child);
  ASSERT_GT(port, 0);
  const std::string filter3 = Fixture("filter-3");
  ASSERT_FALSE(filter3.empty());

  RawConnection c;
  ASSERT_TRUE(c.Connect(port)) << c.error();
  // `Expect: 100-continue` makes the server say when it has read the headers,
  // so the SIGTERM provably lands while this request is in flight.
  const std::string request = BuildRequest("POST", "/filter", filter3,
                                           {{"Expect", "100-continue"}});
  const size_t head = request.find("\r\n\r\n") + 4;
  const size_t half = head + filter3.size() / 2;
  ASSERT_TRUE(c.Send(std::string_view(request).substr(0, head))) << c.error();
  HttpReply interim;
  ASSERT_TRUE(c.ReadReply(interim)) << c.error();
  ASSERT_EQ(interim.status, 100);
  ASSERT_TRUE(c.Send(std::string_view(request).substr(head, half - head))) << c.error();

  const size_t log_from = child.err().size();
  child.Signal(SIGTERM);
  ASSERT_TRUE(child.WaitForStderr(std::regex("received SIGTERM: draining"), kExitTimeout, log_from))
      << child.err();
  // The listener closes while the request is still open (bounded retries).
  bool refused = false;
  for (int i = 0; i < 200 && !refused; ++i) {
    refused = ConnectionRefused(port);
    if (!refused) ::poll(nullptr, 0, 10);
  }
  EXPECT_TRUE(refused) << "the listener stayed open after SIGTERM";

  ASSERT_TRUE(c.Send(std::string_view(request).substr(half))) << c.error();
  HttpReply reply;
  ASSERT_TRUE(c.ReadReply(reply)) << c.error() << "\n" << child.err();
  ExpectFilter3Passes(reply);

  EXPECT_EQ(child.Wait(kExitTimeout), 0) << child.err();
  EXPECT_NE(child.err().find("stopped"), std::string::npos) << child.err();
  EXPECT_TRUE(ConnectionRefused(port));
}

TEST(ProcessTest, SigintExitsZero) {
  Child child;
  const int port = StartServer(child);
  ASSERT_GT(port, 0);
  EXPECT_EQ(Exchange(port, BuildRequest("GET", "/healthz", "")).status, 200);
  child.Signal(SIGINT);
  EXPECT_EQ(child.Wait(kExitTimeout), 0) << child.err();
  EXPECT_NE(child.err().find("received SIGINT"), std::string::npos) << child.err();
  EXPECT_TRUE(ConnectionRefused(port));
}

// A signal that arrives as soon as the server says it is listening (before or
// while the accept loop starts) still stops it promptly and cleanly.
TEST(ProcessTest, SignalRightAfterStartupExitsZero) {
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE(round);
    Child child;
    const int port = StartServer(child);
    ASSERT_GT(port, 0);
    child.Signal(SIGTERM);
    EXPECT_EQ(child.Wait(kExitTimeout), 0) << child.err();
  }
}

// kube-scheduler keeps idle keep-alive connections to the extender; the drain
// closes them, so they do not hold the process past SIGTERM: it exits 0 well
// within kExitTimeout (10 s), below shutdownGraceSeconds (25 s) after which it
// would exit 1.
TEST(ProcessTest, IdleKeepAliveConnectionDoesNotDelayShutdown) {
  Child child;
  const int port = StartServer(child);
  ASSERT_GT(port, 0);
  RawConnection idle;
  ASSERT_TRUE(idle.Connect(port)) << idle.error();
  ASSERT_TRUE(idle.Send(BuildRequest("POST", "/filter", Fixture("filter-3")))) << idle.error();
  HttpReply reply;
  ASSERT_TRUE(idle.ReadReply(reply)) << idle.error();
  ExpectFilter3Passes(reply);
  ASSERT_NE(reply.Header("Connection"), "close");

  child.Signal(SIGTERM);
  EXPECT_EQ(child.Wait(kExitTimeout), 0) << child.err();
  // The idle connection was closed by the server.
  EXPECT_TRUE(idle.PeerClosedWithin(1000));
}

std::string KubeconfigFor(const testing::FakeApiServer& api) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
         "clusters:\n- name: fake\n  cluster:\n    server: " + api.url() +
         "\n    certificate-authority: " + api.ca_file() +
         "\ncontexts:\n- name: fake\n  context: {cluster: fake, user: fake}\n"
         "users:\n- name: fake\n  user:\n    token: " + api.token() + "\n";
}

// GET /readyz until it answers 200 (bounded: 500 tries 10 ms apart); the last status.
int WaitReady(int port) {
  int ready = 0;
  for (int i = 0; i < 500 && ready != 200; ++i) {
    ready = Exchange(port, BuildRequest("GET", "/readyz", "")).status;
    if (ready != 200) ::poll(nullptr, 0, 10);
  }
  return ready;
}

TEST(ProcessTest, ConnectsToTheClusterFromAKubeconfig) {
  testing::FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  const json recorded = json::parse(Fixture("filter-3"));
  for (const json& node : recorded["Nodes"]["items"]) {
    ASSERT_FALSE(api.AddNode(node.dump()).empty());
  }
  TempFile kubeconfig(KubeconfigFor(api));
  Child child;
  const int port = StartServer(child, {"--kubeconfig", kubeconfig.path()});
  ASSERT_GT(port, 0);
  // Ready once both informers have synced (bounded retries).
  ASSERT_EQ(WaitReady(port), 200) << child.err();
  // A node-cache request is answered from the watched nodes.
  const std::string names = ReadFileToString(std::string(SCHEDEXT_TESTDATA_DIR) +
                                             "/kube-scheduler-1.26/nodecache-true/filter-3.json");
  const HttpReply reply = Exchange(port, BuildRequest("POST", "/filter", names));
  ASSERT_EQ(reply.status, 200) << reply.body;
  const json body = json::parse(reply.body);
  EXPECT_EQ(body["NodeNames"].size(), 5u) << reply.body;
  EXPECT_EQ(body["Error"], "");
  child.Signal(SIGTERM);
  EXPECT_EQ(child.Wait(kExitTimeout), 0) << child.err();
}

TEST(ProcessTest, RequiredClusterWithoutAConnectionRefusesToStart) {
  TempFile config("cluster:\n  mode: required\nprofiles:\n  - name: default\n    policies:\n"
                  "      - name: NodeHealth\n");
  Child child;
  EXPECT_EQ(Child::Run({"--config", config.path()}, child), 1) << child.err();
  EXPECT_NE(child.err().find("cluster"), std::string::npos) << child.err();
  TempFile broken("not: [a kubeconfig");
  Child second;
  EXPECT_EQ(Child::Run({"--kubeconfig", broken.path()}, second), 1) << second.err();
  EXPECT_NE(second.err().find("kubeconfig"), std::string::npos) << second.err();
}

// A kubeconfig for `api` (token auth, the fake's CA).
constexpr std::string_view kGpuShareConfig =
    "profiles:\n  - name: gpushare\n    policies:\n      - name: GpuShare\n"
    "      - name: NodeResourcesFit\n";

TEST(ProcessTest, GpuShareWithoutAClusterRefusesToStart) {
  TempFile config(kGpuShareConfig);
  Child child;
  EXPECT_EQ(Child::Run({"--config", config.path()}, child), 1) << child.err();
  EXPECT_NE(child.err().find("the GpuShare policy needs the Kubernetes API"), std::string::npos)
      << child.err();
}

TEST(ProcessTest, GpuShareWatchesConfigMapsAndServesInspect) {
  testing::FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  json node = json::parse(testing::FixtureNode("gpu-1"));
  for (const char* field : {"capacity", "allocatable"}) {
    node["status"][field]["aliyun.com/gpu-mem"] = "32";
    node["status"][field]["aliyun.com/gpu-count"] = "2";
  }
  ASSERT_FALSE(api.AddNode(node.dump()).empty());
  TempFile kubeconfig(KubeconfigFor(api));
  TempFile config(kGpuShareConfig);
  Child child;
  const int port =
      StartServer(child, {"--config", config.path(), "--kubeconfig", kubeconfig.path()});
  ASSERT_GT(port, 0);
  // Ready only once the ConfigMap informer has listed kube-system too.
  ASSERT_EQ(WaitReady(port), 200) << child.err();
  EXPECT_TRUE(api.WaitForWatches(testing::FakeResource::kConfigMaps, 1, milliseconds(5000)));
  bool namespaced = false;
  for (const testing::RecordedRequest& r : api.requests()) {
    namespaced = namespaced ||
                 r.target.rfind("/api/v1/namespaces/kube-system/configmaps?", 0) == 0;
  }
  EXPECT_TRUE(namespaced) << "the ConfigMap informer watches kube-system only";

  HttpReply reply = Exchange(port, BuildRequest("GET", "/gpushare/inspect/gpu-1", ""));
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(json::parse(reply.body)["devices"].size(), 2u) << reply.body;
  reply = Exchange(port, BuildRequest("GET", "/metrics", ""));
  ASSERT_EQ(reply.status, 200);
  EXPECT_NE(reply.body.find("schedext_gpushare_memory{state=\"total\"} 32\n"), std::string::npos)
      << reply.body;

  // The device plugin's unhealthy ConfigMap reaches the inspect reply.
  ASSERT_FALSE(api.Apply(testing::FakeResource::kConfigMaps,
                         testing::FixtureConfigMap("kube-system", "unhealthy-gpu-gpu-1",
                                                   {{"gpus", "1"}}))
                   .empty());
  bool unhealthy = false;
  for (int i = 0; i < 500 && !unhealthy; ++i) {
    reply = Exchange(port, BuildRequest("GET", "/gpushare/inspect/gpu-1", ""));
    unhealthy = reply.status == 200 && json::parse(reply.body)["devices"][1]["healthy"] == false;
    if (!unhealthy) ::poll(nullptr, 0, 10);
  }
  EXPECT_TRUE(unhealthy) << reply.body;
  reply = Exchange(port, BuildRequest("GET", "/metrics", ""));
  EXPECT_NE(reply.body.find("schedext_gpushare_devices{health=\"unhealthy\"} 1\n"),
            std::string::npos)
      << reply.body;
  child.Signal(SIGTERM);
  EXPECT_EQ(child.Wait(kExitTimeout), 0) << child.err();
}

}  // namespace
}  // namespace schedext
