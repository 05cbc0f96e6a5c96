#include "runtime/adapters/bottleneck/bottleneck_spec.h"

#include <fmt/format.h>

#include <string>

#include "spec/workspace.h"

namespace scion::spec {

std::string_view word(BottleneckPlacement placement) {
  for (const Choice<BottleneckPlacement>& choice : kBottleneckPlacements)
    if (choice.value == placement) return choice.word;
  return "?";  // unreachable: every placement has a word
}

nlohmann::json BottleneckSpec::json() const {
  return {{"reduction", reduction}, {"placement", static_cast<int>(placement)}, {"layers", layers}};
}

namespace {

constexpr std::string_view kBottleneckKeys[] = {"reduction", "placement", "layers"};
constexpr int kUnknownLimit = 1 << 20;  // bounds used when the architecture is unknown

BottleneckSpec read_bottleneck(SpecReader& r, const YamlNode& node, const std::string& path,
                               const Architecture* a) {
  BottleneckSpec s;
  r.check_keys(node, path, kBottleneckKeys);
  const int width = a ? a->width : kUnknownLimit;
  if (a && s.reduction > width) s.reduction = width;  // default 16 on a width below 16
  r.read_int(find(node, "reduction"), join_path(path, "reduction"), s.reduction, 1, width,
             a ? fmt::format("an integer from 1 to {} (the base's width; hidden = width / "
                             "reduction)",
                             width)
               : std::string("a positive integer"));
  r.read_choice<BottleneckPlacement>(find(node, "placement"), join_path(path, "placement"),
                                     kBottleneckPlacements, s.placement, "bottleneck placement");
  const int layers = a ? a->layers : kUnknownLimit;
  r.read_int_list(
      find(node, "layers"), join_path(path, "layers"), s.layers, 0, layers - 1,
      a ? fmt::format("a layer index from 0 to {} (the base has {} layers)", layers - 1, layers)
        : std::string("a layer index of at least 0"));
  return s;
}

// The placement of a record: its index (canonical) or its word (spec words); false when
// it is neither.
bool placement_from_json(const nlohmann::json& value, BottleneckPlacement& out) {
  if (value.is_number_integer()) {
    const auto index = value.get<std::int64_t>();
    if (index < 0 || index >= static_cast<std::int64_t>(std::size(kBottleneckPlacements)))
      return false;
    out = static_cast<BottleneckPlacement>(index);
    return true;
  }
  if (!value.is_string()) return false;
  for (const Choice<BottleneckPlacement>& choice : kBottleneckPlacements)
    if (choice.word == value.get_ref<const std::string&>()) {
      out = choice.value;
      return true;
    }
  return false;
}

class BottleneckBlock final : public MethodBlock {
 public:
  std::string_view key() const override { return BottleneckSpec::kKey; }
  std::span<const std::string_view> keys() const override { return kBottleneckKeys; }

  std::shared_ptr<const MethodSettings> read(SpecReader& reader, const YamlNode& node,
                                             const std::string& path,
                                             const Architecture* arch) const override {
    return std::make_shared<const MethodSettingsOf<BottleneckSpec>>(
        read_bottleneck(reader, node, path, arch));
  }

  std::shared_ptr<const MethodSettings> from_json(const nlohmann::json& json) const override {
    try {
      BottleneckSpec s{.reduction = json.at("reduction").get<int>(),
                       .layers = json.at("layers").get<std::vector<int>>()};
      if (!placement_from_json(json.at("placement"), s.placement)) return nullptr;
      return std::make_shared<const MethodSettingsOf<BottleneckSpec>>(std::move(s));
    } catch (const nlohmann::json::exception&) {
      return nullptr;
    }
  }

  std::map<std::string, std::vector<std::string_view>, std::less<>> enum_words() const override {
    std::vector<std::string_view> placements;  // by index
    for (int i = 0; i < static_cast<int>(std::size(kBottleneckPlacements)); ++i)
      placements.push_back(word(static_cast<BottleneckPlacement>(i)));
    return {{"placement", placements}};
  }

  nlohmann::json key_schemas() const override {
    nlohmann::json placements = nlohmann::json::array();
    for (const Choice<BottleneckPlacement>& choice : kBottleneckPlacements)
      placements.push_back(std::string(choice.word));
    return {{"reduction", {{"type", "integer"}}},
            {"placement", {{"enum", placements}}},
            {"layers", {{"type", "array"}, {"items", {{"type", "integer"}}}}}};
  }

  std::string_view description() const override { return "small MLPs inside each layer"; }

  std::string_view unfoldable_adapter() const override { return "bottleneck adapter"; }
};

}  // namespace

std::unique_ptr<const MethodBlock> make_bottleneck_block() {
  return std::make_unique<BottleneckBlock>();
}

}  // namespace scion::spec
