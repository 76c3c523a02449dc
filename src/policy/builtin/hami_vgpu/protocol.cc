#include "policy/builtin/hami_vgpu/protocol.h"

#include <charconv>
#include <cstddef>
#include <limits>

#include "common/civil_time.h"

namespace schedext::policy::hami {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
char Upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

// Go's encoding/json matches object keys to struct tags case-insensitively.
bool KeyIs(std::string_view key, std::string_view want) {
  if (key.size() != want.size()) {
    return false;
  }
  for (size_t i = 0; i < key.size(); ++i) {
    if (Lower(key[i]) != want[i]) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' ||
                        s.front() == '\r' || s.front() == '\v' || s.front() == '\f')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' ||
                        s.back() == '\r' || s.back() == '\v' || s.back() == '\f')) {
    s.remove_suffix(1);
  }
  return s;
}

// strconv.ParseBool.
bool ParseBool(std::string_view s, bool& out) {
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" || s == "True") {
    out = true;
    return true;
  }
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" || s == "False") {
    out = false;
    return true;
  }
  return false;
}

bool ParseInt32(std::string_view s, int64_t& out) {
  return ParseInt64(s, out) && out >= kInt32Min && out <= kInt32Max;
}

// Case-insensitive substring (strings.Contains on ToUpper of both).
bool ContainsUpper(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) {
    return false;
  }
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    size_t j = 0;
    while (j < needle.size() && Upper(haystack[i + j]) == Upper(needle[j])) {
      ++j;
    }
    if (j == needle.size()) {
      return true;
    }
  }
  return false;
}

// Calls fn(item) for each comma-separated item of `list`; stops when fn
// answers true and returns true then.
template <typename Fn>
bool AnyItem(std::string_view list, Fn&& fn) {
  size_t start = 0;
  while (true) {
    const size_t end = list.find(',', start);
    const std::string_view item =
        list.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (fn(item)) {
      return true;
    }
    if (end == std::string_view::npos) {
      return false;
    }
    start = end + 1;
  }
}

// ---- the JSON form ----

// A cursor over JSON text, enough for HAMi's register array: objects,
// arrays, strings without escapes, integers, true/false/null, and skipping
// any other value.
class JsonCursor {
 public:
  explicit JsonCursor(std::string_view text) : text_(text) {}

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ == text_.size();
  }
  bool String(std::string_view& out) {
    SkipSpace();
    if (pos_ >= text_.size() || text_[pos_] != '"') {
      return false;
    }
    const size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' || static_cast<unsigned char>(text_[pos_]) < 0x20) {
        return false;
      }
      ++pos_;
    }
    if (pos_ >= text_.size()) {
      return false;
    }
    out = text_.substr(start, pos_ - start);
    ++pos_;
    return true;
  }
  bool Literal(std::string_view word) {
    SkipSpace();
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }
  bool Null() { return Literal("null"); }
  // An integer (no fraction or exponent: Go refuses those for int fields).
  bool Integer(int64_t& out) {
    SkipSpace();
    size_t end = pos_;
    if (end < text_.size() && text_[end] == '-') {
      ++end;
    }
    while (end < text_.size() && text_[end] >= '0' && text_[end] <= '9') {
      ++end;
    }
    if (end < text_.size() && (text_[end] == '.' || text_[end] == 'e' || text_[end] == 'E')) {
      return false;
    }
    if (!ParseInt64(text_.substr(pos_, end - pos_), out)) {
      return false;
    }
    pos_ = end;
    return true;
  }
  bool Bool(bool& out) {
    if (Literal("true")) {
      out = true;
      return true;
    }
    if (Literal("false")) {
      out = false;
      return true;
    }
    return false;
  }
  // Any value, nested arrays and objects included (depth-bounded).
  bool Skip(int depth = 0) {
    if (depth > 32) {
      return false;
    }
    SkipSpace();
    if (pos_ >= text_.size()) {
      return false;
    }
    const char c = text_[pos_];
    if (c == '"') {
      std::string_view ignored;
      return String(ignored);
    }
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      if (Eat(close)) {
        return true;
      }
      do {
        if (c == '{') {
          std::string_view key;
          if (!String(key) || !Eat(':')) {
            return false;
          }
        }
        if (!Skip(depth + 1)) {
          return false;
        }
      } while (Eat(','));
      return Eat(close);
    }
    if (Literal("true") || Literal("false") || Null()) {
      return true;
    }
    size_t end = pos_;
    while (end < text_.size() && (text_[end] == '-' || text_[end] == '+' || text_[end] == '.' ||
                                  text_[end] == 'e' || text_[end] == 'E' ||
                                  (text_[end] >= '0' && text_[end] <= '9'))) {
      ++end;
    }
    if (end == pos_) {
      return false;
    }
    pos_ = end;
    return true;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

