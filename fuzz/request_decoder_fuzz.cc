// Fuzz target: wire::RequestDecoder on one request body, as every message the
// extender receives (ExtenderArgs in both node modes, ExtenderPreemptionArgs,
// ExtenderBindingArgs), fed through a padded RequestBuffer filled the way the
// server fills it.
//
// Beyond "no crash, no sanitizer report" it checks what a bad view or a stale
// decoder would break:
// * failures are kInvalidArgument, start with "decode <Message>: " and encode
//   into a reply that is valid JSON;
// * every decoded string is deep-copied (OwnedPod / OwnedNode), so a view into
//   freed memory is an AddressSanitizer report; full-mode raw node spans lie
//   inside the body;
// * replies built from the decoded views are valid JSON and decode back to the
//   same names, raw node bytes, victims and strings (encoder round trip);
// * decoding the same body again on the same decoder, after it decoded the
//   other messages, gives the same result (no state leaks between requests);
// * the two-thread decode of large full-mode bodies (DecoderOptions) gives
//   the one-thread result on every body;
// * the body padded with trailing whitespace to 16 KB, which sends any body
//   ending with an array of plain names down the decoder's names-mode fast
//   path, decodes as the body does (success, names and fields; and
//   names_quoted).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "fuzz_support.h"
#include "schedext/model/owned.h"
#include "schedext/status.h"
#include "schedext/wire/decoder.h"
#include "schedext/wire/encoder.h"
#include "schedext/wire/messages.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::fuzz {
namespace {

namespace dom = simdjson::dom;

// The replies are checked with simdjson's DOM parser: it validates a whole
// document strictly (RFC 8259 and UTF-8), where the on-demand decoder under
// test skips what it does not read, and it is fast enough to run on every
// input. One parser per process: it only grows.
dom::parser& Validator() {
  static dom::parser parser;
  return parser;
}

void AppendField(std::string_view text, std::string& out) {
  out.append(std::to_string(text.size())).push_back(':');
  out.append(text);
  out.push_back(';');
}

void AppendCount(size_t n, std::string& out) { out.append(std::to_string(n)).push_back(';'); }

void AppendResources(const model::ResourceList& list, std::string& out) {
  list.ForEach([&](std::string_view name, int64_t amount) {
    AppendField(name, out);
    out.append(std::to_string(amount)).push_back(';');
  });
  out.push_back('|');
}

// What a policy could read of a pod, as text, to compare two decodes.
void AppendPod(const model::PodInfo& pod, std::string& out) {
  for (std::string_view s : {pod.name, pod.namespace_name, pod.uid, pod.node_name,
                             pod.nominated_node_name, pod.phase, pod.priority_class_name,
                             pod.preemption_policy}) {
    AppendField(s, out);
  }
  out.append(std::to_string(pod.priority)).push_back(';');
  for (const model::StringMap* map : {&pod.labels, &pod.annotations, &pod.node_selector}) {
    for (const auto& [key, value] : map->entries()) {
      AppendField(key, out);
      AppendField(value, out);
    }
    out.push_back('|');
  }
  out.push_back(pod.has_required_node_affinity ? 'R' : 'r');
  AppendCount(pod.required_node_affinity.size(), out);
  AppendCount(pod.preferred_node_affinity.size(), out);
  for (const model::Toleration& t : pod.tolerations) {
    AppendField(t.key, out);
    AppendField(t.value, out);
  }
  AppendCount(pod.containers.size(), out);
  AppendCount(pod.init_containers.size(), out);
  AppendResources(pod.requests, out);
  AppendResources(pod.scoring_requests, out);
  AppendResources(pod.limits, out);
}

void AppendNode(const model::NodeInfo& node, std::string& out) {
  AppendField(node.name, out);
  AppendField(node.uid, out);
  for (const auto& [key, value] : node.labels.entries()) {
    AppendField(key, out);
    AppendField(value, out);
  }
  AppendCount(node.taints.size(), out);
  AppendCount(node.conditions.size(), out);
  out.push_back(node.unschedulable ? 'U' : 'u');
  AppendResources(node.allocatable, out);
  AppendResources(node.capacity, out);
  AppendField(node.raw_json, out);
}

std::string Fingerprint(const Status& status, const wire::ExtenderArgsView& args) {
  std::string out = status.message();
  out.push_back('#');
  out.push_back(args.has_pod ? 'P' : 'p');
  out.push_back(static_cast<char>('0' + static_cast<int>(args.mode)));
  if (args.has_pod) {
    AppendPod(args.pod, out);
  }
  if (args.mode == wire::NodeMode::kFullNodes) {
    for (const model::NodeInfo& node : args.nodes) {
      AppendNode(node, out);
    }
  }
  for (std::string_view name : args.node_names) {
    AppendField(name, out);
  }
  return out;
}

// `text` must be valid JSON; returns its root (valid until the next parse).
dom::element ParseJson(std::string_view text, const char* what) {
  dom::element root;
  const simdjson::error_code code = Validator().parse(text.data(), text.size()).get(root);
  SCHEDEXT_FUZZ_CHECK(code == simdjson::SUCCESS, std::string(what) + " is not valid JSON (" +
                                                     simdjson::error_message(code) + "): " +
                                                     std::string(text));
  return root;
}

bool IsValidJson(std::string_view text) {
  dom::element root;
  return Validator().parse(text.data(), text.size()).get(root) == simdjson::SUCCESS;
}

// The string at `key` of the object `root`, or a failed check.
std::string_view StringAt(dom::element root, const char* key, const std::string& context) {
  std::string_view value;
  SCHEDEXT_FUZZ_CHECK(root[key].get(value) == simdjson::SUCCESS, context);
  return value;
}

void CheckError(const Status& status, std::string_view message_type) {
  const std::string prefix = "decode " + std::string(message_type) + ": ";
  SCHEDEXT_FUZZ_CHECK(status.code() == StatusCode::kInvalidArgument, status.message());
  SCHEDEXT_FUZZ_CHECK(status.message().compare(0, prefix.size(), prefix) == 0, status.message());
  std::string reply;
  wire::AppendFilterError(status.message(), reply);
  const dom::element parsed = ParseJson(reply, "filter error reply");
  SCHEDEXT_FUZZ_CHECK(StringAt(parsed, "Error", reply) == status.message(), reply);
}

// The string encoders on one decoded string: quoted, escaped, parsed back.
void CheckStringRoundTrip(std::string_view text) {
  std::string reply;
  wire::AppendBindingResult(text, reply);
  const dom::element parsed = ParseJson(reply, "binding result");
  SCHEDEXT_FUZZ_CHECK(StringAt(parsed, "Error", reply) == text, reply);
}

void CheckExtenderArgs(std::string_view input, const wire::RequestBuffer& body,
                       const wire::ExtenderArgsView& args) {
  if (args.has_pod) {
    const model::OwnedPod owned(args.pod);
    SCHEDEXT_FUZZ_CHECK(owned.info().name == args.pod.name, "owned pod name differs");
  }
  // Odd-indexed nodes fail, with the pod's name as the reason (any string).
  std::vector<std::string_view> passing;
  std::vector<wire::FailedNode> failed;
  std::vector<std::string> passing_names;
  const bool full = args.mode == wire::NodeMode::kFullNodes;
  if (full) {
    SCHEDEXT_FUZZ_CHECK(args.nodes.size() == args.node_names.size(), "nodes and names differ");
  }
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    if (full) {
      const model::NodeInfo& node = args.nodes[i];
      SCHEDEXT_FUZZ_CHECK(node.name == args.node_names[i], "node name view differs");
      SCHEDEXT_FUZZ_CHECK(Inside(node.raw_json, body) && node.raw_json.size() >= 2 &&
                              node.raw_json.front() == '{' && node.raw_json.back() == '}',
                          "raw node span outside the body or not an object");
      const model::OwnedNode owned(node);
      SCHEDEXT_FUZZ_CHECK(owned.name() == node.name, "owned node name differs");
    }
    if (i % 2 == 0) {
      passing.push_back(full ? args.nodes[i].raw_json : args.node_names[i]);
      passing_names.emplace_back(args.node_names[i]);
    } else {
      failed.push_back({args.node_names[i], args.pod.name});
    }
  }
  wire::FilterResultView result;
  result.mode = args.mode;
  result.passing = passing;
  result.failed = failed;
  std::string reply;
  wire::AppendFilterResult(result, reply);
  if (args.names_quoted) {
    // The names are literals of the body: written as runs of it, copied or
    // spliced, the reply is the per-name encoder's byte for byte.
    SCHEDEXT_FUZZ_CHECK(args.mode == wire::NodeMode::kNodeNames, "quoted names outside names mode");
    for (std::string_view name : args.node_names) {
      SCHEDEXT_FUZZ_CHECK(Inside(name, body) && name.data() > body.data() &&
                              name.data()[-1] == '"' && name.data()[name.size()] == '"',
                          "quoted name not between quotes of the body");
    }
    result.names_quoted = true;
    std::string quoted;
    wire::AppendFilterResult(result, quoted);
    SCHEDEXT_FUZZ_CHECK(quoted == reply, quoted + " vs " + reply);
    std::vector<wire::ReplySplice> splices;
    std::string envelope;
    wire::AppendFilterResult(result, envelope, &splices);
    std::string whole;
    wire::AppendSpliced(envelope, splices, whole);
    SCHEDEXT_FUZZ_CHECK(whole == reply, whole + " vs " + reply);
    // Every name passing: the longest runs the body allows.
    wire::FilterResultView all;
    all.mode = wire::NodeMode::kNodeNames;
    all.passing = args.node_names;
    std::string per_name;
    wire::AppendFilterResult(all, per_name);
    all.names_quoted = true;
    envelope.clear();
    splices.clear();
    wire::AppendFilterResult(all, envelope, &splices);
    whole.clear();
    wire::AppendSpliced(envelope, splices, whole);
    SCHEDEXT_FUZZ_CHECK(whole == per_name, whole + " vs " + per_name);
    result.names_quoted = false;
  }

