// FieldDecoder's primitives (json_fields.h): failure paths, typed reads of
// scalars, strings, quantities, string maps and lists, resource lists, object
// metadata and the document root. The per-kind walkers built on them are in
// pod_fields.cc and node_fields.cc; RequestDecoder (decoder.cc) and
// ObjectDecoder (object_decoder.cc) use both.
#include "wire/json_fields.h"

#include <simdjson.h>

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/text.h"
#include "schedext/model/resources.h"
#include "schedext/wire/request_buffer.h"
#include "wire/json_scan.h"

namespace schedext::wire {
namespace internal {
namespace {

// A number token for an error message: as it is when short and plain, else
// quoted and cut, so a megabyte of digits costs the reply 40 bytes.
std::string TokenText(std::string_view token) {
  constexpr size_t kMaxPlain = 40;
  bool plain = token.size() <= kMaxPlain;
  for (size_t i = 0; plain && i < token.size(); ++i) {
    const char c = token[i];
    plain = c > ' ' && c < 0x7f && c != '"' && c != '\\';
  }
  return plain ? std::string(token) : QuoteShort(token, kMaxPlain);
}

static_assert(kJsonPadding >= simdjson::SIMDJSON_PADDING,
              "RequestBuffer padding must cover simdjson's");

// A JSON number token (RFC 8259 grammar): -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsJsonNumber(std::string_view token) {
  size_t i = 0;
  auto digits = [&]() {
    const size_t begin = i;
    while (i < token.size() && token[i] >= '0' && token[i] <= '9') {
      ++i;
    }
    return i - begin;
  };
  if (i < token.size() && token[i] == '-') {
    ++i;
  }
  const size_t int_start = i;
  const size_t int_digits = digits();
  if (int_digits == 0 || (int_digits > 1 && token[int_start] == '0')) {
    return false;
  }
  if (i < token.size() && token[i] == '.') {
    ++i;
    if (digits() == 0) {
      return false;
    }
  }
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    if (i < token.size() && (token[i] == '+' || token[i] == '-')) {
      ++i;
    }
    if (digits() == 0) {
      return false;
    }
  }
  return i == token.size();
}

// -?[0-9]+
bool IsIntegerToken(std::string_view token) {
  if (!token.empty() && token.front() == '-') {
    token.remove_prefix(1);
  }
  if (token.empty()) {
    return false;
  }
  for (char c : token) {
    if (c < '0' || c > '9') {
      return false;
    }
  }
  return true;
}

// A lowercase message for a simdjson error code.
std::string SimdjsonErrorText(simdjson::error_code code) {
  switch (code) {
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
      return "malformed JSON: the document is truncated, unbalanced or followed by trailing data";
    case simdjson::TAPE_ERROR:
      return "malformed JSON: missing or superfluous commas, colons, braces or brackets";
    case simdjson::UNCLOSED_STRING:
      return "malformed JSON: unclosed string";
    case simdjson::STRING_ERROR:
      return "malformed JSON: invalid string (bad escape or control character)";
    case simdjson::UTF8_ERROR:
      return "malformed JSON: invalid UTF-8";
    case simdjson::UNESCAPED_CHARS:
      return "malformed JSON: unescaped control character in a string";
    case simdjson::NUMBER_ERROR:
      return "malformed JSON: invalid number";
    case simdjson::T_ATOM_ERROR:
    case simdjson::F_ATOM_ERROR:
    case simdjson::N_ATOM_ERROR:
      return "malformed JSON: invalid literal";
    case simdjson::DEPTH_ERROR:
      return "malformed JSON: nested too deeply";
    case simdjson::CAPACITY:
      return "document too large";
    case simdjson::MEMALLOC:
      return "out of memory while parsing";
    case simdjson::EMPTY:
      return "empty body";
    default: {
      std::string text = "malformed JSON: ";
      text += simdjson::error_message(code);
      return text;
    }
  }
}

}  // namespace

bool FieldDecoder::Fail(std::string message) {
  error_ = std::move(message);
  reverse_path_.clear();
  return false;
}
bool FieldDecoder::Fail(simdjson::error_code code) { return Fail(SimdjsonErrorText(code)); }

bool FieldDecoder::At(std::string_view segment) {
  reverse_path_.emplace_back(segment);
  return false;
}

