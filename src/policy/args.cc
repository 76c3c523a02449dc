#include "policy/args.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/text.h"

namespace schedext::policy {
namespace {

using nlohmann::json;

// "a, b, c", or "none".
std::string JoinNames(std::initializer_list<std::string_view> names) {
  if (names.size() == 0) {
    return "none";
  }
  return schedext::JoinNames({names.begin(), names.size()});
}

bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// The name part of a qualified name, or a non-empty label value:
// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 characters.
std::optional<std::string> NamePartError(std::string_view text) {
  if (text.empty()) {
    return "name part must not be empty";
  }
  if (text.size() > 63) {
    return "must be no more than 63 characters";
  }
  if (!IsAsciiAlnum(text.front()) || !IsAsciiAlnum(text.back())) {
    return "must start and end with an alphanumeric character";
  }
  for (char c : text) {
    if (!IsAsciiAlnum(c) && c != '-' && c != '_' && c != '.') {
      return "may contain only alphanumerics, '-', '_' and '.'";
    }
  }
  return std::nullopt;
}

// A DNS-1123 subdomain: lowercase labels of [a-z0-9-] joined by '.', each
// starting and ending alphanumeric; at most 253 characters.
std::optional<std::string> SubdomainError(std::string_view text) {
  if (text.empty()) {
    return "prefix must not be empty";
  }
  if (text.size() > 253) {
    return "prefix must be no more than 253 characters";
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t dot = text.find('.', start);
    std::string_view label =
        text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) {
      return "prefix must be a lowercase DNS subdomain";
    }
    for (char c : label) {
      if (!IsLowerAlnum(c) && c != '-') {
        return "prefix must be a lowercase DNS subdomain";
      }
    }
    if (dot == std::string_view::npos) {
      break;
    }
    start = dot + 1;
  }
  return std::nullopt;
}

}  // namespace

StatusOr<ArgsReader> ArgsReader::Make(const json& value, std::string path,
                                      std::initializer_list<std::string_view> known) {
  if (!value.is_object() && !value.is_null()) {
    return InvalidArgumentError(path + ": must be an object");
  }
  ArgsReader reader(&value, std::move(path));
  if (value.is_object()) {
    for (const auto& [key, unused] : value.items()) {
      bool is_known = false;
      for (std::string_view name : known) {
        if (name == key) {
          is_known = true;
          break;
        }
      }
      if (!is_known) {
        return reader.FieldError(key, "unknown field (known: " + JoinNames(known) + ")");
      }
    }
  }
  return reader;
}

std::string ArgsReader::FieldPath(std::string_view key) const {
  std::string out = path_;
  out.append(".").append(key);
  return out;
}

Status ArgsReader::Error(std::string_view message) const {
  std::string out = path_;
  out.append(": ").append(message);
  return InvalidArgumentError(std::move(out));
}

Status ArgsReader::FieldError(std::string_view key, std::string_view message) const {
  std::string out = FieldPath(key);
  out.append(": ").append(message);
  return InvalidArgumentError(std::move(out));
}

const json* ArgsReader::Find(std::string_view key) const {
  if (!value_->is_object()) {
    return nullptr;
  }
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) {
    return nullptr;
  }
  return &*it;
}

bool ArgsReader::Has(std::string_view key) const { return Find(key) != nullptr; }

StatusOr<bool> ArgsReader::Bool(std::string_view key, bool default_value) const {
  const json* field = Find(key);
  if (field == nullptr) {
    return default_value;
  }
  if (!field->is_boolean()) {
    return FieldError(key, "must be a boolean");
  }
  return field->get<bool>();
}

StatusOr<std::optional<int64_t>> ArgsReader::Int(std::string_view key, int64_t min,
                                                 int64_t max) const {
  const json* field = Find(key);
  if (field == nullptr) {
    return std::optional<int64_t>();
  }
  if (!field->is_number_integer()) {
    return FieldError(key, "must be an integer");
  }
  bool in_range = false;
  int64_t value = 0;
  if (field->is_number_unsigned()) {
    uint64_t u = field->get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      value = static_cast<int64_t>(u);
      in_range = value >= min && value <= max;
    }
  } else {
    value = field->get<int64_t>();
    in_range = value >= min && value <= max;
  }
  if (!in_range) {
    return FieldError(key,
                      "must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return std::optional<int64_t>(value);
}

StatusOr<std::optional<double>> ArgsReader::Number(std::string_view key) const {
  const json* field = Find(key);
  if (field == nullptr) {
    return std::optional<double>();
  }
  if (!field->is_number()) {
    return FieldError(key, "must be a number");
  }
  double value = field->get<double>();
  if (!std::isfinite(value)) {
    return FieldError(key, "must be finite");
  }
  return std::optional<double>(value);
}

StatusOr<std::optional<std::string>> ArgsReader::String(std::string_view key) const {
  const json* field = Find(key);
  if (field == nullptr) {
    return std::optional<std::string>();
  }
  if (!field->is_string()) {
    return FieldError(key, "must be a string");
  }
  return std::optional<std::string>(field->get_ref<const std::string&>());
}

StatusOr<std::string> ArgsReader::RequiredString(std::string_view key) const {
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string> value, String(key));
  if (!value.has_value()) {
    return FieldError(key, "required");
  }
  if (value->empty()) {
    return FieldError(key, "must not be empty");
  }
  return std::move(*value);
}

