#include "workbench/inherited_parameters.h"

#include "runtime/model/parameter_table.h"

namespace scion::workbench {

Status load_inherited(lineage::LineageStore& store, runtime::Backend& backend,
                      const spec::Workspace& ws, const spec::Model& model,
                      const runtime::ParameterStore& pool, const runtime::ParameterBinding& binding,
                      std::map<std::string, std::string>& digests) {
  if (model.is_base()) return Status::ok();
  auto parent = store.load_parameters(model.from);
  if (!parent) return parent.status();
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, model)) {
    if (runtime::is_new_parameter(p.name, model)) continue;
    auto it = parent->find(p.name);
    const runtime::Tensor* view = binding.find(p.name);
    if (it == parent->end() || view == nullptr)
      return corruption("parameter '" + p.name + "' of '" + model.from +
                        "' is missing from the store; retrain it with `scion adapt " + model.from +
                        " --force`");
    const runtime::Tensor stored{const_cast<std::byte*>(it->second.bytes.data()), p.shape,
                                 runtime::DType::kF32, runtime::Device::kCpu};
    if (it->second.bytes.size() != stored.bytes() || view->numel() != stored.numel() ||
        it->second.dtype != lineage::DType::kF32)
      return corruption("stored parameter '" + p.name + "' of '" + model.from +
                        "' does not match the spec's shape " + runtime::shape_string(p.shape));
    digests[p.name] = it->second.digest;
    if (!pool.is_new(*view)) continue;
    runtime::copy_to_device_as(backend, *view, stored);
  }
  return Status::ok();
}

}  // namespace scion::workbench
