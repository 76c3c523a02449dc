// FakeApiServer implementation. Test-only: nlohmann for the objects, httplib
// for the transport, OpenSSL 3 for the throwaway PKI.
#include "testing/fake_api_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace schedext::testing {
namespace {

// Insertion-ordered, so objects keep the API server's key order (kind,
// apiVersion, metadata, spec, status; type before object in events).
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------
// PKI

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

std::string OpenSslError(std::string_view what) {
  std::string out(what);
  const unsigned long e = ERR_get_error();
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    out.append(": ").append(buf);
  }
  ERR_clear_error();
  return out;
}

bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) {
    return false;
  }
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok == 1;
}

// A certificate for `key`, signed by `issuer_key` (self-signed when `issuer`
// is null), with the given extensions (nid, value).
X509Ptr MakeCert(EVP_PKEY* key, const std::string& common_name, X509* issuer,
                 EVP_PKEY* issuer_key, const std::vector<std::pair<int, std::string>>& exts) {
  X509Ptr cert(X509_new());
  if (!cert) {
    return nullptr;
  }
  X509_set_version(cert.get(), 2);  // v3
  BIGNUM* serial = BN_new();
  BN_rand(serial, 64, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);
  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert.get()));
  BN_free(serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 7 * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  for (const auto& [nid, value] : exts) {
    if (!AddExtension(cert.get(), signer, nid, value.c_str())) {
      return nullptr;
    }
  }
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) <= 0) {
    return nullptr;
  }
  return cert;
}

std::string BioToString(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

std::string CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  return BioToString(bio.get());
}

std::string KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  return BioToString(bio.get());
}

X509Ptr CertFromPem(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

PkeyPtr KeyFromPem(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return PkeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

// ---------------------------------------------------------------------------
// Fixtures and JSON helpers

std::string NewUid() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t base = std::random_device{}();
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%08llx-0000-4000-8000-%012llx",
                static_cast<unsigned long long>(base & 0xffffffffULL),
                static_cast<unsigned long long>(counter.fetch_add(1) + 1));
  return buf;
}

