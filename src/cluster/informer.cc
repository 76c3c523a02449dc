// Informer: list, then watch, with relist on 410 and backoff on failures.
// See informer.h for the semantics and how they compare with client-go.
#include "schedext/cluster/informer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <optional>
#include <random>
#include <string_view>
#include <utility>

#include "cluster/api_reply.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::cluster {
namespace {

constexpr int kHttpOk = 200;
constexpr int kHttpGone = 410;

using internal::PercentEncode;

std::string_view DefaultPath(ResourceKind kind) {
  return kind == ResourceKind::kNodes ? "/api/v1/nodes" : "/api/v1/pods";
}

}  // namespace

std::string_view ResourceKindName(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kNodes:
      return "nodes";
    case ResourceKind::kPods:
      return "pods";
    case ResourceKind::kObjects:
      return "objects";
  }
  return "unknown";
}

OwnedObject::OwnedObject(const wire::RawObject& object) {
  arena_.reserve(object.namespace_name.size() + object.name.size() +
                 object.resource_version.size() + object.json.size());
  const auto keep = [this](std::string_view text) {
    const size_t at = arena_.size();
    arena_.append(text);
    return at;
  };
  const size_t ns = keep(object.namespace_name);
  const size_t name = keep(object.name);
  const size_t rv = keep(object.resource_version);
  const size_t json = keep(object.json);
  const std::string_view all(arena_);
  view_.namespace_name = all.substr(ns, object.namespace_name.size());
  view_.name = all.substr(name, object.name.size());
  view_.resource_version = all.substr(rv, object.resource_version.size());
  view_.json = all.substr(json, object.json.size());
}

// The loop's own state: touched only by the informer thread.
class Informer::Run {
 public:
  explicit Run(Informer& informer)
      : in_(informer),
        opts_(informer.options_),
        path_(opts_.path.empty() ? std::string(DefaultPath(opts_.kind)) : opts_.path),
        name_(opts_.name.empty() ? std::string(ResourceKindName(opts_.kind)) : opts_.name),
        rng_(opts_.seed != 0 ? opts_.seed : std::random_device{}()) {}

  void Loop() {
    bool need_list = true;
    while (!Stopping()) {
      if (need_list) {
        Status listed = ListAll();
        if (Stopping()) {
          return;
        }
        if (!listed.ok()) {
          Failure(listed);
          continue;
        }
        need_list = false;
      }
      switch (WatchOnce()) {
        case WatchEnd::kResume:
          break;
        case WatchEnd::kResumeAfterBackoff:
          Backoff();
          break;
        case WatchEnd::kRelist:
          need_list = true;
          SetRelisting();
          break;
        case WatchEnd::kRelistAfterBackoff:
          need_list = true;
          SetRelisting();
          Backoff();
          break;
      }
    }
  }

 private:
  enum class WatchEnd { kResume, kResumeAfterBackoff, kRelist, kRelistAfterBackoff };

  bool Stopping() const {
    std::lock_guard<std::mutex> lock(in_.mu_);
    return in_.stop_;
  }

  std::chrono::steady_clock::time_point Now() const {
    return opts_.now ? opts_.now() : std::chrono::steady_clock::now();
  }

  std::string Query(std::string_view first) const {
    std::string query(path_);
    query.push_back('?');
    query.append(first);
    if (!opts_.extra_query.empty()) {
      query.push_back('&');
      query.append(opts_.extra_query);
    }
    return query;
  }

  void SetRelisting() {
    std::lock_guard<std::mutex> lock(in_.mu_);
    if (in_.stats_.synced) {
      in_.stats_.relisting = true;
    }
  }

  // Records a failure and waits the backoff.
  void Failure(const Status& status) {
    spdlog::warn("informer {}: {}", name_, status.message());
    {
      std::lock_guard<std::mutex> lock(in_.mu_);
      ++in_.stats_.failures;
      in_.stats_.last_error = status.message();
    }
    Backoff();
  }

  // client-go's exponential backoff manager: initial × 2^(n-1) capped at max,
  // plus a jitter of up to 100 %; n restarts after backoff_reset_after quiet.
  void Backoff() {
    const auto now = Now();
    if (consecutive_ > 0 && now - last_failure_ > opts_.backoff_reset_after) {
      consecutive_ = 0;
    }
    last_failure_ = now;
    std::chrono::milliseconds delay = opts_.backoff_initial;
    for (int i = 0; i < consecutive_ && delay < opts_.backoff_max; ++i) {
      delay *= 2;
    }
    delay = std::min(delay, opts_.backoff_max);
    ++consecutive_;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const auto jitter = std::chrono::milliseconds(
        static_cast<int64_t>(static_cast<double>(delay.count()) * unit(rng_)));
    Sleep(delay + jitter);
  }

  void Sleep(std::chrono::milliseconds duration) {
    if (opts_.sleep) {
      opts_.sleep(duration);
      return;
    }
    std::unique_lock<std::mutex> lock(in_.mu_);
    in_.cv_.wait_for(lock, duration, [&] { return in_.stop_; });
  }

