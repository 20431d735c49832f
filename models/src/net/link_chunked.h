#pragma once
// The chunked link model's internal switch, for its differential test: with
// `trains` off every transfer runs chunk by chunk, which is the reference the
// trains must equal exactly (link_chunked.cpp).
#include <cstdint>
#include <memory>
#include <vector>

#include "link_model.h"

namespace tpusim::models::net {

struct ChunkedOptions {
  bool trains = true;  // transfers alone on their channels are timed in closed
                       // form (link_chunk_train.h)
};

[[nodiscard]] std::unique_ptr<LinkModel> make_chunked_link_model(std::vector<Channel> channels,
                                                                 std::uint64_t chunk_bytes, ChunkedOptions options);

}  // namespace tpusim::models::net
