// RequestDecoder: simdjson on-demand over the RequestBuffer, in place.
//
// The conventions (failure paths, key matching, null and duplicate keys,
// string lifetimes) are those of json_fields.h; FieldDecoder's primitives are
// in json_fields.cc and its pod and node walkers, shared with ObjectDecoder,
// in pod_fields.cc and node_fields.cc.
#include "schedext/wire/decoder.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "schedext/model/key_index.h"
#include "schedext/model/resources.h"
#include "wire/json_fields.h"
#include "wire/json_scan.h"

namespace schedext::wire {

using internal::KeyIs;
namespace od = simdjson::ondemand;

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

// Where DecodeSplit cuts a full-mode body: between two nodes of kube-scheduler's
// items array (Go writes a v1.Node with metadata first and no whitespace), from
// this share of the body on. The second half costs a copy and a second
// simdjson index on top of its walk, so the calling thread takes a bit more.
constexpr std::string_view kNodeBoundary = R"(},{"metadata":{)";
constexpr size_t kSplitAtPermille = 540;
// A body still arriving is cut later: the head's walk overlaps the arrival of
// the rest, and the caller walks the tail once it is there, so the tail is
// made about as long as what is left of the head's walk then (measured on two
// vCPUs, 5,000 nodes: 600-640 left the tail the longer, 720 the head). The
// cut is looked for up to this many bytes past that share.
constexpr size_t kEarlyCutPermille = 680;
constexpr size_t kEarlyLookaheadBytes = 256 * 1024;
// The document the second part is decoded as: the cut's context, then the
// body from the next node on (which closes the items array, the node list
// and the root itself).
constexpr std::string_view kTailPrefix = R"({"Nodes":{"items":[)";

}  // namespace

// The request-level state; the field walkers come from FieldDecoder.
struct RequestDecoder::Impl : internal::FieldDecoder {
  explicit Impl(const DecoderOptions& o) : options(o) {}

  DecoderOptions options;
  od::parser parser;

  // Root "Pod" and "Nodes" keys, and "items" keys of node lists, in the
  // last DecodeArgs (DecodeSplit's checks on the second part).
  size_t pod_keys = 0;
  size_t nodes_keys = 0;
  size_t items_keys = 0;

  // DecodeSplit's second part: its decoder, view and document (kTailPrefix
  // and a copy of the body's end), all kept for reuse like the rest.
  std::unique_ptr<Impl> tail;
  ExtenderArgsView tail_args;
  std::unique_ptr<char[]> tail_doc;
  size_t tail_doc_capacity = 0;

  bool DecodeSplit(const RequestBuffer& body, ExtenderArgsView& out);
  bool last_split = false;
  bool last_while_receiving = false;
  static size_t FindCut(std::string_view text, size_t from);
  bool WalkHead(const char* data, size_t cut, size_t capacity, ExtenderArgsView& out);
  bool PrepareTail(size_t rest_size) noexcept;
  void CopyTail(std::string_view rest, size_t from) noexcept;
  bool WalkTail(size_t rest_size) noexcept;
  void AppendTail(std::string_view rest, ExtenderArgsView& out);

  // The head of a body still being received (DecodeWhileReceiving), walked
  // by `thread` into `args` with this decoder's parser: nothing but the tail's
  // members may be touched until it is joined.
  struct EarlyHead {
    std::thread thread;
    const char* body = nullptr;
    size_t total = 0;  // the body's Content-Length
    size_t cut = 0;
    size_t copied = 0;  // of the body after the cut, into the tail document
    bool ok = false;
    ExtenderArgsView args;
  };
  EarlyHead early;
  bool FinishEarly(const RequestBuffer& body, model::NodeFields fields, ExtenderArgsView& out);
  void JoinEarly();
  ~Impl() { JoinEarly(); }

  // The names-mode fast path (DecodeExtenderArgs): the body up to the
  // trailing names' '[' followed by "]}", padded for simdjson, and the names.
  std::unique_ptr<char[]> head;
  size_t head_capacity = 0;
  std::vector<std::string_view> trailing_names;

  bool DecodeArgs(const char* data, size_t size, size_t capacity, const char* trailing_at,
                  ExtenderArgsView& out, bool& names_trailing);

  // NodeInfos kept for reuse when a request has fewer nodes than the last one.
  std::vector<model::NodeInfo> node_pool;
  // NodeNameToMetaVictims while decoding PreemptionArgs (swapped into the view
  // when it is the map that counts).
  std::vector<VictimsView> meta_nodes;
  // The victims map being decoded, node name → slot: a body may name 100,000
  // nodes, and a scan per node for a repeat would be quadratic.
  model::KeyIndex victims_index;

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

