// Encoders: every reply pinned byte for byte (protocol doc §1.3, §7 items 17,
// 18, 25, 32–34).
#include "schedext/wire/encoder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/wire/decoder.h"
#include "testing/json_builders.h"

namespace schedext::wire {
namespace {

std::string Quoted(std::string_view text) {
  std::string out;
  AppendJsonString(text, out);
  return out;
}

TEST(EncoderTest, QuotesPlainStrings) {
  EXPECT_EQ(Quoted(""), R"("")");
  EXPECT_EQ(Quoted("lab-gpu-1"), R"("lab-gpu-1")");
  // HTML characters, '/', DEL and UTF-8 are copied as they are.
  EXPECT_EQ(Quoted("a<b>&c/d\x7f"), "\"a<b>&c/d\x7f\"");
  EXPECT_EQ(Quoted("gr\xC3\xB6\xC3\x9F" "e \xF0\x9F\x98\x80"), "\"gr\xC3\xB6\xC3\x9F" "e \xF0\x9F\x98\x80\"");
}

TEST(EncoderTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Quoted("say \"hi\""), R"("say \"hi\"")");
  EXPECT_EQ(Quoted("C:\\path"), R"("C:\\path")");
  EXPECT_EQ(Quoted("a\nb\rc\td\be\ff"), R"("a\nb\rc\td\be\ff")");
  EXPECT_EQ(Quoted(std::string_view("\x00\x01\x1f\x20", 4)), R"("\u0000\u0001\u001f ")");
  EXPECT_EQ(Quoted("\x0b\x1b"), R"("\u000b\u001b")");
  EXPECT_EQ(Quoted("\"\\\n"), R"("\"\\\n")");
}

TEST(EncoderTest, EscapesAtEveryPositionAndLength) {
  // The scan goes a word (or more) at a time with an overlapping last load:
  // one byte to escape at each position of strings of 0..70 bytes, next to
  // bytes just outside the escaped ranges, must come out as a byte loop
  // would write it.
  const auto reference = [](std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (byte < 0x20) {
        if (byte >= 8 && byte <= 13 && byte != 11) {
          out += '\\';
          out += "btn?fr"[byte - 8];
        } else {
          out += "\\u00";
          out += "0123456789abcdef"[byte >> 4];
          out += "0123456789abcdef"[byte & 15];
        }
      } else {
        out += c;
      }
    }
    return out + "\"";
  };
  for (size_t size = 0; size <= 70; ++size) {
    std::string text(size, 'a');
    for (size_t i = 0; i < size; ++i) {
      text[i] = static_cast<char>(i % 2 == 0 ? 0x21 : 0x5d);  // '!' and ']' border '"' and '\\'
    }
    ASSERT_EQ(Quoted(text), reference(text)) << size;
    for (size_t at = 0; at < size; ++at) {
      for (const char c : {'"', '\\', '\x00', '\x1f', '\n'}) {
        std::string escaped = text;
        escaped[at] = c;
        ASSERT_EQ(Quoted(escaped), reference(escaped)) << size << " " << at;
      }
      std::string high = text;
      high[at] = '\x80';  // not escaped, but has the high bit the word tests use
      ASSERT_EQ(Quoted(high), "\"" + high + "\"") << size << " " << at;
    }
  }
}

TEST(EncoderTest, AppendsWithoutClearing) {
  std::string out = "prefix:";
  AppendJsonString("x", out);
  AppendBindingResult("", out);
  EXPECT_EQ(out, R"(prefix:"x"{"Error":""})");
}

TEST(EncoderTest, EncodesNodeNamesFilterResult) {
  const std::vector<std::string_view> passing = {"a", "b"};
  const std::vector<FailedNode> failed = {{"c", "no gpu"}, {"d", "too \"full\""}};
  const std::vector<FailedNode> unresolvable = {{"e", "tainted"}};
  FilterResultView result;
  result.mode = NodeMode::kNodeNames;
  result.passing = passing;
  result.failed = failed;
  result.unresolvable = unresolvable;
  std::string out;
  AppendFilterResult(result, out);
  EXPECT_EQ(out,
            R"({"Nodes":null,"NodeNames":["a","b"],"FailedNodes":{"c":"no gpu","d":"too \"full\""},)"
            R"("FailedAndUnresolvableNodes":{"e":"tainted"},"Error":""})");
}

