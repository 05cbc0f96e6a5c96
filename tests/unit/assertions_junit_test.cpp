// JUnit XML: structure, escaping of hostile text, and a parse by Python's xml.etree
// (the parser CI tools' own readers resemble) on the written file.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "assertions/junit_writer.h"

using namespace scion;
using namespace scion::assertions;

namespace {

JUnitReport sample_report() {
  TestResult pass;
  pass.test = "negation";
  pass.model = "review";
  pass.type = "dir";
  pass.capability = "Negation";
  pass.cases = 10;
  pass.passed = true;
  TestResult fail;
  fail.test = "names <&> \"quotes\"";
  fail.model = "review/tweets";
  fail.type = "inv";
  fail.capability = "Fairness";
  fail.cases = 4;
  fail.failures = 2;
  fail.failure_rate = 0.5;
  fail.max_failure_rate = 0.1;
  fail.examples = {
      {"names/1", "Ana's <b>great</b> & \"fun\"\x01", "Wei's <b>great</b>", "prediction changed"},
      {"names/3", "tab\there\nnewline", "", "reason ]]> end"}};
  AssertionOutcome clean{.assertion = "confident", .model = "review", .kind = "low_confidence"};
  AssertionOutcome violated{.assertion = "praise <is> positive",
                            .model = "review",
                            .kind = "allowed_outputs",
                            .violations = 4,
                            .worst_severity = 0.95,
                            .examples = {"\"the film was great.\": negative (severity 0.950)"}};
  return {.tests = {pass, fail},
          .assertions = {clean, violated},
          .timestamp = "2026-11-24T00:21:08",
          .hostname = "ci-runner",
          .time_s = 2.5};
}

}  // namespace

TEST_CASE("one testcase per test and model, failures with rate and examples",
          "[assertions][junit]") {
  const std::string xml = junit_xml(sample_report());
  CHECK_THAT(xml, Catch::StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
  CHECK_THAT(
      xml,
      Catch::Contains(
          "<testsuites name=\"scion\" tests=\"4\" failures=\"2\" errors=\"0\" time=\"2.500\">"));
  CHECK_THAT(xml,
             Catch::Contains(
                 "<testsuite name=\"behavioural tests\" tests=\"2\" failures=\"1\" errors=\"0\" "
                 "skipped=\"0\" time=\"2.500\" timestamp=\"2026-11-24T00:21:08\" "
                 "hostname=\"ci-runner\">"));
  CHECK_THAT(xml,
             Catch::Contains("<testsuite name=\"model assertions\" tests=\"2\" failures=\"1\""));
  CHECK_THAT(
      xml,
      Catch::Contains(
          "<failure message=\"4 violations, worst severity 0.950\" type=\"allowed_outputs\">"));
  CHECK_THAT(xml, Catch::Contains("name=\"praise &lt;is&gt; positive\""));
  // <properties> is allowed on a testsuite only; a testcase's figures go to system-out.
  CHECK(xml.find("<properties>") == std::string::npos);
  CHECK_THAT(xml,
             Catch::Contains("<system-out>type: inv&#10;capability: Fairness&#10;cases: 4&#10;"));
  CHECK_THAT(xml, Catch::Contains("<testcase classname=\"review\" name=\"negation\">"));
  CHECK_THAT(xml, Catch::Contains("name=\"names &lt;&amp;&gt; &quot;quotes&quot;\""));
  CHECK_THAT(
      xml, Catch::Contains("<failure message=\"failure rate 50.0% exceeds 10.0%\" type=\"inv\">"));
  CHECK_THAT(xml, Catch::Contains("2 of 4 cases failed"));
  CHECK_THAT(xml, Catch::Contains("names/1: &quot;Ana&#39;s &lt;b&gt;great&lt;/b&gt;"));
  CHECK_THAT(xml, Catch::Contains("reason ]]&gt; end"));
  CHECK(xml.find('\x01') == std::string::npos);
  // The passing test has no failure element.
  const auto pass_at = xml.find("name=\"negation\"");
  CHECK(xml.find("<failure", pass_at) > xml.find("</testcase>", pass_at));
}

TEST_CASE("the written file parses with Python's xml.etree and round-trips text",
          "[assertions][junit]") {
  const auto path = std::filesystem::temp_directory_path() / "scion_assertions_junit_test.xml";
  REQUIRE(write_junit_file(path, sample_report()).is_ok());
  const auto script = std::filesystem::temp_directory_path() / "scion_assertions_junit_check.py";
  {
    std::ofstream out(script);
    out << "import sys, xml.etree.ElementTree as ET\n"
           "root = ET.parse(sys.argv[1]).getroot()\n"
           "cases = root.findall('./testsuite[@name=\"behavioural tests\"]/testcase')\n"
           "assert root.tag == 'testsuites' and len(cases) == 2, cases\n"
           "assert cases[1].get('name') == 'names <&> \"quotes\"', cases[1].get('name')\n"
           "failure = cases[1].find('failure')\n"
           "assert cases[0].find('failure') is None\n"
           "assert 'Ana\\'s <b>great</b> & \"fun\"\\ufffd' in failure.text, failure.text\n"
           "assert 'tab\\there\\nnewline' in failure.text, failure.text\n"
           "figures = dict(l.split(': ', 1) for l in "
           "cases[1].find('system-out').text.splitlines())\n"
           "assert figures['failure_rate'] == '0.500000' and figures['capability'] == 'Fairness', "
           "figures\n";
  }
  const std::string command = "python3 " + script.string() + " " + path.string();
  CHECK(std::system(command.c_str()) == 0);
  std::filesystem::remove(script);
  std::filesystem::remove(path);

  const auto bad = std::filesystem::path("/nonexistent-dir/report.xml");
  const Status s = write_junit_file(bad, sample_report());
  CHECK(s.code() == StatusCode::kIoError);
  CHECK_THAT(s.message(), Catch::Contains("/nonexistent-dir/report.xml"));
}
