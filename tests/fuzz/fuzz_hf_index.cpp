// libFuzzer target: any bytes as a Hugging Face model.safetensors.index.json
// (spec::hf_index_shards, what import reads to find a sharded model's files) must give
// shard names that are files of the folder itself, or a spec error; never an exception,
// a crash or a path that leaves the folder. Seeds: an index as save_pretrained writes one
// and its type-confused variants (tests/fuzz/make_json_corpora.py); docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "spec/hf_model_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto shards = scion::spec::hf_index_shards(text, "model.safetensors.index.json");
  if (!shards && (shards.status().code() != scion::StatusCode::kSpecError ||
                  shards.status().message().empty()))
    std::abort();
  if (shards)
    for (const std::string& shard : *shards)
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
        std::abort();
  return 0;
}
