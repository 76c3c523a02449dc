#include "testing/control_plane.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include "testing/child_process.h"
#include "testing/pki.h"

#ifndef SCHEDEXT_SOURCE_DIR
#define SCHEDEXT_SOURCE_DIR "."
#endif
#ifndef SCHEDEXT_K8S_BIN_DIR
#define SCHEDEXT_K8S_BIN_DIR ""
#endif

namespace schedext::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using json = nlohmann::json;

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

bool IsExecutable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0 && !std::filesystem::is_directory(path);
}

// The first executable `name` in $PATH, or "".
std::string FindOnPath(const std::string& name) {
  std::stringstream path(Getenv("PATH"));
  std::string dir;
  while (std::getline(path, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (IsExecutable(candidate)) return candidate;
  }
  return std::string();
}

std::string RandomToken() {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 32; ++i) token += kHex[rd() % 16];
  return token;
}

// A port the kernel just handed out on 127.0.0.1; free again when returned
// (another process could take it meanwhile: starts retry with new ports).
StatusOr<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return InternalError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(fd);
    return InternalError(std::string("bind 127.0.0.1:0: ") + std::strerror(err));
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return InternalError("cannot write \"" + path + "\"");
  return OkStatus();
}

// The last `lines` lines of a log file, for error messages.
std::string LogTail(const std::string& path, size_t lines = 25) {
  const std::string text = ReadFile(path);
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos > 0; ++n) {
    const size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
  }
  return "--- last lines of " + path + " ---\n" + text.substr(pos);
}

// Starts `args` with its output appended to `log_path`.
StatusOr<pid_t> SpawnLogged(const std::vector<std::string>& args, const std::string& log_path) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return InternalError("open \"" + log_path + "\": " + std::strerror(errno));
  {
    // Which command line produced this log, for whoever reads it.
    std::string header = "+";
    for (const std::string& a : args) header += " " + a;
    header += "\n";
    [[maybe_unused]] ssize_t n = ::write(fd, header.data(), header.size());
  }
  StatusOr<pid_t> pid = SpawnProcess(args, -1, fd);
  ::close(fd);
  return pid;
}

// True while `pid` (our child) has not exited; reaps it when it has.
bool ChildRunning(pid_t pid) {
  if (pid <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  return r == 0;
}

// Waits up to `timeout` for `pid` to exit and reaps it. True when it did.
bool WaitExit(pid_t pid, milliseconds timeout, int* status_out = nullptr) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {
      if (status_out != nullptr) *status_out = status;
      return true;
    }
    if (steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

// SIGTERM, then SIGKILL after `grace`; always reaps. Sets pid to -1.
void StopChild(pid_t& pid, milliseconds grace) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  if (!WaitExit(pid, grace)) {
    ::kill(pid, SIGKILL);
    WaitExit(pid, std::chrono::seconds(10));
  }
  pid = -1;
}

void KillChild(pid_t& pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  WaitExit(pid, std::chrono::seconds(10));
  pid = -1;
}

std::string Kubeconfig(const std::string& server, const std::string& ca_file,
                       const std::string& user_yaml) {
  return "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: " +
         server + "\n    certificate-authority: " + ca_file + "\nusers:\n- name: user\n  user:\n" +
         user_yaml +
         "contexts:\n- name: test\n  context:\n    cluster: test\n    user: user\n"
         "current-context: test\n";
}

std::string ResolveSourcePath(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return std::string(SCHEDEXT_SOURCE_DIR) + "/" + path;
}

}  // namespace

bool ControlPlaneRequired() { return Getenv("CI") == "true"; }

