// The only file that includes httplib.h. Settings follow architecture.md §9.
#include "schedext/server/http_server.h"

#include <sys/socket.h>

#include <charconv>
#include <exception>
#include <regex>
#include <string>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "schedext/wire/encoder.h"

namespace schedext::server {
namespace {

// Buffers that grew past this for one huge request are released afterwards, so
// a pool of idle workers does not sit on hundreds of MB.
constexpr size_t kKeepBufferBytes = size_t{16} << 20;

// A profile name, then a verb; a trailing slash is tolerated.
const char* const kVerbRoute =
    R"(/(?:([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)/)?(filter|prioritize|preempt|bind)/?)";

// Per-worker scratch: the one thread_local of the server. Each keep-alive
// connection is served by one worker thread from request to reply, so the
// reply body stays valid until the content provider has sent it.
struct Worker {
  wire::RequestBuffer body;
  Scratch scratch;
  std::string out;
};
thread_local Worker t_worker;

std::optional<Verb> ParseVerb(std::string_view s) {
  if (s == "filter") return Verb::kFilter;
  if (s == "prioritize") return Verb::kPrioritize;
  if (s == "preempt") return Verb::kPreempt;
  if (s == "bind") return Verb::kBind;
  return std::nullopt;
}

// Sends `body` (which must outlive the response) as a fixed-length provider:
// cpp-httplib 0.11.4 never gzips those, whatever Accept-Encoding says.
void ReplyFrom(const std::string& body, const char* content_type, httplib::Response& res) {
  res.set_content_provider(body.size(), content_type,
                           [&body](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(body.data() + offset, length);
                           });
}

// The same for a body the response owns.
void ReplyOwned(std::string body, const char* content_type, httplib::Response& res) {
  auto owned = std::make_shared<const std::string>(std::move(body));
  res.set_content_provider(owned->size(), content_type,
                           [owned](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(owned->data() + offset, length);
                           });
}

void ReplyError(int status, std::string_view message, httplib::Response& res) {
  std::string body;
  wire::AppendErrorBody(message, body);
  body.push_back('\n');
  res.status = status;
  ReplyOwned(std::move(body), "application/json", res);
}

bool IsJsonContentType(std::string_view type) {
  const size_t semicolon = type.find(';');
  if (semicolon != std::string_view::npos) {
    type = type.substr(0, semicolon);
  }
  while (!type.empty() && type.back() == ' ') {
    type.remove_suffix(1);
  }
  auto lower_equals = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
    }
    return true;
  };
  return lower_equals(type, "application/json") ||
         (type.size() > 5 && lower_equals(type.substr(type.size() - 5), "+json"));
}

}  // namespace

struct HttpServer::Impl {
  Impl(const ExtenderService& s, Metrics* m, HttpServerOptions o)
      : service(s), metrics(m), options(std::move(o)), verb_route(kVerbRoute) {}

  void Configure();
  void HandleVerb(const httplib::Request& req, httplib::Response& res,
                  const httplib::ContentReader& reader);

  const ExtenderService& service;
  Metrics* metrics;
  HttpServerOptions options;
  std::regex verb_route;
  httplib::Server server;
  int port = 0;
};

void HttpServer::Impl::Configure() {
  const config::ServerConfig& c = options.server;
  server.set_tcp_nodelay(true);
  const size_t threads = static_cast<size_t>(c.threads);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_keep_alive_max_count(c.keep_alive_max_count);
  server.set_keep_alive_timeout(c.keep_alive_timeout_seconds);
  server.set_read_timeout(c.read_timeout_seconds, 0);
  server.set_write_timeout(c.write_timeout_seconds, 0);
  server.set_payload_max_length(c.max_body_bytes);
  // SO_REUSEADDR only: the library default adds SO_REUSEPORT, with which a
  // second instance on the same port binds silently and steals connections.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const bool is_get_route = req.path == "/healthz" || req.path == "/readyz" ||
                              req.path == "/version" || req.path == "/metrics";
    const bool is_verb_route = std::regex_match(req.path, verb_route);
    if (is_verb_route && req.method != "POST") {
      res.set_header("Allow", "POST");
      ReplyError(405, "method " + req.method + " not allowed on " + req.path + ": use POST", res);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (is_get_route && req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET");
      ReplyError(405, "method " + req.method + " not allowed on " + req.path + ": use GET", res);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (is_verb_route && req.has_header("Content-Type") &&
        !IsJsonContentType(req.get_header_value("Content-Type"))) {
      ReplyError(415,
                 "content type \"" + req.get_header_value("Content-Type") +
                     "\" is not supported: send application/json (with curl: -H "
                     "'Content-Type: application/json')",
                 res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  server.Post(kVerbRoute, [this](const httplib::Request& req, httplib::Response& res,
                                 const httplib::ContentReader& reader) {
    HandleVerb(req, res, reader);
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    ReplyOwned("ok\n", "text/plain", res);
  });
  server.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (options.ready()) {
      ReplyOwned("ok\n", "text/plain", res);
    } else {
      res.status = 503;
      ReplyOwned("not ready: the cluster cache has not synced\n", "text/plain", res);
    }
  });
  server.Get("/version", [this](const httplib::Request&, httplib::Response& res) {
    std::string body = "{\"version\":";
    wire::AppendJsonString(options.version, body);
    body.append("}\n");
    ReplyOwned(std::move(body), "application/json", res);
  });
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::string body;
    if (metrics != nullptr) {
      metrics->Render(body);
    }
    ReplyOwned(std::move(body), "text/plain; version=0.0.4", res);
  });

  // Called for every reply with status >= 400; fills a JSON body only where
  // nothing else did (unknown path, 413 from the payload limit, ...).
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.content_length_ != 0) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    std::string message;
    switch (res.status) {
      case 404:
        message = "no route for " + req.method + " " + req.path +
                  " (POST /filter, /prioritize, /preempt, /bind or /<profile>/<verb>; GET "
                  "/healthz, /readyz, /version, /metrics)";
        break;
      case 413:
        message = "request body too large (server.maxBodyBytes)";
        break;
      default:
        message = "HTTP " + std::to_string(res.status);
        break;
    }
    ReplyError(res.status, message, res);
    return httplib::Server::HandlerResponse::Handled;
  }));

  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("{} {}: unhandled exception: {}", req.method, req.path, what);
        ReplyError(500, "internal error (see the schedext log)", res);
      });
}

