#include "schedext/policy/policy_host.h"

#include <string>
#include <utility>

namespace schedext::policy {
namespace {

// Paths of schedext's own GET routes and verbs, which no policy may shadow.
bool Reserved(std::string_view path) {
  for (std::string_view own : {"/healthz", "/readyz", "/version", "/metrics", "/filter",
                               "/prioritize", "/preempt", "/bind"}) {
    if (path == own) {
      return true;
    }
  }
  return false;
}

// A path is "/" followed by segments of [A-Za-z0-9._-], no empty segment and
// no trailing "/" (the server matches `path` and `path`/...).
bool ValidRoutePath(std::string_view path) {
  if (path.size() < 2 || path.front() != '/' || path.back() == '/') {
    return false;
  }
  char previous = '\0';
  for (char c : path) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '/';
    if (!ok || (c == '/' && previous == '/')) {
      return false;
    }
    previous = c;
  }
  return true;
}

// Label / field selectors and namespaces travel in a query string; the
// informer URL-encodes them, but control characters have no business there.
bool Printable(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return false;
    }
  }
  return true;
}

// A DNS-1123 label, as namespaces are ("" = all namespaces).
bool ValidNamespace(std::string_view name) {
  if (name.size() > 63) {
    return false;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && i > 0 && i + 1 < name.size())) {
      return false;
    }
  }
  return true;
}

// A DNS-1123 subdomain: dot-separated DNS-1123 labels, as API groups are
// ("" = the core group).
bool ValidGroup(std::string_view group) {
  if (group.size() > 253) {
    return false;
  }
  while (!group.empty()) {
    const size_t dot = group.find('.');
    const std::string_view label = group.substr(0, dot);
    if (label.empty() || !ValidNamespace(label)) {
      return false;
    }
    if (dot == std::string_view::npos) {
      break;
    }
    group.remove_prefix(dot + 1);
    if (group.empty()) {
      return false;  // a trailing dot
    }
  }
  return true;
}

}  // namespace

PolicyHost::PolicyHost() = default;

PolicyHost::~PolicyHost() { StopBackground(); }

std::shared_ptr<const ClusterView> PolicyHost::Snapshot() const {
  return snapshot_ ? snapshot_() : nullptr;
}

StatusOr<NodeStateSlot> PolicyHost::AddNodeAccounting(
    std::shared_ptr<const NodeAccounting> accounting) {
  if (accounting == nullptr) {
    return InvalidArgumentError("node accounting: null");
  }
  accountings_.push_back(std::move(accounting));
  return accountings_.size() - 1;
}

std::optional<size_t> PolicyHost::AddNodeSummarizer(
    size_t size, size_t alignment, std::shared_ptr<const NodeSummarizer> summarizer) {
  if (summarizer == nullptr || size == 0 || alignment == 0 || alignment > 8 ||
      (alignment & (alignment - 1)) != 0) {
    return std::nullopt;
  }
  const size_t offset = (summary_bytes_ + alignment - 1) / alignment * alignment;
  if (offset + size > model::kNodeSummaryBytes) {
    return std::nullopt;
  }
  summary_bytes_ = offset + size;
  // The layout is this handle's: AddNodeSummary's slots carry the same
  // `this` (as the PolicyHandle base, which is what they compare).
  summaries_.push_back({offset, size, static_cast<const PolicyHandle*>(this), std::move(summarizer)});
  return offset;
}