  // The reply goes to kube-scheduler, which parses all of it. Names always
  // come out valid; raw node spans only when the request itself was valid JSON
  // (the decoder skips what it does not read without validating it).
  if (!full || IsValidJson(input)) {
    const dom::element parsed = ParseJson(reply, "filter result");
    dom::object failed_map;
    SCHEDEXT_FUZZ_CHECK(parsed["FailedNodes"].get(failed_map) == simdjson::SUCCESS, reply);
    if (!full) {
      dom::array names;
      SCHEDEXT_FUZZ_CHECK(parsed["NodeNames"].get(names) == simdjson::SUCCESS &&
                              names.size() == passing.size(),
                          reply);
      size_t i = 0;
      for (dom::element name : names) {
        std::string_view text;
        SCHEDEXT_FUZZ_CHECK(name.get(text) == simdjson::SUCCESS && text == passing_names[i],
                            reply);
        ++i;
      }
    }
  }

  // The reply is also an ExtenderArgs without a pod (the decoder ignores the
  // result's other keys): the next extender reads it back.
  wire::RequestDecoder decoder;
  wire::ExtenderArgsView again;
  const wire::RequestBuffer reply_body = ReceiveBody(reply);
  const Status st = decoder.DecodeExtenderArgs(reply_body, again);
  SCHEDEXT_FUZZ_CHECK(st.ok(), st.message() + " in " + reply);
  SCHEDEXT_FUZZ_CHECK(!again.has_pod, reply);
  SCHEDEXT_FUZZ_CHECK(again.mode == (full ? wire::NodeMode::kFullNodes : wire::NodeMode::kNodeNames),
                      reply);
  SCHEDEXT_FUZZ_CHECK(again.node_names.size() == passing.size(), reply);
  for (size_t i = 0; i < passing.size(); ++i) {
    SCHEDEXT_FUZZ_CHECK(again.node_names[i] == passing_names[i], reply);
    if (full) {
      SCHEDEXT_FUZZ_CHECK(again.nodes[i].raw_json == passing[i], reply);
    }
  }

