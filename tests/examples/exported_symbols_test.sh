#!/usr/bin/env bash
# libtiletune.so exports its public API and nothing else: what tiletune.h marks TILETUNE_API
# (classes with their members, typeinfo and vtables; free functions) and every function that
# tiletune_c.h declares. Anything more (the tuner inside, fmt, nlohmann, instantiations of the
# standard library's templates) would bind to an application's own copies, or be bound by them.
#
#   exported_symbols_test.sh LIBRARY INCLUDE_DIR
set -euo pipefail
library=$1 include=$2

classes=$(grep -oE '(class|struct) TILETUNE_API [A-Za-z_]+' "$include/tiletune/tiletune.h" |
          awk '{print $3}' | paste -sd'|')
functions=$(grep -oE '^TILETUNE_API [^(]*[ *]([a-z_]+)\(' "$include/tiletune/tiletune.h" |
            sed -E 's/.*[ *]([a-z_]+)\($/\1/' | paste -sd'|')
c_functions=$(grep -oE '(tiletune_[a-z_]+)\(' "$include/tiletune/tiletune_c.h" | tr -d '(' | sort -u)
public="^((typeinfo|typeinfo name|vtable) for )?tiletune::($classes)(::|$)|^tiletune::($functions)\\(|^tiletune_[a-z_]+$"

exported=$(nm -D --defined-only "$library" | awk '{print $3}' | c++filt)
status=0
if stray=$(grep -vE "$public" <<<"$exported"); then
  echo "exported_symbols_test: $library exports more than its public API:" >&2
  sed 's/^/  /' <<<"$stray" >&2
  status=1
fi
for f in $c_functions; do
  if ! grep -qx "$f" <<<"$exported"; then
    echo "exported_symbols_test: $library does not export $f (tiletune_c.h)" >&2
    status=1
  fi
done
echo "$(wc -l <<<"$exported") symbols exported; public: classes $classes; functions $functions;" \
     "the C API's $(wc -w <<<"$c_functions") functions"
exit $status
