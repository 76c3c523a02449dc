// RequestDecoder: simdjson on-demand over the RequestBuffer, in place.
//
// The conventions (failure paths, key matching, null and duplicate keys,
// string lifetimes) are those of json_fields.h, whose FieldDecoder this file
// implements: the pod and node walkers are shared with ObjectDecoder.
#include "schedext/wire/decoder.h"

#include <simdjson.h>

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedext/model/resources.h"
#include "wire/json_fields.h"
#include "wire/json_scan.h"

namespace schedext::wire {
namespace internal {
namespace {

static_assert(kJsonPadding >= simdjson::SIMDJSON_PADDING,
              "RequestBuffer padding must cover simdjson's");

// A JSON number token (RFC 8259 grammar): -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsJsonNumber(std::string_view token) {
  size_t i = 0;
  auto digits = [&]() {
    const size_t begin = i;
    while (i < token.size() && token[i] >= '0' && token[i] <= '9') {
      ++i;
    }
    return i - begin;
  };
  if (i < token.size() && token[i] == '-') {
    ++i;
  }
  const size_t int_start = i;
  const size_t int_digits = digits();
  if (int_digits == 0 || (int_digits > 1 && token[int_start] == '0')) {
    return false;
  }
  if (i < token.size() && token[i] == '.') {
    ++i;
    if (digits() == 0) {
      return false;
    }
  }
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    if (i < token.size() && (token[i] == '+' || token[i] == '-')) {
      ++i;
    }
    if (digits() == 0) {
      return false;
    }
  }
  return i == token.size();
}

// -?[0-9]+
bool IsIntegerToken(std::string_view token) {
  if (!token.empty() && token.front() == '-') {
    token.remove_prefix(1);
  }
  if (token.empty()) {
    return false;
  }
  for (char c : token) {
    if (c < '0' || c > '9') {
      return false;
    }
  }
  return true;
}

// A lowercase message for a simdjson error code.
std::string SimdjsonErrorText(simdjson::error_code code) {
  switch (code) {
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
      return "malformed JSON: the document is truncated, unbalanced or followed by trailing data";
    case simdjson::TAPE_ERROR:
      return "malformed JSON: missing or superfluous commas, colons, braces or brackets";
    case simdjson::UNCLOSED_STRING:
      return "malformed JSON: unclosed string";
    case simdjson::STRING_ERROR:
      return "malformed JSON: invalid string (bad escape or control character)";
    case simdjson::UTF8_ERROR:
      return "malformed JSON: invalid UTF-8";
    case simdjson::UNESCAPED_CHARS:
      return "malformed JSON: unescaped control character in a string";
    case simdjson::NUMBER_ERROR:
      return "malformed JSON: invalid number";
    case simdjson::T_ATOM_ERROR:
    case simdjson::F_ATOM_ERROR:
    case simdjson::N_ATOM_ERROR:
      return "malformed JSON: invalid literal";
    case simdjson::DEPTH_ERROR:
      return "malformed JSON: nested too deeply";
    case simdjson::CAPACITY:
      return "document too large";
    case simdjson::MEMALLOC:
      return "out of memory while parsing";
    case simdjson::EMPTY:
      return "empty body";
    default: {
      std::string text = "malformed JSON: ";
      text += simdjson::error_message(code);
      return text;
    }
  }
}

}  // namespace

bool FieldDecoder::Fail(std::string message) {
  error_ = std::move(message);
  reverse_path_.clear();
  return false;
}
bool FieldDecoder::Fail(simdjson::error_code code) { return Fail(SimdjsonErrorText(code)); }

bool FieldDecoder::At(std::string_view segment) {
  reverse_path_.emplace_back(segment);
  return false;
}

bool FieldDecoder::AtIndex(size_t index) {
  char digits[24];
  const std::to_chars_result result = std::to_chars(digits, digits + sizeof(digits), index);
  reverse_path_.emplace_back(digits, result.ptr);
  return false;
}

