#include "tuner/pipeline/evaluation_worker.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace tiletune {
namespace {

// Line-wise reading and writing on raw descriptors (the tuner's pipes).
class LineChannel {
 public:
  LineChannel(int in, int out) : in_(in), out_(out) {}

  std::optional<std::string> read_line() {
    for (;;) {
      if (const std::size_t end = buffer_.find('\n'); end != std::string::npos) {
        std::string line = buffer_.substr(0, end);
        buffer_.erase(0, end + 1);
        return line;
      }
      char chunk[65536];
      const ssize_t n = read(in_, chunk, sizeof chunk);
      if (n > 0) {
        buffer_.append(chunk, std::size_t(n));
      } else if (n == 0 || errno != EINTR) {
        return std::nullopt;
      }
    }
  }

  // The tuner gone (EPIPE) leaves nothing to work for.
  void write_line(const std::string& line) {
    const std::string text = line + '\n';
    std::size_t written = 0;
    while (written < text.size()) {
      const ssize_t n = write(out_, text.data() + written, text.size() - written);
      if (n > 0) {
        written += std::size_t(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        _exit(0);
      }
    }
  }

 private:
  int in_, out_;
  std::string buffer_;
};

void reply(LineChannel& channel, WorkerReply message) { channel.write_line(encode(message)); }

WorkerReply text_reply(WorkerReply::Kind kind, std::string text) {
  WorkerReply message;
  message.kind = kind;
  message.text = std::move(text);
  return message;
}

}  // namespace

void die_with_parent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);
}

int run_evaluation_worker(const EvaluatorFactory& open, int request_fd, int reply_fd) {
  signal(SIGPIPE, SIG_IGN);
  LineChannel channel(request_fd, reply_fd);
  std::unique_ptr<Evaluator> evaluator;
  try {
    evaluator = open();
  } catch (const std::exception& e) {
    reply(channel, text_reply(WorkerReply::Kind::fatal, e.what()));
    return 3;
  }
  WorkerReply ready;
  ready.kind = WorkerReply::Kind::ready;
  ready.device = evaluator->device();
  reply(channel, ready);

  std::map<std::string, KernelTemplate> templates;  // parsed once per version
  const auto template_of = [&](const TemplateRecord& record) -> const KernelTemplate& {
    auto found = templates.find(record.source_hash);
    if (found == templates.end()) {
      KernelTemplate tmpl = parse_template(record.source, record.path);
      tmpl.path = record.path;  // as the tuner compiled it: part of the cubin cache's key
      found = templates.emplace(record.source_hash, std::move(tmpl)).first;
    }
    return found->second;
  };

  while (std::optional<std::string> line = channel.read_line()) {
    try {
      const WorkerRequest request = decode_request(*line);
      if (request.kind == WorkerRequest::Kind::evaluate) {
        const KernelTemplate& tmpl = template_of(request.evaluate.tmpl);
        const EvaluationOutcome outcome =
            evaluator->evaluate(
                tmpl, request.evaluate,
                [&](const std::string& stage) {
                  reply(channel, text_reply(WorkerReply::Kind::stage, stage));
                },
                [&](const GemmCase& gemm_case) {
                  reply(channel, text_reply(WorkerReply::Kind::progress, gemm_case.to_string()));
                });
        WorkerReply done;
        done.kind = WorkerReply::Kind::result;
        done.result = outcome.result;
        done.fuzz_passed = outcome.fuzz_passed;
        done.worker_exits = !evaluator->usable();
        reply(channel, done);
      } else {
        WorkerReply done;
        done.kind = WorkerReply::Kind::timings;
        std::vector<const KernelTemplate*> parsed;
        for (const TemplateRecord& record : request.remeasure.templates) parsed.push_back(&template_of(record));
        done.timings = evaluator->remeasure(parsed, request.remeasure);
        reply(channel, done);
      }
    } catch (const std::exception& e) {
      // The environment failed, not a configuration: the tuner stops with this message.
      reply(channel, text_reply(WorkerReply::Kind::fatal, e.what()));
      return 3;
    }
    if (!evaluator->usable()) return 0;
  }
  return 0;
}

}  // namespace tiletune
