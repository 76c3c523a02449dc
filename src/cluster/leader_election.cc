// LeaderElector: client-go's Lease protocol over KubeClient; see leader_election.h.
#include "schedext/cluster/leader_election.h"

#include <spdlog/spdlog.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <utility>

#include "cluster/api_reply.h"
#include "common/file.h"
#include "common/text.h"

namespace schedext::cluster {
namespace {

using internal::CodeForHttpStatus;
using internal::DescribeReply;
using internal::PercentEncode;
// Insertion-ordered, so bodies read the same in logs and tests.
using ordered_json = nlohmann::ordered_json;
using Json = nlohmann::json;

constexpr std::string_view kMergePatch = "application/merge-patch+json";
constexpr std::string_view kLeasesPath = "/apis/coordination.k8s.io/v1/namespaces/";
// Followers wait retry_period × (1 + up to this) between attempts.
constexpr double kFollowerJitter = 0.2;

int64_t ToNanos(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// metav1.MicroTime: RFC 3339 in UTC with microseconds.
std::string FormatMicroTime(std::chrono::system_clock::time_point t) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  time_t seconds = static_cast<time_t>(micros / 1000000);
  int64_t fraction = micros % 1000000;
  if (fraction < 0) {
    fraction += 1000000;
    --seconds;
  }
  tm parts{};
  gmtime_r(&seconds, &parts);
  char buf[96];  // room for any int the compiler cannot rule out
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", parts.tm_year + 1900,
                parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                static_cast<long long>(fraction));
  return buf;
}

std::string StringField(const Json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    return "";
  }
  return it->get<std::string>();
}

int64_t IntField(const Json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) {
    return 0;
  }
  return it->get<int64_t>();
}

}  // namespace

struct LeaderElector::Observed {
  std::string resource_version;
  std::string spec;  // the spec as the API server returned it, to detect changes
  std::string holder;
  int64_t transitions = 0;
  std::string acquire_time;
  std::chrono::steady_clock::time_point changed_at;  // local time the spec last changed
};

Status ValidateLeaderElectionOptions(const LeaderElectionOptions& o) {
  if (o.identity.empty()) {
    return InvalidArgumentError("leader election: identity must not be empty");
  }
  if (o.lease_name.empty() || o.lease_namespace.empty()) {
    return InvalidArgumentError("leader election: lease name and namespace must not be empty");
  }
  using std::chrono::milliseconds;
  if (o.lease_duration <= milliseconds(0) || o.renew_deadline <= milliseconds(0) ||
      o.retry_period <= milliseconds(0)) {
    return InvalidArgumentError("leader election: durations must be positive");
  }
  if (o.lease_duration <= o.renew_deadline) {
    return InvalidArgumentError(
        "leader election: leaseDuration must be greater than "
        "renewDeadline");
  }
  // client-go: renewDeadline > JitterFactor (1.2) × retryPeriod.
  if (o.renew_deadline.count() * 10 <= o.retry_period.count() * 12) {
    return InvalidArgumentError(
        "leader election: renewDeadline must be greater than 1.2 × "
        "retryPeriod");
  }
  return OkStatus();
}

std::string DefaultLeaseNamespace(const char* pod_namespace_env,
                                  const std::string& service_account_namespace_file) {
  if (pod_namespace_env != nullptr && *pod_namespace_env != '\0') {
    return pod_namespace_env;
  }
  const StatusOr<std::string> text = ReadFile(service_account_namespace_file);
  const std::string_view name = text.ok() ? TrimSpace(*text) : std::string_view();
  return name.empty() ? "default" : std::string(name);
}

std::string DefaultLeaderIdentity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "schedext");
  }
  return std::string(host) + "_" + std::to_string(static_cast<long long>(getpid()));
}

LeaderElector::LeaderElector(KubeClient& client, LeaderElectionOptions options)
    : client_(client),
      options_(std::move(options)),
      holder_(std::make_shared<const std::string>()),
      jitter_(static_cast<std::minstd_rand::result_type>(
          std::hash<std::string>()(options_.identity) ^
          static_cast<size_t>(std::chrono::steady_clock::now().time_since_epoch().count()))) {}

LeaderElector::~LeaderElector() { Stop(); }

std::chrono::steady_clock::time_point LeaderElector::Now() const {
  return options_.now ? options_.now() : std::chrono::steady_clock::now();
}

std::string LeaderElector::WallNow() const {
  return FormatMicroTime(options_.wall_now ? options_.wall_now()
                                           : std::chrono::system_clock::now());
}

std::string LeaderElector::LeasePath() const {
  return std::string(kLeasesPath) + PercentEncode(options_.lease_namespace) + "/leases/" +
         PercentEncode(options_.lease_name);
}

bool LeaderElector::IsLeader() const {
  const int64_t until = serve_until_ns_.load(std::memory_order_acquire);
  return until != 0 && ToNanos(Now()) < until;
}

