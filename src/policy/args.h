// ArgsReader: typed, path-aware reading of a policy's `args` object, for the
// factories of built-in policies (internal to the policy layer).
//
// A reader wraps one JSON object and the path that names it in configuration
// ("profiles[0].policies[1].args"). It is created through Make(), which also
// rejects keys outside the policy's known set, so a misspelt key is reported
// before anything else:
//   profiles[0].policies[1].args.directon: unknown field (known: key, source, ...)
// Getters check the type of one field and return kInvalidArgument naming it:
//   profiles[0].policies[1].args.min: must be a number
// A key whose value is null reads as absent (YAML `min:` with no value).
// Child readers (Object, ObjectList) carry sub-paths such as
// `args.preferred[2]`, so errors deep in a structure name the exact field.
//
// Only args.cc includes nlohmann/json.hpp. A reader retains a pointer to the
// JSON value it reads: the value must outlive the reader. Thread-safety: a
// reader is read-only; use it from one thread (factories run at start-up).
#ifndef SCHEDEXT_POLICY_ARGS_H_
#define SCHEDEXT_POLICY_ARGS_H_

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/status.h"

namespace schedext::policy {

class ArgsReader {
 public:
  // Wraps `value` (an object; null reads as {}) found at `path`. Fails with
  // "<path>: must be an object" for any other type, and with
  // "<path>.<key>: unknown field (known: <known, in the given order>)" for the
  // first key (in key order) that is not in `known`.
  static StatusOr<ArgsReader> Make(const nlohmann::json& value, std::string path,
                                   std::initializer_list<std::string_view> known);

  // "profiles[0].policies[1].args".
  const std::string& path() const { return path_; }
  // "<path>.<key>".
  std::string FieldPath(std::string_view key) const;
  // kInvalidArgument "<path>: <message>".
  Status Error(std::string_view message) const;
  // kInvalidArgument "<path>.<key>: <message>". `key` may carry a suffix such
  // as "values[0]".
  Status FieldError(std::string_view key, std::string_view message) const;

  // True when `key` is present with a non-null value.
  bool Has(std::string_view key) const;

  // `default_value` when absent; "must be a boolean" otherwise.
  StatusOr<bool> Bool(std::string_view key, bool default_value) const;
  // nullopt when absent; "must be an integer", "must be between <min> and <max>".
  StatusOr<std::optional<int64_t>> Int(std::string_view key, int64_t min, int64_t max) const;
  // nullopt when absent; any JSON number; "must be a number", "must be finite".
  StatusOr<std::optional<double>> Number(std::string_view key) const;
  // nullopt when absent; "must be a string".
  StatusOr<std::optional<std::string>> String(std::string_view key) const;
  // As String, but absent is "required" and "" is "must not be empty".
  StatusOr<std::string> RequiredString(std::string_view key) const;
  // The element of `allowed` equal to the value (exact spelling), or nullopt
  // when absent; `must be "a" or "b"` / `must be one of "a", "b", "c"`. The
  // returned view refers to the character data of the `allowed` element.
  StatusOr<std::optional<std::string_view>> Enum(
      std::string_view key, std::initializer_list<std::string_view> allowed) const;
  // Empty when absent; "must be a list", "<key>[1]: must be a string".
  StatusOr<std::vector<std::string>> StringList(std::string_view key) const;
  // Empty when absent, in key order; "must be an object",
  // "<key>[zone]: must be a string".
  StatusOr<std::vector<std::pair<std::string, std::string>>> StringMap(std::string_view key) const;
  // A reader for the object at `key` (path "<path>.<key>"), or nullopt when
  // absent. The same checks as Make().
  StatusOr<std::optional<ArgsReader>> Object(std::string_view key,
                                             std::initializer_list<std::string_view> known) const;
  // Readers for the objects of the list at `key` (paths "<path>.<key>[i]");
  // empty when absent. "must be a list", "<key>[2]: must be an object", ...
  StatusOr<std::vector<ArgsReader>> ObjectList(std::string_view key,
                                               std::initializer_list<std::string_view> known) const;

 private:
  ArgsReader(const nlohmann::json* value, std::string path)
      : value_(value), path_(std::move(path)) {}

  // The value at `key`, or nullptr when absent or null (or when this reader
  // wraps null).
  const nlohmann::json* Find(std::string_view key) const;

  const nlohmann::json* value_;  // retained, not owned; an object or null
  std::string path_;
};

// Why `text` is not a valid Kubernetes qualified name (label or annotation
// key: an optional DNS-subdomain prefix and "/", then a name of at most 63
// alphanumerics, '-', '_' or '.' that starts and ends alphanumeric), or
// nullopt when it is valid.
std::optional<std::string> QualifiedNameError(std::string_view text);

// Why `text` is not a valid label value (empty, or at most 63 characters shaped
// like the name part of a qualified name), or nullopt when it is valid.
std::optional<std::string> LabelValueError(std::string_view text);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_ARGS_H_
