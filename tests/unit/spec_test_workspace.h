// A temporary workspace directory with small data files, for spec tests.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "spec/loader.h"

namespace scion::spec::testing {

// The datasets and base model most tests build on: 9 lines, so a model appended after it
// starts on line 10.
inline constexpr const char* kPrefix =
    "datasets:\n"
    "  reviews:\n"
    "    path: reviews.jsonl\n"
    "    labels: [negative, positive]\n"
    "  corpus: {path: corpus.txt}\n"
    "models:\n"
    "  base:\n"
    "    architecture: {layers: 2, width: 16, heads: 4, max_length: 32}\n"
    "    train: {data: corpus, steps: 10}\n";

class TempWorkspace {
 public:
  TempWorkspace() {
    std::string pattern = (std::filesystem::temp_directory_path() / "scion-spec-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    write("reviews.jsonl",
          "{\"text\": \"good\", \"label\": \"positive\"}\n"
          "{\"text\": \"bad\", \"label\": \"negative\"}\n");
    write("corpus.txt", "some text\nmore text\n");
  }
  ~TempWorkspace() { std::filesystem::remove_all(dir_); }
  TempWorkspace(const TempWorkspace&) = delete;
  TempWorkspace& operator=(const TempWorkspace&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  void write(const std::string& name, const std::string& content) const {
    std::ofstream(dir_ / name, std::ios::binary) << content;
  }

  LoadResult load(const std::string& yaml) const {
    return load_workspace_from_string(yaml, "scion.yaml", dir_);
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace scion::spec::testing
