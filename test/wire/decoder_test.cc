// RequestDecoder: keys, null/absent/empty, unknown fields, escapes, integers,
// quantities, malformed input, preemption and binding args, decoder reuse
// (protocol doc §7 items 8–14 and 31).
#include "schedext/wire/decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/model/pod_info.h"
#include "testing/json_builders.h"

namespace schedext::wire {
namespace {

using ::schedext::testing::ArgsShape;
using ::schedext::testing::BindingArgsJson;
using ::schedext::testing::ContainerJson;
using ::schedext::testing::ExtenderArgsFullJson;
using ::schedext::testing::ExtenderArgsJson;
using ::schedext::testing::ExtenderArgsNamesJson;
using ::schedext::testing::NodeJson;
using ::schedext::testing::NodeSelectorTermJson;
using ::schedext::testing::PodJson;
using ::schedext::testing::PreemptionArgsJson;
using ::schedext::testing::VictimsJson;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class DecoderTest : public ::testing::Test {
 protected:
  Status Args(std::string_view body) {
    buffer_ = RequestBuffer::CopyOf(body);
    return decoder_.DecodeExtenderArgs(buffer_, args_);
  }
  Status Preemption(std::string_view body) {
    buffer_ = RequestBuffer::CopyOf(body);
    return decoder_.DecodePreemptionArgs(buffer_, preemption_);
  }
  Status Binding(std::string_view body) {
    buffer_ = RequestBuffer::CopyOf(body);
    return decoder_.DecodeBindingArgs(buffer_, binding_);
  }
  // The message of a failed ExtenderArgs decode ("" when it succeeded).
  std::string ArgsError(std::string_view body) {
    const Status status = Args(body);
    EXPECT_FALSE(status.ok()) << body;
    if (status.ok()) {
      return "";
    }
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    return status.message();
  }

  RequestDecoder decoder_;
  RequestBuffer buffer_;
  ExtenderArgsView args_;
  PreemptionArgsView preemption_;
  BindingArgsView binding_;
};

std::string NestedArrays(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
}

// ---- keys -------------------------------------------------------------

TEST_F(DecoderTest, MatchesGoNameKeys) {
  ASSERT_TRUE(Args(R"({"Pod":{"metadata":{"name":"p"}},"Nodes":null,"NodeNames":["a","b"]})").ok());
  EXPECT_TRUE(args_.has_pod);
  EXPECT_EQ(args_.pod.name, "p");
  EXPECT_EQ(args_.mode, NodeMode::kNodeNames);
  EXPECT_THAT(args_.node_names, ElementsAre("a", "b"));
  EXPECT_THAT(args_.nodes, IsEmpty());
}

TEST_F(DecoderTest, MatchesKeysCaseInsensitively) {
  for (std::string_view body : {
           R"({"pod":{"metadata":{"name":"p"}},"nodes":null,"nodenames":["a"]})",
           R"({"POD":{"METADATA":{"NAME":"p"}},"NODES":null,"NODENAMES":["a"]})",
           R"({"pOd":{"MetaData":{"Name":"p"}},"nOdEs":null,"NodeNAMES":["a"]})",
       }) {
    SCOPED_TRACE(body);
    ASSERT_TRUE(Args(body).ok());
    EXPECT_EQ(args_.pod.name, "p");
    EXPECT_EQ(args_.mode, NodeMode::kNodeNames);
    EXPECT_THAT(args_.node_names, ElementsAre("a"));
  }
  ASSERT_TRUE(Args(R"({"pod":null,"nodes":{"ITEMS":[{"Metadata":{"NAME":"n1"}}]}})").ok());
  EXPECT_EQ(args_.mode, NodeMode::kFullNodes);
  EXPECT_THAT(args_.node_names, ElementsAre("n1"));
}

TEST_F(DecoderTest, MatchesEscapedKeys) {
  // "P\u006fd" is "Pod"; "n\u0061me" is "name".
  ASSERT_TRUE(Args(R"({"P\u006fd":{"metadata":{"n\u0061me":"p","labels":{"a\u002fb":"c"}}}})").ok());
  EXPECT_TRUE(args_.has_pod);
  EXPECT_EQ(args_.pod.name, "p");
  EXPECT_EQ(args_.pod.labels.Find("a/b"), "c");
  // A key that only starts like a known one is not it.
  ASSERT_TRUE(Args(R"({"Pod\"x":{"metadata":{"name":"p"}},"Pods":{}})").ok());
  EXPECT_FALSE(args_.has_pod);
}

TEST_F(DecoderTest, DuplicateKeyLastWins) {
  ASSERT_TRUE(Args(R"({"NodeNames":["a"],"nodenames":["b","c"]})").ok());
  EXPECT_THAT(args_.node_names, ElementsAre("b", "c"));

  ASSERT_TRUE(Args(R"({"Pod":{"metadata":{"name":"a","name":"b","labels":{"x":"1","x":"2"}}}})").ok());
  EXPECT_EQ(args_.pod.name, "b");
  EXPECT_EQ(args_.pod.labels.size(), 1u);
  EXPECT_EQ(args_.pod.labels.Find("x"), "2");

  // A repeated map or list replaces the earlier one.
  ASSERT_TRUE(Args(R"({"Pod":{"metadata":{"labels":{"x":"1"},"labels":{"y":"2"}},)"
                   R"("spec":{"tolerations":[{"key":"a"},{"key":"b"}],"tolerations":[{"key":"c"}]}}})")
                  .ok());
  EXPECT_FALSE(args_.pod.labels.Contains("x"));
  EXPECT_EQ(args_.pod.labels.Find("y"), "2");
  ASSERT_EQ(args_.pod.tolerations.size(), 1u);
  EXPECT_EQ(args_.pod.tolerations[0].key, "c");

  // The last of Nodes / NodeNames decides, whatever the casing.
  ASSERT_TRUE(Args(R"({"Nodes":{"items":[{"metadata":{"name":"n1"}}]},"nodes":null,"NodeNames":["x"]})").ok());
  EXPECT_EQ(args_.mode, NodeMode::kNodeNames);
  EXPECT_THAT(args_.node_names, ElementsAre("x"));
  EXPECT_THAT(args_.nodes, IsEmpty());

  ASSERT_TRUE(Args(R"({"Pod":{"metadata":{"name":"a"}},"Pod":null})").ok());
  EXPECT_FALSE(args_.has_pod);
  EXPECT_EQ(args_.pod.name, "");
}

// ---- null, absent, empty ------------------------------------------------

TEST_F(DecoderTest, DistinguishesNullAbsentAndEmpty) {
  ASSERT_TRUE(Args(R"({"Pod":null,"Nodes":null,"NodeNames":null})").ok());
  EXPECT_FALSE(args_.has_pod);
  EXPECT_EQ(args_.mode, NodeMode::kNone);

  ASSERT_TRUE(Args(R"({})").ok());
  EXPECT_FALSE(args_.has_pod);
  EXPECT_EQ(args_.mode, NodeMode::kNone);

  ASSERT_TRUE(Args(R"({"NodeNames":[]})").ok());
  EXPECT_EQ(args_.mode, NodeMode::kNodeNames);
  EXPECT_THAT(args_.node_names, IsEmpty());

  ASSERT_TRUE(Args(R"({"Nodes":{"metadata":{},"items":null},"NodeNames":null})").ok());
  EXPECT_EQ(args_.mode, NodeMode::kFullNodes);
  EXPECT_THAT(args_.nodes, IsEmpty());

  ASSERT_TRUE(Args(R"({"Nodes":{"metadata":{},"items":[]}})").ok());
  EXPECT_EQ(args_.mode, NodeMode::kFullNodes);
  EXPECT_THAT(args_.nodes, IsEmpty());

  ASSERT_TRUE(Args(R"({"Nodes":{}})").ok());
  EXPECT_EQ(args_.mode, NodeMode::kFullNodes);

  ASSERT_TRUE(Args(R"({"Pod":{"metadata":{"name":"p","creationTimestamp":null,"labels":null},)"
                   R"("spec":{"containers":null,"initContainers":null,"priority":null,"nodeSelector":null,)"
                   R"("affinity":null,"tolerations":null,"overhead":null,"nodeName":null},"status":null}})")
                  .ok());
  EXPECT_TRUE(args_.has_pod);
  EXPECT_EQ(args_.pod.name, "p");
  EXPECT_TRUE(args_.pod.labels.empty());
  EXPECT_THAT(args_.pod.containers, IsEmpty());
  EXPECT_EQ(args_.pod.priority, 0);
  EXPECT_EQ(args_.pod.node_name, "");

  // creationTimestamp absent (1.34+) is the same.
  ASSERT_TRUE(Args(R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[]}}})").ok());
  EXPECT_EQ(args_.pod.name, "p");
}

