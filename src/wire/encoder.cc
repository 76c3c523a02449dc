// Hand-written encoders for the extender replies (see encoder.h). Every key is
// written with its exact Go name, in the declaration order of the Go structs.
#include "schedext/wire/encoder.h"

#include <charconv>
#include <cstdint>

namespace schedext::wire {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// True for the bytes AppendJsonString must escape.
constexpr bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

void AppendInt(int64_t value, std::string& out) {
  char digits[24];
  const std::to_chars_result result = std::to_chars(digits, digits + sizeof(digits), value);
  out.append(digits, result.ptr);
}

// {"n1":"reason",...} in the given order; {} when empty.
void AppendFailedMap(std::span<const FailedNode> failed, std::string& out) {
  out.push_back('{');
  bool first = true;
  for (const FailedNode& node : failed) {
    if (!first) {
      out.push_back(',');
    }
    first = false;
    AppendJsonString(node.name, out);
    out.push_back(':');
    AppendJsonString(node.reason, out);
  }
  out.push_back('}');
}

}  // namespace

void AppendJsonString(std::string_view text, std::string& out) {
  out.push_back('"');
  size_t run_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!NeedsEscape(c)) {
      continue;
    }
    out.append(text.data() + run_start, i - run_start);
    run_start = i + 1;
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default: {
        const char escape[] = {'\\', 'u', '0', '0', kHexDigits[c >> 4], kHexDigits[c & 0xF]};
        out.append(escape, sizeof(escape));
        break;
      }
    }
  }
  out.append(text.data() + run_start, text.size() - run_start);
  out.push_back('"');
}

void AppendFilterResult(const FilterResultView& result, std::string& out) {
  if (result.mode == NodeMode::kFullNodes) {
    out.append(R"({"Nodes":{"metadata":{},"items":[)");
    bool first = true;
    for (std::string_view raw : result.passing) {
      if (!first) {
        out.push_back(',');
      }
      first = false;
      out.append(raw);
    }
    out.append(R"(]},"NodeNames":null,"FailedNodes":)");
  } else {
    out.append(R"({"Nodes":null,"NodeNames":[)");
    bool first = true;
    for (std::string_view name : result.passing) {
      if (!first) {
        out.push_back(',');
      }
      first = false;
      AppendJsonString(name, out);
    }
    out.append(R"(],"FailedNodes":)");
  }
  AppendFailedMap(result.failed, out);
  out.append(R"(,"FailedAndUnresolvableNodes":)");
  AppendFailedMap(result.unresolvable, out);
  out.append(R"(,"Error":""})");
}

void AppendFilterError(std::string_view error, std::string& out) {
  out.append(
      R"({"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":)");
  AppendJsonString(error, out);
  out.push_back('}');
}

void AppendHostPriorityList(std::span<const HostScore> scores, std::string& out) {
  out.push_back('[');
  bool first = true;
  for (const HostScore& score : scores) {
    if (!first) {
      out.push_back(',');
    }
    first = false;
    out.append(R"({"Host":)");
    AppendJsonString(score.host, out);
    out.append(R"(,"Score":)");
    AppendInt(score.score, out);
    out.push_back('}');
  }
  out.push_back(']');
}

void AppendPreemptionResult(std::span<const MetaVictimsEntry> nodes, std::string& out) {
  out.append(R"({"NodeNameToMetaVictims":{)");
  bool first_node = true;
  for (const MetaVictimsEntry& node : nodes) {
    if (!first_node) {
      out.push_back(',');
    }
    first_node = false;
    AppendJsonString(node.node, out);
    out.append(R"(:{"Pods":[)");
    bool first_pod = true;
    for (std::string_view uid : node.uids) {
      if (!first_pod) {
        out.push_back(',');
      }
      first_pod = false;
      out.append(R"({"UID":)");
      AppendJsonString(uid, out);
      out.push_back('}');
    }
    out.append(R"(],"NumPDBViolations":)");
    AppendInt(node.num_pdb_violations, out);
    out.push_back('}');
  }
  out.append("}}");
}

void AppendBindingResult(std::string_view error, std::string& out) {
  out.append(R"({"Error":)");
  AppendJsonString(error, out);
  out.push_back('}');
}

void AppendErrorBody(std::string_view error, std::string& out) {
  out.append(R"({"Error":)");
  AppendJsonString(error, out);
  out.push_back('}');
}

}  // namespace schedext::wire
