#include "spec/peft_form.h"

#include <charconv>

namespace scion::spec {

std::optional<LinearParameter> linear_parameter(std::string_view name, std::string_view marker) {
  const std::size_t at = name.find(marker);
  if (!name.starts_with("blk.") || at == std::string_view::npos) return std::nullopt;
  const std::size_t dot = name.find('.', 4);
  if (dot == std::string_view::npos || dot >= at) return std::nullopt;
  LinearParameter out;
  const auto [end, ec] = std::from_chars(name.data() + 4, name.data() + dot, out.layer);
  if (ec != std::errc() || end != name.data() + dot) return std::nullopt;
  std::string_view stem = name.substr(dot + 1, at - dot - 1);
  if (stem.starts_with("attn_")) stem.remove_prefix(5);
  out.target = std::string(stem);
  out.rest = std::string(name.substr(at + marker.size()));
  return out;
}

std::vector<PeftTensor> PeftForm::tensors(const std::vector<PeftTensor>& own,
                                          const std::string& model,
                                          const PeftLayout& layout) const {
  std::vector<PeftTensor> out;
  for (const PeftTensor& t : own)
    if (auto key = tensor_key(t.name, model, layout)) out.push_back({*key, t.shape, t.values});
  return out;
}

}  // namespace scion::spec