// NodeNames in the usual shape (plain strings) are read from the body in one
// pass; any other shape takes the general path. Both must give the same names
// and errors, and a key after the array must still be read.
TEST_F(DecoderTest, NodeNamesReadInPlaceOrThroughTheParserAlike) {
  const std::string long_name = "ip-10-16-3-7.us-west-2.compute.internal-0123";
  struct Case {
    std::string body;
    std::vector<std::string> want;
    bool views_of_body;
  };
  const std::vector<Case> cases = {
      {R"({"NodeNames":["a","b"]})", {"a", "b"}, true},
      {"{\"NodeNames\":[ \"a\" ,\n\"" + long_name + "\"\t,\r\"c\" ] }", {"a", long_name, "c"},
       true},
      {R"({"NodeNames":[""]})", {""}, true},
      {R"({"NodeNames":[ ]})", {}, true},
      {R"({"NodeNames":["a","b\u0063","d\"e"]})", {"a", "bc", "d\"e"}, false},
      {R"({"NodeNames":["x","y\n"]})", {"x", "y\n"}, false},
      {"{\"NodeNames\":[\"" + long_name + "\\/\"]}", {long_name + "/"}, false},
      {R"({"NodeNames":["a","b"],"Pod":{"metadata":{"name":"p"}}})", {"a", "b"}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    ASSERT_TRUE(Args(c.body).ok());
    EXPECT_EQ(args_.mode, NodeMode::kNodeNames);
    ASSERT_EQ(std::vector<std::string>(args_.node_names.begin(), args_.node_names.end()),
              c.want);
    // names_quoted promises the encoders each name's literal in the body.
    EXPECT_EQ(args_.names_quoted, c.views_of_body);
    if (c.views_of_body) {
      for (std::string_view name : args_.node_names) {
        EXPECT_TRUE(name.data() > buffer_.data() &&
                    name.data() + name.size() < buffer_.data() + buffer_.size());
        EXPECT_EQ(name.data()[-1], '"');
        EXPECT_EQ(name.data()[name.size()], '"');
      }
    }
  }
  // Only the occurrence that counts says whether the names are quoted.
  ASSERT_TRUE(Args(R"({"NodeNames":["a"],"NodeNames":["b\u0063"]})").ok());
  EXPECT_FALSE(args_.names_quoted);
  ASSERT_TRUE(Args(R"({"NodeNames":["b\u0063"],"NodeNames":["a"]})").ok());
  EXPECT_TRUE(args_.names_quoted);
  ASSERT_TRUE(Args(R"({"NodeNames":["a"],"NodeNames":null})").ok());
  EXPECT_FALSE(args_.names_quoted);
  ASSERT_TRUE(Args(R"({"NodeNames":["a"],"Nodes":{"items":[{"metadata":{"name":"n1"}}]}})").ok());
  EXPECT_EQ(args_.mode, NodeMode::kFullNodes);
  EXPECT_FALSE(args_.names_quoted);
  EXPECT_FALSE(Args(R"({"NodeNames":["a"],"Pod":7})").ok());
  EXPECT_FALSE(args_.names_quoted);
  ASSERT_TRUE(Args(R"({"NodeNames":["a","b"],"Pod":{"metadata":{"name":"p"}}})").ok());
  EXPECT_EQ(args_.pod.name, "p");
  EXPECT_EQ(ArgsError(R"({"NodeNames":["a","b")"), ArgsError(R"({"NodeNames":["a","b\u0063")"));
  EXPECT_NE(ArgsError(R"({"NodeNames":["a" "b"]})"), "");
  EXPECT_EQ(ArgsError(R"({"NodeNames":["a",]})"), ArgsError(R"({"NodeNames":["a\u0061",]})"));
  EXPECT_EQ(ArgsError(R"({"NodeNames":{"a":"b"}})"),
            "decode ExtenderArgs: /NodeNames: expected an array");
  // NodeNames last: the walk may stop at the array, but only when nothing but
  // the root's closing brace follows.
  EXPECT_EQ(ArgsError(R"({"NodeNames":["a"]} x)"), ArgsError(R"({"NodeNames":["\u0061"]} x)"));
  EXPECT_EQ(ArgsError(R"({"NodeNames":["a"]}})"), ArgsError(R"({"NodeNames":["\u0061"]}})"));
  EXPECT_EQ(ArgsError(R"({"NodeNames":["a"] x)"), ArgsError(R"({"NodeNames":["\u0061"] x)"));
  EXPECT_EQ(ArgsError(R"({"NodeNames":["a"]])"), ArgsError(R"({"NodeNames":["\u0061"]])"));
  ASSERT_TRUE(Args("{\"NodeNames\":[\"a\"]\n}\n").ok());
  EXPECT_THAT(args_.node_names, ElementsAre("a"));
  ASSERT_TRUE(Args(R"({"NodeNames":["a"],"NodeNames":["b"]} )").ok());
  EXPECT_THAT(args_.node_names, ElementsAre("b"));
  ASSERT_TRUE(Args(R"({"NodeNames":["a"],"Nodes":{"items":[{"metadata":{"name":"n1"}}]}})").ok());
  EXPECT_EQ(args_.mode, NodeMode::kFullNodes);
  EXPECT_THAT(args_.node_names, ElementsAre("n1"));
}

// What a decode produced, as values (the views of the view point into buffers
// that the next decode reuses).
struct DecodedArgs {
  bool ok = false;
  std::string error;
  NodeMode mode = NodeMode::kNone;
  std::vector<std::string> names;
  bool names_quoted = false;
  bool has_pod = false;
  std::string pod_name;
  std::string label;
  std::string annotation;
  size_t tolerations = 0;
  int64_t milli_cpu = 0;

  bool operator==(const DecodedArgs&) const = default;
};

std::ostream& operator<<(std::ostream& os, const DecodedArgs& d) {
  return os << "{ok=" << d.ok << " error=" << d.error << " mode=" << static_cast<int>(d.mode)
            << " names=" << d.names.size() << " quoted=" << d.names_quoted
            << " pod=" << d.has_pod << "/" << d.pod_name << " label=" << d.label
            << " annotation=" << d.annotation.size() << " tolerations=" << d.tolerations
            << " cpu=" << d.milli_cpu << "}";
}

// A names-mode body of 16 KB or more that ends with its NodeNames array is
// decoded from a copy of its head and a scan of the names (decoder.cc); any
// other body through the whole-document walk. Each body below is decoded as
// it is and with an unknown field after its last one (which makes the walk
// read it whole); the two results must be the same, and the fast path must be
// what the plain request took (names straight from the body).
TEST_F(DecoderTest, LargeNamesBodiesDecodeAsTheWholeBodyDoes) {
  std::vector<std::string> names;
  for (int i = 0; i < 600; ++i) {
    names.push_back("ip-10-16-" + std::to_string(i) + ".us-west-2.compute.internal");
  }
  const auto decode = [&](const std::string& body) {
    DecodedArgs d;
    const Status status = Args(body);
    d.ok = status.ok();
    d.error = status.message();
    d.mode = args_.mode;
    d.names.assign(args_.node_names.begin(), args_.node_names.end());
    d.names_quoted = args_.names_quoted;
    d.has_pod = args_.has_pod;
    d.pod_name = std::string(args_.pod.name);
    d.label = std::string(args_.pod.labels.Find("app").value_or("-"));
    d.annotation = std::string(args_.pod.annotations.Find("note").value_or("-"));
    d.tolerations = args_.pod.tolerations.size();
    d.milli_cpu = args_.pod.requests.milli_cpu;
    if (d.ok && d.names_quoted) {
      for (std::string_view name : args_.node_names) {
        EXPECT_TRUE(name.data() > buffer_.data() &&
                    name.data() + name.size() < buffer_.data() + buffer_.size());
        EXPECT_EQ(name.data()[-1], '"');
        EXPECT_EQ(name.data()[name.size()], '"');
      }
    }
    return d;
  };
  const auto with_field_after = [](std::string body) {
    const size_t close = body.find_last_of('}');
    return body.insert(close, ",\"zz\":[0]");
  };
  PodJson pod("p");
  pod.Realistic().Label("app", "web[1]").Annotation("note", "a[\"b\",\"c\"]").Request("cpu", "2");
  const std::string pod_json = pod.Build();
  const std::string array = ::schedext::testing::JsonStringArray(names);
  const std::string plain = ExtenderArgsNamesJson(pod_json, names);
  ASSERT_GE(plain.size(), 16u * 1024);

  std::string spaced = "\n{ \"Pod\" : " + pod_json + " ,\n \"Nodes\" : null ,\n \"NodeNames\" : [\n";
  for (size_t i = 0; i < names.size(); ++i) {
    spaced += (i == 0 ? "  \"" : " ,\n  \"") + names[i] + "\"";
  }
  spaced += "\n ]\n}\n";
  std::vector<std::string> odd = names;
  odd[7] = "n\\u0041me";      // an escape: read through the parser
  std::vector<std::string> accented = names;
  accented[3] = "n\xc3\xa9";  // valid UTF-8, not ASCII
  std::vector<std::string> invalid = names;
  invalid[5] = "n\xff";       // not UTF-8
  std::vector<std::string> bracketed = names;
  bracketed[599] = "n[0]";

  const std::vector<std::string> bodies = {
      plain,
      spaced,
      ExtenderArgsNamesJson("null", names),
      "{\"Pod\":" + pod_json + ",\"NodeNames\":[\"x\"],\"Nodes\":null,\"NodeNames\":" + array + "}",
      "{\"Pod\":" + pod_json + ",\"NodeNames\":" + array + ",\"NodeNames\":[\"x\"]}",
      "{\"NodeNames\":" + array + ",\"Pod\":" + pod_json + "}",
      "{\"Pod\":" + pod_json + ",\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"n1\"}}]}," +
          "\"NodeNames\":" + array + "}",
      "{\"Pod\":" + pod_json + ",\"NodeNames\":" + array + ",\"Nodes\":null}",
      "{\"Pod\":" + pod_json + ",\"Misc\":" + array + "}",
      "{\"Pod\":" + pod_json + ",\"NodeNames\":[\"a\",\"b\"],\"Misc\":" + array + "}",
      "{\"Pod\":" + pod_json + ",\"NodeNames\":[\"a\"],\"Misc\":" + array + ",\"NodeNames\":null}",
      ExtenderArgsNamesJson(pod_json, odd),
      ExtenderArgsNamesJson(pod_json, accented),
      ExtenderArgsNamesJson(pod_json, invalid),
      ExtenderArgsNamesJson(pod_json, bracketed),
      // Broken heads after which the names would scan well.
      "{\"Pod\":{\"spec\":{\"priority\":\"high\"}},\"Nodes\":null,\"NodeNames\":" + array + "}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"Nodes\":null,\"NodeNames\":" + array + "}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}}}},\"NodeNames\":" + array + "}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"x\":\"" + std::string(8, '[') + "\"}}," +
          "\"NodeNames\":[\"a\",\"NodeNames\":" + array + "}",
      "[{\"NodeNames\":" + array + "}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\\\",\\\"NodeNames\\\":" + array + "}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\xff\"}},\"NodeNames\":" + array + "}",
  };
  for (size_t i = 0; i < bodies.size(); ++i) {
    SCOPED_TRACE(i);
    const DecodedArgs fast = decode(bodies[i]);
    const DecodedArgs whole = decode(with_field_after(bodies[i]));
    EXPECT_EQ(fast, whole);
    if (i >= 15) {
      EXPECT_FALSE(fast.ok);
    }
  }
  // The plain request: the pod in full, the names in order, straight from the body.
  const DecodedArgs fast = decode(plain);
  ASSERT_TRUE(fast.ok) << fast.error;
  EXPECT_EQ(fast.names, names);
  EXPECT_TRUE(fast.names_quoted);
  EXPECT_EQ(fast.pod_name, "p");
  EXPECT_EQ(fast.label, "web[1]");
  EXPECT_EQ(fast.annotation, "a[\"b\",\"c\"]");
  EXPECT_EQ(fast.milli_cpu, 2000);
  EXPECT_EQ(decode(spaced), fast);
  // Error messages name the same path as for a small body.
  EXPECT_EQ(decode(bodies[15]).error,
            "decode ExtenderArgs: /Pod/spec/priority: expected an integer");
  // Decoding another request afterwards leaves nothing of the copy behind.
  ASSERT_TRUE(Args(R"({"Pod":{"metadata":{"name":"q"}},"NodeNames":["a"]})").ok());
  EXPECT_EQ(args_.pod.name, "q");
  EXPECT_THAT(args_.node_names, ElementsAre("a"));
}

// What a policy or the reply could read of a decoded ExtenderArgs, as text;
// raw node spans by content and by offset into `body`.
std::string Fingerprint(const Status& status, const ExtenderArgsView& args,
                        const RequestBuffer& body) {
  std::string out = status.message() + "#";
  out += args.has_pod ? "pod " + std::string(args.pod.name) + "/" +
                            std::to_string(args.pod.requests.milli_cpu) + ";"
                      : "nopod;";
  out += std::to_string(static_cast<int>(args.mode)) + ";";
  for (const model::NodeInfo& node : args.nodes) {
    out += std::string(node.name) + "|" + std::string(node.uid) + "|";
    for (const auto& [key, value] : node.labels.entries()) {
      out += std::string(key) + "=" + std::string(value) + ",";
    }
    out += "|" + std::to_string(node.taints.size()) + "|" + std::to_string(node.conditions.size()) +
           (node.unschedulable ? "U" : "u") + "|";
    node.allocatable.ForEach([&](std::string_view name, int64_t amount) {
      out += std::string(name) + ":" + std::to_string(amount) + ",";
    });
    const bool inside = node.raw_json.data() >= body.data() &&
                        node.raw_json.data() + node.raw_json.size() <= body.data() + body.size();
    out += inside ? "@" + std::to_string(node.raw_json.data() - body.data()) : "@outside";
    out += "=" + std::string(node.raw_json) + "\n";
  }
  for (std::string_view name : args.node_names) {
    out += std::string(name) + ",";
  }
  return out;
}