  // Decodes `page` into `objects`; the page's ListMeta into `meta` (views into
  // the decoder, valid until the next decode).
  Status DecodePage(std::vector<InformerObject>& objects, wire::ListMeta& meta) {
    if (opts_.kind == ResourceKind::kNodes) {
      return decoder_.DecodeNodeList(buffer_, meta, [&](const wire::NodeObject& node) {
        objects.push_back({std::make_shared<const model::OwnedNode>(
                               node.info, node.resource_version, node.deleting),
                           nullptr, nullptr});
        return true;
      });
    }
    if (opts_.kind == ResourceKind::kObjects) {
      return decoder_.DecodeObjectList(buffer_, meta, [&](const wire::RawObject& object) {
        objects.push_back({nullptr, nullptr, std::make_shared<const OwnedObject>(object)});
        return true;
      });
    }
    return decoder_.DecodePodList(buffer_, meta, [&](const wire::PodObject& pod) {
      objects.push_back({nullptr, std::make_shared<const model::OwnedPod>(
                                      pod.info, pod.resource_version, pod.deleting),
                         nullptr});
      return true;
    });
  }

  // A complete paginated LIST, handed over with OnReplace.
  Status ListAll() {
    {
      std::lock_guard<std::mutex> lock(in_.mu_);
      if (in_.stats_.synced) {
        ++in_.stats_.relists;
      }
    }
    std::vector<InformerObject> objects;
    std::string continue_token;
    std::string list_rv;
    int restarts = 0;
    while (true) {
      std::string first = "limit=" + std::to_string(opts_.page_size);
      if (!continue_token.empty()) {
        first += "&continue=" + PercentEncode(continue_token);
      }
      StatusOr<HttpResult> reply = in_.client_.Get(Query(first));
      if (!reply.ok()) {
        return reply.status().WithContext("list " + std::string(name_));
      }
      if (reply->status == kHttpGone && !continue_token.empty() && restarts < 3) {
        // The continue token expired (the pager's fallback): start over.
        ++restarts;
        objects.clear();
        continue_token.clear();
        continue;
      }
      if (reply->status != kHttpOk) {
        return UnavailableError("list " + std::string(name_) + ": HTTP " +
                                std::to_string(reply->status) + ": " + reply->body.substr(0, 256));
      }
      buffer_.Clear();
      buffer_.Append(reply->body.data(), reply->body.size());
      reply->body = std::string();  // free the text before decoding the next page
      wire::ListMeta meta;
      SCHEDEXT_RETURN_IF_ERROR(DecodePage(objects, meta));
      list_rv.assign(meta.resource_version);
      continue_token.assign(meta.continue_token);
      if (continue_token.empty()) {
        break;
      }
      if (Stopping()) {
        return UnavailableError("stopped");
      }
    }
    const size_t count = objects.size();
    in_.handler_.OnReplace(opts_.kind, std::move(objects));
    resource_version_ = list_rv;
    consecutive_ = 0;
    {
      std::lock_guard<std::mutex> lock(in_.mu_);
      const bool first = !in_.stats_.synced;
      in_.stats_.synced = true;
      in_.stats_.relisting = false;
      ++in_.stats_.lists;
      in_.stats_.resource_version = resource_version_;
      if (first) {
        in_.cv_.notify_all();
      }
    }
    spdlog::info("informer {}: listed {} objects at resourceVersion {}",
                 name_, count, resource_version_);
    return OkStatus();
  }

  // One WATCH request, until it ends; says what to do next.
  WatchEnd WatchOnce() {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const auto timeout = static_cast<int64_t>(static_cast<double>(opts_.min_watch_timeout.count()) *
                                              (1.0 + unit(rng_)));
    const std::string query =
        Query("watch=true&resourceVersion=" + PercentEncode(resource_version_) +
              "&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(timeout));
    {
      std::lock_guard<std::mutex> lock(in_.mu_);
      ++in_.stats_.watches;
    }
    int64_t events = 0;
    std::optional<WatchEnd> verdict;
    Status error;
    const Status ended = in_.client_.Watch(query, [&](std::string_view line) {
      if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) {
        return true;  // keep-alive blank line
      }
      line_.Clear();
      line_.Append(line.data(), line.size());
      Status applied = ApplyEvent(verdict);
      if (!applied.ok()) {
        error = applied;
        verdict = WatchEnd::kRelistAfterBackoff;
      }
      ++events;
      if (verdict.has_value()) {
        return false;
      }
      return !Stopping();
    });
    if (verdict.has_value()) {
      if (!error.ok()) {
        spdlog::warn("informer {}: {}; relisting", name_, error.message());
        RecordFailure(error);
      } else if (*verdict == WatchEnd::kRelist) {
        spdlog::warn("informer {}: resourceVersion {} is gone; relisting",
                     name_, resource_version_);
      }
      return *verdict;
    }
    if (ended.code() == StatusCode::kFailedPrecondition) {
      // The client's code for an HTTP 410 on the WATCH request.
      spdlog::warn("informer {}: watch: {}; relisting", name_,
                   ended.message());
      return WatchEnd::kRelist;
    }
    if (!ended.ok()) {
      spdlog::warn("informer {}: watch: {}; resuming from resourceVersion {}",
                   name_, ended.message(), resource_version_);
      RecordFailure(ended);
      return WatchEnd::kResumeAfterBackoff;
    }
    // A clean end (server timeout, or a drop the transport saw as an end).
    // Without a single event it may be a server refusing quietly: back off.
    return events > 0 ? WatchEnd::kResume : WatchEnd::kResumeAfterBackoff;
  }

