// A full shape's reference is computed once for a whole tune: the first worker that needs it
// computes it, the others (other processes, each with its own descriptor on the lock) read it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "tests/support/test_folder.h"
#include "tuner/pipeline/shared_references.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;

ReferenceTable table_of(std::int64_t rows, std::int64_t cols, double first) {
  ReferenceTable table;
  table.rows = rows;
  table.cols = cols;
  table.depth = 7;
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    table.value.push_back(first + double(i));
    table.magnitude.push_back(2 * (first + double(i)));
  }
  return table;
}

void expect_same(const ReferenceTable& got, const ReferenceTable& expected) {
  EXPECT_EQ(got.rows, expected.rows);
  EXPECT_EQ(got.cols, expected.cols);
  EXPECT_EQ(got.depth, expected.depth);
  EXPECT_EQ(got.value, expected.value);
  EXPECT_EQ(got.magnitude, expected.magnitude);
}

class SharedReferencesTest : public ::testing::Test {
 protected:
  void SetUp() override { folder_ = testing_support::fresh_test_folder("shared-references"); }
  void TearDown() override { fs::remove_all(folder_); }
  fs::path folder_;
};

TEST_F(SharedReferencesTest, TheFirstOfManyComputesAndTheOthersReadWhatItLeft) {
  const ReferenceTable expected = table_of(3, 5, 0.25);
  std::atomic<int> computed{0};
  std::vector<ReferenceTable> got(6);
  {
    std::vector<std::jthread> lanes;
    for (std::size_t i = 0; i < got.size(); ++i) {
      lanes.emplace_back([&, i] {
        const SharedReferences references(folder_);  // as each lane's worker opens it
        got[i] = *references.get("reference-3x5x7-seed1", [&] {
          ++computed;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others arrive meanwhile
          return expected;
        });
      });
    }
  }
  EXPECT_EQ(computed.load(), 1) << "the reference was computed per lane";
  for (const ReferenceTable& table : got) expect_same(table, expected);
  // Another shape or seed is another reference.
  const SharedReferences references(folder_);
  expect_same(*references.get("reference-3x5x7-seed2", [&] {
    ++computed;
    return table_of(3, 5, 9);
  }), table_of(3, 5, 9));
  EXPECT_EQ(computed.load(), 2);
}

TEST_F(SharedReferencesTest, WithoutAFolderEachCallComputes) {
  const SharedReferences alone;
  int computed = 0;
  for (int i = 0; i < 2; ++i) {
    alone.get("reference", [&] {
      ++computed;
      return table_of(1, 1, 0);
    });
  }
  EXPECT_EQ(computed, 2);
}

TEST_F(SharedReferencesTest, ADamagedFileIsAnErrorNamingIt) {
  const SharedReferences references(folder_);
  references.get("whole", [] { return table_of(4, 4, 1); });
  const fs::path file = folder_ / "whole";
  fs::resize_file(file, fs::file_size(file) - 8);
  EXPECT_THAT([&] { references.get("whole", [] { return table_of(4, 4, 1); }); },
              ::testing::ThrowsMessage<std::runtime_error>(::testing::AllOf(
                  ::testing::HasSubstr(file.string()), ::testing::HasSubstr("damaged"))));
  std::ofstream(folder_ / "garbage") << "not a reference";
  EXPECT_THROW(references.get("garbage", [] { return table_of(1, 1, 0); }), std::runtime_error);
}

}  // namespace
}  // namespace tiletune
