// ObjectDecoder: LIST pages and watch events of nodes and pods.
#include "schedext/wire/object_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schedext/wire/request_buffer.h"
#include "testing/json_builders.h"

namespace schedext::wire {
namespace {

using ::schedext::testing::NodeJson;
using ::schedext::testing::PodJson;

std::string Event(std::string_view type, std::string_view object) {
  return "{\"type\":\"" + std::string(type) + "\",\"object\":" + std::string(object) + "}";
}

std::string List(std::string_view kind, std::string_view rv, std::string_view cont,
                 const std::vector<std::string>& items) {
  std::string out = "{\"kind\":\"" + std::string(kind) +
                    "\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" +
                    std::string(rv) + "\"";
  if (!cont.empty()) {
    out += ",\"continue\":\"" + std::string(cont) + "\",\"remainingItemCount\":7";
  }
  out += "},\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i > 0 ? "," : "") + items[i];
  }
  return out + "]}";
}

TEST(ObjectDecoderTest, DecodesNodeListPage) {
  const std::string body = List(
      "NodeList", "1200", "token-2",
      {NodeJson("n1").Realistic().Label("zone", "a").Allocatable("cpu", "4").Build(),
       NodeJson("n2").Taint("gpu", "true", "NoSchedule").Allocatable("memory", "8Gi").Build()});
  ObjectDecoder decoder;
  ListMeta meta;
  std::vector<std::string> names;
  std::vector<std::string> versions;
  const Status status =
      decoder.DecodeNodeList(RequestBuffer::CopyOf(body), meta, [&](const NodeObject& node) {
        names.emplace_back(node.info.name);
        versions.emplace_back(node.resource_version);
        if (node.info.name == "n1") {
          EXPECT_EQ(node.info.labels.Find("zone"), "a");
          EXPECT_EQ(node.info.allocatable.milli_cpu, 4000);
        } else {
          EXPECT_EQ(node.info.taints.size(), 1u);
          EXPECT_EQ(node.info.allocatable.memory, 8LL << 30);
        }
        return true;
      });
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(meta.resource_version, "1200");
  EXPECT_EQ(meta.continue_token, "token-2");
  EXPECT_EQ(names, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(versions, (std::vector<std::string>{"815", ""}));
}

TEST(ObjectDecoderTest, DecodesPodListPageWithPhasesAndDeletion) {
  const std::string body =
      List("PodList", "99", "",
           {PodJson("a").Realistic().NodeName("n1").Request("cpu", "250m").Phase("Running").Build(),
            PodJson("b").Phase("Succeeded").NodeName("n1").Build(),
            PodJson("c")
                .MetadataField("deletionTimestamp", "\"2026-12-01T00:00:00Z\"")
                .NodeName("n2")
                .Build(),
            PodJson("d").MetadataField("deletionTimestamp", "null").Build()});
  ObjectDecoder decoder;
  ListMeta meta;
  struct Seen {
    std::string name, node, rv;
    bool terminal, deleting;
    int64_t cpu;
  };
  std::vector<Seen> seen;
  const Status status =
      decoder.DecodePodList(RequestBuffer::CopyOf(body), meta, [&](const PodObject& pod) {
        seen.push_back({std::string(pod.info.name), std::string(pod.info.node_name),
                        std::string(pod.resource_version), pod.terminal(), pod.deleting,
                        pod.info.requests.milli_cpu});
        return true;
      });
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(meta.resource_version, "99");
  EXPECT_EQ(meta.continue_token, "");
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].node, "n1");
  EXPECT_EQ(seen[0].rv, "4711");
  EXPECT_EQ(seen[0].cpu, 250);  // FinalizeRequests ran
  EXPECT_FALSE(seen[0].terminal);
  EXPECT_TRUE(seen[1].terminal);
  EXPECT_TRUE(seen[2].deleting);
  EXPECT_FALSE(seen[3].deleting);  // null is absent
}

TEST(ObjectDecoderTest, ListErrorsCarryThePath) {
  const std::string body = List("PodList", "1", "", {PodJson("a").Request("cpu", "5x").Build()});
  ObjectDecoder decoder;
  ListMeta meta;
  const Status status = decoder.DecodePodList(RequestBuffer::CopyOf(body), meta,
                                              [](const PodObject&) { return true; });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "decode PodList: /items/0/spec/containers/0/resources/requests/cpu: invalid quantity "
            "\"5x\"");
}

