// libFuzzer target: any bytes as a Hugging Face config.json (spec::hf_config_architecture,
// what validate and import read) must give an architecture or a spec error, never an
// exception, a crash or undefined behaviour. A wrong JSON type at any
// key is the case this guards (issue #29): the seed corpus holds the real configs with
// every key's value replaced by every other JSON type (tests/fuzz/make_json_corpora.py).
// See docs/fuzzing.md for how to build and run it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "spec/hf_model_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto arch = scion::spec::hf_config_architecture(text, "config.json");
  // Errors are spec errors (exit 2) with a message, nothing else.
  if (!arch &&
      (arch.status().code() != scion::StatusCode::kSpecError || arch.status().message().empty()))
    std::abort();
  if (arch && (arch->layers < 1 || arch->width < 1 || arch->heads < 1 ||
               arch->width % arch->heads != 0 || arch->vocab_size < 1))
    std::abort();
  return 0;
}
