// Runs a libFuzzer target's LLVMFuzzerTestOneInput over seed files, without libFuzzer: the
// default test suite builds every target of tests/fuzz/ with this main (any compiler) and
// replays its seeds, so a target that no longer compiles, or a seed that now crashes or
// trips the target's own checks (they std::abort), fails CI instead of rotting until the
// next clang fuzzing run.
//
//   fuzz_replay_<target> [--suffix S] PATH...
//
// Each PATH is a file or a folder (searched recursively, in name order); with --suffix only
// files whose name ends in S are fed. Fails (exit 1) when no file was fed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Optional in a target (fuzz_spec_loader's sets up its data folder and the methods).
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

std::vector<std::filesystem::path> seeds(const std::vector<std::string>& paths,
                                         const std::string& suffix) {
  std::vector<std::filesystem::path> out;
  const auto take = [&](const std::filesystem::path& p) {
    if (p.filename().string().ends_with(suffix)) out.push_back(p);
  };
  for (const std::string& path : paths) {
    if (!std::filesystem::is_directory(path)) {
      take(path);
      continue;
    }
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path))
      if (entry.is_regular_file()) found.push_back(entry.path());
    std::sort(found.begin(), found.end());
    for (const auto& p : found) take(p);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string suffix;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--suffix" && i + 1 < argc)
      suffix = argv[++i];
    else
      paths.push_back(arg);
  }
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  const std::vector<std::filesystem::path> files = seeds(paths, suffix);
  for (const std::filesystem::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", file.c_str());
      return 1;
    }
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
    std::printf("%s (%zu bytes)\n", file.c_str(), bytes.size());
    std::fflush(stdout);  // the last name printed is the seed that crashed, if one does
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("%zu inputs replayed\n", files.size());
  if (files.empty()) std::fprintf(stderr, "no seed files found\n");
  return files.empty() ? 1 : 0;
}