TEST(SplitDecodeTest, LargeFullBodiesDecodeAsTheWholeWalkDoes) {
  std::vector<std::string> nodes;
  for (int i = 0; i < 40; ++i) {
    NodeJson node("node-" + std::to_string(i));
    node.Realistic().Label("zone", i % 2 == 0 ? "a" : "b").Allocatable("cpu", "4").Ready();
    if (i % 7 == 0) {
      node.Taint("dedicated", "gpu", "NoSchedule");
    }
    nodes.push_back(node.Build());
  }
  PodJson pod("p");
  pod.Realistic().Request("cpu", "250m");
  const std::string pod_json = pod.Build();
  const std::string plain = ExtenderArgsFullJson(pod_json, nodes);
  // Nodes whose images are objects that look like nodes: the cut searched
  // for lands between two of those, not between two nodes.
  std::string lookalikes = "[";
  for (int i = 0; i < 50; ++i) {
    lookalikes += i == 0 ? R"({"metadata":{}})" : R"(,{"metadata":{}})";
  }
  lookalikes += "]";
  std::vector<std::string> crafted;
  for (int i = 0; i < 40; ++i) {
    crafted.push_back(NodeJson("crafted-" + std::to_string(i)).StatusField("images", lookalikes).Build());
  }
  std::vector<std::string> bad_second = nodes;
  bad_second[35] = NodeJson("bad").Allocatable("cpu", "4x").Build();
  std::vector<std::string> bad_first = nodes;
  bad_first[2] = NodeJson("bad").Allocatable("cpu", "4x").Build();
  const auto replace = [](std::string body, std::string_view from, std::string_view to) {
    return body.replace(body.find(from), from.size(), to);
  };
  const std::string items = "\"items\":" + ::schedext::testing::JsonArray(nodes);

  struct Case {
    std::string body;
    bool split;  // whether the two-thread walk may keep its result
  };
  const std::vector<Case> cases = {
      {plain, true},
      {"{\"nodes\":{\"ITEMS\":" + ::schedext::testing::JsonArray(nodes) + "},\"Pod\":" + pod_json +
           "}",
       false},  // the Pod after the nodes: merged by the whole walk only
      {"{\"Pod\":" + pod_json + ",\"nodes\":{\"ITEMS\":" + ::schedext::testing::JsonArray(nodes) +
           ",\"metadata\":{}},\"Misc\":[1,{}],\"NodeNames\":[\"x\"]}",
       true},
      {"{\"Pod\":" + pod_json + ",\"Nodes\":{" + items + ",\"items\":[]}}", false},
      {"{\"Pod\":" + pod_json + ",\"Nodes\":{" + items + "},\"Nodes\":null}", false},
      {"{\"Pod\":" + pod_json + ",\"Nodes\":{" + items + "},\"Pod\":null}", false},
      {ExtenderArgsFullJson(pod_json, crafted), false},
      {ExtenderArgsFullJson(pod_json, bad_second), false},
      {ExtenderArgsFullJson(pod_json, bad_first), false},
      {plain + "x", false},
      {replace(plain, "\"NodeNames\":null", "\"NodeNames\":nul"), false},
      {replace(plain, "\"status\":{", "\"status\":[{"), false},
      {plain.substr(0, plain.size() - 30), false},
      {"{\"Pod\":" + pod_json + ",\"Misc\":{" + items + "}}", false},
  };
  DecoderOptions split_always;
  split_always.split_min_bytes = 0;
  DecoderOptions split_never;
  split_never.split_min_bytes = SIZE_MAX;
  RequestDecoder split(split_always);
  RequestDecoder whole(split_never);
  ExtenderArgsView split_args;
  ExtenderArgsView whole_args;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    const RequestBuffer body = RequestBuffer::CopyOf(cases[i].body);
    const Status whole_status = whole.DecodeExtenderArgs(body, whole_args);
    EXPECT_FALSE(whole.last_decode_split());
    // Twice on the same decoder: what the split keeps between requests must
    // not leak into the next one.
    for (int round = 0; round < 2; ++round) {
      const Status split_status = split.DecodeExtenderArgs(body, split_args);
      EXPECT_EQ(Fingerprint(split_status, split_args, body),
                Fingerprint(whole_status, whole_args, body));
      EXPECT_EQ(split.last_decode_split(), cases[i].split);
    }
  }
  // The plain body: every node, each span a run of the body's bytes.
  const RequestBuffer body = RequestBuffer::CopyOf(plain);
  ASSERT_TRUE(split.DecodeExtenderArgs(body, split_args).ok());
  ASSERT_TRUE(split.last_decode_split());
  ASSERT_EQ(split_args.nodes.size(), nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(split_args.nodes[i].raw_json, nodes[i]);
    EXPECT_EQ(split_args.node_names[i], "node-" + std::to_string(i));
  }
  EXPECT_EQ(whole.DecodeExtenderArgs(body, whole_args).message(), "");
  EXPECT_EQ(Fingerprint(OkStatus(), split_args, body), Fingerprint(OkStatus(), whole_args, body));
  // The error of a bad node in the second part is the whole walk's, path included.
  const RequestBuffer bad = RequestBuffer::CopyOf(ExtenderArgsFullJson(pod_json, bad_second));
  EXPECT_THAT(split.DecodeExtenderArgs(bad, split_args).message(),
              HasSubstr("/Nodes/items/35/status/allocatable/cpu"));
  // A small request after a split one.
  const RequestBuffer small = RequestBuffer::CopyOf(R"({"NodeNames":["a"]})");
  ASSERT_TRUE(split.DecodeExtenderArgs(small, split_args).ok());
  EXPECT_THAT(split_args.node_names, ElementsAre("a"));
  EXPECT_TRUE(split_args.nodes.empty());
}

// Full-mode nodes decoded with some optional blocks only: those are as the
// whole decode has them, the others empty; everything else is the same. A
// body offered with other blocks than its decode asks for is walked again.
TEST(SplitDecodeTest, NodeFieldsLeaveTheOtherBlocksEmpty) {
  std::vector<std::string> nodes;
  for (int i = 0; i < 40; ++i) {
    NodeJson node("node-" + std::to_string(i));
    node.Realistic().Label("zone", "a").Allocatable("cpu", "4").Ready();
    node.Taint("dedicated", "gpu", "NoSchedule");
    nodes.push_back(node.Build());
  }
  const std::string text =
      ExtenderArgsFullJson(PodJson("p").Realistic().Request("cpu", "250m").Build(), nodes);
  DecoderOptions split_always;
  split_always.split_min_bytes = 0;
  RequestDecoder decoder(split_always);
  RequestDecoder whole_decoder;
  ExtenderArgsView whole;
  const RequestBuffer reference = RequestBuffer::CopyOf(text);
  ASSERT_TRUE(whole_decoder.DecodeExtenderArgs(reference, whole).ok());
  ASSERT_FALSE(whole.nodes[39].labels.empty());
  ASSERT_GT(whole.nodes[39].allocatable.milli_cpu, 0);
  for (const model::NodeFields offered : {model::NodeFields::kNone, model::NodeFields::kLabels}) {
    for (const model::NodeFields asked : {model::NodeFields::kNone, model::NodeFields::kLabels}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(offered)) + " " +
                   std::to_string(static_cast<int>(asked)));
      RequestBuffer body;
      body.Reserve(text.size());
      for (size_t piece = 0; piece < 10; ++piece) {
        const size_t from = text.size() * piece / 10;
        body.Append(text.data() + from, text.size() * (piece + 1) / 10 - from);
        if (body.size() < text.size()) {
          decoder.DecodeWhileReceiving(body, text.size(), offered);
        }
      }
      ExtenderArgsView args;
      ASSERT_TRUE(decoder.DecodeExtenderArgs(body, args, asked).ok());
      EXPECT_EQ(decoder.last_decode_while_receiving(), offered == asked);
      ASSERT_EQ(args.nodes.size(), whole.nodes.size());
      for (size_t i = 0; i < args.nodes.size(); ++i) {
        const model::NodeInfo& node = args.nodes[i];
        EXPECT_EQ(node.name, whole.nodes[i].name);
        EXPECT_EQ(node.raw_json, nodes[i]);
        EXPECT_EQ(node.taints.size(), 1U);
        EXPECT_EQ(node.condition_summary, whole.nodes[i].condition_summary);
        EXPECT_EQ(node.labels.empty(), asked == model::NodeFields::kNone) << i;
        EXPECT_TRUE(node.annotations.empty());
        EXPECT_EQ(node.allocatable.milli_cpu, 0);
      }
    }
  }
}

