// Where the evaluation worker evaluates a configuration: after compiling, the stages the tuner's
// watchdog watches (fuzz, verify at the full shape, time), and re-measurements of the best few.
//
// The GPU evaluator is the product. The CPU evaluator runs the same machinery on the fuzzer's CPU
// backend, so that a machine without a GPU (CI) can tune a template end to end: crashes, hangs
// and resumption behave alike, but its times say nothing about any GPU.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tuner/core/kernel_template.h"
#include "tuner/pipeline/worker_protocol.h"

namespace tiletune {

struct EvaluationOutcome {
  ResultRecord result;
  bool fuzz_passed = false;  // the configuration passed its fuzz, now or (request.fuzz false) earlier
};

class Evaluator {
 public:
  using StageCallback = std::function<void(const std::string& stage)>;
  // Called before each fuzz case runs: the worker reports it as progress.
  using CaseCallback = std::function<void(const GemmCase& gemm_case)>;

  virtual ~Evaluator() = default;

  // The device as the tuner prunes and records against.
  virtual const DeviceProperties& device() const = 0;

  // Never throws for what the configuration does (that is the result's status); throws for the
  // environment only.
  virtual EvaluationOutcome evaluate(const KernelTemplate& tmpl, const EvaluationRequest& request,
                                     const StageCallback& stage, const CaseCallback& before_case) = 0;

  // One timing per configuration, in order; `templates` are the request's, parsed. Throws
  // CudaError (or LaunchError) when a launch fails.
  virtual std::vector<Timing> remeasure(const std::vector<const KernelTemplate*>& templates,
                                        const RemeasureRequest& request) = 0;

  // False once a launch has broken this process for good (a lost CUDA context): the worker exits
  // after its reply and the tuner starts a fresh one.
  virtual bool usable() const = 0;
};

class GemmExecutor;
class ReferenceCache;

// The fuzz stage of an evaluation, on either backend: the configuration fuzzed through `executor`
// on awkward shapes as the request asks, each case announced to `before_case`. True when it passed
// every case asked for; otherwise the result's status and detail say why (fewer cases than asked
// is never a pass: fuzz_configuration settles the same).
bool passes_fuzz_stage(GemmExecutor& executor, const KernelTemplate& tmpl,
                       const Configuration& config, const EvaluationRequest& request,
                       const Evaluator::CaseCallback& before_case, ReferenceCache& references,
                       ResultRecord& result);

// The status of a result whose check ended with this verdict (not passed): a wrong result, or a
// launch that failed.
ResultStatus failed_check_status(FuzzVerdict verdict);

// The result's keys filled from the request: template, hash, configuration, shape.
ResultRecord result_keys(const KernelTemplate& tmpl, const EvaluationRequest& request);

// The timing's figures into the result, TFLOP/s from the shape.
void set_timing(ResultRecord& result, const Timing& timing, const GemmShape& shape);

// A fuzz report's finding with its minimal case and how to replay it, for a result's detail.
std::string fuzz_detail(const FuzzReport& report);

// Median of the round medians, the extremes of all rounds, all runs: how re-measured rounds of
// one configuration combine.
Timing combine_rounds(const std::vector<Timing>& rounds);

// A re-measurement of `count` configurations together: `rounds` rounds, each timing every
// configuration once in turn (`time_one(i)`), so that a drift of the clocks touches all alike;
// one combined timing per configuration, in order.
std::vector<Timing> time_in_rounds(std::size_t count, int rounds,
                                   const std::function<Timing(std::size_t)>& time_one);

}  // namespace tiletune
