// Builders for the JSON that kube-scheduler sends an extender: v1.Pod and
// v1.Node objects and the ExtenderArgs / ExtenderPreemptionArgs /
// ExtenderBindingArgs bodies around them, in both node modes.
//
// The output is compact JSON in the shape the scheduler produces (Go field names
// for the message keys, API names inside the objects, every message key present
// with null for the unused one). Map entries keep insertion order (Go sorts
// them; no decoder may care). Test-only, header-only, no JSON library needed.
//
//   PodJson pod("web-1");
//   pod.Label("app", "web").Request("cpu", "500m").Toleration("gpu", "Exists", "", "NoSchedule");
//   std::vector<NodeJson> nodes = {NodeJson("n1").Allocatable("cpu", "4"), NodeJson("n2")};
//   std::string body = ExtenderArgsJson(pod, nodes, ArgsShape::kFullNodes);
#ifndef SCHEDEXT_TEST_TESTING_JSON_BUILDERS_H_
#define SCHEDEXT_TEST_TESTING_JSON_BUILDERS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace schedext::testing {

// `text` as a JSON string literal, quotes included. Escapes like Go's
// encoding/json: '"', '\\', control characters, and HTML-safe <, >, &.
inline std::string JsonQuote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == '<' || c == '>' || c == '&') {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

// An ordered list of "key": <raw JSON> members, written as an object.
class JsonObjectFields {
 public:
  // Adds (or, when `key` is already there, replaces) a member with a raw JSON value.
  JsonObjectFields& Raw(std::string_view key, std::string_view raw_json) {
    for (auto& [k, v] : fields_) {
      if (k == key) {
        v = std::string(raw_json);
        return *this;
      }
    }
    fields_.emplace_back(std::string(key), std::string(raw_json));
    return *this;
  }
  JsonObjectFields& String(std::string_view key, std::string_view value) {
    return Raw(key, JsonQuote(value));
  }
  bool empty() const { return fields_.empty(); }
  // "{...}" (or "{}").
  std::string Build() const {
    std::string out = "{";
    AppendMembers(out);
    out += '}';
    return out;
  }
  // The members without braces, comma-separated, with a leading comma when
  // `leading_comma` and there is anything to write.
  void AppendMembers(std::string& out, bool leading_comma = false) const {
    bool first = !leading_comma;
    for (const auto& [k, v] : fields_) {
      if (!first) {
        out += ',';
      }
      first = false;
      out += JsonQuote(k);
      out += ':';
      out += v;
    }
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// "[a,b,...]" from raw JSON elements.
inline std::string JsonArray(const std::vector<std::string>& raw_elements) {
  std::string out = "[";
  for (size_t i = 0; i < raw_elements.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    out += raw_elements[i];
  }
  out += ']';
  return out;
}

// ["a","b"] from strings.
inline std::string JsonStringArray(const std::vector<std::string>& values) {
  std::vector<std::string> quoted;
  quoted.reserve(values.size());
  for (const std::string& v : values) {
    quoted.push_back(JsonQuote(v));
  }
  return JsonArray(quoted);
}

// A v1.Container.
class ContainerJson {
 public:
  explicit ContainerJson(std::string name = "main") : name_(std::move(name)) {}

  // A quantity string ("500m"); RequestJson takes raw JSON (2, 1.5, null, "x").
  ContainerJson& Request(std::string_view resource, std::string_view quantity) {
    requests_.String(resource, quantity);
    return *this;
  }
  ContainerJson& RequestJson(std::string_view resource, std::string_view raw_json) {
    requests_.Raw(resource, raw_json);
    return *this;
  }
  ContainerJson& Limit(std::string_view resource, std::string_view quantity) {
    limits_.String(resource, quantity);
    return *this;
  }
  ContainerJson& LimitJson(std::string_view resource, std::string_view raw_json) {
    limits_.Raw(resource, raw_json);
    return *this;
  }
  // "Always" on an init container makes it a sidecar.
  ContainerJson& RestartPolicy(std::string_view policy) {
    extra_.String("restartPolicy", policy);
    return *this;
  }
  // Any other member, e.g. Field("ports", R"([{"containerPort":80}])").
  ContainerJson& Field(std::string_view key, std::string_view raw_json) {
    extra_.Raw(key, raw_json);
    return *this;
  }

  std::string Build() const {
    std::string out = "{\"name\":" + JsonQuote(name_) + ",\"image\":\"registry.k8s.io/pause:3.9\"";
    if (!requests_.empty() || !limits_.empty()) {
      JsonObjectFields resources;
      if (!limits_.empty()) {
        resources.Raw("limits", limits_.Build());
      }
      if (!requests_.empty()) {
        resources.Raw("requests", requests_.Build());
      }
      out += ",\"resources\":" + resources.Build();
    } else {
      out += ",\"resources\":{}";
    }
    extra_.AppendMembers(out, /*leading_comma=*/true);
    out += '}';
    return out;
  }

 private:
  std::string name_;
  JsonObjectFields requests_;
  JsonObjectFields limits_;
  JsonObjectFields extra_;
};

// A v1.NodeSelectorTerm.
class NodeSelectorTermJson {
 public:
  NodeSelectorTermJson& MatchExpression(std::string_view key, std::string_view op,
                                        const std::vector<std::string>& values = {}) {
    expressions_.push_back(Requirement(key, op, values));
    return *this;
  }
  NodeSelectorTermJson& MatchField(std::string_view key, std::string_view op,
                                   const std::vector<std::string>& values = {}) {
    fields_.push_back(Requirement(key, op, values));
    return *this;
  }
  std::string Build() const {
    JsonObjectFields term;
    if (!expressions_.empty()) {
      term.Raw("matchExpressions", JsonArray(expressions_));
    }
    if (!fields_.empty()) {
      term.Raw("matchFields", JsonArray(fields_));
    }
    return term.Build();
  }

 private:
  static std::string Requirement(std::string_view key, std::string_view op,
                                 const std::vector<std::string>& values) {
    JsonObjectFields req;
    req.String("key", key).String("operator", op);
    if (!values.empty()) {
      req.Raw("values", JsonStringArray(values));
    }
    return req.Build();
  }

  std::vector<std::string> expressions_;
  std::vector<std::string> fields_;
};

// A v1.Pod as the scheduler sends it: metadata, spec and status only.
class PodJson {
 public:
  explicit PodJson(std::string name = "pod-1") : name_(std::move(name)) {}

  PodJson& Name(std::string name) {
    name_ = std::move(name);
    return *this;
  }
  PodJson& Namespace(std::string ns) {
    namespace_ = std::move(ns);
    return *this;
  }
  // Default: "uid-<name>".
  PodJson& Uid(std::string uid) {
    uid_ = std::move(uid);
    return *this;
  }
  PodJson& Label(std::string_view key, std::string_view value) {
    labels_.String(key, value);
    return *this;
  }
  PodJson& Annotation(std::string_view key, std::string_view value) {
    annotations_.String(key, value);
    return *this;
  }
  PodJson& NodeName(std::string_view node) {
    spec_.String("nodeName", node);
    return *this;
  }
  PodJson& Priority(int64_t priority) {
    spec_.Raw("priority", std::to_string(priority));
    return *this;
  }
  PodJson& PriorityClassName(std::string_view name) {
    spec_.String("priorityClassName", name);
    return *this;
  }
  PodJson& PreemptionPolicy(std::string_view policy) {
    spec_.String("preemptionPolicy", policy);
    return *this;
  }
  PodJson& NodeSelector(std::string_view key, std::string_view value) {
    node_selector_.String(key, value);
    return *this;
  }
  PodJson& Container(const ContainerJson& container) {
    containers_.push_back(container);
    return *this;
  }
  PodJson& InitContainer(const ContainerJson& container) {
    init_containers_.push_back(container.Build());
    return *this;
  }
  // Adds a request / limit to the first container (created when there is none).
  PodJson& Request(std::string_view resource, std::string_view quantity) {
    FirstContainer().Request(resource, quantity);
    return *this;
  }
  PodJson& Limit(std::string_view resource, std::string_view quantity) {
    FirstContainer().Limit(resource, quantity);
    return *this;
  }
  PodJson& Overhead(std::string_view resource, std::string_view quantity) {
    overhead_.String(resource, quantity);
    return *this;
  }
  // Empty operator / value / effect strings are left out, as Go's omitempty does.
  PodJson& Toleration(std::string_view key, std::string_view op, std::string_view value = "",
                      std::string_view effect = "") {
    JsonObjectFields t;
    if (!key.empty()) t.String("key", key);
    if (!op.empty()) t.String("operator", op);
    if (!value.empty()) t.String("value", value);
    if (!effect.empty()) t.String("effect", effect);
    tolerations_.push_back(t.Build());
    return *this;
  }
  PodJson& RequiredTerm(const NodeSelectorTermJson& term) {
    required_terms_.push_back(term.Build());
    return *this;
  }
  PodJson& PreferredTerm(int32_t weight, const NodeSelectorTermJson& term) {
    preferred_terms_.push_back("{\"weight\":" + std::to_string(weight) +
                               ",\"preference\":" + term.Build() + "}");
    return *this;
  }
  PodJson& Phase(std::string_view phase) {
    status_.String("phase", phase);
    return *this;
  }
  PodJson& NominatedNodeName(std::string_view node) {
    status_.String("nominatedNodeName", node);
    return *this;
  }
  // Raw members added to (or replacing those of) metadata / spec / status.
  PodJson& MetadataField(std::string_view key, std::string_view raw_json) {
    metadata_extra_.Raw(key, raw_json);
    return *this;
  }
  PodJson& SpecField(std::string_view key, std::string_view raw_json) {
    spec_.Raw(key, raw_json);
    return *this;
  }
  PodJson& StatusField(std::string_view key, std::string_view raw_json) {
    status_.Raw(key, raw_json);
    return *this;
  }
  // Adds what real pods carry and decoders must skip: resourceVersion,
  // creationTimestamp, managedFields, the service-account volume, the default
  // NoExecute tolerations, schedulerName, conditions with a null time, qosClass.
  PodJson& Realistic() {
    metadata_extra_.String("resourceVersion", "4711")
        .String("creationTimestamp", "2026-11-30T02:30:34Z")
        .Raw("managedFields",
             R"([{"manager":"kubectl-create","operation":"Update","apiVersion":"v1","time":"2026-11-30T02:30:34Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{}}}}}}])");
    spec_
        .Raw("volumes",
             R"([{"name":"kube-api-access-x1","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}}],"defaultMode":420}}])")
        .String("restartPolicy", "Always")
        .Raw("terminationGracePeriodSeconds", "30")
        .String("schedulerName", "default-scheduler")
        .Raw("enableServiceLinks", "true");
    Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute");
    Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute");
    status_
        .Raw("conditions",
             R"([{"type":"PodScheduled","status":"False","lastProbeTime":null,"lastTransitionTime":"2026-11-30T02:30:34Z","reason":"Unschedulable","message":"0/5 nodes are available"}])")
        .String("qosClass", "Burstable");
    return *this;
  }

  const std::string& name() const { return name_; }
  std::string uid() const { return uid_.empty() ? "uid-" + name_ : uid_; }

  std::string Build() const {
    JsonObjectFields metadata;
    metadata.String("name", name_).String("namespace", namespace_).String("uid", uid());
    if (!labels_.empty()) metadata.Raw("labels", labels_.Build());
    if (!annotations_.empty()) metadata.Raw("annotations", annotations_.Build());
    std::string out = "{\"metadata\":{";
    metadata.AppendMembers(out);
    metadata_extra_.AppendMembers(out, /*leading_comma=*/true);
    out += "},\"spec\":";

    JsonObjectFields spec;
    std::vector<std::string> containers;
    for (const ContainerJson& c : containers_) {
      containers.push_back(c.Build());
    }
    if (!init_containers_.empty()) spec.Raw("initContainers", JsonArray(init_containers_));
    spec.Raw("containers", JsonArray(containers));
    if (!node_selector_.empty()) spec.Raw("nodeSelector", node_selector_.Build());
    if (!required_terms_.empty() || !preferred_terms_.empty()) {
      JsonObjectFields node_affinity;
      if (!required_terms_.empty()) {
        node_affinity.Raw("requiredDuringSchedulingIgnoredDuringExecution",
                          "{\"nodeSelectorTerms\":" + JsonArray(required_terms_) + "}");
      }
      if (!preferred_terms_.empty()) {
        node_affinity.Raw("preferredDuringSchedulingIgnoredDuringExecution",
                          JsonArray(preferred_terms_));
      }
      spec.Raw("affinity", "{\"nodeAffinity\":" + node_affinity.Build() + "}");
    }
    if (!tolerations_.empty()) spec.Raw("tolerations", JsonArray(tolerations_));
    if (!overhead_.empty()) spec.Raw("overhead", overhead_.Build());
    out += '{';
    spec.AppendMembers(out);
    spec_.AppendMembers(out, /*leading_comma=*/true);
    out += "},\"status\":";
    out += status_.Build();
    out += '}';
    return out;
  }

 private:
  ContainerJson& FirstContainer() {
    if (containers_.empty()) {
      containers_.emplace_back("main");
    }
    return containers_.front();
  }

  std::string name_;
  std::string namespace_ = "default";
  std::string uid_;
  JsonObjectFields labels_;
  JsonObjectFields annotations_;
  JsonObjectFields metadata_extra_;
  JsonObjectFields spec_;
  JsonObjectFields node_selector_;
  JsonObjectFields overhead_;
  JsonObjectFields status_;
  std::vector<ContainerJson> containers_;
  std::vector<std::string> init_containers_;
  std::vector<std::string> tolerations_;
  std::vector<std::string> required_terms_;
  std::vector<std::string> preferred_terms_;
};

