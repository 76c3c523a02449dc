// Hostile sizes. Every map a request or a watch event builds from client
// data costs the same work per entry at 1x, 10x and 100x its size: labels,
// annotations, resource names, victims, ConfigMap data, and the cache's copy
// of a pod. Work is counted in key probes (model::KeyProbes), never timed, so
// CI sees a quadratic regression without a wall clock. And an error quotes a
// bounded part of a huge value.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "schedext/model/key_index.h"
#include "schedext/model/owned.h"
#include "schedext/wire/decoder.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::wire {
namespace {

// {"k0":"v",...,"k<n-1>":"v"} with keys "<prefix><i>".
std::string JsonMap(size_t n, std::string_view prefix, std::string_view value) {
  std::string out = "{";
  for (size_t i = 0; i < n; ++i) {
    out.append(i == 0 ? "\"" : ",\"").append(prefix).append(std::to_string(i));
    out.append("\":").append(value);
  }
  return out + "}";
}

enum class Part { kLabels, kAnnotations, kRequests, kPodLevel };

std::string PodJson(Part part, size_t n) {
  const std::string map = JsonMap(n, "example.com/k-", "\"1\"");
  std::string pod = R"({"metadata":{"name":"p","namespace":"d","uid":"u")";
  if (part == Part::kLabels) {
    pod += R"(,"labels":)" + map;
  }
  if (part == Part::kAnnotations) {
    pod += R"(,"annotations":)" + map;
  }
  pod += R"(},"spec":{"containers":[{"name":"c","resources":{"requests":)";
  pod += part == Part::kRequests ? map : std::string(R"({"cpu":"1"})");
  pod += R"(,"limits":)";
  pod += part == Part::kRequests ? map : std::string("{}");
  pod += "}}]";
  if (part == Part::kPodLevel) {
    pod += R"(,"resources":{"requests":)" + map + R"(,"limits":)" + map + "}";
  }
  return pod + "}}";
}

// Probes per entry of decode(n), which must succeed.
template <typename Decode>
double ProbesPerEntry(size_t n, Decode decode) {
  const uint64_t before = model::KeyProbes();
  decode(n);
  return static_cast<double>(model::KeyProbes() - before) / static_cast<double>(n);
}

template <typename Decode>
void ExpectFlat(Decode decode) {
  const double small = ProbesPerEntry(300, decode);
  const double large = ProbesPerEntry(30000, decode);
  EXPECT_GE(small, 1.0) << "no probes counted: the test would not see a scan";
  EXPECT_LE(large, 2 * small) << "probes per entry at 1x " << small << ", at 100x " << large;
}

TEST(DecodeComplexityTest, PodLabelsAnnotationsAndResourceNames) {
  for (const Part part : {Part::kLabels, Part::kAnnotations, Part::kRequests, Part::kPodLevel}) {
    SCOPED_TRACE(static_cast<int>(part));
    RequestDecoder decoder;
    ExtenderArgsView args;
    ExpectFlat([&](size_t n) {
      const RequestBuffer body =
          RequestBuffer::CopyOf(R"({"Pod":)" + PodJson(part, n) + R"(,"NodeNames":["n1"]})");
      const Status status = decoder.DecodeExtenderArgs(body, args);
      ASSERT_TRUE(status.ok()) << status.ToString();
      const std::string last = "example.com/k-" + std::to_string(n - 1);
      switch (part) {
        case Part::kLabels:
          ASSERT_EQ(args.pod.labels.size(), n);
          ASSERT_EQ(args.pod.labels.Find(last), "1");
          break;
        case Part::kAnnotations:
          ASSERT_EQ(args.pod.annotations.size(), n);
          ASSERT_EQ(args.pod.annotations.Find(last), "1");
          break;
        case Part::kRequests:
          ASSERT_EQ(args.pod.requests.scalars.size(), n);
          ASSERT_EQ(args.pod.requests.Get(last), 1);
          ASSERT_EQ(args.pod.limits.Get(last), 1);
          break;
        case Part::kPodLevel:
          ASSERT_EQ(args.pod.pod_level.requests.scalars.size(), n);
          ASSERT_EQ(args.pod.pod_level.requests.Get(last), 1);
          ASSERT_EQ(args.pod.pod_level.limits.Get(last), 1);
          ASSERT_EQ(args.pod.requests.Get(last), 0);  // not a pod-level resource
          break;
      }
    });
  }
}

TEST(DecodeComplexityTest, RepeatedKeysStillKeepTheLastValue) {
  // 20,000 annotations, then the first one again: one entry, the last value.
  std::string map = JsonMap(20000, "example.com/k-", "\"1\"");
  map.back() = ',';
  map += R"("example.com/k-0":"again"})";
  const std::string body = R"({"Pod":{"metadata":{"name":"p","annotations":)" + map +
                           R"(}},"NodeNames":["n1"]})";
  RequestDecoder decoder;
  ExtenderArgsView args;
  const RequestBuffer buffer = RequestBuffer::CopyOf(body);
  ASSERT_TRUE(decoder.DecodeExtenderArgs(buffer, args).ok());
  EXPECT_EQ(args.pod.annotations.size(), 20000u);
  EXPECT_EQ(args.pod.annotations.entries()[0].second, "again");
}

TEST(DecodeComplexityTest, PreemptionVictimsMap) {
  RequestDecoder decoder;
  PreemptionArgsView args;
  ExpectFlat([&](size_t n) {
    std::string body = R"({"Pod":{"metadata":{"name":"p","uid":"u"}},"NodeNameToMetaVictims":{)";
    for (size_t i = 0; i < n; ++i) {
      body += i == 0 ? "\"" : ",\"";
      body += "node-" + std::to_string(i) + R"(":{"Pods":[{"UID":"v)" + std::to_string(i) +
              R"("}],"NumPDBViolations":1})";
    }
    // A repeated node replaces its entry.
    body += R"(,"node-0":{"Pods":[{"UID":"w"}],"NumPDBViolations":2}}})";
    const RequestBuffer buffer = RequestBuffer::CopyOf(body);
    const Status status = decoder.DecodePreemptionArgs(buffer, args);
    ASSERT_TRUE(status.ok()) << status.ToString();
    ASSERT_EQ(args.candidates().size(), n);
    ASSERT_EQ(args.candidates()[0].node, "node-0");
    ASSERT_EQ(args.candidates()[0].pods.size(), 1u);
    ASSERT_EQ(args.candidates()[0].pods[0].uid, "w");
    ASSERT_EQ(args.candidates()[n - 1].pods[0].uid, "v" + std::to_string(n - 1));
  });
}

