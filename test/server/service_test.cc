// ExtenderService without sockets: real request bodies recorded from
// kube-scheduler v1.26.7, real built-in policies, exact replies.
#include "schedext/server/service.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schedext/config/config.h"
#include "schedext/model/owned.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/policy/registry.h"
#include "testing/test_service.h"

namespace schedext::server {
namespace {

using nlohmann::json;

std::string ReadFixture(std::string_view mode, std::string_view name) {
  const std::string path = std::string(SCHEDEXT_TESTDATA_DIR) + "/kube-scheduler-1.26/" +
                           std::string(mode) + "/" + std::string(name) + ".json";
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
std::string Full(std::string_view name) { return ReadFixture("nodecache-false", name); }
std::string Names(std::string_view name) { return ReadFixture("nodecache-true", name); }

// Splits the text of a JSON array's elements at top-level commas.
std::vector<std::string_view> SplitArrayElements(std::string_view array_body) {
  std::vector<std::string_view> out;
  int depth = 0;
  bool in_string = false;
  size_t start = 0;
  for (size_t i = 0; i < array_body.size(); ++i) {
    const char c = array_body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(array_body.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < array_body.size()) {
    out.push_back(array_body.substr(start));
  }
  return out;
}

// The exact bytes of each node object of "Nodes":{"metadata":{},"items":[...]}.
std::vector<std::string_view> ItemSpans(std::string_view body) {
  constexpr std::string_view kOpen = "\"Nodes\":{\"metadata\":{},\"items\":[";
  const size_t open = body.find(kOpen);
  if (open == std::string_view::npos) {
    return {};
  }
  const size_t begin = open + kOpen.size();
  int depth = 1;
  bool in_string = false;
  size_t i = begin;
  for (; i < body.size() && depth > 0; ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return SplitArrayElements(body.substr(begin, i - 1 - begin));
}

// A synced cluster cache holding the nodes of a full-mode body and `pods`
// (pod objects as the API serves them), fed as the informers would.
std::unique_ptr<cluster::ClusterCache> CacheWith(const std::string& full_body,
                                                 const json& pods = json::array()) {
  auto cache = std::make_unique<cluster::ClusterCache>();
  wire::ObjectDecoder decoder;
  wire::ListMeta meta;
  std::vector<cluster::InformerObject> nodes;
  const json node_list = {{"metadata", {{"resourceVersion", "1"}}},
                          {"items", json::parse(full_body)["Nodes"]["items"]}};
  wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(node_list.dump());
  Status s = decoder.DecodeNodeList(buffer, meta, [&](const wire::NodeObject& o) {
    nodes.push_back({std::make_shared<const model::OwnedNode>(o.info, o.resource_version), {}, {}});
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<cluster::InformerObject> pod_objects;
  const json pod_list = {{"metadata", {{"resourceVersion", "1"}}}, {"items", pods}};
  buffer = wire::RequestBuffer::CopyOf(pod_list.dump());
  s = decoder.DecodePodList(buffer, meta, [&](const wire::PodObject& o) {
    pod_objects.push_back(
        {{}, std::make_shared<const model::OwnedPod>(o.info, o.resource_version), {}});
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  cache->OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));
  cache->OnReplace(cluster::ResourceKind::kPods, std::move(pod_objects));
  return cache;
}

class FakeBinder final : public cluster::PodBinder {
 public:
  Status Bind(const cluster::BindRequest& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls.push_back(std::string(r.pod_namespace) + "/" + std::string(r.pod_name) + "/" +
                    std::string(r.pod_uid) + "->" + std::string(r.node));
    return answer;
  }
  std::vector<std::string> calls;
  Status answer;

 private:
  std::mutex mu_;
};

constexpr std::string_view kConfig = R"(
profiles:
  - name: default
    policies:
      - name: NodeHealth
      - name: TaintToleration
  - name: no-gpu
    policies:
      - name: NodeLabel
        args:
          forbidden:
            - matchLabels:
                example.com/gpu.present: "true"
  - name: zone-a
    policies:
      - name: NodeLabel
        args:
          preferred:
            - weight: 1
              matchLabels:
                topology.kubernetes.io/zone: zone-a
)";

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(nullptr, nullptr); }

  void Make(cluster::ClusterCache* cache, cluster::PodBinder* binder) {
    auto built = schedext::testing::MakeTestService(
        {.config_yaml = kConfig, .cache = cache, .binder = binder});
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    service_ = std::move(built->service);
    metrics_ = std::move(built->metrics);
  }

  int Call(Verb verb, std::string_view profile, const std::string& body) {
    const int index = service_->FindProfile(profile);
    EXPECT_GE(index, 0) << profile;
    wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(body);
    return service_->Handle(verb, static_cast<size_t>(index), buffer, scratch_, out_, summary_);
  }

  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<ExtenderService> service_;
  Scratch scratch_;
  std::string out_;
  RequestSummary summary_;
};

TEST_F(ServiceTest, FullModeFilterEchoesPassingNodesByteForByte) {
  const std::string body = Full("filter-3");  // node-agent-1 tolerates everything; 5 nodes
  ASSERT_EQ(Call(Verb::kFilter, "no-gpu", body), 200);
  const json reply = json::parse(out_);
  EXPECT_TRUE(reply["NodeNames"].is_null());
  EXPECT_EQ(reply["Error"], "");
  EXPECT_EQ(reply["FailedNodes"], json::object());
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"],
            (json{{"lab-gpu-2", "node(s) had forbidden labels"},
                  {"lab-gpu-1", "node(s) had forbidden labels"}}));
  // The passing items are the request's own bytes, in request order.
  const std::vector<std::string_view> in = ItemSpans(body);
  ASSERT_EQ(in.size(), 5u);
  const std::vector<std::string_view> echoed = ItemSpans(out_);
  ASSERT_EQ(echoed.size(), 3u);
  EXPECT_EQ(echoed[0], in[0]);  // lab-cp-1
  EXPECT_EQ(echoed[1], in[1]);  // lab-cpu-2
  EXPECT_EQ(echoed[2], in[2]);  // lab-cpu-1
  EXPECT_EQ(summary_.nodes_in, 5u);
  EXPECT_EQ(summary_.nodes_out, 3u);
}

// A writer that sends replies in pieces (Scratch::splice_replies, as the HTTP
// listener does) gets the same bytes: `out` holds the envelope, reply_splices
// the passing nodes as spans of the request body, one per run of adjacent
// nodes. Failing nodes in the middle and at the end split the runs.
TEST_F(ServiceTest, SplicedFullModeFilterReplyIsTheCopiedReplyByteForByte) {
  json request = json::parse(Full("filter-3"));  // node-agent-1 tolerates everything
  auto not_ready = [](json& node) {
    for (json& c : node["status"]["conditions"]) {
      if (c["type"] == "Ready") {
        c["status"] = "Unknown";
      }
    }
  };
  not_ready(request["Nodes"]["items"][1]);  // lab-cpu-2
  const std::string body = request.dump();
  for (bool tail_fails : {false, true}) {
    SCOPED_TRACE(tail_fails ? "last node failing too" : "one node failing");
    std::string text = body;
    if (tail_fails) {
      json changed = request;
      not_ready(changed["Nodes"]["items"][4]);  // lab-gpu-1
      text = changed.dump();
    }
    const wire::RequestBuffer spliced_body = wire::RequestBuffer::CopyOf(text);
    std::string copied;
    ASSERT_EQ(service_->Handle(Verb::kFilter, 0, spliced_body, scratch_, copied, summary_), 200);
    EXPECT_TRUE(scratch_.reply_splices.empty());

    Scratch spliced;
    spliced.splice_replies = true;
    std::string envelope;
    ASSERT_EQ(service_->Handle(Verb::kFilter, 0, spliced_body, spliced, envelope, summary_), 200);
    // lab-cp-1 alone, then lab-cpu-1 + lab-gpu-2 (+ lab-gpu-1) in one span.
    ASSERT_EQ(spliced.reply_splices.size(), 2u);
    // (nlohmann's dump puts "items" before "metadata": the copied reply's
    // items are the reference.)
    const std::vector<std::string_view> items = ItemSpans(copied);
    ASSERT_EQ(items.size(), tail_fails ? 3u : 4u);
    EXPECT_EQ(spliced.reply_splices[0].bytes, items[0]);
    const std::string_view run(items[1].data(),
                               static_cast<size_t>(items.back().data() + items.back().size() -
                                                   items[1].data()));
    EXPECT_EQ(spliced.reply_splices[1].bytes, run);
    for (const wire::ReplySplice& splice : spliced.reply_splices) {  // spans of the body
      EXPECT_GE(splice.bytes.data(), spliced_body.data());
      EXPECT_LE(splice.bytes.data() + splice.bytes.size(), spliced_body.data() + spliced_body.size());
    }
    EXPECT_LT(envelope.size(), 400u);  // the nodes stayed in the body
    std::string whole;
    wire::AppendSpliced(envelope, spliced.reply_splices, whole);
    EXPECT_EQ(whole, copied);
    EXPECT_EQ(wire::SplicedSize(envelope, spliced.reply_splices), copied.size());
    EXPECT_EQ(ItemSpans(whole).size(), tail_fails ? 3u : 4u);

    // Other verbs and modes never splice, and a new request clears the spans.
    ASSERT_EQ(service_->Handle(Verb::kPrioritize, 0, spliced_body, spliced, envelope, summary_),
              200);
    EXPECT_TRUE(spliced.reply_splices.empty());
  }
}

TEST_F(ServiceTest, UntoleratedTaintsAreUnresolvable) {
  // web-1 tolerates only the default NoExecute taints; the GPU nodes of
  // filter-2 carry example.com/gpu=present:NoSchedule.
  json body = json::parse(Full("filter-2"));
  body["Pod"] = json::parse(Full("filter-1"))["Pod"];
  ASSERT_EQ(Call(Verb::kFilter, "", body.dump()), 200);
  const json reply = json::parse(out_);
  EXPECT_EQ(reply["Nodes"]["items"], json::array());
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"],
            (json{{"lab-gpu-2", "node(s) had untolerated taint"},
                  {"lab-gpu-1", "node(s) had untolerated taint"}}));
}

TEST_F(ServiceTest, NodeHealthRejectsUnschedulableAndNotReadyNodes) {
  json body = json::parse(Full("filter-3"));
  body["Nodes"]["items"][1]["spec"]["unschedulable"] = true;  // lab-cpu-2
  for (json& c : body["Nodes"]["items"][2]["status"]["conditions"]) {  // lab-cpu-1
    if (c["type"] == "Ready") {
      c["status"] = "Unknown";
    }
  }
  auto passed_names = [](const json& reply) {
    std::vector<std::string> names;
    for (const json& n : reply["Nodes"]["items"]) {
      names.push_back(n["metadata"]["name"]);
    }
    return names;
  };
  // node-agent-1 tolerates every taint, node.kubernetes.io/unschedulable
  // included, so the cordoned node passes as kube-scheduler would let it.
  ASSERT_EQ(Call(Verb::kFilter, "default", body.dump()), 200);
  json reply = json::parse(out_);
  EXPECT_EQ(passed_names(reply),
            (std::vector<std::string>{"lab-cp-1", "lab-cpu-2", "lab-gpu-2", "lab-gpu-1"}));
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"], (json{{"lab-cpu-1", "node(s) were not ready"}}));

  // web-1 tolerates no NoSchedule taint.
  body["Pod"] = json::parse(Full("filter-1"))["Pod"];
  ASSERT_EQ(Call(Verb::kFilter, "default", body.dump()), 200);
  reply = json::parse(out_);
  EXPECT_EQ(passed_names(reply), std::vector<std::string>{});
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"],
            (json{{"lab-cp-1", "node(s) had untolerated taint"},
                  {"lab-cpu-2", "node(s) were unschedulable"},
                  {"lab-cpu-1", "node(s) were not ready"},
                  {"lab-gpu-2", "node(s) had untolerated taint"},
                  {"lab-gpu-1", "node(s) had untolerated taint"}}));
}

TEST_F(ServiceTest, NodeCacheModeWithoutDirectoryAnswersAnError) {
  ASSERT_EQ(Call(Verb::kFilter, "", Names("filter-1")), 200);
  const json reply = json::parse(out_);
  EXPECT_TRUE(reply["NodeNames"].is_null());
  EXPECT_NE(reply["Error"].get<std::string>().find("node-cache mode (NodeNames) needs"),
            std::string::npos);
  EXPECT_EQ(Call(Verb::kPrioritize, "", Names("prioritize-1")), 503);
  EXPECT_NE(json::parse(out_)["Error"].get<std::string>().find("node-cache mode"),
            std::string::npos);
}

TEST_F(ServiceTest, NodeCacheModeResolvesNamesThroughTheCache) {
  auto cache = CacheWith(Full("filter-3"));
  Make(cache.get(), nullptr);
  json body = json::parse(Names("filter-3"));
  body["NodeNames"].push_back("ghost-node");
  ASSERT_EQ(Call(Verb::kFilter, "no-gpu", body.dump()), 200);
  EXPECT_EQ(out_,
            R"({"Nodes":null,"NodeNames":["lab-cp-1","lab-cpu-2","lab-cpu-1"],"FailedNodes":{},)"
            R"("FailedAndUnresolvableNodes":{"lab-gpu-2":"node(s) had forbidden labels",)"
            R"("lab-gpu-1":"node(s) had forbidden labels","ghost-node":"node(s) unknown to )"
            R"(schedext"},"Error":""})");

  cluster::ClusterCache unsynced;
  Make(&unsynced, nullptr);
  ASSERT_EQ(Call(Verb::kFilter, "no-gpu", body.dump()), 200);
  EXPECT_EQ(json::parse(out_)["Error"], "filter: node cache not synced");
  ASSERT_EQ(Call(Verb::kFilter, "no-gpu", Full("filter-3")), 200);
  EXPECT_EQ(json::parse(out_)["Error"], "filter: node cache not synced");
  EXPECT_EQ(Call(Verb::kPrioritize, "no-gpu", Full("prioritize-3")), 503);
}

