// Fuzz target: wire::ObjectDecoder, the decoder of the informers' LIST pages
// and watch event lines, on one input taken as each of the six documents it
// reads (node, pod and raw object lists; node, pod and raw object events), on
// one decoder as an informer thread reuses it; each raw object's "data" is
// then read as a string map, as GpuShare reads its ConfigMaps.
//
// Checks, beyond sanitizer reports:
// * every item handed to a callback and every event object is deep-copied
//   (OwnedNode / OwnedPod / OwnedObject), so a view into freed memory is an
//   AddressSanitizer report; raw node and object spans lie inside the page;
// * failures are kInvalidArgument and start with "decode <what>: "; a callback
//   that stops the walk (at an item chosen from the input) gives kInternal;
// * decoding the same bytes again after the other documents gives the same
//   result (no state leaks from one document to the next).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_support.h"
#include "schedext/cluster/informer.h"
#include "schedext/model/owned.h"
#include "schedext/status.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::fuzz {
namespace {

void AppendField(std::string_view text, std::string& out) {
  out.append(std::to_string(text.size())).push_back(':');
  out.append(text);
  out.push_back(';');
}

void CheckError(const Status& status, std::string_view what) {
  const std::string prefix = "decode " + std::string(what) + ": ";
  SCHEDEXT_FUZZ_CHECK(status.message().compare(0, prefix.size(), prefix) == 0, status.message());
}

// A list's result as text. `stop_at` (1-based, 0: never) is the item whose
// callback answers false.
template <typename Decode, typename Copy>
std::string DecodeList(std::string_view what, size_t stop_at, Decode&& decode, Copy&& copy) {
  wire::ListMeta meta;
  std::string out;
  size_t items = 0;
  const Status status = decode(meta, [&](const auto& item) {
    ++items;
    copy(item, out);
    return items != stop_at;
  });
  if (status.ok()) {
    AppendField(meta.resource_version, out);
    AppendField(meta.continue_token, out);
  } else if (stop_at != 0 && items == stop_at) {
    SCHEDEXT_FUZZ_CHECK(status.code() == StatusCode::kInternal, status.message());
  } else {
    SCHEDEXT_FUZZ_CHECK(status.code() == StatusCode::kInvalidArgument, status.message());
  }
  if (!status.ok()) {
    CheckError(status, what);
    SCHEDEXT_FUZZ_CHECK(meta.resource_version.empty() && meta.continue_token.empty(),
                        "list meta kept after a failure");
  }
  out.append(status.message());
  return out;
}

void CopyNode(const wire::NodeObject& node, const wire::RequestBuffer& page, std::string& out) {
  SCHEDEXT_FUZZ_CHECK(Inside(node.info.raw_json, page), "raw node span outside the page");
  const model::OwnedNode owned(node.info, node.resource_version, node.deleting);
  SCHEDEXT_FUZZ_CHECK(owned.name() == node.info.name, "owned node name differs");
  AppendField(owned.name(), out);
  AppendField(owned.resource_version(), out);
  AppendField(node.info.raw_json, out);
  out.append(std::to_string(owned.info().labels.size())).push_back(owned.deleting() ? 'D' : 'd');
}

void CopyPod(const wire::PodObject& pod, std::string& out) {
  const model::OwnedPod owned(pod.info, pod.resource_version, pod.deleting);
  SCHEDEXT_FUZZ_CHECK(owned.uid() == pod.info.uid, "owned pod uid differs");
  SCHEDEXT_FUZZ_CHECK(owned.terminal() == pod.terminal(), "owned pod phase differs");
  AppendField(owned.info().name, out);
  AppendField(owned.uid(), out);
  AppendField(owned.resource_version(), out);
  out.append(std::to_string(owned.info().requests.milli_cpu)).push_back(';');
  out.append(std::to_string(owned.info().requests.memory)).push_back(owned.deleting() ? 'D' : 'd');
}

// An object of a generic watch: owned as the informer owns it, then its
// "data" read as the watcher reads it (on a decoder of its own).
void CopyRaw(const wire::RawObject& object, const wire::RequestBuffer& page, std::string& out) {
  if (!object.json.empty()) {
    SCHEDEXT_FUZZ_CHECK(object.json.data() >= page.data() &&
                            object.json.data() + object.json.size() <= page.data() + page.size(),
                        "raw object span outside the page");
  }
  const cluster::OwnedObject owned(object);
  AppendField(owned.view().namespace_name, out);
  AppendField(owned.view().name, out);
  AppendField(owned.view().resource_version, out);
  AppendField(owned.view().json, out);
  if (owned.view().json.empty()) {
    return;
  }
  wire::ObjectDecoder data_decoder;
  std::vector<std::pair<std::string_view, std::string_view>> data;
  const Status status = data_decoder.DecodeStringMap(owned.view().json, "data", data);
  if (!status.ok()) {
    SCHEDEXT_FUZZ_CHECK(status.code() == StatusCode::kInvalidArgument, status.message());
    CheckError(status, "object");
    out.append(status.message());
    return;
  }
  for (const auto& [key, value] : data) {
    AppendField(key, out);
    AppendField(value, out);
  }
}

template <typename Object, typename Decode, typename Copy>
std::string DecodeEvent(std::string_view what, Decode&& decode, Copy&& copy) {
  wire::WatchEvent event;
  Object object;
  const Status status = decode(event, object);
  std::string out;
  if (status.ok()) {
    out.push_back(static_cast<char>('0' + static_cast<int>(event.type)));
    if (event.type == wire::WatchEventType::kError) {
      out.append(std::to_string(event.error_code)).push_back(';');
      AppendField(event.error_reason, out);
      AppendField(event.error_message, out);
    } else {
      copy(object, out);
    }
  } else {
    SCHEDEXT_FUZZ_CHECK(status.code() == StatusCode::kInvalidArgument, status.message());
    CheckError(status, what);
    out.append(status.message());
  }
  return out;
}

// All six documents from one decoder, as one text.
std::string DecodeAll(wire::ObjectDecoder& decoder, const wire::RequestBuffer& page,
                      size_t stop_at) {
  std::string out = DecodeList(
      "NodeList", stop_at,
      [&](wire::ListMeta& meta, auto&& on_item) {
        return decoder.DecodeNodeList(page, meta, on_item);
      },
      [&](const wire::NodeObject& node, std::string& text) { CopyNode(node, page, text); });
  out += '\n';
  out += DecodeList(
      "PodList", stop_at,
      [&](wire::ListMeta& meta, auto&& on_item) { return decoder.DecodePodList(page, meta, on_item); },
      CopyPod);
  out += '\n';
  out += DecodeList(
      "list", stop_at,
      [&](wire::ListMeta& meta, auto&& on_item) {
        return decoder.DecodeObjectList(page, meta, on_item);
      },
      [&](const wire::RawObject& object, std::string& text) { CopyRaw(object, page, text); });
  out += '\n';
  out += DecodeEvent<wire::NodeObject>(
      "node watch event",
      [&](wire::WatchEvent& event, wire::NodeObject& node) {
        return decoder.DecodeNodeEvent(page, event, node);
      },
      [&](const wire::NodeObject& node, std::string& text) { CopyNode(node, page, text); });
  out += '\n';
  out += DecodeEvent<wire::PodObject>(
      "pod watch event",
      [&](wire::WatchEvent& event, wire::PodObject& pod) {
        return decoder.DecodePodEvent(page, event, pod);
      },
      CopyPod);
  out += '\n';
  out += DecodeEvent<wire::RawObject>(
      "watch event",
      [&](wire::WatchEvent& event, wire::RawObject& object) {
        return decoder.DecodeObjectEvent(page, event, object);
      },
      [&](const wire::RawObject& object, std::string& text) { CopyRaw(object, page, text); });
  return out;
}

}  // namespace
}  // namespace schedext::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedext;
  const std::string_view input = fuzz::AsText(data, size);
  const wire::RequestBuffer page = fuzz::ReceiveBody(input);
  // Stop the walk at one of the first items for a quarter of the inputs.
  const size_t stop_at = size > 0 && (data[size - 1] & 3) == 0 ? 1 + (data[size - 1] >> 2) % 4 : 0;
  wire::ObjectDecoder decoder;
  const std::string first = fuzz::DecodeAll(decoder, page, stop_at);
  const std::string again = fuzz::DecodeAll(decoder, page, stop_at);
  SCHEDEXT_FUZZ_CHECK(first == again, "second decode differs:\n" + first + "\n" + again);
  return 0;
}
