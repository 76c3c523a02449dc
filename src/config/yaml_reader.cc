#include "config/yaml_reader.h"

#include <yaml-cpp/eventhandler.h>

#include <charconv>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

#include "common/text.h"

namespace schedext::config {
namespace {

// Bounds on what one policy's `args` may expand to: nesting depth, and values
// in total (aliases can otherwise multiply a small file into a huge document).
constexpr int kMaxArgsDepth = 64;
constexpr size_t kMaxArgsValues = 100000;

constexpr std::string_view kYamlStrTag = "tag:yaml.org,2002:str";

// Parses a whole decimal integer ([-+]?[0-9]+). Empty when `s` is not one or
// does not fit in int64.
std::optional<int64_t> ParseInt64(std::string_view s) {
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (!s.empty() && s.front() == '-') {
      return std::nullopt;
    }
  }
  if (s.empty()) {
    return std::nullopt;
  }
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return std::nullopt;
  }
  return value;
}

// Whether `s` is a YAML 1.2 core-schema decimal float:
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool LooksLikeDecimalFloat(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      ++i;
    }
    return i - start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    ++i;
  }
  size_t int_digits = digits();
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    frac_digits = digits();
  }
  if (int_digits == 0 && frac_digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      ++i;
    }
    if (digits() == 0) {
      return false;
    }
  }
  return i == s.size();
}

std::optional<double> ParseDouble(std::string_view s) {
  if (!LooksLikeDecimalFloat(s)) {
    return std::nullopt;
  }
  if (s.front() == '+') {
    s.remove_prefix(1);  // from_chars does not take a leading '+'
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return std::nullopt;  // out of range: not a finite double
  }
  return value;
}

// `<source>:<line>:<col>: `; a null mark reads 1:1.
std::string MarkPrefix(std::string_view source, const YAML::Mark& mark) {
  const int line = mark.is_null() || mark.line < 0 ? 1 : mark.line + 1;
  const int column = mark.is_null() || mark.column < 0 ? 1 : mark.column + 1;
  return std::string(source) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

// The parser's events, of which only where each document starts matters.
class DocumentStarts final : public YAML::EventHandler {
 public:
  const YAML::Mark& last() const { return last_; }

  void OnDocumentStart(const YAML::Mark& mark) override { last_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  YAML::Mark last_ = YAML::Mark::null_mark();
};

}  // namespace

StatusOr<YAML::Node> ParseYamlDocument(std::string_view text, std::string_view source) {
  try {
    // A first pass over the parser's events counts the documents and stops
    // where yaml-cpp 0.7 makes no progress: its document parser leaves a ','
    // outside any flow collection unread, and LoadAll then yields empty
    // documents at that spot for ever (",", "\n,", "- a\n,", "[a] ,"). Every
    // other document consumes at least one token, so one that starts where
    // the previous one did is exactly that case. The first document is then
    // loaded on its own (yaml-cpp's node builder is not public).
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    DocumentStarts starts;
    int documents = 0;
    int previous = -1;
    while (parser.HandleNextDocument(starts)) {
      const YAML::Mark& at = starts.last();
      if (at.pos == previous) {
        const size_t pos = static_cast<size_t>(at.pos);
        const std::string what = pos < text.size() && text[pos] == ','
                                     ? "a document cannot start with ','"
                                     : "a document cannot start here";
        return InvalidArgumentError(MarkPrefix(source, at) + "invalid YAML: " + what);
      }
      previous = at.pos;
      ++documents;
    }
    if (documents > 1) {
      return InvalidArgumentError(std::string(source) + ": expected one YAML document, found " +
                                  std::to_string(documents));
    }
    return documents == 0 ? YAML::Node() : YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(MarkPrefix(source, e.mark) + "invalid YAML: " + e.msg);
  } catch (const std::bad_alloc&) {
    throw;  // architecture §8: out of memory is not caught
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string(source) + ": " + e.what());
  }
}

std::string Join(std::string_view path, std::string_view name) {
  if (path.empty()) {
    return std::string(name);
  }
  std::string out(path);
  out += '.';
  out += name;
  return out;
}

std::string Index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

Status YamlReader::ErrorAt(const YAML::Mark& mark, std::string_view path,
                           std::string_view message) const {
  std::string m = MarkPrefix(source_, mark);
  if (!path.empty()) {
    m += path;
    m += ": ";
  }
  m += message;
  return InvalidArgumentError(std::move(m));
}

StatusOr<Fields> YamlReader::ReadMapping(const YAML::Node& node, const YAML::Mark& mark,
                                         std::string_view path,
                                         std::span<const std::string_view> known) const {
  Fields result;
  if (node.IsNull()) {
    return result;
  }
  if (!node.IsMap()) {
    return ErrorAt(mark, path, "must be a mapping");
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    // A copy: `it->first` lives in a proxy that dies with the full expression.
    const YAML::Node key = it->first;
    if (!key.IsScalar()) {
      return ErrorAt(key.Mark(), path, "keys must be strings");
    }
    std::string name = key.Scalar();
    std::string field_path = Join(path, name);
    bool is_known = false;
    for (std::string_view k : known) {
      is_known = is_known || k == name;
    }
    if (!is_known) {
      return ErrorAt(key.Mark(), field_path, "unknown field (known: " + JoinNames(known) + ")");
    }
    for (const Field& seen : result.fields()) {
      if (seen.name == name) {
        return ErrorAt(key.Mark(), field_path, "duplicate field");
      }
    }
    result.fields().push_back(Field{std::move(name), key, it->second});
  }
  return result;
}

