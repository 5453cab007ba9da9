#include "tuner/pipeline/worker_client.h"

#include <fmt/format.h>

#include "tuner/backend/gpu/cuda_driver.h"

namespace tiletune {

WorkerClient::WorkerClient(std::vector<std::string> argv, std::chrono::milliseconds watchdog)
    : process_(std::move(argv)), watchdog_(watchdog) {}

WorkerReply WorkerClient::receive() { return decode_reply(process_.receive(watchdog_)); }

void WorkerClient::ensure_started() {
  if (process_.running()) return;
  process_.start();
  ++started_;
  WorkerReply hello;
  try {
    hello = receive();
  } catch (const WorkerGone& e) {
    throw GpuUnavailable(fmt::format("the evaluation worker did not start: {}", e.what()));
  }
  if (hello.kind != WorkerReply::Kind::ready) {
    process_.stop();
    throw GpuUnavailable(hello.text);
  }
  device_ = hello.device;
}

const DeviceProperties& WorkerClient::device() {
  ensure_started();
  return *device_;
}

EvaluationOutcome WorkerClient::evaluate(const EvaluationRequest& request,
                                         const Evaluator::StageCallback& stage) {
  std::string first_timeout;  // how the first attempt ended, when its watchdog fired
  for (;;) {
    std::string gone;  // how the worker went, when it did
    std::optional<EvaluationOutcome> outcome = attempt(request, stage, gone);
    if (outcome) return std::move(*outcome);
    const bool timed_out = last_gone_timed_out_;
    if (timed_out && first_timeout.empty()) {
      // A silence may be the machine's fault (swapping, another job): a fresh worker tries once
      // more before a correct configuration is recorded as a hang.
      first_timeout = gone;
      stage("retry");
      continue;
    }
    EvaluationOutcome failed;
    ResultRecord& result = failed.result;
    result.template_name = request.tmpl.name;
    result.template_hash = request.tmpl.source_hash;
    result.config = request.config;
    result.shape = request.shape;
    result.op = request.op;
    result.batch = request.batch;
    result.status = timed_out ? ResultStatus::timeout : ResultStatus::crashed;
    result.detail = gone;
    if (!first_timeout.empty()) {
      result.detail += timed_out ? "; the same on a retry in a fresh worker"
                                 : fmt::format("; on a retry after the first attempt {}", first_timeout);
    }
    return failed;
  }
}

std::optional<EvaluationOutcome> WorkerClient::attempt(const EvaluationRequest& request,
                                                       const Evaluator::StageCallback& stage,
                                                       std::string& gone) {
  ensure_started();
  WorkerRequest message;
  message.evaluate = request;
  std::string reached = "start";
  std::string last_case;  // the fuzz case in progress, if any
  try {
    process_.send(encode(message));
    for (;;) {
      WorkerReply reply = receive();
      switch (reply.kind) {
        case WorkerReply::Kind::stage:
          reached = reply.text;
          last_case.clear();
          stage(reached);
          break;
        case WorkerReply::Kind::progress:
          last_case = reply.text;
          break;
        case WorkerReply::Kind::result:
          if (reply.worker_exits) process_.stop();
          return EvaluationOutcome{std::move(reply.result), reply.fuzz_passed};
        case WorkerReply::Kind::fatal:
          process_.stop();
          throw std::runtime_error("the evaluation worker failed: " + reply.text);
        default:
          process_.stop();
          throw std::runtime_error("the evaluation worker sent an unexpected message");
      }
    }
  } catch (const WorkerGone& e) {
    last_gone_timed_out_ = e.timed_out();
    gone = last_case.empty() ? fmt::format("{} (stage: {})", e.what(), reached)
                             : fmt::format("{} (stage: {}, case {})", e.what(), reached, last_case);
    return std::nullopt;
  }
}

std::optional<std::vector<Timing>> WorkerClient::remeasure(const RemeasureRequest& request,
                                                           std::string& why_not) {
  WorkerRequest message;
  message.kind = WorkerRequest::Kind::remeasure;
  message.remeasure = request;
  try {
    ensure_started();
    process_.send(encode(message));
    WorkerReply reply = receive();
    if (reply.kind == WorkerReply::Kind::timings && reply.timings.size() == request.configs.size()) {
      return reply.timings;
    }
    process_.stop();
    why_not = reply.kind == WorkerReply::Kind::fatal ? reply.text : "an unexpected reply";
  } catch (const WorkerGone& e) {
    why_not = e.what();
  }
  return std::nullopt;
}

}  // namespace tiletune