// The same bodies offered as they arrive (what the listener does): in pieces,
// each offered before the next is appended; the whole body then decodes as
// the whole walk does, and the plain one through the head walked early.
TEST(SplitDecodeTest, BodiesOfferedWhileArrivingDecodeAsTheWholeWalkDoes) {
  std::vector<std::string> nodes;
  for (int i = 0; i < 40; ++i) {
    NodeJson node("node-" + std::to_string(i));
    node.Realistic().Label("zone", i % 2 == 0 ? "a" : "b").Allocatable("cpu", "4").Ready();
    nodes.push_back(node.Build());
  }
  const std::string pod_json = PodJson("p").Realistic().Request("cpu", "250m").Build();
  const std::string plain = ExtenderArgsFullJson(pod_json, nodes);
  std::vector<std::string> bad_tail = nodes;
  bad_tail[36] = NodeJson("bad").Allocatable("cpu", "4x").Build();
  std::vector<std::string> bad_head = nodes;
  bad_head[3] = NodeJson("bad").Allocatable("cpu", "4x").Build();
  const std::string items = "\"items\":" + ::schedext::testing::JsonArray(nodes);
  struct Case {
    std::string body;
    bool early;  // whether the early head's result may be kept
  };
  const std::vector<Case> cases = {
      {plain, true},
      {"{\"Pod\":" + pod_json + ",\"Nodes\":{" + items + "},\"Pod\":null}", false},
      {"{\"Pod\":" + pod_json + ",\"Nodes\":{" + items + ",\"items\":[]}}", false},
      {ExtenderArgsFullJson(pod_json, bad_tail), false},
      {ExtenderArgsFullJson(pod_json, bad_head), false},
      {plain.substr(0, plain.size() - 30) + std::string(30, ' '), false},
      {R"({"NodeNames":["a","b"]})" + std::string(200000, ' '), false},
  };
  DecoderOptions split_always;
  split_always.split_min_bytes = 0;
  DecoderOptions split_never;
  split_never.split_min_bytes = SIZE_MAX;
  RequestDecoder early(split_always);
  RequestDecoder whole(split_never);
  ExtenderArgsView early_args;
  ExtenderArgsView whole_args;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string& text = cases[i].body;
    const RequestBuffer reference = RequestBuffer::CopyOf(text);
    const Status whole_status = whole.DecodeExtenderArgs(reference, whole_args);
    for (const size_t pieces : {size_t{2}, size_t{5}, size_t{40}}) {
      SCOPED_TRACE(std::to_string(i) + " in " + std::to_string(pieces) + " pieces");
      RequestBuffer body;
      body.Reserve(text.size());
      bool offer = true;
      for (size_t piece = 0; piece < pieces; ++piece) {
        const size_t from = text.size() * piece / pieces;
        const size_t to = text.size() * (piece + 1) / pieces;
        body.Append(text.data() + from, to - from);
        if (offer && body.size() < text.size()) {
          offer = early.DecodeWhileReceiving(body, text.size());
        }
      }
      const Status early_status = early.DecodeExtenderArgs(body, early_args);
      EXPECT_EQ(Fingerprint(early_status, early_args, body),
                Fingerprint(whole_status, whole_args, reference));
      // In two pieces nothing past the cut has arrived before the last.
      EXPECT_EQ(early.last_decode_while_receiving(), cases[i].early && pieces > 2);
    }
  }
  // A body offered and then not decoded: another body, a preemption and a
  // settled decoder each get their own result.
  RequestBuffer partial;
  partial.Reserve(plain.size());
  partial.Append(plain.data(), plain.size() * 9 / 10);
  ASSERT_TRUE(early.DecodeWhileReceiving(partial, plain.size()));
  const RequestBuffer small = RequestBuffer::CopyOf(R"({"NodeNames":["a"]})");
  ASSERT_TRUE(early.DecodeExtenderArgs(small, early_args).ok());
  EXPECT_FALSE(early.last_decode_while_receiving());
  EXPECT_THAT(early_args.node_names, ElementsAre("a"));
  ASSERT_TRUE(early.DecodeWhileReceiving(partial, plain.size()));
  PreemptionArgsView preemption;
  EXPECT_TRUE(early.DecodePreemptionArgs(RequestBuffer::CopyOf(R"({"Pod":null})"), preemption).ok());
  ASSERT_TRUE(early.DecodeWhileReceiving(partial, plain.size()));
  early.Settle();
  partial.Clear();
  const RequestBuffer body = RequestBuffer::CopyOf(plain);
  ASSERT_TRUE(early.DecodeExtenderArgs(body, early_args).ok());
  EXPECT_EQ(Fingerprint(OkStatus(), early_args, body),
            Fingerprint(whole.DecodeExtenderArgs(body, whole_args), whole_args, body));
}

TEST_F(DecoderTest, FullNodesWinOverNodeNames) {
  ASSERT_TRUE(Args(R"({"NodeNames":["x","y"],"Nodes":{"items":[{"metadata":{"name":"n1"}}]}})").ok());
  EXPECT_EQ(args_.mode, NodeMode::kFullNodes);
  EXPECT_THAT(args_.node_names, ElementsAre("n1"));
}

// ---- unknown fields -----------------------------------------------------

TEST_F(DecoderTest, IgnoresUnknownFieldsAtEveryLevel) {
  PodJson pod("web-1");
  pod.Realistic()
      .Label("app", "web")
      .MetadataField("ownerReferences", R"([{"kind":"ReplicaSet","name":"web","controller":true}])")
      .SpecField("futureField", R"({"a":[1,2,{"b":null}],"c":"d"})")
      .StatusField("containerStatuses", "[]")
      .Container(ContainerJson("c").Request("cpu", "100m").Field("ports", R"([{"containerPort":80}])"));
  NodeJson node("n1");
  node.Realistic().Label("zone", "a").Allocatable("cpu", "4").Ready();
  std::string body = ExtenderArgsFullJson(pod.Build(), {node.Build()});
  // kind / apiVersion and unknown keys at the top of every object.
  body.insert(1, R"("kind":"ExtenderArgs","apiVersion":"v1","Future":{"Pod":{"metadata":{"name":"no"}}},)");
  ASSERT_TRUE(Args(body).ok()) << Args(body).message();
  EXPECT_EQ(args_.pod.name, "web-1");
  EXPECT_EQ(args_.pod.labels.Find("app"), "web");
  ASSERT_EQ(args_.pod.containers.size(), 1u);
  EXPECT_EQ(args_.pod.containers[0].requests.milli_cpu, 100);
  ASSERT_EQ(args_.nodes.size(), 1u);
  EXPECT_EQ(args_.nodes[0].name, "n1");
  EXPECT_EQ(args_.nodes[0].labels.Find("zone"), "a");
  EXPECT_EQ(args_.nodes[0].allocatable.milli_cpu, 4000);
  EXPECT_EQ(args_.nodes[0].ConditionStatus("Ready"), "True");
}

// ---- strings --------------------------------------------------------------

TEST_F(DecoderTest, DecodesStringEscapes) {
  ASSERT_TRUE(Args(R"({"Pod":{"metadata":{"name":"p","labels":{)"
                   R"("amp":"a\u0026b","lt":"\u003cx\u003e","emoji":"\ud83d\ude00","slash":"a\/b",)"
                   R"("quote":"say \"hi\"\n","utf8":"größe"}}}})")
                  .ok());
  const model::StringMap& labels = args_.pod.labels;
  EXPECT_EQ(labels.Find("amp"), "a&b");
  EXPECT_EQ(labels.Find("lt"), "<x>");
  EXPECT_EQ(labels.Find("emoji"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(labels.Find("slash"), "a/b");
  EXPECT_EQ(labels.Find("quote"), "say \"hi\"\n");
  EXPECT_EQ(labels.Find("utf8"), "gr\xC3\xB6\xC3\x9F" "e");
}

TEST_F(DecoderTest, RejectsBadStringEscapes) {
  EXPECT_THAT(ArgsError(R"({"Pod":{"metadata":{"name":"a\x"}}})"),
              HasSubstr("decode ExtenderArgs: /Pod/metadata/name: malformed JSON"));
  EXPECT_THAT(ArgsError(R"({"Pod":{"metadata":{"name":"\ud83d"}}})"),
              HasSubstr("/Pod/metadata/name: malformed JSON"));
}

// ---- integers ---------------------------------------------------------------

TEST_F(DecoderTest, ReadsPriorityAsInt32) {
  ASSERT_TRUE(Args(R"({"Pod":{"spec":{"priority":-5}}})").ok());
  EXPECT_EQ(args_.pod.priority, -5);
  ASSERT_TRUE(Args(R"({"Pod":{"spec":{"priority":2000001000}}})").ok());
  EXPECT_EQ(args_.pod.priority, 2000001000);
  ASSERT_TRUE(Args(R"({"Pod":{"spec":{"priority":-2147483648}}})").ok());
  EXPECT_EQ(args_.pod.priority, INT32_MIN);

  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"priority":2147483648}}})"),
            "decode ExtenderArgs: /Pod/spec/priority: integer 2147483648 is out of the int32 range");
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"priority":9223372036854775808}}})"),
            "decode ExtenderArgs: /Pod/spec/priority: integer 9223372036854775808 is out of the "
            "int64 range");
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"priority":"5"}}})"),
            "decode ExtenderArgs: /Pod/spec/priority: expected an integer");
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"priority":5.0}}})"),
            "decode ExtenderArgs: /Pod/spec/priority: expected an integer, got 5.0");
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"priority":5e0}}})"),
            "decode ExtenderArgs: /Pod/spec/priority: expected an integer, got 5e0");
}

TEST_F(DecoderTest, ReadsInt64EdgeValues) {
  ASSERT_TRUE(Preemption(R"({"NodeNameToMetaVictims":{)"
                         R"("a":{"Pods":[{"UID":"u1"}],"NumPDBViolations":9223372036854775807},)"
                         R"("b":{"Pods":[{"UID":"u2"}],"NumPDBViolations":-9223372036854775808}}})")
                  .ok());
  ASSERT_EQ(preemption_.node_count, 2u);
  EXPECT_EQ(preemption_.candidates()[0].num_pdb_violations, INT64_MAX);
  EXPECT_EQ(preemption_.candidates()[1].num_pdb_violations, INT64_MIN);

  // Big integers in skipped fields (images[].sizeBytes) are never read.
  NodeJson node("n1");
  node.StatusField("images", R"([{"names":["x"],"sizeBytes":99999999999999999999999}])");
  ASSERT_TRUE(Args(ExtenderArgsFullJson("{}", {node.Build()})).ok());
}

TEST_F(DecoderTest, RejectsWrongTypes) {
  EXPECT_EQ(ArgsError(R"({"Pod":[]})"), "decode ExtenderArgs: /Pod: expected an object");
  EXPECT_EQ(ArgsError(R"({"NodeNames":"x"})"), "decode ExtenderArgs: /NodeNames: expected an array");
  EXPECT_EQ(ArgsError(R"({"NodeNames":["a",1]})"),
            "decode ExtenderArgs: /NodeNames/1: expected a string");
  EXPECT_EQ(ArgsError(R"({"NodeNames":[null]})"),
            "decode ExtenderArgs: /NodeNames/0: expected a string");
  EXPECT_EQ(ArgsError(R"({"Nodes":[]})"), "decode ExtenderArgs: /Nodes: expected an object");
  EXPECT_EQ(ArgsError(R"({"Nodes":{"items":[null]}})"),
            "decode ExtenderArgs: /Nodes/items/0: expected an object");
  EXPECT_EQ(ArgsError(R"({"Pod":{"metadata":{"name":5}}})"),
            "decode ExtenderArgs: /Pod/metadata/name: expected a string");
  EXPECT_EQ(ArgsError(R"({"Pod":{"metadata":{"labels":{"a":true}}}})"),
            "decode ExtenderArgs: /Pod/metadata/labels/a: expected a string");
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"containers":{}}}})"),
            "decode ExtenderArgs: /Pod/spec/containers: expected an array");
  EXPECT_EQ(ArgsError(R"({"Nodes":{"items":[{"spec":{"unschedulable":"true"}}]}})"),
            "decode ExtenderArgs: /Nodes/items/0/spec/unschedulable: expected a boolean");

  std::vector<std::string> items;
  for (int i = 0; i < 3; ++i) {
    items.push_back(NodeJson("n" + std::to_string(i)).Label("a", "b").Build());
  }
  items.push_back(R"({"metadata":{"name":"n3","labels":["a"]}})");
  EXPECT_EQ(ArgsError(ExtenderArgsFullJson("{}", items)),
            "decode ExtenderArgs: /Nodes/items/3/metadata/labels: expected an object");
}

TEST_F(DecoderTest, RejectsInvalidLiterals) {
  EXPECT_THAT(ArgsError(R"({"Pod":nul})"), HasSubstr("/Pod: malformed JSON"));
  EXPECT_THAT(ArgsError(R"({"Nodes":{"items":[{"spec":{"unschedulable":tru}}]}})"),
              HasSubstr("/Nodes/items/0/spec/unschedulable: malformed JSON"));
}

// ---- document framing ---------------------------------------------------

