#include "testing/pki.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace schedext::testing {
namespace {

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

// The OpenSSL error queue's first entry (and clears the queue), for messages.
std::string OpenSslError(std::string_view what) {
  std::string message(what);
  const unsigned long code = ERR_get_error();  // NOLINT(runtime/int): OpenSSL's type
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    message += ": ";
    message += buf;
  }
  ERR_clear_error();
  return message;
}

PkeyPtr NewKey(KeyType type) {
  switch (type) {
    case KeyType::kRsa2048:
      return PkeyPtr(EVP_RSA_gen(2048));
    case KeyType::kEcP256:
      break;
  }
  return PkeyPtr(EVP_EC_gen("P-256"));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);  // NOLINT(runtime/int): OpenSSL's type
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

StatusOr<std::string> PrivateKeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return InternalError(OpenSslError("PEM_write_bio_PrivateKey"));
  }
  return BioText(bio.get());
}

StatusOr<std::string> PublicKeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key) != 1) {
    return InternalError(OpenSslError("PEM_write_bio_PUBKEY"));
  }
  return BioText(bio.get());
}

StatusOr<std::string> CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return InternalError(OpenSslError("PEM_write_bio_X509"));
  }
  return BioText(bio.get());
}

// Adds one v3 extension written in openssl.cnf syntax ("critical,CA:TRUE").
Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) {
    return InvalidArgumentError(
        OpenSslError("extension " + std::string(OBJ_nid2sn(nid)) + "=" + value));
  }
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) {
    return InternalError(OpenSslError("X509_add_ext"));
  }
  return OkStatus();
}

Status AddNameEntry(X509_NAME* name, const char* field, const std::string& value) {
  if (X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1,
                                 0) != 1) {
    return InvalidArgumentError(OpenSslError(std::string("subject ") + field + "=" + value));
  }
  return OkStatus();
}

bool ValidIpAddress(const std::string& ip) {
  ASN1_OCTET_STRING* parsed = a2i_IPADDRESS(ip.c_str());
  if (parsed == nullptr) {
    ERR_clear_error();
    return false;
  }
  ASN1_OCTET_STRING_free(parsed);
  return true;
}

struct Signer {
  X509* cert = nullptr;  // null: self-signed
  EVP_PKEY* key = nullptr;
};

// A v3 certificate for `key` with `options`' subject, validity and
// extensions, signed by `signer` (or by `key` itself).
StatusOr<X509Ptr> MakeCert(EVP_PKEY* key, const CertOptions& options, bool is_ca,
                           const Signer& signer) {
  X509Ptr cert(X509_new());
  if (!cert) {
    return InternalError(OpenSslError("X509_new"));
  }
  X509_set_version(cert.get(), 2);  // v3
  // A random 127-bit positive serial: unique across calls, as RFC 5280 asks.
  BIGNUM* serial = BN_new();
  if (serial == nullptr || BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert.get())) == nullptr) {
    BN_free(serial);
    return InternalError(OpenSslError("serial"));
  }
  BN_free(serial);

  constexpr long kHour = 3600;                      // NOLINT(runtime/int): X509_gmtime_adj's type
  const long validity =                             // NOLINT(runtime/int)
      static_cast<long>(options.validity.count());  // NOLINT(runtime/int)
  if (options.expired) {
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -48 * kHour);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), -24 * kHour);
  } else {
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kHour);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), validity);
  }
  if (X509_set_pubkey(cert.get(), key) != 1) {
    return InternalError(OpenSslError("X509_set_pubkey"));
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const std::string& o : options.organizations) {
    SCHEDEXT_RETURN_IF_ERROR(AddNameEntry(name, "O", o));
  }
  SCHEDEXT_RETURN_IF_ERROR(AddNameEntry(name, "CN", options.common_name));
  X509* issuer = signer.cert != nullptr ? signer.cert : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer)) != 1) {
    return InternalError(OpenSslError("X509_set_issuer_name"));
  }

  if (is_ca) {
    SCHEDEXT_RETURN_IF_ERROR(
        AddExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:TRUE"));
    SCHEDEXT_RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_key_usage,
                                          "critical,keyCertSign,cRLSign,digitalSignature"));
  } else {
    SCHEDEXT_RETURN_IF_ERROR(
        AddExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:FALSE"));
    // keyEncipherment matters for RSA key exchange only; harmless for EC.
    SCHEDEXT_RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_key_usage,
                                          "critical,digitalSignature,keyEncipherment"));
    std::string eku;
    if (options.server_auth) eku = "serverAuth";
    if (options.client_auth) eku += eku.empty() ? "clientAuth" : ",clientAuth";
    if (!eku.empty()) {
      SCHEDEXT_RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_ext_key_usage, eku));
    }
  }
  SCHEDEXT_RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_subject_key_identifier, "hash"));
  if (signer.cert != nullptr) {
    SCHEDEXT_RETURN_IF_ERROR(
        AddExtension(cert.get(), issuer, NID_authority_key_identifier, "keyid:always"));
  }
  std::string san;
  for (const std::string& dns : options.dns_names) {
    san += (san.empty() ? "DNS:" : ",DNS:") + dns;
  }
  for (const std::string& ip : options.ip_addresses) {
    if (!ValidIpAddress(ip)) {
      return InvalidArgumentError("not an IP address: \"" + ip + "\"");
    }
    san += (san.empty() ? "IP:" : ",IP:") + ip;
  }
  if (!san.empty()) {
    SCHEDEXT_RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_subject_alt_name, san));
  }

  EVP_PKEY* signing_key = signer.key != nullptr ? signer.key : key;
  if (X509_sign(cert.get(), signing_key, EVP_sha256()) <= 0) {
    return InternalError(OpenSslError("X509_sign"));
  }
  return cert;
}

}  // namespace