// Names mode with many nodes: the names come out as runs of the request's
// own bytes (copied, or spliced when the writer sends pieces and a run is
// long), exactly as the per-name encoder writes them; a request whose names
// needed unescaping takes the per-name path and answers the same.
TEST_F(ServiceTest, NamesModeRepliesAreExactForRunsOfRequestNames) {
  const json fixture = json::parse(Full("filter-3"));
  json cpu_node;
  json gpu_node;
  for (const json& node : fixture["Nodes"]["items"]) {
    if (node["metadata"]["name"] == "lab-cpu-1") cpu_node = node;
    if (node["metadata"]["name"] == "lab-gpu-1") gpu_node = node;
  }
  ASSERT_FALSE(cpu_node.is_null());
  ASSERT_FALSE(gpu_node.is_null());
  json full = fixture;
  full["Nodes"]["items"] = json::array();
  json request = json::parse(Names("filter-3"));
  request["NodeNames"] = json::array();
  std::string want_names;
  std::string want_scores;
  for (int i = 0; i < 300; ++i) {
    char name[80];
    std::snprintf(name, sizeof(name), "%s-node-%03d.zone-a.lab.example.internal.padding-padding",
                  i == 150 ? "gpu" : "cpu", i);
    json node = i == 150 ? gpu_node : cpu_node;
    node["metadata"]["name"] = name;
    full["Nodes"]["items"].push_back(node);
    request["NodeNames"].push_back(name);
    if (i != 150) {
      want_names += (want_names.empty() ? "\"" : ",\"") + std::string(name) + "\"";
    }
    want_scores += std::string(i == 0 ? "" : ",") + R"({"Host":")" + name + R"(","Score":10})";
  }
  // Scores 0, the lowest: left out of the prioritize reply.
  request["NodeNames"].push_back("ghost-node");
  auto cache = CacheWith(full.dump());
  Make(cache.get(), nullptr);
  const std::string want_filter =
      R"({"Nodes":null,"NodeNames":[)" + want_names +
      R"(],"FailedNodes":{},"FailedAndUnresolvableNodes":{"gpu-node-150.zone-a.lab.example.)"
      R"(internal.padding-padding":"node(s) had forbidden labels","ghost-node":"node(s) unknown )"
      R"(to schedext"},"Error":""})";

  const std::string plain = request.dump();
  std::string escaped = plain;  // "cpu-node-007" as "cpu\u002dnode-007"
  const size_t at = escaped.find("cpu-node-007");
  ASSERT_NE(at, std::string::npos);
  escaped.replace(at, 4, "cpu\\u002d");
  const int no_gpu = service_->FindProfile("no-gpu");
  ASSERT_GE(no_gpu, 0);
  const std::string* const bodies[] = {&plain, &escaped};
  for (const std::string* body : bodies) {
    SCOPED_TRACE(body == &plain ? "plain names" : "one escaped name");
    const wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(*body);
    std::string copied;
    ASSERT_EQ(service_->Handle(Verb::kFilter, static_cast<size_t>(no_gpu), buffer, scratch_, copied,
                               summary_), 200);
    EXPECT_EQ(copied, want_filter);
    EXPECT_TRUE(scratch_.reply_splices.empty());

    Scratch spliced;
    spliced.splice_replies = true;
    std::string envelope;
    ASSERT_EQ(service_->Handle(Verb::kFilter, static_cast<size_t>(no_gpu), buffer, spliced,
                               envelope, summary_), 200);
    // Plain: names 0-149 and 151-299, ~9 KB each, stay in the body.
    EXPECT_EQ(spliced.reply_splices.size(), body == &plain ? 2u : 0u);
    for (const wire::ReplySplice& splice : spliced.reply_splices) {
      EXPECT_GE(splice.bytes.data(), buffer.data());
      EXPECT_LE(splice.bytes.data() + splice.bytes.size(), buffer.data() + buffer.size());
    }
    std::string whole;
    wire::AppendSpliced(envelope, spliced.reply_splices, whole);
    EXPECT_EQ(whole, want_filter);

    const int zone_a = service_->FindProfile("zone-a");
    ASSERT_GE(zone_a, 0);
    ASSERT_EQ(service_->Handle(Verb::kPrioritize, static_cast<size_t>(zone_a), buffer, scratch_,
                               out_, summary_),
              200);
    EXPECT_EQ(out_, "[" + want_scores + "]");
  }
}

