// FieldDecoder's node walker (json_fields.h): metadata, spec (taints,
// unschedulable) and status (capacity, allocatable, conditions) of a v1.Node.
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

bool FieldDecoder::DecodeNode(od::value& v, model::NodeInfo& node, ObjectMeta* meta) {
  od::json_type type{};
  if (!ReadType(v, type)) {
    return false;
  }
  if (type != od::json_type::object) {
    return Fail("expected an object");
  }
  const char* begin = v.raw_json_token().data();
  const bool ok = ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "metadata")) {
      return DecodeNodeMetadata(value, node, meta);
    }
    if (KeyIs(key, "spec")) {
      return DecodeNodeSpec(value, node);
    }
    if (KeyIs(key, "status")) {
      return DecodeNodeStatus(value, node);
    }
    return true;
  });
  if (!ok) {
    return false;
  }
  const char* end = nullptr;
  if (auto code = v.current_location().get(end)) {
    // The last token of a document cut after this node (StopAtNodeEnd).
    if (code != simdjson::OUT_OF_BOUNDS || node_cut_ == nullptr || document_end_ != node_cut_) {
      return Fail(code);
    }
    end = document_end_;
  }
  std::string_view span(begin, static_cast<size_t>(end - begin));
  while (!span.empty() && IsJsonSpace(span.back())) {
    span.remove_suffix(1);
  }
  if (span.size() < 2 || span.front() != '{' || span.back() != '}') {
    return Fail("internal error: cannot delimit the node object");
  }
  node.raw_json = span;
  if (node_cut_ != nullptr && span.data() + span.size() == node_cut_) {
    node_cut_reached_ = true;
    document_read_ = true;
  }
  return true;
}

bool FieldDecoder::DecodeNodeMetadata(od::value& v, model::NodeInfo& node, ObjectMeta* meta) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "name")) {
      return ReadString(value, node.name);
    }
    if (KeyIs(key, "uid")) {
      return ReadString(value, node.uid);
    }
    if (KeyIs(key, "labels")) {
      return !model::Includes(node_fields_, model::NodeFields::kLabels) ||
             ReadStringMap(value, node.labels);
    }
    if (KeyIs(key, "annotations")) {
      return !model::Includes(node_fields_, model::NodeFields::kAnnotations) ||
             ReadStringMap(value, node.annotations);
    }
    if (meta != nullptr) {
      return ReadObjectMeta(key, value, *meta);
    }
    return true;
  });
}

bool FieldDecoder::DecodeNodeSpec(od::value& v, model::NodeInfo& node) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "unschedulable")) {
      return ReadBool(value, node.unschedulable);
    }
    if (KeyIs(key, "taints")) {
      node.taints.clear();
      return ForEachElement(value, [&](size_t, od::value& element) {
        return DecodeTaint(element, node.taints.emplace_back());
      });
    }
    return true;
  });
}

bool FieldDecoder::DecodeTaint(od::value& v, model::Taint& taint) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "key")) {
      return ReadString(value, taint.key);
    }
    if (KeyIs(key, "value")) {
      return ReadString(value, taint.value);
    }
    if (KeyIs(key, "effect")) {
      std::string_view text;
      if (!ReadString(value, text)) {
        return false;
      }
      const std::optional<model::TaintEffect> effect = model::ParseTaintEffect(text);
      if (!effect.has_value()) {
        return Fail("unknown taint effect " + QuoteShort(text));
      }
      taint.effect = *effect;
      return true;
    }
    return true;
  });
}

bool FieldDecoder::DecodeNodeStatus(od::value& v, model::NodeInfo& node) {
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    if (KeyIs(key, "allocatable")) {
      return !model::Includes(node_fields_, model::NodeFields::kResources) ||
             ReadResourceList(value, node.allocatable, nullptr);
    }
    if (KeyIs(key, "capacity")) {
      return !model::Includes(node_fields_, model::NodeFields::kResources) ||
             ReadResourceList(value, node.capacity, nullptr);
    }
    if (KeyIs(key, "conditions")) {
      node.conditions.clear();
      const bool ok = ForEachElement(value, [&](size_t, od::value& element) {
        model::NodeCondition& condition = node.conditions.emplace_back();
        return ForEachField(element, [&](std::string_view condition_key, od::value& field) {
          if (KeyIs(condition_key, "type")) {
            return ReadString(field, condition.type);
          }
          if (KeyIs(condition_key, "status")) {
            return ReadString(field, condition.status);
          }
          return true;
        });
      });
      node.UpdateConditionSummary();
      return ok;
    }
    return true;
  });
}

}  // namespace schedext::wire::internal
