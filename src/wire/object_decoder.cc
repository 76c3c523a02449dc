// ObjectDecoder: LIST pages and watch events through the FieldDecoder walkers
// of json_fields.h (the same code that decodes pods and nodes in requests).
// Objects of other resources are delimited and their identity read, in the
// same pass; their bodies are left to the watcher (DecodeStringMap and the like).
#include "schedext/wire/object_decoder.h"

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <utility>

#include "common/text.h"
#include "schedext/model/key_index.h"
#include "wire/json_fields.h"

namespace schedext::wire {

using internal::KeyIs;
namespace od = simdjson::ondemand;

namespace {

enum class Kind { kNode, kPod, kRaw };

// Names used in error messages, as Kubernetes names the list kinds.
constexpr std::string_view kNodeList = "NodeList";
constexpr std::string_view kPodList = "PodList";
constexpr std::string_view kNodeEvent = "node watch event";
constexpr std::string_view kPodEvent = "pod watch event";
constexpr std::string_view kRawList = "list";
constexpr std::string_view kRawEvent = "watch event";

std::string_view ListName(Kind kind) {
  switch (kind) {
    case Kind::kNode:
      return kNodeList;
    case Kind::kPod:
      return kPodList;
    case Kind::kRaw:
      return kRawList;
  }
  return kPodList;
}

std::string_view EventName(Kind kind) {
  switch (kind) {
    case Kind::kNode:
      return kNodeEvent;
    case Kind::kPod:
      return kPodEvent;
    case Kind::kRaw:
      return kRawEvent;
  }
  return kPodEvent;
}

bool ParseEventType(std::string_view text, WatchEventType& type) {
  if (text == "ADDED") {
    type = WatchEventType::kAdded;
  } else if (text == "MODIFIED") {
    type = WatchEventType::kModified;
  } else if (text == "DELETED") {
    type = WatchEventType::kDeleted;
  } else if (text == "BOOKMARK") {
    type = WatchEventType::kBookmark;
  } else if (text == "ERROR") {
    type = WatchEventType::kError;
  } else {
    return false;
  }
  return true;
}

}  // namespace

struct ObjectDecoder::Impl : internal::FieldDecoder {
  od::parser parser;
  // Reused for every item, so a page of 500 pods does not allocate 500 times.
  NodeObject node;
  PodObject pod;
  RawObject raw;
  RequestBuffer scratch;  // DecodeStringMap's padded copy of its object
  const char* doc_end = nullptr;  // one past the document being walked

  // One node object (an item or an event's object) into `node`.
  bool DecodeNodeObject(od::value& v) {
    node.info.Clear();
    node.resource_version = {};
    node.deleting = false;
    internal::ObjectMeta meta;
    if (!DecodeNode(v, node.info, &meta)) {
      return false;
    }
    node.resource_version = meta.resource_version;
    node.deleting = meta.has_deletion_timestamp;
    return true;
  }

  // One pod object into `pod`, requests finalized.
  bool DecodePodObject(od::value& v) {
    pod.info.Clear();
    pod.resource_version = {};
    pod.deleting = false;
    od::json_type type{};
    if (!ReadType(v, type)) {
      return false;
    }
    if (type != od::json_type::object) {
      return Fail("expected an object");
    }
    internal::ObjectMeta meta;
    if (!DecodePod(v, pod.info, &meta)) {
      return false;
    }
    pod.info.FinalizeRequests();
    pod.resource_version = meta.resource_version;
    pod.deleting = meta.has_deletion_timestamp;
    return true;
  }

  // One object of any resource into `raw`: its metadata identity, and its
  // bytes from '{' to '}' (found as DecodeNode finds a node's).
  bool DecodeRawObject(od::value& v) {
    raw = RawObject{};
    od::json_type type{};
    if (!ReadType(v, type)) {
      return false;
    }
    if (type != od::json_type::object) {
      return Fail("expected an object");
    }
    const char* begin = v.raw_json_token().data();
    const bool ok = ForEachField(v, [&](std::string_view key, od::value& value) {
      if (!KeyIs(key, "metadata")) {
        return true;
      }
      return ForEachField(value, [&](std::string_view meta_key, od::value& meta_value) {
        if (KeyIs(meta_key, "name")) {
          return ReadString(meta_value, raw.name);
        }
        if (KeyIs(meta_key, "namespace")) {
          return ReadString(meta_value, raw.namespace_name);
        }
        if (KeyIs(meta_key, "resourceVersion")) {
          return ReadString(meta_value, raw.resource_version);
        }
        return true;
      });
    });
    if (!ok) {
      return false;
    }
    const char* end = nullptr;
    if (auto code = v.current_location().get(end)) {
      if (code != simdjson::OUT_OF_BOUNDS) {
        return Fail(code);
      }
      end = doc_end;  // the object is the whole document (a deferred event object)
    }
    std::string_view span(begin, static_cast<size_t>(end - begin));
    while (!span.empty() && internal::IsJsonSpace(span.back())) {
      span.remove_suffix(1);
    }
    if (span.size() < 2 || span.front() != '{' || span.back() != '}') {
      return Fail("internal error: cannot delimit the object");
    }
    raw.json = span;
    return true;
  }