TEST_F(ServiceTest, PrioritizeAnswersTheScoresAboveTheLowestInRequestOrder) {
  // zone-a: lab-cpu-1 and lab-gpu-1 match the preferred term (weight 1):
  // normalised 100 → 100 × 1 × 10 / (100 × 1) = 10; the others 0, the
  // lowest, which the reply leaves out (kube-scheduler scores them 0).
  ASSERT_EQ(Call(Verb::kPrioritize, "zone-a", Full("prioritize-4")), 200);
  EXPECT_EQ(out_, R"([{"Host":"lab-cpu-1","Score":10},{"Host":"lab-gpu-1","Score":10}])");
  auto cache = CacheWith(Full("filter-3"));
  Make(cache.get(), nullptr);
  ASSERT_EQ(Call(Verb::kPrioritize, "zone-a", Names("prioritize-4")), 200);
  EXPECT_EQ(out_, R"([{"Host":"lab-cpu-1","Score":10},{"Host":"lab-gpu-1","Score":10}])");
}

TEST_F(ServiceTest, PreemptConvertsVictimsToUidsInBothModes) {
  ASSERT_EQ(Call(Verb::kPreempt, "", Full("preempt-1")), 200);
  EXPECT_EQ(out_,
            R"({"NodeNameToMetaVictims":{"lab-gpu-1":{"Pods":[)"
            R"({"UID":"059f94d6-5b7c-43af-b2d5-cb8dc63a4795"},)"
            R"({"UID":"47aae8a6-0931-4dbb-8914-6c443594944a"}],"NumPDBViolations":0},)"
            R"("lab-gpu-2":{"Pods":[{"UID":"548821ce-7ebf-4bef-80b9-10c84e1426f9"},)"
            R"({"UID":"0275e407-d43a-49f9-b228-abf8d33bed33"}],"NumPDBViolations":0}}})");
  ASSERT_EQ(Call(Verb::kPreempt, "", Names("preempt-1")), 200);
  EXPECT_EQ(out_,
            R"({"NodeNameToMetaVictims":{"lab-gpu-1":{"Pods":[)"
            R"({"UID":"3c7a2d30-8deb-436b-99ca-8482a81e1c88"},)"
            R"({"UID":"c8b1645f-3a0a-433a-9b56-4a73ed848520"}],"NumPDBViolations":0},)"
            R"("lab-gpu-2":{"Pods":[{"UID":"015cd984-5d5f-47d3-85b0-3d2e449d5dc6"},)"
            R"({"UID":"917b3a4e-d9dc-4b54-b02c-6194915b32ad"}],"NumPDBViolations":0}}})");
}

