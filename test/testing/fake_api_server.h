// FakeApiServer: a small kube-apiserver on the loopback interface for tests of
// the API client, the binder and the informer. No kube-apiserver is packaged
// for Debian, so this speaks the few parts of the API schedext uses:
//
//   * TLS (httplib::SSLServer) with a CA, server and client certificate the
//     fake generates at start (OpenSSL 3), or plain HTTP; optional mTLS.
//   * `Authorization: Bearer <token>` checked on every request (401 with a
//     Status body otherwise); SetToken() changes it at run time (rotation).
//   * LIST /api/v1/nodes, /api/v1/pods, /api/v1/configmaps and
//     /api/v1/namespaces/{ns}/configmaps (that namespace only) with
//     `limit`/`continue` pagination and metadata.resourceVersion (one counter
//     for the whole fake, as etcd's).
//   * WATCH the same paths (`?watch=1&resourceVersion=R&allowWatchBookmarks=
//     true&timeoutSeconds=S`): a chunked 200 stream of one JSON event per line.
//     Changes made through Apply/Delete after R are replayed first (the fake
//     keeps their history), then live ones follow. A watch from an R older
//     than the last Compact() gets an ERROR event with a 410 Status, as the
//     real server's watch cache answers "too old resource version".
//   * GET /api/v1/namespaces/{ns}/pods/{name}.
//   * PATCH /api/v1/namespaces/{ns}/pods/{name} with a JSON merge patch
//     (RFC 7386; Content-Type application/merge-patch+json, 415 otherwise):
//     metadata.resourceVersion in the patch is a precondition (409 Conflict
//     "the object has been modified" when it differs), a different
//     metadata.uid is refused as the real validation does (422 Invalid
//     "metadata.uid: ... field is immutable"; neither is ever written), the
//     rest is merged, the resource version bumped, MODIFIED sent to pod
//     watches, 200 with the pod; 404 for an unknown pod.
//   * POST /api/v1/namespaces/{ns}/pods/{name}/binding: by default with the
//     API server's semantics (201 + Success Status, sets spec.nodeName and
//     emits MODIFIED; 404 when the pod is unknown; 409 "already assigned";
//     409 for a Binding whose metadata.uid differs (the storage
//     precondition); 400 on a name mismatch; 500 for a bad target, as the
//     real BindingREST answers); SetBindResponse() scripts the answer instead.
//   The wordings of these answers were checked against kube-apiserver 1.26
//   (test/control_plane/cluster_api_test.cc asserts the real ones).
//
// Typical use:
//
//   FakeApiServer api;                       // TLS, token "test-token"
//   ASSERT_TRUE(api.Start()) << api.error();
//   api.AddNode(FixtureNode("n1"));
//   ... point a client at api.url() with CA api.ca_pem() and api.token() ...
//   ASSERT_TRUE(api.WaitForWatches(FakeResource::kNodes, 1, 5s));
//   api.AddPod(FixturePod("default", "p1", "n1"));   // ADDED to the watcher
//   api.DropWatches();                               // the client must resume
//
// Everything is bounded: handlers that wait (watch streams, delayed binds)
// wake up on Stop(), which ends every stream and joins the server thread; the
// destructor calls Stop(). Thread-safety: every method may be called from any
// thread while the server runs.
#ifndef SCHEDEXT_TEST_TESTING_FAKE_API_SERVER_H_
#define SCHEDEXT_TEST_TESTING_FAKE_API_SERVER_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace schedext::testing {

// PEM text of a throwaway PKI: a CA, a server certificate for 127.0.0.1 /
// ::1 / localhost signed by it, and a client certificate (clientAuth) signed
// by it. Keys are EC P-256.
struct TestPki {
  std::string ca_cert_pem;
  std::string ca_key_pem;
  std::string server_cert_pem;
  std::string server_key_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
};

// Generates a fresh TestPki, with `common_name_prefix` in each subject (two
// calls give unrelated CAs: used for "wrong CA" tests). False with a message
// in `error` on an OpenSSL failure.
bool GenerateTestPki(TestPki& out, std::string& error,
                     std::string_view common_name_prefix = "schedext-test");

