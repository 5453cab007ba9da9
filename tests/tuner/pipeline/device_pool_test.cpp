// Several devices without a GPU: the --devices list and its refusals, and the device pool on
// stand-in workers (shell scripts speaking the worker protocol), showing that each lane's worker
// runs on its own device, that work goes to whichever lane is free and runs side by side, that
// what a lane finds is handled on the dispatching thread, and that a worker which dies on one
// device is restarted there alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/pipeline/device_list.h"
#include "tuner/pipeline/device_pool.h"

namespace tiletune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// --- the list ---------------------------------------------------------------------------------

TEST(DeviceList, AllOrNumbersInTheOrderGiven) {
  EXPECT_TRUE(DeviceList::parse("all").all);
  EXPECT_THAT(DeviceList::parse("all").resolve(3, "GPUs"), ElementsAre(0, 1, 2));
  const DeviceList list = DeviceList::parse("2,0,3");
  EXPECT_FALSE(list.all);
  EXPECT_THAT(list.ordinals, ElementsAre(2, 0, 3));
  EXPECT_THAT(list.resolve(4, "GPUs"), ElementsAre(2, 0, 3));
  EXPECT_THAT(DeviceList::parse("0").ordinals, ElementsAre(0));
}

TEST(DeviceList, WhatIsNotAListOfDistinctNumbersIsRefusedSayingWhy) {
  const auto refusal = [](const std::string& text) {
    try {
      DeviceList::parse(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_THAT(refusal("0,0"), HasSubstr("device 0 is named twice"));
  EXPECT_THAT(refusal("1,2,1"), HasSubstr("device 1 is named twice"));
  EXPECT_THAT(refusal(""), HasSubstr("an empty entry"));
  EXPECT_THAT(refusal("0,"), HasSubstr("an empty entry"));
  EXPECT_THAT(refusal(",1"), HasSubstr("an empty entry"));
  EXPECT_THAT(refusal("-1"), HasSubstr("'-1' is not a device number"));
  EXPECT_THAT(refusal("gpu0"), HasSubstr("'gpu0' is not a device number"));
  EXPECT_THAT(refusal("0 1"), HasSubstr("'0 1' is not a device number"));
  EXPECT_THAT(refusal("1.5"), HasSubstr("'1.5' is not a device number"));
  EXPECT_THAT(refusal("ALL"), HasSubstr("'ALL' is not a device number"));
  EXPECT_THAT(refusal("99999999999"), HasSubstr("is not a device number"));
  EXPECT_THAT(refusal("0;1"), HasSubstr("give 'all' or device numbers separated by commas"));
}

TEST(DeviceList, AnOrdinalTheMachineLacksIsRefusedNamingWhatItHas) {
  try {
    DeviceList::parse("0,4").resolve(2, "GPUs");
    FAIL() << "device 4 of 2 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("no device 4: this machine has 2 GPUs (0 to 1)"));
  }
  EXPECT_THAT(DeviceList::parse("1").resolve(2, "GPUs"), ElementsAre(1));
}

// --- the pool ---------------------------------------------------------------------------------

// A worker that says it is ready on device `ordinal`, then answers each request after `work`
// seconds with a passed fuzz and a time. A request whose configuration names CRASH kills it.
LaneCommand stand_in_lane(int ordinal, const std::string& work) {
  WorkerReply ready;
  ready.kind = WorkerReply::Kind::ready;
  ready.device.name = "stand-in";
  ready.device.ordinal = ordinal;
  WorkerReply passed;
  passed.kind = WorkerReply::Kind::result;
  passed.fuzz_passed = true;
  passed.result.status = ResultStatus::ok;
  passed.result.median_ms = 1;
  LaneCommand lane;
  lane.argv = {"/bin/sh", "-c",
               "printf '%s\\n' \"$1\" >&4\n"
               "while read -r line <&3; do\n"
               "  case \"$line\" in\n"
               "    *CRASH*) kill -SEGV $$ ;;\n"
               "    *) sleep " + work + "; printf '%s\\n' \"$2\" >&4 ;;\n"
               "  esac\n"
               "done",
               "stand-in", encode(ready), encode(passed)};
  lane.watchdog = 10s;
  return lane;
}

EvaluationRequest request(const std::string& config) {
  EvaluationRequest r;
  r.tmpl.name = "stand_in";
  r.config = config;
  r.shape = {8, 8, 8};
  return r;
}

// Half the cores fuzz, shared by the devices, but never more than 8 fuzz workers on a host: the
// driver creates CUDA contexts one at a time, and the host's other processes wait meanwhile.
TEST(DevicePool, FuzzWorkersPerDeviceShareHalfTheCoresAndAtMostEight) {
  EXPECT_EQ(fuzz_workers_per_device(2, 1), 1u);
  EXPECT_EQ(fuzz_workers_per_device(8, 1), 4u);
  EXPECT_EQ(fuzz_workers_per_device(16, 1), 8u);
  EXPECT_EQ(fuzz_workers_per_device(16, 2), 4u);
  EXPECT_EQ(fuzz_workers_per_device(64, 1), 8u) << "one GPU on a large host: 8, not 32";
  EXPECT_EQ(fuzz_workers_per_device(32, 2), 4u);
  EXPECT_EQ(fuzz_workers_per_device(64, 4), 2u);
  EXPECT_EQ(fuzz_workers_per_device(128, 8), 1u);
  EXPECT_EQ(fuzz_workers_per_device(64, 32), 1u) << "every device fuzzes with one worker at least";
  EXPECT_EQ(fuzz_workers_per_device(1, 0), 1u);
}

TEST(DevicePool, EachLaneIsOnItsDeviceAndWorkGoesToWhicheverIsFree) {
  DevicePool pool({stand_in_lane(0, "0.6"), stand_in_lane(2, "0.6")});
  ASSERT_EQ(pool.size(), 2u);
  EXPECT_EQ(pool.lane(0).device.ordinal, 0);
  EXPECT_EQ(pool.lane(1).device.ordinal, 2);

  const std::thread::id dispatcher = std::this_thread::get_id();
  std::vector<std::string> settled;  // touched by deliveries only: on this thread
  std::set<int> devices_used;
  bool delivered_elsewhere = false;
  const auto start = std::chrono::steady_clock::now();
  for (const std::string config : {"A=1", "A=2", "A=3", "A=4"}) {
    pool.dispatch([&, dispatcher, config](DeviceLane& lane) {
      EvaluationOutcome outcome = lane.worker->evaluate(request(config), [](const std::string&) {});
      ++lane.settled;
      const int device = lane.device.ordinal;
      pool.deliver([&, outcome, device, dispatcher] {
        delivered_elsewhere |= std::this_thread::get_id() != dispatcher;
        settled.push_back(outcome.result.config);
        devices_used.insert(device);
      });
    });
  }
  pool.drain();
  const auto wall = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(settled.size(), 4u);
  EXPECT_FALSE(delivered_elsewhere) << "a delivery ran on a lane's thread";
  EXPECT_THAT(devices_used, ElementsAre(0, 2));
  EXPECT_EQ(pool.lane(0).settled, 2);
  EXPECT_EQ(pool.lane(1).settled, 2);
  // One device at a time would take 2.4 s; two side by side 1.2 s.
  EXPECT_LT(wall, 2.0s) << "the devices did not work side by side";
  EXPECT_GT(pool.lane(0).busy_seconds, 1.1);
  EXPECT_EQ(pool.workers_started(), 2);
}

TEST(DevicePool, AWorkerThatDiesOnOneDeviceIsRestartedThereAlone) {
  DevicePool pool({stand_in_lane(0, "0.01"), stand_in_lane(1, "0.01")});
  std::vector<ResultStatus> on_device(2, ResultStatus::ok);
  for (int device = 0; device < 2; ++device) {
    pool.dispatch([&, device](DeviceLane& lane) {
      const EvaluationOutcome outcome =
          lane.worker->evaluate(request(device == 0 ? "CRASH=1" : "A=1"), [](const std::string&) {});
      pool.deliver([&, device, status = outcome.result.status] { on_device[device] = status; });
    }, device);
  }
  pool.drain();
  EXPECT_EQ(on_device[0], ResultStatus::crashed);
  EXPECT_EQ(on_device[1], ResultStatus::ok);
  // The next evaluation on device 0 starts a fresh worker; device 1's first one goes on.
  for (int device = 0; device < 2; ++device) {
    pool.dispatch([&, device](DeviceLane& lane) {
      const EvaluationOutcome outcome = lane.worker->evaluate(request("B=1"), [](const std::string&) {});
      pool.deliver([&, device, status = outcome.result.status] { on_device[device] = status; });
    }, device);
  }
  pool.drain();
  EXPECT_EQ(on_device[0], ResultStatus::ok);
  EXPECT_EQ(on_device[1], ResultStatus::ok);
  EXPECT_EQ(pool.lane(0).worker->workers_started(), 2);
  EXPECT_EQ(pool.lane(1).worker->workers_started(), 1);
}

TEST(DevicePool, ALaneWhoseDeviceCannotOpenStopsThePoolWithItsReason) {
  WorkerReply no_device;
  no_device.kind = WorkerReply::Kind::fatal;
  no_device.text = "no GPU number 7: the driver sees 2 device(s)";
  LaneCommand missing{{"/bin/sh", "-c", "printf '%s\\n' \"$1\" >&4", "stand-in", encode(no_device)}, 10s, 0};
  try {
    DevicePool pool({stand_in_lane(0, "0"), missing});
    FAIL() << "a pool started without its device 7";
  } catch (const GpuUnavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("no GPU number 7"));
  }
}

TEST(DevicePool, WhatALaneThrowsReachesTheDispatcherOnceTheOthersAreDone) {
  DevicePool pool({stand_in_lane(0, "0"), stand_in_lane(1, "0")});
  std::atomic<bool> other_finished = false;
  pool.dispatch([](DeviceLane&) {
    std::this_thread::sleep_for(100ms);
    throw std::runtime_error("the evaluation worker failed: no NVRTC");
  }, 0);
  pool.dispatch([&](DeviceLane&) {
    std::this_thread::sleep_for(300ms);
    other_finished = true;
  }, 1);
  EXPECT_THROW(
      {
        try {
          pool.drain();
        } catch (...) {
          pool.abandon();  // as a dispatcher unwinding does
          throw;
        }
      },
      std::runtime_error);
  EXPECT_TRUE(other_finished) << "abandon() returned while a lane still worked";
  pool.drain();  // nothing left: the failure was handed over once
}

}  // namespace
}  // namespace tiletune