Status PolicyHost::Watch(WatchSpec spec, std::shared_ptr<WatchHandler> handler) {
  if (handler == nullptr) {
    return InvalidArgumentError("watch: null handler");
  }
  if (!ValidGroup(spec.group)) {
    return InvalidArgumentError("watch: group \"" + spec.group +
                                "\" is not a valid API group name");
  }
  // Versions ("v1", "v1beta2") and resources ("configmaps") are DNS labels too.
  if (spec.version.empty() || !ValidNamespace(spec.version)) {
    return InvalidArgumentError("watch: version \"" + spec.version +
                                "\" is not a valid API version");
  }
  if (spec.resource.empty() || !ValidNamespace(spec.resource)) {
    return InvalidArgumentError("watch: resource \"" + spec.resource +
                                "\" is not a valid resource name (the plural, e.g. configmaps)");
  }
  if (!ValidNamespace(spec.namespace_name)) {
    return InvalidArgumentError("watch: namespace \"" + spec.namespace_name +
                                "\" is not a valid namespace name");
  }
  if (!Printable(spec.label_selector) || !Printable(spec.field_selector)) {
    return InvalidArgumentError("watch: selectors must not contain control characters");
  }
  watches_.push_back({std::move(spec), std::move(handler)});
  return OkStatus();
}

Status PolicyHost::AddGetRoute(std::string path, GetRouteHandler handler) {
  if (!handler) {
    return InvalidArgumentError("GET route " + path + ": null handler");
  }
  if (!ValidRoutePath(path)) {
    return InvalidArgumentError("GET route \"" + path +
                                "\": must be \"/\" and segments of letters, digits, '.', '_' "
                                "or '-', without a trailing \"/\"");
  }
  if (Reserved(path)) {
    return InvalidArgumentError("GET route " + path + ": taken by schedext itself");
  }
  for (const Route& route : routes_) {
    if (route.path == path) {
      return InvalidArgumentError("GET route " + path + ": registered twice");
    }
  }
  routes_.push_back({std::move(path), std::move(handler)});
  return OkStatus();
}

void PolicyHost::AddMetrics(MetricsWriter writer) {
  if (writer) {
    metrics_.push_back(std::move(writer));
  }
}

void PolicyHost::AddReadiness(std::string name, std::function<bool()> ready) {
  if (ready) {
    readiness_.push_back({std::move(name), std::move(ready)});
  }
}

void PolicyHost::AddBackgroundTask(std::unique_ptr<BackgroundTask> task) {
  if (task != nullptr) {
    tasks_.push_back(std::move(task));
  }
}

void PolicyHost::OnPodBound(PodBoundObserver observer) {
  if (observer) {
    bound_observers_.push_back(std::move(observer));
  }
}

void PolicyHost::RequireCluster(std::string reason) {
  for (const std::string& known : cluster_requirements_) {
    if (known == reason) {
      return;
    }
  }
  cluster_requirements_.push_back(std::move(reason));
}

void PolicyHost::AttachCluster(std::function<std::shared_ptr<const ClusterView>()> snapshot) {
  snapshot_ = std::move(snapshot);
}

void PolicyHost::WriteMetrics(std::string& out) const {
  for (const MetricsWriter& writer : metrics_) {
    writer(out);
  }
}

std::string PolicyHost::NotReady() const {
  for (const Readiness& r : readiness_) {
    if (!r.ready()) {
      return r.name;
    }
  }
  return std::string();
}

Status PolicyHost::StartBackground() {
  for (; started_ < tasks_.size(); ++started_) {
    BackgroundTask& task = *tasks_[started_];
    if (Status s = task.Start(); !s.ok()) {
      StopBackground();
      return s.WithContext(std::string(task.Name()));
    }
  }
  return OkStatus();
}

void PolicyHost::StopBackground() {
  // Every task, started or not: Stop is idempotent and a task whose Start
  // was never called has nothing to join.
  for (size_t i = tasks_.size(); i > 0; --i) {
    tasks_[i - 1]->Stop();
  }
  started_ = 0;
}

void PolicyHost::NotifyPodBound(const model::PodInfo& pod, std::string_view node) const {
  for (const PodBoundObserver& observer : bound_observers_) {
    observer(pod, node);
  }
}

std::shared_ptr<void> PolicyHost::FindShared(std::string_view key) const {
  const auto it = shared_.find(key);
  return it != shared_.end() ? it->second : nullptr;
}

void PolicyHost::KeepShared(std::string key, std::shared_ptr<void> object) {
  shared_.insert_or_assign(std::move(key), std::move(object));
}

}  // namespace schedext::policy
