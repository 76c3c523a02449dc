// Internal to the wire layer: the simdjson on-demand field walkers shared by
// RequestDecoder (extender requests, decoder.cc) and ObjectDecoder (LIST pages
// and watch events, object_decoder.cc), so a pod or a node is decoded by the
// same code whichever document carries it.
//
// Conventions:
// * Every Decode*/Read* helper returns true on success. On failure it records
//   the innermost message with Fail() and returns false; each enclosing level
//   adds its path segment on the way out (At/AtIndex), so the path is built only
//   when something went wrong. TakeError() turns that into a Status.
// * Keys are matched exactly, then ASCII case-insensitively (KeyIs). Fields are
//   walked in document order (on-demand is forward-only); unknown keys are never
//   read, so simdjson skips them without materialising anything.
// * null is the same as absent for scalars and objects. A duplicated key is
//   decoded again: scalars take the last value, maps and lists are replaced by
//   the last occurrence (null empties them), and objects are merged field by
//   field as Go's encoding/json does for structs.
// * Strings come from get_string() (escapes resolved into the parser's string
//   buffer, valid until the next iterate). Keys without a backslash are viewed
//   in the body itself; escaped keys are unescaped into the parser's buffer.
//
// Implemented in json_fields.cc (the primitives, object metadata, the document
// root), pod_fields.cc (the pod walker) and node_fields.cc (the node walker).
// Not a public header: it includes simdjson.h and lives under src/.
// Thread-safety: none; one FieldDecoder per decoding thread.
#ifndef SCHEDEXT_SRC_WIRE_JSON_FIELDS_H_
#define SCHEDEXT_SRC_WIRE_JSON_FIELDS_H_

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/model/node_fields.h"
#include "schedext/model/node_info.h"
#include "schedext/model/pod_info.h"
#include "schedext/model/resources.h"
#include "schedext/model/selectors.h"
#include "schedext/status.h"

