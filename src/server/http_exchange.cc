// Routing, running and reply heads of the listener; see http_exchange.h.
#include "server/http_exchange.h"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <charconv>
#include <exception>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>

#include "schedext/wire/encoder.h"

namespace schedext::server::http {
namespace {

std::optional<Verb> ParseVerb(std::string_view s) {
  if (s == "filter") return Verb::kFilter;
  if (s == "prioritize") return Verb::kPrioritize;
  if (s == "preempt") return Verb::kPreempt;
  if (s == "bind") return Verb::kBind;
  if (s == "explain") return Verb::kExplain;
  return std::nullopt;
}

struct VerbPath {
  std::string_view profile;  // "" for the default profile
  std::string_view verb;
};

// "/<verb>" or "/<profile>/<verb>", with an optional trailing slash. Profile
// names are checked against the configured ones later, so any segment goes.
std::optional<VerbPath> ParseVerbPath(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return std::nullopt;
  }
  path.remove_prefix(1);
  if (!path.empty() && path.back() == '/') {
    path.remove_suffix(1);
  }
  const size_t slash = path.find('/');
  VerbPath out;
  if (slash == std::string_view::npos) {
    out.verb = path;
  } else {
    out.profile = path.substr(0, slash);
    out.verb = path.substr(slash + 1);
    if (out.profile.empty() || out.verb.find('/') != std::string_view::npos) {
      return std::nullopt;
    }
  }
  if (!ParseVerb(out.verb)) {
    return std::nullopt;
  }
  return out;
}

bool IsJsonContentType(std::string_view type) {
  type = type.substr(0, type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) {
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

// The extra route serving `path`, with the rest after its "/" in `rest`.
const HttpServerOptions::GetRoute* FindGetRoute(
    const std::vector<HttpServerOptions::GetRoute>& routes, std::string_view path,
    std::string_view& rest) {
  for (const HttpServerOptions::GetRoute& route : routes) {
    if (!path.starts_with(route.path)) {
      continue;
    }
    const std::string_view after = path.substr(route.path.size());
    if (after.empty() || after.front() == '/') {
      rest = after.empty() ? after : after.substr(1);
      return &route;
    }
  }
  return nullptr;
}

// Request-derived text in a reply message: printable ASCII only, cut.
std::string Printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 200; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
  }
  if (s.size() > 200) {
    out.append("...");
  }
  return out;
}

Route Refuse(int status, std::string message, std::string_view allow = {}) {
  Route r;
  r.kind = Route::Kind::kRefuse;
  r.status = status;
  r.message = std::move(message);
  r.allow = allow;
  return r;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
  }
}

// The Date header value (RFC 9110 §6.6.1: an origin server with a clock sends
// one), formatted once a second per thread.
std::string_view HttpDate() {
  thread_local time_t formatted_at = 0;
  thread_local char text[40] = {};
  const time_t now = ::time(nullptr);
  if (now != formatted_at) {
    tm parts{};
    gmtime_r(&now, &parts);
    strftime(text, sizeof(text), "%a, %d %b %Y %H:%M:%S GMT", &parts);
    formatted_at = now;
  }
  return text;
}

}  // namespace

