#include "tuner/pipeline/device_list.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace tiletune {

DeviceList DeviceList::parse(const std::string& text) {
  DeviceList list;
  if (text == "all") {
    list.all = true;
    return list;
  }
  const auto refuse = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("--devices '{}': {}; give 'all' or device numbers "
                                             "separated by commas (0,2)", text, why));
  };
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string word = text.substr(start, comma - start);
    if (word.empty() || word.size() > 4 || word.find_first_not_of("0123456789") != std::string::npos) {
      throw refuse(word.empty() ? "an empty entry" : fmt::format("'{}' is not a device number", word));
    }
    const int ordinal = std::stoi(word);
    if (std::ranges::find(list.ordinals, ordinal) != list.ordinals.end()) {
      throw refuse(fmt::format("device {} is named twice", ordinal));
    }
    list.ordinals.push_back(ordinal);
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return list;
}

std::vector<int> DeviceList::resolve(int count, const std::string& devices) const {
  if (all) {
    std::vector<int> every(std::max(count, 0));
    for (int i = 0; i < count; ++i) every[i] = i;
    return every;
  }
  for (const int ordinal : ordinals) {
    if (ordinal >= count) {
      throw std::invalid_argument(fmt::format("--devices: no device {}: this machine has {} {} "
                                              "(0 to {})", ordinal, count, devices, count - 1));
    }
  }
  return ordinals;
}

}  // namespace tiletune