  void RecordFailure(const Status& status) {
    std::lock_guard<std::mutex> lock(in_.mu_);
    ++in_.stats_.failures;
    in_.stats_.last_error = status.message();
  }

  // Decodes line_ and applies it. Sets `verdict` when the watch must end.
  Status ApplyEvent(std::optional<WatchEnd>& verdict) {
    wire::WatchEvent event;
    std::string_view rv;
    InformerObject object;
    if (opts_.kind == ResourceKind::kNodes) {
      SCHEDEXT_RETURN_IF_ERROR(decoder_.DecodeNodeEvent(line_, event, node_));
      rv = node_.resource_version;
      if (event.type != wire::WatchEventType::kBookmark &&
          event.type != wire::WatchEventType::kError) {
        object.node = std::make_shared<const model::OwnedNode>(node_.info, node_.resource_version,
                                                               node_.deleting);
      }
    } else if (opts_.kind == ResourceKind::kObjects) {
      SCHEDEXT_RETURN_IF_ERROR(decoder_.DecodeObjectEvent(line_, event, raw_));
      rv = raw_.resource_version;
      if (event.type != wire::WatchEventType::kBookmark &&
          event.type != wire::WatchEventType::kError) {
        object.object = std::make_shared<const OwnedObject>(raw_);
      }
    } else {
      SCHEDEXT_RETURN_IF_ERROR(decoder_.DecodePodEvent(line_, event, pod_));
      rv = pod_.resource_version;
      if (event.type != wire::WatchEventType::kBookmark &&
          event.type != wire::WatchEventType::kError) {
        object.pod = std::make_shared<const model::OwnedPod>(pod_.info, pod_.resource_version,
                                                             pod_.deleting);
      }
    }
    switch (event.type) {
      case wire::WatchEventType::kAdded:
      case wire::WatchEventType::kModified:
        in_.handler_.OnUpsert(opts_.kind, std::move(object));
        break;
      case wire::WatchEventType::kDeleted:
        in_.handler_.OnDelete(opts_.kind, std::move(object));
        break;
      case wire::WatchEventType::kBookmark:
        break;
      case wire::WatchEventType::kError:
        if (event.error_code == kHttpGone) {
          verdict = WatchEnd::kRelist;
        } else {
          RecordFailure(UnavailableError("watch ERROR event: code " +
                                         std::to_string(event.error_code) + ": " +
                                         std::string(event.error_message)));
          verdict = WatchEnd::kResumeAfterBackoff;
        }
        return OkStatus();
    }
    if (!rv.empty()) {
      resource_version_.assign(rv);
    }
    std::lock_guard<std::mutex> lock(in_.mu_);
    ++in_.stats_.events;
    in_.stats_.resource_version = resource_version_;
    return OkStatus();
  }

  Informer& in_;
  const InformerOptions& opts_;
  const std::string path_;
  const std::string name_;  // for logs
  std::mt19937_64 rng_;
  wire::ObjectDecoder decoder_;
  wire::RequestBuffer buffer_;  // the LIST page being decoded
  wire::RequestBuffer line_;    // the watch event being decoded
  wire::NodeObject node_;
  wire::PodObject pod_;
  wire::RawObject raw_;
  std::string resource_version_;  // where the next WATCH starts
  int consecutive_ = 0;           // failures since the backoff last reset
  std::chrono::steady_clock::time_point last_failure_{};
};

Informer::Informer(KubeClient& client, InformerHandler& handler, InformerOptions options)
    : client_(client), handler_(handler), options_(std::move(options)) {
  // Objects of other resources have no default collection.
  assert(options_.kind != ResourceKind::kObjects || !options_.path.empty());
}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  assert(!thread_.joinable());
  thread_ = std::thread([this] { Loop(); });
}

void Informer::Loop() {
  Run run(*this);
  run.Loop();
}

void Informer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    client_.CancelWatches();
    thread_.join();
  }
}

bool Informer::Synced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_.synced;
}

bool Informer::Relisting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_.relisting;
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return stats_.synced || stop_; }) && stats_.synced;
}

InformerStats Informer::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace schedext::cluster