TEST_F(DecoderTest, AcceptsTrailingWhitespace) {
  ASSERT_TRUE(Args("{\"NodeNames\":[\"a\"]}\n").ok());
  EXPECT_THAT(args_.node_names, ElementsAre("a"));
  ASSERT_TRUE(Args(" \t\r\n{\"NodeNames\":[\"a\"]} \r\n\t ").ok());
  EXPECT_THAT(args_.node_names, ElementsAre("a"));
}

TEST_F(DecoderTest, DecodesNullBodyToEmptyView) {
  ASSERT_TRUE(Args(R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":["a"]})").ok());
  for (std::string_view body : {"null", "null\n", " null "}) {
    ASSERT_TRUE(Args(body).ok()) << body;
    EXPECT_FALSE(args_.has_pod);
    EXPECT_EQ(args_.pod.name, "");
    EXPECT_EQ(args_.mode, NodeMode::kNone);
    EXPECT_THAT(args_.node_names, IsEmpty());
    EXPECT_THAT(args_.nodes, IsEmpty());
  }
  ASSERT_TRUE(Preemption("null").ok());
  EXPECT_FALSE(preemption_.has_pod);
  EXPECT_EQ(preemption_.node_count, 0u);
  ASSERT_TRUE(Binding("null\n").ok());
  EXPECT_EQ(binding_.pod_name, "");
}

TEST_F(DecoderTest, RejectsEmptyBody) {
  EXPECT_EQ(ArgsError(""), "decode ExtenderArgs: empty body");
  EXPECT_EQ(ArgsError(" \n"), "decode ExtenderArgs: empty body");
  RequestBuffer never_filled;
  const Status status = decoder_.DecodeExtenderArgs(never_filled, args_);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "decode ExtenderArgs: empty body");
  EXPECT_EQ(Preemption("").message(), "decode PreemptionArgs: empty body");
  EXPECT_EQ(Binding("").message(), "decode BindingArgs: empty body");
}

TEST_F(DecoderTest, RejectsNonObjectDocuments) {
  for (std::string_view body : {"[]", "[{\"Pod\":null}]", "\"Pod\"", "5", "true", "nul"}) {
    EXPECT_EQ(ArgsError(body), "decode ExtenderArgs: expected a JSON object") << body;
  }
}

TEST_F(DecoderTest, RejectsTrailingGarbage) {
  EXPECT_EQ(ArgsError(R"({"NodeNames":["a"]}{})"),
            "decode ExtenderArgs: trailing data after the JSON document");
  EXPECT_THAT(ArgsError(R"({"NodeNames":["a"]}})"), HasSubstr("decode ExtenderArgs: "));
  EXPECT_THAT(ArgsError(R"({"NodeNames":["a"]} x)"), HasSubstr("malformed JSON"));
  EXPECT_THAT(ArgsError(R"({"NodeNames":["a"]}])"), HasSubstr("malformed JSON"));
  EXPECT_THAT(Binding(R"({"PodName":"a"} 5)").message(), HasSubstr("decode BindingArgs: "));
}

TEST_F(DecoderTest, RejectsEveryTruncation) {
  PodJson pod("p");
  pod.Realistic().Label("a", "b").Request("cpu", "1").Toleration("k", "Exists");
  const std::string args = ExtenderArgsJson(pod, {NodeJson("n1").Realistic().Taint("t", "v", "NoSchedule")},
                                            ArgsShape::kFullNodes);
  const std::string preemption =
      PreemptionArgsJson(pod, {{"n1", {PodJson("v1"), PodJson("v2")}, 1}}, ArgsShape::kFullNodes);
  const std::string binding = BindingArgsJson("p", "default", "uid-p", "n1");
  ASSERT_TRUE(Args(args).ok());
  ASSERT_TRUE(Preemption(preemption).ok());
  ASSERT_TRUE(Binding(binding).ok());
  for (size_t length = 0; length < args.size(); ++length) {
    const Status status = Args(std::string_view(args).substr(0, length));
    ASSERT_FALSE(status.ok()) << length;
    ASSERT_EQ(status.code(), StatusCode::kInvalidArgument) << length;
    ASSERT_THAT(status.message(), HasSubstr("decode ExtenderArgs: ")) << length;
  }
  for (size_t length = 0; length < preemption.size(); ++length) {
    const Status status = Preemption(std::string_view(preemption).substr(0, length));
    ASSERT_EQ(status.code(), StatusCode::kInvalidArgument) << length;
  }
  for (size_t length = 0; length < binding.size(); ++length) {
    const Status status = Binding(std::string_view(binding).substr(0, length));
    ASSERT_EQ(status.code(), StatusCode::kInvalidArgument) << length;
  }
}

TEST_F(DecoderTest, SurvivesDeepNesting) {
  // simdjson 3.0.1 on-demand enforces no depth limit: a balanced deep value in
  // an unknown field is skipped iteratively (no recursion) and decoding succeeds.
  const std::string deep = NestedArrays(10000);
  ASSERT_TRUE(Args(R"({"Pod":{"metadata":{"name":"p","future":)" + deep + R"(}},"NodeNames":["a"]})").ok());
  EXPECT_EQ(args_.pod.name, "p");
  EXPECT_THAT(args_.node_names, ElementsAre("a"));

  // Where a known field is expected the first level already fails.
  EXPECT_EQ(ArgsError(R"({"Pod":{"metadata":{"labels":)" + deep + "}}}"),
            "decode ExtenderArgs: /Pod/metadata/labels: expected an object");
  EXPECT_EQ(ArgsError(R"({"NodeNames":)" + deep + "}"),
            "decode ExtenderArgs: /NodeNames/0: expected a string");

  // Unbalanced deep nesting is malformed.
  const std::string open(100000, '[');
  EXPECT_THAT(ArgsError(R"({"future":)" + open + "}"), HasSubstr("malformed JSON"));
  EXPECT_THAT(ArgsError(R"({"future":)" + open), HasSubstr("malformed JSON"));
  const std::string objects = [] {
    std::string s;
    for (int i = 0; i < 50000; ++i) s += R"({"a":)";
    return s;
  }();
  EXPECT_THAT(ArgsError(R"({"future":)" + objects + "1}"), HasSubstr("malformed JSON"));
}

// ---- quantities -----------------------------------------------------------

TEST_F(DecoderTest, ReadsQuantitiesAsStringsAndNumbers) {
  PodJson pod("p");
  pod.Container(ContainerJson("a")
                    .RequestJson("cpu", "2")
                    .RequestJson("memory", "1.5")
                    .RequestJson("example.com/gpu", "1e3")
                    .Limit("cpu", " 100m ")
                    .LimitJson("memory", "null"))
      .Container(ContainerJson("b").Request("cpu", "0").Request("ephemeral-storage", "1Gi"))
      .Container(ContainerJson("c").RequestJson("cpu", "null").Request("pods", "1"));
  ASSERT_TRUE(Args(ExtenderArgsNamesJson(pod.Build(), {"n1"})).ok());
  ASSERT_EQ(args_.pod.containers.size(), 3u);
  const model::ContainerResources& a = args_.pod.containers[0];
  EXPECT_EQ(a.requests.milli_cpu, 2000);
  EXPECT_EQ(a.requests.memory, 2);  // ceil(1.5)
  EXPECT_EQ(a.requests.Get("example.com/gpu"), 1000);
  EXPECT_TRUE(a.has_cpu_request);
  EXPECT_TRUE(a.has_memory_request);
  EXPECT_EQ(a.limits.milli_cpu, 100);
  EXPECT_EQ(a.limits.memory, 0);
  const model::ContainerResources& b = args_.pod.containers[1];
  EXPECT_EQ(b.requests.milli_cpu, 0);
  EXPECT_TRUE(b.has_cpu_request);
  EXPECT_FALSE(b.has_memory_request);
  EXPECT_EQ(b.requests.ephemeral_storage, 1073741824);
  const model::ContainerResources& c = args_.pod.containers[2];
  EXPECT_TRUE(c.has_cpu_request);  // "cpu": null names cpu with a zero amount
  EXPECT_EQ(c.requests.milli_cpu, 0);
  EXPECT_EQ(c.requests.pods, 1);
}

TEST_F(DecoderTest, RejectsInvalidQuantitiesWithPath) {
  PodJson pod("p");
  pod.Container(ContainerJson("a").Request("memory", "1Gi").Request("cpu", "5x"));
  EXPECT_EQ(ArgsError(ExtenderArgsNamesJson(pod.Build(), {"n1"})),
            R"(decode ExtenderArgs: /Pod/spec/containers/0/resources/requests/cpu: invalid quantity "5x")");

  NodeJson node("n1");
  node.Allocatable("cpu", "4").Allocatable("memory", "4K");
  EXPECT_EQ(ArgsError(ExtenderArgsFullJson("{}", {NodeJson("n0").Build(), node.Build()})),
            R"(decode ExtenderArgs: /Nodes/items/1/status/allocatable/memory: invalid quantity "4K")");

  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"overhead":{"cpu":""}}}})"),
            R"(decode ExtenderArgs: /Pod/spec/overhead/cpu: invalid quantity "")");
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"overhead":{"cpu":true}}}})"),
            "decode ExtenderArgs: /Pod/spec/overhead/cpu: expected a quantity (a string or a number)");
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"overhead":{"cpu":01}}}})"),
            "decode ExtenderArgs: /Pod/spec/overhead/cpu: malformed JSON: invalid number 01");
}

// ---- pod and node content ------------------------------------------------