TEST(DecodeComplexityTest, WatchedPodAndItsCachedCopy) {
  ObjectDecoder decoder;
  ExpectFlat([&](size_t n) {
    const std::string line = R"({"type":"ADDED","object":)" + PodJson(Part::kAnnotations, n) + "}";
    WatchEvent event;
    PodObject object;
    const RequestBuffer buffer = RequestBuffer::CopyOf(line);
    const Status status = decoder.DecodePodEvent(buffer, event, object);
    ASSERT_TRUE(status.ok()) << status.ToString();
    object.info.FinalizeRequests();
    const model::OwnedPod owned(object.info);
    ASSERT_EQ(owned.info().annotations.size(), n);
    ASSERT_EQ(owned.info().annotations.Find("example.com/k-" + std::to_string(n - 1)), "1");
  });
}

TEST(DecodeComplexityTest, WatchedPodLevelResourcesAndTheirCachedCopy) {
  ObjectDecoder decoder;
  ExpectFlat([&](size_t n) {
    const std::string line = R"({"type":"ADDED","object":)" + PodJson(Part::kPodLevel, n) + "}";
    WatchEvent event;
    PodObject object;
    const RequestBuffer buffer = RequestBuffer::CopyOf(line);
    const Status status = decoder.DecodePodEvent(buffer, event, object);
    ASSERT_TRUE(status.ok()) << status.ToString();
    const model::OwnedPod owned(object.info);
    const std::string last = "example.com/k-" + std::to_string(n - 1);
    ASSERT_EQ(owned.info().pod_level.requests.scalars.size(), n);
    ASSERT_EQ(owned.info().pod_level.requests.Get(last), 1);
    ASSERT_EQ(owned.info().pod_level.limits.Get(last), 1);
  });
}

TEST(DecodeComplexityTest, WatchedConfigMapData) {
  ObjectDecoder decoder;
  ObjectDecoder data_decoder;
  ExpectFlat([&](size_t n) {
    const std::string line = R"({"type":"ADDED","object":{"metadata":{"name":"c","namespace":"d"},"data":)" +
                             JsonMap(n, "key-", "\"v\"") + "}}";
    WatchEvent event;
    RawObject object;
    const RequestBuffer buffer = RequestBuffer::CopyOf(line);
    const Status status = decoder.DecodeObjectEvent(buffer, event, object);
    ASSERT_TRUE(status.ok()) << status.ToString();
    // The watcher's read of .data (GpuShare's): its own decoder.
    std::vector<std::pair<std::string_view, std::string_view>> data;
    const Status read = data_decoder.DecodeStringMap(object.json, "data", data);
    ASSERT_TRUE(read.ok()) << read.ToString();
    ASSERT_EQ(data.size(), n);
  });
}

TEST(DecodeComplexityTest, ErrorsQuoteAtMostFortyBytesOfTheInput) {
  RequestDecoder decoder;
  ExtenderArgsView args;
  const std::string digits(size_t{1} << 20, '7');
  for (const std::string& pod :
       {R"({"spec":{"priority":)" + digits + "}}",
        R"({"spec":{"priority":)" + digits + ".5}}",
        R"({"spec":{"overhead":{"cpu":0)" + digits + "}}}",
        R"({"spec":{"resources":{"requests":{"cpu":")" + digits + R"(x"}}}})",
        R"({"spec":{"tolerations":[{"operator":")" + digits + R"("}]}})"}) {
    const RequestBuffer body = RequestBuffer::CopyOf(R"({"Pod":)" + pod + "}");
    const Status status = decoder.DecodeExtenderArgs(body, args);
    ASSERT_FALSE(status.ok());
    EXPECT_LE(status.message().size(), 200u) << status.message().substr(0, 300);
    EXPECT_NE(status.message().find("7777"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace schedext::wire