Status YamlReader::ReadString(const Field& f, std::string_view path, std::string& out) const {
  const YAML::Node& v = f.value;
  bool tag_ok = v.Tag() == "?" || v.Tag() == "!" || v.Tag() == kYamlStrTag;
  if (!v.IsScalar() || !tag_ok) {
    return ErrorAt(MarkOf(f), path, "must be a string");
  }
  out = v.Scalar();
  return OkStatus();
}

Status YamlReader::ReadInt(const Field& f, std::string_view path, int64_t min, int64_t max,
                           std::string_view expectation, int64_t& out) const {
  const YAML::Node& v = f.value;
  std::optional<int64_t> value;
  if (v.IsScalar() && v.Tag() == "?") {  // plain only: "5" in quotes is a string
    value = ParseInt64(v.Scalar());
  }
  if (!value || *value < min || *value > max) {
    return ErrorAt(MarkOf(f), path, std::string("must be ") + std::string(expectation));
  }
  out = *value;
  return OkStatus();
}

Status YamlReader::ReadBoolInto(const Fields& fields, std::string_view name, std::string_view path,
                                bool& out) const {
  const Field* f = fields.Find(name);
  if (f == nullptr) {
    return OkStatus();  // keep the default
  }
  // Plain YAML 1.2 core booleans only: "true" in quotes is a string.
  const YAML::Node& v = f->value;
  const std::string text = v.IsScalar() && v.Tag() == "?" ? v.Scalar() : std::string();
  if (text == "true" || text == "True" || text == "TRUE") {
    out = true;
  } else if (text == "false" || text == "False" || text == "FALSE") {
    out = false;
  } else {
    return ErrorAt(MarkOf(*f), Join(path, name), "must be true or false");
  }
  return OkStatus();
}

Status YamlReader::ReadOneOf(const Fields& fields, std::string_view name, std::string_view path,
                             std::span<const std::string_view> allowed, std::string& out) const {
  const Field* f = fields.Find(name);
  if (f == nullptr) {
    return OkStatus();
  }
  std::string field_path = Join(path, name);
  std::string value;
  SCHEDEXT_RETURN_IF_ERROR(ReadString(*f, field_path, value));
  for (std::string_view a : allowed) {
    if (a == value) {
      out = std::move(value);
      return OkStatus();
    }
  }
  return ErrorAt(MarkOf(*f), field_path,
                 "must be one of " + JoinNames(allowed) + " (got " + Quote(value) + ")");
}

Status YamlReader::ReadJson(const YAML::Node& node, std::string_view path,
                            nlohmann::json& out) const {
  size_t budget = kMaxArgsValues;
  return ToJson(node, path, 0, budget, out);
}

// YAML → JSON for policy args. Plain scalars are resolved by the YAML 1.2 core
// YAML → JSON for policy args. Plain scalars are resolved by the YAML 1.2 core
// schema (null, true/false, decimal int64, decimal float); quoted, block and
// !!str scalars stay strings; other explicit tags are refused.
Status YamlReader::ToJson(const YAML::Node& node, std::string_view path, int depth, size_t& budget,
                          nlohmann::json& out) const {
  if (depth > kMaxArgsDepth) {
    return ErrorAt(node.Mark(), path,
                   "nested more than " + std::to_string(kMaxArgsDepth) + " levels deep");
  }
  if (budget == 0) {
    return ErrorAt(node.Mark(), path,
                   "too many values (more than " + std::to_string(kMaxArgsValues) + ")");
  }
  --budget;
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out = nullptr;
      return OkStatus();
    case YAML::NodeType::Scalar: {
      const std::string& tag = node.Tag();
      const std::string& text = node.Scalar();
      if (tag == "!" || tag == kYamlStrTag) {
        out = text;
        return OkStatus();
      }
      if (tag != "?") {
        return ErrorAt(node.Mark(), path, "unsupported tag " + Quote(tag));
      }
      if (text == "null" || text == "Null" || text == "NULL" || text == "~" || text.empty()) {
        out = nullptr;
      } else if (text == "true" || text == "True" || text == "TRUE") {
        out = true;
      } else if (text == "false" || text == "False" || text == "FALSE") {
        out = false;
      } else if (std::optional<int64_t> i = ParseInt64(text)) {
        out = *i;
      } else if (std::optional<double> d = ParseDouble(text)) {
        out = *d;
      } else {
        out = text;
      }
      return OkStatus();
    }
    case YAML::NodeType::Sequence: {
      out = nlohmann::json::array();
      size_t i = 0;
      for (const YAML::Node& item : node) {
        nlohmann::json value;
        SCHEDEXT_RETURN_IF_ERROR(ToJson(item, Index(path, i), depth + 1, budget, value));
        out.push_back(std::move(value));
        ++i;
      }
      return OkStatus();
    }
    case YAML::NodeType::Map: {
      out = nlohmann::json::object();
      for (auto it = node.begin(); it != node.end(); ++it) {
        const YAML::Node key = it->first;  // a copy, as in ReadMapping
        if (!key.IsScalar()) {
          return ErrorAt(key.Mark(), path, "keys must be strings");
        }
        std::string key_path = Join(path, key.Scalar());
        if (out.contains(key.Scalar())) {
          return ErrorAt(key.Mark(), key_path, "duplicate field");
        }
        nlohmann::json value;
        SCHEDEXT_RETURN_IF_ERROR(ToJson(it->second, key_path, depth + 1, budget, value));
        out[key.Scalar()] = std::move(value);
      }
      return OkStatus();
    }
  }
  return ErrorAt(node.Mark(), path, "unsupported YAML node");
}

}  // namespace schedext::config
