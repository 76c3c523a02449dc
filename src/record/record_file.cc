// The recording format (record/record_file.h). nlohmann serves here: records
// are written by the recorder's own thread and read by `schedext replay`,
// never on a request thread.
#include "schedext/record/record_file.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::record {
namespace {

using Json = nlohmann::ordered_json;

std::string_view EffectName(model::TaintEffect effect) {
  switch (effect) {
    case model::TaintEffect::kNoSchedule:
      return "NoSchedule";
    case model::TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case model::TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "NoSchedule";
}

std::string S(std::string_view s) { return std::string(s); }

// Canonical quantities: cpu in milli-units ("1500m"), the rest in units.
Json Resources(const model::ResourceList& list) {
  Json out = Json::object();
  list.ForEach([&](std::string_view name, int64_t amount) {
    out[S(name)] =
        name == model::kResourceCpu ? std::to_string(amount) + "m" : std::to_string(amount);
  });
  return out;
}

Json Strings(const model::StringMap& map) {
  Json out = Json::object();
  for (const auto& [k, v] : map.entries()) {
    out[S(k)] = S(v);
  }
  return out;
}

Json NodeObject(const model::NodeInfo& node) {
  Json taints = Json::array();
  for (const model::Taint& t : node.taints) {
    taints.push_back(
        {{"key", S(t.key)}, {"value", S(t.value)}, {"effect", S(EffectName(t.effect))}});
  }
  Json conditions = Json::array();
  for (const model::NodeCondition& c : node.conditions) {
    conditions.push_back({{"type", S(c.type)}, {"status", S(c.status)}});
  }
  return {{"metadata",
           {{"name", S(node.name)},
            {"uid", S(node.uid)},
            {"labels", Strings(node.labels)},
            {"annotations", Strings(node.annotations)}}},
          {"spec", {{"unschedulable", node.unschedulable}, {"taints", std::move(taints)}}},
          {"status",
           {{"capacity", Resources(node.capacity)},
            {"allocatable", Resources(node.allocatable)},
            {"conditions", std::move(conditions)}}}};
}

// With the states of the slots that have a codec.
Json Usage(const model::NodeUsage& usage, std::span<const policy::NodeStateCodec* const> codecs) {
  Json states = Json::object();
  for (size_t slot = 0; slot < usage.states.size() && slot < codecs.size(); ++slot) {
    const model::NodeState* state = usage.states.Get(slot);
    if (state != nullptr && codecs[slot] != nullptr) {
      Json encoded = Json::parse(codecs[slot]->EncodeState(*state), nullptr, false);
      if (!encoded.is_discarded()) {
        states[S(codecs[slot]->StateName())] = std::move(encoded);
      }
    }
  }
  return {{"requested", Resources(usage.requested)},
          {"scoringRequested", Resources(usage.scoring_requested)},
          {"pods", usage.pods},
          {"states", std::move(states)}};
}

// Amounts as Resources() writes them; a container's request map names cpu
// and memory even at zero when the pod's did.
Json ContainerObject(const model::ContainerResources& c, bool init) {
  Json requests = Resources(c.requests);
  if (c.has_cpu_request && !requests.contains(S(model::kResourceCpu))) {
    requests[S(model::kResourceCpu)] = "0m";
  }
  if (c.has_memory_request && !requests.contains(S(model::kResourceMemory))) {
    requests[S(model::kResourceMemory)] = "0";
  }
  Json out = {{"resources", {{"requests", std::move(requests)}, {"limits", Resources(c.limits)}}}};
  if (init && c.restartable) {
    out["restartPolicy"] = "Always";
  }
  return out;
}

// What the preempt hooks read of a victim (record_file.h).
Json PodObject(const model::PodInfo& pod) {
  Json containers = Json::array();
  for (const model::ContainerResources& c : pod.containers) {
    containers.push_back(ContainerObject(c, false));
  }
  Json init = Json::array();
  for (const model::ContainerResources& c : pod.init_containers) {
    init.push_back(ContainerObject(c, true));
  }
  Json spec = {{"nodeName", S(pod.node_name)},
               {"priority", pod.priority},
               {"containers", std::move(containers)},
               {"initContainers", std::move(init)},
               {"overhead", Resources(pod.overhead)}};
  if (!pod.priority_class_name.empty()) {
    spec["priorityClassName"] = S(pod.priority_class_name);
  }
  if (!pod.preemption_policy.empty()) {
    spec["preemptionPolicy"] = S(pod.preemption_policy);
  }
  const model::ContainerResources& pod_level = pod.pod_level;
  // Only when set, so that the records of other pods read as before.
  if (pod_level.has_cpu_request || pod_level.has_memory_request ||
      pod_level.requests != model::ResourceList{} || pod_level.limits != model::ResourceList{}) {
    spec["resources"] = std::move(ContainerObject(pod_level, false)["resources"]);
  }
  return {{"metadata",
           {{"name", S(pod.name)},
            {"namespace", S(pod.namespace_name)},
            {"uid", S(pod.uid)},
            {"labels", Strings(pod.labels)},
            {"annotations", Strings(pod.annotations)}}},
          {"spec", std::move(spec)},
          {"status", {{"phase", S(pod.phase)}}}};
}

std::string FormatTime(std::chrono::system_clock::time_point time) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  const time_t seconds = static_cast<time_t>(micros / 1000000);
  tm parts{};
  gmtime_r(&seconds, &parts);
  char text[64];
  const size_t n = strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &parts);
  std::snprintf(text + n, sizeof(text) - n, ".%06lldZ", static_cast<long long>(micros % 1000000));
  return text;
}

