// The runtime library's selection rule (tuner/runtime/selection.h) on record sets built in memory:
// the GPU steps, the exact then nearest shape, requirements read with the problem's leading
// dimensions, templates today's parser refuses, declared defaults, --exact, and determinism.
#include "tuner/runtime/selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>

namespace tiletune::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// V is the width of A's vector loads: lda must be a multiple of it. M % 8 keeps ROWS=8 off odd M.
constexpr const char* kVectorSource =
    "// tiletune: name vec\n"
    "// tiletune: entry k\n"
    "// tiletune: param V 1 4\n"
    "// tiletune: param ROWS 1 8\n"
    "// tiletune: require lda % V == 0\n"
    "// tiletune: require M % ROWS == 0\n"
    "// tiletune: block 32\n"
    "// tiletune: grid ceil_div(N, 32)\n"
    "extern \"C\" __global__ void k() {}\n";

const GemmShape kCube{1024, 1024, 1024};
const GemmShape kFlat{4096, 4096, 64};

struct RecordSetBuilder {
  RecordSet records;

  RecordSetBuilder() {
    RecordedTemplate vec{"vec", "", "vec.cu", kVectorSource, std::nullopt};
    vec.parsed = parse_template(kVectorSource, "vec.cu");
    vec.source_hash = vec.parsed->source_hash;
    records.templates.push_back(std::move(vec));
  }
  std::size_t gpu(const std::string& name, int major, int minor, int sm_count = 132) {
    records.gpus.push_back({name, major, minor, sm_count, 80'000'000'000ULL});
    return records.gpus.size() - 1;
  }
  std::size_t unparsable_template(const std::string& name) {
    records.templates.push_back(
        {name, "00000000000000ff", name + ".cu", "// an old declaration\n", std::nullopt});
    return records.templates.size() - 1;
  }
  void choice(std::size_t gpu, const std::string& config, GemmShape shape, double median_ms,
              std::size_t templ = 0) {
    RecordedChoice c;
    c.gpu = gpu;
    c.templ = templ;
    c.config = config;
    c.shape = shape;
    c.median_ms = median_ms;
    c.runs = 20;
    records.choices.push_back(c);
  }
  RecordSet done() {
    sort_choices(records);
    return records;
  }
};

SelectionRequest request_for(GemmProblem problem, std::string gpu_name = "NVIDIA H100 80GB HBM3") {
  SelectionRequest request;
  request.template_name = "vec";
  request.problem = problem;
  request.gpu_name = std::move(gpu_name);
  return request;
}

std::string no_selection(const RecordSet& records, const SelectionRequest& request) {
  try {
    const Selection s = select_configuration(records, request);
    ADD_FAILURE() << "selected [" << s.config << "]: " << s.why;
  } catch (const NoSelection& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
    return e.what();
  }
  return "";
}

TEST(Selection, TheExactShapeFastestFirst) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  b.choice(h100, "V=1,ROWS=1", kCube, 2.0);
  b.choice(h100, "V=4,ROWS=8", kCube, 1.0);
  b.choice(h100, "V=4,ROWS=1", kFlat, 0.1);  // faster, at another shape
  const RecordSet records = b.done();
  const Selection s = select_configuration(records, request_for(GemmProblem::packed(kCube)));
  EXPECT_EQ(s.config, "V=4,ROWS=8");
  EXPECT_EQ(s.step, GpuStep::this_gpu);
  EXPECT_TRUE(s.exact_shape);
  EXPECT_EQ(s.excluded, 0);
  ASSERT_NE(s.choice, nullptr);
  EXPECT_EQ(s.choice->shape, kCube);
  EXPECT_EQ(s.templ, &records.templates[0]);
  EXPECT_THAT(s.why, HasSubstr("NVIDIA H100 80GB HBM3 has a record of 1024x1024x1024"));
}

TEST(Selection, ATemplateBelowTheLowestPrecisionAcceptedIsNeverSelected) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  b.choice(h100, "V=4,ROWS=8", kCube, 1.0);
  b.records.templates[0].precision = Precision::tf32;
  const RecordSet records = b.done();
  SelectionRequest request = request_for(GemmProblem::packed(kCube));
  request.default_config = "V=1,ROWS=1";  // not even a default runs it
  for (const Precision lowest : {Precision::fp32, Precision::tf32x3}) {
    request.lowest_precision = lowest;
    EXPECT_THAT(no_selection(records, request),
                HasSubstr(std::string("template 'vec' declares precision tf32, below the lowest "
                                      "accepted (") + to_string(lowest) + ")"));
  }
  request.lowest_precision = Precision::tf32;
  EXPECT_EQ(select_configuration(records, request).config, "V=4,ROWS=8");
}

