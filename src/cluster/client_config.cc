// In-cluster and kubeconfig loading. The only file of the cluster layer that
// includes yaml-cpp; every YAML exception stops here.
#include "schedext/cluster/client_config.h"

#include <cstdlib>
#include <filesystem>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/file.h"
#include "common/text.h"

namespace schedext::cluster {
namespace {

bool LooksLikePem(std::string_view text, std::string_view kind) {
  return text.find("-----BEGIN " + std::string(kind)) != std::string_view::npos;
}

// Standard base64 (Go's base64.StdEncoding, which is how kubeconfig []byte
// fields are written); whitespace is ignored, padding optional.
bool Base64Decode(std::string_view in, std::string& out) {
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else if (c == '=') {
      padding = true;
      continue;
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else {
      return false;
    }
    if (padding) {
      return false;  // data after '='
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return bits < 6;  // a lone trailing sextet is not valid base64
}

// Brackets an IPv6 literal, as Go's net.JoinHostPort does.
std::string JoinHostPort(const std::string& host, const std::string& port) {
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return "[" + host + "]:" + port;
  }
  return host + ":" + port;
}

// --- kubeconfig -------------------------------------------------------------

// Reads kubeconfig fields, turning every yaml-cpp exception and type mismatch
// into a Status naming the field.
class KubeconfigReader {
 public:
  explicit KubeconfigReader(std::string path) : path_(std::move(path)) {}

  Status Error(std::string_view message) const {
    return InvalidArgumentError("kubeconfig " + Quote(path_) + ": " + std::string(message));
  }

  // `out` = the string at node[key]; "" when absent or null.
  Status String(const YAML::Node& node, const char* key, const std::string& where,
                std::string& out) const {
    out.clear();
    try {
      const YAML::Node value = node[key];
      if (!value.IsDefined() || value.IsNull()) {
        return OkStatus();
      }
      if (!value.IsScalar()) {
        return Error(where + "." + key + ": expected a string" + Mark(value));
      }
      out = value.as<std::string>();
      return OkStatus();
    } catch (const YAML::Exception& e) {
      return Error(where + "." + key + ": " + e.what());
    }
  }

  Status Bool(const YAML::Node& node, const char* key, const std::string& where,
              bool& out) const {
    out = false;
    try {
      const YAML::Node value = node[key];
      if (!value.IsDefined() || value.IsNull()) {
        return OkStatus();
      }
      bool b = false;
      if (!value.IsScalar() || !YAML::convert<bool>::decode(value, b)) {
        return Error(where + "." + key + ": expected true or false" + Mark(value));
      }
      out = b;
      return OkStatus();
    } catch (const YAML::Exception& e) {
      return Error(where + "." + key + ": " + e.what());
    }
  }

  // A `<key>-data` field: base64 of PEM.
  Status Data(const YAML::Node& node, const char* key, const std::string& where,
              std::string& out) const {
    std::string encoded;
    SCHEDEXT_RETURN_IF_ERROR(String(node, key, where, encoded));
    out.clear();
    if (encoded.empty()) {
      return OkStatus();
    }
    if (!Base64Decode(encoded, out)) {
      return Error(where + "." + key + ": not valid base64");
    }
    return OkStatus();
  }

  // Finds the entry named `name` in the list `top` (clusters, contexts,
  // users) and returns its `inner` map (cluster, context, user).
  Status Find(const YAML::Node& root, const char* top, const char* inner, const std::string& name,
              YAML::Node& out, std::string& where) const {
    try {
      const YAML::Node list = root[top];
      if (list.IsDefined() && !list.IsNull() && !list.IsSequence()) {
        return Error(std::string(top) + ": expected a list" + Mark(list));
      }
      if (list.IsDefined() && list.IsSequence()) {
        for (size_t i = 0; i < list.size(); ++i) {
          const YAML::Node entry = list[i];
          const std::string at = std::string(top) + "[" + std::to_string(i) + "]";
          if (!entry.IsMap()) {
            return Error(at + ": expected a map" + Mark(entry));
          }
          std::string entry_name;
          SCHEDEXT_RETURN_IF_ERROR(String(entry, "name", at, entry_name));
          if (entry_name != name) {
            continue;
          }
          const YAML::Node value = entry[inner];
          where = at + "." + inner;
          if (!value.IsDefined() || value.IsNull()) {
            out = YAML::Node(YAML::NodeType::Map);
            return OkStatus();
          }
          if (!value.IsMap()) {
            return Error(where + ": expected a map" + Mark(value));
          }
          out = value;
          return OkStatus();
        }
      }
    } catch (const YAML::Exception& e) {
      return Error(std::string(top) + ": " + e.what());
    }
    // "context" / "cluster" / "user" not found.
    return Error(std::string(inner) + " " + Quote(name) + " not found");
  }

  // A file path field resolved against the kubeconfig's directory.
  std::string Resolve(const std::string& file) const {
    if (file.empty() || std::filesystem::path(file).is_absolute()) {
      return file;
    }
    return (std::filesystem::path(path_).parent_path() / file).lexically_normal().string();
  }

  // Checks a referenced file can be read now (clientcmd validates this too).
  Status Readable(const std::string& file, const std::string& field) const {
    if (file.empty()) {
      return OkStatus();
    }
    StatusOr<std::string> content = ReadFile(file);
    if (!content.ok()) {
      return Error(field + ": " + content.status().message());
    }
    return OkStatus();
  }

  const std::string& path() const { return path_; }

 private:
  static std::string Mark(const YAML::Node& node) {
    const YAML::Mark m = node.Mark();
    if (m.is_null()) {
      return std::string();
    }
    return " (line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1) +
           ")";
  }

  std::string path_;
};

}  // namespace

std::string DefaultUserAgent() { return std::string("schedext/") + SCHEDEXT_VERSION; }

ConfigEnvironment ConfigEnvironment::Process() {
  ConfigEnvironment env;
  env.getenv = [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) {
      return std::nullopt;
    }
    return std::string(value);
  };
  return env;
}

StatusOr<ClientConfig> InClusterConfig(const ConfigEnvironment& env) {
  auto get = [&](std::string_view name) {
    std::optional<std::string> v = env.getenv ? env.getenv(name) : std::nullopt;
    return v.value_or(std::string());
  };
  const std::string host = get("KUBERNETES_SERVICE_HOST");
  const std::string port = get("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return NotFoundError(
        "in-cluster config: not running in a cluster (KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT must be defined)");
  }
  ClientConfig config;
  config.server = "https://" + JoinHostPort(host, port);
  const std::string dir = env.service_account_dir;
  config.token_file = dir + "/token";
  config.ca_file = dir + "/ca.crt";

