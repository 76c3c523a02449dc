// The yaml-cpp side of loading a configuration (private to src/config):
// parsing the text into one document, and reading its nodes as typed fields
// whose errors carry the YAML mark as `<source>:<line>:<col>: <path>: ...`.
// config.cc knows the schema (which fields, which bounds); this unit knows
// YAML (mappings, plain scalars, tags, marks).
//
// Thread-safety: a YamlReader is used by one load at a time.
#ifndef SCHEDEXT_CONFIG_YAML_READER_H_
#define SCHEDEXT_CONFIG_YAML_READER_H_

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/status.h"

namespace schedext::config {

// The single document of `text` (a null node when there is none);
// kInvalidArgument `<source>:<line>:<col>: invalid YAML: ...` for a syntax
// error, or when the text holds more than one document.
StatusOr<YAML::Node> ParseYamlDocument(std::string_view text, std::string_view source);

// One key/value pair of a mapping, with the key's text.
struct Field {
  std::string name;
  YAML::Node key;
  YAML::Node value;
};

// The fields of one mapping, already checked against the known names.
class Fields {
 public:
  // The value of `name`; nullptr when absent or null (null means "not set").
  const Field* Find(std::string_view name) const {
    for (const Field& f : fields_) {
      if (f.name == name) {
        return f.value.IsNull() ? nullptr : &f;
      }
    }
    return nullptr;
  }
  std::vector<Field>& fields() { return fields_; }

 private:
  std::vector<Field> fields_;
};

// "path.name" ("name" at the top); "path[i]".
std::string Join(std::string_view path, std::string_view name);
std::string Index(std::string_view path, size_t i);

// Typed reads of YAML nodes; every error names the source, the mark and the
// field path.
class YamlReader {
 public:
  explicit YamlReader(std::string_view source) : source_(source) {}

  // `<source>:<line>:<col>: <path>: <message>`; a null mark reads 1:1.
  Status ErrorAt(const YAML::Mark& mark, std::string_view path, std::string_view message) const;
  // A value's position; a null value (`key:` with nothing after it) has no
  // position of its own worth reporting, so the key's is used.
  static YAML::Mark MarkOf(const Field& f) {
    return f.value.IsNull() ? f.key.Mark() : f.value.Mark();
  }

  // The fields of mapping `node` (empty when null); an error for a node that
  // is no mapping, a non-string key, a name not in `known`, a duplicate.
  StatusOr<Fields> ReadMapping(const YAML::Node& node, const YAML::Mark& mark,
                               std::string_view path,
                               std::span<const std::string_view> known) const;
  // A string scalar (plain, quoted or !!str).
  Status ReadString(const Field& f, std::string_view path, std::string& out) const;
  // A plain decimal integer in [min, max]; else "must be <expectation>".
  Status ReadInt(const Field& f, std::string_view path, int64_t min, int64_t max,
                 std::string_view expectation, int64_t& out) const;
  // The *Into reads leave `out` as it is when the field is absent or null.
  template <typename T>
  Status ReadIntInto(const Fields& fields, std::string_view name, std::string_view path,
                     int64_t min, int64_t max, std::string_view expectation, T& out) const {
    const Field* f = fields.Find(name);
    if (f == nullptr) {
      return OkStatus();  // keep the default
    }
    int64_t value = 0;
    SCHEDEXT_RETURN_IF_ERROR(ReadInt(*f, Join(path, name), min, max, expectation, value));
    out = static_cast<T>(value);
    return OkStatus();
  }
  // A string among `allowed`.
  Status ReadOneOf(const Fields& fields, std::string_view name, std::string_view path,
                   std::span<const std::string_view> allowed, std::string& out) const;
  // A plain YAML 1.2 core boolean.
  Status ReadBoolInto(const Fields& fields, std::string_view name, std::string_view path,
                      bool& out) const;
  // `node` as JSON (policy args): plain scalars resolved by the YAML 1.2 core
  // schema, quoted and !!str ones strings, other tags refused; bounded in
  // depth and in values (aliases can multiply a small file).
  Status ReadJson(const YAML::Node& node, std::string_view path, nlohmann::json& out) const;

 private:
  Status ToJson(const YAML::Node& node, std::string_view path, int depth, size_t& budget,
                nlohmann::json& out) const;

  std::string_view source_;
};

}  // namespace schedext::config

#endif  // SCHEDEXT_CONFIG_YAML_READER_H_