TEST_F(ServiceTest, PreemptDropsNodesWherePreemptorCannotRunAnyway) {
  json nodes = json::parse(Full("filter-3"));
  nodes["Nodes"]["items"][4]["spec"]["unschedulable"] = true;  // lab-gpu-1
  auto cache = CacheWith(nodes.dump());
  Make(cache.get(), nullptr);
  ASSERT_EQ(Call(Verb::kPreempt, "default", Names("preempt-1")), 200);
  const json reply = json::parse(out_);
  ASSERT_EQ(reply["NodeNameToMetaVictims"].size(), 1u);
  EXPECT_EQ(reply["NodeNameToMetaVictims"]["lab-gpu-2"]["Pods"].size(), 2u);
  EXPECT_EQ(summary_.nodes_out, 1u);
}

TEST_F(ServiceTest, EmptyPreemptionMapAnswersAnEmptyMap) {
  ASSERT_EQ(Call(Verb::kPreempt, "", R"({"Pod":null,"NodeNameToVictims":{},"NodeNameToMetaVictims":null})"),
            200);
  EXPECT_EQ(out_, R"({"NodeNameToMetaVictims":{}})");
}

TEST_F(ServiceTest, BindWithoutApiConnectionAnswersAClearError) {
  ASSERT_EQ(Call(Verb::kBind, "", Full("bind-1")), 200);
  const json reply = json::parse(out_);
  EXPECT_EQ(reply.size(), 1u);
  EXPECT_EQ(reply["Error"].get<std::string>().rfind(
                "bind default/web-1 to lab-cpu-2: schedext has no Kubernetes API connection", 0),
            0u)
      << out_;
}

