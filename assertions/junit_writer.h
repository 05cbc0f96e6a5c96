// JUnit XML for behavioural-test results, the format CI systems (GitHub Actions,
// GitLab, Jenkins) display. One <testcase> per behavioural test and model
// (classname = model, name = test); a test over its max_failure_rate gets a <failure>
// with the failure rate and the first failing examples. Text is XML-escaped, and
// characters XML 1.0 cannot hold (control characters) become U+FFFD.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "assertions/judge.h"
#include "spec/status.h"

namespace scion::assertions {

// The whole document, <?xml ...?> through </testsuites>.
std::string junit_xml(const std::vector<TestResult>& results,
                      std::string_view suite_name = "scion");

// Writes junit_xml() to `path` (through a temporary file renamed into place).
Status write_junit_file(const std::filesystem::path& path, const std::vector<TestResult>& results,
                        std::string_view suite_name = "scion");

// `text` escaped for XML character data and attribute values.
std::string xml_escape(std::string_view text);

}  // namespace scion::assertions
