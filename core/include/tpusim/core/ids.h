#pragma once
// Strong ids: a chip index can never be used where a link index is expected. Containers indexed by an id use
// IdVector<Id, T> so the index type is checked too.
#include <cstdint>
#include <functional>
#include <vector>

namespace tpusim {

template <class Tag>
class StrongId {
 public:
  constexpr StrongId() = default;
  constexpr explicit StrongId(std::uint32_t v) : v_(v) {}
  [[nodiscard]] constexpr std::uint32_t value() const { return v_; }
  constexpr bool operator==(StrongId o) const { return v_ == o.v_; }
  constexpr bool operator!=(StrongId o) const { return v_ != o.v_; }
  constexpr bool operator<(StrongId o) const { return v_ < o.v_; }

 private:
  std::uint32_t v_ = 0;
};

using ChipId = StrongId<struct ChipTag>;
using LinkId = StrongId<struct LinkTag>;
using CoreId = StrongId<struct CoreTag>;
using HostId = StrongId<struct HostTag>;
using PortId = StrongId<struct PortTag>;
using OcsId = StrongId<struct OcsTag>;
using InstrId = StrongId<struct InstrTag>;

template <class Id, class T>
class IdVector {
 public:
  IdVector() = default;
  explicit IdVector(std::size_t n, const T& init = T{}) : items_(n, init) {}
  T& operator[](Id id) { return items_[id.value()]; }
  const T& operator[](Id id) const { return items_[id.value()]; }
  void push_back(T v) { items_.push_back(std::move(v)); }
  [[nodiscard]] std::size_t size() const { return items_.size(); }
  [[nodiscard]] bool empty() const { return items_.empty(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  void reserve(std::size_t n) { items_.reserve(n); }

 private:
  std::vector<T> items_;
};

}  // namespace tpusim

template <class Tag>
struct std::hash<tpusim::StrongId<Tag>> {
  std::size_t operator()(tpusim::StrongId<Tag> id) const noexcept { return std::hash<std::uint32_t>{}(id.value()); }
};
