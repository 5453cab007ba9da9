// The tuner-worker messages survive encoding: every field of a request and of each reply kind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tuner/pipeline/worker_protocol.h"

namespace tiletune {
namespace {

TEST(WorkerProtocol, EvaluationRequestRoundTrip) {
  WorkerRequest request;
  request.evaluate.tmpl = {"tiled", "0123456789abcdef", "/k/tiled.cu", "source\nwith \"quotes\""};
  request.evaluate.config = "TILE=16,PAD=1";
  request.evaluate.shape = {4095, 4097, 4093};
  request.evaluate.fuzz = false;
  request.evaluate.measure = false;
  request.evaluate.fuzz_settings.cases = 17;
  request.evaluate.fuzz_settings.seed = 99;
  request.evaluate.timing = TimingSettings{1, 2, 3, 0.25};
  request.evaluate.data_seed = 5;
  const WorkerRequest back = decode_request(encode(request));
  ASSERT_EQ(back.kind, WorkerRequest::Kind::evaluate);
  EXPECT_EQ(back.evaluate.tmpl.source, request.evaluate.tmpl.source);
  EXPECT_EQ(back.evaluate.tmpl.source_hash, "0123456789abcdef");
  EXPECT_EQ(back.evaluate.config, "TILE=16,PAD=1");
  EXPECT_EQ(back.evaluate.shape, (GemmShape{4095, 4097, 4093}));
  EXPECT_FALSE(back.evaluate.fuzz);
  EXPECT_FALSE(back.evaluate.measure);
  EXPECT_EQ(back.evaluate.fuzz_settings.cases, 17);
  EXPECT_EQ(back.evaluate.fuzz_settings.seed, 99u);
  EXPECT_EQ(back.evaluate.timing.max_runs, 3);
  EXPECT_EQ(back.evaluate.timing.target_seconds, 0.25);
  EXPECT_EQ(back.evaluate.data_seed, 5u);
  EXPECT_EQ(encode(request).find('\n'), std::string::npos) << "one message, one line";
}

TEST(WorkerProtocol, RemeasureRequestRoundTrip) {
  WorkerRequest request;
  request.kind = WorkerRequest::Kind::remeasure;
  request.remeasure.templates = {{"one", "hash1", "one.cu", "// one", Precision::tf32},
                                  {"two", "hash2", "two.cu", "// two", Precision::tf32}};
  request.remeasure.configs = {{0, "A=1"}, {1, "B=2"}, {0, "A=2"}};
  request.remeasure.rounds = 7;
  request.remeasure.shape = {1, 2, 3};
  const WorkerRequest back = decode_request(encode(request));
  ASSERT_EQ(back.kind, WorkerRequest::Kind::remeasure);
  ASSERT_EQ(back.remeasure.templates.size(), 2u);
  EXPECT_EQ(back.remeasure.templates[1].name, "two");
  EXPECT_EQ(back.remeasure.templates[1].source, "// two");
  ASSERT_EQ(back.remeasure.configs.size(), 3u);
  EXPECT_EQ(back.remeasure.configs[1].tmpl, 1u);
  EXPECT_EQ(back.remeasure.configs[1].config, "B=2");
  EXPECT_EQ(back.remeasure.configs[2].config, "A=2");
  EXPECT_EQ(back.remeasure.rounds, 7);
}

TEST(WorkerProtocol, EveryReplyKindRoundTrips) {
  WorkerReply ready;
  ready.kind = WorkerReply::Kind::ready;
  ready.device.name = "NVIDIA H100";
  ready.device.max_block_dim[2] = 64;
  ready.device.l2_cache_bytes = 50 << 20;
  WorkerReply back = decode_reply(encode(ready));
  EXPECT_EQ(back.kind, WorkerReply::Kind::ready);
  EXPECT_EQ(back.device.name, "NVIDIA H100");
  EXPECT_EQ(back.device.max_block_dim[2], 64);
  EXPECT_EQ(back.device.l2_cache_bytes, 50 << 20);

  WorkerReply result;
  result.kind = WorkerReply::Kind::result;
  result.result.status = ResultStatus::wrong_result;
  result.result.detail = "C[3,4] = nan\nminimal case: 1x1x1";
  result.result.median_ms = 1.5;
  result.result.registers = 40;
  result.fuzz_passed = false;
  result.worker_exits = true;
  back = decode_reply(encode(result));
  EXPECT_EQ(back.kind, WorkerReply::Kind::result);
  EXPECT_EQ(back.result.status, ResultStatus::wrong_result);
  EXPECT_EQ(back.result.detail, result.result.detail);
  EXPECT_EQ(back.result.median_ms, 1.5);
  EXPECT_EQ(back.result.registers, 40);
  EXPECT_TRUE(back.worker_exits);

  WorkerReply timings;
  timings.kind = WorkerReply::Kind::timings;
  timings.timings = {Timing{1.0, 0.9, 1.2, 10}, Timing{2.0, 1.9, 2.2, 11}};
  back = decode_reply(encode(timings));
  ASSERT_EQ(back.timings.size(), 2u);
  EXPECT_EQ(back.timings[1].runs, 11);

  WorkerReply progress;
  progress.kind = WorkerReply::Kind::progress;
  progress.text = "9x9x1 lda=4 ldb=11 ldc=15 inputs=real data=1 schedule=2";
  back = decode_reply(encode(progress));
  EXPECT_EQ(back.kind, WorkerReply::Kind::progress);
  EXPECT_EQ(back.text, progress.text);

  WorkerReply fatal;
  fatal.kind = WorkerReply::Kind::fatal;
  fatal.text = "no CUDA driver";
  EXPECT_EQ(decode_reply(encode(fatal)).text, "no CUDA driver");
}

TEST(WorkerProtocol, AMalformedLineNamesItself) {
  try {
    decode_reply("{not json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("malformed worker message"));
  }
  EXPECT_THROW(decode_request("{\"evaluate\": {}}"), std::runtime_error);
}

}  // namespace
}  // namespace tiletune