  StatusOr<std::string> token = ReadFile(config.token_file);
  if (!token.ok()) {
    return FailedPreconditionError("in-cluster config: service account token: " +
                                   token.status().message());
  }
  config.token = std::string(TrimSpace(*token));
  if (config.token.empty()) {
    return FailedPreconditionError("in-cluster config: service account token " +
                                   Quote(config.token_file) + " is empty");
  }
  StatusOr<std::string> ca = ReadFile(config.ca_file);
  if (!ca.ok()) {
    return FailedPreconditionError("in-cluster config: CA: " + ca.status().message());
  }
  if (!LooksLikePem(*ca, "CERTIFICATE")) {
    return FailedPreconditionError("in-cluster config: CA " + Quote(config.ca_file) +
                                   " holds no PEM certificate");
  }
  config.source = "in-cluster (" + config.server + ")";
  return config;
}

StatusOr<ClientConfig> LoadKubeconfig(std::string_view path_view, std::string_view context_view) {
  const std::string path(path_view);
  KubeconfigReader r(path);
  StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return Status(text.status().code(), "kubeconfig: " + text.status().message());
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::ParserException& e) {
    return r.Error("line " + std::to_string(e.mark.line + 1) + ", column " +
                   std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const YAML::Exception& e) {
    return r.Error(e.what());
  }
  if (!root.IsMap()) {
    return r.Error("expected a map at the top level (is this a kubeconfig file?)");
  }

  std::string context_name(context_view);
  if (context_name.empty()) {
    SCHEDEXT_RETURN_IF_ERROR(r.String(root, "current-context", "", context_name));
    if (context_name.empty()) {
      return r.Error("no current-context is set and no context was given (--context)");
    }
  }
  YAML::Node context;
  std::string context_at;
  SCHEDEXT_RETURN_IF_ERROR(r.Find(root, "contexts", "context", context_name, context, context_at));
  std::string cluster_name;
  std::string user_name;
  SCHEDEXT_RETURN_IF_ERROR(r.String(context, "cluster", context_at, cluster_name));
  SCHEDEXT_RETURN_IF_ERROR(r.String(context, "user", context_at, user_name));
  if (cluster_name.empty()) {
    return r.Error("context " + Quote(context_name) + " names no cluster");
  }

  ClientConfig config;
  // Cluster.
  YAML::Node cluster;
  std::string cluster_at;
  Status found = r.Find(root, "clusters", "cluster", cluster_name, cluster, cluster_at);
  if (!found.ok()) {
    return Status(found.code(), found.message() + " (named by context " + Quote(context_name) + ")");
  }
  SCHEDEXT_RETURN_IF_ERROR(r.String(cluster, "server", cluster_at, config.server));
  if (config.server.empty()) {
    return r.Error("cluster " + Quote(cluster_name) + " has no server (" + cluster_at +
                   ".server)");
  }
  std::string ca_file;
  SCHEDEXT_RETURN_IF_ERROR(r.String(cluster, "certificate-authority", cluster_at, ca_file));
  SCHEDEXT_RETURN_IF_ERROR(r.Data(cluster, "certificate-authority-data", cluster_at, config.ca_pem));
  SCHEDEXT_RETURN_IF_ERROR(
      r.Bool(cluster, "insecure-skip-tls-verify", cluster_at, config.insecure_skip_tls_verify));
  if (!ca_file.empty() && !config.ca_pem.empty()) {
    return r.Error("cluster " + Quote(cluster_name) +
                   ": certificate-authority-data and certificate-authority are both specified");
  }
  if (config.insecure_skip_tls_verify && (!ca_file.empty() || !config.ca_pem.empty())) {
    return r.Error("cluster " + Quote(cluster_name) +
                   ": specifying a root certificates file with insecure-skip-tls-verify is not "
                   "allowed");
  }
  if (!config.ca_pem.empty() && !LooksLikePem(config.ca_pem, "CERTIFICATE")) {
    return r.Error(cluster_at + ".certificate-authority-data: not a PEM certificate");
  }
  config.ca_file = r.Resolve(ca_file);
  SCHEDEXT_RETURN_IF_ERROR(r.Readable(config.ca_file, cluster_at + ".certificate-authority"));

  // User (optional: a context may have none, e.g. a plain-HTTP test server).
  if (!user_name.empty()) {
    YAML::Node user;
    std::string user_at;
    found = r.Find(root, "users", "user", user_name, user, user_at);
    if (!found.ok()) {
      return Status(found.code(),
                    found.message() + " (named by context " + Quote(context_name) + ")");
    }
    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      try {
        if (user[unsupported].IsDefined() && !user[unsupported].IsNull()) {
          return r.Error("user " + Quote(user_name) + ": " + unsupported +
                         " authentication is not supported (use a token, tokenFile or a client "
                         "certificate)");
        }
      } catch (const YAML::Exception& e) {
        return r.Error(user_at + ": " + e.what());
      }
    }
    std::string cert_file;
    std::string key_file;
    std::string token_file;
    SCHEDEXT_RETURN_IF_ERROR(r.String(user, "client-certificate", user_at, cert_file));
    SCHEDEXT_RETURN_IF_ERROR(r.Data(user, "client-certificate-data", user_at, config.client_cert_pem));
    SCHEDEXT_RETURN_IF_ERROR(r.String(user, "client-key", user_at, key_file));
    SCHEDEXT_RETURN_IF_ERROR(r.Data(user, "client-key-data", user_at, config.client_key_pem));
    SCHEDEXT_RETURN_IF_ERROR(r.String(user, "token", user_at, config.token));
    SCHEDEXT_RETURN_IF_ERROR(r.String(user, "tokenFile", user_at, token_file));
    if (!cert_file.empty() && !config.client_cert_pem.empty()) {
      return r.Error("user " + Quote(user_name) +
                     ": client-certificate-data and client-certificate are both specified");
    }
    if (!key_file.empty() && !config.client_key_pem.empty()) {
      return r.Error("user " + Quote(user_name) +
                     ": client-key-data and client-key are both specified");
    }
    const bool has_cert = !cert_file.empty() || !config.client_cert_pem.empty();
    const bool has_key = !key_file.empty() || !config.client_key_pem.empty();
    if (has_cert != has_key) {
      return r.Error("user " + Quote(user_name) + ": " +
                     (has_cert ? "client-key-data or client-key must be specified to use the "
                                 "client certificate"
                               : "client-certificate-data or client-certificate must be "
                                 "specified to use the client key"));
    }
    if (!config.client_cert_pem.empty() && !LooksLikePem(config.client_cert_pem, "CERTIFICATE")) {
      return r.Error(user_at + ".client-certificate-data: not a PEM certificate");
    }
    if (!config.client_key_pem.empty() && !LooksLikePem(config.client_key_pem, "")) {
      return r.Error(user_at + ".client-key-data: not a PEM key");
    }
    config.client_cert_file = r.Resolve(cert_file);
    config.client_key_file = r.Resolve(key_file);
    config.token_file = r.Resolve(token_file);
    SCHEDEXT_RETURN_IF_ERROR(r.Readable(config.client_cert_file, user_at + ".client-certificate"));
    SCHEDEXT_RETURN_IF_ERROR(r.Readable(config.client_key_file, user_at + ".client-key"));
    if (!config.token_file.empty() && config.token.empty()) {
      // clientcmd reads the file at load time when no inline token is set.
      StatusOr<std::string> token = ReadFile(config.token_file);
      if (!token.ok()) {
        return r.Error(user_at + ".tokenFile: " + token.status().message());
      }
      config.token = std::string(TrimSpace(*token));
      if (config.token.empty()) {
        return r.Error(user_at + ".tokenFile: " + Quote(config.token_file) + " is empty");
      }
    }
  }
  config.source = "kubeconfig " + Quote(path) + " context " + Quote(context_name);
  return config;
}

StatusOr<ClientConfig> ResolveClientConfig(std::string_view kubeconfig_flag,
                                           std::string_view context_flag,
                                           const ConfigEnvironment& env) {
  if (!kubeconfig_flag.empty()) {
    return LoadKubeconfig(kubeconfig_flag, context_flag);
  }
  const std::optional<std::string> list =
      env.getenv ? env.getenv("KUBECONFIG") : std::nullopt;
  if (list && !list->empty()) {
    std::string_view rest = *list;
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      const std::string_view entry = rest.substr(0, colon);
      if (!entry.empty()) {
        StatusOr<ClientConfig> config = LoadKubeconfig(entry, context_flag);
        if (!config.ok()) {
          return config.status().WithContext("$KUBECONFIG");
        }
        return config;
      }
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  }
  StatusOr<ClientConfig> in_cluster = InClusterConfig(env);
  if (!in_cluster.ok() && in_cluster.status().code() == StatusCode::kNotFound) {
    return NotFoundError(
        "no Kubernetes API configuration: pass --kubeconfig, set $KUBECONFIG, or run in a pod "
        "(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT unset)");
  }
  return in_cluster;
}

}  // namespace schedext::cluster
