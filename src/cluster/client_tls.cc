#include "cluster/client_tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <utility>

#include "common/file.h"
#include "common/text.h"

namespace schedext::cluster {

void X509Free::operator()(X509* p) const { X509_free(p); }
void PkeyFree::operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
void StoreFree::operator()(X509_STORE* p) const { X509_STORE_free(p); }

namespace {

thread_local std::string t_verify_error;

int VerifyCallback(int preverify_ok, X509_STORE_CTX* ctx) {
  if (preverify_ok != 1) {
    t_verify_error = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
  }
  return preverify_ok;
}

std::vector<X509Ptr> ParseCerts(const std::string& pem) {
  std::vector<X509Ptr> out;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) {
    return out;
  }
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    out.emplace_back(cert);
  }
  BIO_free(bio);
  ERR_clear_error();  // the loop ends on a "no start line" error
  return out;
}

PkeyPtr ParseKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) {
    return nullptr;
  }
  PkeyPtr key(PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  ERR_clear_error();
  return key;
}

// Inline PEM wins over the file, as in client-go.
StatusOr<std::string> PemOf(const std::string& inline_pem, const std::string& file,
                            std::string_view what) {
  if (!inline_pem.empty() || file.empty()) {
    return inline_pem;
  }
  return ReadFile(file, what);
}

Status LoadTrustStore(const ClientConfig& config, ClientTls& tls) {
  StatusOr<std::string> ca_pem = PemOf(config.ca_pem, config.ca_file, "CA");
  SCHEDEXT_RETURN_IF_ERROR(ca_pem.status());
  if (ca_pem->empty()) {
    return OkStatus();
  }
  if (config.insecure_skip_tls_verify) {
    return InvalidArgumentError(
        "specifying a root certificates file with insecure-skip-tls-verify is not allowed");
  }
  std::vector<X509Ptr> cas = ParseCerts(*ca_pem);
  if (cas.empty()) {
    return InvalidArgumentError(
        "CA: no PEM certificate found" +
        (config.ca_file.empty() || !config.ca_pem.empty() ? std::string()
                                                          : " in " + Quote(config.ca_file)));
  }
  tls.store.reset(X509_STORE_new());
  for (const X509Ptr& ca : cas) {
    // OpenSSL fills a certificate's extension cache (key identifiers, ...)
    // lazily on first use; the store is shared by every connection, so fill
    // it now, before concurrent handshakes race on it (ThreadSanitizer:
    // ASN1_STRING_set vs ASN1_STRING_cmp).
    X509_check_purpose(ca.get(), -1, 0);
    if (tls.store == nullptr || X509_STORE_add_cert(tls.store.get(), ca.get()) != 1) {
      ERR_clear_error();
      return InternalError("CA: cannot add a certificate to the trust store");
    }
  }
  return OkStatus();
}

Status LoadClientCertificate(const ClientConfig& config, ClientTls& tls) {
  StatusOr<std::string> cert_pem =
      PemOf(config.client_cert_pem, config.client_cert_file, "client certificate");
  SCHEDEXT_RETURN_IF_ERROR(cert_pem.status());
  StatusOr<std::string> key_pem = PemOf(config.client_key_pem, config.client_key_file, "client key");
  SCHEDEXT_RETURN_IF_ERROR(key_pem.status());
  if (cert_pem->empty() != key_pem->empty()) {
    return InvalidArgumentError("client certificate and key must be given together");
  }
  if (cert_pem->empty()) {
    return OkStatus();
  }
  std::vector<X509Ptr> certs = ParseCerts(*cert_pem);
  if (certs.empty()) {
    return InvalidArgumentError("client certificate: no PEM certificate found");
  }
  tls.client_key = ParseKey(*key_pem);
  if (!tls.client_key) {
    return InvalidArgumentError("client key: no PEM private key found");
  }
  if (X509_check_private_key(certs.front().get(), tls.client_key.get()) != 1) {
    ERR_clear_error();
    return InvalidArgumentError("client key does not match the client certificate");
  }
  tls.client_cert = std::move(certs.front());
  for (size_t i = 1; i < certs.size(); ++i) {
    tls.client_chain.push_back(std::move(certs[i]));
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::shared_ptr<const ClientTls>> LoadClientTls(const ClientConfig& config) {
  auto tls = std::make_shared<ClientTls>();
  SCHEDEXT_RETURN_IF_ERROR(LoadTrustStore(config, *tls));
  SCHEDEXT_RETURN_IF_ERROR(LoadClientCertificate(config, *tls));
  return std::shared_ptr<const ClientTls>(std::move(tls));
}

bool ApplyClientTls(SSL_CTX* ctx, const ClientTls& tls, bool verify, const std::string& host,
                    bool host_is_ip) {
  if (verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, VerifyCallback);
    if (tls.store) {
      SSL_CTX_set1_cert_store(ctx, tls.store.get());
    } else {
      SSL_CTX_set_default_verify_paths(ctx);
    }
    X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    const int ok = host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                              : X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    if (ok != 1) {
      return false;
    }
  }
  if (tls.client_cert) {
    if (SSL_CTX_use_certificate(ctx, tls.client_cert.get()) != 1 ||
        SSL_CTX_use_PrivateKey(ctx, tls.client_key.get()) != 1) {
      return false;
    }
    for (const X509Ptr& extra : tls.client_chain) {
      SSL_CTX_add1_chain_cert(ctx, extra.get());
    }
  }
  return true;
}

const std::string& LastVerifyError() { return t_verify_error; }
void ClearVerifyError() { t_verify_error.clear(); }

}  // namespace schedext::cluster
