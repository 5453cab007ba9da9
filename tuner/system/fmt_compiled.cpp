// fmt's compiled part, built once for the whole project: every other file includes fmt's headers
// without FMT_HEADER_ONLY and so only declares these functions. Header-only, each file that
// formats compiled its own copy of them, 3 s of its build on the CI machine. (Debian ships fmt's
// library as a shared object only, and the GPU host has none: this is the static library instead.)
//
// The definitions are format-inl.h's; the templates among them that fmt declares extern are
// instantiated here for char, the only character type tiletune formats.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl<char>(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                                 locale_ref);
template FMT_API locale_ref::locale_ref(const std::locale& locale);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
}  // namespace detail
FMT_END_NAMESPACE