TEST_F(DecoderTest, DecodesPodFields) {
  PodJson pod("web-1");
  pod.Namespace("shop")
      .Uid("u-1")
      .Label("app", "web")
      .Annotation("note", "x")
      .NodeName("n9")
      .Priority(1000)
      .PriorityClassName("high")
      .PreemptionPolicy("Never")
      .NodeSelector("disk", "ssd")
      .Toleration("", "Exists")
      .Toleration("gpu", "Equal", "yes", "NoSchedule")
      .Toleration("k", "", "v", "NoExecute")
      .RequiredTerm(NodeSelectorTermJson()
                        .MatchExpression("zone", "In", {"a", "b"})
                        .MatchField("metadata.name", "NotIn", {"n2"}))
      .RequiredTerm(NodeSelectorTermJson().MatchExpression("gpu", "Exists"))
      .PreferredTerm(20, NodeSelectorTermJson().MatchExpression("cores", "Gt", {"8"}))
      .Phase("Pending")
      .NominatedNodeName("n3");
  ASSERT_TRUE(Args(ExtenderArgsNamesJson(pod.Build(), {"n1"})).ok());
  const model::PodInfo& p = args_.pod;
  EXPECT_EQ(p.name, "web-1");
  EXPECT_EQ(p.namespace_name, "shop");
  EXPECT_EQ(p.uid, "u-1");
  EXPECT_EQ(p.labels.Find("app"), "web");
  EXPECT_EQ(p.annotations.Find("note"), "x");
  EXPECT_EQ(p.node_name, "n9");
  EXPECT_EQ(p.priority, 1000);
  EXPECT_EQ(p.priority_class_name, "high");
  EXPECT_EQ(p.preemption_policy, "Never");
  EXPECT_EQ(p.node_selector.Find("disk"), "ssd");
  EXPECT_EQ(p.phase, "Pending");
  EXPECT_EQ(p.nominated_node_name, "n3");

  ASSERT_EQ(p.tolerations.size(), 3u);
  EXPECT_EQ(p.tolerations[0].key, "");
  EXPECT_EQ(p.tolerations[0].op, model::TolerationOperator::kExists);
  EXPECT_FALSE(p.tolerations[0].effect.has_value());
  EXPECT_EQ(p.tolerations[1].key, "gpu");
  EXPECT_EQ(p.tolerations[1].op, model::TolerationOperator::kEqual);
  EXPECT_EQ(p.tolerations[1].value, "yes");
  EXPECT_EQ(p.tolerations[1].effect, model::TaintEffect::kNoSchedule);
  EXPECT_EQ(p.tolerations[2].op, model::TolerationOperator::kEqual);  // default
  EXPECT_EQ(p.tolerations[2].effect, model::TaintEffect::kNoExecute);

  EXPECT_TRUE(p.has_required_node_affinity);
  ASSERT_EQ(p.required_node_affinity.size(), 2u);
  const model::NodeSelectorTerm& term = p.required_node_affinity[0];
  ASSERT_EQ(term.match_expressions.size(), 1u);
  EXPECT_EQ(term.match_expressions[0].key, "zone");
  EXPECT_EQ(term.match_expressions[0].op, model::SelectorOperator::kIn);
  EXPECT_THAT(term.match_expressions[0].values, ElementsAre("a", "b"));
  ASSERT_EQ(term.match_fields.size(), 1u);
  EXPECT_EQ(term.match_fields[0].key, "metadata.name");
  EXPECT_EQ(term.match_fields[0].op, model::SelectorOperator::kNotIn);
  EXPECT_THAT(term.match_fields[0].values, ElementsAre("n2"));
  EXPECT_EQ(p.required_node_affinity[1].match_expressions[0].op, model::SelectorOperator::kExists);
  EXPECT_THAT(p.required_node_affinity[1].match_expressions[0].values, IsEmpty());
  ASSERT_EQ(p.preferred_node_affinity.size(), 1u);
  EXPECT_EQ(p.preferred_node_affinity[0].weight, 20);
  EXPECT_EQ(p.preferred_node_affinity[0].preference.match_expressions[0].op,
            model::SelectorOperator::kGt);
}

TEST_F(DecoderTest, DistinguishesEmptyFromAbsentRequiredAffinity) {
  ASSERT_TRUE(Args(R"({"Pod":{"spec":{"affinity":{"nodeAffinity":{)"
                   R"("requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}}}})")
                  .ok());
  EXPECT_TRUE(args_.pod.has_required_node_affinity);
  EXPECT_THAT(args_.pod.required_node_affinity, IsEmpty());
  ASSERT_TRUE(Args(R"({"Pod":{"spec":{"affinity":{"nodeAffinity":{)"
                   R"("requiredDuringSchedulingIgnoredDuringExecution":null}}}}})")
                  .ok());
  EXPECT_FALSE(args_.pod.has_required_node_affinity);
  ASSERT_TRUE(Args(R"({"Pod":{"spec":{"affinity":{"podAntiAffinity":{}}}}})").ok());
  EXPECT_FALSE(args_.pod.has_required_node_affinity);
}

TEST_F(DecoderTest, RejectsUnknownOperatorsAndEffects) {
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"tolerations":[{"key":"a"},{"key":"b","operator":"exists"}]}}})"),
            R"(decode ExtenderArgs: /Pod/spec/tolerations/1/operator: unknown toleration operator "exists")");
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"tolerations":[{"effect":"NoWay"}]}}})"),
            R"(decode ExtenderArgs: /Pod/spec/tolerations/0/effect: unknown taint effect "NoWay")");
  EXPECT_EQ(
      ArgsError(R"({"Pod":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":)"
                R"({"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Like"}]}]}}}}}})"),
      "decode ExtenderArgs: /Pod/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
      R"(nodeSelectorTerms/0/matchExpressions/0/operator: unknown selector operator "Like")");
  EXPECT_EQ(ArgsError(R"({"Nodes":{"items":[{"spec":{"taints":[{"key":"a","effect":"Sometimes"}]}}]}})"),
            R"(decode ExtenderArgs: /Nodes/items/0/spec/taints/0/effect: unknown taint effect "Sometimes")");
}

TEST_F(DecoderTest, DecodesSidecarInitContainersAndOverhead) {
  PodJson pod("p");
  pod.InitContainer(ContainerJson("init").Request("cpu", "2").Request("memory", "1Gi"))
      .InitContainer(ContainerJson("sidecar").RestartPolicy("Always").Request("cpu", "250m"))
      .InitContainer(ContainerJson("odd").RestartPolicy("OnFailure"))
      .Container(ContainerJson("main").Request("cpu", "500m").Request("memory", "256Mi"))
      .Overhead("cpu", "100m")
      .Overhead("memory", "64Mi");
  ASSERT_TRUE(Args(ExtenderArgsNamesJson(pod.Build(), {"n1"})).ok());
  const model::PodInfo& p = args_.pod;
  ASSERT_EQ(p.init_containers.size(), 3u);
  EXPECT_FALSE(p.init_containers[0].restartable);
  EXPECT_TRUE(p.init_containers[1].restartable);
  EXPECT_FALSE(p.init_containers[2].restartable);
  EXPECT_EQ(p.init_containers[0].requests.milli_cpu, 2000);
  EXPECT_EQ(p.init_containers[1].requests.milli_cpu, 250);
  EXPECT_TRUE(p.init_containers[1].has_cpu_request);
  EXPECT_FALSE(p.init_containers[1].has_memory_request);
  ASSERT_EQ(p.containers.size(), 1u);
  EXPECT_FALSE(p.containers[0].restartable);
  EXPECT_EQ(p.overhead.milli_cpu, 100);
  EXPECT_EQ(p.overhead.memory, 64 * 1024 * 1024);
  // FinalizeRequests ran on the decoded parts.
  EXPECT_EQ(p.requests,
            model::EffectiveRequests(p.containers, p.init_containers, p.pod_level, p.overhead));
  EXPECT_EQ(p.scoring_requests,
            model::ScoringRequests(p.containers, p.init_containers, p.pod_level, p.overhead));

  // restartPolicy on a regular container does not make it a sidecar.
  ASSERT_TRUE(Args(R"({"Pod":{"spec":{"containers":[{"restartPolicy":"Always"}]}}})").ok());
  EXPECT_FALSE(args_.pod.containers[0].restartable);
}

// spec.resources (PodLevelResources) is read as a container's resources are,
// and FinalizeRequests lets its cpu / memory / hugepages-* requests replace
// the containers' aggregate.
TEST_F(DecoderTest, DecodesPodLevelResources) {
  ASSERT_TRUE(Args(R"({"Pod":{"spec":{)"
                   R"("containers":[{"resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}],)"
                   R"("resources":{"limits":{"cpu":"400m","memory":"256Mi"},)"
                   R"("requests":{"cpu":"200m","memory":"256Mi","hugepages-2Mi":"0"}},)"
                   R"("overhead":{"cpu":"10m"}},"status":{}},"NodeNames":["n1"]})")
                  .ok());
  const model::PodInfo& p = args_.pod;
  EXPECT_TRUE(p.pod_level.has_cpu_request);
  EXPECT_TRUE(p.pod_level.has_memory_request);
  EXPECT_EQ(p.pod_level.requests.milli_cpu, 200);
  EXPECT_EQ(p.pod_level.requests.memory, 256 * 1024 * 1024);
  ASSERT_EQ(p.pod_level.requests.scalars.size(), 1u);  // a zero amount still names it
  EXPECT_EQ(p.pod_level.requests.scalars[0].name, "hugepages-2Mi");
  EXPECT_EQ(p.pod_level.limits.milli_cpu, 400);
  EXPECT_EQ(p.pod_level.limits.memory, 256 * 1024 * 1024);
  EXPECT_EQ(p.requests.milli_cpu, 210);
  EXPECT_EQ(p.requests.memory, 256 * 1024 * 1024);
  EXPECT_EQ(p.placing_milli_cpu, 210);
  EXPECT_EQ(p.scoring_requests.memory, 256 * 1024 * 1024);
  // Container limits only: the pod-level limits are kept apart.
  EXPECT_EQ(p.limits, model::ResourceList{});

  // null and {} set nothing; a second pod decoded into the same args keeps
  // nothing of the first.
  ASSERT_TRUE(Args(R"({"Pod":{"spec":{"containers":[{"resources":{"requests":{"cpu":"1"}}}],)"
                   R"("resources":null}},"NodeNames":["n1"]})")
                  .ok());
  EXPECT_FALSE(model::HasPodLevelRequests(args_.pod.pod_level));
  EXPECT_EQ(args_.pod.requests.milli_cpu, 1000);
  ASSERT_TRUE(Args(R"({"Pod":{"spec":{"resources":{}}},"NodeNames":["n1"]})").ok());
  EXPECT_FALSE(model::HasPodLevelRequests(args_.pod.pod_level));
}

TEST_F(DecoderTest, RejectsMalformedPodLevelResources) {
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"resources":{"requests":{"cpu":"5x"}}}}})"),
            R"(decode ExtenderArgs: /Pod/spec/resources/requests/cpu: invalid quantity "5x")");
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"resources":{"limits":{"memory":true}}}}})"),
            "decode ExtenderArgs: /Pod/spec/resources/limits/memory: expected a quantity (a string "
            "or a number)");
  EXPECT_EQ(ArgsError(R"({"Pod":{"spec":{"resources":[]}}})"),
            "decode ExtenderArgs: /Pod/spec/resources: expected an object");
}

TEST_F(DecoderTest, SummarizesNodeConditionsWhenDecoding) {
  NodeJson healthy("healthy");
  healthy.Condition("NetworkUnavailable", "False")
      .Condition("MemoryPressure", "False")
      .Condition("DiskPressure", "True")
      .Condition("PIDPressure", "Unknown")
      .Ready()
      .Condition("CustomCheck", "True");
  NodeJson repeated("repeated");
  repeated.Condition("Ready", "False")
      .Condition("Ready", "True")
      .Condition("MemoryPressure", "True")
      .Condition("MemoryPressure", "False");
  NodeJson odd("odd");
  odd.Condition("Ready", "true")
      .Condition("DiskPressure", "TRUE")
      .Condition("PIDPressure", "")
      .Condition("ready", "True")
      .Condition("NetworkUnavailable", "True ");
  NodeJson none("none");
  ASSERT_TRUE(Args(ExtenderArgsFullJson(PodJson("p").Build(), {healthy.Build(), repeated.Build(),
                                                               odd.Build(), none.Build()}))
                  .ok());
  ASSERT_EQ(args_.nodes.size(), 4u);
  using model::ConditionSummary;
  constexpr uint8_t kAll = model::kConditionReady | model::kConditionMemoryPressure |
                           model::kConditionDiskPressure | model::kConditionPidPressure |
                           model::kConditionNetworkUnavailable;
  EXPECT_EQ(args_.nodes[0].condition_summary,
            (ConditionSummary{kAll, model::kConditionReady | model::kConditionDiskPressure}));
  // The first report of a type wins, as in ConditionStatus.
  EXPECT_EQ(args_.nodes[1].condition_summary,
            (ConditionSummary{model::kConditionReady | model::kConditionMemoryPressure,
                              model::kConditionMemoryPressure}));
  // Only the exact "True" is true; type names match exactly.
  EXPECT_EQ(args_.nodes[2].condition_summary,
            (ConditionSummary{static_cast<uint8_t>(kAll & ~model::kConditionMemoryPressure), 0}));
  EXPECT_EQ(args_.nodes[3].condition_summary, ConditionSummary{});

  // A reused NodeInfo whose node now has no conditions keeps no stale bits.
  ASSERT_TRUE(Args(ExtenderArgsFullJson(PodJson("p").Build(), {none.Build()})).ok());
  ASSERT_EQ(args_.nodes.size(), 1u);
  EXPECT_EQ(args_.nodes[0].condition_summary, ConditionSummary{});
}

