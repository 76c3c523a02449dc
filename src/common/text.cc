#include "common/text.h"

#include <charconv>
#include <system_error>

namespace schedext {
namespace {

void AppendEscaped(std::string& out, std::string_view text) {
  constexpr std::string_view kHex = "0123456789abcdef";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
}

// `text` without the leading and trailing bytes that are in `bytes`.
std::string_view TrimAny(std::string_view text, std::string_view bytes) {
  const size_t begin = text.find_first_not_of(bytes);
  if (begin == std::string_view::npos) {
    return {};
  }
  return text.substr(begin, text.find_last_not_of(bytes) - begin + 1);
}

}  // namespace

std::string Quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  AppendEscaped(out, text);
  out += '"';
  return out;
}

std::string QuoteShort(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) {
    return Quote(text);
  }
  size_t cut = max_bytes;
  // Never split a UTF-8 sequence: the message may end up in a JSON reply.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  std::string out = "\"";
  AppendEscaped(out, text.substr(0, cut));
  out += "...\"";
  return out;
}

std::string_view TrimSpace(std::string_view text) { return TrimAny(text, " \t\r\n\v\f"); }

std::string_view TrimBlanks(std::string_view text) { return TrimAny(text, " \t"); }

std::string JoinNames(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) {
      out += ", ";
    }
    out += name;
  }
  return out;
}

std::string FormatNumber(double value) {
  char buffer[64];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) {
    return std::to_string(value);
  }
  return std::string(buffer, ptr);
}

}  // namespace schedext
