// JUnit XML for behavioural-test results and model assertions, the format CI systems
// (GitHub Actions, GitLab, Jenkins) display; valid against the common junit-10.xsd shape
// (tests/cli/junit-10.xsd), which allows <properties> only on a <testsuite>.
//
// Two suites: "behavioural tests", one <testcase> per test and model (classname = model,
// name = test), with a <failure> when the test exceeds its max_failure_rate (its rate and
// first failing examples); and "model assertions", one <testcase> per assertion checked
// on a model, with a <failure> when any input violated it (count, worst severity, the
// most severe inputs). Each testcase's figures (type, capability, cases, failure rate ...)
// are in its <system-out>. Suites carry `timestamp` (UTC, when the run started),
// `hostname` and `time` (seconds the whole run took: every test and assertion is
// evaluated in one co-batched pass, so no testcase has a time of its own).
// Text is XML-escaped, and characters XML 1.0 cannot hold (control characters) become
// U+FFFD.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "assertions/judge.h"
#include "base/status.h"

namespace scion::assertions {

// One model assertion checked on one model.
struct AssertionOutcome {
  std::string assertion;
  std::string model;
  std::string kind;  // low_confidence | parent_disagreement | ...
  std::size_t violations = 0;
  double worst_severity = 0;
  std::vector<std::string> examples;  // the most severe violated inputs, described
};

struct JUnitReport {
  std::vector<TestResult> tests;
  std::vector<AssertionOutcome> assertions;
  std::string timestamp;  // ISO 8601 without a zone (UTC): 2026-11-24T00:21:08
  std::string hostname;
  double time_s = 0;  // the whole run
};

// The whole document, <?xml ...?> through </testsuites>.
std::string junit_xml(const JUnitReport& report);

// Writes junit_xml() to `path` (through a temporary file renamed into place).
Status write_junit_file(const std::filesystem::path& path, const JUnitReport& report);

// `text` escaped for XML character data and attribute values.
std::string xml_escape(std::string_view text);

}  // namespace scion::assertions