TEST(EncoderTest, EncodesEmptyFilterResults) {
  FilterResultView result;
  std::string out;
  AppendFilterResult(result, out);  // default mode: kNodeNames
  EXPECT_EQ(out,
            R"({"Nodes":null,"NodeNames":[],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})");
  out.clear();
  result.mode = NodeMode::kNone;
  AppendFilterResult(result, out);
  EXPECT_EQ(out,
            R"({"Nodes":null,"NodeNames":[],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})");
  out.clear();
  result.mode = NodeMode::kFullNodes;
  AppendFilterResult(result, out);
  EXPECT_EQ(out,
            R"({"Nodes":{"metadata":{},"items":[]},"NodeNames":null,"FailedNodes":{},)"
            R"("FailedAndUnresolvableNodes":{},"Error":""})");
}

// With splices, a full-mode result leaves the nodes where they are: one
// splice per run of spans that follow each other after exactly one ',' in
// the same buffer; anything else (another buffer, other separators, a gap)
// starts a new run. Inserted back, the bytes are AppendFilterResult's.
TEST(EncoderTest, SplicesFullNodesRunsAndMatchesTheCopiedResult) {
  const std::string items = R"([{"n":1},{"n":2},{"n":3}, {"n":4},{"n":5}])";
  auto span = [&](std::string_view needle) {
    const size_t at = items.find(needle);
    EXPECT_NE(at, std::string::npos) << needle;
    return std::string_view(items).substr(at, needle.size());
  };
  const std::string elsewhere = R"({"n":"other"})";
  const std::vector<FailedNode> failed = {{"x", "no"}};
  struct Case {
    std::string name;
    std::vector<std::string_view> passing;
    size_t want_splices;
  };
  const std::vector<Case> cases = {
      {"none", {}, 0},
      {"one", {span(R"({"n":2})")}, 1},
      {"adjacent", {span(R"({"n":1})"), span(R"({"n":2})"), span(R"({"n":3})")}, 1},
      {"a gap", {span(R"({"n":1})"), span(R"({"n":3})")}, 2},
      {"a space after the comma", {span(R"({"n":3})"), span(R"({"n":4})"), span(R"({"n":5})")}, 2},
      {"another buffer", {span(R"({"n":1})"), elsewhere, span(R"({"n":2})")}, 3},
      {"out of order", {span(R"({"n":2})"), span(R"({"n":1})")}, 2},
      {"repeated", {span(R"({"n":1})"), span(R"({"n":1})")}, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FilterResultView result;
    result.mode = NodeMode::kFullNodes;
    result.passing = c.passing;
    result.failed = failed;
    std::string copied = "prefix:";
    AppendFilterResult(result, copied);
    std::string text = "prefix:";
    std::vector<ReplySplice> splices;
    AppendFilterResult(result, text, &splices);
    EXPECT_EQ(splices.size(), c.want_splices);
    std::string whole;
    AppendSpliced(text, splices, whole);
    EXPECT_EQ(whole, copied);
    EXPECT_EQ(SplicedSize(text, splices), copied.size());
    for (const ReplySplice& splice : splices) {
      EXPECT_LE(splice.at, text.size());
    }
  }
  // Names mode ignores `splices`.
  const std::vector<std::string_view> names = {"a", "b"};
  FilterResultView result;
  result.mode = NodeMode::kNodeNames;
  result.passing = names;
  std::string text;
  std::vector<ReplySplice> splices;
  AppendFilterResult(result, text, &splices);
  EXPECT_TRUE(splices.empty());
  EXPECT_EQ(text,
            R"({"Nodes":null,"NodeNames":["a","b"],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})");
}

// Names read straight from a request body (ExtenderArgsView::names_quoted)
// are written as runs of the body's own bytes: the reply must be exactly the
// one the per-name encoder writes, for every pattern of passing names.
class QuotedNamesTest : public ::testing::Test {
 protected:
  // Decodes `body` (an ExtenderArgs) into args_.
  void Decode(std::string_view body) {
    buffer_ = RequestBuffer::CopyOf(body);
    ASSERT_TRUE(decoder_.DecodeExtenderArgs(buffer_, args_).ok()) << body;
  }

  // The names of args_ at `picks`, in that order.
  std::vector<std::string_view> Pick(const std::vector<size_t>& picks) const {
    std::vector<std::string_view> out;
    for (size_t i : picks) {
      out.push_back(args_.node_names[i]);
    }
    return out;
  }

  // The filter reply for `passing` (+ `failed`), written through the quoted
  // path (without and with splices) and through the per-name path: all three
  // must be the same bytes, which are returned.
  std::string FilterReply(std::span<const std::string_view> passing,
                          std::span<const FailedNode> failed = {}) {
    FilterResultView result;
    result.mode = NodeMode::kNodeNames;
    result.passing = passing;
    result.failed = failed;
    std::string per_name;
    AppendFilterResult(result, per_name);
    result.names_quoted = args_.names_quoted;
    std::string quoted;
    AppendFilterResult(result, quoted);
    EXPECT_EQ(quoted, per_name);
    std::string envelope;
    splices_.clear();
    AppendFilterResult(result, envelope, &splices_);
    std::string whole;
    AppendSpliced(envelope, splices_, whole);
    EXPECT_EQ(whole, per_name);
    for (const ReplySplice& splice : splices_) {  // spans of the body
      EXPECT_GE(splice.bytes.data(), buffer_.data());
      EXPECT_LE(splice.bytes.data() + splice.bytes.size(), buffer_.data() + buffer_.size());
    }
    return per_name;
  }

  RequestBuffer buffer_;
  RequestDecoder decoder_;
  ExtenderArgsView args_;
  std::vector<ReplySplice> splices_;
};

std::string NamesReply(std::string_view names, std::string_view failed = "{}") {
  return R"({"Nodes":null,"NodeNames":[)" + std::string(names) + R"(],"FailedNodes":)" +
         std::string(failed) + R"(,"FailedAndUnresolvableNodes":{},"Error":""})";
}

TEST_F(QuotedNamesTest, FilterReplyIsThePerNameReplyForEveryRun) {
  Decode(R"({"Pod":null,"Nodes":null,"NodeNames":["n0","n1","n2","","n4","n5"]})");
  ASSERT_TRUE(args_.names_quoted);
  const std::vector<FailedNode> failed = {{args_.node_names[2], "no"}};
  EXPECT_EQ(FilterReply(Pick({0, 1, 2, 3, 4, 5})), NamesReply(R"("n0","n1","n2","","n4","n5")"));
  EXPECT_EQ(FilterReply({}), NamesReply(""));
  EXPECT_EQ(FilterReply(Pick({0, 1, 3, 4, 5}), failed),
            NamesReply(R"("n0","n1","","n4","n5")", R"({"n2":"no"})"));
  EXPECT_EQ(FilterReply(Pick({0, 2, 4})), NamesReply(R"("n0","n2","n4")"));
  EXPECT_EQ(FilterReply(Pick({5})), NamesReply(R"("n5")"));
  EXPECT_EQ(FilterReply(Pick({1, 2, 5})), NamesReply(R"("n1","n2","n5")"));
  EXPECT_EQ(FilterReply(Pick({3, 4})), NamesReply(R"("","n4")"));
  // Out of order and repeated names are separate runs.
  EXPECT_EQ(FilterReply(Pick({2, 1, 0})), NamesReply(R"("n2","n1","n0")"));
  EXPECT_EQ(FilterReply(Pick({1, 1, 2, 2})), NamesReply(R"("n1","n1","n2","n2")"));
  // Short runs are copied, never spliced.
  EXPECT_TRUE(splices_.empty());
}

TEST_F(QuotedNamesTest, WhitespaceInTheRequestArraySplitsRuns) {
  Decode("{\"NodeNames\":[ \"a\",\"b\" ,\"c\",\n\"d\"\t, \"e\"]}");
  ASSERT_TRUE(args_.names_quoted);
  EXPECT_EQ(FilterReply(Pick({0, 1, 2, 3, 4})), NamesReply(R"("a","b","c","d","e")"));
  EXPECT_EQ(FilterReply(Pick({1, 2})), NamesReply(R"("b","c")"));
  EXPECT_EQ(FilterReply(Pick({0, 4})), NamesReply(R"("a","e")"));
}

TEST_F(QuotedNamesTest, EscapedNamesTakeThePerNamePath) {
  // One escaped name anywhere and the names are copies (the parser's), not
  // views of the body: the encoder escapes each one again.
  Decode(R"({"NodeNames":["a","b\u0063","d\"e","f\\g","h"]})");
  EXPECT_FALSE(args_.names_quoted);
  EXPECT_EQ(FilterReply(Pick({0, 1, 2, 3, 4})), NamesReply(R"("a","bc","d\"e","f\\g","h")"));
  EXPECT_EQ(FilterReply(Pick({2, 3})), NamesReply(R"("d\"e","f\\g")"));
  // Names that are not the request's own go the per-name way too.
  const std::vector<std::string_view> others = {"x\"y", "z"};
  EXPECT_EQ(FilterReply(others), NamesReply(R"("x\"y","z")"));
}

TEST_F(QuotedNamesTest, LongRunsAreSplicedFromTheBody) {
  // 400 names of 40 bytes: runs of ~16 KB, long enough for a write buffer of
  // their own; the gap at 200 splits them.
  std::string body = R"({"Pod":null,"NodeNames":[)";
  std::string all;
  for (int i = 0; i < 400; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "ip-10-0-%03d-%03d.us-west-2.compute.internal", i / 256,
                  i % 256);
    const std::string literal = std::string("\"") + name + "\"";
    body += (i ? "," : "") + literal;
    all += (i ? "," : "") + literal;
  }
  body += "]}";
  Decode(body);
  ASSERT_TRUE(args_.names_quoted);
  std::vector<size_t> picks;
  for (size_t i = 0; i < 400; ++i) {
    picks.push_back(i);
  }
  EXPECT_EQ(FilterReply(Pick(picks)), NamesReply(all));
  ASSERT_EQ(splices_.size(), 1u);
  EXPECT_EQ(splices_[0].bytes, all);
  picks.erase(picks.begin() + 200);
  picks.erase(picks.begin() + 390, picks.end());  // a short run is left: copied
  picks.push_back(399);
  const std::string reply = FilterReply(Pick(picks));
  EXPECT_EQ(splices_.size(), 2u);
  EXPECT_EQ(reply.find(std::string(args_.node_names[200])), std::string::npos);
  EXPECT_NE(reply.find(std::string(args_.node_names[399])), std::string::npos);
}

TEST_F(QuotedNamesTest, HostPriorityListIsThePerNameList) {
  Decode("{\"NodeNames\":[\"a\",\"\", \"lab-gpu-1\",\n\"ip-10-0-0-1.us-west-2.compute.internal\"]}");
  ASSERT_TRUE(args_.names_quoted);
  std::vector<HostScore> scores;
  int64_t score = INT64_MIN;
  for (std::string_view name : args_.node_names) {
    scores.push_back({name, score});
    score = score / 2 + 7;
  }
  std::string per_name;
  AppendHostPriorityList(scores, per_name);
  std::string quoted;
  AppendHostPriorityList(scores, quoted, /*hosts_quoted=*/true);
  EXPECT_EQ(quoted, per_name);
  EXPECT_EQ(quoted,
            R"([{"Host":"a","Score":-9223372036854775808},{"Host":"","Score":-4611686018427387897},)"
            R"({"Host":"lab-gpu-1","Score":-2305843009213693941},)"
            R"({"Host":"ip-10-0-0-1.us-west-2.compute.internal","Score":-1152921504606846963}])");
}

TEST(EncoderTest, LongRepliesCrossTheAssemblyBuffer) {
  // Thousands of entries, some needing escapes and some longer than the
  // stack buffer the encoders assemble in: the same bytes as one string
  // written by hand.
  std::vector<std::string> names;
  for (int i = 0; i < 3000; ++i) {
    names.push_back("node-" + std::to_string(i) + (i % 97 == 0 ? "\"q\\" : "") +
                    (i % 1000 == 5 ? std::string(5000, 'x') : ""));
  }
  std::vector<std::string_view> views(names.begin(), names.end());
  std::vector<FailedNode> failed;
  std::vector<HostScore> scores;
  std::string want_names;
  std::string want_failed = "{";
  std::string want_scores = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string quoted = Quoted(names[i]);
    want_names += (i ? "," : "") + quoted;
    failed.push_back({views[i], views[(i + 1) % views.size()]});
    want_failed += (i ? "," : "") + quoted + ":" + Quoted(names[(i + 1) % names.size()]);
    scores.push_back({views[i], static_cast<int64_t>(i) * 1000003});
    want_scores += std::string(i ? "," : "") + R"({"Host":)" + quoted + R"(,"Score":)" +
                   std::to_string(static_cast<int64_t>(i) * 1000003) + "}";
  }
  want_failed += "}";
  want_scores += "]";
  FilterResultView result;
  result.mode = NodeMode::kNodeNames;
  result.passing = views;
  result.failed = failed;
  std::string out;
  AppendFilterResult(result, out);
  EXPECT_EQ(out, R"({"Nodes":null,"NodeNames":[)" + want_names + R"(],"FailedNodes":)" +
                     want_failed + R"(,"FailedAndUnresolvableNodes":{},"Error":""})");
  out.clear();
  AppendHostPriorityList(scores, out);
  EXPECT_EQ(out, want_scores);
}

