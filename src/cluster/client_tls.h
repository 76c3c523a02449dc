// The API client's TLS: the trust store and client certificate, read once
// from the ClientConfig and shared by every connection, and how one
// connection's SSL_CTX is set up from them. OpenSSL directly, not the HTTP
// library's TLS options (see ApplyClientTls).
#pragma once

#include <openssl/types.h>

#include <memory>
#include <string>
#include <vector>

#include "schedext/cluster/client_config.h"
#include "schedext/status.h"

namespace schedext::cluster {

struct X509Free {
  void operator()(X509* p) const;
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const;
};
struct StoreFree {
  void operator()(X509_STORE* p) const;
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using StorePtr = std::unique_ptr<X509_STORE, StoreFree>;

// Immutable once loaded.
struct ClientTls {
  StorePtr store;  // null: the system default paths
  X509Ptr client_cert;
  std::vector<X509Ptr> client_chain;
  PkeyPtr client_key;
};

// The CA and client certificate of `config` (PEM given inline or as files).
StatusOr<std::shared_ptr<const ClientTls>> LoadClientTls(const ClientConfig& config);

// Sets up `ctx` for a connection to `host`: peer verification against the
// store (unless `verify` is false) with a SAN check of the host name or IP,
// and the client certificate. False when OpenSSL refuses a setting.
bool ApplyClientTls(SSL_CTX* ctx, const ClientTls& tls, bool verify, const std::string& host,
                    bool host_is_ip);

// Why the last handshake on this thread failed verification ("" when it did
// not). The handshake runs on the calling thread, inside the library's send,
// so the verify callback leaves its reason here for the error message.
const std::string& LastVerifyError();
void ClearVerifyError();

}  // namespace schedext::cluster