void HttpServer::Impl::HandleVerb(const httplib::Request& req, httplib::Response& res,
                                  const httplib::ContentReader& reader) {
  Worker& w = t_worker;
  if (w.out.capacity() > kKeepBufferBytes) {
    // The previous reply has been sent by now; release its memory.
    std::string().swap(w.out);
  }
  std::string_view profile_name;
  std::string_view verb_text;
  if (req.matches.size() == 3) {
    profile_name = std::string_view(req.path).substr(
        static_cast<size_t>(req.matches.position(1)), static_cast<size_t>(req.matches.length(1)));
    verb_text = std::string_view(req.path).substr(static_cast<size_t>(req.matches.position(2)),
                                                  static_cast<size_t>(req.matches.length(2)));
  }
  const std::optional<Verb> verb = ParseVerb(verb_text);
  const int profile = service.FindProfile(profile_name);
  if (!verb || profile < 0) {
    ReplyError(404, "no profile \"" + std::string(profile_name) + "\" for " + req.path, res);
    return;
  }

  w.body.Clear();
  if (req.has_header("Content-Length")) {
    const std::string length = req.get_header_value("Content-Length");
    size_t n = 0;
    auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
    if (ec == std::errc() && n <= options.server.max_body_bytes) {
      w.body.Reserve(n);
    }
  }
  const bool received = reader([&w](const char* data, size_t length) {
    w.body.Append(data, length);
    return true;
  });
  if (!received) {
    // The library has set the status (413 over the limit, 400 on a broken
    // body); the error handler writes the message.
    if (res.status < 400) {
      res.status = 400;
    }
    return;
  }

  RequestSummary summary;
  res.status = service.Handle(*verb, static_cast<size_t>(profile), w.body, w.scratch, w.out,
                              summary);
  w.out.push_back('\n');
  ReplyFrom(w.out, "application/json", res);
  w.body.ShrinkTo(kKeepBufferBytes);
  w.scratch.decoder.ShrinkTo(kKeepBufferBytes);
}

HttpServer::HttpServer(const ExtenderService& service, Metrics* metrics,
                       HttpServerOptions options)
    : impl_(std::make_unique<Impl>(service, metrics, std::move(options))) {
  impl_->Configure();
}

HttpServer::~HttpServer() = default;

Status HttpServer::Bind() {
  const config::ServerConfig& c = impl_->options.server;
  if (c.port == 0) {
    const int port = impl_->server.bind_to_any_port(c.host);
    if (port <= 0) {
      return UnavailableError("listen on " + c.host + ":0: cannot bind");
    }
    impl_->port = port;
  } else {
    if (!impl_->server.bind_to_port(c.host, c.port)) {
      return UnavailableError("listen on " + c.host + ":" + std::to_string(c.port) +
                              ": cannot bind (address in use, or not an address of this host)");
    }
    impl_->port = c.port;
  }
  return OkStatus();
}

int HttpServer::port() const { return impl_->port; }

Status HttpServer::Serve() {
  if (!impl_->server.listen_after_bind()) {
    return InternalError("serve: the listening socket failed");
  }
  return OkStatus();
}

void HttpServer::Stop() { impl_->server.stop(); }

}  // namespace schedext::server