StatusOr<model::ResourceList> ReadResources(const Json& j, std::deque<std::string>& names,
                                            std::string_view what) {
  model::ResourceList out;
  if (!j.is_object()) {
    return InvalidArgumentError(std::string(what) + ": expected an object");
  }
  for (const auto& [name, value] : j.items()) {
    if (!value.is_string()) {
      return InvalidArgumentError(std::string(what) + "." + name + ": expected a quantity");
    }
    SCHEDEXT_ASSIGN_OR_RETURN(int64_t amount,
                              model::ParseResourceAmount(name, value.get<std::string>()));
    names.push_back(name);
    out.Set(names.back(), amount);
  }
  return out;
}

}  // namespace

std::string EncodeRecord(const Exchange& exchange, std::span<const std::string_view> node_names,
                         std::chrono::system_clock::time_point time,
                         std::span<const policy::NodeStateCodec* const> codecs) {
  Json doc;
  doc["version"] = 1;
  doc["time"] = FormatTime(time);
  doc["verb"] = S(exchange.verb);
  doc["profile"] = exchange.profile;
  doc["status"] = exchange.status;
  doc["latencyMicros"] = exchange.latency_micros;
  doc["request"] = exchange.request;
  doc["reply"] = exchange.reply;
  doc["nodes"] = nullptr;
  doc["usage"] = nullptr;
  if (!exchange.nodes.empty()) {
    Json nodes = Json::array();
    Json usage = Json::object();
    for (const model::NodeInfo* node : exchange.nodes) {
      if (node == nullptr) {
        continue;
      }
      nodes.push_back(NodeObject(*node));
      if (node->usage != nullptr) {
        usage[S(node->name)] = Usage(*node->usage, codecs);
      }
    }
    doc["nodes"] = std::move(nodes);
    doc["usage"] = std::move(usage);
  } else if (!exchange.usage.empty()) {
    Json usage = Json::object();
    for (size_t i = 0; i < exchange.usage.size() && i < node_names.size(); ++i) {
      if (exchange.usage[i] != nullptr) {
        usage[S(node_names[i])] = Usage(*exchange.usage[i], codecs);
      }
    }
    doc["usage"] = std::move(usage);
  }
  if (!exchange.victims.empty()) {
    Json victims = Json::array();
    for (const model::PodInfo* pod : exchange.victims) {
      victims.push_back(PodObject(*pod));
    }
    doc["victims"] = std::move(victims);
  }
  Json policies = Json::object();
  for (const auto& [name, captured] : exchange.policy_states) {
    if (captured == nullptr) {
      continue;
    }
    Json encoded = Json::parse(captured->Encode(node_names), nullptr, false);
    if (!encoded.is_discarded()) {
      policies[name] = std::move(encoded);
    }
  }
  doc["policyState"] = std::move(policies);
  // A body that is not UTF-8 gets U+FFFD for the bad bytes instead of
  // failing the record.
  std::string line = doc.dump(-1, ' ', false, Json::error_handler_t::replace);
  line.push_back('\n');
  return line;
}

const model::NodeInfo* Record::FindNode(std::string_view name) const {
  for (const auto& node : nodes) {
    if (node->name() == name) {
      return &node->info();
    }
  }
  return nullptr;
}

const model::PodInfo* Record::FindVictim(std::string_view uid) const {
  for (const auto& pod : victims) {
    if (pod->uid() == uid) {
      return &pod->info();
    }
  }
  return nullptr;
}

const model::NodeUsage* Record::FindUsage(std::string_view name) const {
  for (const auto& [n, u] : usage) {
    if (n == name) {
      return &u;
    }
  }
  return nullptr;
}