Status FieldDecoder::TakeError(std::string_view message_type) {
  std::string message = "decode ";
  message.append(message_type).append(": ");
  if (!reverse_path_.empty()) {
    for (auto it = reverse_path_.rbegin(); it != reverse_path_.rend(); ++it) {
      message.push_back('/');
      message.append(*it);
    }
    message.append(": ");
  }
  message.append(error_);
  error_.clear();
  reverse_path_.clear();
  return InvalidArgumentError(std::move(message));
}

bool FieldDecoder::ReadType(od::value& v, od::json_type& type) {
  if (auto code = v.type().get(type)) {
    return Fail(code);
  }
  if (type == od::json_type::null && TrimJsonSpace(v.raw_json_token()) != "null") {
    return Fail("malformed JSON: invalid literal");
  }
  return true;
}

bool FieldDecoder::ReadKey(od::field& field, std::string_view& key) {
  const char* raw = field.key().raw();
  size_t length = 0;
  while (raw[length] != '"' && raw[length] != '\\') {
    ++length;
  }
  if (raw[length] == '"') {
    key = std::string_view(raw, length);
    return true;
  }
  if (auto code = field.unescaped_key().get(key)) {
    return Fail(code);
  }
  return true;
}

bool FieldDecoder::IsNull(od::value& v, bool& is_null) {
  od::json_type type;
  if (!ReadType(v, type)) {
    return false;
  }
  is_null = type == od::json_type::null;
  return true;
}

namespace {

// The string of `v`, whose type the caller has read already.
bool StringOfType(FieldDecoder& d, od::value& v, od::json_type type, std::string_view& out) {
  if (type != od::json_type::string) {
    return d.Fail("expected a string");
  }
  if (auto code = v.get_string().get(out)) {
    return d.Fail(code);
  }
  return true;
}

}  // namespace

bool FieldDecoder::ReadString(od::value& v, std::string_view& out) {
  od::json_type type;
  if (!ReadType(v, type)) {
    return false;
  }
  return type == od::json_type::null || StringOfType(*this, v, type, out);
}

bool FieldDecoder::ReadRequiredString(od::value& v, std::string_view& out) {
  od::json_type type;
  return ReadType(v, type) && StringOfType(*this, v, type, out);
}

bool FieldDecoder::ReadBool(od::value& v, bool& out) {
  od::json_type type;
  if (!ReadType(v, type)) {
    return false;
  }
  if (type == od::json_type::null) {
    return true;
  }
  if (type != od::json_type::boolean) {
    return Fail("expected a boolean");
  }
  if (auto code = v.get_bool().get(out)) {
    return Fail(code);
  }
  return true;
}

bool FieldDecoder::ReadInt64(od::value& v, int64_t& out) {
  od::json_type type;
  if (!ReadType(v, type)) {
    return false;
  }
  if (type == od::json_type::null) {
    return true;
  }
  if (type != od::json_type::number) {
    return Fail("expected an integer");
  }
  const std::string_view token = TrimJsonSpace(v.raw_json_token());
  int64_t value = 0;
  if (auto code = v.get_int64().get(value)) {
    if (code != simdjson::INCORRECT_TYPE && code != simdjson::NUMBER_OUT_OF_RANGE) {
      return Fail(code);
    }
    // simdjson 3.0.1 reports both 5.0 and 2^63 as INCORRECT_TYPE.
    if (IsIntegerToken(token)) {
      return Fail("integer " + std::string(token) + " is out of the int64 range");
    }
    return Fail("expected an integer, got " + std::string(token));
  }
  out = value;
  return true;
}

bool FieldDecoder::ReadInt32(od::value& v, int32_t& out) {
  int64_t value = out;
  if (!ReadInt64(v, value)) {
    return false;
  }
  if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()) {
    std::string message = "integer ";
    message.append(std::to_string(value)).append(" is out of the int32 range");
    return Fail(std::move(message));
  }
  out = static_cast<int32_t>(value);
  return true;
}

