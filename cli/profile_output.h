// `--profile` of `scion train`, `adapt` and `run`: the run's OpProfile (runtime/op_profile.h)
// as text, one line per class of work with its share of the run, and as the `profile` key
// of the --json summary (docs/json.md).
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/op_profile.h"

namespace scion::cli {

void print_profile(const runtime::OpProfile& profile);
nlohmann::json profile_json(const runtime::OpProfile& profile);

}  // namespace scion::cli