Route Router::Resolve(std::string_view method, std::string_view path,
                      const std::optional<std::string_view>& content_type,
                      bool status_only) const {
  const bool get_like = method == "GET" || method == "HEAD";
  std::optional<Route::Get> fixed;
  if (path == "/healthz") fixed = Route::Get::kHealthz;
  if (path == "/readyz") fixed = Route::Get::kReadyz;
  if (path == "/version") fixed = Route::Get::kVersion;
  if (path == "/metrics") fixed = Route::Get::kMetrics;
  std::string_view rest;
  const HttpServerOptions::GetRoute* extra =
      fixed || status_only ? nullptr : FindGetRoute(options_.get_routes, path, rest);
  if (fixed || extra != nullptr) {
    if (!get_like) {
      return Refuse(405,
                    "method " + Printable(method) + " not allowed on " + Printable(path) +
                        ": use GET",
                    "GET");
    }
    Route r;
    r.kind = Route::Kind::kGet;
    r.get = fixed.value_or(Route::Get::kExtra);
    r.extra = extra;
    r.extra_rest = std::string(rest);
    r.head_only = method == "HEAD";
    return r;
  }
  if (status_only) {
    return Refuse(404, "no route for " + Printable(method) + " " + Printable(path) +
                           " on the status listener (GET /healthz, /readyz, /version, /metrics)");
  }
  const std::optional<VerbPath> verb_path = ParseVerbPath(path);
  if (!verb_path) {
    std::string message = "no route for " + Printable(method) + " " + Printable(path) +
                          " (POST /filter, /prioritize, /preempt, /bind or /<profile>/<verb>; "
                          "GET /healthz, /readyz, /version, /metrics";
    for (const HttpServerOptions::GetRoute& route : options_.get_routes) {
      message += ", " + route.path + "[/...]";
    }
    return Refuse(404, message + ")");
  }
  if (method != "POST") {
    return Refuse(405,
                  "method " + Printable(method) + " not allowed on " + Printable(path) +
                      ": use POST",
                  "POST");
  }
  const int profile = service_.FindProfile(verb_path->profile);
  if (profile < 0) {
    return Refuse(404, "no profile \"" + Printable(verb_path->profile) + "\" for " +
                           Printable(path));
  }
  if (content_type && !IsJsonContentType(*content_type)) {
    return Refuse(415, "content type \"" + Printable(*content_type) +
                           "\" is not supported: send application/json (with curl: -H "
                           "'Content-Type: application/json')");
  }
  Route r;
  r.kind = Route::Kind::kVerb;
  r.verb = *ParseVerb(verb_path->verb);
  r.profile = static_cast<size_t>(profile);
  r.node_fields = service_.profile(r.profile).node_fields();
  return r;
}

Outcome Router::Run(const Route& route, Worker& w) const {
  w.out.clear();
  w.scratch.reply_splices.clear();
  // The session writes a reply in pieces (WriteReply), straight from the body.
  w.scratch.splice_replies = true;
  Outcome outcome;
  switch (route.kind) {
    case Route::Kind::kRefuse:
      outcome.status = route.status;
      ErrorBody(route.message, w.out);
      return outcome;
    case Route::Kind::kVerb: {
      if (options_.not_serving) {
        if (const std::string why = options_.not_serving(); !why.empty()) {
          outcome.status = 503;
          ErrorBody("not the leader: " + why, w.out);
          return outcome;
        }
      }
      // The service never throws on bad input; anything else thrown is a bug
      // that must not take the listener down with it.
      try {
        RequestSummary summary;
        outcome.status =
            service_.Handle(route.verb, route.profile, w.body, w.scratch, w.out, summary);
        w.out.push_back('\n');
      } catch (const std::exception& e) {
        spdlog::error("{}: unhandled exception: {}", VerbName(route.verb), e.what());
        outcome.status = 500;
        ErrorBody("internal error (see the schedext log)", w.out);
      }
      return outcome;
    }
    case Route::Kind::kGet:
      break;
  }
  outcome.content_type = "text/plain";
  switch (route.get) {
    case Route::Get::kHealthz:
      w.out = "ok\n";
      break;
    case Route::Get::kReadyz:
      if (const std::string why = options_.not_serving ? options_.not_serving() : std::string();
          !why.empty()) {
        outcome.status = 503;
        w.out = "not ready: not the leader: " + why + "\n";
      } else if (options_.ready()) {
        w.out = "ok\n";
      } else {
        outcome.status = 503;
        w.out = "not ready: the cluster cache has not synced\n";
      }
      break;
    case Route::Get::kVersion:
      outcome.content_type = "application/json";
      w.out = "{\"version\":";
      wire::AppendJsonString(options_.version, w.out);
      w.out.append("}\n");
      break;
    case Route::Get::kMetrics:
      outcome.content_type = "text/plain; version=0.0.4";
      if (metrics_ != nullptr) {
        metrics_->Render(w.out);
      }
      break;
    case Route::Get::kExtra:
      outcome.content_type = "application/json";
      outcome.status = route.extra->handler(route.extra_rest, w.out);
      break;
  }
  return outcome;
}