bool FieldDecoder::ReadQuantity(std::string_view name, od::value& v, int64_t& amount) {
  od::json_type type;
  if (!ReadType(v, type)) {
    return false;
  }
  std::string_view text;
  switch (type) {
    case od::json_type::null:
      amount = 0;
      return true;
    case od::json_type::string:
      if (auto code = v.get_string().get(text)) {
        return Fail(code);
      }
      text = TrimJsonSpace(text);
      break;
    case od::json_type::number:
      text = TrimJsonSpace(v.raw_json_token());
      if (!IsJsonNumber(text)) {
        std::string message = "malformed JSON: invalid number ";
        message.append(text);
        return Fail(std::move(message));
      }
      break;
    default:
      return Fail("expected a quantity (a string or a number)");
  }
  StatusOr<int64_t> parsed = model::ParseResourceAmount(name, text);
  if (!parsed.ok()) {
    // The model names the resource ("cpu: invalid quantity ..."); the path
    // already ends with it.
    std::string message = parsed.status().message();
    if (message.size() > name.size() + 2 && message.compare(0, name.size(), name) == 0 &&
        message.compare(name.size(), 2, ": ") == 0) {
      message.erase(0, name.size() + 2);
    }
    return Fail(std::move(message));
  }
  amount = *parsed;
  return true;
}

bool FieldDecoder::ReadStringMap(od::value& v, model::StringMap& map) {
  map.Clear();
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    std::string_view text;
    if (!ReadString(value, text)) {
      return false;
    }
    map.Set(key, text);
    return true;
  });
}

bool FieldDecoder::ReadStringList(od::value& v, std::vector<std::string_view>& out) {
  out.clear();
  return ForEachElement(v, [&](size_t, od::value& element) {
    std::string_view text;
    if (!ReadRequiredString(element, text)) {
      return false;
    }
    out.push_back(text);
    return true;
  });
}

namespace {

const char* SkipJsonSpace(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
    ++p;
  }
  return p;
}

}  // namespace

bool FieldDecoder::ReadLargeRootStringList(od::value& v, std::vector<std::string_view>& out) {
  out.clear();
  const char* after = ScanPlainStrings(v.raw_json_token().data(), out);
  if (after == nullptr) {
    out.clear();
    return ReadStringList(v, out);
  }
  // Only the root's closing brace left: no later field can change anything,
  // and the on-demand walk would only step through every name again.
  const char* rest = SkipJsonSpace(after, document_end_);
  if (rest < document_end_ && *rest == '}' &&
      SkipJsonSpace(rest + 1, document_end_) == document_end_) {
    document_read_ = true;
  }
  return true;
}

const char* FieldDecoder::ScanPlainStrings(const char* open_bracket,
                                           std::vector<std::string_view>& out) const {
  const char* const end = document_end_;
  const char* p = open_bracket;
  if (end == nullptr || p >= end || *p != '[') {
    return nullptr;
  }
  p = SkipJsonSpace(p + 1, end);
  if (p < end && *p == ']') {
    return p + 1;
  }
  while (p < end && *p == '"') {
    const char* text = p + 1;
    const size_t length = FirstEscape(std::string_view(text, static_cast<size_t>(end - text)));
    p = text + length;
    if (p >= end || *p != '"') {
      return nullptr;  // an escape or a control character: the general path decides
    }
    out.emplace_back(text, length);
    p = SkipJsonSpace(p + 1, end);
    if (p < end && *p == ']') {
      return p + 1;
    }
    if (p >= end || *p != ',') {
      return nullptr;
    }
    p = SkipJsonSpace(p + 1, end);
  }
  return nullptr;
}

bool FieldDecoder::ReadResourceList(od::value& v, model::ResourceList& list,
                                    model::ContainerResources* container) {
  list.Clear();
  if (container != nullptr) {
    container->has_cpu_request = false;
    container->has_memory_request = false;
  }
  return ForEachField(v, [&](std::string_view name, od::value& value) {
    int64_t amount = 0;
    if (!ReadQuantity(name, value, amount)) {
      return false;
    }
    list.Set(name, amount);
    if (container != nullptr) {
      if (name == model::kResourceCpu) {
        container->has_cpu_request = true;
      } else if (name == model::kResourceMemory) {
        container->has_memory_request = true;
      }
    }
    return true;
  });
}

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
          return Fail("unknown selector operator \"" + std::string(text) + "\"");
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
          return Fail("unknown toleration operator \"" + std::string(text) + "\"");
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
          return Fail("unknown taint effect \"" + std::string(text) + "\"");
        }
        return true;
      }
      return true;
    });
  });
}

