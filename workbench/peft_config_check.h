// The checks of a PEFT adapter's adapter_config.json against the descendant a spec
// declares for it (`scion import --peft`, workbench/peft_import.h), apart from the
// tensors: the config is a file scion did not write, read through base/json_value.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "spec/workspace.h"

namespace scion::workbench {

// Every way adapter_config.json's `text` (`file` names it) does not fit `model`, one line
// each (empty: it fits): peft_type, task_type, fan_in_fan_out and base_model_name_or_path,
// then the method's own keys as its PEFT form (spec/peft_form.h) checks them. Errors: text that is not a JSON object (kSpecError).
// REQUIRES: lineage::check_peft_import(ws, model) is ok.
Result<std::vector<std::string>> peft_config_problems(std::string_view text,
                                                      const std::string& file,
                                                      const spec::Workspace& ws,
                                                      const spec::Model& model);

}  // namespace scion::workbench