// A v1.Node as the scheduler sends it: metadata, spec and status only.
class NodeJson {
 public:
  explicit NodeJson(std::string name) : name_(std::move(name)) {}

  // Default: "uid-<name>".
  NodeJson& Uid(std::string uid) {
    uid_ = std::move(uid);
    return *this;
  }
  NodeJson& Label(std::string_view key, std::string_view value) {
    labels_.String(key, value);
    return *this;
  }
  NodeJson& Annotation(std::string_view key, std::string_view value) {
    annotations_.String(key, value);
    return *this;
  }
  NodeJson& Unschedulable(bool unschedulable = true) {
    spec_.Raw("unschedulable", unschedulable ? "true" : "false");
    return *this;
  }
  NodeJson& Taint(std::string_view key, std::string_view value, std::string_view effect) {
    JsonObjectFields t;
    t.String("key", key);
    if (!value.empty()) t.String("value", value);
    t.String("effect", effect);
    taints_.push_back(t.Build());
    return *this;
  }
  NodeJson& Allocatable(std::string_view resource, std::string_view quantity) {
    allocatable_.String(resource, quantity);
    return *this;
  }
  NodeJson& Capacity(std::string_view resource, std::string_view quantity) {
    capacity_.String(resource, quantity);
    return *this;
  }
  NodeJson& Condition(std::string_view type, std::string_view status) {
    conditions_.push_back("{\"type\":" + JsonQuote(type) + ",\"status\":" + JsonQuote(status) +
                          ",\"lastHeartbeatTime\":\"2026-11-30T02:30:00Z\","
                          "\"lastTransitionTime\":\"2026-11-30T01:00:00Z\","
                          "\"reason\":\"KubeletReady\",\"message\":\"kubelet is posting ready status\"}");
    return *this;
  }
  NodeJson& Ready(bool ready = true) { return Condition("Ready", ready ? "True" : "False"); }
  // Raw members added to (or replacing those of) metadata / spec / status.
  NodeJson& MetadataField(std::string_view key, std::string_view raw_json) {
    metadata_extra_.Raw(key, raw_json);
    return *this;
  }
  NodeJson& SpecField(std::string_view key, std::string_view raw_json) {
    spec_.Raw(key, raw_json);
    return *this;
  }
  NodeJson& StatusField(std::string_view key, std::string_view raw_json) {
    status_extra_.Raw(key, raw_json);
    return *this;
  }
  // Adds what real nodes carry and decoders must skip: managedFields, podCIDR,
  // addresses, daemonEndpoints (with its capital "Port"), nodeInfo, images.
  NodeJson& Realistic() {
    metadata_extra_.String("resourceVersion", "815")
        .String("creationTimestamp", "2026-11-30T01:00:00Z")
        .Raw("managedFields",
             R"([{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-11-30T01:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:allocatable":{}}}}])");
    spec_.String("podCIDR", "10.244.1.0/24").Raw("podCIDRs", R"(["10.244.1.0/24"])");
    status_extra_
        .Raw("addresses", R"([{"type":"InternalIP","address":"172.18.0.3"},{"type":"Hostname","address":")" +
                              name_ + R"("}])")
        .Raw("daemonEndpoints", R"({"kubeletEndpoint":{"Port":10250}})")
        .Raw("nodeInfo",
             R"({"machineID":"m","systemUUID":"s","bootID":"b","kernelVersion":"6.1.0","osImage":"Debian GNU/Linux 12","containerRuntimeVersion":"containerd://1.7.1","kubeletVersion":"v1.26.7","kubeProxyVersion":"v1.26.7","operatingSystem":"linux","architecture":"amd64"})")
        .Raw("images",
             R"([{"names":["registry.k8s.io/pause@sha256:7031c1b2","registry.k8s.io/pause:3.9"],"sizeBytes":321520},{"names":["nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04"],"sizeBytes":9223372036854775807}])");
    return *this;
  }

  const std::string& name() const { return name_; }
  std::string uid() const { return uid_.empty() ? "uid-" + name_ : uid_; }

  std::string Build() const {
    JsonObjectFields metadata;
    metadata.String("name", name_).String("uid", uid());
    if (!labels_.empty()) metadata.Raw("labels", labels_.Build());
    if (!annotations_.empty()) metadata.Raw("annotations", annotations_.Build());
    std::string out = "{\"metadata\":{";
    metadata.AppendMembers(out);
    metadata_extra_.AppendMembers(out, /*leading_comma=*/true);
    out += "},\"spec\":{";
    JsonObjectFields spec;
    if (!taints_.empty()) spec.Raw("taints", JsonArray(taints_));
    spec.AppendMembers(out);
    spec_.AppendMembers(out, /*leading_comma=*/!spec.empty());
    out += "},\"status\":{";
    JsonObjectFields status;
    if (!capacity_.empty()) status.Raw("capacity", capacity_.Build());
    if (!allocatable_.empty()) status.Raw("allocatable", allocatable_.Build());
    if (!conditions_.empty()) status.Raw("conditions", JsonArray(conditions_));
    status.AppendMembers(out);
    status_extra_.AppendMembers(out, /*leading_comma=*/!status.empty());
    out += "}}";
    return out;
  }

 private:
  std::string name_;
  std::string uid_;
  JsonObjectFields labels_;
  JsonObjectFields annotations_;
  JsonObjectFields metadata_extra_;
  JsonObjectFields spec_;
  JsonObjectFields allocatable_;
  JsonObjectFields capacity_;
  JsonObjectFields status_extra_;
  std::vector<std::string> taints_;
  std::vector<std::string> conditions_;
};