StatusOr<std::optional<std::string_view>> ArgsReader::Enum(
    std::string_view key, std::initializer_list<std::string_view> allowed) const {
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string> value, String(key));
  if (!value.has_value()) {
    return std::optional<std::string_view>();
  }
  for (std::string_view candidate : allowed) {
    if (candidate == *value) {
      return std::optional<std::string_view>(candidate);
    }
  }
  std::string message = allowed.size() == 2 ? "must be " : "must be one of ";
  size_t i = 0;
  for (std::string_view candidate : allowed) {
    if (i > 0) {
      message.append(allowed.size() == 2 ? " or " : ", ");
    }
    message.append(Quote(candidate));
    ++i;
  }
  return FieldError(key, message);
}

StatusOr<std::vector<std::string>> ArgsReader::StringList(std::string_view key) const {
  std::vector<std::string> out;
  const json* field = Find(key);
  if (field == nullptr) {
    return out;
  }
  if (!field->is_array()) {
    return FieldError(key, "must be a list");
  }
  out.reserve(field->size());
  for (size_t i = 0; i < field->size(); ++i) {
    const json& element = (*field)[i];
    if (!element.is_string()) {
      return FieldError(std::string(key) + "[" + std::to_string(i) + "]", "must be a string");
    }
    out.push_back(element.get<std::string>());
  }
  return out;
}

StatusOr<std::vector<std::pair<std::string, std::string>>> ArgsReader::StringMap(
    std::string_view key) const {
  std::vector<std::pair<std::string, std::string>> out;
  const json* field = Find(key);
  if (field == nullptr) {
    return out;
  }
  if (!field->is_object()) {
    return FieldError(key, "must be an object");
  }
  out.reserve(field->size());
  for (const auto& [name, value] : field->items()) {
    if (!value.is_string()) {
      return FieldError(std::string(key) + "[" + name + "]", "must be a string");
    }
    out.emplace_back(name, value.get<std::string>());
  }
  return out;
}

StatusOr<std::optional<ArgsReader>> ArgsReader::Object(
    std::string_view key, std::initializer_list<std::string_view> known) const {
  const json* field = Find(key);
  if (field == nullptr) {
    return std::optional<ArgsReader>();
  }
  SCHEDEXT_ASSIGN_OR_RETURN(ArgsReader child, Make(*field, FieldPath(key), known));
  return std::optional<ArgsReader>(std::move(child));
}

StatusOr<std::vector<ArgsReader>> ArgsReader::ObjectList(
    std::string_view key, std::initializer_list<std::string_view> known) const {
  std::vector<ArgsReader> out;
  const json* field = Find(key);
  if (field == nullptr) {
    return out;
  }
  if (!field->is_array()) {
    return FieldError(key, "must be a list");
  }
  out.reserve(field->size());
  for (size_t i = 0; i < field->size(); ++i) {
    const json& element = (*field)[i];
    std::string element_path = FieldPath(key) + "[" + std::to_string(i) + "]";
    if (!element.is_object()) {
      return InvalidArgumentError(element_path + ": must be an object");
    }
    SCHEDEXT_ASSIGN_OR_RETURN(ArgsReader child, Make(element, std::move(element_path), known));
    out.push_back(std::move(child));
  }
  return out;
}

std::optional<std::string> QualifiedNameError(std::string_view text) {
  if (text.empty()) {
    return "must not be empty";
  }
  std::string_view name = text;
  size_t slash = text.find('/');
  if (slash != std::string_view::npos) {
    if (text.find('/', slash + 1) != std::string_view::npos) {
      return "may contain at most one '/'";
    }
    if (std::optional<std::string> error = SubdomainError(text.substr(0, slash))) {
      return error;
    }
    name = text.substr(slash + 1);
  }
  return NamePartError(name);
}

std::optional<std::string> LabelValueError(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  return NamePartError(text);
}

}  // namespace schedext::policy
