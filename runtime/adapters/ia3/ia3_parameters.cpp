#include "runtime/adapters/ia3/ia3_parameters.h"

#include <algorithm>

namespace scion::runtime {

std::string ia3_linear_stem(const std::string& target) {
  return target == "q" || target == "k" || target == "v" || target == "o" ? "attn_" + target
                                                                          : target;
}

std::string ia3_parameter_name(int layer, const std::string& stem, const std::string& model,
                               bool on_input) {
  return "blk." + std::to_string(layer) + "." + stem + kIa3Marker + model +
         (on_input ? ".in" : ".out");
}

void add_ia3_parameters(const spec::Ia3Spec& ia3, const std::string& model,
                        const spec::Architecture& arch, int layer,
                        std::vector<ParameterSpec>& table) {
  for (const char* target : spec::kLinearTargets) {
    if (!ia3.adapts(target, layer)) continue;
    const bool on_input =
        std::find(ia3.feedforward.begin(), ia3.feedforward.end(), target) != ia3.feedforward.end();
    const std::string stem = ia3_linear_stem(target);
    const auto [out, in] = linear_shape(arch, stem);
    table.push_back(
        {ia3_parameter_name(layer, stem, model, on_input),
         on_input ? std::vector<std::int64_t>{1, in} : std::vector<std::int64_t>{out, 1}, model,
         true});
  }
}

std::int64_t ia3_training_floats_per_token(const spec::Ia3Spec& ia3,
                                           const spec::Architecture& arch) {
  std::int64_t saved = 0, widest_in = 0, widest_out = 0;
  for (int l = 0; l < arch.layers; ++l)
    for (const char* target : spec::kLinearTargets) {
      if (!ia3.adapts(target, l)) continue;
      const auto [out, in] = linear_shape(arch, ia3_linear_stem(target));
      const bool on_input = std::find(ia3.feedforward.begin(), ia3.feedforward.end(), target) !=
                            ia3.feedforward.end();
      if (on_input) {
        widest_in = std::max(widest_in, in);
      } else {
        saved += out;
        widest_out = std::max(widest_out, out);
      }
    }
  return saved + 2 * widest_in + widest_out;
}

bool is_ia3_parameter(const std::string& name) {
  return name.starts_with("blk.") && name.find(kIa3Marker) != std::string::npos &&
         (name.ends_with(".in") || name.ends_with(".out"));
}

}  // namespace scion::runtime