bool IntField(JsonCursor& json, int64_t& out, int64_t min, int64_t max) {
  if (json.Null()) {
    return true;
  }
  return json.Integer(out) && out >= min && out <= max;
}

bool StringField(JsonCursor& json, std::string_view& out) {
  return json.Null() || json.String(out);
}

bool DecodeDeviceObject(JsonCursor& json, Device& device) {
  if (json.Null()) {
    return true;  // a null element decodes to a nil pointer: an empty device
  }
  if (!json.Eat('{')) {
    return false;
  }
  if (json.Eat('}')) {
    return true;
  }
  do {
    std::string_view key;
    if (!json.String(key) || !json.Eat(':')) {
      return false;
    }
    bool ok = true;
    if (KeyIs(key, "id")) {
      ok = StringField(json, device.uuid);
    } else if (KeyIs(key, "type")) {
      ok = StringField(json, device.type);
    } else if (KeyIs(key, "mode")) {
      ok = StringField(json, device.mode);
    } else if (KeyIs(key, "count")) {
      ok = IntField(json, device.count, kInt32Min, kInt32Max);
    } else if (KeyIs(key, "devmem")) {
      ok = IntField(json, device.memory, kInt32Min, kInt32Max);
    } else if (KeyIs(key, "devcore")) {
      ok = IntField(json, device.cores, kInt32Min, kInt32Max);
    } else if (KeyIs(key, "numa")) {
      ok = IntField(json, device.numa, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max());
    } else if (KeyIs(key, "index")) {
      ok = IntField(json, device.index, 0, std::numeric_limits<int64_t>::max());
    } else if (KeyIs(key, "health")) {
      ok = json.Null() || json.Bool(device.healthy);
    } else {
      ok = json.Skip();
    }
    if (!ok) {
      return false;
    }
  } while (json.Eat(','));
  return json.Eat('}');
}

bool DecodeJson(std::string_view text, NodeDevices& out) {
  JsonCursor json(text);
  if (json.Null()) {
    return json.AtEnd();  // "null" is an empty list to Go
  }
  if (!json.Eat('[')) {
    return false;
  }
  if (!json.Eat(']')) {
    do {
      if (out.size == kMaxDevices) {
        return false;
      }
      Device& device = out.devices[static_cast<size_t>(out.size)];
      device = Device{};
      if (!DecodeDeviceObject(json, device)) {
        return false;
      }
      ++out.size;
    } while (json.Eat(','));
    if (!json.Eat(']')) {
      return false;
    }
  }
  return json.AtEnd();
}

// ---- the text form ----