std::shared_ptr<const std::string> LeaderElector::holder() const {
  return holder_.load(std::memory_order_acquire);
}

std::string LeaderElector::FollowerReason() const {
  const std::string lease = "lease " + options_.lease_namespace + "/" + options_.lease_name;
  const std::shared_ptr<const std::string> h = holder();
  if (h->empty()) {
    return lease + " has no holder yet";
  }
  if (*h == options_.identity) {
    return lease + " could not be renewed within renewDeadline";
  }
  return lease + " is held by " + *h;
}

StatusOr<bool> LeaderElector::Read() {
  const std::string context = "get lease " + options_.lease_namespace + "/" + options_.lease_name;
  StatusOr<HttpResult> reply = client_.Get(LeasePath());
  if (!reply.ok()) {
    return reply.status().WithContext(context);
  }
  if (reply->status == 404) {
    observed_.reset();
    holder_.store(std::make_shared<const std::string>(), std::memory_order_release);
    return false;
  }
  if (reply->status != 200) {
    return Status(CodeForHttpStatus(reply->status), context + ": " + DescribeReply(*reply));
  }
  const Json lease = Json::parse(reply->body, nullptr, false);
  if (!lease.is_object()) {
    return InternalError(context + ": the reply is not a JSON object");
  }
  auto meta = lease.find("metadata");
  const std::string rv = meta != lease.end() && meta->is_object()
                             ? StringField(*meta, "resourceVersion")
                             : std::string();
  if (rv.empty()) {
    return InternalError(context + ": the reply has no metadata.resourceVersion");
  }
  auto spec_it = lease.find("spec");
  const Json spec = spec_it != lease.end() && spec_it->is_object() ? *spec_it : Json::object();
  std::string raw = spec.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (!observed_ || observed_->spec != raw) {
    auto next = std::make_unique<Observed>();
    next->changed_at = Now();
    next->spec = std::move(raw);
    next->holder = StringField(spec, "holderIdentity");
    next->transitions = IntField(spec, "leaseTransitions");
    next->acquire_time = StringField(spec, "acquireTime");
    observed_ = std::move(next);
    holder_.store(std::make_shared<const std::string>(observed_->holder),
                  std::memory_order_release);
  }
  observed_->resource_version = rv;
  return true;
}

Status LeaderElector::Write(const std::string* resource_version, std::string_view holder,
                            int64_t duration_seconds, int64_t transitions,
                            const std::string& acquire_time, const std::string& now_wall) {
  ordered_json spec = ordered_json::object();
  spec["holderIdentity"] = holder;
  spec["leaseDurationSeconds"] = duration_seconds;
  spec["acquireTime"] = acquire_time;
  spec["renewTime"] = now_wall;
  spec["leaseTransitions"] = transitions;
  ordered_json meta = ordered_json::object();
  meta["name"] = options_.lease_name;
  if (resource_version == nullptr) {
    meta["namespace"] = options_.lease_namespace;
  } else {
    // The precondition: 409 Conflict if the lease changed since we read it.
    meta["resourceVersion"] = *resource_version;
  }
  ordered_json body = ordered_json::object();
  if (resource_version == nullptr) {
    body["apiVersion"] = "coordination.k8s.io/v1";
    body["kind"] = "Lease";
  }
  body["metadata"] = std::move(meta);
  body["spec"] = std::move(spec);
  std::string text;
  try {
    text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return InternalError(std::string("encode lease: ") + e.what());
  }
  const std::string lease = options_.lease_namespace + "/" + options_.lease_name;
  const std::string context =
      (resource_version == nullptr ? "create lease " : "update lease ") + lease;
  StatusOr<HttpResult> reply =
      resource_version == nullptr
          ? client_.Post(
                std::string(kLeasesPath) + PercentEncode(options_.lease_namespace) + "/leases",
                text)
          : client_.Patch(LeasePath(), text, kMergePatch);
  if (!reply.ok()) {
    return reply.status().WithContext(context);
  }
  if (reply->status < 200 || reply->status >= 300) {
    // 409: another candidate wrote (or created) the lease first.
    return Status(CodeForHttpStatus(reply->status), context + ": " + DescribeReply(*reply));
  }
  // What we wrote is now the observed record, at the local time of the write.
  auto next = std::make_unique<Observed>();
  next->changed_at = Now();
  next->holder = std::string(holder);
  next->transitions = transitions;
  next->acquire_time = acquire_time;
  const Json written = Json::parse(reply->body, nullptr, false);
  if (written.is_object()) {
    auto meta_it = written.find("metadata");
    if (meta_it != written.end() && meta_it->is_object()) {
      next->resource_version = StringField(*meta_it, "resourceVersion");
    }
    auto spec_it = written.find("spec");
    if (spec_it != written.end() && spec_it->is_object()) {
      next->spec = spec_it->dump(-1, ' ', false, Json::error_handler_t::replace);
    }
  }
  observed_ = std::move(next);
  holder_.store(std::make_shared<const std::string>(holder), std::memory_order_release);
  return OkStatus();
}