const json& FixtureRequest() {
  static const json request = [] {
    std::ifstream in(std::string(SCHEDEXT_TESTDATA_DIR) +
                     "/kube-scheduler-1.26/nodecache-false/filter-1.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return json::parse(ss.str(), nullptr, false);
  }();
  return request;
}

std::string Base64UrlEncode(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(in[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(in[i + 1])} << 8) |
                       uint32_t{static_cast<unsigned char>(in[i + 2])};
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint32_t{static_cast<unsigned char>(in[i])} << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(in[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(in[i + 1])} << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

bool Base64UrlDecode(std::string_view in, std::string& out) {
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '-') {
      v = 62;
    } else if (c == '_') {
      v = 63;
    } else {
      return false;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

std::string_view KindOf(FakeResource r) {
  switch (r) {
    case FakeResource::kNodes:
      return "Node";
    case FakeResource::kPods:
      return "Pod";
    case FakeResource::kConfigMaps:
      return "ConfigMap";
    case FakeResource::kWidgets:
      return "Widget";
  }
  return "Pod";
}

std::string_view ApiVersionOf(FakeResource r) {
  return r == FakeResource::kWidgets ? "example.com/v1" : "v1";
}

std::string_view ListKindOf(FakeResource r) {
  switch (r) {
    case FakeResource::kNodes:
      return "NodeList";
    case FakeResource::kPods:
      return "PodList";
    case FakeResource::kConfigMaps:
      return "ConfigMapList";
    case FakeResource::kWidgets:
      return "WidgetList";
  }
  return "PodList";
}

// Store key of a namespaced object: "<ns>/<name>", "default" when no
// namespace is given (as kubectl's default context does); nodes by name.
std::string StoreKey(FakeResource r, std::string_view ns, std::string_view name) {
  if (r == FakeResource::kNodes) {
    return std::string(name);
  }
  return std::string(ns.empty() ? "default" : ns) + "/" + std::string(name);
}

std::string StringAt(const json& obj, std::initializer_list<const char*> path) {
  const json* cur = &obj;
  for (const char* key : path) {
    if (!cur->is_object()) {
      return std::string();
    }
    auto it = cur->find(key);
    if (it == cur->end()) {
      return std::string();
    }
    cur = &*it;
  }
  return cur->is_string() ? cur->get<std::string>() : std::string();
}

std::string KeyOf(FakeResource r, const json& obj) {
  return StoreKey(r, StringAt(obj, {"metadata", "namespace"}), StringAt(obj, {"metadata", "name"}));
}

// The object is in namespace `ns`; an empty `ns` (a cluster-wide path)
// matches everything.
bool InNamespace(const json& obj, const std::string& ns) {
  return ns.empty() || StringAt(obj, {"metadata", "namespace"}) == ns;
}

// "application/merge-patch+json; charset=utf-8" → "application/merge-patch+json".
std::string MediaType(const std::string& content_type) {
  std::string out = content_type.substr(0, content_type.find(';'));
  while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) {
    out.pop_back();
  }
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

// The object as a watch event or GET carries it: kind and apiVersion first.
json WithKind(FakeResource r, const json& obj) {
  json out = json::object();
  out["kind"] = KindOf(r);
  out["apiVersion"] = ApiVersionOf(r);
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key() != "kind" && it.key() != "apiVersion") {
      out[it.key()] = it.value();
    }
  }
  return out;
}

json WithoutKind(const json& obj) {
  json out = obj;
  out.erase("kind");
  out.erase("apiVersion");
  return out;
}

// fieldSelector terms ("a=b", "a==b", "a!=b", comma-separated) over the fields
// the API server supports for nodes and pods that schedext might use.
struct FieldTerm {
  std::vector<const char*> path;
  std::string value;
  bool negate = false;
};

bool ParseFieldSelector(std::string_view selector, std::vector<FieldTerm>& out) {
  out.clear();
  while (!selector.empty()) {
    const size_t comma = selector.find(',');
    std::string_view term = selector.substr(0, comma);
    selector = comma == std::string_view::npos ? std::string_view() : selector.substr(comma + 1);
    if (term.empty()) {
      continue;
    }
    FieldTerm t;
    size_t op = term.find("!=");
    size_t value_at;
    if (op != std::string_view::npos) {
      t.negate = true;
      value_at = op + 2;
    } else if ((op = term.find("==")) != std::string_view::npos) {
      value_at = op + 2;
    } else if ((op = term.find('=')) != std::string_view::npos) {
      value_at = op + 1;
    } else {
      return false;
    }
    const std::string_view field = term.substr(0, op);
    t.value = std::string(term.substr(value_at));
    if (field == "metadata.name") {
      t.path = {"metadata", "name"};
    } else if (field == "metadata.namespace") {
      t.path = {"metadata", "namespace"};
    } else if (field == "spec.nodeName") {
      t.path = {"spec", "nodeName"};
    } else if (field == "status.phase") {
      t.path = {"status", "phase"};
    } else if (field == "spec.unschedulable") {
      t.path = {"spec", "unschedulable"};
    } else {
      return false;
    }
    out.push_back(std::move(t));
  }
  return true;
}

bool MatchesFields(const json& obj, const std::vector<FieldTerm>& terms) {
  for (const FieldTerm& t : terms) {
    const json* cur = &obj;
    for (const char* key : t.path) {
      if (cur == nullptr || !cur->is_object() || !cur->contains(key)) {
        cur = nullptr;
        break;
      }
      cur = &(*cur)[key];
    }
    std::string value;
    if (cur != nullptr && cur->is_string()) {
      value = cur->get<std::string>();
    } else if (cur != nullptr && cur->is_boolean()) {
      value = cur->get<bool>() ? "true" : "false";
    } else if (t.path.size() == 2 && std::string_view(t.path[1]) == "unschedulable") {
      value = "false";
    }
    if ((value == t.value) == t.negate) {
      return false;
    }
  }
  return true;
}

std::string EventLine(std::string_view type, const json& object) {
  json event = json::object();
  event["type"] = type;
  event["object"] = object;
  return event.dump() + "\n";  // one event per line, as the API server writes them
}

bool IsWatchParam(const httplib::Request& req) {
  if (!req.has_param("watch")) {
    return false;
  }
  const std::string v = req.get_param_value("watch");
  return v == "1" || v == "true" || v == "True";
}

}  // namespace

// ---------------------------------------------------------------------------

bool GenerateTestPki(TestPki& out, std::string& error, std::string_view common_name_prefix) {
  const std::string prefix(common_name_prefix);
  PkeyPtr ca_key(EVP_EC_gen("P-256"));
  PkeyPtr server_key(EVP_EC_gen("P-256"));
  PkeyPtr client_key(EVP_EC_gen("P-256"));
  if (!ca_key || !server_key || !client_key) {
    error = OpenSslError("generate EC keys");
    return false;
  }
  X509Ptr ca = MakeCert(ca_key.get(), prefix + "-ca", nullptr, nullptr,
                        {{NID_basic_constraints, "critical,CA:TRUE"},
                         {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                         {NID_subject_key_identifier, "hash"}});
  if (!ca) {
    error = OpenSslError("make the CA certificate");
    return false;
  }
  X509Ptr server = MakeCert(server_key.get(), prefix + "-apiserver", ca.get(), ca_key.get(),
                            {{NID_basic_constraints, "critical,CA:FALSE"},
                             {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                             {NID_ext_key_usage, "serverAuth"},
                             {NID_subject_alt_name, "IP:127.0.0.1,IP:::1,DNS:localhost"},
                             {NID_authority_key_identifier, "keyid:always"}});
  X509Ptr client = MakeCert(client_key.get(), prefix + "-client", ca.get(), ca_key.get(),
                            {{NID_basic_constraints, "critical,CA:FALSE"},
                             {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                             {NID_ext_key_usage, "clientAuth"},
                             {NID_authority_key_identifier, "keyid:always"}});
  if (!server || !client) {
    error = OpenSslError("make the leaf certificates");
    return false;
  }
  out.ca_cert_pem = CertPem(ca.get());
  out.ca_key_pem = KeyPem(ca_key.get());
  out.server_cert_pem = CertPem(server.get());
  out.server_key_pem = KeyPem(server_key.get());
  out.client_cert_pem = CertPem(client.get());
  out.client_key_pem = KeyPem(client_key.get());
  return true;
}

std::string FixtureNode(std::string_view name) {
  const json& request = FixtureRequest();
  if (!request.is_object() || !request.contains("Nodes")) {
    return std::string();
  }
  json node = request["Nodes"]["items"][0];
  json& meta = node["metadata"];
  meta.erase("managedFields");
  meta.erase("resourceVersion");
  meta["name"] = name;
  meta["uid"] = NewUid();
  meta["labels"]["kubernetes.io/hostname"] = name;
  return node.dump();
}

std::string FixturePod(std::string_view pod_namespace, std::string_view name,
                       std::string_view node_name) {
  const json& request = FixtureRequest();
  if (!request.is_object() || !request.contains("Pod")) {
    return std::string();
  }
  json pod = request["Pod"];
  json& meta = pod["metadata"];
  meta.erase("managedFields");
  meta.erase("resourceVersion");
  meta["name"] = name;
  meta["namespace"] = pod_namespace;
  meta["uid"] = NewUid();
  if (!node_name.empty()) {
    pod["spec"]["nodeName"] = node_name;
    pod["status"]["phase"] = "Running";
  }
  return pod.dump();
}

std::string FixtureConfigMap(std::string_view pod_namespace, std::string_view name,
                             const std::vector<std::pair<std::string, std::string>>& data) {
  json config_map = json::object();
  config_map["kind"] = "ConfigMap";
  config_map["apiVersion"] = "v1";
  config_map["metadata"] = {{"name", name}, {"namespace", pod_namespace}, {"uid", NewUid()}};
  json values = json::object();
  for (const auto& [key, value] : data) {
    values[key] = value;
  }
  config_map["data"] = std::move(values);
  return config_map.dump();
}

std::string FakeApiServer::StatusJson(int code, std::string_view reason,
                                      std::string_view message) {
  json status = {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"metadata", json::object()},
                 {"status", code >= 200 && code < 300 ? "Success" : "Failure"}};
  if (!message.empty()) {
    status["message"] = message;
  }
  if (!reason.empty()) {
    status["reason"] = reason;
  }
  status["code"] = code;
  return status.dump();
}

// ---------------------------------------------------------------------------

struct FakeApiServer::Impl {
  static constexpr size_t kResourceCount = 4;  // FakeResource values

  // One open watch stream. Guarded by Impl::mu.
  struct Watch {
    FakeResource resource = FakeResource::kNodes;
    std::string ns;  // from a /namespaces/{ns}/ path; empty: all namespaces
    bool bookmarks = false;
    std::vector<FieldTerm> fields;
    std::deque<std::string> pending;  // bytes to send, one chunk each
    bool drop = false;
    std::string drop_with;  // sent before dropping
    bool end = false;
    Clock::time_point deadline = Clock::time_point::max();
  };
  struct HistoryEntry {
    FakeResource resource;
    uint64_t rv;
    std::string type;
    json object;  // with kind
  };
  struct Scripted {
    std::string method;
    std::string prefix;
    int status;
    std::string body;
  };

  explicit Impl(FakeApiServerOptions o) : options(std::move(o)), token(options.token) {}

  void Configure();
  bool Authorized(const httplib::Request& req) const;
  void Record(const httplib::Request& req, int status);
  void Reply(httplib::Response& res, int status, const std::string& body) {
    res.status = status;
    res.set_content(body, "application/json");
  }
  void HandleGet(const httplib::Request& req, httplib::Response& res);
  void HandlePost(const httplib::Request& req, httplib::Response& res);
  void HandlePatch(const httplib::Request& req, httplib::Response& res);
  // `ns`: the namespace of a namespaced collection path, "" for all.
  void HandleList(FakeResource r, const std::string& ns, const httplib::Request& req,
                  httplib::Response& res);
  void HandleWatch(FakeResource r, const std::string& ns, const httplib::Request& req,
                   httplib::Response& res);
  void HandlePodPatch(const std::string& ns, const std::string& name, const httplib::Request& req,
                      httplib::Response& res);
  void HandleBind(const std::string& ns, const std::string& name, const httplib::Request& req,
                  httplib::Response& res);
  bool TakeScripted(const httplib::Request& req, Scripted& out);
  // Answers with the next queued scripted reply for `req`; false when none.
  bool ReplyScripted(const httplib::Request& req, httplib::Response& res) {
    Scripted answer;
    if (!TakeScripted(req, answer)) {
      return false;
    }
    Reply(res, answer.status, answer.body);
    return true;
  }
  // Answers 401 (and records it) when `req` lacks the expected token.
  bool RefuseUnauthorized(const httplib::Request& req, httplib::Response& res) {
    if (Authorized(req)) {
      return false;
    }
    Reply(res, 401, StatusJson(401, "Unauthorized", "Unauthorized"));
    Record(req, 401);
    return true;
  }
  // Sends `bytes` to every matching watch. Caller holds mu.
  void BroadcastLocked(FakeResource r, const std::string& type, const json& object);
  std::string ApplyLocked(FakeResource r, json obj);
  // Waits until `until` or Stop(). Caller holds `lock`.
  void SleepLocked(std::unique_lock<std::mutex>& lock, Clock::time_point until) {
    cv.wait_until(lock, until, [&] { return stopping; });
  }

  const FakeApiServerOptions options;
  TestPki pki;
  std::string dir;
  std::string error;
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  int port = 0;

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool stopping = false;
  bool started = false;
  std::string token;
  uint64_t rv = 1000;
  uint64_t compacted_rv = 0;
  uint64_t continue_generation = 0;
  std::map<std::string, json> objects[kResourceCount];  // by FakeResource, sorted by key
  std::deque<HistoryEntry> history;
  std::vector<std::shared_ptr<Watch>> watches;
  size_t watch_requests[kResourceCount] = {};
  bool bind_scripted = false;
  int bind_status = 0;
  std::string bind_body;
  std::chrono::milliseconds bind_delay{0};
  std::deque<Scripted> scripted;
  std::vector<RecordedRequest> requests;
  std::vector<RecordedBinding> bindings;
};

namespace {
constexpr size_t kMaxHistory = 100000;
constexpr size_t kMaxRecords = 100000;
}  // namespace

bool FakeApiServer::Impl::Authorized(const httplib::Request& req) const {
  std::lock_guard<std::mutex> lock(mu);
  if (token.empty()) {
    return true;
  }
  return req.get_header_value("Authorization") == "Bearer " + token;
}

void FakeApiServer::Impl::Record(const httplib::Request& req, int status) {
  RecordedRequest r;
  r.method = req.method;
  r.target = req.target;
  r.authorization = req.get_header_value("Authorization");
  r.user_agent = req.get_header_value("User-Agent");
  r.content_type = req.get_header_value("Content-Type");
  r.body = req.body;
  r.status = status;
  r.received = Clock::now();
  std::lock_guard<std::mutex> lock(mu);
  if (requests.size() < kMaxRecords) {
    requests.push_back(std::move(r));
  }
}

bool FakeApiServer::Impl::TakeScripted(const httplib::Request& req, Scripted& out) {
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = scripted.begin(); it != scripted.end(); ++it) {
    if (it->method == req.method && req.target.rfind(it->prefix, 0) == 0) {
      out = std::move(*it);
      scripted.erase(it);
      return true;
    }
  }
  return false;
}

void FakeApiServer::Impl::BroadcastLocked(FakeResource r, const std::string& type,
                                          const json& object) {
  std::string line;
  for (const auto& w : watches) {
    if (w->resource != r || w->end || w->drop || !InNamespace(object, w->ns) ||
        !MatchesFields(object, w->fields)) {
      continue;
    }
    if (line.empty()) {
      line = EventLine(type, object);
    }
    w->pending.push_back(line);
  }
  cv.notify_all();
}

std::string FakeApiServer::Impl::ApplyLocked(FakeResource r, json obj) {
  const std::string key = KeyOf(r, obj);
  auto& store = objects[static_cast<int>(r)];
  const bool exists = store.count(key) != 0;
  obj = WithoutKind(obj);
  if (r != FakeResource::kNodes && StringAt(obj, {"metadata", "namespace"}).empty()) {
    obj["metadata"]["namespace"] = "default";
  }
  ++rv;
  obj["metadata"]["resourceVersion"] = std::to_string(rv);
  store[key] = obj;
  const std::string type = exists ? "MODIFIED" : "ADDED";
  json event_object = WithKind(r, obj);
  history.push_back({r, rv, type, event_object});
  if (history.size() > kMaxHistory) {
    compacted_rv = history.front().rv;
    history.pop_front();
  }
  BroadcastLocked(r, type, event_object);
  return std::to_string(rv);
}

void FakeApiServer::Impl::Configure() {
  server->set_tcp_nodelay(true);
  const size_t threads = options.threads;
  server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // Bounds how long Stop() can wait for an idle keep-alive connection.
  server->set_keep_alive_timeout(3);
  server->set_keep_alive_max_count(100000);
  server->set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    // The library would gzip JSON replies and buffer watch streams in its
    // compressor; the real API server streams watches uncompressed.
    const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server->Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
    HandleGet(req, res);
  });
  server->Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
    HandlePost(req, res);
  });
  server->Patch(".*", [this](const httplib::Request& req, httplib::Response& res) {
    HandlePatch(req, res);
  });
  server->set_exception_handler(
      [this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        Reply(res, 500, StatusJson(500, "InternalError", "fake: " + what));
      });
}