bool FieldDecoder::AtIndex(size_t index) {
  char digits[24];
  const std::to_chars_result result = std::to_chars(digits, digits + sizeof(digits), index);
  reverse_path_.emplace_back(digits, result.ptr);
  return false;
}

Status FieldDecoder::TakeError(std::string_view message_type) {
  std::string message = "decode ";
  message.append(message_type).append(": ");
  if (!reverse_path_.empty()) {
    for (auto it = reverse_path_.rbegin(); it != reverse_path_.rend(); ++it) {
      message.push_back('/');
      message.append(*it);
    }
    message.append(": ");
  }
  message.append(error_);
  error_.clear();
  reverse_path_.clear();
  return InvalidArgumentError(std::move(message));
}

bool FieldDecoder::ReadType(od::value& v, od::json_type& type) {
  if (auto code = v.type().get(type)) {
    return Fail(code);
  }
  if (type == od::json_type::null && TrimJsonSpace(v.raw_json_token()) != "null") {
    return Fail("malformed JSON: invalid literal");
  }
  return true;
}

bool FieldDecoder::ReadKey(od::field& field, std::string_view& key) {
  const char* raw = field.key().raw();
  size_t length = 0;
  while (raw[length] != '"' && raw[length] != '\\') {
    ++length;
  }
  if (raw[length] == '"') {
    key = std::string_view(raw, length);
    return true;
  }
  if (auto code = field.unescaped_key().get(key)) {
    return Fail(code);
  }
  return true;
}

bool FieldDecoder::IsNull(od::value& v, bool& is_null) {
  od::json_type type{};
  if (!ReadType(v, type)) {
    return false;
  }
  is_null = type == od::json_type::null;
  return true;
}

namespace {

// The string of `v`, whose type the caller has read already.
bool StringOfType(FieldDecoder& d, od::value& v, od::json_type type, std::string_view& out) {
  if (type != od::json_type::string) {
    return d.Fail("expected a string");
  }
  if (auto code = v.get_string().get(out)) {
    return d.Fail(code);
  }
  return true;
}

}  // namespace

bool FieldDecoder::ReadString(od::value& v, std::string_view& out) {
  od::json_type type{};
  if (!ReadType(v, type)) {
    return false;
  }
  return type == od::json_type::null || StringOfType(*this, v, type, out);
}

bool FieldDecoder::ReadRequiredString(od::value& v, std::string_view& out) {
  od::json_type type{};
  return ReadType(v, type) && StringOfType(*this, v, type, out);
}

bool FieldDecoder::ReadBool(od::value& v, bool& out) {
  od::json_type type{};
  if (!ReadType(v, type)) {
    return false;
  }
  if (type == od::json_type::null) {
    return true;
  }
  if (type != od::json_type::boolean) {
    return Fail("expected a boolean");
  }
  if (auto code = v.get_bool().get(out)) {
    return Fail(code);
  }
  return true;
}

bool FieldDecoder::ReadInt64(od::value& v, int64_t& out) {
  od::json_type type{};
  if (!ReadType(v, type)) {
    return false;
  }
  if (type == od::json_type::null) {
    return true;
  }
  if (type != od::json_type::number) {
    return Fail("expected an integer");
  }
  const std::string_view token = TrimJsonSpace(v.raw_json_token());
  int64_t value = 0;
  if (auto code = v.get_int64().get(value)) {
    if (code != simdjson::INCORRECT_TYPE && code != simdjson::NUMBER_OUT_OF_RANGE) {
      return Fail(code);
    }
    // simdjson 3.0.1 reports both 5.0 and 2^63 as INCORRECT_TYPE.
    if (IsIntegerToken(token)) {
      return Fail("integer " + TokenText(token) + " is out of the int64 range");
    }
    return Fail("expected an integer, got " + TokenText(token));
  }
  out = value;
  return true;
}

bool FieldDecoder::ReadInt32(od::value& v, int32_t& out) {
  int64_t value = out;
  if (!ReadInt64(v, value)) {
    return false;
  }
  if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()) {
    std::string message = "integer ";
    message.append(std::to_string(value)).append(" is out of the int32 range");
    return Fail(std::move(message));
  }
  out = static_cast<int32_t>(value);
  return true;
}

