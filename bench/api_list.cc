// schedext-api-list: a LIST of P pods through the Kubernetes API client
// (HttpKubeClient), paginated as the informer does it (limit=500 + continue),
// from a loopback server that only copies out pre-built pages — so the time
// measured is the client's: TLS, the HTTP library's reads, the body string.
//
// The pods are the generator's ~5 KB pod (bench/gen), renamed. The server is
// cpp-httplib's (TLS with a throwaway PKI, or plain with --plain); each page
// is `{"kind":"PodList",...,"metadata":{"continue":...},"items":[500 pods]}`.
// With --decode each page is also decoded with the informers' ObjectDecoder,
// as Informer::ListAll does, to put the transport next to the decode.
//
// Reported: wall time of the whole LIST, MB/s, the client thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID) and the whole process's (client + server).
//
//   schedext-api-list [--pods 150000] [--page 500] [--plain] [--decode] [--rounds 3]
#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>

#include "gen/payload_gen.h"
#include "schedext/cluster/http_kube_client.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"
#include "testing/fake_api_server.h"

namespace schedext::bench {
namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Options {
  size_t pods = 150000;
  size_t page = 500;
  bool tls = true;
  bool decode = false;
  int rounds = 3;
};

bool Parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--plain") {
      o.tls = false;
    } else if (flag == "--decode") {
      o.decode = true;
    } else if (i + 1 < argc && (flag == "--pods" || flag == "--page" || flag == "--rounds")) {
      const long value = std::strtol(argv[++i], nullptr, 10);
      if (value <= 0) return false;
      if (flag == "--pods") o.pods = static_cast<size_t>(value);
      if (flag == "--page") o.page = static_cast<size_t>(value);
      if (flag == "--rounds") o.rounds = static_cast<int>(value);
    } else {
      return false;
    }
  }
  return true;
}

// `page` pods joined with commas: the items of every page (names repeat from
// page to page; the client does not care).
std::string Items(size_t page) {
  PayloadSet set(1, 1);
  nlohmann::json pod = nlohmann::json::parse(set.pod());
  pod["spec"]["nodeName"] = "node-1";
  std::string items;
  for (size_t i = 0; i < page; ++i) {
    pod["metadata"]["name"] = "list-" + std::to_string(i);
    pod["metadata"]["uid"] = "00000000-0000-4000-8000-" + std::to_string(100000000000 + i);
    pod["metadata"]["resourceVersion"] = std::to_string(1000 + i);
    if (i != 0) items.push_back(',');
    items += pod.dump();
  }
  return items;
}

int Run(const Options& o) {
  const std::string items = Items(o.page);
  const size_t pages = (o.pods + o.page - 1) / o.page;

  testing::TestPki pki;
  std::string error;
  if (!testing::GenerateTestPki(pki, error)) {
    std::fprintf(stderr, "PKI: %s\n", error.c_str());
    return 1;
  }
  std::unique_ptr<httplib::Server> server;
  if (o.tls) {
    server = std::make_unique<httplib::SSLServer>([&pki](SSL_CTX& ctx) {
      BIO* cb = BIO_new_mem_buf(pki.server_cert_pem.data(), -1);
      BIO* kb = BIO_new_mem_buf(pki.server_key_pem.data(), -1);
      X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
      EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
      const bool ok = cert != nullptr && key != nullptr &&
                      SSL_CTX_use_certificate(&ctx, cert) == 1 &&
                      SSL_CTX_use_PrivateKey(&ctx, key) == 1;
      X509_free(cert);
      EVP_PKEY_free(key);
      BIO_free(cb);
      BIO_free(kb);
      return ok;
    });
  } else {
    server = std::make_unique<httplib::Server>();
  }
  server->Get("/api/v1/pods", [&](const httplib::Request& req, httplib::Response& res) {
    size_t index = 0;
    if (req.has_param("continue")) {
      index = std::strtoul(req.get_param_value("continue").c_str(), nullptr, 10);
    }
    std::string body =
        R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1000")";
    if (index + 1 < pages) {
      body += R"(,"continue":")" + std::to_string(index + 1) + "\"";
    }
    body += R"(},"items":[)";
    body += items;
    body += "]}";
    res.set_content(std::move(body), "application/json");
  });
  // As Go's net/http (the real API server) does; without it the reply's
  // header and body writes meet Nagle and the delayed ACK (~40 ms a page).
  server->set_tcp_nodelay(true);
  const int port = server->bind_to_any_port("127.0.0.1");
  std::thread thread([&] { server->listen_after_bind(); });
  while (!server->is_running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  cluster::ClientConfig config;
  config.server = std::string(o.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port);
  config.ca_pem = pki.ca_cert_pem;
  config.qps = 0;
  config.timeout = std::chrono::seconds(30);
  StatusOr<std::unique_ptr<cluster::KubeClient>> client = cluster::NewHttpKubeClient(config);
  if (!client.ok()) {
    std::fprintf(stderr, "client: %s\n", client.status().ToString().c_str());
    return 1;
  }
  std::printf("LIST of %zu pods in %zu pages of %zu (%.2f MB a page), %s%s\n", o.pods, pages,
              o.page, static_cast<double>(items.size()) / 1e6, o.tls ? "TLS" : "plain HTTP",
              o.decode ? ", decoded" : "");
  wire::ObjectDecoder decoder;
  wire::RequestBuffer buffer;
  int status = 0;
  for (int round = 0; round < o.rounds && status == 0; ++round) {
    size_t bytes = 0;
    size_t decoded = 0;
    const double cpu0 = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    const double proc0 = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
    const Clock::time_point t0 = Clock::now();
    std::string next;
    for (size_t p = 0; p < pages; ++p) {
      std::string target = "/api/v1/pods?limit=" + std::to_string(o.page);
      if (!next.empty()) target += "&continue=" + next;
      StatusOr<cluster::HttpResult> reply = (*client)->Get(target);
      if (!reply.ok() || reply->status != 200) {
        std::fprintf(
            stderr, "page %zu: %s\n", p,
            reply.ok() ? std::to_string(reply->status).c_str() : reply.status().ToString().c_str());
        status = 1;
        break;
      }
      bytes += reply->body.size();
      next = std::to_string(p + 1);
      if (o.decode) {
        buffer.Clear();
        buffer.Append(reply->body.data(), reply->body.size());
        wire::ListMeta meta;
        Status st = decoder.DecodePodList(buffer, meta, [&](const wire::PodObject&) {
          ++decoded;
          return true;
        });
        if (!st.ok()) {
          std::fprintf(stderr, "decode: %s\n", st.ToString().c_str());
          status = 1;
          break;
        }
      }
    }
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    const double cpu = CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    const double proc = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - proc0;
    std::printf(
        "round %d: %.1f MB in %.3f s = %.0f MB/s; client thread CPU %.3f s, process CPU %.3f s"
        "%s\n",
        round + 1, static_cast<double>(bytes) / 1e6, wall, static_cast<double>(bytes) / 1e6 / wall,
        cpu, proc, o.decode ? (", " + std::to_string(decoded) + " pods decoded").c_str() : "");
  }
  client->reset();
  server->stop();
  thread.join();
  return status;
}

}  // namespace
}  // namespace schedext::bench

int main(int argc, char** argv) {
  schedext::bench::Options o;
  if (!schedext::bench::Parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: schedext-api-list [--pods N] [--page N] [--plain] [--decode] "
                 "[--rounds N]\n");
    return 2;
  }
  return schedext::bench::Run(o);
}