TEST(Selection, TheNearestRecordedShapeAnswersAnUnrecordedOne) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  b.choice(h100, "V=4,ROWS=8", kCube, 1.0);
  b.choice(h100, "V=1,ROWS=8", kFlat, 3.0);
  const RecordSet records = b.done();
  // By log distance, 4000x4000x100 is near 4096x4096x64; by volume it would be near 1024^3.
  const Selection flat =
      select_configuration(records, request_for(GemmProblem::packed({4000, 4000, 100})));
  EXPECT_EQ(flat.config, "V=1,ROWS=8");
  EXPECT_FALSE(flat.exact_shape);
  EXPECT_EQ(flat.choice->shape, kFlat);
  EXPECT_THAT(flat.why,
              HasSubstr("has no record of 4000x4000x100; nearest recorded shape 4096x4096x64"));
  const Selection cube =
      select_configuration(records, request_for(GemmProblem::packed({1000, 1000, 1000})));
  EXPECT_EQ(cube.config, "V=4,ROWS=8");
}

TEST(Selection, RequirementsReadTheLeadingDimensionsAndTheNextBestRuns) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  b.choice(h100, "V=4,ROWS=8", kCube, 1.0);
  b.choice(h100, "V=4,ROWS=1", kCube, 1.5);
  b.choice(h100, "V=1,ROWS=8", kCube, 2.0);
  b.choice(h100, "V=1,ROWS=1", kCube, 3.0);
  const RecordSet records = b.done();

  // Packed: the fastest.
  EXPECT_EQ(select_configuration(records, request_for(GemmProblem::packed(kCube))).config,
            "V=4,ROWS=8");
  // lda = 1025 is no multiple of 4: both V=4 configurations are left out, though the shape is the
  // same.
  const Selection strided = select_configuration(records, request_for({kCube, 1025, 1024, 1024}));
  EXPECT_EQ(strided.config, "V=1,ROWS=8");
  EXPECT_TRUE(strided.exact_shape);
  EXPECT_EQ(strided.excluded, 2);
  EXPECT_THAT(strided.why, HasSubstr("2 faster configurations left out: their requirements exclude "
                                     "lda=1025 ('lda % V == 0')"));
  // 1000x1000x1000 with lda = 1001: nearest shape 1024^3; M % 8 == 0 holds, lda % 4 does not.
  const Selection nearest =
      select_configuration(records, request_for({{1000, 1000, 1000}, 1001, 1000, 1000}));
  EXPECT_EQ(nearest.config, "V=1,ROWS=8");
  EXPECT_FALSE(nearest.exact_shape);
  EXPECT_EQ(nearest.excluded, 2);
  EXPECT_THAT(nearest.why, HasSubstr("has no record of 1000x1000x1000; nearest recorded shape "
                                     "1024x1024x1024; 2 faster configurations left out: their "
                                     "requirements exclude lda=1001"));
  // M = 1001 and lda = 1001: only V=1,ROWS=1 is left.
  const Selection odd =
      select_configuration(records, request_for({{1001, 1000, 1000}, 1001, 1000, 1000}));
  EXPECT_EQ(odd.config, "V=1,ROWS=1");
  EXPECT_EQ(odd.excluded, 3);
}

TEST(Selection, AShapeWhoseRecordsAllExcludeTheProblemGivesWayToTheNextNearest) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  b.choice(h100, "V=4,ROWS=8", kCube, 1.0);
  b.choice(h100, "V=1,ROWS=1", kFlat, 5.0);
  const RecordSet records = b.done();
  const Selection s = select_configuration(records, request_for({kCube, 1027, 1024, 1024}));
  EXPECT_EQ(s.config, "V=1,ROWS=1");
  EXPECT_EQ(s.choice->shape, kFlat);
  EXPECT_EQ(s.excluded, 1);
  EXPECT_THAT(
      s.why,
      HasSubstr("has no record of 1024x1024x1024 that fits; nearest recorded shape 4096x4096x64"));
}