TEST_F(DecoderTest, DecodesNodeFieldsAndRawJson) {
  NodeJson n1("n1");
  n1.Uid("u1")
      .Label("zone", "a")
      .Annotation("note", "y")
      .Taint("gpu", "present", "NoSchedule")
      .Taint("maint", "", "NoExecute")
      .Taint("soft", "x", "PreferNoSchedule")
      .Unschedulable()
      .Capacity("cpu", "4")
      .Allocatable("cpu", "3900m")
      .Allocatable("memory", "15784Mi")
      .Allocatable("example.com/gpu-mem", "160")
      .Condition("MemoryPressure", "False")
      .Ready(false)
      .Realistic();
  NodeJson n2("n2");
  const std::string n1_json = n1.Build();
  const std::string n2_json = n2.Build();
  ASSERT_TRUE(Args(ExtenderArgsFullJson(PodJson("p").Build(), {n1_json, n2_json})).ok());
  ASSERT_EQ(args_.mode, NodeMode::kFullNodes);
  ASSERT_EQ(args_.nodes.size(), 2u);
  EXPECT_THAT(args_.node_names, ElementsAre("n1", "n2"));
  const model::NodeInfo& node = args_.nodes[0];
  EXPECT_EQ(node.name, "n1");
  EXPECT_EQ(node.uid, "u1");
  EXPECT_EQ(node.labels.Find("zone"), "a");
  EXPECT_EQ(node.annotations.Find("note"), "y");
  ASSERT_EQ(node.taints.size(), 3u);
  EXPECT_EQ(node.taints[0].key, "gpu");
  EXPECT_EQ(node.taints[0].value, "present");
  EXPECT_EQ(node.taints[0].effect, model::TaintEffect::kNoSchedule);
  EXPECT_EQ(node.taints[1].value, "");
  EXPECT_EQ(node.taints[1].effect, model::TaintEffect::kNoExecute);
  EXPECT_EQ(node.taints[2].effect, model::TaintEffect::kPreferNoSchedule);
  EXPECT_TRUE(node.unschedulable);
  EXPECT_EQ(node.capacity.milli_cpu, 4000);
  EXPECT_EQ(node.allocatable.milli_cpu, 3900);
  EXPECT_EQ(node.allocatable.memory, int64_t{15784} * 1024 * 1024);
  EXPECT_EQ(node.allocatable.Get("example.com/gpu-mem"), 160);
  ASSERT_EQ(node.conditions.size(), 2u);
  EXPECT_EQ(node.ConditionStatus("Ready"), "False");
  EXPECT_EQ(node.ConditionStatus("MemoryPressure"), "False");
  EXPECT_EQ(node.raw_json, n1_json);
  EXPECT_EQ(args_.nodes[1].raw_json, n2_json);
  EXPECT_FALSE(args_.nodes[1].unschedulable);
  // The span points into the request buffer itself.
  EXPECT_GE(node.raw_json.data(), buffer_.data());
  EXPECT_LE(node.raw_json.data() + node.raw_json.size(), buffer_.data() + buffer_.size());
}

TEST_F(DecoderTest, CapturesRawJsonExactlyAroundWhitespace) {
  const std::string a = R"({"metadata":{"name":"a"},"spec":{}})";
  const std::string b = "{ \"metadata\" : { \"name\" : \"b\" } ,\n  \"status\": {\"allocatable\": {\"cpu\": 2}}\n}";
  const std::string c = "{}";
  const std::string body = "{\n  \"Nodes\" : {\n    \"items\" : [ " + a + " ,\n\t" + b + "\r\n, " + c +
                           "\n    ]\n  },\n  \"NodeNames\" : null\n}\n";
  ASSERT_TRUE(Args(body).ok());
  ASSERT_EQ(args_.nodes.size(), 3u);
  EXPECT_EQ(args_.nodes[0].raw_json, a);
  EXPECT_EQ(args_.nodes[1].raw_json, b);
  EXPECT_EQ(args_.nodes[2].raw_json, c);
  EXPECT_EQ(args_.nodes[1].allocatable.milli_cpu, 2000);
  EXPECT_THAT(args_.node_names, ElementsAre("a", "b", ""));
}

TEST_F(DecoderTest, DecodesManyNodes) {
  std::vector<std::string> items;
  for (int i = 0; i < 1000; ++i) {
    items.push_back(NodeJson("node-" + std::to_string(i))
                        .Label("index", std::to_string(i))
                        .Allocatable("cpu", std::to_string(i) + "m")
                        .Realistic()
                        .Build());
  }
  ASSERT_TRUE(Args(ExtenderArgsFullJson(PodJson("p").Build(), items)).ok());
  ASSERT_EQ(args_.nodes.size(), 1000u);
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_EQ(args_.nodes[i].raw_json, items[i]) << i;
    ASSERT_EQ(args_.node_names[i], "node-" + std::to_string(i));
    ASSERT_EQ(args_.nodes[i].allocatable.milli_cpu, static_cast<int64_t>(i));
  }
}

// ---- preemption and binding ----------------------------------------------

TEST_F(DecoderTest, DecodesPreemptionWithFullVictims) {
  PodJson preemptor("train-high");
  preemptor.Priority(1000000).Request("cpu", "2");
  std::vector<VictimsJson> victims = {
      {"n2", {PodJson("v1").Uid("u1").Priority(10).Request("cpu", "1"), PodJson("v2").Uid("u2")}, 1},
      {"n1", {PodJson("v3").Uid("u3")}, 0},
  };
  ASSERT_TRUE(Preemption(PreemptionArgsJson(preemptor, victims, ArgsShape::kFullNodes)).ok());
  EXPECT_TRUE(preemption_.has_pod);
  EXPECT_EQ(preemption_.pod.name, "train-high");
  EXPECT_EQ(preemption_.pod.priority, 1000000);
  EXPECT_EQ(preemption_.pod.requests.milli_cpu, 2000);
  EXPECT_TRUE(preemption_.full_pods);
  ASSERT_EQ(preemption_.node_count, 2u);
  const auto candidates = preemption_.candidates();
  EXPECT_EQ(candidates[0].node, "n2");  // document order
  EXPECT_EQ(candidates[0].num_pdb_violations, 1);
  ASSERT_EQ(candidates[0].pods.size(), 2u);
  EXPECT_EQ(candidates[0].pods[0].name, "v1");
  EXPECT_EQ(candidates[0].pods[0].uid, "u1");
  EXPECT_EQ(candidates[0].pods[0].priority, 10);
  EXPECT_EQ(candidates[0].pods[0].requests.milli_cpu, 1000);
  EXPECT_EQ(candidates[0].pods[1].uid, "u2");
  EXPECT_EQ(candidates[1].node, "n1");
  ASSERT_EQ(candidates[1].pods.size(), 1u);
  EXPECT_EQ(candidates[1].pods[0].uid, "u3");
}

TEST_F(DecoderTest, DecodesPreemptionWithMetaVictims) {
  std::vector<VictimsJson> victims = {
      {"n1", {PodJson("v1").Uid("u1"), PodJson("v2").Uid("u2")}, 2},
      {"n2", {}, 0},
  };
  ASSERT_TRUE(Preemption(PreemptionArgsJson(PodJson("p"), victims, ArgsShape::kNodeNames)).ok());
  EXPECT_FALSE(preemption_.full_pods);
  ASSERT_EQ(preemption_.node_count, 2u);
  const auto candidates = preemption_.candidates();
  EXPECT_EQ(candidates[0].node, "n1");
  EXPECT_EQ(candidates[0].num_pdb_violations, 2);
  ASSERT_EQ(candidates[0].pods.size(), 2u);
  EXPECT_EQ(candidates[0].pods[0].uid, "u1");
  EXPECT_EQ(candidates[0].pods[0].name, "");
  EXPECT_EQ(candidates[0].pods[1].uid, "u2");
  EXPECT_EQ(candidates[1].node, "n2");
  EXPECT_THAT(candidates[1].pods, IsEmpty());
}

TEST_F(DecoderTest, PrefersFullVictimsWhenBothMapsAreSet) {
  const std::string full = R"({"n1":{"Pods":[{"metadata":{"name":"v","uid":"u-full"}}],"NumPDBViolations":0}})";
  const std::string meta = R"({"n2":{"Pods":[{"UID":"u-meta"}],"NumPDBViolations":0}})";
  for (const std::string& body :
       {R"({"NodeNameToVictims":)" + full + R"(,"NodeNameToMetaVictims":)" + meta + "}",
        R"({"NodeNameToMetaVictims":)" + meta + R"(,"NodeNameToVictims":)" + full + "}"}) {
    ASSERT_TRUE(Preemption(body).ok()) << body;
    EXPECT_TRUE(preemption_.full_pods);
    ASSERT_EQ(preemption_.node_count, 1u);
    EXPECT_EQ(preemption_.candidates()[0].node, "n1");
    EXPECT_EQ(preemption_.candidates()[0].pods[0].uid, "u-full");
  }
  ASSERT_TRUE(Preemption(R"({"NodeNameToVictims":null,"NodeNameToMetaVictims":)" + meta + "}").ok());
  EXPECT_FALSE(preemption_.full_pods);
  ASSERT_EQ(preemption_.node_count, 1u);
  EXPECT_EQ(preemption_.candidates()[0].pods[0].uid, "u-meta");
  // A later null cancels an earlier map.
  ASSERT_TRUE(Preemption(R"({"NodeNameToVictims":)" + full + R"(,"NodeNameToMetaVictims":)" + meta +
                         R"(,"nodenametovictims":null})")
                  .ok());
  EXPECT_FALSE(preemption_.full_pods);
  EXPECT_EQ(preemption_.candidates()[0].pods[0].uid, "u-meta");
}

