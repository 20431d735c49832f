#pragma once
// Overflow-checked integer arithmetic for sizes and counts that come from user input (shapes, chip counts,
// tile counts, program file integers). Signed overflow is undefined behaviour in C++ and unsigned overflow
// silently wraps; both turn an absurd input into a wrong answer or a crash, so such products go through these.
#include <limits>
#include <optional>
#include <type_traits>

namespace tpusim {

template <class T>
[[nodiscard]] constexpr std::optional<T> checked_mul(T a, T b) {
  static_assert(std::is_integral_v<T>);
  T r{};
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

template <class T>
[[nodiscard]] constexpr std::optional<T> checked_add(T a, T b) {
  static_assert(std::is_integral_v<T>);
  T r{};
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a x b, or the type's maximum when that overflows (for estimates that only compare against a limit).
template <class T>
[[nodiscard]] constexpr T saturating_mul(T a, T b) {
  return checked_mul(a, b).value_or(std::numeric_limits<T>::max());
}

}  // namespace tpusim