TEST(Selection, GpuStepsGoFromThisGpuToTheSameComputeCapabilityToTheSameArchitecture) {
  RecordSetBuilder b;
  const auto a100 = b.gpu("NVIDIA A100-SXM4-80GB", 8, 0);
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  const auto h200 = b.gpu("NVIDIA H200", 9, 0);
  const auto gh = b.gpu("NVIDIA GH200 480GB", 9, 0);
  const auto future = b.gpu("NVIDIA Future", 9, 5);
  b.choice(a100, "V=1,ROWS=1", kCube, 0.5);  // fastest, but another architecture: never chosen
  b.choice(h100, "V=4,ROWS=8", kCube, 1.0);  // lda % 4 is needed
  b.choice(h200, "V=1,ROWS=8", kFlat, 2.0);
  b.choice(gh, "V=1,ROWS=8", kCube, 2.5);  // GH200 has more records than H200: tried first
  b.choice(gh, "V=4,ROWS=1", kFlat, 2.5);
  b.choice(future, "V=1,ROWS=1", kCube, 4.0);
  const RecordSet records = b.done();

  // This GPU's record fits.
  const Selection here = select_configuration(records, request_for(GemmProblem::packed(kCube)));
  EXPECT_EQ(here.step, GpuStep::this_gpu);
  EXPECT_EQ(records.gpus[here.choice->gpu].name, "NVIDIA H100 80GB HBM3");

  // It does not (lda = 1025): the same compute capability, the GPU with more records first.
  const Selection same_cc = select_configuration(records, request_for({kCube, 1025, 1024, 1024}));
  EXPECT_EQ(same_cc.step, GpuStep::same_compute_capability);
  EXPECT_EQ(records.gpus[same_cc.choice->gpu].name, "NVIDIA GH200 480GB");
  EXPECT_EQ(same_cc.config, "V=1,ROWS=8");
  EXPECT_TRUE(same_cc.exact_shape);
  EXPECT_THAT(same_cc.why, HasSubstr("NVIDIA GH200 480GB has the same compute capability (9.0)"));

  // M = 1001 excludes ROWS=8 everywhere: the same architecture (9.5) answers.
  const Selection same_arch =
      select_configuration(records, request_for({{1001, 1024, 1024}, 1025, 1024, 1024}));
  EXPECT_EQ(same_arch.step, GpuStep::same_architecture);
  EXPECT_EQ(records.gpus[same_arch.choice->gpu].name, "NVIDIA Future");
  EXPECT_EQ(same_arch.config, "V=1,ROWS=1");
  EXPECT_THAT(same_arch.why, HasSubstr("same architecture (sm_9x)"));

  // `here` is this GPU when no name overrides it; a name overrides `here`.
  SelectionRequest from_here = request_for(GemmProblem::packed(kCube), "");
  from_here.here = GpuIdentity{"NVIDIA H200", 9, 0};
  const Selection h200_here = select_configuration(records, from_here);
  EXPECT_EQ(h200_here.step, GpuStep::this_gpu);
  EXPECT_EQ(records.gpus[h200_here.choice->gpu].name, "NVIDIA H200");
  from_here.gpu_name = "NVIDIA A100-SXM4-80GB";
  const Selection named = select_configuration(records, from_here);
  EXPECT_EQ(named.step, GpuStep::this_gpu);
  EXPECT_EQ(named.config, "V=1,ROWS=1");
}

TEST(Selection, AGpuThatIsNotRecordedUsesHereOrNamesTheGpusRecorded) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  b.gpu("NVIDIA A100-SXM4-80GB", 8, 0);
  b.choice(h100, "V=4,ROWS=8", kCube, 1.0);
  const RecordSet records = b.done();

  // A new board here, no record of it: its compute capability finds the H100's records.
  SelectionRequest request = request_for(GemmProblem::packed(kCube), "");
  request.here = GpuIdentity{"NVIDIA H100 NVL", 9, 0};
  const Selection s = select_configuration(records, request);
  EXPECT_EQ(s.step, GpuStep::same_compute_capability);
  EXPECT_EQ(s.config, "V=4,ROWS=8");
  // A name that is not recorded and nothing here: refused, naming what is recorded.
  const std::string why =
      no_selection(records, request_for(GemmProblem::packed(kCube), "NVIDIA B200"));
  EXPECT_THAT(why, HasSubstr("NVIDIA B200"));
  EXPECT_THAT(why, HasSubstr("NVIDIA A100-SXM4-80GB, NVIDIA H100 80GB HBM3"));
  // ... unless a default is declared: it runs, and the why still names the unknown GPU.
  SelectionRequest with_default = request_for(GemmProblem::packed(kCube), "NVIDIA B200");
  with_default.default_config = "V=4,ROWS=8";
  const Selection fallback = select_configuration(records, with_default);
  EXPECT_EQ(fallback.step, GpuStep::default_config);
  EXPECT_THAT(fallback.why, HasSubstr("no GPU named 'NVIDIA B200' is recorded"));
}

