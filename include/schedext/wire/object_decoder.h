// ObjectDecoder: decodes the Kubernetes API documents the informers read — LIST
// pages of nodes, pods or config maps and watch event lines — with simdjson
// on-demand, into the same model views the request decoder fills (the pod and
// node field walkers are shared with RequestDecoder), plus the metadata the
// cluster cache needs: resourceVersion, deletionTimestamp, and for watch events
// their type. Config maps are read shallowly: name, namespace,
// resourceVersion and the string map `data` (binaryData and the rest skipped).
//
// LIST page:   {"metadata":{"resourceVersion":"..","continue":".."},"items":[...]}
// Watch event: {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}
// An ERROR event carries a metav1.Status: {"kind":"Status","code":410,...}.
//
// Errors are kInvalidArgument with a JSON path, as for requests:
// `decode PodList: /items/3/spec/containers/0/resources/requests/cpu: invalid quantity "5x"`.
//
// Lifetimes: every view handed out (objects, ListMeta, WatchEvent strings)
// points into the input buffer or the decoder's parser and is valid until the
// next Decode* call on the same decoder; an item passed to the per-item
// callback is valid only during that call (the object is reused). Copy what
// must outlive it (model::OwnedNode / OwnedPod / OwnedConfigMap).
//
// Thread-safety: none; one decoder per informer thread.
#ifndef SCHEDEXT_WIRE_OBJECT_DECODER_H_
#define SCHEDEXT_WIRE_OBJECT_DECODER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/model/node_info.h"
#include "schedext/model/pod_info.h"
#include "schedext/status.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::wire {

// The metadata of a LIST reply.
struct ListMeta {
  std::string_view resource_version;  // metadata.resourceVersion
  std::string_view continue_token;    // metadata.continue; empty on the last page
};

// A node as the cache needs it.
struct NodeObject {
  model::NodeInfo info;  // as RequestDecoder fills it (raw_json included)
  std::string_view resource_version;
  bool deleting = false;  // metadata.deletionTimestamp set
};

// A pod as the cache needs it. info.requests / scoring_requests are finalized.
struct PodObject {
  model::PodInfo info;
  std::string_view resource_version;
  bool deleting = false;  // metadata.deletionTimestamp set (still counted, as kube-scheduler does)
  // status.phase Succeeded or Failed: the pod holds no resources any more.
  bool terminal() const { return info.phase == "Succeeded" || info.phase == "Failed"; }
};

// A config map as the cache needs it: its identity and its .data.
struct ConfigMapObject {
  std::string_view namespace_name;  // metadata.namespace
  std::string_view name;            // metadata.name
  std::string_view resource_version;
  // .data in document order; a key given twice keeps its first position and
  // its last value (as Go's map decoding keeps the last).
  std::vector<std::pair<std::string_view, std::string_view>> data;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

// The envelope of one watch event. For kError, `error_*` describe the
// metav1.Status in "object" and the node / pod / config map object is left
// empty.
struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  int64_t error_code = 0;          // Status.code (410: Gone / Expired)
  std::string_view error_reason;   // Status.reason ("Expired", "Gone", ...)
  std::string_view error_message;  // Status.message
};

class ObjectDecoder {
 public:
  ObjectDecoder();
  ~ObjectDecoder();
  ObjectDecoder(const ObjectDecoder&) = delete;
  ObjectDecoder& operator=(const ObjectDecoder&) = delete;

  // A NodeList page: fills `meta` and calls `on_item` for each item in order.
  // `on_item` returning false stops the walk with kInternal ("stopped"); its
  // argument is valid only during the call.
  Status DecodeNodeList(const RequestBuffer& page, ListMeta& meta,
                        const std::function<bool(const NodeObject&)>& on_item);
  // A PodList page, likewise.
  Status DecodePodList(const RequestBuffer& page, ListMeta& meta,
                       const std::function<bool(const PodObject&)>& on_item);
  // A ConfigMapList page, likewise.
  Status DecodeConfigMapList(const RequestBuffer& page, ListMeta& meta,
                             const std::function<bool(const ConfigMapObject&)>& on_item);

  // One watch event line of a node watch. `object` is filled for every type but
  // kError (for kBookmark only its resource_version matters).
  Status DecodeNodeEvent(const RequestBuffer& line, WatchEvent& event, NodeObject& object);
  // One watch event line of a pod watch, likewise.
  Status DecodePodEvent(const RequestBuffer& line, WatchEvent& event, PodObject& object);
  // One watch event line of a config map watch, likewise.
  Status DecodeConfigMapEvent(const RequestBuffer& line, WatchEvent& event,
                              ConfigMapObject& object);

  // Releases parser memory beyond `max_bytes` (after a very large page).
  void ShrinkTo(size_t max_bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedext::wire

#endif  // SCHEDEXT_WIRE_OBJECT_DECODER_H_