  // The string map at field `field` of the root object of `doc` into
  // `out`: a key given twice keeps its first position and its last value
  // (as Go's map decoding keeps the last); null values read as "".
  bool DecodeStringMapField(od::document& doc, std::string_view field,
                            std::vector<std::pair<std::string_view, std::string_view>>& out) {
    return WalkRoot(doc, [&](std::string_view key, od::value& value) {
      if (!KeyIs(key, field)) {
        return true;
      }
      // A repeated field replaces the earlier one, as for other maps.
      out.clear();
      // Repeats found by hashing: a ConfigMap may hold tens of thousands of
      // keys, and a scan per key would be quadratic.
      model::KeyIndex keys;
      const auto key_at = [&out](uint32_t p) { return out[p].first; };
      return ForEachField(value, [&](std::string_view map_key, od::value& map_value) {
        std::string_view text;  // null: "", as Go decodes it into a map[string]string
        if (!ReadString(map_value, text)) {
          return false;
        }
        const uint32_t p = keys.FindOrInsert(map_key, static_cast<uint32_t>(out.size()), key_at);
        if (p != model::KeyIndex::kNotFound) {
          out[p].second = text;
        } else {
          out.emplace_back(map_key, text);
        }
        return true;
      });
    });
  }

  bool DecodeObject(Kind kind, od::value& v) {
    switch (kind) {
      case Kind::kNode:
        return DecodeNodeObject(v);
      case Kind::kPod:
        return DecodePodObject(v);
      case Kind::kRaw:
        return DecodeRawObject(v);
    }
    return Fail("unknown object kind");
  }

  // metav1.Status of an ERROR event.
  bool DecodeStatus(od::value& v, WatchEvent& event) {
    return ForEachField(v, [&](std::string_view key, od::value& value) {
      if (KeyIs(key, "code")) {
        return ReadInt64(value, event.error_code);
      }
      if (KeyIs(key, "reason")) {
        return ReadString(value, event.error_reason);
      }
      if (KeyIs(key, "message")) {
        return ReadString(value, event.error_message);
      }
      return true;
    });
  }

  bool DecodeListMeta(od::value& v, ListMeta& meta) {
    return ForEachField(v, [&](std::string_view key, od::value& value) {
      if (KeyIs(key, "resourceVersion")) {
        return ReadString(value, meta.resource_version);
      }
      if (KeyIs(key, "continue")) {
        return ReadString(value, meta.continue_token);
      }
      return true;
    });
  }

  template <typename OnItem>
  Status DecodeList(Kind kind, const RequestBuffer& page, ListMeta& meta, OnItem&& on_item) {
    meta = ListMeta{};
    od::document doc;
    bool is_null = false;
    bool stopped = false;
    doc_end = page.data() + page.size();
    bool ok = BeginDocument(parser, page.data(), page.size(), page.capacity(), doc, is_null);
    if (ok && is_null) {
      ok = Fail("expected a JSON object");
    }
    if (ok) {
      ok = WalkRoot(doc, [&](std::string_view key, od::value& value) {
        if (KeyIs(key, "metadata")) {
          return DecodeListMeta(value, meta);
        }
        if (KeyIs(key, "items")) {
          return ForEachElement(value, [&](size_t, od::value& element) {
            if (!DecodeObject(kind, element)) {
              return false;
            }
            if (!on_item()) {
              stopped = true;
              return Fail("stopped by the caller");
            }
            return true;
          });
        }
        return true;
      });
    }
    if (!ok) {
      meta = ListMeta{};
      Status status = TakeError(ListName(kind));
      return stopped ? InternalError(status.message()) : status;
    }
    return OkStatus();
  }