TEST(Selection, WithoutAGpuTheGpuWithTheMostRecordsOfTheTemplateIsStepOne) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  const auto h200 = b.gpu("NVIDIA H200", 9, 0);
  const auto other = b.unparsable_template("other");
  b.choice(h100, "V=4,ROWS=8", kCube, 1.0);
  b.choice(h200, "V=4,ROWS=8", kCube, 0.9);
  b.choice(h200, "V=1,ROWS=1", kFlat, 3.0);
  for (int i = 0; i < 5; ++i)
    b.choice(h100, "X=" + std::to_string(i), kCube, 1.0, other);  // not vec's
  const RecordSet records = b.done();
  const Selection s = select_configuration(records, request_for(GemmProblem::packed(kCube), ""));
  EXPECT_EQ(records.gpus[s.choice->gpu].name, "NVIDIA H200");
  EXPECT_EQ(s.step, GpuStep::this_gpu);
  EXPECT_THAT(
      s.why,
      HasSubstr(
          "no GPU here: selecting as on NVIDIA H200, the GPU with the most records of vec (2)"));

  // A tie goes to the first name.
  RecordSetBuilder tie;
  const auto t_h200 = tie.gpu("NVIDIA H200", 9, 0);
  const auto t_h100 = tie.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  tie.choice(t_h200, "V=4,ROWS=8", kCube, 0.9);
  tie.choice(t_h100, "V=4,ROWS=8", kCube, 1.0);
  std::sort(tie.records.gpus.begin(), tie.records.gpus.end(),
            [](const RecordedGpu& a, const RecordedGpu& b) { return a.name < b.name; });
  for (RecordedChoice& c : tie.records.choices) c.gpu = 1 - c.gpu;  // indices follow the sort
  const RecordSet tied = tie.done();
  const Selection first = select_configuration(tied, request_for(GemmProblem::packed(kCube), ""));
  EXPECT_EQ(tied.gpus[first.choice->gpu].name, "NVIDIA H100 80GB HBM3");
}

TEST(Selection, GpusOfOneNameWithDifferentRowsAreTriedMostRecordsFirst) {
  RecordSetBuilder b;
  const auto small = b.gpu("NVIDIA H100 80GB HBM3", 9, 0, 114);
  const auto large = b.gpu("NVIDIA H100 80GB HBM3", 9, 0, 132);
  b.choice(small, "V=4,ROWS=8", kCube, 0.5);
  b.choice(large, "V=4,ROWS=8", kCube, 1.0);
  b.choice(large, "V=1,ROWS=1", kFlat, 1.0);
  const RecordSet records = b.done();
  const Selection s = select_configuration(records, request_for(GemmProblem::packed(kCube)));
  EXPECT_EQ(s.step, GpuStep::this_gpu);
  EXPECT_EQ(records.gpus[s.choice->gpu].sm_count, 132);
}

TEST(Selection, ATemplateTodaysParserRefusesIsServedUncheckedAndSaysSo) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  const auto old = b.unparsable_template("old");
  b.choice(h100, "TILE=16", kCube, 2.0, old);
  b.choice(h100, "TILE=32", kCube, 1.0, old);
  const RecordSet records = b.done();
  SelectionRequest request = request_for({kCube, 1025, 1024, 1024});
  request.template_name = "old";
  const Selection s = select_configuration(records, request);
  EXPECT_EQ(s.config, "TILE=32");
  EXPECT_THAT(s.why, HasSubstr("template version 00000000000000ff of old cannot be parsed by this "
                               "tiletune (old.cu: no '// tiletune:' declarations found): its "
                               "requirements were not checked"));
  // A default needs its requirements read: refused.
  request.problem = GemmProblem::packed({64, 64, 64});
  request.gpu_name = "NVIDIA H200";
  request.here = GpuIdentity{"NVIDIA H200", 8, 0};
  request.default_config = "TILE=16";
  EXPECT_THAT(no_selection(records, request),
              HasSubstr("the default configuration [TILE=16] cannot be checked"));
}

