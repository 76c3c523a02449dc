// schedext-bench-server: the real HttpServer and ExtenderService with the
// default profile, composed like src/main.cc, but with BenchDirectory as the
// node directory so that node-cache (NodeNames) requests can be measured over
// HTTP before the cluster cache (issue 3) exists. Benchmark use only.
//
//   schedext-bench-server --listen 127.0.0.1:PORT --directory full-N.json
//                         [--io-spin-micros N]   (server.ioSpinMicros)
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "schedext/config/config.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "support/bench_support.h"

int main(int argc, char** argv) {
  std::string listen;
  std::string directory_file;
  int io_spin_micros = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--listen") {
      listen = argv[i + 1];
    } else if (arg == "--directory") {
      directory_file = argv[i + 1];
    } else if (arg == "--io-spin-micros") {
      io_spin_micros = std::atoi(argv[i + 1]);
    }
  }
  if (listen.rfind("127.0.0.1:", 0) != 0 || directory_file.empty()) {
    std::cerr << "usage: schedext-bench-server --listen 127.0.0.1:PORT --directory full-N.json\n"
                 "                             [--io-spin-micros N]\n";
    return 2;
  }
  std::ifstream in(directory_file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  const schedext::bench::BenchDirectory directory(ss.str());
  if (!directory.status().ok()) {
    std::cerr << "schedext-bench-server: " << directory.status().message() << "\n";
    return 1;
  }
  schedext::config::ServerConfig server_config;
  if (auto s = schedext::config::ApplyListenAddress(listen, server_config); !s.ok()) {
    std::cerr << "schedext-bench-server: " << s.message() << "\n";
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto profiles = schedext::bench::DefaultProfiles();
  std::vector<std::string> names;
  for (const auto& p : profiles) {
    names.push_back(p->name());
  }
  schedext::server::Metrics metrics(names);
  schedext::server::ExtenderService service(profiles, 0, directory.cache(), nullptr, &metrics);
  schedext::server::HttpServerOptions options;
  options.server = server_config;
  options.server.io_spin_micros = std::clamp(io_spin_micros, 0, 10000);
  options.version = "bench";
  schedext::server::HttpServer server(service, &metrics, options);
  if (auto s = server.Bind(); !s.ok()) {
    std::cerr << "schedext-bench-server: " << s.message() << "\n";
    return 1;
  }
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&set, &sig);
    server.Stop();
  });
  std::cerr << "schedext-bench-server: " << directory.size() << " nodes, listening on " << listen
            << "\n";
  auto served = server.Serve();
  // Serve() also returns on a bind/serve failure; wake the stopper then.
  kill(getpid(), SIGTERM);
  stopper.join();
  return served.ok() ? 0 : 1;
}