// Which shape a body takes: nodeCacheCapable false (full objects) or true (names / UIDs).
enum class ArgsShape { kFullNodes, kNodeNames };

// ExtenderArgs from already-built JSON: {"Pod":<pod>,"Nodes":{"metadata":{},"items":[...]},"NodeNames":null}.
inline std::string ExtenderArgsFullJson(std::string_view pod_json,
                                        const std::vector<std::string>& node_jsons) {
  return "{\"Pod\":" + std::string(pod_json) + ",\"Nodes\":{\"metadata\":{},\"items\":" +
         JsonArray(node_jsons) + "},\"NodeNames\":null}";
}

// ExtenderArgs in cache mode: {"Pod":<pod>,"Nodes":null,"NodeNames":[...]}.
inline std::string ExtenderArgsNamesJson(std::string_view pod_json,
                                         const std::vector<std::string>& node_names) {
  return "{\"Pod\":" + std::string(pod_json) + ",\"Nodes\":null,\"NodeNames\":" +
         JsonStringArray(node_names) + "}";
}

// ExtenderArgs for `pod` and `nodes` in either shape.
inline std::string ExtenderArgsJson(const PodJson& pod, const std::vector<NodeJson>& nodes,
                                    ArgsShape shape) {
  if (shape == ArgsShape::kFullNodes) {
    std::vector<std::string> items;
    for (const NodeJson& n : nodes) {
      items.push_back(n.Build());
    }
    return ExtenderArgsFullJson(pod.Build(), items);
  }
  std::vector<std::string> names;
  for (const NodeJson& n : nodes) {
    names.push_back(n.name());
  }
  return ExtenderArgsNamesJson(pod.Build(), names);
}

