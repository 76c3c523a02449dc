// FieldDecoder's pod walker (json_fields.h): metadata, spec (containers and
// their resources, affinity, tolerations, ...) and status of a v1.Pod.
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"
#include "schedext/model/resources.h"
#include "wire/json_fields.h"

namespace schedext::wire::internal {

bool FieldDecoder::DecodePod(od::value& v, model::PodInfo& pod, ObjectMeta* meta) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "metadata")) {
      return DecodePodMetadata(value, pod, meta);
    }
    if (KeyIs(key, "spec")) {
      return DecodePodSpec(value, pod);
    }
    if (KeyIs(key, "status")) {
      return DecodePodStatus(value, pod);
    }
    return true;
  });
}

bool FieldDecoder::DecodePodMetadata(od::value& v, model::PodInfo& pod, ObjectMeta* meta) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "name")) {
      return ReadString(value, pod.name);
    }
    if (KeyIs(key, "namespace")) {
      return ReadString(value, pod.namespace_name);
    }
    if (KeyIs(key, "uid")) {
      return ReadString(value, pod.uid);
    }
    if (KeyIs(key, "labels")) {
      return ReadStringMap(value, pod.labels);
    }
    if (KeyIs(key, "annotations")) {
      return ReadStringMap(value, pod.annotations);
    }
    if (meta != nullptr) {
      return ReadObjectMeta(key, value, *meta);
    }
    return true;
  });
}

bool FieldDecoder::DecodePodSpec(od::value& v, model::PodInfo& pod) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "containers")) {
      return DecodeContainers(value, pod.containers, /*init=*/false);
    }
    if (KeyIs(key, "initContainers")) {
      return DecodeContainers(value, pod.init_containers, /*init=*/true);
    }
    if (KeyIs(key, "nodeName")) {
      return ReadString(value, pod.node_name);
    }
    if (KeyIs(key, "priority")) {
      return ReadInt32(value, pod.priority);
    }
    if (KeyIs(key, "priorityClassName")) {
      return ReadString(value, pod.priority_class_name);
    }
    if (KeyIs(key, "preemptionPolicy")) {
      return ReadString(value, pod.preemption_policy);
    }
    if (KeyIs(key, "nodeSelector")) {
      return ReadStringMap(value, pod.node_selector);
    }
    if (KeyIs(key, "affinity")) {
      return DecodeAffinity(value, pod);
    }
    if (KeyIs(key, "tolerations")) {
      return DecodeTolerations(value, pod.tolerations);
    }
    if (KeyIs(key, "overhead")) {
      return ReadResourceList(value, pod.overhead, nullptr);
    }
    if (KeyIs(key, "resources")) {
      return DecodeContainerResources(value, pod.pod_level);
    }
    return true;
  });
}

bool FieldDecoder::DecodePodStatus(od::value& v, model::PodInfo& pod) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "phase")) {
      return ReadString(value, pod.phase);
    }
    if (KeyIs(key, "nominatedNodeName")) {
      return ReadString(value, pod.nominated_node_name);
    }
    return true;
  });
}

bool FieldDecoder::DecodeContainers(od::value& v,
                                    std::vector<model::ContainerResources>& containers, bool init) {
  containers.clear();
  return ForEachElement(v, [&](size_t, od::value& element) {
    model::ContainerResources& container = containers.emplace_back();
    return ForEachField(element, [&](std::string_view key, od::value& value) {
      if (KeyIs(key, "resources")) {
        return DecodeContainerResources(value, container);
      }
      if (init && KeyIs(key, "restartPolicy")) {
        std::string_view policy;
        if (!ReadString(value, policy)) {
          return false;
        }
        container.restartable = policy == "Always";
        return true;
      }
      return true;
    });
  });
}

bool FieldDecoder::DecodeContainerResources(od::value& v, model::ContainerResources& container) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "requests")) {
      return ReadResourceList(value, container.requests, &container);
    }
    if (KeyIs(key, "limits")) {
      return ReadResourceList(value, container.limits, nullptr);
    }
    return true;
  });
}