void FakeApiServer::Impl::HandleGet(const httplib::Request& req, httplib::Response& res) {
  if (RefuseUnauthorized(req, res)) {
    return;
  }
  if (ReplyScripted(req, res)) {
    Record(req, res.status);
    return;
  }
  const std::string& path = req.path;
  static const std::string kPrefix = "/api/v1/namespaces/";
  std::optional<FakeResource> collection;
  std::string collection_ns;
  if (path == "/api/v1/nodes") {
    collection = FakeResource::kNodes;
  } else if (path == "/api/v1/pods") {
    collection = FakeResource::kPods;
  } else if (path == "/api/v1/configmaps") {
    collection = FakeResource::kConfigMaps;
  } else if (path == "/apis/example.com/v1/widgets") {
    collection = FakeResource::kWidgets;
  } else if (static const std::string kWidgetPrefix = "/apis/example.com/v1/namespaces/";
             path.rfind(kWidgetPrefix, 0) == 0) {
    // /apis/example.com/v1/namespaces/{ns}/widgets
    const std::string rest = path.substr(kWidgetPrefix.size());
    const size_t slash = rest.find('/');
    if (slash != std::string::npos && slash > 0 && rest.substr(slash) == "/widgets") {
      collection = FakeResource::kWidgets;
      collection_ns = rest.substr(0, slash);
    }
  } else if (path.rfind(kPrefix, 0) == 0) {
    // /api/v1/namespaces/{ns}/configmaps
    static const std::string kSuffix = "/configmaps";
    const std::string rest = path.substr(kPrefix.size());
    if (rest.size() > kSuffix.size() &&
        rest.compare(rest.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0 &&
        rest.find('/') == rest.size() - kSuffix.size()) {
      collection = FakeResource::kConfigMaps;
      collection_ns = rest.substr(0, rest.size() - kSuffix.size());
    }
  }
  if (collection.has_value()) {
    if (IsWatchParam(req)) {
      HandleWatch(*collection, collection_ns, req, res);
    } else {
      HandleList(*collection, collection_ns, req, res);
    }
    Record(req, res.status);
    return;
  }
  // /api/v1/namespaces/{ns}/pods/{name}
  if (path.rfind(kPrefix, 0) == 0) {
    const std::string rest = path.substr(kPrefix.size());
    const size_t slash = rest.find("/pods/");
    if (slash != std::string::npos && rest.find('/', slash + 6) == std::string::npos) {
      const std::string ns = rest.substr(0, slash);
      const std::string name = rest.substr(slash + 6);
      std::unique_lock<std::mutex> lock(mu);
      auto& pods = objects[static_cast<int>(FakeResource::kPods)];
      auto it = pods.find(ns + "/" + name);
      if (it == pods.end()) {
        lock.unlock();
        Reply(res, 404, StatusJson(404, "NotFound", "pods \"" + name + "\" not found"));
      } else {
        const std::string body = WithKind(FakeResource::kPods, it->second).dump();
        lock.unlock();
        Reply(res, 200, body);
      }
      Record(req, res.status);
      return;
    }
  }
  Reply(res, 404, StatusJson(404, "NotFound", "the server could not find the requested resource"));
  Record(req, 404);
}

void FakeApiServer::Impl::HandleList(FakeResource r, const std::string& ns,
                                     const httplib::Request& req, httplib::Response& res) {
  std::vector<FieldTerm> fields;
  if (!ParseFieldSelector(req.get_param_value("fieldSelector"), fields)) {
    Reply(res, 400, StatusJson(400, "BadRequest", "fake: unsupported fieldSelector"));
    return;
  }
  size_t limit = 0;
  if (req.has_param("limit")) {
    limit = static_cast<size_t>(std::strtoull(req.get_param_value("limit").c_str(), nullptr, 10));
  }
  std::unique_lock<std::mutex> lock(mu);
  uint64_t list_rv = rv;
  std::string after;
  bool has_after = false;
  if (req.has_param("continue") && !req.get_param_value("continue").empty()) {
    // Token: base64url("<rv>:<generation>:<last key>"), as opaque to clients
    // as the real server's base64url JSON.
    std::string decoded;
    unsigned long long token_rv = 0;
    unsigned long long token_gen = 0;
    int consumed = 0;
    if (!Base64UrlDecode(req.get_param_value("continue"), decoded) ||
        std::sscanf(decoded.c_str(), "%llu:%llu:%n", &token_rv, &token_gen, &consumed) != 2 ||
        consumed == 0) {
      lock.unlock();
      Reply(res, 400,
            StatusJson(400, "BadRequest", "invalid continue token: continue key is not valid"));
      return;
    }
    if (token_gen != continue_generation || token_rv < compacted_rv) {
      lock.unlock();
      Reply(res, 410,
            StatusJson(410, "Expired",
                       "The provided continue parameter is too old to display a consistent list "
                       "result. You can start a new list without the continue parameter, or use "
                       "the continue token in this response to retrieve the remainder of the "
                       "results. Continuing with the provided token results in an inconsistent "
                       "list - objects that were created, modified, or deleted between the time "
                       "the first chunk was returned and now may show up in the list."));
      return;
    }
    list_rv = token_rv;
    after = decoded.substr(static_cast<size_t>(consumed));
    has_after = true;
  }
  const auto& store = objects[static_cast<int>(r)];
  json items = json::array();
  std::string last_key;
  bool more = false;
  size_t remaining = 0;
  for (auto it = has_after ? store.upper_bound(after) : store.begin(); it != store.end(); ++it) {
    if (!InNamespace(it->second, ns) || !MatchesFields(it->second, fields)) {
      continue;
    }
    if (limit > 0 && items.size() == limit) {
      more = true;
      ++remaining;
      continue;
    }
    items.push_back(it->second);
    last_key = it->first;
  }
  json list = json::object();
  list["kind"] = ListKindOf(r);
  list["apiVersion"] = ApiVersionOf(r);
  list["metadata"] = {{"resourceVersion", std::to_string(list_rv)}};
  if (more) {
    list["metadata"]["continue"] = Base64UrlEncode(std::to_string(list_rv) + ":" +
                                                   std::to_string(continue_generation) + ":" +
                                                   last_key);
    list["metadata"]["remainingItemCount"] = remaining;
  }
  list["items"] = std::move(items);
  lock.unlock();
  Reply(res, 200, list.dump());
}

void FakeApiServer::Impl::HandleWatch(FakeResource r, const std::string& ns,
                                      const httplib::Request& req, httplib::Response& res) {
  auto w = std::make_shared<Watch>();
  w->resource = r;
  w->ns = ns;
  w->bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
  if (!ParseFieldSelector(req.get_param_value("fieldSelector"), w->fields)) {
    Reply(res, 400, StatusJson(400, "BadRequest", "fake: unsupported fieldSelector"));
    return;
  }
  if (req.has_param("timeoutSeconds")) {
    const long long seconds = std::strtoll(req.get_param_value("timeoutSeconds").c_str(), nullptr, 10);
    if (seconds > 0) {
      w->deadline = Clock::now() + std::chrono::seconds(seconds);
    }
  }
  const std::string rv_param = req.get_param_value("resourceVersion");
  {
    std::lock_guard<std::mutex> lock(mu);
    ++watch_requests[static_cast<int>(r)];
    if (rv_param.empty() || rv_param == "0") {
      // "Start at most recent" / "any": synthetic ADDED for what exists.
      for (const auto& [key, obj] : objects[static_cast<int>(r)]) {
        if (InNamespace(obj, ns) && MatchesFields(obj, w->fields)) {
          w->pending.push_back(EventLine("ADDED", WithKind(r, obj)));
        }
      }
    } else {
      const uint64_t from = std::strtoull(rv_param.c_str(), nullptr, 10);
      if (from < compacted_rv) {
        json status = json::parse(StatusJson(
            410, "Expired",
            "too old resource version: " + rv_param + " (" + std::to_string(compacted_rv) + ")"));
        w->pending.push_back(EventLine("ERROR", status));
        w->end = true;
      } else {
        for (const HistoryEntry& e : history) {
          if (e.resource == r && e.rv > from && InNamespace(e.object, ns) &&
              MatchesFields(e.object, w->fields)) {
            w->pending.push_back(EventLine(e.type, e.object));
          }
        }
      }
    }
    watches.push_back(w);
    cv.notify_all();
  }
  res.status = 200;
  res.set_chunked_content_provider(
      "application/json",
      [this, w](size_t, httplib::DataSink& sink) -> bool {
        std::unique_lock<std::mutex> lock(mu);
        for (;;) {
          if (stopping) {
            return false;
          }
          if (!w->pending.empty()) {
            std::deque<std::string> out;
            out.swap(w->pending);
            lock.unlock();
            for (const std::string& chunk : out) {
              if (!sink.write(chunk.data(), chunk.size())) {
                return false;
              }
            }
            return true;
          }
          if (w->drop) {
            const std::string partial = w->drop_with;
            lock.unlock();
            if (!partial.empty()) {
              sink.write(partial.data(), partial.size());
            }
            return false;  // the library closes without the last chunk
          }
          if (w->end || Clock::now() >= w->deadline) {
            w->end = true;
            lock.unlock();
            sink.done();
            return true;
          }
          cv.wait_until(lock, std::min(w->deadline, Clock::now() + std::chrono::milliseconds(200)));
        }
      },
      [this, w](bool) {
        std::lock_guard<std::mutex> lock(mu);
        watches.erase(std::remove(watches.begin(), watches.end(), w), watches.end());
        cv.notify_all();
      });
}

void FakeApiServer::Impl::HandlePost(const httplib::Request& req, httplib::Response& res) {
  if (RefuseUnauthorized(req, res)) {
    return;
  }
  static const std::string kPrefix = "/api/v1/namespaces/";
  const std::string& path = req.path;
  if (path.rfind(kPrefix, 0) == 0) {
    const std::string rest = path.substr(kPrefix.size());
    const size_t pods = rest.find("/pods/");
    const std::string kSuffix = "/binding";
    if (pods != std::string::npos && rest.size() > kSuffix.size() &&
        rest.compare(rest.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
      const std::string ns = rest.substr(0, pods);
      const std::string name =
          rest.substr(pods + 6, rest.size() - kSuffix.size() - (pods + 6));
      if (!name.empty() && name.find('/') == std::string::npos) {
        HandleBind(ns, name, req, res);
        Record(req, res.status);
        return;
      }
    }
  }
  if (!ReplyScripted(req, res)) {
    Reply(res, 404,
          StatusJson(404, "NotFound", "the server could not find the requested resource"));
  }
  Record(req, res.status);
}

void FakeApiServer::Impl::HandlePatch(const httplib::Request& req, httplib::Response& res) {
  if (RefuseUnauthorized(req, res)) {
    return;
  }
  if (ReplyScripted(req, res)) {
    Record(req, res.status);
    return;
  }
  // /api/v1/namespaces/{ns}/pods/{name}
  static const std::string kPrefix = "/api/v1/namespaces/";
  const std::string& path = req.path;
  if (path.rfind(kPrefix, 0) == 0) {
    const std::string rest = path.substr(kPrefix.size());
    const size_t pods = rest.find("/pods/");
    if (pods != std::string::npos && pods > 0 && pods + 6 < rest.size() &&
        rest.find('/', pods + 6) == std::string::npos) {
      HandlePodPatch(rest.substr(0, pods), rest.substr(pods + 6), req, res);
      Record(req, res.status);
      return;
    }
  }
  Reply(res, 404, StatusJson(404, "NotFound", "the server could not find the requested resource"));
  Record(req, 404);
}

// The API server's PATCH of a pod, for JSON merge patches only (RFC 7386).
// metadata.resourceVersion in the patch is a precondition (409 Conflict when
// it differs: the real server merges it into the object and the storage
// layer's optimistic concurrency refuses it). metadata.uid is no storage
// precondition for a PATCH (only PUT and the Binding have one): a different
// uid is merged in and fails validation, 422 Invalid "field is immutable"
// (checked against kube-apiserver 1.26 in test/control_plane/). The
// resourceVersion is checked first, as the real server does.
void FakeApiServer::Impl::HandlePodPatch(const std::string& ns, const std::string& name,
                                         const httplib::Request& req, httplib::Response& res) {
  const std::string media_type = MediaType(req.get_header_value("Content-Type"));
  if (media_type != "application/merge-patch+json") {
    // The real server also accepts json-patch, strategic-merge and apply
    // patches; the fake does not implement them.
    Reply(res, 415, StatusJson(415, "UnsupportedMediaType", "415: Unsupported Media Type"));
    return;
  }
  json patch = json::parse(req.body, nullptr, false);
  if (!patch.is_object()) {
    // Go's encoding/json words; a parse error's exact text is not imitated.
    const char* type = patch.is_array()    ? "array"
                       : patch.is_string() ? "string"
                       : patch.is_number() ? "number"
                       : patch.is_boolean() ? "bool"
                                            : nullptr;
    Reply(res, 400,
          StatusJson(400, "BadRequest",
                     type != nullptr ? std::string("error decoding patch: json: cannot unmarshal ") +
                                           type + " into Go value of type map[string]interface {}"
                                     : std::string("error decoding patch: invalid JSON")));
    return;
  }
  std::string uid;
  std::string resource_version;
  if (patch.contains("metadata") && patch["metadata"].is_object()) {
    json& meta = patch["metadata"];
    uid = StringAt(patch, {"metadata", "uid"});
    resource_version = StringAt(patch, {"metadata", "resourceVersion"});
    meta.erase("uid");
    meta.erase("resourceVersion");
  }
  std::unique_lock<std::mutex> lock(mu);
  const auto& pods = objects[static_cast<int>(FakeResource::kPods)];
  auto it = pods.find(ns + "/" + name);
  if (it == pods.end()) {
    lock.unlock();
    Reply(res, 404, StatusJson(404, "NotFound", "pods \"" + name + "\" not found"));
    return;
  }
  const std::string conflict = "Operation cannot be fulfilled on pods \"" + name + "\": ";
  const std::string stored_uid = StringAt(it->second, {"metadata", "uid"});
  if (!resource_version.empty() &&
      resource_version != StringAt(it->second, {"metadata", "resourceVersion"})) {
    lock.unlock();
    Reply(res, 409,
          StatusJson(409, "Conflict",
                     conflict + "the object has been modified; please apply your changes to the "
                                "latest version and try again"));
    return;
  }
  if (!uid.empty() && uid != stored_uid) {
    // ValidateObjectMetaUpdate's answer (the real Status also has
    // details.causes, not imitated).
    lock.unlock();
    Reply(res, 422,
          StatusJson(422, "Invalid",
                     "Pod \"" + name + "\" is invalid: metadata.uid: Invalid value: \"" + uid +
                         "\": field is immutable"));
    return;
  }
  json updated = it->second;
  updated.merge_patch(patch);
  if (StringAt(updated, {"metadata", "name"}) != name) {
    lock.unlock();
    Reply(res, 400,
          StatusJson(400, "BadRequest",
                     "the name of the object (" + StringAt(updated, {"metadata", "name"}) +
                         ") does not match the name on the URL (" + name + ")"));
    return;
  }
  if (StringAt(updated, {"metadata", "namespace"}) != ns) {
    lock.unlock();
    Reply(res, 400,
          StatusJson(400, "BadRequest",
                     "the namespace of the provided object does not match the namespace sent on "
                     "the request"));
    return;
  }
  ApplyLocked(FakeResource::kPods, std::move(updated));
  const std::string body = WithKind(FakeResource::kPods, pods.at(ns + "/" + name)).dump();
  lock.unlock();
  Reply(res, 200, body);
}

void FakeApiServer::Impl::HandleBind(const std::string& ns, const std::string& name,
                                     const httplib::Request& req, httplib::Response& res) {
  auto record = [&](int status) {
    std::lock_guard<std::mutex> lock(mu);
    if (bindings.size() < kMaxRecords) {
      bindings.push_back({ns, name, req.body, status});
    }
  };
  if (ReplyScripted(req, res)) {
    record(res.status);
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    if (bind_scripted) {
      const int status = bind_status;
      const std::string body = bind_body;
      SleepLocked(lock, Clock::now() + bind_delay);
      if (stopping) {
        return;  // the reply will not be written anyway
      }
      lock.unlock();
      Reply(res, status, body);
      record(status);
      return;
    }
  }
  // Default: the API server's pods/binding semantics (BindingREST.Create).
  const json binding = json::parse(req.body, nullptr, false);
  if (!binding.is_object()) {
    // The start of the real decoder's message (its JSON error is not imitated).
    Reply(res, 400,
          StatusJson(400, "BadRequest",
                     "the object provided is unrecognized (must be of type Binding): couldn't "
                     "get version/kind; json parse error"));
    record(400);
    return;
  }
  if (StringAt(binding, {"metadata", "name"}) != name) {
    Reply(res, 400,
          StatusJson(400, "BadRequest", "name in URL does not match name in Binding object"));
    record(400);
    return;
  }
  const std::string target_kind = StringAt(binding, {"target", "kind"});
  const std::string node = StringAt(binding, {"target", "name"});
  if ((!target_kind.empty() && target_kind != "Node") || node.empty()) {
    // BindingREST returns its validation error unwrapped: a 500 without a
    // reason, not a 422.
    const std::string message =
        node.empty() ? std::string("target.name: Required value")
                     : "target.kind: Unsupported value: \"" + target_kind +
                           "\": supported values: \"Node\", \"<empty>\"";
    Reply(res, 500, StatusJson(500, "", message));
    record(500);
    return;
  }
  std::unique_lock<std::mutex> lock(mu);
  auto& pods = objects[static_cast<int>(FakeResource::kPods)];
  auto it = pods.find(ns + "/" + name);
  int status = 201;
  std::string body;
  const std::string conflict = "Operation cannot be fulfilled on pods/binding \"" + name + "\": ";
  if (it == pods.end()) {
    status = 404;
    body = StatusJson(404, "NotFound", "pods \"" + name + "\" not found");
  } else {
    const json& pod = it->second;
    const std::string uid = StringAt(binding, {"metadata", "uid"});
    const std::string pod_uid = StringAt(pod, {"metadata", "uid"});
    const std::string assigned = StringAt(pod, {"spec", "nodeName"});
    if (!uid.empty() && uid != pod_uid) {
      // The storage layer's precondition (etcd3 checkPreconditions inside a
      // StorageError), worded for "pods", not "pods/binding".
      status = 409;
      body = StatusJson(409, "Conflict",
                        "Operation cannot be fulfilled on pods \"" + name +
                            "\": StorageError: invalid object, Code: 4, Key: /registry/pods/" +
                            ns + "/" + name +
                            ", ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID "
                            "in precondition: " +
                            uid + ", UID in object meta: " + pod_uid);
    } else if (!StringAt(pod, {"metadata", "deletionTimestamp"}).empty()) {
      status = 409;
      body = StatusJson(409, "Conflict",
                        conflict + "pod " + name + " is being deleted, cannot be assigned to a host");
    } else if (!assigned.empty()) {
      status = 409;
      body = StatusJson(409, "Conflict",
                        conflict + "pod " + name + " is already assigned to node \"" + assigned +
                            "\"");
    } else {
      json updated = pod;
      updated["spec"]["nodeName"] = node;
      if (binding.contains("metadata") && binding["metadata"].contains("annotations") &&
          binding["metadata"]["annotations"].is_object()) {
        for (const auto& [k, v] : binding["metadata"]["annotations"].items()) {
          updated["metadata"]["annotations"][k] = v;
        }
      }
      json& conditions = updated["status"]["conditions"];
      if (!conditions.is_array()) {
        conditions = json::array();
      }
      conditions.push_back({{"type", "PodScheduled"}, {"status", "True"}});
      ApplyLocked(FakeResource::kPods, std::move(updated));
      body = StatusJson(201, "", "");
    }
  }
  lock.unlock();
  Reply(res, status, body);
  record(status);
}

// ---------------------------------------------------------------------------

FakeApiServer::FakeApiServer(FakeApiServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

FakeApiServer::~FakeApiServer() {
  Stop();
  if (!impl_->dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(impl_->dir, ec);
  }
}

bool FakeApiServer::Start() {
  Impl& m = *impl_;
  if (m.started) {
    m.error = "already started";
    return false;
  }
  if (!GenerateTestPki(m.pki, m.error)) {
    return false;
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "fake-apiserver-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    m.error = "mkdtemp failed";
    return false;
  }
  m.dir = tmpl;
  auto write = [&](const char* file, const std::string& text) {
    std::ofstream out(m.dir + "/" + file, std::ios::binary);
    out << text;
    return static_cast<bool>(out);
  };
  if (!write("ca.crt", m.pki.ca_cert_pem) || !write("client.crt", m.pki.client_cert_pem) ||
      !write("client.key", m.pki.client_key_pem) || !write("server.crt", m.pki.server_cert_pem) ||
      !write("server.key", m.pki.server_key_pem)) {
    m.error = "cannot write the PKI files under " + m.dir;
    return false;
  }
  if (m.options.tls) {
    const TestPki pki = m.pki;
    const bool mtls = m.options.require_client_cert;
    auto ssl = std::make_unique<httplib::SSLServer>([pki, mtls](SSL_CTX& ctx) {
      X509Ptr cert = CertFromPem(pki.server_cert_pem);
      PkeyPtr key = KeyFromPem(pki.server_key_pem);
      if (!cert || !key || SSL_CTX_use_certificate(&ctx, cert.get()) != 1 ||
          SSL_CTX_use_PrivateKey(&ctx, key.get()) != 1) {
        return false;
      }
      if (mtls) {
        X509Ptr ca = CertFromPem(pki.ca_cert_pem);
        X509_STORE* store = X509_STORE_new();
        if (!ca || store == nullptr || X509_STORE_add_cert(store, ca.get()) != 1) {
          X509_STORE_free(store);
          return false;
        }
        SSL_CTX_set_cert_store(&ctx, store);  // takes ownership
        SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      }
      return true;
    });
    if (!ssl->is_valid()) {
      m.error = OpenSslError("configure the TLS server");
      return false;
    }
    m.server = std::move(ssl);
  } else {
    m.server = std::make_unique<httplib::Server>();
  }
  m.Configure();
  m.port = m.server->bind_to_any_port("127.0.0.1");
  if (m.port <= 0) {
    m.error = "cannot bind 127.0.0.1:0";
    return false;
  }
  m.thread = std::thread([&m] { m.server->listen_after_bind(); });
  // stop() only acts once the accept loop runs; wait for it (bounded).
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!m.server->is_running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  m.started = true;
  if (!m.server->is_running()) {
    m.error = "the server did not start";
    return false;
  }
  return true;
}

void FakeApiServer::Stop() {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.stopping = true;
    m.cv.notify_all();
  }
  if (m.server) {
    m.server->stop();
  }
  if (m.thread.joinable()) {
    m.thread.join();
  }
}

const std::string& FakeApiServer::error() const { return impl_->error; }
int FakeApiServer::port() const { return impl_->port; }
std::string FakeApiServer::url() const {
  return std::string(impl_->options.tls ? "https" : "http") + "://127.0.0.1:" +
         std::to_string(impl_->port);
}
const TestPki& FakeApiServer::pki() const { return impl_->pki; }
const std::string& FakeApiServer::ca_pem() const { return impl_->pki.ca_cert_pem; }
const std::string& FakeApiServer::dir() const { return impl_->dir; }
std::string FakeApiServer::ca_file() const { return impl_->dir + "/ca.crt"; }
std::string FakeApiServer::client_cert_file() const { return impl_->dir + "/client.crt"; }
std::string FakeApiServer::client_key_file() const { return impl_->dir + "/client.key"; }

void FakeApiServer::SetToken(std::string token) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->token = std::move(token);
}

std::string FakeApiServer::token() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->token;
}