TEST(EncoderTest, EncodesFullNodesFilterResultWithRawSpans) {
  const std::vector<std::string_view> passing = {R"({"metadata":{"name":"a"}})",
                                                 R"({"metadata":{"name":"b"},"spec":{}})"};
  const std::vector<FailedNode> failed = {{"c", "no"}};
  FilterResultView result;
  result.mode = NodeMode::kFullNodes;
  result.passing = passing;
  result.failed = failed;
  std::string out;
  AppendFilterResult(result, out);
  EXPECT_EQ(out,
            R"({"Nodes":{"metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"},"spec":{}}]},)"
            R"("NodeNames":null,"FailedNodes":{"c":"no"},"FailedAndUnresolvableNodes":{},"Error":""})");
}

TEST(EncoderTest, EchoesDecodedNodesByteForByte) {
  std::vector<std::string> items;
  for (const char* name : {"n1", "n2", "n3"}) {
    items.push_back(::schedext::testing::NodeJson(name)
                        .Realistic()
                        .Label("note", "a&b <c> \xF0\x9F\x98\x80")
                        .Taint("t", "v", "NoSchedule")
                        .Allocatable("cpu", "4")
                        .Build());
  }
  const std::string body =
      ::schedext::testing::ExtenderArgsFullJson(::schedext::testing::PodJson("p").Build(), items);
  const RequestBuffer buffer = RequestBuffer::CopyOf(body);
  RequestDecoder decoder;
  ExtenderArgsView args;
  ASSERT_TRUE(decoder.DecodeExtenderArgs(buffer, args).ok());
  ASSERT_EQ(args.nodes.size(), 3u);

  std::vector<std::string_view> passing;
  for (const model::NodeInfo& node : args.nodes) {
    passing.push_back(node.raw_json);
  }
  FilterResultView result;
  result.mode = NodeMode::kFullNodes;
  result.passing = passing;
  std::string out;
  AppendFilterResult(result, out);
  const std::string expected_items = "[" + items[0] + "," + items[1] + "," + items[2] + "]";
  EXPECT_EQ(out, R"({"Nodes":{"metadata":{},"items":)" + expected_items +
                     R"(},"NodeNames":null,"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})");
  // The same bytes as the request's own items array.
  EXPECT_NE(body.find(R"("items":)" + expected_items), std::string::npos);
}