void Exchange::Begin(const RequestHead& head, bool status_only) {
  End();
  http10_ = head.minor_version == 0;
  route_ = router_.Resolve(head.method, head.path, head.content_type, status_only);
  route_.head_only = head.method == "HEAD";
  outcome_ = Outcome{};
  worker_ = workers_.Acquire(head.content_length);
  worker_->body.Clear();
  offer_body_ = head.framing == BodyFraming::kContentLength && route_.kind == Route::Kind::kVerb &&
                (route_.verb == Verb::kFilter || route_.verb == Verb::kPrioritize);
}

void Exchange::BodyProgress(uint64_t content_length) {
  if (offer_body_) {
    offer_body_ = worker_->scratch.decoder.DecodeWhileReceiving(worker_->body, content_length,
                                                                route_.node_fields);
  }
}

Exchange::RunOn Exchange::Received() {
  if (route_.kind != Route::Kind::kVerb) {
    return RunOn::kIoThread;
  }
  if (route_.verb == Verb::kBind) {
    worker_->scratch.bind_not_after = std::chrono::steady_clock::now() +
                                      std::chrono::milliseconds(config_.bind_deadline_millis);
    return RunOn::kBindPool;
  }
  return worker_->body.size() >= config_.offload_body_bytes ? RunOn::kLargeVerbPool
                                                            : RunOn::kIoThread;
}

void Exchange::Run() { outcome_ = router_.Run(route_, *worker_); }

void Exchange::Refuse(int status, std::string_view message) {
  if (worker_ == nullptr) {
    worker_ = workers_.Acquire(0);
  }
  route_ = Route{};
  outcome_ = Outcome{status, "application/json"};
  ErrorBody(message, worker_->out);
}

const std::vector<std::string_view>& Exchange::Reply(bool keep_alive) {
  Worker& w = *worker_;
  const std::vector<wire::ReplySplice>& splices = w.scratch.reply_splices;
  w.head.clear();
  AppendReplyHead(outcome_.status, outcome_.content_type, wire::SplicedSize(w.out, splices),
                  keep_alive, keep_alive && http10_, route_.allow, w.head);
  reply_.clear();
  reply_.push_back(w.head);
  if (route_.head_only) {
    return reply_;
  }
  // A filter reply: the envelope from `out`, the passing nodes (or long runs
  // of passing names) from the request body, gathered by the kernel instead
  // of copied into `out` first.
  const std::string_view out = w.out;
  size_t from = 0;
  for (const wire::ReplySplice& splice : splices) {
    if (splice.at > from) {
      reply_.push_back(out.substr(from, splice.at - from));
    }
    reply_.push_back(splice.bytes);
    from = splice.at;
  }
  if (out.size() > from) {
    reply_.push_back(out.substr(from));
  }
  return reply_;
}

void Exchange::End() {
  if (worker_ != nullptr) {
    workers_.Release(std::move(worker_));
  }
}

void ErrorBody(std::string_view message, std::string& out) {
  out.clear();
  wire::AppendErrorBody(message, out);
  out.push_back('\n');
}

void AppendReplyHead(int status, std::string_view content_type, size_t content_length,
                     bool keep_alive, bool http10_keep_alive, std::string_view allow,
                     std::string& out) {
  char number[24];
  out.append("HTTP/1.1 ");
  char* end = std::to_chars(number, number + sizeof(number), status).ptr;
  out.append(number, end).append(" ").append(ReasonPhrase(status)).append("\r\nDate: ");
  out.append(HttpDate()).append("\r\nContent-Type: ").append(content_type);
  out.append("\r\nContent-Length: ");
  end = std::to_chars(number, number + sizeof(number), content_length).ptr;
  out.append(number, end).append("\r\n");
  if (!allow.empty()) {
    out.append("Allow: ").append(allow).append("\r\n");
  }
  if (!keep_alive) {
    out.append("Connection: close\r\n");
  } else if (http10_keep_alive) {
    out.append("Connection: keep-alive\r\n");
  }
  out.append("\r\n");
}

}  // namespace schedext::server::http
