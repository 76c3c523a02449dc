// The byte scanners under the codec (src/wire/json_scan.h): FirstEscape
// against a byte-by-byte reading at every length and flagged position around
// its 8- and 16-byte steps; ScanPlainStringArray's compact 64-byte path and
// its general loop, and the hand-overs between them.
#include "wire/json_scan.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace schedext::wire::internal {
namespace {

template <bool kNonAscii>
size_t ByteByByte(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (NeedsEscape(c) || (kNonAscii && c >= 0x80)) {
      return i;
    }
  }
  return text.size();
}

// Clean text of `length` bytes, bytes that never need escaping included
// (' ', DEL, '/'), and, unless kNonAscii, bytes of 0x80 and above.
template <bool kNonAscii>
std::string CleanText(size_t length) {
  std::string text;
  const std::string_view alphabet =
      kNonAscii ? std::string_view("abc-0.9 /\x7f~") : std::string_view("abc-0.9 /\x7f~\x80\xff");
  for (size_t i = 0; i < length; ++i) {
    text.push_back(alphabet[i % alphabet.size()]);
  }
  return text;
}

template <bool kNonAscii>
void CheckEveryLengthAndPosition(std::string_view flagged) {
  for (size_t length = 0; length <= 200; ++length) {
    const std::string clean = CleanText<kNonAscii>(length);
    ASSERT_EQ(FirstEscape<kNonAscii>(clean), length) << "clean, length " << length;
    for (size_t at = 0; at < length; ++at) {
      for (const char c : flagged) {
        std::string text = clean;
        text[at] = c;
        // A second flagged byte further on must not win over the first.
        if (at + 7 < length) {
          text[at + 7] = '"';
        }
        ASSERT_EQ(FirstEscape<kNonAscii>(text), ByteByByte<kNonAscii>(text))
            << "length " << length << ", byte " << static_cast<int>(c) << " at " << at;
        ASSERT_EQ(FirstEscape<kNonAscii>(text), at);
      }
    }
  }
}

TEST(JsonScanTest, FirstEscapeFindsTheFirstQuoteBackslashOrControlByte) {
  CheckEveryLengthAndPosition<false>(std::string_view("\"\\\x01\x1f\0", 5));
}

TEST(JsonScanTest, FirstEscapeWithNonAsciiAlsoStopsAtHighBytes) {
  CheckEveryLengthAndPosition<true>(std::string_view("\"\\\x01\x80\xff", 5));
}

// The names of a request body, compact as Go's encoder writes them.
std::string NamesArray(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "\"" : ",\"") + names[i] + "\"";
  }
  return out + "]";
}

TEST(JsonScanTest, ScanPlainStringArrayReadsNamesOfEveryLengthAcrossSteps) {
  std::vector<std::string> names;
  for (size_t length = 0; length <= 150; ++length) {
    names.push_back(CleanText<true>(length));
  }
  const std::string body = NamesArray(names) + "}";
  std::vector<std::string_view> out;
  const char* after = ScanPlainStringArray<true>(body.data(), body.data() + body.size(), out);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(std::string_view(after), "}");
  ASSERT_EQ(out.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(out[i], names[i]) << i;
  }
}

template <bool kNonAscii>
std::vector<std::string_view> ScanAll(const std::string& body, std::string_view expect_after) {
  std::vector<std::string_view> out;
  const char* after = ScanPlainStringArray<kNonAscii>(body.data(), body.data() + body.size(), out);
  EXPECT_NE(after, nullptr);
  if (after == nullptr) {
    return {};
  }
  EXPECT_EQ(std::string_view(after), expect_after);
  return out;
}

std::vector<std::string> NumberedNames(size_t count, size_t from = 0) {
  std::vector<std::string> names;
  for (size_t i = from; i < from + count; ++i) {
    names.push_back("node-" + std::string(i % 37, 'x') + "-" + std::to_string(i));
  }
  return names;
}

std::vector<std::string_view> Views(const std::vector<std::string>& names) {
  return {names.begin(), names.end()};
}