TEST(Selection, ADeclaredDefaultRunsWhenNothingFitsUnlessItsRequirementsExcludeTheProblem) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  b.choice(h100, "V=4,ROWS=8", kCube, 1.0);
  const RecordSet records = b.done();
  SelectionRequest request = request_for({kCube, 1025, 1024, 1024});

  const std::string nothing = no_selection(records, request);
  EXPECT_THAT(
      nothing,
      HasSubstr("no recorded configuration of vec fits 1024x1024x1024 lda=1025 ldb=1024 ldc=1024"));
  EXPECT_THAT(nothing, HasSubstr("NVIDIA H100 80GB HBM3: 1 recorded configuration excluded by "
                                 "requirements (first: 'lda % V == 0')"));
  EXPECT_THAT(nothing, HasSubstr("no other GPU of the same compute capability (9.0) recorded"));

  request.default_config = "ROWS=8,V=1";  // any order: normalized
  const Selection fallback = select_configuration(records, request);
  EXPECT_EQ(fallback.step, GpuStep::default_config);
  EXPECT_EQ(fallback.config, "V=1,ROWS=8");
  EXPECT_EQ(fallback.choice, nullptr);
  EXPECT_FALSE(fallback.exact_shape);
  EXPECT_THAT(fallback.why, HasSubstr("the declared default [V=1,ROWS=8] runs"));

  request.default_config = "V=4,ROWS=1";
  EXPECT_THAT(
      no_selection(records, request),
      HasSubstr("the default configuration [V=4,ROWS=1] does not meet requirement 'lda % V == 0' "
                "for 1024x1024x1024 lda=1025 ldb=1024 ldc=1024"));
  request.default_config = "V=3,ROWS=1";
  EXPECT_THAT(no_selection(records, request),
              HasSubstr("the default configuration [V=3,ROWS=1] is not one of vec"));
}

TEST(Selection, ExactOnlyTakesTheExactShapeOnThisGpuAndNoDefault) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  const auto h200 = b.gpu("NVIDIA H200", 9, 0);
  b.choice(h100, "V=4,ROWS=8", kFlat, 1.0);
  b.choice(h200, "V=4,ROWS=8", kCube, 1.0);
  const RecordSet records = b.done();
  SelectionRequest request = request_for(GemmProblem::packed(kFlat));
  request.exact_only = true;
  EXPECT_EQ(select_configuration(records, request).config, "V=4,ROWS=8");

  request.problem = GemmProblem::packed(kCube);  // H200 has it, but it is not this GPU
  request.default_config = "V=1,ROWS=1";
  const std::string why = no_selection(records, request);
  EXPECT_THAT(why, HasSubstr("no record of vec at 1024x1024x1024"));
  EXPECT_THAT(why, Not(HasSubstr("NVIDIA H200")));
}

// A configuration that adds into C serves beta and the epilogues through the launcher's pass over C,
// which costs a launch: a problem that asks for one takes the fastest that keeps C where the pass
// would make the split slower (epilogue_pass_ms), and the split where it stays faster.
TEST(Selection, APassOverCCountsAgainstAConfigurationThatAddsIntoIt) {
  constexpr const char* kSplitSource =
      "// tiletune: name split\n"
      "// tiletune: entry k\n"
      "// tiletune: param SPLIT 1 4\n"
      "// tiletune: block 32\n"
      "// tiletune: grid ceil_div(N, 32), M, SPLIT\n"
      "// tiletune: zero_output SPLIT > 1\n"
      "// tiletune: supports alpha beta epilogue\n"
      "extern \"C\" __global__ void k() {}\n";
  RecordSetBuilder b;
  RecordedTemplate split{"split", "", "split.cu", kSplitSource, std::nullopt};
  split.parsed = parse_template(kSplitSource, "split.cu");
  split.source_hash = split.parsed->source_hash;
  b.records.templates.push_back(std::move(split));
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  const GemmShape thin{64, 4096, 4096};  // 1 MB of C: the pass about 4.6 us
  b.choice(h100, "SPLIT=4", thin, 0.030, 1);
  b.choice(h100, "SPLIT=1", thin, 0.033, 1);
  const GemmShape wide{64, 8192, 4096};
  b.choice(h100, "SPLIT=4", wide, 0.030, 1);
  b.choice(h100, "SPLIT=1", wide, 0.040, 1);
  const RecordSet records = b.done();
  SelectionRequest request = request_for(GemmProblem::packed(thin));
  request.template_name = "split";
  EXPECT_EQ(select_configuration(records, request).config, "SPLIT=4");
  request.problem.epilogue = Epilogue::bias_relu;
  EXPECT_EQ(select_configuration(records, request).config, "SPLIT=1");
  request.problem.epilogue = Epilogue::none;
  request.problem.beta = 1;
  EXPECT_EQ(select_configuration(records, request).config, "SPLIT=1");
  request.problem = GemmProblem::packed(wide);
  request.problem.epilogue = Epilogue::gelu;
  EXPECT_EQ(select_configuration(records, request).config, "SPLIT=4");
  EXPECT_DOUBLE_EQ(epilogue_pass_ms(GemmProblem::packed(wide)), 0);
}