bool FieldDecoder::DecodeAffinity(od::value& v, model::PodInfo& pod) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (!KeyIs(key, "nodeAffinity")) {
      return true;
    }
    bool is_null = false;
    if (!IsNull(value, is_null)) {
      return false;
    }
    if (is_null) {
      pod.has_required_node_affinity = false;
      pod.required_node_affinity.clear();
      pod.preferred_node_affinity.clear();
      return true;
    }
    return ForEachField(value, [&](std::string_view affinity_key, od::value& affinity_value) {
      if (KeyIs(affinity_key, "requiredDuringSchedulingIgnoredDuringExecution")) {
        return DecodeRequiredAffinity(affinity_value, pod);
      }
      if (KeyIs(affinity_key, "preferredDuringSchedulingIgnoredDuringExecution")) {
        return DecodePreferredAffinity(affinity_value, pod.preferred_node_affinity);
      }
      return true;
    });
  });
}

bool FieldDecoder::DecodeRequiredAffinity(od::value& v, model::PodInfo& pod) {
  bool is_null = false;
  if (!IsNull(v, is_null)) {
    return false;
  }
  if (is_null) {
    pod.has_required_node_affinity = false;
    pod.required_node_affinity.clear();
    return true;
  }
  pod.has_required_node_affinity = true;
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "nodeSelectorTerms")) {
      pod.required_node_affinity.clear();
      return ForEachElement(value, [&](size_t, od::value& element) {
        return DecodeSelectorTerm(element, pod.required_node_affinity.emplace_back());
      });
    }
    return true;
  });
}

bool FieldDecoder::DecodePreferredAffinity(od::value& v,
                                           std::vector<model::PreferredSchedulingTerm>& terms) {
  terms.clear();
  return ForEachElement(v, [&](size_t, od::value& element) {
    model::PreferredSchedulingTerm& term = terms.emplace_back();
    return ForEachField(element, [&](std::string_view key, od::value& value) {
      if (KeyIs(key, "weight")) {
        return ReadInt32(value, term.weight);
      }
      if (KeyIs(key, "preference")) {
        return DecodeSelectorTerm(value, term.preference);
      }
      return true;
    });
  });
}

bool FieldDecoder::DecodeSelectorTerm(od::value& v, model::NodeSelectorTerm& term) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "matchExpressions")) {
      return DecodeRequirements(value, term.match_expressions);
    }
    if (KeyIs(key, "matchFields")) {
      return DecodeRequirements(value, term.match_fields);
    }
    return true;
  });
}

bool FieldDecoder::DecodeRequirements(od::value& v,
                                      std::vector<model::SelectorRequirement>& requirements) {
  requirements.clear();
  return ForEachElement(v, [&](size_t, od::value& element) {
    model::SelectorRequirement& requirement = requirements.emplace_back();
    return ForEachField(element, [&](std::string_view key, od::value& value) {
      if (KeyIs(key, "key")) {
        return ReadString(value, requirement.key);
      }
      if (KeyIs(key, "operator")) {
        std::string_view text;
        if (!ReadString(value, text)) {
          return false;
        }
        const std::optional<model::SelectorOperator> op = model::ParseSelectorOperator(text);
        if (!op.has_value()) {
          return Fail("unknown selector operator " + QuoteShort(text));
        }
        requirement.op = *op;
        return true;
      }
      if (KeyIs(key, "values")) {
        return ReadStringList(value, requirement.values);
      }
      return true;
    });
  });
}

bool FieldDecoder::DecodeTolerations(od::value& v, std::vector<model::Toleration>& tolerations) {
  tolerations.clear();
  return ForEachElement(v, [&](size_t, od::value& element) {
    model::Toleration& toleration = tolerations.emplace_back();
    return ForEachField(element, [&](std::string_view key, od::value& value) {
      if (KeyIs(key, "key")) {
        return ReadString(value, toleration.key);
      }
      if (KeyIs(key, "operator")) {
        std::string_view text;
        if (!ReadString(value, text)) {
          return false;
        }
        if (text.empty() || text == "Equal") {
          toleration.op = model::TolerationOperator::kEqual;
        } else if (text == "Exists") {
          toleration.op = model::TolerationOperator::kExists;
        } else {
          return Fail("unknown toleration operator " + QuoteShort(text));
        }
        return true;
      }
      if (KeyIs(key, "value")) {
        return ReadString(value, toleration.value);
      }
      if (KeyIs(key, "effect")) {
        std::string_view text;
        if (!ReadString(value, text)) {
          return false;
        }
        if (text.empty()) {
          toleration.effect.reset();
          return true;
        }
        toleration.effect = model::ParseTaintEffect(text);
        if (!toleration.effect.has_value()) {
          return Fail("unknown taint effect " + QuoteShort(text));
        }
        return true;
      }
      return true;
    });
  });
}

}  // namespace schedext::wire::internal