StatusOr<ControlPlaneBinaries> FindControlPlaneBinaries() {
  ControlPlaneBinaries b;
  std::string missing;
  const std::string assets = Getenv("KUBEBUILDER_ASSETS");
  if (!assets.empty()) {
    b.source = "KUBEBUILDER_ASSETS=" + assets;
    b.kube_apiserver = assets + "/kube-apiserver";
    b.etcd = assets + "/etcd";
    b.kubectl = assets + "/kubectl";
    if (IsExecutable(assets + "/kube-scheduler")) b.kube_scheduler = assets + "/kube-scheduler";
  } else {
    std::string dir = Getenv("SCHEDEXT_K8S_BIN_DIR");
    if (dir.empty()) dir = SCHEDEXT_K8S_BIN_DIR;
    b.source = "kube-apiserver and kube-scheduler from " + (dir.empty() ? "(no folder)" : dir) +
               ", etcd and kubectl from the system";
    if (!dir.empty()) {
      b.kube_apiserver = dir + "/kube-apiserver";
      if (IsExecutable(dir + "/kube-scheduler")) b.kube_scheduler = dir + "/kube-scheduler";
    }
    b.etcd = IsExecutable("/usr/bin/etcd") ? "/usr/bin/etcd" : FindOnPath("etcd");
    b.kubectl = FindOnPath("kubectl");
  }
  if (const std::string s = Getenv("SCHEDEXT_KUBE_SCHEDULER"); !s.empty()) b.kube_scheduler = s;
  if (!IsExecutable(b.kube_apiserver)) missing += " kube-apiserver";
  if (!IsExecutable(b.etcd)) missing += " etcd";
  if (!IsExecutable(b.kubectl)) missing += " kubectl";
  if (!missing.empty()) {
    return NotFoundError(
        "control-plane binaries not found (" + b.source + "): missing" + missing +
        ". Get them with: `apt-get install etcd-server kubernetes-client` (etcd, kubectl) and "
        "`../shared/k8s/install <build>/k8s-bin` (the build runs it at configure time when "
        "../shared/k8s exists), or set KUBEBUILDER_ASSETS to a folder with kube-apiserver, "
        "etcd and kubectl (envtest's `setup-envtest use 1.26.x`); `scripts/dev k8s [MINOR]` "
        "prints (and builds when missing) the folder of one minor of tools/k8s/versions.");
  }
  // ctest runs every suite once per minor under that minor's name: a binary of
  // another minor (KUBEBUILDER_ASSETS set, a stale folder) must not pass as it.
  if (const std::string want = Getenv("SCHEDEXT_K8S_VERSION"); !want.empty()) {
    for (const std::string* binary : {&b.kube_apiserver, &b.kube_scheduler}) {
      if (binary->empty()) continue;
      SCHEDEXT_ASSIGN_OR_RETURN(std::string version, BinaryVersion(*binary));
      if (version.rfind("Kubernetes v" + want + ".", 0) != 0) {
        return NotFoundError("SCHEDEXT_K8S_VERSION=" + want + " but " + *binary + " is \"" +
                             version + "\" (" + b.source + "); `scripts/dev k8s " + want +
                             "` prints the folder of " + want);
      }
    }
  }
  return b;
}

StatusOr<std::string> BinaryVersion(const std::string& binary) {
  SCHEDEXT_ASSIGN_OR_RETURN(CommandResult r,
                            RunCommand({binary, "--version"}, {}, std::chrono::seconds(30)));
  if (r.exit_code != 0) {
    return InternalError(binary + " --version exited " + std::to_string(r.exit_code) + ": " +
                         r.output);
  }
  std::string line = r.output.substr(0, r.output.find('\n'));
  return line;
}

int KubernetesMinor(std::string_view version_line) {
  constexpr std::string_view kPrefix = "Kubernetes v1.";
  if (version_line.substr(0, kPrefix.size()) != kPrefix) return -1;
  int minor = 0;
  size_t i = kPrefix.size();
  // Two digits at most: no minor above 99 is coming, and the bound keeps the
  // int from overflowing on a malformed line.
  for (; i < version_line.size() && i < kPrefix.size() + 2 &&
         version_line[i] >= '0' && version_line[i] <= '9';
       ++i) {
    minor = minor * 10 + (version_line[i] - '0');
  }
  if (i == kPrefix.size() || i >= version_line.size() || version_line[i] != '.') return -1;
  return minor;
}

StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   std::string_view stdin_text, milliseconds timeout) {
  if (argv.empty()) return InvalidArgumentError("RunCommand: empty argv");
  int stdin_fd = -1;
  if (!stdin_text.empty()) {
    stdin_fd = ::memfd_create("stdin", MFD_CLOEXEC);
    if (stdin_fd < 0) return InternalError(std::string("memfd_create: ") + std::strerror(errno));
    size_t done = 0;
    while (done < stdin_text.size()) {
      const ssize_t n = ::write(stdin_fd, stdin_text.data() + done, stdin_text.size() - done);
      if (n <= 0) {
        ::close(stdin_fd);
        return InternalError("writing the command's stdin failed");
      }
      done += static_cast<size_t>(n);
    }
    ::lseek(stdin_fd, 0, SEEK_SET);
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    if (stdin_fd >= 0) ::close(stdin_fd);
    return InternalError(std::string("pipe2: ") + std::strerror(errno));
  }
  StatusOr<pid_t> pid = SpawnProcess(argv, stdin_fd, pipe_fds[1]);
  ::close(pipe_fds[1]);
  if (stdin_fd >= 0) ::close(stdin_fd);
  if (!pid.ok()) {
    ::close(pipe_fds[0]);
    return pid.status();
  }
  CommandResult result;
  const auto deadline = steady_clock::now() + timeout;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{pipe_fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      timed_out = r == 0;
      break;
    }
    char buf[8192];
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child (and whatever it spawned) closed stdout
    result.output.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  pid_t child = *pid;
  if (timed_out) {
    ::kill(child, SIGKILL);
    result.output += "\n[killed after " + std::to_string(timeout.count()) + " ms]\n";
  }
  int status = 0;
  if (!WaitExit(child, std::chrono::seconds(10), &status)) {
    ::kill(child, SIGKILL);
    WaitExit(child, std::chrono::seconds(10), &status);
  }
  result.exit_code = !timed_out && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// ---------------------------------------------------------------------------

ControlPlane::ControlPlane(ControlPlaneBinaries binaries, ControlPlaneOptions options)
    : binaries_(std::move(binaries)), options_(std::move(options)) {}

ControlPlane::~ControlPlane() { Stop(); }

std::string ControlPlane::url() const { return "https://127.0.0.1:" + std::to_string(api_port_); }
std::string ControlPlane::etcd_url() const {
  return "http://127.0.0.1:" + std::to_string(etcd_port_);
}
std::string ControlPlane::ca_file() const { return dir_ + "/ca.crt"; }
std::string ControlPlane::admin_kubeconfig() const { return dir_ + "/admin.kubeconfig"; }
std::string ControlPlane::admin_cert_kubeconfig() const { return dir_ + "/admin-cert.kubeconfig"; }
std::string ControlPlane::scheduler_kubeconfig() const { return dir_ + "/scheduler.kubeconfig"; }
std::string ControlPlane::schedext_kubeconfig() const { return dir_ + "/schedext.kubeconfig"; }
std::string ControlPlane::schedext_user() const {
  return "system:serviceaccount:" + options_.schedext_namespace + ":" +
         options_.schedext_service_account;
}
std::string ControlPlane::api_server_log() const { return dir_ + "/kube-apiserver.log"; }
std::string ControlPlane::etcd_log() const { return dir_ + "/etcd.log"; }
bool ControlPlane::api_server_running() const { return ChildRunning(api_pid_); }

Status ControlPlane::Start() {
  if (started_) return FailedPreconditionError("ControlPlane::Start called twice");
  started_ = true;
  std::string base = Getenv("TMPDIR");
  if (base.empty()) base = "/tmp";
  std::string tmpl = base + "/schedext-control-plane-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return InternalError("mkdtemp \"" + tmpl + "\": " + std::strerror(errno));
  }
  dir_ = tmpl;

  SCHEDEXT_ASSIGN_OR_RETURN(api_server_version_, BinaryVersion(binaries_.kube_apiserver));
  if (!binaries_.kube_scheduler.empty()) {
    SCHEDEXT_ASSIGN_OR_RETURN(scheduler_version_, BinaryVersion(binaries_.kube_scheduler));
  }
  std::cerr << "[control plane] binaries: " << binaries_.source << "\n"
            << "[control plane] kube-apiserver " << binaries_.kube_apiserver << ": "
            << api_server_version_ << "\n"
            << "[control plane] kube-scheduler "
            << (binaries_.kube_scheduler.empty()
                    ? std::string("(not found)")
                    : binaries_.kube_scheduler + ": " + scheduler_version_)
            << "\n"
            << "[control plane] etcd " << binaries_.etcd << ", kubectl " << binaries_.kubectl
            << ", directory " << dir_ << "\n";

  SCHEDEXT_RETURN_IF_ERROR(WriteFiles());
  SCHEDEXT_RETURN_IF_ERROR(StartEtcd());
  // The kube-apiserver port is chosen once (restarts reuse it); a start that
  // loses a race for it is retried with another.
  Status api;
  for (int attempt = 0; attempt < 3; ++attempt) {
    SCHEDEXT_ASSIGN_OR_RETURN(api_port_, FreeLoopbackPort());
    // The kubeconfigs name the port.
    SCHEDEXT_RETURN_IF_ERROR(WriteFiles());
    api = StartApiServer();
    if (api.ok() ||
        ReadFile(api_server_log()).find("address already in use") == std::string::npos) {
      break;
    }
  }
  SCHEDEXT_RETURN_IF_ERROR(api);
  SCHEDEXT_RETURN_IF_ERROR(ApplyRbac());
  for (const std::string& ns : options_.namespaces) {
    SCHEDEXT_RETURN_IF_ERROR(CreateNamespace(ns));
  }
  std::cerr << "[control plane] ready at " << url() << " (etcd " << etcd_url() << ")\n";
  return OkStatus();
}