// One candidate node of a preemption and its victims, most important first.
struct VictimsJson {
  std::string node;
  std::vector<PodJson> pods;
  int64_t num_pdb_violations = 0;
};

// ExtenderPreemptionArgs: kFullNodes sends NodeNameToVictims with full pods
// (NodeNameToMetaVictims null); kNodeNames sends NodeNameToMetaVictims with
// {"UID":...} entries (NodeNameToVictims null).
inline std::string PreemptionArgsJson(const PodJson& pod, const std::vector<VictimsJson>& victims,
                                      ArgsShape shape) {
  JsonObjectFields map;
  for (const VictimsJson& v : victims) {
    std::vector<std::string> pods;
    for (const PodJson& p : v.pods) {
      pods.push_back(shape == ArgsShape::kFullNodes ? p.Build()
                                                    : "{\"UID\":" + JsonQuote(p.uid()) + "}");
    }
    map.Raw(v.node, "{\"Pods\":" + JsonArray(pods) +
                        ",\"NumPDBViolations\":" + std::to_string(v.num_pdb_violations) + "}");
  }
  if (shape == ArgsShape::kFullNodes) {
    return "{\"Pod\":" + pod.Build() + ",\"NodeNameToVictims\":" + map.Build() +
           ",\"NodeNameToMetaVictims\":null}";
  }
  return "{\"Pod\":" + pod.Build() + ",\"NodeNameToVictims\":null,\"NodeNameToMetaVictims\":" +
         map.Build() + "}";
}

// ExtenderBindingArgs.
inline std::string BindingArgsJson(std::string_view pod_name, std::string_view pod_namespace,
                                   std::string_view pod_uid, std::string_view node) {
  return "{\"PodName\":" + JsonQuote(pod_name) + ",\"PodNamespace\":" + JsonQuote(pod_namespace) +
         ",\"PodUID\":" + JsonQuote(pod_uid) + ",\"Node\":" + JsonQuote(node) + "}";
}

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_JSON_BUILDERS_H_