  Status DecodeEvent(Kind kind, const RequestBuffer& line, WatchEvent& event) {
    event = WatchEvent{};
    switch (kind) {
      case Kind::kNode:
        node.info.Clear();
        node.resource_version = {};
        node.deleting = false;
        break;
      case Kind::kPod:
        pod.info.Clear();
        pod.resource_version = {};
        pod.deleting = false;
        break;
      case Kind::kRaw:
        raw = RawObject{};
        break;
    }
    const std::string_view what = EventName(kind);
    bool has_type = false;
    bool has_object = false;
    // The object's bytes when it came before "type" (Go writes type first;
    // anything else is decoded in a second pass once the type is known).
    std::string_view deferred;
    auto decode_object = [&](od::value& value) {
      has_object = true;
      if (event.type == WatchEventType::kError) {
        return DecodeStatus(value, event);
      }
      return DecodeObject(kind, value);
    };

    od::document doc;
    bool is_null = false;
    doc_end = line.data() + line.size();
    bool ok = BeginDocument(parser, line.data(), line.size(), line.capacity(), doc, is_null);
    if (ok && is_null) {
      ok = Fail("expected a JSON object");
    }
    if (ok) {
      ok = WalkRoot(doc, [&](std::string_view key, od::value& value) {
        if (KeyIs(key, "type")) {
          std::string_view text;
          if (!ReadRequiredString(value, text)) {
            return false;
          }
          if (!ParseEventType(text, event.type)) {
            return Fail("unknown watch event type " + QuoteShort(text));
          }
          has_type = true;
          return true;
        }
        if (KeyIs(key, "object")) {
          if (has_type) {
            return decode_object(value);
          }
          od::object object;
          if (auto code = value.get_object().get(object)) {
            return Fail(code);
          }
          if (auto code = object.raw_json().get(deferred)) {
            return Fail(code);
          }
          has_object = true;
          return true;
        }
        return true;
      });
    }
    if (ok && !has_type) {
      ok = Fail("missing \"type\"");
    }
    if (ok && !deferred.empty()) {
      // The span lies inside `line`, whose padding follows the whole line.
      const size_t offset = static_cast<size_t>(deferred.data() - line.data());
      od::document object_doc;
      doc_end = deferred.data() + deferred.size();
      ok = BeginDocument(parser, deferred.data(), deferred.size(), line.capacity() - offset,
                         object_doc, is_null);
      if (ok) {
        od::value value;
        if (auto code = object_doc.get_value().get(value)) {
          ok = Fail(code);
        } else {
          ok = decode_object(value) || At("object");
        }
      }
    }
    if (ok && !has_object && event.type != WatchEventType::kBookmark) {
      ok = Fail("missing \"object\"");
    }
    if (!ok) {
      event = WatchEvent{};
      return TakeError(what);
    }
    return OkStatus();
  }
};

ObjectDecoder::ObjectDecoder() : impl_(std::make_unique<Impl>()) {}
ObjectDecoder::~ObjectDecoder() = default;

Status ObjectDecoder::DecodeNodeList(const RequestBuffer& page, ListMeta& meta,
                                     const std::function<bool(const NodeObject&)>& on_item) {
  Impl& d = *impl_;
  return d.DecodeList(Kind::kNode, page, meta, [&]() { return on_item(d.node); });
}

Status ObjectDecoder::DecodePodList(const RequestBuffer& page, ListMeta& meta,
                                    const std::function<bool(const PodObject&)>& on_item) {
  Impl& d = *impl_;
  return d.DecodeList(Kind::kPod, page, meta, [&]() { return on_item(d.pod); });
}

Status ObjectDecoder::DecodeObjectList(const RequestBuffer& page, ListMeta& meta,
                                       const std::function<bool(const RawObject&)>& on_item) {
  Impl& d = *impl_;
  return d.DecodeList(Kind::kRaw, page, meta, [&]() { return on_item(d.raw); });
}

Status ObjectDecoder::DecodeNodeEvent(const RequestBuffer& line, WatchEvent& event,
                                      NodeObject& object) {
  Status status = impl_->DecodeEvent(Kind::kNode, line, event);
  // Swap rather than copy: the views point into the parser, not the object.
  std::swap(object, impl_->node);
  return status;
}

Status ObjectDecoder::DecodePodEvent(const RequestBuffer& line, WatchEvent& event,
                                     PodObject& object) {
  Status status = impl_->DecodeEvent(Kind::kPod, line, event);
  std::swap(object, impl_->pod);
  return status;
}

Status ObjectDecoder::DecodeObjectEvent(const RequestBuffer& line, WatchEvent& event,
                                        RawObject& object) {
  Status status = impl_->DecodeEvent(Kind::kRaw, line, event);
  std::swap(object, impl_->raw);
  return status;
}

Status ObjectDecoder::DecodeStringMap(
    std::string_view object_json, std::string_view field,
    std::vector<std::pair<std::string_view, std::string_view>>& out) {
  Impl& d = *impl_;
  out.clear();
  d.scratch.Clear();
  d.scratch.Append(object_json.data(), object_json.size());
  od::document doc;
  bool is_null = false;
  bool ok = d.BeginDocument(d.parser, d.scratch.data(), d.scratch.size(), d.scratch.capacity(), doc,
                            is_null);
  if (ok && is_null) {
    ok = d.Fail("expected a JSON object");
  }
  if (ok) {
    ok = d.DecodeStringMapField(doc, field, out);
  }
  if (!ok) {
    out.clear();
    return d.TakeError("object");
  }
  return OkStatus();
}

void ObjectDecoder::ShrinkTo(size_t max_bytes) {
  if (impl_->parser.capacity() > max_bytes) {
    impl_->parser = od::parser{};
  }
}

}  // namespace schedext::wire