TEST(ObjectDecoderTest, CallbackCanStopTheWalk) {
  const std::string body =
      List("NodeList", "1", "", {NodeJson("n1").Build(), NodeJson("n2").Build()});
  ObjectDecoder decoder;
  ListMeta meta;
  int calls = 0;
  const Status status = decoder.DecodeNodeList(RequestBuffer::CopyOf(body), meta,
                                               [&](const NodeObject&) { return ++calls < 1; });
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(calls, 1);
}

TEST(ObjectDecoderTest, DecodesEveryPodEventType) {
  const std::string pod = PodJson("p").Realistic().NodeName("n1").Request("cpu", "1").Build();
  struct Case {
    std::string name;
    std::string line;
    WatchEventType type;
    std::string rv;
    std::string pod_name;
  };
  const std::vector<Case> cases = {
      {"added", Event("ADDED", pod), WatchEventType::kAdded, "4711", "p"},
      {"modified", Event("MODIFIED", pod), WatchEventType::kModified, "4711", "p"},
      {"deleted", Event("DELETED", pod), WatchEventType::kDeleted, "4711", "p"},
      {"bookmark",
       Event(
           "BOOKMARK",
           R"({"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"5000","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}})"),
       WatchEventType::kBookmark, "5000", ""},
      // Go writes "type" first, but the order is not guaranteed by JSON.
      {"object first", "{\"object\":" + pod + ",\"type\":\"MODIFIED\"}", WatchEventType::kModified,
       "4711", "p"},
      {"trailing newline", Event("ADDED", pod) + "\n", WatchEventType::kAdded, "4711", "p"},
  };
  ObjectDecoder decoder;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WatchEvent event;
    PodObject object;
    const Status status = decoder.DecodePodEvent(RequestBuffer::CopyOf(c.line), event, object);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(event.type, c.type);
    EXPECT_EQ(object.resource_version, c.rv);
    EXPECT_EQ(object.info.name, c.pod_name);
    if (!c.pod_name.empty()) {
      EXPECT_EQ(object.info.requests.milli_cpu, 1000);
      EXPECT_EQ(object.info.node_name, "n1");
    }
  }
}

TEST(ObjectDecoderTest, DecodesNodeEvents) {
  ObjectDecoder decoder;
  WatchEvent event;
  NodeObject object;
  const Status status = decoder.DecodeNodeEvent(
      RequestBuffer::CopyOf(Event("MODIFIED", NodeJson("n7").Realistic().Build())), event, object);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(event.type, WatchEventType::kModified);
  EXPECT_EQ(object.info.name, "n7");
  EXPECT_EQ(object.resource_version, "815");
}

TEST(ObjectDecoderTest, DecodesErrorEvents) {
  const std::string gone =
      R"json({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (2000)","reason":"Expired","code":410})json";
  struct Case {
    std::string name;
    std::string line;
    int64_t code;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"gone", Event("ERROR", gone), 410, "Expired"},
      {"object first", "{\"object\":" + gone + ",\"type\":\"ERROR\"}", 410, "Expired"},
      {"internal", Event("ERROR", R"({"kind":"Status","status":"Failure","code":500})"), 500, ""},
  };
  ObjectDecoder decoder;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WatchEvent event;
    PodObject object;
    const Status status = decoder.DecodePodEvent(RequestBuffer::CopyOf(c.line), event, object);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(event.type, WatchEventType::kError);
    EXPECT_EQ(event.error_code, c.code);
    EXPECT_EQ(event.error_reason, c.reason);
  }
}

TEST(ObjectDecoderTest, RejectsMalformedEvents) {
  struct Case {
    std::string name;
    std::string line;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"unknown type", Event("RESIZED", "{}"),
       "decode pod watch event: /type: unknown watch event type \"RESIZED\""},
      {"missing type", R"({"object":{}})", "decode pod watch event: missing \"type\""},
      {"missing object", R"({"type":"ADDED"})", "decode pod watch event: missing \"object\""},
      {"truncated", R"({"type":"ADDED","object":{"metadata":)",
       "decode pod watch event: malformed JSON: the document is truncated, unbalanced or "
       "followed by trailing data"},
      {"bad object", Event("ADDED", R"({"spec":{"priority":"x"}})"),
       "decode pod watch event: /object/spec/priority: expected an integer"},
  };
  ObjectDecoder decoder;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WatchEvent event;
    PodObject object;
    const Status status = decoder.DecodePodEvent(RequestBuffer::CopyOf(c.line), event, object);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), c.message);
  }
}

}  // namespace
}  // namespace schedext::wire
