// ObjectDecoder: decodes the Kubernetes API documents the informers read — LIST
// pages and watch event lines — with simdjson on-demand. Nodes and pods become
// the same model views the request decoder fills (the pod and node field
// walkers are shared with RequestDecoder), plus the metadata the cluster cache
// needs: resourceVersion, deletionTimestamp, and for watch events their type.
// Objects of any other resource (what a policy watches: a ConfigMap, a CRD's
// objects) are read shallowly as RawObjects: their identity and their JSON
// text, which the policy that watches them decodes itself, e.g. a ConfigMap's
// .data with DecodeStringMap.
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
// must outlive it (model::OwnedNode / OwnedPod, cluster::OwnedObject).
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

// An object of any resource: its identity and its JSON text, as the API sent
// it, for its watcher to decode.
struct RawObject {
  std::string_view namespace_name;    // metadata.namespace; "" for cluster-scoped objects
  std::string_view name;              // metadata.name
  std::string_view resource_version;  // metadata.resourceVersion
  std::string_view json;              // the whole object, '{' to '}'
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

// The envelope of one watch event. For kError, `error_*` describe the
// metav1.Status in "object" and the node / pod / raw object is left empty.
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
  // A LIST page of any other resource, likewise; items are RawObjects.
  Status DecodeObjectList(const RequestBuffer& page, ListMeta& meta,
                          const std::function<bool(const RawObject&)>& on_item);

  // One watch event line of a node watch. `object` is filled for every type but
  // kError (for kBookmark only its resource_version matters).
  Status DecodeNodeEvent(const RequestBuffer& line, WatchEvent& event, NodeObject& object);
  // One watch event line of a pod watch, likewise.
  Status DecodePodEvent(const RequestBuffer& line, WatchEvent& event, PodObject& object);
  // One watch event line of any other resource, likewise.
  Status DecodeObjectEvent(const RequestBuffer& line, WatchEvent& event, RawObject& object);

  // The string→string map at the top-level field `field` of the JSON object
  // `object_json` (a RawObject's json; copied, so it needs no padding), e.g. a
  // ConfigMap's "data", into `out` in document order: a key given twice keeps
  // its first position and its last value (as Go's map decoding keeps the
  // last), null values read as "". An absent or null field leaves `out`
  // empty. The views point into this decoder: valid until its next Decode*.
  // It reuses the decoder's parser: not from an on_item callback of the same
  // decoder (a watcher keeps a decoder of its own).
  // Errors: kInvalidArgument with a path (`decode object: /data/k: ...`).
  Status DecodeStringMap(std::string_view object_json, std::string_view field,
                         std::vector<std::pair<std::string_view, std::string_view>>& out);

  // Releases parser memory beyond `max_bytes` (after a very large page).
  void ShrinkTo(size_t max_bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedext::wire

#endif  // SCHEDEXT_WIRE_OBJECT_DECODER_H_