TEST(EncoderTest, EncodesFilterError) {
  std::string out;
  AppendFilterError("policy \"gpu\" failed", out);
  EXPECT_EQ(out,
            R"({"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,)"
            R"("Error":"policy \"gpu\" failed"})");
}

TEST(EncoderTest, EncodesHostPriorityList) {
  std::string out;
  AppendHostPriorityList({}, out);
  EXPECT_EQ(out, "[]");
  out.clear();
  const std::vector<HostScore> scores = {{"a", 3}, {"b", 0}, {"c", 10}};
  AppendHostPriorityList(scores, out);
  EXPECT_EQ(out, R"([{"Host":"a","Score":3},{"Host":"b","Score":0},{"Host":"c","Score":10}])");
  out.clear();
  const std::vector<HostScore> extremes = {{"min", INT64_MIN}, {"max", INT64_MAX}, {"neg", -1}};
  AppendHostPriorityList(extremes, out);
  EXPECT_EQ(out,
            R"([{"Host":"min","Score":-9223372036854775808},{"Host":"max","Score":9223372036854775807},)"
            R"({"Host":"neg","Score":-1}])");
}

TEST(EncoderTest, KeepScoresAboveLowestShiftsAndDropsTheLowest) {
  std::vector<HostScore> none;
  KeepScoresAboveLowest(none);
  EXPECT_TRUE(none.empty());

  std::vector<HostScore> equal = {{"a", 7}, {"b", 7}, {"c", 7}};
  KeepScoresAboveLowest(equal);
  EXPECT_TRUE(equal.empty());

  // Order kept; every lowest entry dropped wherever it stands.
  std::vector<HostScore> scores = {{"a", 5}, {"b", 3}, {"c", 10}, {"d", 3}, {"e", 4}};
  KeepScoresAboveLowest(scores);
  std::string out;
  AppendHostPriorityList(scores, out);
  EXPECT_EQ(out, R"([{"Host":"a","Score":2},{"Host":"c","Score":7},{"Host":"e","Score":1}])");

  // A lowest of 0 changes no score.
  std::vector<HostScore> zero = {{"a", 0}, {"b", 10}};
  KeepScoresAboveLowest(zero);
  out.clear();
  AppendHostPriorityList(zero, out);
  EXPECT_EQ(out, R"([{"Host":"b","Score":10}])");
}

