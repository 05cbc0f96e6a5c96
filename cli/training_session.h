// `scion train`, `scion adapt` and `scion run`'s training step: loads the checked spec,
// opens the store, catches Ctrl-C, runs workbench::train (workbench/training.h) and
// prints its progress on stderr and its summary on stdout (JSON with --json).
#pragma once

#include "cli/global_options.h"
#include "workbench/training.h"

namespace scion::cli {

// Runs the request; returns the process exit code (130 when interrupted). With `profile`,
// times the run by class of work and prints it after the summary (cli/profile_output.h).
int run_training(const GlobalOptions& global, const workbench::TrainRequest& request,
                 bool profile = false);

}  // namespace scion::cli
