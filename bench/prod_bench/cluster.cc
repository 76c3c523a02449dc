#include "prod_bench/cluster.h"

#include <httplib.h>

#include <memory>

#include "gen/prod_objects.h"
#include "prod_bench/measure.h"
#include "prod_bench/processes.h"

namespace schedext::bench::prod {
namespace {

using Clock = std::chrono::steady_clock;
using schedext::bench::PodObject;

// An admin client on one keep-alive TLS connection (one per thread).
std::unique_ptr<httplib::SSLClient> AdminClient(const ControlPlane& cp) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", cp.api_server_port());
  c->set_ca_cert_path(cp.ca_file().c_str());
  c->enable_server_certificate_verification(true);
  c->set_bearer_token_auth(cp.admin_token());
  c->set_keep_alive(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(60, 0);
  c->set_write_timeout(60, 0);
  return c;
}

}  // namespace

std::string CreateAll(const ControlPlane& cp,
                      const std::vector<std::pair<std::string, std::string>>& objects,
                      int threads) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::string first_error;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto c = AdminClient(cp);
      for (size_t i = next++; i < objects.size(); i = next++) {
        httplib::Result res{nullptr, httplib::Error::Unknown};
        for (int attempt = 0; attempt < 3; ++attempt) {
          res = c->Post(objects[i].first, objects[i].second, "application/json");
          if (res && res->status != 429 && res->status < 500) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        if (!res || res->status != 201) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.empty()) {
            first_error = "POST " + objects[i].first + ": " +
                          (res ? std::to_string(res->status) + " " + res->body.substr(0, 300)
                               : httplib::to_string(res.error()));
          }
          next = objects.size();
          return;
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  return first_error;
}

void Churn::Loop(int t) {
  PinThisThread(cpus_);
  auto c = AdminClient(cp_);
  Writer& w = writers_[t];
  const auto start = Clock::now();
  const auto period = std::chrono::duration<double>(kWriters / rate_);
  for (uint64_t i = 0; !stop_; ++i) {
    const auto due = start + std::chrono::duration_cast<Clock::duration>(period * i);
    std::this_thread::sleep_until(due);
    if (stop_) break;
    const uint64_t k = w.step++ * kWriters + static_cast<uint64_t>(t);
    httplib::Result res{nullptr, httplib::Error::Unknown};
    int ok_status = 200;
    const std::string& node = nodes_[(k * 7919) % nodes_.size()];
    const std::string prefix = name_prefix_ + std::to_string(t) + "-";
    switch (w.step % 4) {
      case 0:
        res = c->Patch("/api/v1/nodes/" + node + "/status",
                       "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
                       "\"lastHeartbeatTime\":\"" +
                           Rfc3339Now() + "\"}]}}",
                       "application/strategic-merge-patch+json");
        break;
      case 1:
        if (pods_ == 0) continue;
        res = c->Patch(
            "/api/v1/namespaces/default/pods/bench-" + std::to_string((k * 104729) % pods_),
            "{\"metadata\":{\"labels\":{\"churn\":\"" + std::to_string(k) + "\"}}}",
            "application/merge-patch+json");
        break;
      case 2:
        res = c->Post("/api/v1/namespaces/default/pods",
                      PodObject(prefix + std::to_string(w.created), node, w.created),
                      "application/json");
        ok_status = 201;
        if (res && res->status == 201) w.live.push_back(w.created++);
        break;
      default:
        if (w.live.empty()) continue;
        res = c->Delete("/api/v1/namespaces/default/pods/" + prefix +
                        std::to_string(w.live.front()) + "?gracePeriodSeconds=0");
        w.live.pop_front();
        break;
    }
    ++writes_;
    if (!res || res->status != ok_status) {
      ++errors_;
      std::lock_guard<std::mutex> lock(mu_);
      if (first_error_.empty()) {
        first_error_ = res ? std::to_string(res->status) + " " + res->body.substr(0, 200)
                           : httplib::to_string(res.error());
      }
    }
  }
}

}  // namespace schedext::bench::prod