StatusOr<std::unique_ptr<Record>> DecodeRecord(std::string_view line) {
  const Json doc = Json::parse(line, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError("not a JSON object");
  }
  auto record = std::make_unique<Record>();
  auto string_field = [&](const char* key, std::string& out) -> Status {
    if (!doc.contains(key) || !doc[key].is_string()) {
      return InvalidArgumentError(std::string(key) + ": expected a string");
    }
    out = doc[key].get<std::string>();
    return OkStatus();
  };
  if (doc.value("version", 0) != 1) {
    return InvalidArgumentError("version: expected 1");
  }
  SCHEDEXT_RETURN_IF_ERROR(string_field("time", record->time));
  SCHEDEXT_RETURN_IF_ERROR(string_field("verb", record->verb));
  SCHEDEXT_RETURN_IF_ERROR(string_field("profile", record->profile));
  SCHEDEXT_RETURN_IF_ERROR(string_field("request", record->request));
  SCHEDEXT_RETURN_IF_ERROR(string_field("reply", record->reply));
  if (!doc.contains("status") || !doc["status"].is_number_integer() ||
      !doc.contains("latencyMicros") || !doc["latencyMicros"].is_number_integer()) {
    return InvalidArgumentError("status, latencyMicros: expected integers");
  }
  record->status = doc["status"].get<int>();
  record->latency_micros = doc["latencyMicros"].get<int64_t>();
  if (doc.contains("nodes") && doc["nodes"].is_array()) {
    record->has_nodes = true;
    // Through the informers' decoder, so the nodes read back exactly as the
    // cache would have read them.
    const Json page = {{"metadata", {{"resourceVersion", "1"}}}, {"items", doc["nodes"]}};
    const wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(page.dump());
    wire::ObjectDecoder decoder;
    wire::ListMeta meta;
    SCHEDEXT_RETURN_IF_ERROR(decoder
                                 .DecodeNodeList(buffer, meta,
                                                 [&](const wire::NodeObject& o) {
                                                   record->nodes.push_back(
                                                       std::make_unique<model::OwnedNode>(o.info));
                                                   return true;
                                                 })
                                 .WithContext("nodes"));
  }
  if (doc.contains("usage") && doc["usage"].is_object()) {
    record->has_usage = true;
    for (const auto& [name, u] : doc["usage"].items()) {
      if (!u.is_object() || !u.contains("requested") || !u.contains("scoringRequested") ||
          !u.contains("pods") || !u["pods"].is_number_integer()) {
        return InvalidArgumentError("usage." + name +
                                    ": expected requested, scoringRequested, "
                                    "pods");
      }
      model::NodeUsage usage;
      SCHEDEXT_ASSIGN_OR_RETURN(usage.requested,
                                ReadResources(u["requested"], record->names, "usage." + name));
      SCHEDEXT_ASSIGN_OR_RETURN(
          usage.scoring_requested,
          ReadResources(u["scoringRequested"], record->names, "usage." + name));
      usage.pods = u["pods"].get<int64_t>();
      record->usage.emplace_back(name, std::move(usage));
      if (u.contains("states") && u["states"].is_object()) {
        for (const auto& [state, value] : u["states"].items()) {
          record->node_states.push_back({name, state, value.dump()});
        }
      }
    }
  }
  if (doc.contains("victims") && doc["victims"].is_array()) {
    const Json page = {{"metadata", {{"resourceVersion", "1"}}}, {"items", doc["victims"]}};
    const wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(page.dump());
    wire::ObjectDecoder decoder;
    wire::ListMeta meta;
    SCHEDEXT_RETURN_IF_ERROR(decoder
                                 .DecodePodList(buffer, meta,
                                                [&](const wire::PodObject& o) {
                                                  record->victims.push_back(
                                                      std::make_unique<model::OwnedPod>(o.info));
                                                  return true;
                                                })
                                 .WithContext("victims"));
  }
  if (doc.contains("policyState") && doc["policyState"].is_object()) {
    record->has_state = true;
    for (const auto& [policy, value] : doc["policyState"].items()) {
      record->policy_states.emplace_back(policy, value.dump());
    }
  }
  return record;
}

StatusOr<std::vector<std::string>> ListRecordFiles(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return NotFoundError(dir + ": cannot open the directory");
  }
  std::vector<std::string> files;
  while (const dirent* entry = readdir(d)) {
    const std::string_view name = entry->d_name;
    if (name.starts_with(kRecordFilePrefix) && name.ends_with(kRecordFileSuffix)) {
      files.push_back(dir + "/" + std::string(name));
    }
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace schedext::record