// The PKI, token file and kubeconfigs. PKI and tokens are generated once;
// the kubeconfigs are rewritten when the port changes.
Status ControlPlane::WriteFiles() {
  if (ca_pem_.empty()) {
    SCHEDEXT_ASSIGN_OR_RETURN(CertificateAuthority ca,
                              CertificateAuthority::Create("schedext-control-plane-ca"));
    SCHEDEXT_ASSIGN_OR_RETURN(IssuedCert server, ca.Issue(ServerCertOptions("kube-apiserver")));
    SCHEDEXT_ASSIGN_OR_RETURN(IssuedCert admin_cert,
                              ca.Issue(ClientCertOptions("admin-cert", {"system:masters"})));
    SCHEDEXT_ASSIGN_OR_RETURN(KeyPairPem sa, GenerateKeyPair(KeyType::kRsa2048));
    ca_pem_ = ca.cert_pem();
    SCHEDEXT_RETURN_IF_ERROR(WritePemFile(ca_file(), ca.cert_pem()));
    SCHEDEXT_RETURN_IF_ERROR(WritePemFile(dir_ + "/ca.key", ca.key_pem()));
    SCHEDEXT_RETURN_IF_ERROR(WritePemFile(dir_ + "/apiserver.crt", server.cert_pem));
    SCHEDEXT_RETURN_IF_ERROR(WritePemFile(dir_ + "/apiserver.key", server.key_pem));
    SCHEDEXT_RETURN_IF_ERROR(WritePemFile(dir_ + "/admin-cert.crt", admin_cert.cert_pem));
    SCHEDEXT_RETURN_IF_ERROR(WritePemFile(dir_ + "/admin-cert.key", admin_cert.key_pem));
    SCHEDEXT_RETURN_IF_ERROR(WritePemFile(dir_ + "/sa.key", sa.private_key_pem));
    SCHEDEXT_RETURN_IF_ERROR(WritePemFile(dir_ + "/sa.pub", sa.public_key_pem));
    admin_token_ = RandomToken();
    scheduler_token_ = RandomToken();
    schedext_token_ = RandomToken();
    // TOKEN,user,uid,"group1,group2" (system:authenticated is added by the server).
    const std::string& ns = options_.schedext_namespace;
    SCHEDEXT_RETURN_IF_ERROR(WriteFile(
        dir_ + "/tokens.csv",
        admin_token_ + ",admin,admin-uid,\"system:masters\"\n" + scheduler_token_ +
            ",system:kube-scheduler,kube-scheduler-uid\n" + schedext_token_ + "," +
            schedext_user() +
            ",schedext-uid,\"system:serviceaccounts,system:serviceaccounts:" + ns + "\"\n"));
  }
  const auto token_user = [](const std::string& token) { return "    token: " + token + "\n"; };
  SCHEDEXT_RETURN_IF_ERROR(
      WriteFile(admin_kubeconfig(), Kubeconfig(url(), ca_file(), token_user(admin_token_))));
  SCHEDEXT_RETURN_IF_ERROR(WriteFile(scheduler_kubeconfig(),
                                     Kubeconfig(url(), ca_file(), token_user(scheduler_token_))));
  SCHEDEXT_RETURN_IF_ERROR(
      WriteFile(schedext_kubeconfig(), Kubeconfig(url(), ca_file(), token_user(schedext_token_))));
  SCHEDEXT_RETURN_IF_ERROR(
      WriteFile(admin_cert_kubeconfig(),
                Kubeconfig(url(), ca_file(),
                           "    client-certificate: " + dir_ +
                               "/admin-cert.crt\n    client-key: " + dir_ + "/admin-cert.key\n")));
  return OkStatus();
}