TEST_F(ServiceTest, BindCallsTheBinderAndReportsItsAnswer) {
  FakeBinder binder;
  Make(nullptr, &binder);
  ASSERT_EQ(Call(Verb::kBind, "", Full("bind-1")), 200);
  EXPECT_EQ(out_, R"({"Error":""})");
  ASSERT_EQ(binder.calls.size(), 1u);
  EXPECT_EQ(binder.calls[0], "default/web-1/d7fb634f-ea64-4be7-ba65-f190b8c0048d->lab-cpu-2");

  binder.answer = FailedPreconditionError("409 Conflict: pod web-1 is already assigned to node x");
  ASSERT_EQ(Call(Verb::kBind, "", Full("bind-1")), 200);
  EXPECT_EQ(out_,
            R"({"Error":"bind default/web-1 to lab-cpu-2: 409 Conflict: pod web-1 is already )"
            R"(assigned to node x"})");
}

TEST_F(ServiceTest, EmptyNodeListsSucceedWithEmptyReplies) {
  const std::string names = R"({"Pod":{"metadata":{"name":"p"}},"Nodes":null,"NodeNames":[]})";
  ASSERT_EQ(Call(Verb::kFilter, "", names), 200);
  EXPECT_EQ(out_,
            R"({"Nodes":null,"NodeNames":[],"FailedNodes":{},"FailedAndUnresolvableNodes":{},)"
            R"("Error":""})");
  const std::string full =
      R"({"Pod":{"metadata":{"name":"p"}},"Nodes":{"metadata":{},"items":[]},"NodeNames":null})";
  ASSERT_EQ(Call(Verb::kFilter, "", full), 200);
  EXPECT_EQ(out_,
            R"({"Nodes":{"metadata":{},"items":[]},"NodeNames":null,"FailedNodes":{},)"
            R"("FailedAndUnresolvableNodes":{},"Error":""})");
  ASSERT_EQ(Call(Verb::kPrioritize, "", full), 200);
  EXPECT_EQ(out_, "[]");
}