TEST(Selection, AnUnrecordedTemplateIsNamedWithThoseRecorded) {
  RecordSetBuilder b;
  b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  const RecordSet records = b.done();
  SelectionRequest request = request_for(GemmProblem::packed(kCube));
  request.template_name = "naive";
  EXPECT_EQ(no_selection(records, request), "template 'naive' is not recorded (recorded: vec)");
}

TEST(Selection, TheSameRecordsInAnyOrderGiveTheSameAnswer) {
  RecordSetBuilder b;
  const auto h100 = b.gpu("NVIDIA H100 80GB HBM3", 9, 0);
  const auto h200 = b.gpu("NVIDIA H200", 9, 0);
  // Ties everywhere: equal times at one shape, two shapes at the same distance from the problem.
  for (const auto gpu : {h100, h200}) {
    b.choice(gpu, "V=1,ROWS=8", {2048, 1024, 1024}, 1.0);
    b.choice(gpu, "V=1,ROWS=1", {2048, 1024, 1024}, 1.0);
    b.choice(gpu, "V=4,ROWS=1", {1024, 2048, 1024}, 1.0);
    b.choice(gpu, "V=4,ROWS=8", {1024, 1024, 2048}, 1.0);
  }
  const RecordSet sorted = b.done();
  const std::vector<GemmProblem> problems = {GemmProblem::packed(kCube),
                                             {kCube, 1025, 1024, 1024},
                                             {{1001, 1024, 1024}, 1024, 1024, 1024}};
  std::vector<std::string> answers;
  for (const GemmProblem& problem : problems) {
    const Selection s = select_configuration(sorted, request_for(problem, ""));
    answers.push_back(s.config + " " + s.choice->shape.to_string() + " " +
                      sorted.gpus[s.choice->gpu].name + " | " + s.why);
  }
  // The shapes tie: the first in shape order (1024x1024x2048) answers.
  EXPECT_THAT(answers[0], ::testing::StartsWith("V=4,ROWS=8 1024x1024x2048 NVIDIA H100 80GB HBM3"));
  EXPECT_THAT(answers[1],
              ::testing::StartsWith("V=1,ROWS=1 2048x1024x1024"));  // times tie: config text
  std::mt19937 random(14);
  for (int round = 0; round < 20; ++round) {
    RecordSet shuffled = sorted;
    std::shuffle(shuffled.choices.begin(), shuffled.choices.end(), random);
    sort_choices(shuffled);
    for (std::size_t i = 0; i < sorted.choices.size(); ++i) {
      const RecordedChoice &a = shuffled.choices[i], &b = sorted.choices[i];
      EXPECT_EQ(std::tie(a.gpu, a.shape, a.median_ms, a.config),
                std::tie(b.gpu, b.shape, b.median_ms, b.config));
    }
    for (std::size_t i = 0; i < problems.size(); ++i) {
      const Selection s = select_configuration(shuffled, request_for(problems[i], ""));
      EXPECT_EQ(s.config + " " + s.choice->shape.to_string() + " " +
                    shuffled.gpus[s.choice->gpu].name + " | " + s.why,
                answers[i]);
    }
  }
}

}  // namespace
}  // namespace tiletune::runtime
