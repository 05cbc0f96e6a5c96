// PeerProcess: a PyTorch peer script kept alive as a child process in `--serve` mode, so a
// benchmark can interleave scion and peer measurements in one run.
//
// The child is `PYTHON SCRIPT --serve ARGS...`: PYTHON is bench/.venv's (a current PyTorch
// from PyPI, bench/make_venv.sh) where it exists, else Debian's /usr/bin/python3 (with
// python3-torch 1.13); default_peer_python() says which. It prints a line starting with
// "ready" once set up (with `first_step_seconds=<x>`: its time to the first step);
// afterwards each command line written to it is answered with one line of `<key>=<value>`
// fields. Not thread-safe.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace scion::bench {

// bench/.venv/bin/python beside `script`'s folder (bench/peers/..) when it exists, else
// /usr/bin/python3.
inline std::string default_peer_python(const std::string& script) {
  const std::string bench = script.substr(0, script.rfind('/')) + "/..";
  const std::string venv = bench + "/.venv/bin/python";
  return access(venv.c_str(), X_OK) == 0 ? venv : "/usr/bin/python3";
}

class PeerProcess {
 public:
  PeerProcess(const std::string& python, const std::string& script,
              const std::vector<std::string>& args) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      std::vector<std::string> words = {python, script, "--serve"};
      words.insert(words.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& w : words) argv.push_back(w.data());
      argv.push_back(nullptr);
      execvp(python.c_str(), argv.data());  // a bare name (python3) is looked up in PATH
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    in_ = fdopen(to_child[1], "w");
    out_ = fdopen(from_child[0], "r");
    char line[256];
    ready_ = out_ && fgets(line, sizeof line, out_) && std::string(line).starts_with("ready");
    if (ready_) ready_line_ = line;
  }
  ~PeerProcess() {
    if (in_) fclose(in_);
    if (out_) fclose(out_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  bool ready() const { return ready_; }
  // The value of `key=` on the ready line, or -1.
  double ready_value(const std::string& key) const { return value_of(ready_line_, key); }

  // Sends `command` and returns the line the peer answers ("" when it failed).
  std::string request_line(const char* command) {
    std::fputs(command, in_);
    std::fputc('\n', in_);
    std::fflush(in_);
    char line[256];
    return fgets(line, sizeof line, out_) ? std::string(line) : std::string();
  }
  // Sends `command` and returns the value the peer reports as `<key>=`, or -1 when the
  // peer failed.
  double request(const char* command, const std::string& key) {
    return value_of(request_line(command), key);
  }

  // The number after `key=` in `line`, or -1.
  static double value_of(const std::string& line, const std::string& key) {
    const auto at = line.find(key + "=");
    return at == std::string::npos ? -1 : std::atof(line.c_str() + at + key.size() + 1);
  }

 private:
  pid_t pid_ = -1;
  FILE* in_ = nullptr;
  FILE* out_ = nullptr;
  bool ready_ = false;
  std::string ready_line_;
};

}  // namespace scion::bench
