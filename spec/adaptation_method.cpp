#include "spec/adaptation_method.h"

#include <cstdio>
#include <cstdlib>

#include "spec/workspace.h"

namespace scion::spec {
namespace {

struct Registry {
  std::vector<std::unique_ptr<const MethodBlock>> owned;
  std::vector<const MethodBlock*> blocks;
};

// Function-local, so registration from other translation units' start-up code finds it
// constructed whatever the order of their initialisation.
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void MethodBlock::check_family(SpecReader&, const YamlNode&, const Model&, const Architecture*,
                               const std::vector<const Model*>&) const {}

const PeftForm* MethodBlock::peft() const { return nullptr; }

std::string MethodBlock::label(const nlohmann::json&) const { return ""; }

std::map<std::string, std::vector<std::string_view>, std::less<>> MethodBlock::enum_words() const {
  return {};
}

std::string_view MethodBlock::unfoldable_adapter() const { return ""; }

std::string_view unfoldable_adapter(const Adaptation& adaptation) {
  for (const MethodBlock* block : method_blocks())
    if (adaptation.methods.contains(block->key()) && !block->unfoldable_adapter().empty())
      return block->unfoldable_adapter();
  return "";
}

void register_method_block(std::unique_ptr<const MethodBlock> block) {
  if (find_method_block(block->key()) != nullptr) {
    std::fprintf(stderr, "scion: two adaptation methods register the key '%.*s'\n",
                 static_cast<int>(block->key().size()), block->key().data());
    std::abort();
  }
  Registry& r = registry();
  r.blocks.push_back(block.get());
  r.owned.push_back(std::move(block));
}

const std::vector<const MethodBlock*>& method_blocks() { return registry().blocks; }

const MethodBlock* find_method_block(std::string_view key) {
  for (const MethodBlock* block : registry().blocks)
    if (block->key() == key) return block;
  return nullptr;
}

}  // namespace scion::spec
