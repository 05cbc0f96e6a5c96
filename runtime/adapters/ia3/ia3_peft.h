// (IA)³ in PEFT 0.10's adapter files (spec/peft_form.h): peft_type IA3, one `<module>.ia3_l`
// per scaled linear (of PEFT's shapes already: (out, 1) for an output, (1, in) for an
// input), target_modules and feedforward_modules as regular expressions, and the check of
// an imported adapter_config.json against the declaration.
//
// PEFT matches each module of the task model (its name, such as
// "bert.encoder.layer.0.attention.self.key"): target_modules as a string is a regular
// expression full-matched against the name, as a list names that the module's name is or
// ends with after a dot; feedforward_modules as a string likewise, as a list names the
// module's name ends with (a plain string end: "output.dense" also takes
// "attention.output.dense"). A targeted module that is also feed-forward has its input
// scaled, any other targeted module its output. So scion writes regular expressions, and
// reads an adapter saved with module-name lists (PEFT's usual form) as PEFT would. Only the
// base's linear layers are compared (a module outside them shows up as an extra tensor).
#pragma once

#include "spec/peft_form.h"

namespace scion::spec {

// The one PEFT form of (IA)³, which its MethodBlock (ia3_spec.h) returns.
const PeftForm& ia3_peft_form();

}  // namespace scion::spec