namespace schedext::wire::internal {

namespace od = simdjson::ondemand;

constexpr bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline std::string_view TrimJsonSpace(std::string_view text) {
  while (!text.empty() && IsJsonSpace(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && IsJsonSpace(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

constexpr char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// `key` names the field `want`: an exact match, else an ASCII case-insensitive one.
inline bool KeyIs(std::string_view key, std::string_view want) {
  if (key.size() != want.size()) {
    return false;
  }
  if (key == want) {
    return true;
  }
  for (size_t i = 0; i < key.size(); ++i) {
    if (AsciiLower(key[i]) != AsciiLower(want[i])) {
      return false;
    }
  }
  return true;
}

// metadata fields that only the cluster cache reads. Requests pass nullptr and
// the walkers then skip these keys as they always did.
struct ObjectMeta {
  std::string_view resource_version;    // metadata.resourceVersion
  bool has_deletion_timestamp = false;  // metadata.deletionTimestamp non-null
};

class FieldDecoder {
 public:
  // ---- failure helpers (all return false) ----

  bool Fail(std::string message);
  bool Fail(simdjson::error_code code);
  bool At(std::string_view segment);
  bool AtIndex(size_t index);
  Status TakeError(std::string_view message_type);

  // ---- generic readers ----

  // The JSON type of `v`; a `null` token is checked to be exactly `null`.
  bool ReadType(od::value& v, od::json_type& type);

  bool ReadKey(od::field& field, std::string_view& key);

  // Calls fn(key, value) for every field of `object`, in document order. A
  // failing callback gets the key added to the path.
  template <typename Fn>
  bool ForEachFieldOf(od::object& object, Fn&& fn) {
    for (auto field_result : object) {
      od::field field;
      if (auto code = std::move(field_result).get(field)) {
        return Fail(code);
      }
      std::string_view key;
      if (!ReadKey(field, key)) {
        return false;
      }
      if (!fn(key, field.value())) {
        return At(key);
      }
      if (document_read_) {
        return true;  // the rest of the document is known to be its closing brace
      }
    }
    return true;
  }

  // The same for a value that must be an object or null (null: no call).
  template <typename Fn>
  bool ForEachField(od::value& v, Fn&& fn) {
    od::json_type type{};
    if (!ReadType(v, type)) {
      return false;
    }
    if (type == od::json_type::null) {
      return true;
    }
    if (type != od::json_type::object) {
      return Fail("expected an object");
    }
    od::object object;
    if (auto code = v.get_object().get(object)) {
      return Fail(code);
    }
    return ForEachFieldOf(object, fn);
  }

  // Calls fn(index, element) for every element of the array `v` (null: no call).
  template <typename Fn>
  bool ForEachElement(od::value& v, Fn&& fn) {
    od::json_type type{};
    if (!ReadType(v, type)) {
      return false;
    }
    if (type == od::json_type::null) {
      return true;
    }
    if (type != od::json_type::array) {
      return Fail("expected an array");
    }
    od::array array;
    if (auto code = v.get_array().get(array)) {
      return Fail(code);
    }
    size_t index = 0;
    for (auto element_result : array) {
      od::value element;
      if (auto code = std::move(element_result).get(element)) {
        return Fail(code);
      }
      if (!fn(index, element)) {
        return AtIndex(index);
      }
      if (document_read_) {
        return true;  // stopped inside the element (StopAtNodeEnd)
      }
      ++index;
    }
    return true;
  }

  // True when `v` is null (consumed); false for anything else (not consumed).
  bool IsNull(od::value& v, bool& is_null);

  // A string; null leaves `out` unchanged.
  bool ReadString(od::value& v, std::string_view& out);

  // A string that must not be null (list elements, names).
  bool ReadRequiredString(od::value& v, std::string_view& out);

  bool ReadBool(od::value& v, bool& out);

  // An int64 read as an integer, never through double; null leaves `out`.
  bool ReadInt64(od::value& v, int64_t& out);

  bool ReadInt32(od::value& v, int32_t& out);

  // A quantity of resource `name` as a JSON string (surrounding whitespace
  // trimmed) or an unquoted JSON number; null is zero.
  bool ReadQuantity(std::string_view name, od::value& v, int64_t& amount);

  // A string→string map, replacing `map`.
  bool ReadStringMap(od::value& v, model::StringMap& map);

  // A list of strings, replacing `out`.
  bool ReadStringList(od::value& v, std::vector<std::string_view>& out);
  // ReadStringList for a large list of the root object (NodeNames: thousands
  // of names) in its common shape, an array of strings none of which needs
  // unescaping: read from the document's bytes in one pass, each string a
  // view of the body (what get_string would have copied unchanged). When only
  // the root's closing brace follows (NodeNames is the last field Go writes),
  // the walk of the root stops there; otherwise `v` is left unread for the
  // root to skip. Any other shape goes through ReadStringList, which gives it
  // its exact result or error. `quoted`: the names are views of the body
  // between its '"' bytes (the fast path), not unescaped copies.
  bool ReadLargeRootStringList(od::value& v, std::vector<std::string_view>& out, bool& quoted);

  // A resource name → quantity map, replacing `list`. With `container`, also
  // records whether cpu / memory are named.
  bool ReadResourceList(od::value& v, model::ResourceList& list,
                        model::ContainerResources* container);

  // ---- objects ----

  // A v1.Pod into `pod` (FinalizeRequests() is the caller's). With `meta`,
  // also its resourceVersion and deletionTimestamp.
  bool DecodePod(od::value& v, model::PodInfo& pod, ObjectMeta* meta = nullptr);

  // A v1.Node into `node`; also records its exact bytes in node.raw_json, in
  // the same pass: the span runs from the object's '{' to the position of the
  // token after its '}', minus the whitespace in between. With `meta`, also
  // its resourceVersion and deletionTimestamp.
  bool DecodeNode(od::value& v, model::NodeInfo& node, ObjectMeta* meta = nullptr);
  // The optional blocks DecodeNode reads from now on; the others are skipped
  // unread and left empty. All of them unless told.
  void DecodeNodeFields(model::NodeFields fields) { node_fields_ = fields; }
  model::NodeFields node_fields() const { return node_fields_; }

  // Makes this decoder's next documents end right after a node object that
  // closes at `end` (a document cut there, as RequestDecoder's split decode
  // cuts a large body between two nodes): DecodeNode then takes the end of
  // the document for the end of such a node. nullptr: whole documents.
  void StopAtNodeEnd(const char* end) {
    node_cut_ = end;
    node_cut_reached_ = false;
  }
  // Whether a node ended at the StopAtNodeEnd position. The walks stop
  // there, as if the document had been read to its end.
  bool node_cut_reached() const { return node_cut_reached_; }

  // ---- document level ----

  // Starts a document in `data` (size bytes, capacity >= size + padding).
  // `is_null`: the document is the literal null (not iterated).
  bool BeginDocument(od::parser& parser, const char* data, size_t size, size_t capacity,
                     od::document& doc, bool& is_null);

  // Walks the root object of `doc`, then checks nothing but whitespace follows.
  template <typename Fn>
  bool WalkRoot(od::document& doc, Fn&& fn) {
    od::object root;
    if (auto code = doc.get_object().get(root)) {
      return Fail(code);
    }
    if (!ForEachFieldOf(root, fn)) {
      return false;
    }
    if (document_read_) {
      return true;
    }
    const char* trailing = nullptr;
    const simdjson::error_code code = doc.current_location().get(trailing);
    if (code == simdjson::OUT_OF_BOUNDS) {
      return true;  // at the end of the document
    }
    if (code) {
      return Fail(code);
    }
    return Fail("trailing data after the JSON document");
  }

 private:
  // metadata.resourceVersion / deletionTimestamp into `meta`; other keys are skipped.
  bool ReadObjectMeta(std::string_view key, od::value& value, ObjectMeta& meta);

  // ---- Pod ----

  bool DecodePodMetadata(od::value& v, model::PodInfo& pod, ObjectMeta* meta);

  bool DecodePodSpec(od::value& v, model::PodInfo& pod);

  bool DecodePodStatus(od::value& v, model::PodInfo& pod);

  bool DecodeContainers(od::value& v, std::vector<model::ContainerResources>& containers,
                        bool init);

  bool DecodeContainerResources(od::value& v, model::ContainerResources& container);

  bool DecodeAffinity(od::value& v, model::PodInfo& pod);

  bool DecodeRequiredAffinity(od::value& v, model::PodInfo& pod);

  bool DecodePreferredAffinity(od::value& v, std::vector<model::PreferredSchedulingTerm>& terms);

  bool DecodeSelectorTerm(od::value& v, model::NodeSelectorTerm& term);

  bool DecodeRequirements(od::value& v, std::vector<model::SelectorRequirement>& requirements);

  bool DecodeTolerations(od::value& v, std::vector<model::Toleration>& tolerations);

  // ---- Node ----

  bool DecodeNodeMetadata(od::value& v, model::NodeInfo& node, ObjectMeta* meta);

  bool DecodeNodeSpec(od::value& v, model::NodeInfo& node);

  bool DecodeTaint(od::value& v, model::Taint& taint);

  bool DecodeNodeStatus(od::value& v, model::NodeInfo& node);

  // One past the last byte of the document BeginDocument started.
  const char* document_end_ = nullptr;
  // Set when a field read the document to its end: the walks stop.
  bool document_read_ = false;
  model::NodeFields node_fields_ = model::NodeFields::kAll;
  // StopAtNodeEnd's position, and whether a node ended there.
  const char* node_cut_ = nullptr;
  bool node_cut_reached_ = false;
  // Failure state: the innermost message and the path, innermost segment first.
  std::string error_;
  std::vector<std::string> reverse_path_;
};

}  // namespace schedext::wire::internal

#endif  // SCHEDEXT_SRC_WIRE_JSON_FIELDS_H_