bool FieldDecoder::DecodeNode(od::value& v, model::NodeInfo& node, ObjectMeta* meta) {
  od::json_type type;
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
    return Fail(code);
  }
  std::string_view span(begin, static_cast<size_t>(end - begin));
  while (!span.empty() && IsJsonSpace(span.back())) {
    span.remove_suffix(1);
  }
  if (span.size() < 2 || span.front() != '{' || span.back() != '}') {
    return Fail("internal error: cannot delimit the node object");
  }
  node.raw_json = span;
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
      return ReadStringMap(value, node.labels);
    }
    if (KeyIs(key, "annotations")) {
      return ReadStringMap(value, node.annotations);
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
        return Fail("unknown taint effect \"" + std::string(text) + "\"");
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
      return ReadResourceList(value, node.allocatable, nullptr);
    }
    if (KeyIs(key, "capacity")) {
      return ReadResourceList(value, node.capacity, nullptr);
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

bool FieldDecoder::ReadObjectMeta(std::string_view key, od::value& value, ObjectMeta& meta) {
  if (KeyIs(key, "resourceVersion")) {
    return ReadString(value, meta.resource_version);
  }
  if (KeyIs(key, "deletionTimestamp")) {
    std::string_view text;
    if (!ReadString(value, text)) {
      return false;
    }
    meta.has_deletion_timestamp = !text.empty();
    return true;
  }
  return true;
}

bool FieldDecoder::BeginDocument(od::parser& parser, const char* data, size_t size, size_t capacity,
                                 od::document& doc, bool& is_null) {
  is_null = false;
  document_end_ = data + size;
  document_read_ = false;
  const std::string_view text = TrimJsonSpace(std::string_view(data, size));
  if (text.empty()) {
    return Fail("empty body");
  }
  if (text == "null") {
    // simdjson 3.0.1's root is_null() is false for "null\n"; decide here.
    is_null = true;
    return true;
  }
  if (auto code = parser.iterate(data, size, capacity).get(doc)) {
    return Fail(code);
  }
  od::json_type type;
  if (auto code = doc.type().get(type)) {
    return Fail(code);
  }
  if (type != od::json_type::object) {
    return Fail("expected a JSON object");
  }
  return true;
}

}  // namespace internal

using internal::KeyIs;
namespace od = simdjson::ondemand;

// The request-level state; the field walkers come from FieldDecoder.
struct RequestDecoder::Impl : internal::FieldDecoder {
  od::parser parser;

  // NodeInfos kept for reuse when a request has fewer nodes than the last one.
  std::vector<model::NodeInfo> node_pool;
  // NodeNameToMetaVictims while decoding PreemptionArgs (swapped into the view
  // when it is the map that counts).
  std::vector<VictimsView> meta_nodes;

  // "Pod" of ExtenderArgs and ExtenderPreemptionArgs: null clears it; an
  // object decodes into `pod` (a repeated key merges into it, as Go's does).
  bool DecodeNullablePod(od::value& value, bool& has_pod, model::PodInfo& pod) {
    bool is_null = false;
    if (!IsNull(value, is_null)) {
      return false;
    }
    if (is_null) {
      has_pod = false;
      pod.Clear();
      return true;
    }
    has_pod = true;
    return DecodePod(value, pod);
  }

  // ---- Node ----

  // The NodeInfo at `index` of `nodes`, cleared: an existing one, one from the
  // pool, or a new one.
  model::NodeInfo& NodeAt(std::vector<model::NodeInfo>& nodes, size_t index) {
    if (index < nodes.size()) {
      nodes[index].Clear();
      return nodes[index];
    }
    if (!node_pool.empty()) {
      nodes.push_back(std::move(node_pool.back()));
      node_pool.pop_back();
      nodes.back().Clear();
      return nodes.back();
    }
    return nodes.emplace_back();
  }

  // Shrinks `nodes` to `count`, keeping the removed NodeInfos for reuse.
  void TrimNodes(std::vector<model::NodeInfo>& nodes, size_t count) {
    while (nodes.size() > count) {
      node_pool.push_back(std::move(nodes.back()));
      nodes.pop_back();
    }
  }

