#include "assertions/junit_writer.h"

#include <fmt/format.h>


#include "base/markup_escape.h"
#include "base/regular_file.h"

namespace scion::assertions {

namespace {

std::string failure_text(const TestResult& r) {
  std::string text = fmt::format("{} of {} cases failed ({:.1f}%, allowed {:.1f}%)", r.failures,
                                 r.cases, 100.0 * r.failure_rate, 100.0 * r.max_failure_rate);
  if (r.cases == 0) text = "no case was judged (every input was skipped or none was generated)";
  for (const FailingExample& e : r.examples) {
    text += fmt::format("\n- {}: \"{}\"", e.case_id, e.input);
    if (!e.perturbed.empty()) text += fmt::format(" -> \"{}\"", e.perturbed);
    text += fmt::format(": {}", e.reason);
  }
  return text;
}

std::string test_figures(const TestResult& r) {
  return fmt::format(
      "type: {}\ncapability: {}\ncases: {}\nfailures: {}\ninherited: {}\nnot_applicable: {}\n"
      "failure_rate: {:.6f}\nmax_failure_rate: {:.6f}\n",
      r.type, r.capability, r.cases, r.failures, r.inherited, r.not_applicable, r.failure_rate,
      r.max_failure_rate);
}

std::string suite_open(std::string_view name, std::size_t tests, std::size_t failures,
                       const JUnitReport& report) {
  return fmt::format(
      "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" "
      "time=\"{:.3f}\" timestamp=\"{}\" hostname=\"{}\">\n",
      name, tests, failures, report.time_s, base::markup_escape(report.timestamp),
      base::markup_escape(report.hostname.empty() ? "localhost" : report.hostname));
}

void append_tests(std::string& xml, const JUnitReport& report) {
  std::size_t failed = 0;
  for (const TestResult& r : report.tests) failed += r.passed ? 0 : 1;
  xml += suite_open("behavioural tests", report.tests.size(), failed, report);
  for (const TestResult& r : report.tests) {
    xml += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", base::markup_escape(r.model),
                       base::markup_escape(r.test));
    if (!r.passed) {
      const std::string message =
          r.cases == 0 ? "no cases judged"
                       : fmt::format("failure rate {:.1f}% exceeds {:.1f}%", 100.0 * r.failure_rate,
                                     100.0 * r.max_failure_rate);
      xml += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                         base::markup_escape(message), base::markup_escape(r.type), base::markup_escape(failure_text(r)));
    }
    xml += "      <system-out>" + base::markup_escape(test_figures(r)) + "</system-out>\n";
    xml += "    </testcase>\n";
  }
  xml += "  </testsuite>\n";
}

void append_assertions(std::string& xml, const JUnitReport& report) {
  std::size_t failed = 0;
  for (const AssertionOutcome& a : report.assertions) failed += a.violations > 0 ? 1 : 0;
  xml += suite_open("model assertions", report.assertions.size(), failed, report);
  for (const AssertionOutcome& a : report.assertions) {
    xml += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", base::markup_escape(a.model),
                       base::markup_escape(a.assertion));
    if (a.violations > 0) {
      std::string text =
          fmt::format("{} inputs violate {} on {}", a.violations, a.assertion, a.model);
      for (const std::string& e : a.examples) text += "\n- " + e;
      xml += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                         base::markup_escape(fmt::format("{} violations, worst severity {:.3f}",
                                                a.violations, a.worst_severity)),
                         base::markup_escape(a.kind), base::markup_escape(text));
    }
    xml += "      <system-out>" +
           base::markup_escape(fmt::format("kind: {}\nviolations: {}\nworst_severity: {:.6f}\n", a.kind,
                                  a.violations, a.worst_severity)) +
           "</system-out>\n";
    xml += "    </testcase>\n";
  }
  xml += "  </testsuite>\n";
}

}  // namespace

std::string junit_xml(const JUnitReport& report) {
  std::size_t failed = 0;
  for (const TestResult& r : report.tests) failed += r.passed ? 0 : 1;
  for (const AssertionOutcome& a : report.assertions) failed += a.violations > 0 ? 1 : 0;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format(
      "<testsuites name=\"scion\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{:.3f}\">\n",
      report.tests.size() + report.assertions.size(), failed, report.time_s);
  append_tests(xml, report);
  if (!report.assertions.empty()) append_assertions(xml, report);
  xml += "</testsuites>\n";
  return xml;
}

Status write_junit_file(const std::filesystem::path& path, const JUnitReport& report) {
  // Through the write guard: a temporary file renamed into place, never written through a
  // link planted under either name.
  Status written = write_file_replacing(path, junit_xml(report));
  if (!written)
    return io_error(fmt::format("{}: cannot write the JUnit report: {}; check the directory "
                                "exists and is writable, and free space",
                                path.string(), written.message()));
  return Status::ok();
}

}  // namespace scion::assertions
