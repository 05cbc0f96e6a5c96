// PeerProcess: a PyTorch peer script kept alive as a child process in `--serve` mode, so a
// benchmark can interleave scion and peer measurements in one run.
//
// The child is `/usr/bin/python3 SCRIPT --serve ARGS...` (Debian's interpreter, the one
// with python3-torch). It prints a line starting with "ready" once set up; afterwards each
// command line written to it is answered with one line holding `<key>=<seconds>`.
// Not thread-safe.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace scion::bench {

class PeerProcess {
 public:
  PeerProcess(const std::string& script, const std::vector<std::string>& args) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      std::vector<std::string> words = {"python3", script, "--serve"};
      words.insert(words.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& w : words) argv.push_back(w.data());
      argv.push_back(nullptr);
      execv("/usr/bin/python3", argv.data());
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    in_ = fdopen(to_child[1], "w");
    out_ = fdopen(from_child[0], "r");
    char line[256];
    ready_ = out_ && fgets(line, sizeof line, out_) && std::string(line).starts_with("ready");
  }
  ~PeerProcess() {
    if (in_) fclose(in_);
    if (out_) fclose(out_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  bool ready() const { return ready_; }

  // Sends `command` and returns the seconds the peer reports as `<key>=`, or -1 when the
  // peer failed.
  double request(const char* command, const std::string& key) {
    std::fputs(command, in_);
    std::fputc('\n', in_);
    std::fflush(in_);
    char line[256];
    if (!fgets(line, sizeof line, out_)) return -1;
    const std::string s = line;
    const auto at = s.find(key + "=");
    return at == std::string::npos ? -1 : std::atof(s.c_str() + at + key.size() + 1);
  }

 private:
  pid_t pid_ = -1;
  FILE* in_ = nullptr;
  FILE* out_ = nullptr;
  bool ready_ = false;
};

}  // namespace scion::bench