// A node object from the recorded kube-scheduler 1.26 fixtures (as the API
// server serves it: metadata, spec, status), renamed to `name` with a fresh
// uid and without managedFields.
std::string FixtureNode(std::string_view name);
// A pod object from the fixtures (requests cpu 500m / memory 512Mi), renamed,
// with a fresh uid and `spec.nodeName` set unless `node_name` is empty.
std::string FixturePod(std::string_view pod_namespace, std::string_view name,
                       std::string_view node_name = "");
// A ConfigMap with a fresh uid and `data` (in that order).
std::string FixtureConfigMap(std::string_view pod_namespace, std::string_view name,
                             const std::vector<std::pair<std::string, std::string>>& data);

// kWidgets: a namespaced custom resource, example.com/v1 Widget, served where
// a CRD's objects are: /apis/example.com/v1/widgets and
// /apis/example.com/v1/namespaces/{ns}/widgets.
enum class FakeResource { kNodes, kPods, kConfigMaps, kWidgets };

struct FakeApiServerOptions {
  bool tls = true;
  // The bearer token every request must carry; empty disables the check.
  std::string token = "test-token";
  // With TLS: refuse clients without a certificate signed by the fake's CA.
  bool require_client_cert = false;
  // Worker threads; each open watch stream pins one.
  size_t threads = 32;
};

// One request as received (after authentication, or refused by it).
struct RecordedRequest {
  std::string method;
  std::string target;         // path and query, as sent
  std::string authorization;  // the Authorization header, "" when absent
  std::string user_agent;
  std::string content_type;
  std::string body;
  int status = 0;  // what the fake answered (200 for a watch stream)
  std::chrono::steady_clock::time_point received;
};

// One POST .../binding that passed authentication.
struct RecordedBinding {
  std::string pod_namespace;  // from the URL
  std::string pod_name;       // from the URL
  std::string body;           // as sent
  int status = 0;             // what the fake answered
};

class FakeApiServer {
 public:
  explicit FakeApiServer(FakeApiServerOptions options = {});
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // Generates the PKI (written as PEM files under dir()), binds 127.0.0.1:0
  // and serves on a thread. False with error() on failure.
  bool Start();
  // Ends every watch stream and delayed reply, stops and joins. Idempotent.
  void Stop();

  const std::string& error() const;
  int port() const;
  // "https://127.0.0.1:<port>" (or http:// without TLS).
  std::string url() const;

  // The PKI (valid after Start()), as PEM text and as files in dir():
  // ca.crt, client.crt, client.key. dir() is removed by the destructor.
  const TestPki& pki() const;
  const std::string& ca_pem() const;
  const std::string& dir() const;
  std::string ca_file() const;
  std::string client_cert_file() const;
  std::string client_key_file() const;

  // The expected bearer token (thread-safe; takes effect for the next request).
  void SetToken(std::string token);
  std::string token() const;

  // --- Objects. Each change bumps the resource version, stamps it into the
  // object's metadata.resourceVersion, is kept in the watch history and is
  // sent to every open watch of that resource. Returns the new resource
  // version, or "" when `object_json` is not a JSON object with
  // metadata.name. Pods and config maps are keyed by namespace/name ("default"
  // when absent; `pod_namespace` names the namespace of either), nodes by name.
  std::string Apply(FakeResource resource, std::string_view object_json);  // ADDED or MODIFIED
  std::string Delete(FakeResource resource, std::string_view pod_namespace,
                     std::string_view name);  // DELETED; "" when unknown
  std::string AddNode(std::string_view json) { return Apply(FakeResource::kNodes, json); }
  std::string AddPod(std::string_view json) { return Apply(FakeResource::kPods, json); }
  std::string DeleteNode(std::string_view name) { return Delete(FakeResource::kNodes, "", name); }
  std::string DeletePod(std::string_view ns, std::string_view name) {
    return Delete(FakeResource::kPods, ns, name);
  }
  // The stored object ("" when unknown) and the number stored.
  std::string Get(FakeResource resource, std::string_view pod_namespace,
                  std::string_view name) const;
  size_t ObjectCount(FakeResource resource) const;
  // The current resource version of the fake (of its last change).
  std::string resource_version() const;