  // The prioritize reply for the same nodes, scores spread over int64.
  std::vector<wire::HostScore> scores;
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    const int64_t score = static_cast<int64_t>(i * 0x9E3779B97F4A7C15ULL);
    scores.push_back({args.node_names[i], score});
  }
  reply.clear();
  wire::AppendHostPriorityList(scores, reply);
  if (args.names_quoted) {
    std::string quoted;
    wire::AppendHostPriorityList(scores, quoted, /*hosts_quoted=*/true);
    SCHEDEXT_FUZZ_CHECK(quoted == reply, quoted + " vs " + reply);
  }
  dom::array list;
  SCHEDEXT_FUZZ_CHECK(ParseJson(reply, "host priority list").get(list) == simdjson::SUCCESS &&
                          list.size() == scores.size(),
                      reply);
  size_t i = 0;
  for (dom::element entry : list) {
    int64_t score = 0;
    SCHEDEXT_FUZZ_CHECK(StringAt(entry, "Host", reply) == scores[i].host, reply);
    SCHEDEXT_FUZZ_CHECK(entry["Score"].get(score) == simdjson::SUCCESS && score == scores[i].score,
                        reply);
    ++i;
  }
}

void CheckPreemptionArgs(const wire::PreemptionArgsView& args) {
  if (args.has_pod) {
    const model::OwnedPod owned(args.pod);
    SCHEDEXT_FUZZ_CHECK(owned.info().uid == args.pod.uid, "owned pod uid differs");
  }
  std::vector<std::vector<std::string_view>> uids;
  for (const wire::VictimsView& victims : args.candidates()) {
    std::vector<std::string_view>& list = uids.emplace_back();
    for (const model::PodInfo& pod : victims.pods) {
      if (args.full_pods) {
        const model::OwnedPod owned(pod);
        SCHEDEXT_FUZZ_CHECK(owned.info().name == pod.name, "owned victim name differs");
      }
      list.push_back(pod.uid);
    }
  }
  std::vector<wire::MetaVictimsEntry> entries;
  for (size_t i = 0; i < args.node_count; ++i) {
    const wire::VictimsView& victims = args.nodes[i];
    entries.push_back({victims.node, uids[i], victims.num_pdb_violations});
  }
  std::string reply;
  wire::AppendPreemptionResult(entries, reply);
  ParseJson(reply, "preemption result");

  // The result has the shape of the cache-mode request: it decodes back.
  wire::RequestDecoder decoder;
  wire::PreemptionArgsView again;
  const wire::RequestBuffer reply_body = ReceiveBody(reply);
  const Status st = decoder.DecodePreemptionArgs(reply_body, again);
  SCHEDEXT_FUZZ_CHECK(st.ok(), st.message() + " in " + reply);
  SCHEDEXT_FUZZ_CHECK(!again.full_pods && again.node_count == entries.size(), reply);
  for (size_t i = 0; i < entries.size(); ++i) {
    const wire::VictimsView& victims = again.nodes[i];
    SCHEDEXT_FUZZ_CHECK(victims.node == entries[i].node, reply);
    SCHEDEXT_FUZZ_CHECK(victims.num_pdb_violations == entries[i].num_pdb_violations, reply);
    SCHEDEXT_FUZZ_CHECK(victims.pods.size() == entries[i].uids.size(), reply);
    for (size_t k = 0; k < victims.pods.size(); ++k) {
      SCHEDEXT_FUZZ_CHECK(victims.pods[k].uid == entries[i].uids[k], reply);
    }
  }
}

