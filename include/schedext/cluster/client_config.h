// ClientConfig: where the Kubernetes API server is and how to authenticate to
// it, built from the pod's service account (in-cluster) or a kubeconfig file,
// as client-go's rest.InClusterConfig and clientcmd do. NewHttpKubeClient
// (http_kube_client.h) turns it into a client.
//
// Every loader validates what it reads and fails with a message naming the
// file and field (`kubeconfig "/x": context "foo" not found`), so a bad setup
// stops schedext at start-up instead of surfacing later as 401s or TLS errors.
//
// Thread-safety: plain values and pure functions; the loaders read the
// environment only through the injectable ConfigEnvironment.
#ifndef SCHEDEXT_CLUSTER_CLIENT_CONFIG_H_
#define SCHEDEXT_CLUSTER_CLIENT_CONFIG_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "schedext/status.h"

namespace schedext::cluster {

// "schedext/<SCHEDEXT_VERSION>".
std::string DefaultUserAgent();

struct ClientConfig {
  // "https://host:port" or "http://host:port" (IPv6 hosts bracketed). A path
  // after the authority is not supported (refused by NewHttpKubeClient).
  std::string server;

  // Trusted CAs for the server certificate: PEM text, or a PEM file read when
  // the client is created. Data wins when both are set. With neither (and not
  // insecure), the system's default trust store is used.
  std::string ca_pem;
  std::string ca_file;
  // Skip server certificate verification (never together with a CA).
  bool insecure_skip_tls_verify = false;

  // Client certificate authentication: PEM text or files (data wins).
  std::string client_cert_pem;
  std::string client_cert_file;
  std::string client_key_pem;
  std::string client_key_file;

  // Bearer token. With token_file set, the file is the source of truth: it is
  // re-read when it changes (bound service-account tokens rotate) and after a
  // 401; `token`, when set, is only the value to start with.
  std::string token;
  std::string token_file;
  // How often, at most, the token file's mtime is checked for a rotation.
  std::chrono::milliseconds token_file_check_interval{10000};

  // Per connect, per read and per write (not per whole response, see
  // http_kube_client.h). Keep it well below the scheduler's extender
  // httpTimeout (30 s by default) so a bind answers before the scheduler
  // gives up on it.
  std::chrono::milliseconds timeout{10000};
  // Read timeout of a watch stream that has no `timeoutSeconds` in its query
  // (with one, the stream's read timeout is timeoutSeconds + 30 s).
  std::chrono::seconds watch_idle_timeout{600};
  // A pooled keep-alive connection idle for longer than this is closed
  // instead of reused. Keep it below the API server's idle close —
  // kube-apiserver's http.Server IdleTimeout is 90 s — so that a request
  // seldom meets a connection the server is closing. (When it does anyway,
  // the request is retried once on a new connection, as Go's client does.)
  // Zero: no connection is reused.
  std::chrono::milliseconds idle_connection_timeout{60000};

  // Client-side rate limit of requests (a token bucket, as client-go's
  // flowcontrol; its defaults). qps <= 0 disables it; burst must be >= 1
  // otherwise. A watch takes one token to start; its stream is not limited.
  double qps = 5.0;
  int burst = 10;

  std::string user_agent = DefaultUserAgent();

  // Where this came from, for logs: `in-cluster (https://10.96.0.1:443)` or
  // `kubeconfig "/path" context "kind"`.
  std::string source;
};

// The process environment and file system locations the loaders consult;
// tests substitute both.
struct ConfigEnvironment {
  // Returns the variable's value, or nullopt when unset.
  std::function<std::optional<std::string>(std::string_view name)> getenv;
  // Directory holding the service account's token, ca.crt and namespace.
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  // ::getenv and the standard directory.
  static ConfigEnvironment Process();
};

// client-go's rest.InClusterConfig: server https://$KUBERNETES_SERVICE_HOST:
// $KUBERNETES_SERVICE_PORT (an IPv6 host bracketed), the token file and
// ca.crt of the service account (the token re-read as it rotates).
// kNotFound when either variable is unset or empty (not in a cluster);
// kFailedPrecondition when the token or CA cannot be read or is empty or not
// PEM (client-go only logs a bad CA and falls back to the system roots;
// schedext refuses to start instead).
StatusOr<ClientConfig> InClusterConfig(
    const ConfigEnvironment& env = ConfigEnvironment::Process());

// Loads `path` (YAML, the kubectl kubeconfig format) for `context`, or its
// current-context when `context` is empty: the context's cluster (server,
// certificate-authority, certificate-authority-data, insecure-skip-tls-
// verify) and user (client-certificate(-data), client-key(-data), token,
// tokenFile). Relative file paths are resolved against the kubeconfig's
// directory, as clientcmd does. kNotFound when the file cannot be read;
// kInvalidArgument, naming the file and the field, when it is malformed,
// refers to a missing context/cluster/user, sets both a field and its -data
// twin, or asks for an unsupported authentication (exec, auth-provider,
// username/password).
StatusOr<ClientConfig> LoadKubeconfig(std::string_view path, std::string_view context = {});

// The configuration schedext starts with: `kubeconfig_flag` when set, else
// the first entry of $KUBECONFIG (a ':'-separated list; only the first
// non-empty entry is read, no merging), else in-cluster. `context_flag`
// applies to the kubeconfig cases. kNotFound when none applies (no flag, no
// $KUBECONFIG, not in a cluster); the loader's error otherwise.
StatusOr<ClientConfig> ResolveClientConfig(
    std::string_view kubeconfig_flag, std::string_view context_flag,
    const ConfigEnvironment& env = ConfigEnvironment::Process());

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_CLIENT_CONFIG_H_
