// Where the evaluation worker evaluates a configuration, on one Backend: after loading it, the
// stages the tuner's watchdog watches (fuzz, verify at the full shape, time), and
// re-measurements of the best few.
//
// On a GPU this is the product. On the CPU backend it runs the same machinery, so that a machine
// without a GPU (CI) can tune a template end to end: crashes, hangs and resumption behave alike,
// but its times say nothing about any GPU.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/reference_cache.h"
#include "tuner/backend/backend.h"
#include "tuner/core/kernel_template.h"
#include "tuner/pipeline/full_shape_check.h"
#include "tuner/pipeline/worker_protocol.h"

namespace tiletune {

struct EvaluationOutcome {
  ResultRecord result;
  bool fuzz_passed = false;  // the configuration passed its fuzz, now or (request.fuzz false) earlier
};

class Evaluator {
 public:
  using StageCallback = tiletune::StageCallback;
  // Called before each fuzz case runs: the worker reports it as progress.
  using CaseCallback = std::function<void(const GemmCase& gemm_case)>;

  // `full_shape` is the backend's own (backend_factory.h: open_evaluator makes the pair).
  Evaluator(std::unique_ptr<Backend> backend, std::unique_ptr<FullShapeCheck> full_shape);

  // The device as the tuner prunes and records against.
  const DeviceProperties& device() const { return backend_->device(); }

  // Never throws for what the configuration does (that is the result's status); throws for the
  // environment only.
  EvaluationOutcome evaluate(const KernelTemplate& tmpl, const EvaluationRequest& request,
                             const StageCallback& stage, const CaseCallback& before_case);

  // One timing per configuration, in order; `templates` are the request's, parsed. Throws
  // CudaError (or LaunchError) when a launch fails.
  std::vector<Timing> remeasure(const std::vector<const KernelTemplate*>& templates,
                                const RemeasureRequest& request);

  // False once a launch has broken this process for good (a lost CUDA context): the worker exits
  // after its reply and the tuner starts a fresh one.
  bool usable() const { return !context_lost_; }

 private:
  // The stages after loading (`build`: the configuration's build for the request's problem, which
  // the executor runs); the result says how the configuration fared.
  void run_stages(GemmExecutor& executor, const KernelTemplate& tmpl, const Configuration& config,
                  const Configuration& build, const EvaluationRequest& request, const StageCallback& stage,
                  const CaseCallback& before_case, EvaluationOutcome& outcome);

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<FullShapeCheck> full_shape_;
  ReferenceCache fuzz_references_;  // of the last configurations' fuzz cases
  bool context_lost_ = false;
};

// The status of a result whose check ended with this verdict (not passed): a wrong result, or a
// launch that failed.
ResultStatus failed_check_status(FuzzVerdict verdict);

// The result's keys filled from the request: template, hash, configuration, shape.
ResultRecord result_keys(const KernelTemplate& tmpl, const EvaluationRequest& request);

// The timing's figures into the result, TFLOP/s from the shape and the result's batch (a timing
// of a strided batch is of all its products).
void set_timing(ResultRecord& result, const Timing& timing, const GemmShape& shape);

}  // namespace tiletune