bool DecodeTextDevice(std::string_view segment, Device& device) {
  std::array<std::string_view, 10> fields;
  size_t n = 0;
  size_t start = 0;
  while (true) {
    const size_t end = segment.find(',', start);
    if (n == fields.size()) {
      return false;
    }
    fields[n++] = segment.substr(
        start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  if (n != 7 && n != 9) {
    return false;
  }
  device = Device{};
  device.uuid = fields[0];
  device.type = fields[4];
  device.mode = "hami-core";
  if (!ParseInt32(fields[1], device.count) || !ParseInt32(fields[2], device.memory) ||
      !ParseInt32(fields[3], device.cores) || !ParseBool(fields[6], device.healthy) ||
      !ParseInt64(fields[5], device.numa)) {
    return false;
  }
  if (n == 9) {
    if (!ParseInt64(fields[7], device.index) || device.index < 0) {
      return false;
    }
    device.mode = fields[8];
  }
  return true;
}

bool DecodeText(std::string_view text, NodeDevices& out) {
  if (text.find(':') == std::string_view::npos) {
    return false;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(':', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view segment = text.substr(start, end - start);
    if (!segment.empty()) {
      if (segment.find(',') == std::string_view::npos || out.size == kMaxDevices) {
        return false;
      }
      if (!DecodeTextDevice(segment, out.devices[static_cast<size_t>(out.size)])) {
        return false;
      }
      ++out.size;
    }
    start = end + 1;
  }
  return true;
}

}  // namespace

bool ParseInt64(std::string_view text, int64_t& out) {
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    if (!text.empty() && text.front() == '-') {
      return false;
    }
  }
  if (text.empty()) {
    return false;
  }
  const char* end = text.data() + text.size();
  const std::from_chars_result r = std::from_chars(text.data(), end, out);
  return r.ec == std::errc() && r.ptr == end;
}

bool DecodeRegister(std::string_view text, NodeDevices& out) {
  out.size = 0;
  // HAMi tries JSON first and falls back to the text form.
  if (DecodeJson(text, out)) {
    return true;
  }
  out.size = 0;
  if (DecodeText(text, out)) {
    return true;
  }
  out.size = 0;
  return false;
}

int64_t HandshakeStaleFrom(std::string_view value) {
  if (value.starts_with("Deleted")) {
    return std::numeric_limits<int64_t>::min();
  }
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  if (value.find("Requesting") == std::string_view::npos) {
    return kNever;
  }
  const size_t underscore = value.find('_');
  if (underscore == std::string_view::npos) {
    return kNever;
  }
  int64_t written = 0;
  if (!ParseCivilDateTime(value.substr(underscore + 1), ' ', written)) {
    return kNever;
  }
  return written + kHandshakeTimeoutSeconds;
}

bool HandshakeStale(std::string_view value, int64_t now_unix) {
  return now_unix >= HandshakeStaleFrom(value);
}

namespace {

// The amount of `name` in the limits, else in the requests (Go's map lookup:
// presence, not the amount, decides).
std::optional<int64_t> Amount(const model::ContainerResources& container, std::string_view name) {
  for (const model::ResourceList* list : {&container.limits, &container.requests}) {
    for (const model::ScalarResource& s : list->scalars) {
      if (s.name == name) {
        return s.amount;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

ContainerRequest RequestOf(const model::ContainerResources& container,
                           const ResourceNames& names) {
  ContainerRequest r;
  const std::optional<int64_t> nums = Amount(container, names.count);
  if (!nums.has_value()) {
    return r;
  }
  r.nums = *nums;
  r.memory = Amount(container, names.memory).value_or(0);
  // 101 is HAMi's "not given".
  int64_t percent = Amount(container, names.memory_percentage).value_or(101);
  if (percent == 101 && r.memory == 0) {
    if (names.default_memory != 0) {
      r.memory = names.default_memory;
    } else {
      percent = 100;
    }
  }
  r.memory_percent = percent;
  r.cores = Amount(container, names.cores).value_or(names.default_cores);
  return r;
}

PodRules RulesOf(const model::StringMap& annotations) {
  PodRules rules;
  rules.use_types = annotations.Find(kUseTypeAnnotation);
  rules.nouse_types = annotations.Find(kNoUseTypeAnnotation);
  rules.use_uuids = annotations.Find(kUseUuidAnnotation);
  rules.nouse_uuids = annotations.Find(kNoUseUuidAnnotation);
  rules.mode = annotations.Find(kVgpuModeAnnotation);
  if (const std::optional<std::string_view> bind = annotations.Find(kNumaBindAnnotation)) {
    bool enforce = false;
    rules.numa_bind = ParseBool(*bind, enforce) && enforce;
  }
  return rules;
}

bool TypeAllowed(const PodRules& rules, const Device& device) {
  const auto type_in = [&](std::string_view list) {
    return AnyItem(list, [&](std::string_view item) {
      item = Trim(item);
      return !item.empty() && ContainsUpper(device.type, item);
    });
  };
  if (rules.use_types.has_value() && !Trim(*rules.use_types).empty() &&
      !type_in(*rules.use_types)) {
    return false;
  }
  if (rules.nouse_types.has_value() && !Trim(*rules.nouse_types).empty() &&
      type_in(*rules.nouse_types)) {
    return false;
  }
  return !rules.mode.has_value() || rules.mode->find(device.mode) != std::string_view::npos;
}

bool UuidAllowed(const PodRules& rules, const Device& device) {
  const auto uuid_in = [&](std::string_view list) {
    return AnyItem(list, [&](std::string_view item) { return Trim(item) == device.uuid; });
  };
  if (rules.use_uuids.has_value() && !Trim(*rules.use_uuids).empty() &&
      !uuid_in(*rules.use_uuids)) {
    return false;
  }
  if (rules.nouse_uuids.has_value() && !Trim(*rules.nouse_uuids).empty() &&
      uuid_in(*rules.nouse_uuids)) {
    return false;
  }
  return true;
}

void AppendContainer(std::span<const ChosenDevice> devices, std::string& out) {
  for (const ChosenDevice& d : devices) {
    out.append(d.uuid).append(",").append(kNvidiaType).append(",");
    out.append(std::to_string(d.memory)).append(",").append(std::to_string(d.cores)).append(":");
  }
  out.append(";");
}

bool DecodeAllocatedEntry(std::string_view entry, AllocatedDevice& out) {
  std::array<std::string_view, 4> fields;
  size_t n = 0;
  size_t start = 0;
  while (n < fields.size()) {
    const size_t end = entry.find(',', start);
    fields[n++] = entry.substr(
        start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  if (n < 4 || fields[0].empty() || fields[1].empty()) {
    return false;
  }
  out.uuid = fields[0];
  int64_t memory = 0;
  int64_t cores = 0;
  if (!ParseInt32(fields[2], memory) || memory < 0 || !ParseInt32(fields[3], cores) ||
      cores < 0) {
    return false;
  }
  out.memory = memory;
  out.cores = cores;
  return true;
}

}  // namespace schedext::policy::hami
