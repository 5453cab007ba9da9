// The worker process's side of worker_protocol.h: `tiletune worker` reads requests on one
// descriptor, evaluates them with an Evaluator and writes replies on another, until the tuner
// closes its end. A configuration that crashes or hangs takes only this process down; the tuner
// records what happened and starts another.
#pragma once

#include <functional>
#include <memory>

#include <sys/types.h>

#include "tuner/pipeline/evaluator.h"

namespace tiletune {

// Opens the evaluator (the device) once the worker has started; what it throws is reported to the
// tuner as a fatal reply.
using EvaluatorFactory = std::function<std::unique_ptr<Evaluator>()>;

// Dies with the tuner: a worker spinning in a hung kernel would otherwise outlive a tuner killed
// with kill -9. `parent` is the tuner's pid, to catch a tuner that died before this was set.
void die_with_parent(pid_t parent);

// Serves requests until end of input (returns 0), or until the evaluator becomes unusable after
// a reply (returns 0: the tuner restarts it), or the evaluator cannot be opened (returns 3).
int run_evaluation_worker(const EvaluatorFactory& open, int request_fd, int reply_fd);

}  // namespace tiletune
