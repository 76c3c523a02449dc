// Test PKI generated at run time with the OpenSSL 3 C API: certificate
// authorities, server and client certificates signed by them, and bare key
// pairs (a service-account signing key). Nothing is read from or written to
// disk except by WritePemFile; every certificate is fresh, so tests never
// depend on checked-in material that expires.
//
// Typical use:
//
//   auto ca = CertificateAuthority::Create("my-test-ca");
//   ASSERT_TRUE(ca.ok()) << ca.status();
//   auto server = ca->Issue(ServerCertOptions("my-server"));        // 127.0.0.1, ::1, localhost
//   auto client = ca->Issue(ClientCertOptions("alice", {"system:masters"}));
//   CertOptions old = ServerCertOptions("stale");
//   old.expired = true;                                             // notAfter in the past
//   auto foreign = CertificateAuthority::Create("other-ca");        // "wrong CA" tests
//
// Keys are EC P-256 unless CertOptions::key_type says RSA (kube-apiserver's
// service-account keys are RSA 2048 by convention; both work there).
//
// Thread-safety: CertificateAuthority is an immutable value after Create;
// Issue may be called concurrently.
#ifndef SCHEDEXT_TEST_TESTING_PKI_H_
#define SCHEDEXT_TEST_TESTING_PKI_H_

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/status.h"

namespace schedext::testing {

enum class KeyType { kEcP256, kRsa2048 };

// A private key and its public half, PEM (PKCS#8 "PRIVATE KEY" and SPKI
// "PUBLIC KEY").
struct KeyPairPem {
  std::string private_key_pem;
  std::string public_key_pem;
};

// A certificate and its private key, PEM.
struct IssuedCert {
  std::string cert_pem;
  std::string key_pem;
};

struct CertOptions {
  std::string common_name;
  // Subject O= entries: Kubernetes reads them as the user's groups.
  std::vector<std::string> organizations;
  // subjectAltName entries. IP addresses in text form ("127.0.0.1", "::1").
  std::vector<std::string> dns_names;
  std::vector<std::string> ip_addresses;
  // extendedKeyUsage serverAuth / clientAuth (both may be set).
  bool server_auth = false;
  bool client_auth = false;
  // Valid from one hour ago for `validity`...
  std::chrono::seconds validity = std::chrono::hours(24 * 7);
  // ...unless expired: then notBefore is two days ago and notAfter one day
  // ago, so every verifier refuses it as expired (not as not-yet-valid).
  bool expired = false;
  KeyType key_type = KeyType::kEcP256;
};

// serverAuth for `common_name`, SAN IP:127.0.0.1, IP:::1, DNS:localhost.
CertOptions ServerCertOptions(std::string_view common_name);
// clientAuth for user `common_name` in `groups` (O=), no SAN.
CertOptions ClientCertOptions(std::string_view common_name, std::vector<std::string> groups = {});

class CertificateAuthority {
 public:
  // A self-signed CA (basicConstraints CA:TRUE, keyCertSign) named
  // `common_name`. Two calls give unrelated CAs.
  static StatusOr<CertificateAuthority> Create(std::string_view common_name,
                                               KeyType key_type = KeyType::kEcP256);

  // A certificate for `options`, signed by this CA, with a fresh key and a
  // random serial. kInvalidArgument for an unparsable IP address; kInternal
  // on an OpenSSL failure.
  StatusOr<IssuedCert> Issue(const CertOptions& options) const;

  const std::string& cert_pem() const { return cert_pem_; }
  const std::string& key_pem() const { return key_pem_; }

 private:
  CertificateAuthority(std::string cert_pem, std::string key_pem)
      : cert_pem_(std::move(cert_pem)), key_pem_(std::move(key_pem)) {}

  std::string cert_pem_;
  std::string key_pem_;
};

// A fresh key pair (e.g. kube-apiserver's --service-account-key-file /
// --service-account-signing-key-file).
StatusOr<KeyPairPem> GenerateKeyPair(KeyType key_type = KeyType::kRsa2048);

// Writes `pem` to `path` with mode 0600 (private keys are refused by some
// tools when group/world readable). Overwrites.
Status WritePemFile(const std::string& path, std::string_view pem);

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_PKI_H_
