// The connections of the API client (http_kube_client.cc): cpp-httplib's
// client over plain TCP or TLS, each with the probe the stale-connection
// retry reads. Only the cluster layer's client includes this header: it pulls
// in httplib.h.
#ifndef SCHEDEXT_SRC_CLUSTER_API_CONNECTION_H_
#define SCHEDEXT_SRC_CLUSTER_API_CONNECTION_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <httplib.h>

namespace schedext::cluster {

// What the stale-connection retry needs to know about a connection's last
// request: whether the library opened a new socket for it, and whether any
// byte of the response arrived.
struct ConnectionProbe {
  uint64_t connects = 0;        // sockets opened (counted by the socket-options hook)
  uint64_t response_bytes = 0;  // plain: bytes read; TLS: application-data records
};

// The library's client with a probe. `SocketOpen()` before a request says
// whether it would go out on a connection kept from an earlier one.
class Probed {
 public:
  virtual ~Probed() = default;
  virtual bool SocketOpen() const = 0;
  ConnectionProbe probe;
};

// A pooled connection.
struct Connection {
  std::unique_ptr<httplib::ClientImpl> http;
  Probed* probed = nullptr;  // the same object as `http`
  std::chrono::steady_clock::time_point idle_since;
};

// A client of host:port, its options left to the caller; `probed` is set to
// the same object seen as Probed. Plain HTTP reads through a stream of ours
// (large reads, counted); TLS counts decrypted application-data records.
std::unique_ptr<httplib::ClientImpl> NewPlainClient(const std::string& host, int port,
                                                    Probed** probed);
std::unique_ptr<httplib::SSLClient> NewTlsClient(const std::string& host, int port,
                                                 Probed** probed);

}  // namespace schedext::cluster

#endif  // SCHEDEXT_SRC_CLUSTER_API_CONNECTION_H_