  bool DecodeNodeList(od::value& v, std::vector<model::NodeInfo>& nodes, size_t& count) {
    return ForEachField(v, [&](std::string_view key, od::value& value) {
      if (!KeyIs(key, "items")) {
        return true;
      }
      count = 0;
      return ForEachElement(value, [&](size_t, od::value& element) {
        model::NodeInfo& node = NodeAt(nodes, count);
        ++count;
        return DecodeNode(element, node);
      });
    });
  }

  // ---- Preemption ----

  // NodeNameToVictims (full pods) or NodeNameToMetaVictims (UIDs) into
  // entries[0, count), in document order; a repeated node replaces its entry.
  bool DecodeVictimsMap(od::value& v, std::vector<VictimsView>& entries, size_t& count, bool full) {
    count = 0;
    return ForEachField(v, [&](std::string_view node_name, od::value& value) {
      size_t slot = 0;
      while (slot < count && entries[slot].node != node_name) {
        ++slot;
      }
      if (slot == count) {
        if (count == entries.size()) {
          entries.emplace_back();
        }
        ++count;
      }
      VictimsView& entry = entries[slot];
      entry.node = node_name;
      entry.num_pdb_violations = 0;
      size_t pod_count = 0;
      const bool ok = ForEachField(value, [&](std::string_view key, od::value& field) {
        if (KeyIs(key, "Pods")) {
          pod_count = 0;
          return ForEachElement(field, [&](size_t, od::value& element) {
            if (pod_count < entry.pods.size()) {
              entry.pods[pod_count].Clear();
            } else {
              entry.pods.emplace_back();
            }
            model::PodInfo& pod = entry.pods[pod_count];
            ++pod_count;
            od::json_type type;
            if (!ReadType(element, type)) {
              return false;
            }
            if (type != od::json_type::object) {
              return Fail("expected an object");
            }
            if (!full) {
              return ForEachField(element, [&](std::string_view pod_key, od::value& uid) {
                return KeyIs(pod_key, "UID") ? ReadString(uid, pod.uid) : true;
              });
            }
            if (!DecodePod(element, pod)) {
              return false;
            }
            pod.FinalizeRequests();
            return true;
          });
        }
        if (KeyIs(key, "NumPDBViolations")) {
          return ReadInt64(field, entry.num_pdb_violations);
        }
        return true;
      });
      entry.pods.resize(pod_count);
      return ok;
    });
  }

  // ---- document level ----

  // Starts a document. `is_null`: the body is the literal null.
  bool Begin(const RequestBuffer& body, od::document& doc, bool& is_null) {
    return BeginDocument(parser, body.data(), body.size(), body.capacity(), doc, is_null);
  }
};

RequestDecoder::RequestDecoder() : impl_(std::make_unique<Impl>()) {}
RequestDecoder::~RequestDecoder() = default;

Status RequestDecoder::DecodeExtenderArgs(const RequestBuffer& body, ExtenderArgsView& out) {
  Impl& d = *impl_;
  out.has_pod = false;
  out.pod.Clear();
  out.mode = NodeMode::kNone;
  out.node_names.clear();

  size_t node_count = 0;
  bool nodes_set = false;
  bool names_set = false;
  od::document doc;
  bool is_null = false;
  bool ok = d.Begin(body, doc, is_null);
  if (ok && !is_null) {
    ok = d.WalkRoot(doc, [&](std::string_view key, od::value& value) {
      if (KeyIs(key, "Pod")) {
        return d.DecodeNullablePod(value, out.has_pod, out.pod);
      }
      if (KeyIs(key, "Nodes")) {
        bool list_null = false;
        if (!d.IsNull(value, list_null)) {
          return false;
        }
        nodes_set = !list_null;
        if (list_null) {
          node_count = 0;
          return true;
        }
        return d.DecodeNodeList(value, out.nodes, node_count);
      }
      if (KeyIs(key, "NodeNames")) {
        bool names_null = false;
        if (!d.IsNull(value, names_null)) {
          return false;
        }
        names_set = !names_null;
        out.node_names.clear();
        return names_null || d.ReadLargeRootStringList(value, out.node_names);
      }
      return true;
    });
  }
  if (!ok) {
    node_count = 0;
    nodes_set = false;
    names_set = false;
  }
  if (nodes_set) {
    out.mode = NodeMode::kFullNodes;
  } else if (names_set) {
    out.mode = NodeMode::kNodeNames;
  } else {
    node_count = 0;
    out.node_names.clear();
  }
  d.TrimNodes(out.nodes, node_count);
  if (nodes_set) {
    out.node_names.clear();
    for (const model::NodeInfo& node : out.nodes) {
      out.node_names.push_back(node.name);
    }
  }
  if (!ok) {
    out.has_pod = false;
    out.pod.Clear();
    return d.TakeError("ExtenderArgs");
  }
  if (out.has_pod) {
    out.pod.FinalizeRequests();
  }
  return OkStatus();
}