TEST(JsonScanTest, ScanPlainStringArrayGoesBetweenCompactAndSpacedElements) {
  std::vector<std::string> names = NumberedNames(300);
  // Compact, then one spaced separator and one spaced name, then compact.
  std::string body = NamesArray(names);
  const std::string spaced = "\"" + names[150] + "\"";
  const size_t at = body.find(spaced);
  ASSERT_NE(at, std::string::npos);
  body.replace(at - 1, 1 + spaced.size() + 1, " ,\n\t" + spaced + "\r\n,");
  // And a space after one comma only, as in ["a", "b"].
  const std::string after_comma = ",\"" + names[200] + "\"";
  body.replace(body.find(after_comma), 1, ", ");
  EXPECT_EQ(ScanAll<true>(body + "\n}", "\n}"), Views(names));
  EXPECT_EQ(ScanAll<false>(body + "\n}", "\n}"), Views(names));
}

TEST(JsonScanTest, ScanPlainStringArrayStopsAtTheArrayWhateverFollowsIt) {
  const std::vector<std::string> names = NumberedNames(40);
  // After the array, inside the last 64-byte step: a control byte, an escape,
  // quotes and non-ASCII, none of which is part of the array.
  const std::string after = "],\"x\":\"a\\n\xc3\xa9\t\"}";
  const std::string body = NamesArray(names).substr(0, NamesArray(names).size() - 1) + after;
  EXPECT_EQ(ScanAll<true>(body, after.substr(1)), Views(names));
}

TEST(JsonScanTest, ScanPlainStringArrayAsksForAsciiOnlyWhenTold) {
  std::vector<std::string> names = NumberedNames(200);
  names[120] += "\xc3\xa9";  // é, UTF-8
  const std::string body = NamesArray(names);
  EXPECT_EQ(ScanAll<false>(body, ""), Views(names));
  std::vector<std::string_view> out;
  EXPECT_EQ(ScanPlainStringArray<true>(body.data(), body.data() + body.size(), out), nullptr);
}

TEST(JsonScanTest, ScanPlainStringArrayRefusesAnEscapeDeepInALongArray) {
  for (const std::string_view bad : {"\\\"", "\\u0041", "\x01", "\t"}) {
    std::vector<std::string> names = NumberedNames(3000);
    names[2345].insert(3, bad);
    const std::string body = NamesArray(names);
    std::vector<std::string_view> out;
    EXPECT_EQ(ScanPlainStringArray<false>(body.data(), body.data() + body.size(), out), nullptr)
        << bad;
  }
}

TEST(JsonScanTest, ScanPlainStringArrayTakesWhitespaceBetweenElements) {
  const std::string body = "[ \"a\" ,\n\t\"bb\"\r\n ]";
  std::vector<std::string_view> out;
  const char* after = ScanPlainStringArray<true>(body.data(), body.data() + body.size(), out);
  ASSERT_EQ(after, body.data() + body.size());
  EXPECT_EQ(out, (std::vector<std::string_view>{"a", "bb"}));
}

TEST(JsonScanTest, ScanPlainStringArrayRefusesWhatItCannotReadInPlace) {
  const std::string long_name(100, 'n');
  for (const std::string& body : std::vector<std::string>{
           "[\"" + long_name + "\\u0041\"]",   // an escape after 100 bytes
           "[\"" + long_name + "\xc3\xa9\"]",  // non-ASCII
           "[\"" + long_name + "\",1]",        // not a string
           "[\"" + long_name + "\"",           // no closing bracket
           "[\"" + long_name,                  // no closing quote
           std::string("{\"a\"}"),             // not an array
       }) {
    std::vector<std::string_view> out;
    EXPECT_EQ(ScanPlainStringArray<true>(body.data(), body.data() + body.size(), out), nullptr)
        << body;
  }
  std::vector<std::string_view> out;
  const std::string empty = "[ ]";
  EXPECT_EQ(ScanPlainStringArray<true>(empty.data(), empty.data() + empty.size(), out),
            empty.data() + empty.size());
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace schedext::wire::internal
