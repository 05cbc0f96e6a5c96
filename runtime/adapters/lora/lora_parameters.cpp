#include "runtime/adapters/lora/lora_parameters.h"

#include <algorithm>

#include "runtime/model/model_weights.h"

namespace scion::runtime {

std::string lora_parameter_name(int layer, const std::string& linear, const std::string& model,
                                char part) {
  return "blk." + std::to_string(layer) + "." + linear + kLoraMarker + model + "." + part;
}

void add_lora_parameters(const spec::LoraSpec& lora, const std::string& model,
                         const spec::Architecture& arch, int layer,
                         std::vector<ParameterSpec>& table) {
  if (!lora.layers.empty() &&
      std::find(lora.layers.begin(), lora.layers.end(), layer) == lora.layers.end())
    return;
  auto add = [&](const std::string& linear, char part, std::vector<std::int64_t> shape) {
    table.push_back(
        {lora_parameter_name(layer, linear, model, part), std::move(shape), model, true});
  };
  for (const std::string& target : lora.targets) {
    const std::string linear = linear_stem(target);
    const auto [out, in] = linear_shape(arch, linear);
    add(linear, 'a', {lora.rank, in});
    add(linear, 'b', {out, lora.rank});
    if (lora.use_dora) add(linear, 'm', {out});
  }
}

std::optional<std::string> lora_parameter_model(const std::string& name) {
  if (!name.starts_with("blk.") || name.size() < 2 || name[name.size() - 2] != '.')
    return std::nullopt;
  const char part = name.back();
  if (part != 'a' && part != 'b' && part != 'm') return std::nullopt;
  const std::size_t block_end = name.find('.', 4);
  if (block_end == std::string::npos) return std::nullopt;
  const std::string_view rest = std::string_view(name).substr(block_end + 1);
  for (const char* linear : kLinearStems) {
    const std::string prefix = std::string(linear) + kLoraMarker;
    if (!rest.starts_with(prefix) || rest.size() <= prefix.size() + 2) continue;
    return std::string(rest.substr(prefix.size(), rest.size() - prefix.size() - 2));
  }
  return std::nullopt;
}

std::int64_t lora_training_floats(const spec::LoraSpec& lora, const spec::Architecture& arch,
                                  std::int64_t tokens) {
  if (!lora.use_dora) return 0;
  const std::int64_t layers = lora.layers.empty() ? arch.layers : std::ssize(lora.layers);
  std::int64_t outs = 0, widest_out = 0, largest_weight = 0;
  for (const std::string& target : lora.targets) {
    const auto [out, in] = linear_shape(arch, linear_stem(target));
    outs += out;
    widest_out = std::max(widest_out, out);
    largest_weight = std::max(largest_weight, out * in);
  }
  return tokens * (layers * outs + widest_out) + largest_weight;
}

}  // namespace scion::runtime
