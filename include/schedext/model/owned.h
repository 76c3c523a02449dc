// OwnedNode / OwnedPod: self-contained copies of a decoded NodeInfo / PodInfo.
//
// Decoded views point into a request body or a parser that is reused for the
// next document; the cluster cache keeps objects for hours. An owned copy
// holds one std::string arena with every string its view points to (names,
// labels, annotations, taints, tolerations, selector terms, resource names,
// conditions, ...) and a view whose string_views are rebased into that arena,
// so it needs one allocation for all its text and outlives the source.
//
// Not copyable or movable: the view points into the object's own arena (a
// moved std::string may move short text). Hold them by std::unique_ptr or
// std::shared_ptr<const ...>; the cluster cache shares them between snapshots.
//
// What is not kept: NodeInfo::raw_json (the echo of full-node mode uses the
// request's own bytes; keeping whole node objects would cost ~100x the memory)
// and NodeInfo::usage (the cache attaches its own).
//
// Thread-safety: immutable after construction; safe to read from many threads.
#ifndef SCHEDEXT_MODEL_OWNED_H_
#define SCHEDEXT_MODEL_OWNED_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "schedext/model/node_info.h"
#include "schedext/model/pod_info.h"

namespace schedext::model {

class OwnedNode {
 public:
  // Deep-copies `view`. `resource_version` and `deleting` are the object's
  // metadata.resourceVersion and deletionTimestamp presence.
  explicit OwnedNode(const NodeInfo& view, std::string_view resource_version = {},
                     bool deleting = false);
  OwnedNode(const OwnedNode&) = delete;
  OwnedNode& operator=(const OwnedNode&) = delete;

  // The copy; its strings live as long as this object. raw_json is empty and
  // usage is nullptr.
  const NodeInfo& info() const { return info_; }
  std::string_view name() const { return info_.name; }
  std::string_view resource_version() const { return resource_version_; }
  bool deleting() const { return deleting_; }
  // Bytes of text held (for cache size logs and tests).
  size_t arena_bytes() const { return arena_.size(); }

 private:
  std::string arena_;
  NodeInfo info_;
  std::string_view resource_version_;
  bool deleting_ = false;
};

class OwnedPod {
 public:
  // Deep-copies `view` (derived requests included; call FinalizeRequests()
  // on the view first). `resource_version` and `deleting` as for OwnedNode.
  explicit OwnedPod(const PodInfo& view, std::string_view resource_version = {},
                    bool deleting = false);
  OwnedPod(const OwnedPod&) = delete;
  OwnedPod& operator=(const OwnedPod&) = delete;

  const PodInfo& info() const { return info_; }
  std::string_view uid() const { return info_.uid; }
  std::string_view resource_version() const { return resource_version_; }
  bool deleting() const { return deleting_; }
  // status.phase is Succeeded or Failed: the pod no longer holds resources.
  bool terminal() const { return info_.phase == "Succeeded" || info_.phase == "Failed"; }
  size_t arena_bytes() const { return arena_.size(); }

 private:
  std::string arena_;
  PodInfo info_;
  std::string_view resource_version_;
  bool deleting_ = false;
};

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_OWNED_H_
