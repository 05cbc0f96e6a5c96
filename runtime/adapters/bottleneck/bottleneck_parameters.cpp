#include "runtime/adapters/bottleneck/bottleneck_parameters.h"

#include <algorithm>
#include <string_view>

namespace scion::runtime {
namespace {

constexpr std::string_view kSiteMarkers[kBlockSiteCount] = {".adapter_attn.", ".adapter_ffn."};
constexpr std::string_view kSuffixes[] = {".down.weight", ".down.bias", ".up.weight", ".up.bias"};

// The sites `settings` puts an adapter at, in parameter order.
std::vector<BlockSite> sites_of(const spec::BottleneckSpec& settings) {
  std::vector<BlockSite> sites;
  if (settings.after_attention()) sites.push_back(BlockSite::kAfterAttention);
  if (settings.after_ffn()) sites.push_back(BlockSite::kAfterFfn);
  return sites;
}

bool adapts_layer(const spec::BottleneckSpec& settings, int layer) {
  return settings.layers.empty() ||
         std::find(settings.layers.begin(), settings.layers.end(), layer) != settings.layers.end();
}

}  // namespace

int bottleneck_hidden(const spec::BottleneckSpec& settings, int width) {
  return std::max(1, width / settings.reduction);
}

std::string bottleneck_stem(int layer, BlockSite site, const std::string& model) {
  return "blk." + std::to_string(layer) + std::string(kSiteMarkers[static_cast<int>(site)]) +
         model + ".";
}

void add_bottleneck_parameters(const spec::BottleneckSpec& settings, const std::string& model,
                               const spec::Architecture& arch, int layer,
                               std::vector<ParameterSpec>& table) {
  if (!adapts_layer(settings, layer)) return;
  const std::int64_t C = arch.width, H = bottleneck_hidden(settings, arch.width);
  for (const BlockSite site : sites_of(settings)) {
    const std::string stem = bottleneck_stem(layer, site, model);
    table.push_back({stem + "down.weight", {H, C}, model, true});
    table.push_back({stem + "down.bias", {H}, model, true});
    table.push_back({stem + "up.weight", {C, H}, model, true});
    table.push_back({stem + "up.bias", {C}, model, true});
  }
}

std::optional<std::string> bottleneck_parameter_model(const std::string& name) {
  if (!name.starts_with("blk.")) return std::nullopt;
  for (const std::string_view marker : kSiteMarkers) {
    const std::size_t at = name.find(marker);
    if (at == std::string::npos) continue;
    for (const std::string_view suffix : kSuffixes) {
      const std::size_t from = at + marker.size();
      if (name.ends_with(suffix) && name.size() > from + suffix.size())
        return name.substr(from, name.size() - suffix.size() - from);
    }
  }
  return std::nullopt;
}

std::int64_t bottleneck_training_floats_per_token(const spec::BottleneckSpec& settings,
                                                  const spec::Architecture& arch) {
  const std::int64_t H = bottleneck_hidden(settings, arch.width);
  std::int64_t adapters = 0;
  for (int l = 0; l < arch.layers; ++l)
    if (adapts_layer(settings, l)) adapters += static_cast<std::int64_t>(sites_of(settings).size());
  return adapters * 2 * H + 2 * H;
}

}  // namespace scion::runtime
