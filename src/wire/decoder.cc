// RequestDecoder: simdjson on-demand over the RequestBuffer, in place.
//
// The conventions (failure paths, key matching, null and duplicate keys,
// string lifetimes) are those of json_fields.h; FieldDecoder's primitives are
// in json_fields.cc and its pod and node walkers, shared with ObjectDecoder,
// in pod_fields.cc and node_fields.cc. A large full-mode body's two-thread
// decoding is split_decode.cc; the state both share is decoder_impl.h.
#include "schedext/wire/decoder.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedext/model/key_index.h"
#include "schedext/model/resources.h"
#include "wire/decoder_impl.h"
#include "wire/json_fields.h"
#include "wire/json_scan.h"

namespace schedext::wire {

using internal::KeyIs;
namespace {

// Bodies below this size are parsed whole: the head copy would cost more than
// indexing their names saves.
constexpr size_t kTrailingNamesMinBytes = 16 * 1024;

// When `body` ends with a root field whose value is an array of names that are
// plain ASCII JSON strings (no escape, no control character) — the NodeNames
// of every names-mode request, as Go's encoder writes that field last —
// returns the offset of that array's '[' and sets `names` to its elements
// (views into `body`, in order). Otherwise npos.
//
// Such names hold no '[', so the array's is the body's last one. Nothing
// before it is checked here; the caller parses that part (DecodeExtenderArgs).
size_t ScanTrailingNames(std::string_view body, std::vector<std::string_view>& names) {
  names.clear();
  const void* found = memrchr(body.data(), '[', body.size());
  if (found == nullptr) {
    return std::string_view::npos;
  }
  const char* const bracket = static_cast<const char*>(found);
  const char* const end = body.data() + body.size();
  const char* after = internal::ScanPlainStringArray<true>(bracket, end, names);
  if (after == nullptr || !internal::OnlyRootCloseLeft(after, end)) {
    return std::string_view::npos;
  }
  return static_cast<size_t>(bracket - body.data());
}

}  // namespace

RequestDecoder::RequestDecoder() : RequestDecoder(DecoderOptions{}) {}
RequestDecoder::RequestDecoder(const DecoderOptions& options)
    : impl_(std::make_unique<Impl>(options)) {}
RequestDecoder::~RequestDecoder() = default;

// ExtenderArgs from the document data[0, size) (capacity: its buffer's
// size, padding included). `trailing_at`, when set, is the '[' of a root
// array whose elements are `trailing_names` (see DecodeExtenderArgs);
// `names_trailing` says whether the NodeNames that counted were those.
bool RequestDecoder::Impl::DecodeArgs(const char* data, size_t size, size_t capacity,
                                      const char* trailing_at, ExtenderArgsView& out,
                                      bool& names_trailing) {
  names_trailing = false;
  Impl& d = *this;
  out.has_pod = false;
  out.pod.Clear();
  out.mode = NodeMode::kNone;
  out.node_names.clear();
  out.names_quoted = false;

  pod_keys = 0;
  nodes_keys = 0;
  items_keys = 0;
  size_t node_count = 0;
  bool nodes_set = false;
  bool names_set = false;
  bool names_quoted = false;
  od::document doc;
  bool is_null = false;
  bool ok = d.BeginDocument(d.parser, data, size, capacity, doc, is_null);
  if (ok && !is_null) {
    ok = d.WalkRoot(doc, [&](std::string_view key, od::value& value) {
      if (KeyIs(key, "Pod")) {
        ++pod_keys;
        return d.DecodeNullablePod(value, out.has_pod, out.pod);
      }
      if (KeyIs(key, "Nodes")) {
        ++nodes_keys;
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
        names_quoted = false;
        out.node_names.clear();
        names_trailing = false;
        if (!names_null && trailing_at != nullptr && value.raw_json_token().data() == trailing_at) {
          std::swap(out.node_names, d.trailing_names);
          names_quoted = true;
          names_trailing = true;
          return true;
        }
        return names_null || d.ReadLargeRootStringList(value, out.node_names, names_quoted);
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
    out.names_quoted = names_quoted;
  } else {
    node_count = 0;
    out.node_names.clear();
  }
  d.TrimNodes(out.nodes, node_count);
  if (nodes_set) {
    NamesOfNodes(out);
  }
  if (!ok) {
    out.has_pod = false;
    out.pod.Clear();
    return false;
  }
  if (out.has_pod) {
    out.pod.FinalizeRequests();
  }
  return true;
}

bool RequestDecoder::last_decode_split() const { return impl_->last_split; }
bool RequestDecoder::last_decode_while_receiving() const { return impl_->last_while_receiving; }

Status RequestDecoder::DecodeExtenderArgs(const RequestBuffer& body, ExtenderArgsView& out,
                                          model::NodeFields node_fields) {
  Impl& d = *impl_;
  d.last_while_receiving = d.early.body != nullptr && d.FinishEarly(body, node_fields, out);
  d.DecodeNodeFields(node_fields);  // no walk of the early head runs now
  d.last_split = d.last_while_receiving;
  if (d.last_split) {
    return OkStatus();
  }
  // A names-mode body is mostly its NodeNames array, which simdjson would
  // index byte by byte only for the decoder to read it again. When the body
  // ends with an array of plain names, simdjson parses a copy of everything
  // before it with the array left empty; the names come from the scan. That
  // copy is valid JSON exactly when the whole body is (the '[' it ends with
  // is then structural and opens the root's last value, and the scan proved
  // the elements are well-formed ASCII strings), so the result is the whole
  // body's. Anything else, or a failure, is decided by the whole body. The
  // pod's strings then point into the copy, which lives until the next
  // decode, as every view does.
  if (body.size() >= kTrailingNamesMinBytes) {
    const std::string_view text(body.data(), body.size());
    const size_t bracket = ScanTrailingNames(text, d.trailing_names);
    if (bracket != std::string_view::npos && !d.trailing_names.empty() &&
        bracket < body.size() / 2) {
      const size_t size = bracket + 3;  // up to '[', then "]}"
      if (d.head_capacity < size + kJsonPadding) {
        d.head_capacity = size + kJsonPadding;
        d.head = std::make_unique<char[]>(d.head_capacity);
      }
      std::memcpy(d.head.get(), body.data(), bracket + 1);
      std::memcpy(d.head.get() + bracket + 1, "]}", 2);
      std::memset(d.head.get() + size, 0, kJsonPadding);
      // Names and full-mode nodes must be the body's bytes (the encoders
      // copy or splice them): when the NodeNames that count are not the
      // trailing array, or Nodes are set too (kube-scheduler sends neither),
      // the body is walked whole.
      bool names_trailing = false;
      if (d.DecodeArgs(d.head.get(), size, d.head_capacity, d.head.get() + bracket, out,
                       names_trailing)) {
        if (out.mode == NodeMode::kNone || (out.mode == NodeMode::kNodeNames && names_trailing)) {
          return OkStatus();
        }
      } else {
        (void)d.TakeError("ExtenderArgs");  // the whole body's walk reports it
      }
    }
  }
  d.last_split = body.size() >= d.options.split_min_bytes && d.DecodeSplit(body, out);
  if (d.last_split) {
    return OkStatus();
  }
  bool names_trailing = false;
  if (d.DecodeArgs(body.data(), body.size(), body.capacity(), nullptr, out, names_trailing)) {
    return OkStatus();
  }
  return d.TakeError("ExtenderArgs");
}


Status RequestDecoder::DecodePreemptionArgs(const RequestBuffer& body, PreemptionArgsView& out) {
  Impl& d = *impl_;
  d.JoinEarly();
  out.has_pod = false;
  out.pod.Clear();
  out.full_pods = false;
  out.has_victims_map = false;
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
        out.has_victims_map = out.has_victims_map || victims_set;
        return map_null || d.DecodeVictimsMap(value, out.nodes, victims_count, /*full=*/true);
      }
      if (KeyIs(key, "NodeNameToMetaVictims")) {
        bool map_null = false;
        if (!d.IsNull(value, map_null)) {
          return false;
        }
        meta_count = 0;
        meta_set = !map_null;
        out.has_victims_map = out.has_victims_map || meta_set;
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
  d.JoinEarly();
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
  impl_->JoinEarly();
  if (impl_->parser.capacity() > max_bytes) {
    impl_->parser = od::parser{};
    impl_->node_pool.clear();
    impl_->node_pool.shrink_to_fit();
    impl_->meta_nodes.clear();
    impl_->meta_nodes.shrink_to_fit();
  }
  if (impl_->head_capacity > max_bytes) {
    impl_->head.reset();
    impl_->head_capacity = 0;
  }
  if (impl_->tail_doc_capacity > max_bytes) {
    impl_->tail_doc.reset();
    impl_->tail_doc_capacity = 0;
    impl_->tail.reset();
    impl_->tail_args = ExtenderArgsView{};
  }
}

}  // namespace schedext::wire