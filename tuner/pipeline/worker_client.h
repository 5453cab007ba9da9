// The tuner's side of the evaluation worker: evaluations run in a child process (worker_process.h)
// so that a configuration which crashes, hangs or poisons its CUDA context costs only that
// process. A worker that dies, or stays silent past the watchdog, turns the evaluation it was in
// into a result (status crashed or timeout, with the stage and the fuzz case it reached), and the
// next evaluation starts a fresh worker. The watchdog measures silence between messages, and the
// worker reports every fuzz case: a long fuzz that makes progress is never a timeout. A timeout
// is retried once in a fresh worker before it is recorded.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tuner/pipeline/evaluator.h"
#include "tuner/pipeline/worker_process.h"

namespace tiletune {

class WorkerClient {
 public:
  // `argv` starts a worker (`tiletune worker ...`); `watchdog` is the longest silence allowed
  // between two of its messages (stages and fuzz cases are reported as they start).
  WorkerClient(std::vector<std::string> argv, std::chrono::milliseconds watchdog);

  // The worker's device, starting the worker if it is not running. Throws GpuUnavailable with
  // the worker's reason when it cannot open one.
  const DeviceProperties& device();

  // Never throws for what the configuration does. Throws std::runtime_error when the worker
  // reports that its environment failed.
  EvaluationOutcome evaluate(const EvaluationRequest& request, const Evaluator::StageCallback& stage);

  // The re-measured timings, or nothing (with the reason in `why_not`) when a launch failed or the
  // worker died: the first timings stand then.
  std::optional<std::vector<Timing>> remeasure(const RemeasureRequest& request, std::string& why_not);

  int workers_started() const { return started_; }

 private:
  void ensure_started();
  WorkerReply receive();
  // One try at an evaluation: its outcome, or nothing when the worker died or was killed, with
  // how and where in `gone` (and whether it was the watchdog in last_gone_timed_out_).
  std::optional<EvaluationOutcome> attempt(const EvaluationRequest& request,
                                           const Evaluator::StageCallback& stage, std::string& gone);

  WorkerProcess process_;
  std::chrono::milliseconds watchdog_;
  std::optional<DeviceProperties> device_;
  int started_ = 0;
  bool last_gone_timed_out_ = false;
};

}  // namespace tiletune