bool FieldDecoder::ReadQuantity(std::string_view name, od::value& v, int64_t& amount) {
  od::json_type type{};
  if (!ReadType(v, type)) {
    return false;
  }
  std::string_view text;
  switch (type) {
    case od::json_type::null:
      amount = 0;
      return true;
    case od::json_type::string:
      if (auto code = v.get_string().get(text)) {
        return Fail(code);
      }
      text = TrimJsonSpace(text);
      break;
    case od::json_type::number:
      text = TrimJsonSpace(v.raw_json_token());
      if (!IsJsonNumber(text)) {
        std::string message = "malformed JSON: invalid number ";
        message.append(TokenText(text));
        return Fail(std::move(message));
      }
      break;
    default:
      return Fail("expected a quantity (a string or a number)");
  }
  StatusOr<int64_t> parsed = model::ParseResourceAmount(name, text);
  if (!parsed.ok()) {
    // The model names the resource ("cpu: invalid quantity ..."); the path
    // already ends with it.
    std::string message = parsed.status().message();
    if (message.size() > name.size() + 2 && message.compare(0, name.size(), name) == 0 &&
        message.compare(name.size(), 2, ": ") == 0) {
      message.erase(0, name.size() + 2);
    }
    return Fail(std::move(message));
  }
  amount = *parsed;
  return true;
}

bool FieldDecoder::ReadStringMap(od::value& v, model::StringMap& map) {
  map.Clear();
  return ForEachField(v, [&](std::string_view key, od::value& value) {
    std::string_view text;
    if (!ReadString(value, text)) {
      return false;
    }
    map.Set(key, text);
    return true;
  });
}

bool FieldDecoder::ReadStringList(od::value& v, std::vector<std::string_view>& out) {
  out.clear();
  return ForEachElement(v, [&](size_t, od::value& element) {
    std::string_view text;
    if (!ReadRequiredString(element, text)) {
      return false;
    }
    out.push_back(text);
    return true;
  });
}

bool FieldDecoder::ReadLargeRootStringList(od::value& v, std::vector<std::string_view>& out,
                                           bool& quoted) {
  out.clear();
  const char* after =
      document_end_ == nullptr
          ? nullptr
          : ScanPlainStringArray(v.raw_json_token().data(), document_end_, out);
  quoted = after != nullptr;
  if (after == nullptr) {
    out.clear();
    return ReadStringList(v, out);
  }
  // Only the root's closing brace left: no later field can change anything,
  // and the on-demand walk would only step through every name again.
  if (OnlyRootCloseLeft(after, document_end_)) {
    document_read_ = true;
  }
  return true;
}

bool FieldDecoder::ReadResourceList(od::value& v, model::ResourceList& list,
                                    model::ContainerResources* container) {
  list.Clear();
  if (container != nullptr) {
    container->has_cpu_request = false;
    container->has_memory_request = false;
  }
  return ForEachField(v, [&](std::string_view name, od::value& value) {
    int64_t amount = 0;
    if (!ReadQuantity(name, value, amount)) {
      return false;
    }
    list.Set(name, amount);
    if (container != nullptr) {
      if (name == model::kResourceCpu) {
        container->has_cpu_request = true;
      } else if (name == model::kResourceMemory) {
        container->has_memory_request = true;
      }
    }
    return true;
  });
}

bool FieldDecoder::ReadObjectMeta(std::string_view key, od::value& value, ObjectMeta& meta) {
  if (KeyIs(key, "resourceVersion")) {
    return ReadString(value, meta.resource_version);
  }
  if (KeyIs(key, "deletionTimestamp")) {
    std::string_view text;
    if (!ReadString(value, text)) {
      return false;
    }
    meta.has_deletion_timestamp = !text.empty();
    return true;
  }
  return true;
}

bool FieldDecoder::BeginDocument(od::parser& parser, const char* data, size_t size, size_t capacity,
                                 od::document& doc, bool& is_null) {
  is_null = false;
  document_end_ = data + size;
  document_read_ = false;
  const std::string_view text = TrimJsonSpace(std::string_view(data, size));
  if (text.empty()) {
    return Fail("empty body");
  }
  if (text == "null") {
    // simdjson 3.0.1's root is_null() is false for "null\n"; decide here.
    is_null = true;
    return true;
  }
  if (auto code = parser.iterate(data, size, capacity).get(doc)) {
    return Fail(code);
  }
  od::json_type type{};
  if (auto code = doc.type().get(type)) {
    return Fail(code);
  }
  if (type != od::json_type::object) {
    return Fail("expected a JSON object");
  }
  return true;
}

}  // namespace internal
}  // namespace schedext::wire
