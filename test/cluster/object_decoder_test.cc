// ObjectDecoder: LIST pages and watch events of nodes, pods and config maps.
#include "schedext/wire/object_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
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

std::string ConfigMap(std::string_view ns, std::string_view name, std::string_view rv,
                      std::string_view data) {
  return R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":")" + std::string(name) +
         R"(","namespace":")" + std::string(ns) + R"(","uid":"u-1","resourceVersion":")" +
         std::string(rv) +
         R"(","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"gpushare"}},"data":)" +
         std::string(data) + R"(,"binaryData":{"blob":"AAEC"}})";
}

using Pairs = std::vector<std::pair<std::string, std::string>>;

// The .data of a raw ConfigMap, as its watcher reads it (a decoder of its own).
Pairs DataOf(std::string_view json) {
  ObjectDecoder decoder;
  std::vector<std::pair<std::string_view, std::string_view>> data;
  const Status status = decoder.DecodeStringMap(json, "data", data);
  EXPECT_TRUE(status.ok()) << status.ToString();
  Pairs out;
  for (const auto& [k, v] : data) {
    out.emplace_back(std::string(k), std::string(v));
  }
  return out;
}

TEST(ObjectDecoderTest, DecodesAnyListPageAsRawObjects) {
  const std::string items[] = {
      ConfigMap("kube-system", "unhealthy-gpu-n1", "300",
                R"({"gpus":"0,2","note":"line\nbreak \"quoted\"","b":"1"})"),
      ConfigMap("kube-system", "empty", "301", "null"),
      // Escaped key; a repeated key keeps its place and takes the last value.
      ConfigMap("other", "dup", "302", R"({"k\u0031":"a","x":"1","k1":"b"})")};
  const std::string body = List("ConfigMapList", "310", "next", {items[0], items[1], items[2]});
  ObjectDecoder decoder;
  ListMeta meta;
  struct Seen {
    std::string ns, name, rv, json;
  };
  std::vector<Seen> seen;
  const Status status =
      decoder.DecodeObjectList(RequestBuffer::CopyOf(body), meta, [&](const RawObject& object) {
        seen.push_back({std::string(object.namespace_name), std::string(object.name),
                        std::string(object.resource_version), std::string(object.json)});
        return true;
      });
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(meta.resource_version, "310");
  EXPECT_EQ(meta.continue_token, "next");
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].ns, "kube-system");
  EXPECT_EQ(seen[0].name, "unhealthy-gpu-n1");
  EXPECT_EQ(seen[0].rv, "300");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(seen[i].json, items[i]);  // the object's own bytes, '{' to '}'
  }
  EXPECT_EQ(DataOf(seen[0].json),
            (Pairs{{"gpus", "0,2"}, {"note", "line\nbreak \"quoted\""}, {"b", "1"}}));
  EXPECT_EQ(seen[1].name, "empty");
  EXPECT_TRUE(DataOf(seen[1].json).empty());
  EXPECT_EQ(seen[2].ns, "other");
  EXPECT_EQ(DataOf(seen[2].json), (Pairs{{"k1", "b"}, {"x", "1"}}));
}

