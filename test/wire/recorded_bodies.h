// Reading the recorded kube-scheduler request bodies of
// test/testdata/kube-scheduler-<minor>/ (their README), for the codec tests
// of each recorded release (fixtures_test.cc, fixtures_1_37_test.cc).
#ifndef SCHEDEXT_TEST_WIRE_RECORDED_BODIES_H_
#define SCHEDEXT_TEST_WIRE_RECORDED_BODIES_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/wire/decoder.h"
#include "schedext/wire/encoder.h"
#include "schedext/wire/messages.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::wire::recorded {

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// The request bodies of `dir` (not the *.meta.json files), sorted.
inline std::vector<std::filesystem::path> Bodies(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> bodies;
  for (const std::filesystem::directory_entry& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".json") && !name.ends_with(".meta.json")) {
      bodies.push_back(entry.path());
    }
  }
  std::sort(bodies.begin(), bodies.end());
  return bodies;
}

// "filter-3.json" → "filter", 3.
inline std::pair<std::string, int> VerbAndNumber(const std::filesystem::path& body) {
  const std::string stem = body.stem().string();
  const size_t dash = stem.rfind('-');
  return {stem.substr(0, dash), std::stoi(stem.substr(dash + 1))};
}

// In full mode every raw span parses back to the node the reference parser
// sees, and a filter reply passing every node carries exactly the request's
// items bytes.
inline void CheckFullModeEcho(const std::string& body, const ExtenderArgsView& args) {
  const nlohmann::json reference = nlohmann::json::parse(body);
  const nlohmann::json& items = reference["Nodes"]["items"];
  ASSERT_EQ(args.nodes.size(), items.size());
  std::vector<std::string_view> passing;
  for (size_t i = 0; i < args.nodes.size(); ++i) {
    const std::string_view raw = args.nodes[i].raw_json;
    ASSERT_FALSE(raw.empty());
    EXPECT_EQ(raw.front(), '{');
    EXPECT_EQ(raw.back(), '}');
    const nlohmann::json parsed = nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(parsed.is_discarded()) << i;
    EXPECT_EQ(parsed["metadata"]["name"].get<std::string>(), args.nodes[i].name);
    EXPECT_EQ(parsed, items[i]) << i;
    passing.push_back(raw);
  }
  FilterResultView result;
  result.mode = NodeMode::kFullNodes;
  result.passing = passing;
  std::string reply;
  AppendFilterResult(result, reply);
  for (std::string_view raw : passing) {
    EXPECT_NE(reply.find(raw), std::string::npos);
  }
  const nlohmann::json decoded_reply = nlohmann::json::parse(reply);
  EXPECT_EQ(decoded_reply["Nodes"]["items"], items);
  EXPECT_TRUE(decoded_reply["NodeNames"].is_null());
  EXPECT_EQ(decoded_reply["Error"], "");
}

// A compact full-mode request ends with its items array: the comma-joined
// spans, byte for byte.
inline void CheckCompactItemsTail(const std::string& body, const ExtenderArgsView& args) {
  std::string joined = "\"items\":[";
  for (size_t i = 0; i < args.nodes.size(); ++i) {
    joined.append(i == 0 ? "" : ",").append(args.nodes[i].raw_json);
  }
  joined += "]},\"NodeNames\":null}";
  EXPECT_TRUE(body.ends_with(joined));
}

// A test that decodes one recorded body at a time with one decoder, keeping
// the body and the views into it until the next.
class BodyDecodingTest : public ::testing::Test {
 protected:
  Status Args(const std::filesystem::path& path) {
    body_ = ReadFile(path);
    buffer_ = RequestBuffer::CopyOf(body_);
    return decoder_.DecodeExtenderArgs(buffer_, args_);
  }
  Status Preemption(const std::filesystem::path& path) {
    body_ = ReadFile(path);
    buffer_ = RequestBuffer::CopyOf(body_);
    return decoder_.DecodePreemptionArgs(buffer_, preemption_);
  }

  std::string body_;
  RequestDecoder decoder_;
  RequestBuffer buffer_;
  ExtenderArgsView args_;
  PreemptionArgsView preemption_;
  BindingArgsView binding_;
};

}  // namespace schedext::wire::recorded

#endif  // SCHEDEXT_TEST_WIRE_RECORDED_BODIES_H_