Status ControlPlane::StartEtcd() {
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    SCHEDEXT_ASSIGN_OR_RETURN(etcd_port_, FreeLoopbackPort());
    SCHEDEXT_ASSIGN_OR_RETURN(etcd_peer_port_, FreeLoopbackPort());
    const std::string client = etcd_url();
    const std::string peer = "http://127.0.0.1:" + std::to_string(etcd_peer_port_);
    std::error_code ec;
    std::filesystem::remove_all(dir_ + "/etcd", ec);
    SCHEDEXT_ASSIGN_OR_RETURN(
        etcd_pid_,
        SpawnLogged({binaries_.etcd, "--name=test", "--data-dir=" + dir_ + "/etcd",
                     "--listen-client-urls=" + client, "--advertise-client-urls=" + client,
                     "--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
                     "--initial-cluster=test=" + peer, "--log-level=warn"},
                    etcd_log()));
    const auto deadline = steady_clock::now() + options_.start_timeout;
    bool healthy = false;
    while (steady_clock::now() < deadline && ChildRunning(etcd_pid_)) {
      httplib::Client c("127.0.0.1", etcd_port_);
      c.set_connection_timeout(1, 0);
      c.set_read_timeout(2, 0);
      auto res = c.Get("/health");
      if (res && res->status == 200 && res->body.find("\"true\"") != std::string::npos) {
        healthy = true;
        break;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    if (healthy) return OkStatus();
    const bool exited = !ChildRunning(etcd_pid_);
    KillChild(etcd_pid_);
    last = UnavailableError(std::string("etcd ") + (exited ? "exited" : "not healthy in time") +
                            "\n" + LogTail(etcd_log()));
    if (ReadFile(etcd_log()).find("address already in use") == std::string::npos) break;
  }
  return last;
}

std::vector<std::string> ControlPlane::ApiServerArgs() const {
  std::vector<std::string> args = {
      binaries_.kube_apiserver,
      "--etcd-servers=" + etcd_url(),
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      "--secure-port=" + std::to_string(api_port_),
      "--tls-cert-file=" + dir_ + "/apiserver.crt",
      "--tls-private-key-file=" + dir_ + "/apiserver.key",
      "--client-ca-file=" + ca_file(),
      "--token-auth-file=" + dir_ + "/tokens.csv",
      "--authorization-mode=RBAC",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      "--service-account-key-file=" + dir_ + "/sa.pub",
      "--service-account-signing-key-file=" + dir_ + "/sa.key",
      "--service-cluster-ip-range=10.96.0.0/16",
      "--endpoint-reconciler-type=none",
      "--allow-privileged=true",
      "--profiling=false",
      "--cert-dir=" + dir_ + "/apiserver-certs",
  };
  args.insert(args.end(), options_.apiserver_flags.begin(), options_.apiserver_flags.end());
  return args;
}

Status ControlPlane::StartApiServer() {
  if (ChildRunning(api_pid_)) return FailedPreconditionError("kube-apiserver is running already");
  SCHEDEXT_ASSIGN_OR_RETURN(api_pid_, SpawnLogged(ApiServerArgs(), api_server_log()));
  Status ready = WaitApiServerReady(api_pid_);
  if (!ready.ok()) KillChild(api_pid_);
  return ready;
}

Status ControlPlane::WaitApiServerReady(pid_t pid) {
  const auto deadline = steady_clock::now() + options_.start_timeout;
  std::string last;
  while (steady_clock::now() < deadline) {
    if (!ChildRunning(pid)) {
      return UnavailableError("kube-apiserver exited\n" + LogTail(api_server_log()));
    }
    httplib::SSLClient c("127.0.0.1", api_port_);
    c.set_ca_cert_path(ca_file().c_str());
    c.enable_server_certificate_verification(true);
    c.set_connection_timeout(1, 0);
    c.set_read_timeout(5, 0);
    c.set_bearer_token_auth(admin_token_);
    auto res = c.Get("/readyz");
    if (res && res->status == 200) return OkStatus();
    last = res ? std::to_string(res->status) + " " + res->body : httplib::to_string(res.error());
    std::this_thread::sleep_for(milliseconds(100));
  }
  return UnavailableError("kube-apiserver not ready within " +
                          std::to_string(options_.start_timeout.count()) +
                          " s; last /readyz: " + last + "\n" + LogTail(api_server_log()));
}

void ControlPlane::KillApiServer() { KillChild(api_pid_); }

Status ControlPlane::ApplyRbac() {
  std::vector<std::string> args = {"apply"};
  for (const std::string& m : options_.rbac_manifests) {
    args.push_back("-f");
    args.push_back(ResolveSourcePath(m));
  }
  if (options_.rbac_manifests.empty()) return OkStatus();
  SCHEDEXT_ASSIGN_OR_RETURN(CommandResult r, Kubectl(args));
  if (r.exit_code != 0) {
    return InternalError("kubectl apply of the RBAC manifests failed: " + r.output);
  }
  return OkStatus();
}

StatusOr<CommandResult> ControlPlane::Kubectl(const std::vector<std::string>& args,
                                              std::string_view stdin_text) const {
  std::vector<std::string> argv = {binaries_.kubectl, "--kubeconfig=" + admin_kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, stdin_text, options_.start_timeout);
}

Status ControlPlane::Apply(std::string_view yaml) const {
  SCHEDEXT_ASSIGN_OR_RETURN(CommandResult r, Kubectl({"apply", "-f", "-"}, yaml));
  if (r.exit_code != 0) return InternalError("kubectl apply failed: " + r.output);
  return OkStatus();
}

Status ControlPlane::CreateNamespace(std::string_view name) const {
  const std::string ns(name);
  std::string yaml;
  if (ns != "default") {
    yaml = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n---\n";
  }
  yaml +=
      "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: " + ns + "\n";
  return Apply(yaml);
}

StatusOr<ApiReply> ControlPlane::AdminRequest(std::string_view method, std::string_view path,
                                              std::string_view body) const {
  httplib::SSLClient c("127.0.0.1", api_port_);
  c.set_ca_cert_path(ca_file().c_str());
  c.enable_server_certificate_verification(true);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(30, 0);
  c.set_write_timeout(30, 0);
  c.set_bearer_token_auth(admin_token_);
  httplib::Request req;
  req.method = std::string(method);
  req.path = std::string(path);
  req.body = std::string(body);
  if (!body.empty()) {
    req.set_header("Content-Type",
                   method == "PATCH" ? "application/merge-patch+json" : "application/json");
  }
  req.set_header("Accept", "application/json");
  httplib::Result res = c.send(req);
  if (!res) {
    return UnavailableError(std::string(method) + " " + std::string(path) + ": " +
                            httplib::to_string(res.error()));
  }
  return ApiReply{res->status, res->body};
}

StatusOr<std::string> ControlPlane::Create(std::string_view collection_path,
                                           std::string_view object_json) const {
  SCHEDEXT_ASSIGN_OR_RETURN(ApiReply r, AdminRequest("POST", collection_path, object_json));
  if (r.status != 201) {
    return FailedPreconditionError("POST " + std::string(collection_path) + ": " +
                                   std::to_string(r.status) + " " + r.body);
  }
  return r.body;
}

Status ControlPlane::Delete(std::string_view path, bool missing_ok) const {
  SCHEDEXT_ASSIGN_OR_RETURN(ApiReply r,
                            AdminRequest("DELETE", std::string(path) + "?gracePeriodSeconds=0"));
  if (r.status == 200 || r.status == 202 || (missing_ok && r.status == 404)) return OkStatus();
  return FailedPreconditionError("DELETE " + std::string(path) + ": " + std::to_string(r.status) +
                                 " " + r.body);
}

// --- etcd through its v3 JSON gateway (no etcdctl needed).
namespace {

StatusOr<json> EtcdCall(int port, const std::string& path, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(30, 0);
  auto res = c.Post(path, body.dump(), "application/json");
  if (!res) return UnavailableError("etcd " + path + ": " + httplib::to_string(res.error()));
  if (res->status != 200) {
    return UnavailableError("etcd " + path + ": " + std::to_string(res->status) + " " + res->body);
  }
  json reply = json::parse(res->body, nullptr, false);
  if (reply.is_discarded()) return InternalError("etcd " + path + ": not JSON: " + res->body);
  return reply;
}

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(in[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(in[i + 1])} << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint32_t{static_cast<unsigned char>(in[i])} << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(in[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(in[i + 1])} << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// etcd's JSON gateway writes int64 fields as strings.
int64_t JsonInt(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) return std::strtoll(v.get<std::string>().c_str(), nullptr, 10);
  return 0;
}

}  // namespace

StatusOr<int64_t> ControlPlane::EtcdRevision() const {
  SCHEDEXT_ASSIGN_OR_RETURN(json reply,
                            EtcdCall(etcd_port_, "/v3/maintenance/status", json::object()));
  const int64_t rev = JsonInt(reply["header"]["revision"]);
  if (rev <= 0) return InternalError("etcd status without a revision: " + reply.dump());
  return rev;
}

StatusOr<int64_t> ControlPlane::CompactEtcd() {
  SCHEDEXT_ASSIGN_OR_RETURN(int64_t rev, EtcdRevision());
  SCHEDEXT_RETURN_IF_ERROR(EtcdCall(etcd_port_, "/v3/kv/compaction",
                                    json{{"revision", std::to_string(rev)}, {"physical", true}})
                               .status());
  return rev;
}

StatusOr<bool> ControlPlane::DeleteEtcdKey(std::string_view key) {
  SCHEDEXT_ASSIGN_OR_RETURN(json reply,
                            EtcdCall(etcd_port_, "/v3/kv/deleterange", json{{"key", Base64(key)}}));
  return JsonInt(reply.value("deleted", json(0))) > 0;
}

// --- kube-scheduler.

std::string ControlPlane::SchedulerConfigHeader() const {
  return "apiVersion: kubescheduler.config.k8s.io/v1\n"
         "kind: KubeSchedulerConfiguration\n"
         "clientConnection:\n"
         "  kubeconfig: " +
         scheduler_kubeconfig() +
         "\n"
         "leaderElection:\n"
         "  leaderElect: false\n";
}

StatusOr<SchedulerProcess> ControlPlane::StartScheduler(
    std::string_view config_yaml, const std::vector<std::string>& extra_flags) {
  if (binaries_.kube_scheduler.empty()) {
    return NotFoundError(
        "no kube-scheduler binary: put one in $KUBEBUILDER_ASSETS or $SCHEDEXT_KUBE_SCHEDULER, "
        "or unpack ../shared/k8s (../shared/k8s/install <build>/k8s-bin)");
  }
  StopScheduler();
  std::string config(config_yaml);
  const std::string placeholder = "{{kubeconfig}}";
  for (size_t pos = config.find(placeholder); pos != std::string::npos;
       pos = config.find(placeholder, pos)) {
    config.replace(pos, placeholder.size(), scheduler_kubeconfig());
  }
  const std::string suffix = std::to_string(++scheduler_starts_);
  SchedulerProcess s;
  s.config_path = dir_ + "/kube-scheduler-" + suffix + ".yaml";
  s.log_path = dir_ + "/kube-scheduler-" + suffix + ".log";
  SCHEDEXT_RETURN_IF_ERROR(WriteFile(s.config_path, config));
  SCHEDEXT_ASSIGN_OR_RETURN(s.secure_port, FreeLoopbackPort());
  std::vector<std::string> args = {binaries_.kube_scheduler,
                                   "--config=" + s.config_path,
                                   "--bind-address=127.0.0.1",
                                   "--secure-port=" + std::to_string(s.secure_port),
                                   "--cert-dir=" + dir_ + "/kube-scheduler-certs-" + suffix,
                                   "--authentication-kubeconfig=" + scheduler_kubeconfig(),
                                   "--authorization-kubeconfig=" + scheduler_kubeconfig()};
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  SCHEDEXT_ASSIGN_OR_RETURN(s.pid, SpawnLogged(args, s.log_path));
  scheduler_ = s;
  const auto deadline = steady_clock::now() + options_.start_timeout;
  while (steady_clock::now() < deadline) {
    if (!ChildRunning(scheduler_.pid)) {
      scheduler_.pid = -1;
      return UnavailableError("kube-scheduler exited\n" + LogTail(s.log_path));
    }
    httplib::SSLClient c("127.0.0.1", s.secure_port);
    c.enable_server_certificate_verification(false);  // its own self-signed certificate
    c.set_connection_timeout(1, 0);
    c.set_read_timeout(5, 0);
    auto res = c.Get("/healthz");
    if (res && res->status == 200) return scheduler_;
    std::this_thread::sleep_for(milliseconds(100));
  }
  StopScheduler();
  return UnavailableError("kube-scheduler not healthy in time\n" + LogTail(s.log_path));
}

void ControlPlane::StopScheduler() { StopChild(scheduler_.pid, std::chrono::seconds(10)); }

void ControlPlane::Stop() {
  StopScheduler();
  StopChild(api_pid_, std::chrono::seconds(15));
  StopChild(etcd_pid_, std::chrono::seconds(10));
  if (!dir_.empty()) {
    if (Getenv("SCHEDEXT_KEEP_CONTROL_PLANE_DIR").empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    } else {
      std::cerr << "[control plane] kept " << dir_ << "\n";
    }
    dir_.clear();
  }
}

}  // namespace schedext::testing
