#include "fuzz/mutant_suite.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tiletune {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::size_t occurrences(const std::string& text, const std::string& pattern) {
  std::size_t count = 0;
  for (std::size_t at = text.find(pattern); at != std::string::npos;
       at = text.find(pattern, at + pattern.size())) {
    ++count;
  }
  return count;
}

// The string member `key`, or "" when absent and optional; anything else is the suite's fault.
std::string text_member(const json& object, const char* key, bool required) {
  const auto found = object.find(key);
  if (found == object.end()) {
    if (required) throw std::invalid_argument(fmt::format("missing \"{}\"", key));
    return "";
  }
  if (!found->is_string()) throw std::invalid_argument(fmt::format("\"{}\" is not a string", key));
  return found->get<std::string>();
}

Mutant parse_mutant(const json& entry) {
  if (!entry.is_object()) throw std::invalid_argument("a mutant is not an object");
  Mutant mutant;
  mutant.name = text_member(entry, "name", true);
  if (mutant.name.empty() || mutant.name.find_first_of(" /~\\'\"") != std::string::npos) {
    throw std::invalid_argument(fmt::format("mutant name '{}' is empty or has a space, slash, "
                                            "tilde or quote", mutant.name));
  }
  const auto context = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("mutant {}: {}", mutant.name, why));
  };
  try {
    mutant.bug = text_member(entry, "bug", true);
    mutant.gpu_only = text_member(entry, "gpu_only", false);
    const std::string where = text_member(entry, "where", false);
    if (!where.empty()) mutant.where = Expression::parse(where);
    const std::string build = text_member(entry, "build", false);
    if (!build.empty()) mutant.build = Specialization::parse(build);
    const auto replace = entry.find("replace");
    if (replace == entry.end() || !replace->is_array() || replace->empty()) {
      throw std::invalid_argument("\"replace\" must be a non-empty list of {from, to}");
    }
    for (const json& edit : *replace) {
      if (!edit.is_object()) throw std::invalid_argument("an edit is not an object");
      SourceEdit parsed{text_member(edit, "from", true), text_member(edit, "to", true)};
      if (parsed.from.empty()) throw std::invalid_argument("an edit's \"from\" is empty");
      mutant.edits.push_back(std::move(parsed));
    }
  } catch (const std::invalid_argument& e) {
    throw context(e.what());
  } catch (const ExpressionError& e) {
    throw context(std::string("where: ") + e.what());
  }
  return mutant;
}

}  // namespace

bool Mutant::live_in(const KernelTemplate& original, const Configuration& config) const {
  if (where && where->evaluate(original.bindings(config)) == 0) return false;
  if (!build) return true;
  const std::vector<Specialization> builds = original.builds(config);
  return std::find(builds.begin(), builds.end(), *build) != builds.end();
}

KernelTemplate MutantSuite::apply(const Mutant& mutant) const {
  std::string source = original.source;
  for (const SourceEdit& edit : mutant.edits) {
    const std::size_t found = occurrences(source, edit.from);
    if (found != 1) {
      throw MutantSuiteError(fmt::format(
          "{}: mutant {}: the text '{}' occurs {} times in {}, not once: update the mutant",
          path.string(), mutant.name, edit.from, found, original.path.string()));
    }
    source.replace(source.find(edit.from), edit.from.size(), edit.to);
  }
  try {
    KernelTemplate mutated =
        parse_template(std::move(source), fmt::format("{} ({})", original.path.string(), mutant.name));
    mutated.name = original.name + "~" + mutant.name;
    mutated.path = original.path;  // reports and compiler messages name the real file's lines
    return mutated;
  } catch (const TemplateError& e) {
    throw MutantSuiteError(fmt::format("{}: mutant {} breaks the template's declarations: {}",
                                       path.string(), mutant.name, e.what()));
  }
}

const Mutant& MutantSuite::find(const std::string& name) const {
  for (const Mutant& mutant : mutants) {
    if (mutant.name == name) return mutant;
  }
  std::string known;
  for (const Mutant& mutant : mutants) known += (known.empty() ? "" : ", ") + mutant.name;
  throw MutantSuiteError(
      fmt::format("{}: no mutant named '{}' (mutants: {})", path.string(), name, known));
}

MutantSuite load_mutant_suite(const fs::path& path) {
  const auto fail = [&](const std::string& why) {
    return MutantSuiteError(fmt::format("{}: {}", path.string(), why));
  };
  std::ifstream file(path);
  if (!file) throw fail("cannot be read");
  json document;
  try {
    document = json::parse(file);
  } catch (const json::parse_error& e) {
    throw fail(std::string("not JSON: ") + e.what());
  }
  if (!document.is_object()) throw fail("not a JSON object");

  MutantSuite suite;
  suite.path = path;
  try {
    const fs::path template_path = path.parent_path() / text_member(document, "template", true);
    suite.original = load_template(template_path.lexically_normal());
    const auto mutants = document.find("mutants");
    if (mutants == document.end() || !mutants->is_array() || mutants->empty()) {
      throw std::invalid_argument("\"mutants\" must be a non-empty list");
    }
    std::set<std::string> names;
    for (const json& entry : *mutants) {
      Mutant mutant = parse_mutant(entry);
      if (!names.insert(mutant.name).second) {
        throw std::invalid_argument(fmt::format("mutant {} is named twice", mutant.name));
      }
      for (const std::string& name : mutant.where ? mutant.where->names() : std::set<std::string>{}) {
        bool known = false;
        for (const Parameter& parameter : suite.original.parameters) known |= parameter.name == name;
        if (!known) {
          throw std::invalid_argument(fmt::format(
              "mutant {}: where names '{}', not a parameter of {}", mutant.name, name,
              suite.original.name));
        }
      }
      suite.mutants.push_back(std::move(mutant));
    }
  } catch (const std::invalid_argument& e) {
    throw fail(e.what());
  } catch (const TemplateError& e) {
    throw fail(e.what());
  } catch (const std::runtime_error& e) {  // the template file cannot be read
    throw fail(e.what());
  }
  for (const Mutant& mutant : suite.mutants) suite.apply(mutant);  // every edit applies, now
  return suite;
}

}  // namespace tiletune