std::string FakeApiServer::Apply(FakeResource resource, std::string_view object_json) {
  json obj = json::parse(object_json, nullptr, false);
  if (!obj.is_object() || StringAt(obj, {"metadata", "name"}).empty()) {
    return std::string();
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->ApplyLocked(resource, std::move(obj));
}

std::string FakeApiServer::Delete(FakeResource resource, std::string_view pod_namespace,
                                  std::string_view name) {
  Impl& m = *impl_;
  const std::string key = StoreKey(resource, pod_namespace, name);
  std::lock_guard<std::mutex> lock(m.mu);
  auto& store = m.objects[static_cast<int>(resource)];
  auto it = store.find(key);
  if (it == store.end()) {
    return std::string();
  }
  json obj = std::move(it->second);
  store.erase(it);
  ++m.rv;
  obj["metadata"]["resourceVersion"] = std::to_string(m.rv);
  json event_object = WithKind(resource, obj);
  m.history.push_back({resource, m.rv, "DELETED", event_object});
  if (m.history.size() > kMaxHistory) {
    m.compacted_rv = m.history.front().rv;
    m.history.pop_front();
  }
  m.BroadcastLocked(resource, "DELETED", event_object);
  return std::to_string(m.rv);
}

std::string FakeApiServer::Get(FakeResource resource, std::string_view pod_namespace,
                               std::string_view name) const {
  const std::string key = StoreKey(resource, pod_namespace, name);
  std::lock_guard<std::mutex> lock(impl_->mu);
  const auto& store = impl_->objects[static_cast<int>(resource)];
  auto it = store.find(key);
  return it == store.end() ? std::string() : WithKind(resource, it->second).dump();
}

size_t FakeApiServer::ObjectCount(FakeResource resource) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->objects[static_cast<int>(resource)].size();
}

