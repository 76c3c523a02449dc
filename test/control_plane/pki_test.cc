// testing/pki.h, checked with OpenSSL's own verifier (no control plane): the
// chain, the SANs, the client/server purposes, an expired certificate and a
// foreign CA's.
#include "testing/pki.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

namespace schedext::testing {
namespace {

struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

X509Ptr ParseCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509Ptr cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  return cert;
}

// X509_V_OK or the verifier's error for `leaf` against `ca` with `purpose`.
int Verify(const std::string& ca_pem, const std::string& leaf_pem, int purpose) {
  X509Ptr ca = ParseCert(ca_pem);
  X509Ptr leaf = ParseCert(leaf_pem);
  if (!ca || !leaf) return -1;
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca.get());
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf.get(), nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  const int ok = X509_verify_cert(ctx);
  const int error = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return error;
}

class PkiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = CertificateAuthority::Create("pki-test-ca");
    ASSERT_TRUE(ca.ok()) << ca.status().ToString();
    ca_ = std::make_unique<CertificateAuthority>(*ca);
  }
  std::unique_ptr<CertificateAuthority> ca_;
};

TEST_F(PkiTest, AServerCertificateVerifiesForItsLoopbackNamesOnly) {
  auto server = ca_->Issue(ServerCertOptions("server"));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_EQ(Verify(ca_->cert_pem(), server->cert_pem, X509_PURPOSE_SSL_SERVER), X509_V_OK);
  // serverAuth only: not usable as a client certificate.
  EXPECT_NE(Verify(ca_->cert_pem(), server->cert_pem, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  X509Ptr cert = ParseCert(server->cert_pem);
  ASSERT_TRUE(cert);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "::1", 0), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "10.0.0.1", 0), 0);
  EXPECT_EQ(X509_check_host(cert.get(), "example.com", 0, 0, nullptr), 0);
}

TEST_F(PkiTest, AClientCertificateCarriesItsUserAndGroups) {
  auto client = ca_->Issue(ClientCertOptions("alice", {"system:masters", "team"}));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ(Verify(ca_->cert_pem(), client->cert_pem, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  X509Ptr cert = ParseCert(client->cert_pem);
  ASSERT_TRUE(cert);
  char* subject = X509_NAME_oneline(X509_get_subject_name(cert.get()), nullptr, 0);
  EXPECT_STREQ(subject, "/O=system:masters/O=team/CN=alice");
  OPENSSL_free(subject);
}

TEST_F(PkiTest, AnExpiredOrForeignCertificateIsRefused) {
  CertOptions options = ServerCertOptions("stale");
  options.expired = true;
  auto expired = ca_->Issue(options);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_EQ(Verify(ca_->cert_pem(), expired->cert_pem, X509_PURPOSE_SSL_SERVER),
            X509_V_ERR_CERT_HAS_EXPIRED);

  auto foreign_ca = CertificateAuthority::Create("pki-test-foreign-ca");
  ASSERT_TRUE(foreign_ca.ok()) << foreign_ca.status().ToString();
  auto foreign = foreign_ca->Issue(ServerCertOptions("server"));
  ASSERT_TRUE(foreign.ok()) << foreign.status().ToString();
  EXPECT_EQ(Verify(ca_->cert_pem(), foreign->cert_pem, X509_PURPOSE_SSL_SERVER),
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  EXPECT_EQ(Verify(foreign_ca->cert_pem(), foreign->cert_pem, X509_PURPOSE_SSL_SERVER), X509_V_OK);
}

TEST_F(PkiTest, RsaKeysAndBadIpAddresses) {
  CertOptions options = ServerCertOptions("rsa");
  options.key_type = KeyType::kRsa2048;
  auto rsa = ca_->Issue(options);
  ASSERT_TRUE(rsa.ok()) << rsa.status().ToString();
  EXPECT_EQ(Verify(ca_->cert_pem(), rsa->cert_pem, X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_NE(rsa->key_pem.find("-----BEGIN PRIVATE KEY-----"), std::string::npos);

  options.ip_addresses = {"127.0.0.300"};
  auto bad = ca_->Issue(options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);

  auto pair = GenerateKeyPair(KeyType::kRsa2048);
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_NE(pair->public_key_pem.find("-----BEGIN PUBLIC KEY-----"), std::string::npos);
}

}  // namespace
}  // namespace schedext::testing
