// The main() of the fuzz targets when they are built without libFuzzer (g++):
// runs LLVMFuzzerTestOneInput once over every file named on the command line,
// or over every regular file of a named directory (not recursive, in name
// order so a failure reproduces in the same place). Fails when a path cannot
// be read or when no input at all was found, so a missing corpus cannot pass.
//
//   request_decoder_fuzz fuzz/corpus/request_decoder test/testdata/wire
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool ReadFile(const std::filesystem::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return false;
  }
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// The files `arg` names: itself, or a directory's regular files in name order.
bool ListInputs(const std::filesystem::path& arg, std::vector<std::filesystem::path>& out) {
  std::error_code ec;
  if (!std::filesystem::is_directory(arg, ec)) {
    out.push_back(arg);
    return true;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(arg, ec)) {
    if (entry.is_regular_file(ec)) {
      files.push_back(entry.path());
    }
  }
  if (ec) {
    std::fprintf(stderr, "replay: cannot list %s: %s\n", arg.c_str(), ec.message().c_str());
    return false;
  }
  std::sort(files.begin(), files.end());
  out.insert(out.end(), files.begin(), files.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!ListInputs(argv[i], inputs)) {
      return 1;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs (usage: %s FILE_OR_DIR...)\n", argv[0]);
    return 1;
  }
  std::string bytes;
  size_t total = 0;
  for (const auto& path : inputs) {
    if (!ReadFile(path, bytes)) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 1;
    }
    // Named first, so the log shows which input a crash came from.
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
    // A copy of exactly the input's length, as libFuzzer hands it over, so
    // AddressSanitizer sees a read past the end.
    std::vector<uint8_t> exact(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(exact.data(), exact.size());
    total += bytes.size();
  }
  std::printf("replay: %zu inputs, %zu bytes, no failure\n", inputs.size(), total);
  return 0;
}