std::string FakeApiServer::resource_version() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return std::to_string(impl_->rv);
}

void FakeApiServer::PushWatchEvent(FakeResource resource, std::string_view type,
                                   std::string_view object_json) {
  std::string line = "{\"type\":";
  line += json(std::string(type)).dump();
  line += ",\"object\":";
  line += object_json;
  line += "}\n";
  PushWatchBytes(resource, std::move(line));
}

void FakeApiServer::PushWatchBytes(FakeResource resource, std::string bytes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const auto& w : impl_->watches) {
    if (w->resource == resource && !w->end && !w->drop) {
      w->pending.push_back(bytes);
    }
  }
  impl_->cv.notify_all();
}

void FakeApiServer::PushBookmark(FakeResource resource) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  // The real watch cache sends an empty object of the kind as Go encodes it
  // (creationTimestamp null, the fields without omitempty), with only the
  // resourceVersion set. The Node's is as seen from kube-apiserver 1.26; the
  // Pod's and ConfigMap's follow from the same encoding.
  json object = {{"kind", KindOf(resource)},
                 {"apiVersion", ApiVersionOf(resource)},
                 {"metadata",
                  {{"resourceVersion", std::to_string(impl_->rv)}, {"creationTimestamp", nullptr}}}};
  if (resource == FakeResource::kNodes) {
    object["spec"] = json::object();
    object["status"] = {{"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 0}}}}},
                        {"nodeInfo",
                         {{"machineID", ""},
                          {"systemUUID", ""},
                          {"bootID", ""},
                          {"kernelVersion", ""},
                          {"osImage", ""},
                          {"containerRuntimeVersion", ""},
                          {"kubeletVersion", ""},
                          {"kubeProxyVersion", ""},
                          {"operatingSystem", ""},
                          {"architecture", ""}}}};
  } else if (resource == FakeResource::kPods) {
    object["spec"] = {{"containers", nullptr}};
    object["status"] = json::object();
  }
  const std::string line = EventLine("BOOKMARK", object);
  for (const auto& w : impl_->watches) {
    if (w->resource == resource && w->bookmarks && !w->end && !w->drop) {
      w->pending.push_back(line);
    }
  }
  impl_->cv.notify_all();
}