TEST_F(ServiceTest, BadRequestsAnswer400AndTheServiceKeepsWorking) {
  struct Case {
    std::string name;
    Verb verb;
    std::string body;
  };
  const std::vector<Case> cases = {
      {"empty body", Verb::kFilter, ""},
      {"not json", Verb::kFilter, "hello"},
      {"truncated", Verb::kFilter, Full("filter-3").substr(0, 3000)},
      {"wrong type", Verb::kPrioritize, R"({"Pod":[],"Nodes":null,"NodeNames":["a"]})"},
      {"names not a list", Verb::kFilter, R"({"Pod":{},"Nodes":null,"NodeNames":"a"})"},
      {"nodes without pod", Verb::kFilter, R"({"Pod":null,"Nodes":null,"NodeNames":["a"]})"},
      {"deep nesting", Verb::kFilter, "{\"x\":" + std::string(100000, '[')},
      {"bad quantity", Verb::kFilter,
       R"({"Pod":{"spec":{"containers":[{"resources":{"requests":{"cpu":"5x"}}}]}},)"
       R"("Nodes":{"items":[{"metadata":{"name":"n"}}]},"NodeNames":null})"},
      {"preempt garbage", Verb::kPreempt, "[1,2"},
      {"bind wrong type", Verb::kBind, R"({"PodName":1})"},
      {"bind missing node", Verb::kBind, R"({"PodName":"a","PodNamespace":"b","PodUID":"c"})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Call(c.verb, "", c.body), 400);
    const json reply = json::parse(out_, nullptr, false);
    ASSERT_FALSE(reply.is_discarded()) << out_;
    EXPECT_FALSE(reply["Error"].get<std::string>().empty());
  }
  const json bad_quantity = json::parse(
      (Call(Verb::kFilter, "", cases[7].body), out_));
  EXPECT_NE(bad_quantity["Error"].get<std::string>().find("cpu"), std::string::npos);
  EXPECT_NE(bad_quantity["Error"].get<std::string>().find("5x"), std::string::npos);
  // The same scratch serves the next request correctly.
  ASSERT_EQ(Call(Verb::kPrioritize, "zone-a", Full("prioritize-4")), 200);
  EXPECT_EQ(json::parse(out_).size(), 2u);
}

TEST_F(ServiceTest, EveryRecordedRequestGetsAnAnswerOfTheRightShape) {
  auto cache = CacheWith(Full("filter-3"));
  FakeBinder binder;
  Make(cache.get(), &binder);
  for (std::string_view mode : {"nodecache-false", "nodecache-true"}) {
    for (int i = 1; i <= 11; ++i) {
      SCOPED_TRACE(std::string(mode) + " " + std::to_string(i));
      const std::string filter = ReadFixture(mode, "filter-" + std::to_string(i));
      ASSERT_EQ(Call(Verb::kFilter, "", filter), 200);
      json reply = json::parse(out_);
      EXPECT_EQ(reply["Error"], "");
      const json request = json::parse(filter);
      const size_t in = mode == "nodecache-true" ? request["NodeNames"].size()
                                                 : request["Nodes"]["items"].size();
      // Partition: every input node is in exactly one set.
      const size_t passed = mode == "nodecache-true" ? reply["NodeNames"].size()
                                                     : reply["Nodes"]["items"].size();
      EXPECT_EQ(passed + reply["FailedNodes"].size() + reply["FailedAndUnresolvableNodes"].size(),
                in);
      EXPECT_EQ(mode == "nodecache-true" ? reply["Nodes"].is_null()
                                         : reply["NodeNames"].is_null(),
                true);
      ASSERT_EQ(Call(Verb::kBind, "", ReadFixture(mode, "bind-" + std::to_string(i))), 200);
      EXPECT_EQ(out_, R"({"Error":""})");
      if (i <= 7) {
        ASSERT_EQ(Call(Verb::kPrioritize, "", ReadFixture(mode, "prioritize-" + std::to_string(i))),
                  200);
        reply = json::parse(out_);
        ASSERT_TRUE(reply.is_array());
        for (const json& e : reply) {
          EXPECT_GE(e["Score"].get<int64_t>(), 0);
          EXPECT_LE(e["Score"].get<int64_t>(), 10);
        }
      }
    }
    ASSERT_EQ(Call(Verb::kPreempt, "", ReadFixture(mode, "preempt-1")), 200);
    EXPECT_EQ(json::parse(out_)["NodeNameToMetaVictims"].size(), 2u);
  }
  EXPECT_EQ(binder.calls.size(), 22u);
}

TEST_F(ServiceTest, MetricsCountRequestsByOutcome) {
  ASSERT_EQ(Call(Verb::kFilter, "", Full("filter-1")), 200);
  ASSERT_EQ(Call(Verb::kFilter, "", Full("filter-2")), 200);
  ASSERT_EQ(Call(Verb::kFilter, "", "nope"), 400);
  ASSERT_EQ(Call(Verb::kBind, "", Full("bind-1")), 200);  // no API connection: an error
  std::string text;
  metrics_->Render(text);
  EXPECT_NE(text.find(R"(schedext_requests_total{profile="default",verb="filter",outcome="ok"} 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(schedext_requests_total{profile="default",verb="filter",outcome="bad_request"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(schedext_requests_total{profile="default",verb="bind",outcome="error"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(schedext_request_duration_seconds_count{profile="default",verb="filter"} 3)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(schedext_request_nodes_total{profile="default",verb="filter"} 4)"),
            std::string::npos);
}

// Full-mode nodes are decoded with only the blocks the profile's policies
// read (Policy::NodeFieldsRead). Each built-in profile answers every recorded
// full-mode request exactly as the same profile does with a filter appended
// that declares nothing, so that every block is decoded for it.
TEST(ServiceNodeFieldsTest, EveryBuiltinProfileDecidesAsOnWholeNodes) {
  class PassesAll final : public policy::Policy, public policy::FilterHook {
   public:
    std::string_view Name() const override { return "PassesAll"; }
    const policy::FilterHook* AsFilter() const override { return this; }
    policy::Verdict Filter(const policy::RequestState&, const model::PodInfo&,
                           const model::NodeInfo&) const override {
      return {};
    }
  };
  policy::Registry registry;
  ASSERT_TRUE(policy::RegisterBuiltinPolicies(registry).ok());
  ASSERT_TRUE(registry
                  .Register("PassesAll",
                            [](const json&, const policy::PolicyContext&)
                                -> StatusOr<std::unique_ptr<policy::Policy>> {
                              return std::unique_ptr<policy::Policy>(new PassesAll());
                            })
                  .ok());
  const std::map<std::string, std::string> policies = {
      {"default", "      - name: NodeHealth\n      - name: TaintToleration\n"},
      {"resources",
       "      - name: NodeResourcesFit\n      - name: LeastAllocated\n"
       "      - name: BalancedAllocation\n"},
      {"gpushare", "      - name: GpuShare\n"},
      {"labels",
       "      - name: NodeLabel\n        args:\n          forbidden:\n"
       "            - matchLabels:\n                example.com/gpu.present: \"true\"\n"
       "          preferred:\n            - weight: 3\n              matchLabels:\n"
       "                topology.kubernetes.io/zone: zone-a\n"
       "      - name: NodeNumeric\n        args:\n"
       "          key: node.alpha.kubernetes.io/ttl\n          source: annotation\n"
       "          min: 0\n"},
  };
  const std::map<std::string, model::NodeFields> declared = {
      {"default", model::NodeFields::kNone},
      {"resources", model::NodeFields::kResources},
      {"gpushare", model::NodeFields::kResources},
      {"labels", model::NodeFields::kLabels | model::NodeFields::kAnnotations},
  };
  std::string text = "profiles:\n";
  for (const auto& [name, list] : policies) {
    text += "  - name: " + name + "\n    policies:\n" + list;
    text += "  - name: " + name + "-whole\n    policies:\n" + list + "      - name: PassesAll\n";
  }
  auto config = config::LoadConfigText(text, "test");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  std::vector<std::shared_ptr<const pipeline::Profile>> profiles;
  std::vector<std::string> names;
  for (const config::ProfileConfig& profile : config->profiles) {
    auto built = pipeline::Profile::Build(profile, registry, "profiles");
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    const bool whole = profile.name.ends_with("-whole");
    EXPECT_EQ((*built)->node_fields(),
              whole ? model::NodeFields::kAll : declared.at(profile.name)) << profile.name;
    profiles.push_back(*built);
    names.push_back(profile.name);
  }
  // The cache gives the resource and GPU policies their usage.
  const std::unique_ptr<cluster::ClusterCache> cache = CacheWith(Full("filter-3"));
  Metrics metrics(names);
  ExtenderService service(profiles, 0, cache.get(), nullptr, &metrics);
  Scratch scratch;
  std::string out;
  std::string whole_out;
  RequestSummary summary;
  std::map<std::string, size_t> rejected;
  for (const std::string verb : {"filter", "prioritize"}) {
    for (int n = 1; n <= 11; ++n) {
      const std::string path = std::string(SCHEDEXT_TESTDATA_DIR) +
                               "/kube-scheduler-1.26/nodecache-false/" + verb + "-" +
                               std::to_string(n) + ".json";
      if (!std::ifstream(path).good()) {
        continue;
      }
      const std::string body = Full(verb + "-" + std::to_string(n));
      const wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(body);
      const Verb v = verb == "filter" ? Verb::kFilter : Verb::kPrioritize;
      for (const auto& [name, list] : policies) {
        SCOPED_TRACE(verb + "-" + std::to_string(n) + " " + name);
        const size_t narrow = static_cast<size_t>(service.FindProfile(name));
        const size_t whole = static_cast<size_t>(service.FindProfile(name + "-whole"));
        const int status = service.Handle(v, narrow, buffer, scratch, out, summary);
        rejected[name] += summary.failed + summary.unresolvable;
        const int whole_status = service.Handle(v, whole, buffer, scratch, whole_out, summary);
        EXPECT_EQ(status, whole_status);
        EXPECT_EQ(out, whole_out);
      }
    }
  }
  // Decisions that depend on a skippable block: the label rules reject nodes
  // of these recordings.
  EXPECT_GT(rejected["labels"], 0U);
}

}  // namespace
}  // namespace schedext::server
