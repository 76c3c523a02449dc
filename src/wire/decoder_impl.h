// Internal to the wire layer: RequestDecoder's state, shared by its two
// halves: decoder.cc (the codec: ExtenderArgs, ExtenderPreemptionArgs,
// ExtenderBindingArgs, the names-mode fast path) and split_decode.cc (a large
// full-mode body decoded by two threads, DecodeSplit and DecodeWhileReceiving).
// Not a public header: it includes simdjson.h and lives under src/.
// Thread-safety: as RequestDecoder's; only `early`'s walk runs on a helper
// thread, on the members its comment names.
#ifndef SCHEDEXT_SRC_WIRE_DECODER_IMPL_H_
#define SCHEDEXT_SRC_WIRE_DECODER_IMPL_H_

#include <simdjson.h>

#include <cstddef>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "schedext/model/key_index.h"
#include "schedext/wire/decoder.h"
#include "wire/json_fields.h"

namespace schedext::wire {

namespace od = simdjson::ondemand;

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
      if (!internal::KeyIs(key, "items")) {
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
        if (internal::KeyIs(key, "Pods")) {
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
                return internal::KeyIs(pod_key, "UID") ? ReadString(uid, pod.uid) : true;
              });
            }
            if (!DecodePod(element, pod)) {
              return false;
            }
            pod.FinalizeRequests();
            return true;
          });
        }
        if (internal::KeyIs(key, "NumPDBViolations")) {
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

}  // namespace schedext::wire

#endif  // SCHEDEXT_SRC_WIRE_DECODER_IMPL_H_