void FakeApiServer::PushGone(FakeResource resource) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  json status = json::parse(StatusJson(410, "Expired", "too old resource version"));
  const std::string line = EventLine("ERROR", status);
  for (const auto& w : impl_->watches) {
    if (w->resource == resource && !w->end && !w->drop) {
      w->pending.push_back(line);
      w->end = true;
    }
  }
  impl_->cv.notify_all();
}

void FakeApiServer::DropWatches(bool mid_event) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const auto& w : impl_->watches) {
    w->drop = true;
    if (mid_event) {
      w->drop_with = "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"";
    }
  }
  impl_->cv.notify_all();
}

void FakeApiServer::EndWatches() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const auto& w : impl_->watches) {
    w->end = true;
  }
  impl_->cv.notify_all();
}

void FakeApiServer::Compact() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->history.clear();
  impl_->compacted_rv = impl_->rv;
}

void FakeApiServer::ExpireContinueTokens() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  ++impl_->continue_generation;
}

size_t FakeApiServer::watch_count(FakeResource resource) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<size_t>(std::count_if(
      impl_->watches.begin(), impl_->watches.end(),
      [&](const auto& w) { return w->resource == resource && !w->end && !w->drop; }));
}

bool FakeApiServer::WaitForWatches(FakeResource resource, size_t n,
                                   std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->cv.wait_for(lock, timeout, [&] {
    return static_cast<size_t>(std::count_if(impl_->watches.begin(), impl_->watches.end(),
                                             [&](const auto& w) {
                                               return w->resource == resource && !w->end &&
                                                      !w->drop;
                                             })) >= n;
  });
}

