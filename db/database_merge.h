// Joins tiletune databases into one (`tiletune merge OUT.db IN.db...`): the shards of a tune
// (`tune --shard I/N`), or tunes run on other machines. The merged file holds what one database
// would hold had every process recorded into it.
//
// Every row is kept with its evidence, the ids (GPU, template version, shape) translated by what
// identifies them: a GPU by name, compute capability, SM count and memory; a template version by
// name and source hash; a shape by its sizes. Where OUT and an input, or two inputs, hold the same
// key, one rule decides, the one the database applies when a process records it again:
//   results        the later recorded_at wins (a new evaluation replaces the row); recorded in the
//                  same second, an ok result beats a failure, then the one with more timed runs;
//                  a full tie keeps the row already there.
//   fuzz_passes    the most cases passed; recorded_at the later.
//   counters       the later profile of the four keys replaces all its metrics (the latest
//                  recorded_at of each); a tie keeps the row already there.
//   bench_results  the later recorded_at wins; a tie keeps the row already there.
//   search_trace   append-only: every step is kept (run ids are random per process); a step
//                  already there is not added twice.
//   missed_problems  the larger count (a merge cannot tell one sighting seen twice from two),
//                  the earlier first_seen and the later last_seen.
//   gpus           clock, driver and NVRTC versions of the source whose rows on that GPU are the
//                  latest; a tie keeps those already there.
//   templates      path, source and precision of the row already there, else of the first input;
//                  the versions of a name are ordered as they were last tuned: by the latest
//                  recorded_at of their results, fuzz passes and search steps, each version taking
//                  at least the time of those registered before it in its own file (it was
//                  registered after them; a registration may have recorded nothing yet), so that
//                  one file's order is kept; equal times keep the order of OUT, then of the inputs
//                  as given, then go by source hash. The last is the current version.
// So merging is idempotent (the same input again changes nothing) and the same in any order of
// inputs, but for exact ties between inputs.
//
// Inputs are opened read-only and never changed; each is read as one snapshot. Every input's
// schema version is checked (1 to 6 are read) before anything is written; OUT is created when
// missing and migrated when older; the rows go in in one transaction, so a failure leaves OUT's
// rows as they were (an OUT that this merge created is removed).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace tiletune {

// What one input brought: per table, the rows added and the rows that replaced OUT's.
struct MergedInput {
  std::filesystem::path path;
  int schema_version = 0;
  std::map<std::string, int> added, replaced;
};

// Throws DatabaseError (db/result_store.h) naming the file for an input that cannot be read, is
// not a tiletune database or has an unknown schema version, for OUT among the inputs, and for a
// failure while writing (then OUT is left as it was).
std::vector<MergedInput> merge_databases(const std::filesystem::path& out,
                                         const std::vector<std::filesystem::path>& inputs);

}  // namespace tiletune