void CheckBindingArgs(const wire::BindingArgsView& args) {
  for (std::string_view text : {args.pod_name, args.pod_namespace, args.pod_uid, args.node}) {
    CheckStringRoundTrip(text);
  }
}

}  // namespace
}  // namespace schedext::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedext;
  const std::string_view input = fuzz::AsText(data, size);
  const wire::RequestBuffer body = fuzz::ReceiveBody(input);
  wire::RequestDecoder decoder;

  wire::ExtenderArgsView args;
  const Status args_status = decoder.DecodeExtenderArgs(body, args);
  if (args_status.ok()) {
    fuzz::CheckExtenderArgs(input, body, args);
  } else {
    fuzz::CheckError(args_status, "ExtenderArgs");
  }
  const std::string first = fuzz::Fingerprint(args_status, args);

  wire::PreemptionArgsView preemption;
  const Status preemption_status = decoder.DecodePreemptionArgs(body, preemption);
  if (preemption_status.ok()) {
    fuzz::CheckPreemptionArgs(preemption);
  } else {
    fuzz::CheckError(preemption_status, "PreemptionArgs");
  }

  wire::BindingArgsView binding;
  const Status binding_status = decoder.DecodeBindingArgs(body, binding);
  if (binding_status.ok()) {
    fuzz::CheckBindingArgs(binding);
  } else {
    fuzz::CheckError(binding_status, "BindingArgs");
  }

  // The same decoder and view again, as a server worker reuses them.
  const Status again_status = decoder.DecodeExtenderArgs(body, args);
  const std::string again = fuzz::Fingerprint(again_status, args);
  SCHEDEXT_FUZZ_CHECK(again == first, "second decode differs:\n" + first + "\n" + again);
  const bool quoted = args.names_quoted;

  // The two-thread decode of large full-mode bodies, tried on every body
  // (it cuts only between two nodes it can prove, else it decodes whole):
  // the same result or the same error.
  wire::DecoderOptions split_options;
  split_options.split_min_bytes = 0;
  wire::RequestDecoder split_decoder(split_options);
  wire::ExtenderArgsView split_args;
  const Status split_status = split_decoder.DecodeExtenderArgs(body, split_args);
  const std::string split_print = fuzz::Fingerprint(split_status, split_args);
  SCHEDEXT_FUZZ_CHECK(split_print == first,
                      "split decode differs:\n" + first + "\n" + split_print);
  if (split_status.ok()) {
    fuzz::CheckExtenderArgs(input, body, split_args);
  }

  // decoder.cc's kTrailingNamesMinBytes: bodies this large may take the fast path.
  constexpr size_t kFastPathBytes = 16 * 1024;
  if (size < kFastPathBytes) {
    std::string padded(input);
    padded.append(kFastPathBytes - size, size % 2 == 0 ? ' ' : '\n');
    const wire::RequestBuffer padded_body = fuzz::ReceiveBody(padded);
    wire::ExtenderArgsView padded_args;
    const Status padded_status = decoder.DecodeExtenderArgs(padded_body, padded_args);
    SCHEDEXT_FUZZ_CHECK(padded_status.ok() == args_status.ok(),
                        "padded body decodes differently: " + padded_status.ToString() + " vs " +
                            args_status.ToString());
    if (padded_status.ok()) {
      fuzz::CheckExtenderArgs(padded, padded_body, padded_args);
      const std::string padded_print = fuzz::Fingerprint(padded_status, padded_args);
      SCHEDEXT_FUZZ_CHECK(padded_print == first,
                          "padded body decodes differently:\n" + first + "\n" + padded_print);
      SCHEDEXT_FUZZ_CHECK(padded_args.names_quoted == quoted, "padded body: names_quoted differs");
    }
  }
  return 0;
}