bool FakeApiServer::WaitForWatchRequests(FakeResource resource, size_t n,
                                         std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->cv.wait_for(
      lock, timeout, [&] { return impl_->watch_requests[static_cast<int>(resource)] >= n; });
}

void FakeApiServer::SetBindResponse(int status, std::string body,
                                    std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->bind_scripted = true;
  impl_->bind_status = status;
  impl_->bind_body = std::move(body);
  impl_->bind_delay = delay;
}

void FakeApiServer::ClearBindResponse() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->bind_scripted = false;
}

void FakeApiServer::QueueResponse(std::string method, std::string target_prefix, int status,
                                  std::string body) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->scripted.push_back({std::move(method), std::move(target_prefix), status, std::move(body)});
}

std::vector<RecordedRequest> FakeApiServer::requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->requests;
}

std::vector<RecordedBinding> FakeApiServer::bindings() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->bindings;
}

void FakeApiServer::ClearRecords() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->requests.clear();
  impl_->bindings.clear();
}

// --- FaultProxy ---------------------------------------------------------------

struct FaultProxy::Impl {
  explicit Impl(int backend) : backend_port(backend) {}

  void AcceptLoop();
  void Relay(int client, int backend);
  // Closes `fd` with an RST instead of a FIN.
  static void Reset(int fd) {
    linger l{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close(fd);
  }
  static bool SendAll(int fd, const char* data, size_t size) {
    while (size > 0) {
      const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
      if (n <= 0) {
        return false;
      }
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }

  const int backend_port;
  std::string error;
  int listen_fd = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::thread acceptor;

  mutable std::mutex mu;
  std::vector<std::thread> relays;  // guarded by mu
  std::chrono::milliseconds idle_reset{0};
  int reset_new = 0;
  bool cut_armed = false;
  size_t cut_after = 0;
  size_t connections = 0;
  size_t idle_resets = 0;
  size_t new_resets = 0;
  size_t cuts = 0;
};

void FaultProxy::Impl::AcceptLoop() {
  while (!stopping.load()) {
    pollfd p{listen_fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) {
      continue;
    }
    const int client = accept(listen_fd, nullptr, nullptr);
    if (client < 0) {
      continue;
    }
    const int backend = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(backend_port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (backend < 0 || connect(backend, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      if (backend >= 0) {
        close(backend);
      }
      close(client);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu);
    ++connections;
    relays.emplace_back([this, client, backend] { Relay(client, backend); });
  }
}

void FaultProxy::Impl::Relay(int client, int backend) {
  bool fresh = true;
  Clock::time_point last = Clock::now();
  bool cutting = false;
  size_t cut_left = 0;
  char buf[64 * 1024];
  bool client_open = true;
  while (!stopping.load()) {
    pollfd p[2] = {{client, POLLIN, 0}, {backend, POLLIN, 0}};
    const int n = poll(p, 2, 50);
    if (n < 0) {
      break;
    }
    if (n == 0) {
      continue;
    }
    if (p[0].revents != 0) {
      const ssize_t got = recv(client, buf, sizeof(buf), 0);
      if (got <= 0) {
        break;
      }
      bool reset = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (fresh && reset_new > 0) {
          --reset_new;
          ++new_resets;
          reset = true;
        } else if (!fresh && idle_reset.count() > 0 && Clock::now() - last >= idle_reset) {
          ++idle_resets;
          reset = true;
        } else if (cut_armed) {
          cut_armed = false;
          cutting = true;
          cut_left = cut_after;
        }
      }
      fresh = false;
      if (reset) {
        Reset(client);
        client_open = false;
        break;
      }
      if (!SendAll(backend, buf, static_cast<size_t>(got))) {
        break;
      }
      last = Clock::now();
    }
    if (p[1].revents != 0) {
      const ssize_t got = recv(backend, buf, sizeof(buf), 0);
      if (got <= 0) {
        break;
      }
      size_t forward = static_cast<size_t>(got);
      if (cutting) {
        forward = std::min(forward, cut_left);
        cut_left -= forward;
      }
      if (!SendAll(client, buf, forward)) {
        break;
      }
      last = Clock::now();
      if (cutting && cut_left == 0) {
        {
          std::lock_guard<std::mutex> lock(mu);
          ++cuts;
        }
        // Let the forwarded bytes reach the client before the RST does.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        Reset(client);
        client_open = false;
        break;
      }
    }
  }
  if (client_open) {
    close(client);
  }
  close(backend);
}

FaultProxy::FaultProxy(int backend_port) : impl_(std::make_unique<Impl>(backend_port)) {}
FaultProxy::~FaultProxy() { Stop(); }

bool FaultProxy::Start() {
  Impl& m = *impl_;
  m.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (m.listen_fd < 0 || bind(m.listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(m.listen_fd, 64) != 0 ||
      getsockname(m.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    m.error = std::string("cannot listen on 127.0.0.1:0: ") + std::strerror(errno);
    return false;
  }
  m.port = ntohs(addr.sin_port);
  m.acceptor = std::thread([&m] { m.AcceptLoop(); });
  return true;
}

void FaultProxy::Stop() {
  Impl& m = *impl_;
  m.stopping.store(true);
  if (m.acceptor.joinable()) {
    m.acceptor.join();
  }
  std::vector<std::thread> relays;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    relays.swap(m.relays);
  }
  for (std::thread& t : relays) {
    t.join();
  }
  if (m.listen_fd >= 0) {
    close(m.listen_fd);
    m.listen_fd = -1;
  }
}

const std::string& FaultProxy::error() const { return impl_->error; }
int FaultProxy::port() const { return impl_->port; }
std::string FaultProxy::url(bool tls) const {
  return std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(impl_->port);
}
void FaultProxy::SetIdleReset(std::chrono::milliseconds idle) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->idle_reset = idle;
}
void FaultProxy::ResetNewConnections(int n) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->reset_new = n;
}
void FaultProxy::CutNextResponseAfter(size_t bytes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->cut_armed = true;
  impl_->cut_after = bytes;
}
size_t FaultProxy::connections() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->connections;
}
size_t FaultProxy::idle_resets() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->idle_resets;
}
size_t FaultProxy::new_connection_resets() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->new_resets;
}
size_t FaultProxy::cut_responses() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->cuts;
}

}  // namespace schedext::testing
