// `schedext why NAMESPACE/POD`: asks a running schedext (GET
// /explain/pod/<ns>/<name>[/<profile>], explain/explain.h) why a pod is
// pending, and prints its answer as explain's table or as the JSON document.
#include <httplib.h>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "schedext/cli/commands.h"
#include "schedext/explain/explain.h"

namespace schedext::cli {
namespace {

constexpr std::string_view kWhyUsage =
    R"(Usage: schedext why [--server URL] [--profile NAME] [--output text|json] NAMESPACE/POD

Asks a running schedext (node-cache mode: it needs its cluster connection) why
the pod is not placed: the pod as schedext's cache holds it, explained against
every cached node with every policy's verdict, reason and per-node detail, the
scores of the nodes that pass and the ranking.

  --server URL      schedext's main listener: http://HOST:PORT, or https://HOST:PORT when
                    it serves server.tls (default http://127.0.0.1:8888)
  --ca-file FILE    https: the CA that signed the server's certificate (default: the
                    system's CAs); the certificate must name the URL's host
  --cert-file FILE  https: a client certificate, for a server with server.tls.clientCAFile
  --key-file FILE   its private key (PEM), with --cert-file
  --profile NAME    the profile the scheduler's urlPrefix names (default: the default profile)
  --output FORMAT   text (a table, the default) or json (the GET /explain/pod/... reply)
)";

// An answer larger than this is not an explain document of any real cluster
// (15,000 nodes with five policies are ~10 MB).
constexpr size_t kMaxReplyBytes = size_t{256} << 20;

struct WhyFlags {
  std::string server = "http://127.0.0.1:8888";
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string profile;
  std::string output = "text";
  std::string pod;  // NAMESPACE/POD
};

bool ParseWhyFlags(const std::vector<std::string>& args, WhyFlags& flags, std::string& error) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    const size_t eq = arg.find('=');
    const bool has_inline = arg.starts_with("--") && eq != std::string::npos;
    if (has_inline) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    std::string* target = nullptr;
    if (arg == "--server") target = &flags.server;
    if (arg == "--profile") target = &flags.profile;
    if (arg == "--output") target = &flags.output;
    if (arg == "--ca-file") target = &flags.ca_file;
    if (arg == "--cert-file") target = &flags.cert_file;
    if (arg == "--key-file") target = &flags.key_file;
    if (target != nullptr) {
      if (!has_inline) {
        if (i + 1 >= args.size()) {
          error = arg + " needs a value";
          return false;
        }
        value = args[++i];
      }
      *target = value;
      continue;
    }
    if (arg.starts_with("-")) {
      error = "unknown flag " + arg;
      return false;
    }
    if (!flags.pod.empty()) {
      error = "one NAMESPACE/POD only";
      return false;
    }
    flags.pod = arg;
  }
  const size_t slash = flags.pod.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == flags.pod.size() ||
      flags.pod.find('/', slash + 1) != std::string::npos) {
    error = "want NAMESPACE/POD";
    return false;
  }
  if (flags.output != "text" && flags.output != "json") {
    error = "--output must be text or json";
    return false;
  }
  const bool https = flags.server.starts_with("https://");
  if (!https && !flags.server.starts_with("http://")) {
    error = "--server must be an http:// or https:// URL";
    return false;
  }
  if (!https && !(flags.ca_file.empty() && flags.cert_file.empty() && flags.key_file.empty())) {
    error = "--ca-file, --cert-file and --key-file need an https:// --server";
    return false;
  }
  if (flags.cert_file.empty() != flags.key_file.empty()) {
    error = "--cert-file and --key-file go together";
    return false;
  }
  return true;
}

}  // namespace

int WhyCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      out << kWhyUsage;
      return 0;
    }
  }
  WhyFlags flags;
  std::string error;
  if (!ParseWhyFlags(args, flags, error)) {
    err << "schedext why: " << error << "\n\n" << kWhyUsage;
    return 2;
  }
  std::string path = "/explain/pod/" + flags.pod;
  if (!flags.profile.empty()) path += "/" + flags.profile;

  // Over https the server's certificate is verified (against --ca-file, else
  // the system's CAs) and must name the host; a client certificate is sent
  // when given.
  httplib::Client client(flags.server, flags.cert_file, flags.key_file);
  if (!client.is_valid()) {
    err << "schedext why: cannot use " << flags.server;
    if (!flags.cert_file.empty()) {
      err << " with --cert-file " << flags.cert_file << " and --key-file " << flags.key_file
          << " (unreadable, or not a certificate and its key)";
    }
    err << "\n";
    return 1;
  }
  if (!flags.ca_file.empty()) {
    client.set_ca_cert_path(flags.ca_file);
  }
  client.enable_server_certificate_verification(true);
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(30));
  std::string body;
  bool too_large = false;
  const httplib::Result res = client.Get(path, [&](const char* data, size_t n) {
    if (body.size() + n > kMaxReplyBytes) {
      too_large = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  if (too_large) {
    err << "schedext why: GET " << flags.server << path << ": reply above "
        << (kMaxReplyBytes >> 20) << " MiB\n";
    return 1;
  }
  if (!res) {
    err << "schedext why: GET " << flags.server << path << ": "
        << httplib::to_string(res.error());
    if (res.error() == httplib::Error::SSLServerVerification) {
      err << " (the server's certificate is not signed by "
          << (flags.ca_file.empty() ? "a system CA; pass --ca-file" : flags.ca_file)
          << ", or does not name the host)";
    } else if (flags.server.starts_with("https://") && flags.cert_file.empty() &&
               (res.error() == httplib::Error::SSLConnection ||
                res.error() == httplib::Error::Read)) {
      // TLS 1.3 clients learn of a refused (missing) client certificate only
      // when they read the answer.
      err << " (a server with server.tls.clientCAFile wants --cert-file and --key-file)";
    }
    err << "\n";
    return 1;
  }
  if (res->status != 200) {
    err << "schedext why: GET " << flags.server << path << ": HTTP " << res->status << ": " << body
        << "\n";
    return 1;
  }
  if (flags.output == "json") {
    out << body << "\n";
    return 0;
  }
  StatusOr<std::string> text = explain::FormatExplanationText(body);
  if (!text.ok()) {
    err << "schedext why: " << text.status().message() << "\n";
    return 1;
  }
  out << *text;
  return 0;
}

}  // namespace schedext::cli
