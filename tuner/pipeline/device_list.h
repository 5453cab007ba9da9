// Which devices a tune runs on (`tune --devices all|0,2,...`): the list as given, and the ordinals
// it names once the devices there are known.
#pragma once

#include <string>
#include <vector>

namespace tiletune {

struct DeviceList {
  bool all = false;           // "all": every device there is
  std::vector<int> ordinals;  // otherwise, in the order given (at least one, no duplicates)

  // "all", or ordinals separated by commas ("0", "0,2,3"). Throws std::invalid_argument saying
  // what is wrong: not a list, a negative or unreadable number, a duplicate.
  static DeviceList parse(const std::string& text);

  // The ordinals among `count` devices: all of them, or those given. Throws std::invalid_argument
  // for an ordinal beyond them; `devices` names what is counted ("GPUs", "CPU worker slots").
  std::vector<int> resolve(int count, const std::string& devices) const;
};

}  // namespace tiletune
