// RequestDecoder: simdjson on-demand over the RequestBuffer, in place.
//
// The conventions (failure paths, key matching, null and duplicate keys,
// string lifetimes) are those of json_fields.h; FieldDecoder's primitives are
// in json_fields.cc and its pod and node walkers, shared with ObjectDecoder,
// in pod_fields.cc and node_fields.cc.
#include "schedext/wire/decoder.h"

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedext/model/resources.h"
#include "wire/json_fields.h"

namespace schedext::wire {

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

RequestDecoder::RequestDecoder() : impl_(std::make_unique<Impl>()) {}
RequestDecoder::~RequestDecoder() = default;

Status RequestDecoder::DecodeExtenderArgs(const RequestBuffer& body, ExtenderArgsView& out) {
  Impl& d = *impl_;
  out.has_pod = false;
  out.pod.Clear();
  out.mode = NodeMode::kNone;
  out.node_names.clear();
  out.names_quoted = false;

  size_t node_count = 0;
  bool nodes_set = false;
  bool names_set = false;
  bool names_quoted = false;
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
        names_quoted = false;
        out.node_names.clear();
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