Status LeaderElector::Attempt(std::chrono::steady_clock::time_point start) {
  const std::string now_wall = WallNow();
  const int64_t duration_seconds = std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(options_.lease_duration).count());
  SCHEDEXT_ASSIGN_OR_RETURN(const bool exists, Read());
  if (!exists) {
    SCHEDEXT_RETURN_IF_ERROR(
        Write(nullptr, options_.identity, duration_seconds, 0, now_wall, now_wall));
  } else {
    const Observed& o = *observed_;
    const bool ours = o.holder == options_.identity;
    if (!ours) {
      // Whatever our deadline says: somebody else holds the lease now.
      serve_until_ns_.store(0, std::memory_order_release);
      if (!o.holder.empty() && Now() < o.changed_at + options_.lease_duration) {
        return FailedPreconditionError("lease " + options_.lease_namespace + "/" +
                                       options_.lease_name + " is held by " + o.holder);
      }
    }
    const std::string rv = o.resource_version;
    const std::string acquire_time = ours && !o.acquire_time.empty() ? o.acquire_time : now_wall;
    SCHEDEXT_RETURN_IF_ERROR(Write(&rv, options_.identity, duration_seconds,
                                   ours ? o.transitions : o.transitions + 1, acquire_time,
                                   now_wall));
  }
  if (!stopping_.load(std::memory_order_acquire)) {
    serve_until_ns_.store(ToNanos(start + options_.renew_deadline), std::memory_order_release);
  }
  return OkStatus();
}

void LeaderElector::NoteLeading(std::string_view why) {
  const bool now_leading = IsLeader();
  if (now_leading == leading_) {
    return;
  }
  leading_ = now_leading;
  transitions_.fetch_add(1, std::memory_order_relaxed);
  if (now_leading) {
    spdlog::info("leader election: {} became the leader (lease {}/{})", options_.identity,
                 options_.lease_namespace, options_.lease_name);
  } else {
    spdlog::warn("leader election: {} stopped leading: {}", options_.identity,
                 why.empty() ? FollowerReason() : std::string(why));
  }
  if (options_.on_change) {
    options_.on_change(now_leading);
  }
}

Status LeaderElector::TryAcquireOrRenew() {
  Status s = Attempt(Now());
  NoteLeading();
  return s;
}

Status LeaderElector::Release() {
  serve_until_ns_.store(0, std::memory_order_release);
  NoteLeading("releasing the lease");
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!observed_ || attempt > 0) {
      SCHEDEXT_ASSIGN_OR_RETURN(const bool exists, Read());
      if (!exists) {
        return OkStatus();
      }
    }
    if (observed_->holder != options_.identity) {
      return OkStatus();  // not ours: nothing to give up
    }
    const std::string rv = observed_->resource_version;
    const std::string now_wall = WallNow();
    Status s = Write(&rv, "", 1, observed_->transitions, now_wall, now_wall);
    if (s.ok() || s.code() != StatusCode::kFailedPrecondition) {
      return s;
    }
    // 409: our view was stale (a renew raced the release); read and retry.
  }
  return FailedPreconditionError("release lease " + options_.lease_namespace + "/" +
                                 options_.lease_name + ": conflicting writes");
}

void LeaderElector::Start() {
  if (started_) {
    return;
  }
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Run() {
  std::uniform_real_distribution<double> jitter(0.0, kFollowerJitter);
  for (;;) {
    const bool was_leading = leading_;
    Status s = TryAcquireOrRenew();
    if (!s.ok()) {
      if (was_leading || leading_) {
        spdlog::warn("leader election: renew: {}", s.message());
      } else if (s.code() != StatusCode::kFailedPrecondition) {
        spdlog::warn("leader election: {}", s.message());
      } else {
        spdlog::debug("leader election: {}", s.message());
      }
    }
    auto wait =
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.retry_period);
    if (!leading_) {
      wait += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          options_.retry_period * jitter(jitter_));
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, wait, [this] { return stop_; })) {
      return;
    }
  }
}

void LeaderElector::StopServing() {
  stopping_.store(true, std::memory_order_release);
  serve_until_ns_.store(0, std::memory_order_release);
}

void LeaderElector::Stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  StopServing();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  if (!started_) {
    return;  // driven by hand (tests): they release explicitly
  }
  Status s = Release();
  if (!s.ok()) {
    spdlog::warn("leader election: release: {}", s.message());
  } else {
    spdlog::info("leader election: {} stopped (lease {}/{} released if held)", options_.identity,
                 options_.lease_namespace, options_.lease_name);
  }
}

}  // namespace schedext::cluster