  // --- Watch control.
  // Sends {"type":<type>,"object":<object_json>} to the open watches of
  // `resource` only: no store change, no history, the object as given.
  void PushWatchEvent(FakeResource resource, std::string_view type, std::string_view object_json);
  // Sends raw bytes (e.g. half an event, to test lines split across chunks).
  void PushWatchBytes(FakeResource resource, std::string bytes);
  // A BOOKMARK at the current resource version, to the watches that asked
  // for allowWatchBookmarks=true.
  void PushBookmark(FakeResource resource);
  // An ERROR event with a 410 Expired Status, then the stream ends, as the
  // real server does when the watch falls out of its window.
  void PushGone(FakeResource resource);
  // Drops the TCP connection of every open watch (both resources). With
  // `mid_event`, first sends the first half of an event line, so the client
  // sees a truncated event then EOF without the chunked terminator.
  void DropWatches(bool mid_event = true);
  // Ends every open watch cleanly (terminating chunk), as timeoutSeconds does.
  void EndWatches();
  // Forgets the watch history: a watch from a resource version before now
  // gets 410; later versions still work.
  void Compact();
  // Makes every LIST `continue` token issued so far answer 410 Expired.
  void ExpireContinueTokens();
  // Open watch streams of `resource`. A stream whose client went away counts
  // until the fake next writes to it.
  size_t watch_count(FakeResource resource) const;
  // Waits until at least `n` watches of `resource` are open. False on timeout.
  bool WaitForWatches(FakeResource resource, size_t n, std::chrono::milliseconds timeout) const;
  // Waits until at least `n` watch requests for `resource` have been received
  // in total since Start() (a resumed watch counts again).
  bool WaitForWatchRequests(FakeResource resource, size_t n,
                            std::chrono::milliseconds timeout) const;

  // --- Scripted answers.
  // Every POST .../binding answers `status` with `body` (application/json)
  // after `delay` (interrupted by Stop), without touching the store.
  void SetBindResponse(int status, std::string body,
                       std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  // Back to the default API server semantics.
  void ClearBindResponse();
  // The next request (GET, POST or PATCH) whose method matches and whose
  // target starts with `target_prefix` answers `status` / `body` instead
  // (once per call, FIFO).
  void QueueResponse(std::string method, std::string target_prefix, int status,
                     std::string body);

  // --- Records.
  std::vector<RecordedRequest> requests() const;
  std::vector<RecordedBinding> bindings() const;
  void ClearRecords();

  // A Status object as the API server writes it, e.g.
  // StatusJson(409, "Conflict", "Operation cannot be fulfilled ...").
  static std::string StatusJson(int code, std::string_view reason, std::string_view message);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// FaultProxy: a TCP relay on 127.0.0.1 in front of a server (usually a
// FakeApiServer; TLS passes through untouched) that breaks connections the
// way a real API server's keep-alive handling does, and counts what it did,
// so a test sees both sides of a retry:
//
//   FaultProxy proxy(api.port());
//   ASSERT_TRUE(proxy.Start()) << proxy.error();
//   proxy.SetIdleReset(300ms);   // ... point the client at proxy.url(tls) ...
//
// Each accepted connection gets its own connection to the backend and a relay
// thread; Stop() (and the destructor) ends them all and joins. Thread-safety:
// every method may be called from any thread while it runs.
class FaultProxy {
 public:
  explicit FaultProxy(int backend_port);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // Binds 127.0.0.1:0 and accepts on a thread. False with error() on failure.
  bool Start();
  void Stop();
  const std::string& error() const;
  int port() const;
  // "https://127.0.0.1:<port>" or "http://..." (the backend decides which is right).
  std::string url(bool tls) const;

  // A connection that has been idle (no byte either way) for at least `idle`
  // and then receives a byte from the client is reset (RST) without
  // forwarding it: the server closed the idle connection just as a request
  // went out, so the client's send or read fails before any response byte.
  // Zero (the default) disables it.
  void SetIdleReset(std::chrono::milliseconds idle);
  // The next `n` accepted connections are reset when their first byte from
  // the client arrives (a fresh connection that fails).
  void ResetNewConnections(int n);
  // The next connection to receive client bytes forwards only the first
  // `bytes` bytes of what the server answers, then is reset: a response that
  // began and broke off.
  void CutNextResponseAfter(size_t bytes);

  size_t connections() const;  // accepted so far
  size_t idle_resets() const;  // SetIdleReset faults injected
  size_t new_connection_resets() const;
  size_t cut_responses() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_FAKE_API_SERVER_H_
