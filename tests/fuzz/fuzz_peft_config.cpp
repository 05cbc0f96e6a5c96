// libFuzzer target: any bytes as a PEFT adapter_config.json, checked against a declared
// LoRA + head descendant of a BERT base (workbench::peft_config_problems, what `scion
// import --peft` reads), must give a list of problems or a spec error, never an exception
// or a crash. Seeds: adapter configs scion exports and PEFT writes, and their
// type-confused variants (tests/fuzz/make_json_corpora.py); docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/adapters/registry.h"
#include "workbench/peft_config_check.h"

namespace {

// bert (a MiniLM-shaped BERT folder) and qv, a LoRA r 4 on q and v with a head.
const scion::spec::Workspace& workspace() {
  static const scion::spec::Workspace ws = [] {
    scion::spec::Workspace w;
    scion::spec::Model base;
    base.name = "bert";
    scion::spec::Architecture a;
    a.layers = 2;
    a.width = 32;
    a.heads = 2;
    a.ffn_width = 64;
    a.vocab_size = 100;
    a.hf_model_type = "bert";
    base.architecture = a;
    base.import_path = "/models/all-MiniLM-L6-v2";
    scion::spec::Model child;
    child.name = "qv";
    child.from = "bert";
    child.adaptation.set(scion::spec::LoraSpec{
        .rank = 4, .alpha = 8, .dropout = 0.1f, .targets = {"q", "v"}, .layers = {}});
    child.adaptation.head = scion::spec::HeadSpec{.task = scion::spec::HeadTask::kClassification,
                                                  .labels = {"negative", "positive"},
                                                  .pooling = scion::spec::Pooling::kCls};
    w.models = {base, child};
    return w;
  }();
  return ws;
}

}  // namespace

// LoRA's keys are checked by its PEFT form, which its registered block gives.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  scion::runtime::register_adaptation_methods();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const scion::spec::Workspace& ws = workspace();
  auto problems =
      scion::workbench::peft_config_problems(text, "adapter_config.json", ws, ws.models[1]);
  if (!problems && (problems.status().code() != scion::StatusCode::kSpecError ||
                    problems.status().message().empty()))
    std::abort();
  if (problems)
    for (const std::string& p : *problems)
      if (p.empty() || p.find('\n') != std::string::npos) std::abort();
  return 0;
}
