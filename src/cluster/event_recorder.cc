#include "schedext/cluster/event_recorder.h"

#include <cstdio>
#include <ctime>
#include <exception>
#include <iterator>
#include <utility>

#include <nlohmann/json.hpp>

#include "cluster/api_reply.h"

namespace schedext::cluster {
namespace {

using ordered_json = nlohmann::ordered_json;
using internal::CodeForHttpStatus;
using internal::DescribeReply;
using internal::PercentEncode;

// Cut to at most `limit` bytes without splitting a UTF-8 sequence.
std::string_view CutUtf8(std::string_view text, size_t limit) {
  if (text.size() <= limit) {
    return text;
  }
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;
  }
  return text.substr(0, end);
}

std::string EventsPath(std::string_view ns) {
  return "/apis/events.k8s.io/v1/namespaces/" + PercentEncode(ns) + "/events";
}

std::string Dump(const ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

EventRecorder::EventRecorder(KubeClient& client, EventRecorderOptions options)
    : client_(client), options_(std::move(options)) {}

std::string EventRecorder::MicroTime(WallTime t) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(micros % 1000000));
  return buf;
}

std::string EventRecorder::EventName(std::string_view pod_name, WallTime now) {
  char suffix[24];
  std::snprintf(suffix, sizeof(suffix), ".%llx",
                static_cast<unsigned long long>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch())
                        .count()));
  const std::string_view s(suffix);
  return std::string(pod_name.substr(0, 253 - s.size())) + std::string(s);
}

EventKind EventRecorder::Resolved(EventKind kind) const {
  if (kind.reason.empty()) kind.reason = options_.reason;
  if (kind.type.empty()) kind.type = options_.type;
  return kind;
}

std::string EventRecorder::Key(const EventPod& pod, EventKind kind) {
  std::string key = pod.namespace_name + "/" + pod.name + "/" + pod.uid + "/";
  key += kind.reason;
  return key;
}

std::string EventRecorder::EventBody(const EventPod& pod, std::string_view event_name,
                                     std::string_view note, WallTime now, EventKind kind) const {
  kind = Resolved(kind);
  ordered_json body = ordered_json::object();
  body["apiVersion"] = "events.k8s.io/v1";
  body["kind"] = "Event";
  body["metadata"] = {{"name", event_name}, {"namespace", pod.namespace_name}};
  body["eventTime"] = MicroTime(now);
  body["reportingController"] = options_.reporting_controller;
  body["reportingInstance"] = options_.reporting_instance;
  body["action"] = options_.action;
  body["reason"] = kind.reason;
  ordered_json regarding = {{"apiVersion", "v1"},
                            {"kind", "Pod"},
                            {"namespace", pod.namespace_name},
                            {"name", pod.name}};
  if (!pod.uid.empty()) {
    regarding["uid"] = pod.uid;
  }
  body["regarding"] = std::move(regarding);
  body["note"] = CutUtf8(note, kEventNoteLimit);
  body["type"] = kind.type;
  return Dump(body);
}

EventWrite EventRecorder::Create(const EventPod& pod, std::string_view note, WallTime now,
                                 EventKind kind, Status* error) {
  kind = Resolved(kind);
  const std::string name = EventName(pod.name, now);
  std::string body;
  try {
    body = EventBody(pod, name, note, now, kind);
  } catch (const std::exception& e) {
    if (error != nullptr) *error = InternalError(std::string("event: encode: ") + e.what());
    return EventWrite::kFailed;
  }
  StatusOr<HttpResult> reply = client_.Post(EventsPath(pod.namespace_name), body);
  if (!reply.ok() || reply->status < 200 || reply->status >= 300) {
    if (error != nullptr) {
      *error = reply.ok() ? Status(CodeForHttpStatus(reply->status), DescribeReply(*reply))
                          : reply.status();
    }
    return EventWrite::kFailed;
  }
  std::string key = Key(pod, kind);
  if (auto found = index_.find(key); found != index_.end()) {
    auto old = found->second;
    index_.erase(found);
    lru_.erase(old);
  }
  Entry entry;
  entry.key = std::move(key);
  entry.pod = pod;
  entry.reason = std::string(kind.reason);
  entry.type = std::string(kind.type);
  entry.event_name = name;
  entry.note = std::string(CutUtf8(note, kEventNoteLimit));
  entry.created = entry.last_observed = entry.last_written = now;
  lru_.push_front(std::move(entry));
  index_.emplace(lru_.front().key, lru_.begin());
  while (lru_.size() > options_.max_pods) {
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  return EventWrite::kCreated;
}

EventWrite EventRecorder::Update(Lru::iterator it, WallTime now, Status* error) {
  ordered_json patch = {
      {"series", {{"count", it->count}, {"lastObservedTime", MicroTime(it->last_observed)}}}};
  StatusOr<HttpResult> reply = client_.Patch(
      EventsPath(it->pod.namespace_name) + "/" + PercentEncode(it->event_name), Dump(patch),
      "application/merge-patch+json");
  if (reply.ok() && reply->status == 404) {
    // Events expire (the API server's --event-ttl, 1 h by default): a series
    // that outlived its Event starts a new one.
    const EventPod pod = it->pod;
    const std::string note = it->note;
    const std::string reason = it->reason;
    const std::string type = it->type;
    it->last_written = now;  // if the create fails too, wait an interval
    return Create(pod, note, now, EventKind{reason, type}, error);
  }
  if (!reply.ok() || reply->status < 200 || reply->status >= 300) {
    if (error != nullptr) {
      *error = reply.ok() ? Status(CodeForHttpStatus(reply->status), DescribeReply(*reply))
                          : reply.status();
    }
    // Not retried before the next interval: the API is refusing or away.
    it->last_written = now;
    return EventWrite::kFailed;
  }
  it->written_count = it->count;
  it->last_written = now;
  return EventWrite::kUpdated;
}

EventWrite EventRecorder::Record(const EventPod& pod, std::string_view note, WallTime now,
                                 Status* error, EventKind kind) {
  kind = Resolved(kind);
  const std::string key = Key(pod, kind);
  auto found = index_.find(key);
  if (found != index_.end() && now - found->second->last_observed > options_.series_window) {
    lru_.erase(found->second);
    index_.erase(found);
    found = index_.end();
  }
  if (found == index_.end()) {
    return Create(pod, note, now, kind, error);
  }
  Lru::iterator it = found->second;
  lru_.splice(lru_.begin(), lru_, it);  // most recently seen first; iterators stay valid
  if (CutUtf8(note, kEventNoteLimit) != it->note) {
    if (now - it->created < options_.update_interval) {
      return EventWrite::kRateLimited;
    }
    return Create(pod, note, now, kind, error);
  }
  ++it->count;
  it->last_observed = now;
  if (now - it->last_written < options_.update_interval) {
    return EventWrite::kCounted;
  }
  return Update(it, now, error);
}

size_t EventRecorder::Flush(WallTime now) {
  size_t sent = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (now - it->last_observed > options_.series_window) {
      index_.erase(it->key);
      it = lru_.erase(it);
      continue;
    }
    if (it->count != it->written_count && now - it->last_written >= options_.update_interval) {
      // Update may replace the entry (a new Event after 404): step past it first.
      auto current = it++;
      if (Update(current, now, nullptr) == EventWrite::kUpdated) {
        ++sent;
      }
      continue;
    }
    ++it;
  }
  return sent;
}

}  // namespace schedext::cluster
