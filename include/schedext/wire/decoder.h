// RequestDecoder: decodes extender requests with simdjson on-demand, straight
// from the received buffer (no DOM, no copy of the body; a names-mode body's
// head, the part before its NodeNames, may be parsed from a copy).
//
// Keys are matched exactly, then ASCII case-insensitively; the last of a
// duplicated key wins; null and absent are the same; unknown keys are ignored;
// integers are read as int64. Only what policies read is extracted; the rest is
// skipped. Every failure is kInvalidArgument with a JSON path:
// `decode ExtenderArgs: /Pod/spec/containers/0/resources/requests/cpu: invalid quantity "5x"`.
//
// Thread-safety: none. One decoder per worker thread; a decoded view is valid
// until the next Decode* call on the same decoder (and while the body lives).
// Node names and full-mode nodes (raw_json) always point into the body.
#ifndef SCHEDEXT_WIRE_DECODER_H_
#define SCHEDEXT_WIRE_DECODER_H_

#include <cstddef>
#include <memory>

#include "schedext/model/node_fields.h"
#include "schedext/status.h"
#include "schedext/wire/messages.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::wire {

struct DecoderOptions {
  // Full-mode ExtenderArgs bodies from this size up are decoded by two
  // threads, the caller's and a helper started for the request, each walking
  // part of the nodes; the result is the one-thread walk's. SIZE_MAX: never.
  size_t split_min_bytes = size_t{4} << 20;
};

class RequestDecoder {
 public:
  RequestDecoder();
  explicit RequestDecoder(const DecoderOptions& options);
  ~RequestDecoder();
  RequestDecoder(const RequestDecoder&) = delete;
  RequestDecoder& operator=(const RequestDecoder&) = delete;

  // ExtenderArgs (filter, prioritize). A body that is JSON `null` decodes to an
  // empty view (no pod, kNone). Full-mode nodes get only the optional blocks
  // in `node_fields` (model/node_fields.h; the profile's); the others are
  // skipped unread and left empty.
  Status DecodeExtenderArgs(const RequestBuffer& body, ExtenderArgsView& out,
                            model::NodeFields node_fields = model::NodeFields::kAll);
  // A 5,000-node full-mode body takes ~15 ms to arrive over loopback. The
  // listener offers such a body while it is still being received; once the
  // first part (from DecoderOptions::split_min_bytes up) is there, its walk
  // starts on a helper thread, and the DecodeExtenderArgs of the complete
  // body walks only the rest. Every other call, ShrinkTo and Settle wait for
  // that walk and drop it. Until then the buffer must not move and the bytes
  // it held when offered must not change (appending is fine). Returns whether
  // to offer this body again as more of it arrives.
  // `node_fields` must be the DecodeExtenderArgs call's, or that call walks
  // the body again.
  bool DecodeWhileReceiving(const RequestBuffer& body, size_t total_bytes,
                            model::NodeFields node_fields = model::NodeFields::kAll);
  // Waits for a walk DecodeWhileReceiving started and drops it: before the
  // body it reads is cleared or freed.
  void Settle();

  // ExtenderPreemptionArgs.
  Status DecodePreemptionArgs(const RequestBuffer& body, PreemptionArgsView& out);
  // ExtenderBindingArgs.
  Status DecodeBindingArgs(const RequestBuffer& body, BindingArgsView& out);

  // Whether the last DecodeExtenderArgs succeeded through the two-thread
  // split of DecoderOptions (for tests and benchmarks).
  bool last_decode_split() const;
  // Whether that split's first part was walked while the body arrived.
  bool last_decode_while_receiving() const;

  // Releases parser memory beyond `max_bytes` (after a very large request).
  void ShrinkTo(size_t max_bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedext::wire

#endif  // SCHEDEXT_WIRE_DECODER_H_