Status RequestDecoder::DecodePreemptionArgs(const RequestBuffer& body, PreemptionArgsView& out) {
  Impl& d = *impl_;
  out.has_pod = false;
  out.pod.Clear();
  out.full_pods = false;
  out.node_count = 0;

  size_t victims_count = 0;
  size_t meta_count = 0;
  bool victims_set = false;
  bool meta_set = false;
  od::document doc;
  bool is_null = false;
  bool ok = d.Begin(body, doc, is_null);
  if (ok && !is_null) {
    ok = d.WalkRoot(doc, [&](std::string_view key, od::value& value) {
      if (KeyIs(key, "Pod")) {
        return d.DecodeNullablePod(value, out.has_pod, out.pod);
      }
      if (KeyIs(key, "NodeNameToVictims")) {
        bool map_null = false;
        if (!d.IsNull(value, map_null)) {
          return false;
        }
        victims_count = 0;
        victims_set = !map_null;
        return map_null || d.DecodeVictimsMap(value, out.nodes, victims_count, /*full=*/true);
      }
      if (KeyIs(key, "NodeNameToMetaVictims")) {
        bool map_null = false;
        if (!d.IsNull(value, map_null)) {
          return false;
        }
        meta_count = 0;
        meta_set = !map_null;
        return map_null || d.DecodeVictimsMap(value, d.meta_nodes, meta_count, /*full=*/false);
      }
      return true;
    });
  }
  if (!ok) {
    out.has_pod = false;
    out.pod.Clear();
    return d.TakeError("PreemptionArgs");
  }
  if (victims_set) {
    out.full_pods = true;
    out.node_count = victims_count;
  } else if (meta_set) {
    out.nodes.swap(d.meta_nodes);
    out.node_count = meta_count;
  }
  if (out.has_pod) {
    out.pod.FinalizeRequests();
  }
  return OkStatus();
}

Status RequestDecoder::DecodeBindingArgs(const RequestBuffer& body, BindingArgsView& out) {
  Impl& d = *impl_;
  out = BindingArgsView{};
  od::document doc;
  bool is_null = false;
  bool ok = d.Begin(body, doc, is_null);
  if (ok && !is_null) {
    ok = d.WalkRoot(doc, [&](std::string_view key, od::value& value) {
      if (KeyIs(key, "PodName")) {
        return d.ReadString(value, out.pod_name);
      }
      if (KeyIs(key, "PodNamespace")) {
        return d.ReadString(value, out.pod_namespace);
      }
      if (KeyIs(key, "PodUID")) {
        return d.ReadString(value, out.pod_uid);
      }
      if (KeyIs(key, "Node")) {
        return d.ReadString(value, out.node);
      }
      return true;
    });
  }
  if (!ok) {
    out = BindingArgsView{};
    return d.TakeError("BindingArgs");
  }
  return OkStatus();
}

void RequestDecoder::ShrinkTo(size_t max_bytes) {
  if (impl_->parser.capacity() > max_bytes) {
    impl_->parser = od::parser{};
    impl_->node_pool.clear();
    impl_->node_pool.shrink_to_fit();
    impl_->meta_nodes.clear();
    impl_->meta_nodes.shrink_to_fit();
  }
}

}  // namespace schedext::wire
