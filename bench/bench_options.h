// Command-line options of the bench programs: `--name value` pairs and `--flag`s.
//
// A mistyped option must not run a benchmark for minutes with the defaults and report
// figures of a configuration nobody asked for, so an unknown option, a missing value or a
// value that is not a number prints the usage and exits 2; --help prints it and exits 0.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

namespace scion::bench {

class BenchOptions {
 public:
  explicit BenchOptions(std::string usage) : usage_(std::move(usage)) {}

  template <typename Integer>
  BenchOptions& number(const std::string& name, Integer& target) {
    return value(name, [this, name, &target](const std::string& text) {
      char* end = nullptr;
      const long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || v < 0)
        fail("--" + name + " takes a whole number, not '" + text + "'");
      target = static_cast<Integer>(v);
    });
  }
  BenchOptions& text(const std::string& name, std::string& target) {
    return value(name, [&target](const std::string& text) { target = text; });
  }
  BenchOptions& flag(const std::string& name, bool& target) {
    flags_[name] = &target;
    return *this;
  }

  void parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        std::printf("%s\n", usage_.c_str());
        std::exit(0);
      }
      if (!arg.starts_with("--")) fail("unexpected argument '" + arg + "'");
      const std::string name = arg.substr(2);
      if (auto f = flags_.find(name); f != flags_.end()) {
        *f->second = true;
        continue;
      }
      if (!values_.count(name)) fail("unknown option '" + arg + "'");
      if (i + 1 >= argc) fail(arg + " needs a value");
      values_.at(name)(argv[++i]);
    }
  }

 private:
  BenchOptions& value(const std::string& name, std::function<void(const std::string&)> set) {
    values_[name] = std::move(set);
    return *this;
  }
  [[noreturn]] void fail(const std::string& why) const {
    std::fprintf(stderr, "error: %s\n%s\n", why.c_str(), usage_.c_str());
    std::exit(2);
  }

  std::string usage_;
  std::map<std::string, std::function<void(const std::string&)>> values_;
  std::map<std::string, bool*> flags_;
};

}  // namespace scion::bench