TEST(ObjectDecoderTest, DecodesRawObjectEvents) {
  const std::string cm = ConfigMap("ns", "cm", "77", R"({"a":"1"})");
  const std::string widget =
      R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"78"},"spec":{"size":3}})";
  struct Case {
    std::string name;
    std::string line;
    WatchEventType type;
    std::string rv;
    std::string object_name;
    std::string json;
  };
  const std::vector<Case> cases = {
      {"added", Event("ADDED", cm), WatchEventType::kAdded, "77", "cm", cm},
      {"modified", Event("MODIFIED", cm), WatchEventType::kModified, "77", "cm", cm},
      {"deleted", Event("DELETED", cm), WatchEventType::kDeleted, "77", "cm", cm},
      {"object first", "{\"object\":" + cm + ",\"type\":\"MODIFIED\"}",
       WatchEventType::kModified, "77", "cm", cm},
      {"object first, spaced", "{\"object\":" + widget + " \n,\"type\":\"ADDED\"}",
       WatchEventType::kAdded, "78", "w", widget},
      {"custom resource", Event("ADDED", widget), WatchEventType::kAdded, "78", "w", widget},
      {"bookmark",
       Event("BOOKMARK", R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"90"}})"),
       WatchEventType::kBookmark, "90", "",
       R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"90"}})"},
  };
  ObjectDecoder decoder;
  RawObject object;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WatchEvent event;
    // The views may point into the line itself: it must outlive the object's use.
    const RequestBuffer line = RequestBuffer::CopyOf(c.line);
    const Status status = decoder.DecodeObjectEvent(line, event, object);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(event.type, c.type);
    EXPECT_EQ(object.resource_version, c.rv);
    EXPECT_EQ(object.name, c.object_name);
    EXPECT_EQ(object.json, c.json);
  }
  EXPECT_EQ(DataOf(cm), (Pairs{{"a", "1"}}));
  WatchEvent event;
  const Status gone = decoder.DecodeObjectEvent(
      RequestBuffer::CopyOf(Event(
          "ERROR",
          R"({"kind":"Status","status":"Failure","reason":"Expired","message":"too old","code":410})")),
      event, object);
  ASSERT_TRUE(gone.ok()) << gone.ToString();
  EXPECT_EQ(event.type, WatchEventType::kError);
  EXPECT_EQ(event.error_code, 410);
  EXPECT_TRUE(object.name.empty());
  EXPECT_TRUE(object.json.empty());
}

TEST(ObjectDecoderTest, RawObjectErrorsCarryThePath) {
  ObjectDecoder decoder;
  ListMeta meta;
  const Status list = decoder.DecodeObjectList(
      RequestBuffer::CopyOf(List("ConfigMapList", "1", "",
                                 {ConfigMap("ns", "a", "1", R"({"ok":"1"})"),
                                  R"({"metadata":{"name":"b","namespace":5}})"})),
      meta, [](const RawObject&) { return true; });
  EXPECT_EQ(list.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(list.message(), "decode list: /items/1/metadata/namespace: expected a string");
  EXPECT_EQ(meta.resource_version, "");

  struct Case {
    std::string name;
    std::string line;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"name not a string", Event("ADDED", R"({"metadata":{"name":7}})"),
       "decode watch event: /object/metadata/name: expected a string"},
      {"object not an object", Event("MODIFIED", "[]"),
       "decode watch event: /object: expected an object"},
      {"missing object", R"({"type":"ADDED"})", "decode watch event: missing \"object\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WatchEvent event;
    RawObject object;
    const Status status = decoder.DecodeObjectEvent(RequestBuffer::CopyOf(c.line), event, object);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), c.message);
  }
}

TEST(ObjectDecoderTest, StringMapErrorsCarryThePath) {
  ObjectDecoder decoder;
  std::vector<std::pair<std::string_view, std::string_view>> data;
  const Status value = decoder.DecodeStringMap(ConfigMap("ns", "b", "2", R"({"n":5})"), "data", data);
  EXPECT_EQ(value.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(value.message(), "decode object: /data/n: expected a string");
  EXPECT_TRUE(data.empty());
  const Status map = decoder.DecodeStringMap(R"({"metadata":{"name":"a"},"data":[]})", "data", data);
  EXPECT_EQ(map.message(), "decode object: /data: expected an object");
  const Status json = decoder.DecodeStringMap(R"({"data":{"a":"1"})", "data", data);
  EXPECT_EQ(json.code(), StatusCode::kInvalidArgument);
  // Absent: empty, no error; the field is named case-insensitively, as Go does.
  ASSERT_TRUE(decoder.DecodeStringMap(R"({"metadata":{}})", "data", data).ok());
  EXPECT_TRUE(data.empty());
  ASSERT_TRUE(decoder.DecodeStringMap(R"({"Data":{"a":"1"}})", "data", data).ok());
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(data[0].second, "1");
}

}  // namespace
}  // namespace schedext::wire
