// RequestDecoder's two-thread decoding of a large full-mode body
// (DecodeSplit, DecodeWhileReceiving, Settle); the codec itself is decoder.cc.
#include <cstring>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "schedext/wire/decoder.h"
#include "wire/decoder_impl.h"

namespace schedext::wire {
namespace {

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

}  // namespace schedext::wire
