#include "model/weight_placement.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "lantern/error.h"

namespace lantern::model {

namespace {
uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}
}  // namespace

WeightPlacement::WeightPlacement(std::vector<WeightPiece> pieces, uint64_t slab_bytes,
                                 uint64_t max_allocation, uint64_t align, bool keep_layers)
    : pieces_(std::move(pieces)) {
    align = std::max<uint64_t>(1, align);
    uint64_t cap = std::max<uint64_t>(1, slab_bytes);
    if (max_allocation) cap = std::min(cap, max_allocation);
    spots_.resize(pieces_.size());
    uint64_t used = 0;  // of the current slab
    const auto open_slab = [&] {
        if (!slab_sizes_.empty()) slab_sizes_.back() = used;  // sized to what it holds
        slab_sizes_.push_back(0);
        used = 0;
    };
    // Pieces from `begin` to `end` (exclusive) at the current slab's end: their end offset there.
    const auto end_of = [&](size_t begin, size_t end, uint64_t from) {
        for (size_t i = begin; i < end; ++i) from = align_up(from, align) + pieces_[i].bytes;
        return from;
    };
    for (size_t i = 0; i < pieces_.size();) {
        // The unit placed next: a kept-together layer's pieces, else one piece.
        size_t end = i + 1;
        if (keep_layers && pieces_[i].layer >= 0)
            while (end < pieces_.size() && pieces_[end].layer == pieces_[i].layer) ++end;
        if (end - i > 1 && end_of(i, end, 0) > cap)
            end = i + 1;  // a layer larger than a slab: piece by piece
        const uint64_t bytes = pieces_[i].bytes;
        if (max_allocation && bytes > max_allocation)
            throw Error(ErrorCode::ModelTooLarge, "a weight part of " + std::to_string(bytes >> 20) +
                                                      " MiB exceeds the device's largest allocation (" +
                                                      std::to_string(max_allocation >> 20) + " MiB)");
        // (A piece larger than a slab gets one of its own, of its size.)
        if (slab_sizes_.empty() || (used > 0 && end_of(i, end, used) > cap)) open_slab();
        for (size_t k = i; k < end; ++k) {
            used = align_up(used, align);
            spots_[k] = {static_cast<uint32_t>(slab_sizes_.size() - 1), used};
            used += pieces_[k].bytes;
        }
        i = end;
    }
    if (!slab_sizes_.empty()) slab_sizes_.back() = used;
}

uint64_t WeightPlacement::slab_bytes() const {
    uint64_t n = 0;
    for (uint64_t s : slab_sizes_) n += s;
    return n;
}

uint64_t WeightPlacement::piece_bytes() const {
    uint64_t n = 0;
    for (const auto& p : pieces_) n += p.bytes;
    return n;
}

uint32_t WeightPlacement::split_layers() const {
    std::map<int32_t, std::set<uint32_t>> slabs_of;
    for (size_t i = 0; i < pieces_.size(); ++i)
        if (pieces_[i].layer >= 0) slabs_of[pieces_[i].layer].insert(spots_[i].slab);
    uint32_t n = 0;
    for (const auto& [layer, slabs] : slabs_of) n += slabs.size() > 1 ? 1 : 0;
    return n;
}

}  // namespace lantern::model