TEST(EncoderTest, EncodesNamesTheRequestLeftOut) {
  // A full-mode node without metadata.name decodes to a default string_view
  // (null data); every encoder writes it as "" (found by fuzz/request_decoder:
  // UBSan reported the memcpy from null).
  const std::string_view missing;
  std::string out;
  const std::vector<HostScore> scores = {{missing, 1}};
  AppendHostPriorityList(scores, out);
  EXPECT_EQ(out, R"([{"Host":"","Score":1}])");
  out.clear();
  const std::vector<std::string_view> passing = {missing};
  const std::vector<FailedNode> failed = {{missing, missing}};
  FilterResultView result;
  result.mode = NodeMode::kNodeNames;
  result.passing = passing;
  result.failed = failed;
  AppendFilterResult(result, out);
  EXPECT_EQ(out, R"({"Nodes":null,"NodeNames":[""],"FailedNodes":{"":""},)"
                 R"("FailedAndUnresolvableNodes":{},"Error":""})");
}

TEST(EncoderTest, EncodesPreemptionResult) {
  std::string out;
  AppendPreemptionResult({}, out);
  EXPECT_EQ(out, R"({"NodeNameToMetaVictims":{}})");
  out.clear();
  const std::vector<std::string_view> uids_a = {"u1", "u2"};
  const std::vector<std::string_view> uids_b = {"u3"};
  const std::vector<MetaVictimsEntry> nodes = {{"n1", uids_a, 0}, {"n2", uids_b, 2}};
  AppendPreemptionResult(nodes, out);
  EXPECT_EQ(out,
            R"({"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"u1"},{"UID":"u2"}],"NumPDBViolations":0},)"
            R"("n2":{"Pods":[{"UID":"u3"}],"NumPDBViolations":2}}})");
  out.clear();
  const std::vector<MetaVictimsEntry> single = {{"n", uids_b, 0}};
  AppendPreemptionResult(single, out);
  EXPECT_EQ(out, R"({"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"u3"}],"NumPDBViolations":0}}})");
}

TEST(EncoderTest, EncodesBindingResultAndErrorBody) {
  std::string out;
  AppendBindingResult("", out);
  EXPECT_EQ(out, R"({"Error":""})");
  out.clear();
  AppendBindingResult("pod \"default/web-1\" is already bound\n", out);
  EXPECT_EQ(out, R"({"Error":"pod \"default/web-1\" is already bound\n"})");
  out.clear();
  AppendErrorBody("decode ExtenderArgs: empty body", out);
  EXPECT_EQ(out, R"({"Error":"decode ExtenderArgs: empty body"})");
}

}  // namespace
}  // namespace schedext::wire