TEST_F(DecoderTest, DecodesEmptyAndLowercasePreemptionArgs) {
  ASSERT_TRUE(Preemption(R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToVictims":null,"NodeNameToMetaVictims":{}})").ok());
  EXPECT_EQ(preemption_.node_count, 0u);
  EXPECT_THAT(preemption_.candidates(), IsEmpty());
  ASSERT_TRUE(Preemption(R"({"pod":{"metadata":{"name":"p"}},"nodenametometavictims":{"n":{"pods":[{"uid":"u"}],"numpdbviolations":3}}})").ok());
  EXPECT_EQ(preemption_.pod.name, "p");
  ASSERT_EQ(preemption_.node_count, 1u);
  EXPECT_EQ(preemption_.candidates()[0].pods[0].uid, "u");
  EXPECT_EQ(preemption_.candidates()[0].num_pdb_violations, 3);
  // A repeated node replaces its entry.
  ASSERT_TRUE(Preemption(R"({"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"a"}]},"m":{"Pods":[]},"n":{"Pods":[{"UID":"b"}]}}})").ok());
  ASSERT_EQ(preemption_.node_count, 2u);
  EXPECT_EQ(preemption_.candidates()[0].node, "n");
  EXPECT_EQ(preemption_.candidates()[0].pods[0].uid, "b");
  EXPECT_EQ(preemption_.candidates()[1].node, "m");
}

TEST_F(DecoderTest, RejectsBadPreemptionArgs) {
  EXPECT_EQ(Preemption(R"({"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":5}]}}})").message(),
            "decode PreemptionArgs: /NodeNameToMetaVictims/n/Pods/0/UID: expected a string");
  EXPECT_EQ(Preemption(R"({"NodeNameToVictims":{"n":{"Pods":[null]}}})").message(),
            "decode PreemptionArgs: /NodeNameToVictims/n/Pods/0: expected an object");
  EXPECT_EQ(Preemption(R"({"NodeNameToVictims":{"n":{"NumPDBViolations":"1"}}})").message(),
            "decode PreemptionArgs: /NodeNameToVictims/n/NumPDBViolations: expected an integer");
  EXPECT_EQ(Preemption(R"({"NodeNameToVictims":[]})").message(),
            "decode PreemptionArgs: /NodeNameToVictims: expected an object");
}

TEST_F(DecoderTest, DecodesBindingArgs) {
  ASSERT_TRUE(Binding(BindingArgsJson("web-0", "shop", "5f2c", "n7")).ok());
  EXPECT_EQ(binding_.pod_name, "web-0");
  EXPECT_EQ(binding_.pod_namespace, "shop");
  EXPECT_EQ(binding_.pod_uid, "5f2c");
  EXPECT_EQ(binding_.node, "n7");
  ASSERT_TRUE(Binding(R"({"podname":"a","PODUID":"u","extra":[1,2]})").ok());
  EXPECT_EQ(binding_.pod_name, "a");
  EXPECT_EQ(binding_.pod_namespace, "");
  EXPECT_EQ(binding_.pod_uid, "u");
  EXPECT_EQ(binding_.node, "");
  EXPECT_EQ(Binding(R"({"PodName":["a"]})").message(),
            "decode BindingArgs: /PodName: expected a string");
  EXPECT_EQ(binding_.pod_name, "");
}

// ---- reuse ------------------------------------------------------------------

TEST_F(DecoderTest, ReusesOneDecoderWithoutStaleData) {
  PodJson labelled("a");
  labelled.Label("app", "web")
      .NodeSelector("disk", "ssd")
      .Toleration("t", "Exists")
      .Priority(7)
      .NominatedNodeName("n1")
      .RequiredTerm(NodeSelectorTermJson().MatchExpression("zone", "In", {"a"}))
      .Request("cpu", "1")
      .InitContainer(ContainerJson("i").Request("cpu", "3"))
      .Overhead("cpu", "1");
  std::vector<NodeJson> rich = {
      NodeJson("n1").Label("zone", "a").Taint("t", "", "NoSchedule").Unschedulable().Allocatable("cpu", "8").Ready(),
      NodeJson("n2").Label("zone", "b"), NodeJson("n3")};
  ASSERT_TRUE(Args(ExtenderArgsJson(labelled, rich, ArgsShape::kFullNodes)).ok());
  ASSERT_EQ(args_.nodes.size(), 3u);
  EXPECT_EQ(args_.pod.requests.milli_cpu, 4000);

  PodJson bare("b");
  ASSERT_TRUE(Args(ExtenderArgsJson(bare, {NodeJson("m1")}, ArgsShape::kFullNodes)).ok());
  const model::PodInfo& p = args_.pod;
  EXPECT_EQ(p.name, "b");
  EXPECT_TRUE(p.labels.empty());
  EXPECT_TRUE(p.node_selector.empty());
  EXPECT_THAT(p.tolerations, IsEmpty());
  EXPECT_EQ(p.priority, 0);
  EXPECT_EQ(p.nominated_node_name, "");
  EXPECT_FALSE(p.has_required_node_affinity);
  EXPECT_THAT(p.required_node_affinity, IsEmpty());
  EXPECT_THAT(p.init_containers, IsEmpty());
  EXPECT_EQ(p.overhead.milli_cpu, 0);
  EXPECT_EQ(p.requests.milli_cpu, 0);
  ASSERT_EQ(args_.nodes.size(), 1u);
  const model::NodeInfo& n = args_.nodes[0];
  EXPECT_EQ(n.name, "m1");
  EXPECT_TRUE(n.labels.empty());
  EXPECT_THAT(n.taints, IsEmpty());
  EXPECT_FALSE(n.unschedulable);
  EXPECT_EQ(n.allocatable.milli_cpu, 0);
  EXPECT_THAT(n.conditions, IsEmpty());
  EXPECT_THAT(args_.node_names, ElementsAre("m1"));

  ASSERT_TRUE(Args(ExtenderArgsJson(bare, rich, ArgsShape::kNodeNames)).ok());
  EXPECT_EQ(args_.mode, NodeMode::kNodeNames);
  EXPECT_THAT(args_.nodes, IsEmpty());
  EXPECT_THAT(args_.node_names, ElementsAre("n1", "n2", "n3"));

  // A failed decode leaves nothing usable behind, and the next one works.
  EXPECT_FALSE(Args(R"({"Pod":{"metadata":{"name":"x"}},"Nodes":{"items":[{"metadata":{"name":1}}]}})").ok());
  EXPECT_FALSE(args_.has_pod);
  EXPECT_THAT(args_.nodes, IsEmpty());

  ASSERT_TRUE(Args(ExtenderArgsJson(labelled, rich, ArgsShape::kFullNodes)).ok());
  ASSERT_EQ(args_.nodes.size(), 3u);
  EXPECT_TRUE(args_.nodes[0].unschedulable);
  EXPECT_EQ(args_.nodes[0].labels.Find("zone"), "a");
  EXPECT_EQ(args_.nodes[1].labels.Find("zone"), "b");
  EXPECT_TRUE(args_.nodes[2].labels.empty());
  EXPECT_EQ(args_.pod.labels.Find("app"), "web");

  // Victim lists shrink as well.
  ASSERT_TRUE(Preemption(PreemptionArgsJson(bare, {{"n1", {PodJson("v1"), PodJson("v2")}, 0}, {"n2", {PodJson("v3")}, 0}},
                                            ArgsShape::kFullNodes))
                  .ok());
  ASSERT_EQ(preemption_.node_count, 2u);
  ASSERT_TRUE(Preemption(PreemptionArgsJson(bare, {{"n9", {PodJson("v4")}, 0}}, ArgsShape::kNodeNames)).ok());
  ASSERT_EQ(preemption_.node_count, 1u);
  EXPECT_FALSE(preemption_.full_pods);
  EXPECT_EQ(preemption_.candidates()[0].node, "n9");
  ASSERT_EQ(preemption_.candidates()[0].pods.size(), 1u);
  EXPECT_EQ(preemption_.candidates()[0].pods[0].name, "");
  EXPECT_EQ(preemption_.candidates()[0].pods[0].uid, "uid-v4");
}

TEST_F(DecoderTest, KeepsNodeStorageAcrossRequests) {
  std::vector<NodeJson> three;
  for (const char* name : {"n1", "n2", "n3"}) {
    three.push_back(NodeJson(name).Label("a", "1").Label("b", "2").Taint("t", "", "NoSchedule").Ready());
  }
  const std::string big = ExtenderArgsJson(PodJson("p"), three, ArgsShape::kFullNodes);
  const std::string small = ExtenderArgsJson(PodJson("p"), {three[0]}, ArgsShape::kFullNodes);
  ASSERT_TRUE(Args(big).ok());
  std::vector<const void*> storage;
  for (const model::NodeInfo& node : args_.nodes) {
    storage.push_back(node.labels.entries().data());
    storage.push_back(node.taints.data());
    storage.push_back(node.conditions.data());
  }
  // Fewer nodes, then as many again: the same buffers come back, in order.
  ASSERT_TRUE(Args(small).ok());
  ASSERT_EQ(args_.nodes.size(), 1u);
  ASSERT_TRUE(Args(R"({"NodeNames":["x"]})").ok());
  ASSERT_TRUE(Args(big).ok());
  std::vector<const void*> again;
  for (const model::NodeInfo& node : args_.nodes) {
    again.push_back(node.labels.entries().data());
    again.push_back(node.taints.data());
    again.push_back(node.conditions.data());
  }
  EXPECT_EQ(again, storage);
}

TEST_F(DecoderTest, ShrinkToKeepsDecoding) {
  std::vector<std::string> items(200, NodeJson("n").Realistic().Build());
  ASSERT_TRUE(Args(ExtenderArgsFullJson("{}", items)).ok());
  decoder_.ShrinkTo(1024);
  ASSERT_TRUE(Args(R"({"NodeNames":["a"]})").ok());
  EXPECT_THAT(args_.node_names, ElementsAre("a"));
  decoder_.ShrinkTo(0);
  ASSERT_TRUE(Args(ExtenderArgsFullJson("{}", items)).ok());
  EXPECT_EQ(args_.nodes.size(), 200u);
}

TEST(RequestBufferTest, KeepsZeroedPaddingAfterTheBody) {
  RequestBuffer buffer;
  EXPECT_EQ(buffer.size(), 0u);
  buffer.Reserve(10);
  EXPECT_GE(buffer.capacity(), 10 + kJsonPadding);
  const std::string big(300, 'x');
  buffer.Append(big.data(), big.size());
  buffer.Clear();
  buffer.Append("ab", 2);
  buffer.Append("cd", 2);
  EXPECT_EQ(buffer.view(), "abcd");
  ASSERT_GE(buffer.capacity(), buffer.size() + kJsonPadding);
  for (size_t i = 0; i < kJsonPadding; ++i) {
    ASSERT_EQ(buffer.data()[buffer.size() + i], '\0') << i;
  }
  RequestBuffer copy = RequestBuffer::CopyOf("{}");
  EXPECT_EQ(copy.view(), "{}");
  EXPECT_GE(copy.capacity(), 2 + kJsonPadding);
  copy.ShrinkTo(1 << 20);
  EXPECT_EQ(copy.view(), "{}");
  copy.ShrinkTo(8);
  EXPECT_EQ(copy.size(), 0u);
  EXPECT_EQ(copy.capacity(), 0u);
  copy.Append("x", 1);
  EXPECT_EQ(copy.view(), "x");
}

}  // namespace
}  // namespace schedext::wire