CertOptions ServerCertOptions(std::string_view common_name) {
  CertOptions options;
  options.common_name = std::string(common_name);
  options.dns_names = {"localhost"};
  options.ip_addresses = {"127.0.0.1", "::1"};
  options.server_auth = true;
  return options;
}

CertOptions ClientCertOptions(std::string_view common_name, std::vector<std::string> groups) {
  CertOptions options;
  options.common_name = std::string(common_name);
  options.organizations = std::move(groups);
  options.client_auth = true;
  return options;
}

StatusOr<CertificateAuthority> CertificateAuthority::Create(std::string_view common_name,
                                                            KeyType key_type) {
  PkeyPtr key = NewKey(key_type);
  if (!key) {
    return InternalError(OpenSslError("CA key generation"));
  }
  CertOptions options;
  options.common_name = std::string(common_name);
  options.validity = std::chrono::hours(24 * 30);
  SCHEDEXT_ASSIGN_OR_RETURN(X509Ptr cert, MakeCert(key.get(), options, /*is_ca=*/true, Signer{}));
  SCHEDEXT_ASSIGN_OR_RETURN(std::string cert_pem, CertPem(cert.get()));
  SCHEDEXT_ASSIGN_OR_RETURN(std::string key_pem, PrivateKeyPem(key.get()));
  return CertificateAuthority(std::move(cert_pem), std::move(key_pem));
}

StatusOr<IssuedCert> CertificateAuthority::Issue(const CertOptions& options) const {
  BioPtr cert_bio(BIO_new_mem_buf(cert_pem_.data(), static_cast<int>(cert_pem_.size())));
  BioPtr key_bio(BIO_new_mem_buf(key_pem_.data(), static_cast<int>(key_pem_.size())));
  if (!cert_bio || !key_bio) {
    return InternalError(OpenSslError("BIO_new_mem_buf"));
  }
  X509Ptr ca_cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  PkeyPtr ca_key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!ca_cert || !ca_key) {
    return InternalError(OpenSslError("reading the CA"));
  }
  PkeyPtr key = NewKey(options.key_type);
  if (!key) {
    return InternalError(OpenSslError("key generation"));
  }
  SCHEDEXT_ASSIGN_OR_RETURN(X509Ptr cert, MakeCert(key.get(), options, /*is_ca=*/false,
                                                   Signer{ca_cert.get(), ca_key.get()}));
  IssuedCert issued;
  SCHEDEXT_ASSIGN_OR_RETURN(issued.cert_pem, CertPem(cert.get()));
  SCHEDEXT_ASSIGN_OR_RETURN(issued.key_pem, PrivateKeyPem(key.get()));
  return issued;
}

StatusOr<KeyPairPem> GenerateKeyPair(KeyType key_type) {
  PkeyPtr key = NewKey(key_type);
  if (!key) {
    return InternalError(OpenSslError("key generation"));
  }
  KeyPairPem pair;
  SCHEDEXT_ASSIGN_OR_RETURN(pair.private_key_pem, PrivateKeyPem(key.get()));
  SCHEDEXT_ASSIGN_OR_RETURN(pair.public_key_pem, PublicKeyPem(key.get()));
  return pair;
}

Status WritePemFile(const std::string& path, std::string_view pem) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return InternalError("open \"" + path + "\": " + std::strerror(errno));
  }
  size_t done = 0;
  while (done < pem.size()) {
    const ssize_t n = ::write(fd, pem.data() + done, pem.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return InternalError("write \"" + path + "\": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    return InternalError("close \"" + path + "\": " + std::strerror(errno));
  }
  return OkStatus();
}

}  // namespace schedext::testing