  // Full mode: the node names are the decoded nodes' names.
  static void NamesOfNodes(ExtenderArgsView& out) {
    out.node_names.clear();
    for (const model::NodeInfo& node : out.nodes) {
      out.node_names.push_back(node.name);
    }
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
      ++items_keys;
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
    victims_index.Reset();
    const auto node_at = [&entries](uint32_t slot) { return entries[slot].node; };
    return ForEachField(v, [&](std::string_view node_name, od::value& value) {
      size_t slot = victims_index.FindOrInsert(node_name, static_cast<uint32_t>(count), node_at);
      if (slot == model::KeyIndex::kNotFound) {
        slot = count;
        if (count == entries.size()) {
          entries.emplace_back();
        }
        ++count;
        entries[slot].node = node_name;
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
            od::json_type type{};
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

// A full-mode body of thousands of nodes is decoded by two threads: one takes
// the body up to a cut between two nodes of the items array (the head), the
// other the document kTailPrefix + the body from the next node on (the tail).
// Both are walked by DecodeArgs, so each part is decoded exactly as the whole
// body would decode it, provided that
// * the cut lies between two elements of the root's Nodes.items: the head's
//   walk ends with a node exactly at the cut (StopAtNodeEnd), which the walk
//   can only do at that level, so the tail starts outside any string in the
//   same context kTailPrefix opens;
// * the tail holds no root "Pod", no second "Nodes" and no second node-list
//   "items": those would merge into or replace what the head decoded, which
//   the separate walks cannot do.
// Then the nodes are the head's followed by the tail's. Anything else (no cut
// found, a bad cut in a crafted body, any decode failure, no thread) leaves
// the body to the whole walk, so the result and its error messages are always
// the sequential walk's.
//
// DecodeSplit walks the head on the calling thread and the tail on a helper;
// DecodeWhileReceiving starts the head on a helper while the tail is still
// arriving, and DecodeExtenderArgs walks the tail when it has.

// The ',' between two nodes at or after `from` in text[0, limit), or npos.
size_t RequestDecoder::Impl::FindCut(std::string_view text, size_t from) {
  const size_t boundary = text.find(kNodeBoundary, from);
  return boundary == std::string_view::npos ? boundary : boundary + 1;
}

bool RequestDecoder::Impl::WalkHead(const char* data, size_t cut, size_t capacity,
                                    ExtenderArgsView& out) {
  // The cut is forgotten on every way out, an exception included: the next
  // walk of this decoder may be the whole body's.
  struct Forget {
    Impl& decoder;
    ~Forget() { decoder.StopAtNodeEnd(nullptr); }
  } forget{*this};
  StopAtNodeEnd(data + cut);
  bool names_trailing = false;
  const bool ok = DecodeArgs(data, cut, capacity, nullptr, out, names_trailing) &&
                  node_cut_reached() && out.mode == NodeMode::kFullNodes;
  (void)TakeError("ExtenderArgs");
  return ok;
}

// The tail document for a rest of `rest_size` bytes: kTailPrefix, room for
// the rest (CopyTail) and the padding. Never throws (nor do the other tail
// steps): whatever goes wrong, an allocation failing included, leaves the
// body to the whole walk, which reports it, and nothing may escape a helper
// thread.
bool RequestDecoder::Impl::PrepareTail(size_t rest_size) noexcept {
  try {
    const size_t tail_size = kTailPrefix.size() + rest_size;
    if (tail_doc_capacity < tail_size + kJsonPadding) {
      tail_doc.reset();
      tail_doc_capacity = 0;
      tail_doc = std::make_unique_for_overwrite<char[]>(tail_size + kJsonPadding);
      tail_doc_capacity = tail_size + kJsonPadding;
    }
    if (tail == nullptr) {
      tail = std::make_unique<Impl>(options);
    }
  } catch (...) {
    return false;
  }
  tail->DecodeNodeFields(node_fields());
  std::memcpy(tail_doc.get(), kTailPrefix.data(), kTailPrefix.size());
  std::memset(tail_doc.get() + kTailPrefix.size() + rest_size, 0, kJsonPadding);
  return true;
}

// rest[from, rest.size()) into the tail document.
void RequestDecoder::Impl::CopyTail(std::string_view rest, size_t from) noexcept {
  std::memcpy(tail_doc.get() + kTailPrefix.size() + from, rest.data() + from, rest.size() - from);
}

bool RequestDecoder::Impl::WalkTail(size_t rest_size) noexcept {
  try {
    const size_t tail_size = kTailPrefix.size() + rest_size;
    bool names_trailing = false;
    const bool ok = tail->DecodeArgs(tail_doc.get(), tail_size, tail_doc_capacity, nullptr,
                                     tail_args, names_trailing) &&
                    tail->pod_keys == 0 && tail->nodes_keys == 1 && tail->items_keys == 1 &&
                    tail_args.mode == NodeMode::kFullNodes;
    (void)tail->TakeError("ExtenderArgs");
    return ok;
  } catch (...) {
    return false;
  }
}

// The tail's nodes follow the head's in `out`; their spans are moved from the
// copy to the same bytes of the body (`rest`), and the NodeInfos are swapped,
// so both decoders keep their allocations for the next request.
void RequestDecoder::Impl::AppendTail(std::string_view rest, ExtenderArgsView& out) {
  const char* const copy_begin = tail_doc.get() + kTailPrefix.size();
  for (model::NodeInfo& node : tail_args.nodes) {
    node.raw_json = std::string_view(rest.data() + (node.raw_json.data() - copy_begin),
                                     node.raw_json.size());
    std::swap(NodeAt(out.nodes, out.nodes.size()), node);
  }
  NamesOfNodes(out);
}

bool RequestDecoder::Impl::DecodeSplit(const RequestBuffer& body, ExtenderArgsView& out) {
  const std::string_view text(body.data(), body.size());
  const size_t cut = FindCut(text, text.size() / 1000 * kSplitAtPermille);
  if (cut == std::string_view::npos) {
    return false;
  }
  const std::string_view rest = text.substr(cut + 1);
  bool tail_ok = false;
  std::thread helper;
  try {
    helper = std::thread([&] {
      if (PrepareTail(rest.size())) {
        CopyTail(rest, 0);
        tail_ok = WalkTail(rest.size());
      }
    });
  } catch (const std::system_error&) {
    return false;  // no thread to be had: decode it whole
  }
  // On every way out, an exception of this thread's walk included: the
  // helper joined.
  struct Joiner {
    std::thread& thread;
    ~Joiner() {
      if (thread.joinable()) {
        thread.join();
      }
    }
  } joiner{helper};
  const bool head_ok = WalkHead(body.data(), cut, body.capacity(), out);
  helper.join();  // before tail_ok is read
  if (!head_ok || !tail_ok) {
    return false;
  }
  AppendTail(rest, out);
  return true;
}

bool RequestDecoder::DecodeWhileReceiving(const RequestBuffer& body, size_t total_bytes,
                                          model::NodeFields node_fields) {
  Impl& d = *impl_;
  Impl::EarlyHead& early = d.early;
  if (body.size() >= total_bytes) {
    return false;
  }
  if (early.body != nullptr) {
    // The rest is copied as it arrives, while its bytes are in the cache.
    if (early.body != body.data() || early.total != total_bytes) {
      return false;
    }
    const std::string_view rest(body.data() + early.cut + 1, body.size() - early.cut - 1);
    d.CopyTail(rest, early.copied);
    early.copied = rest.size();
    return true;
  }
  if (early.thread.joinable() || total_bytes < d.options.split_min_bytes ||
      body.capacity() < total_bytes + kJsonPadding) {
    return false;
  }
  const size_t from = total_bytes / 1000 * kEarlyCutPermille;
  if (body.size() < from + kNodeBoundary.size() + kJsonPadding) {
    return true;  // not there yet
  }
  // The head's walk may look kJsonPadding bytes past the cut: they must have
  // arrived, as no byte that has can change.
  const std::string_view arrived(body.data(), body.size() - kJsonPadding);
  const size_t cut = Impl::FindCut(arrived, from);
  if (cut == std::string_view::npos) {
    // Kube-scheduler's nodes are ~11 KB: without a boundary in the lookahead
    // this is not its full mode.
    return body.size() < from + kEarlyLookaheadBytes;
  }
  d.DecodeNodeFields(node_fields);  // before the head's walk starts, and the tail's copy
  if (!d.PrepareTail(total_bytes - cut - 1)) {
    return false;
  }
  early.body = body.data();
  early.total = total_bytes;
  early.cut = cut;
  early.copied = 0;
  early.ok = false;
  const size_t capacity = body.capacity();
  try {
    early.thread = std::thread([&d, &early, capacity] {
      try {
        early.ok = d.WalkHead(early.body, early.cut, capacity, early.args);
      } catch (...) {
        early.ok = false;  // the whole walk reports it
      }
    });
  } catch (const std::system_error&) {
    early.body = nullptr;
    return false;
  }
  return DecodeWhileReceiving(body, total_bytes, node_fields);
}

void RequestDecoder::Settle() { impl_->JoinEarly(); }

bool RequestDecoder::Impl::FinishEarly(const RequestBuffer& body, model::NodeFields fields,
                                       ExtenderArgsView& out) {
  // node_fields(): the blocks DecodeWhileReceiving started the head's walk with.
  if (early.body != body.data() || early.total != body.size() || node_fields() != fields) {
    JoinEarly();
    return false;
  }
  const std::string_view rest(body.data() + early.cut + 1, body.size() - early.cut - 1);
  CopyTail(rest, early.copied);
  const bool tail_ok = WalkTail(rest.size());
  JoinEarly();  // before early.ok is read
  if (!early.ok || !tail_ok) {
    return false;
  }
  std::swap(out, early.args);
  AppendTail(rest, out);
  return true;
}

void RequestDecoder::Impl::JoinEarly() {
  if (early.thread.joinable()) {
    early.thread.join();
  }
  early.body = nullptr;
}

Status RequestDecoder::DecodePreemptionArgs(const RequestBuffer& body, PreemptionArgsView& out) {
  Impl& d = *impl_;
  d.JoinEarly();
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
