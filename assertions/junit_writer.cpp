#include "assertions/junit_writer.h"

#include <fmt/format.h>

#include <fstream>
#include <system_error>

namespace scion::assertions {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\t':
        out += "&#9;";
        break;
      case '\n':
        out += "&#10;";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        // XML 1.0 forbids other control characters even as references.
        if (static_cast<unsigned char>(c) < 0x20)
          out += "\xEF\xBF\xBD";
        else
          out += c;
    }
  }
  return out;
}

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

}  // namespace

std::string junit_xml(const std::vector<TestResult>& results, std::string_view suite_name) {
  std::size_t failed = 0;
  for (const TestResult& r : results) failed += r.passed ? 0 : 1;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format(
      "<testsuites name=\"{0}\" tests=\"{1}\" failures=\"{2}\">\n"
      "  <testsuite name=\"{0}\" tests=\"{1}\" failures=\"{2}\" errors=\"0\" skipped=\"0\">\n",
      xml_escape(suite_name), results.size(), failed);
  for (const TestResult& r : results) {
    xml += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", xml_escape(r.model),
                       xml_escape(r.test));
    xml += "      <properties>\n";
    auto property = [&xml](std::string_view name, const std::string& value) {
      xml += fmt::format("        <property name=\"{}\" value=\"{}\"/>\n", name, xml_escape(value));
    };
    property("type", r.type);
    property("capability", r.capability);
    property("cases", std::to_string(r.cases));
    property("failures", std::to_string(r.failures));
    property("inherited", std::to_string(r.inherited));
    property("not_applicable", std::to_string(r.not_applicable));
    property("failure_rate", fmt::format("{:.6f}", r.failure_rate));
    xml += "      </properties>\n";
    if (!r.passed) {
      const std::string message =
          r.cases == 0 ? "no cases judged"
                       : fmt::format("failure rate {:.1f}% exceeds {:.1f}%", 100.0 * r.failure_rate,
                                     100.0 * r.max_failure_rate);
      xml += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                         xml_escape(message), xml_escape(r.type), xml_escape(failure_text(r)));
    }
    xml += "    </testcase>\n";
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

Status write_junit_file(const std::filesystem::path& path, const std::vector<TestResult>& results,
                        std::string_view suite_name) {
  const std::filesystem::path temp = path.string() + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out)
      return io_error(
          fmt::format("{}: cannot create the JUnit report; check the directory exists and is "
                      "writable",
                      temp.string()));
    out << junit_xml(results, suite_name);
    out.flush();
    if (!out)
      return io_error(
          fmt::format("{}: writing the JUnit report failed (disk full?)", temp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec)
    return io_error(fmt::format("{}: cannot move the JUnit report into place: {}", path.string(),
                                ec.message()));
  return Status::ok();
}

}  // namespace scion::assertions
